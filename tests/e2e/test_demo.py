"""The user's documents end to end: ``karmada-devplane demo`` as a newcomer runs it.

The demo starts a dev plane, the real ``karmada-controller-manager`` and ``karmada-descheduler``
processes, and plays each document with the real kubectl (contexts ``karmada-apiserver``,
``member1``...) and ``ctl`` for the karmadactl steps; it exits non-zero naming the step whose
outcome was not observed. Here we check what the user sees: the exit code, the tables and
texts the documents show, and that no process is left behind.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.kubectl  # the demo plays the documents with the real kubectl
DEMO_TIMEOUT = 300


def _run_demo(document: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "devplane", "demo", document, "--workdir", str(workdir)],
                          capture_output=True, text=True, timeout=DEMO_TIMEOUT, check=False)


def _assert_gone(pids: list[int]) -> None:
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def _rows(output: str, name: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines() if line.startswith(f"{name} ")]


def test_rebalancer_tutorial(tmp_path: Path) -> None:
    result = _run_demo("rebalancer", tmp_path)
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr[-3000:]}"
    # step 1, step 2 (taint), after the untaint, step 5: the karmadactl tables in order
    tables = [block for block in out.split("$ karmadactl --karmada-context karmada-apiserver get deploy foo\n")[1:]]
    distributions = [{row[1]: row[2] for row in _rows(block.split("$ ")[0], "foo")} for block in tables]
    assert distributions == [{"member1": "2/2", "member2": "1/1"}, {"member2": "3/3"}, {"member2": "3/3"},
                             {"member1": "2/2", "member2": "1/1"}]
    assert "cluster/member1 tainted" in out and "cluster/member1 untainted" in out
    assert "workloadrebalancer.apps.karmada.io/demo created" in out
    assert re.search(r"observedWorkloads:\n  - result: Successful\n    workload:\n      apiVersion: apps/v1\n"
                     r"      kind: Deployment\n      name: foo\n      namespace: default", out)
    assert "Binding has been scheduled successfully. Result: {member1:2, member2:1}" in out
    assert "AggregateStatusSucceed" in out
    assert 'workloadrebalancers.apps.karmada.io "demo" not found' in out  # deleted by its TTL
    _assert_gone([int(pid) for pid in re.findall(r"\(pid (\d+)\)", out)])


def test_descheduler_example(tmp_path: Path) -> None:
    result = _run_demo("descheduler", tmp_path)
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr[-3000:]}"
    first_table = out.split("get deploy nginx\n")[1].split("$ ")[0]
    assert {row[1]: row[2] for row in _rows(first_table, "nginx")} == {"member1": "1/1", "member2": "1/1",
                                                                       "member3": "1/1"}
    assert "node/member1-control-plane cordoned" in out
    pending = out.split("$ kubectl --context member1 get pod\n")[1].split("$ ")[0]
    assert "Pending" in pending
    final_member1 = out.split("$ kubectl --context member1 get pod\n")[2].split("$ ")[0]
    assert "No resources found in default namespace." in final_member1
    final_member2 = out.split("$ kubectl --context member2 get pod\n")[1].split("$ ")[0]
    assert len([line for line in final_member2.splitlines() if line.startswith("nginx-") and "Running" in line]) == 2
    _assert_gone([int(pid) for pid in re.findall(r"\(pid (\d+)\)", out)])


def test_a_missed_outcome_fails_the_demo_naming_the_step(tmp_path: Path) -> None:
    """If the product is not there to do its part, the demo says which step's outcome never came."""
    result = subprocess.run([sys.executable, "-c", (
        "import sys, devplane.demo as d\n"
        "d.STEP_TIMEOUT = 8\n"
        "async def no_products(self, **_options): pass\n"
        "d.Session.start_products = no_products\n"
        "from devplane.cli import main\n"
        f"sys.exit(main(['demo', 'rebalancer', '--workdir', {str(tmp_path)!r}]))\n")],
        capture_output=True, text=True, timeout=DEMO_TIMEOUT, check=False)
    assert result.returncode == 1, result.stdout
    assert "DEMO FAILED (rebalancer): step 2" in result.stdout
