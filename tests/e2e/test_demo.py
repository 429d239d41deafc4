"""The user's documents end to end: ``karmada-devplane demo`` as a newcomer runs it.

The demo starts a dev plane, the real ``karmada-controller-manager`` and ``karmada-descheduler``
processes, and plays each document with the real kubectl (contexts ``karmada-apiserver``,
``member1``...) and ``ctl`` for the karmadactl steps; it exits non-zero naming the step whose
outcome was not observed. Here we check what the user sees: the exit code, the tables and
texts the documents show, and that no process is left behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.kubectl  # the demo plays the documents with the real kubectl
DEMO_TIMEOUT = 300


def _run_demo(document: str, workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "devplane", "demo", document, "--workdir", str(workdir)],
                          capture_output=True, text=True, timeout=DEMO_TIMEOUT, check=False)


def _run_patched_demo(document: str, workdir: Path, patch: str) -> subprocess.CompletedProcess[str]:
    """The demo with ``patch`` (Python, with ``devplane.demo`` imported as ``d`` and ``devplane.demo_session``, where
    the waits read ``STEP_TIMEOUT``, as ``ds``) run before it."""
    return subprocess.run([sys.executable, "-c", (
        "import sys, devplane.demo as d, devplane.demo_session as ds\n"
        f"{patch}"
        "from devplane.cli import main\n"
        f"sys.exit(main(['demo', {document!r}, '--workdir', {str(workdir)!r}]))\n")],
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
    _check_statefulset_part(out)
    _assert_gone([int(pid) for pid in re.findall(r"\(pid (\d+)\)", out)])


def _after(output: str, command: str, occurrence: int = 1) -> str:
    """What ``$ command`` printed, for its ``occurrence``-th run."""
    return output.split(f"$ {command}\n")[occurrence].split("$ ", maxsplit=1)[0]


def _pods(block: str) -> dict[str, list[str]]:
    rows = (line.split() for line in block.splitlines())
    return {row[0]: row[1:] for row in rows if row and row[0].startswith("web-")}


def _check_statefulset_part(out: str) -> None:
    """After the example, the demo plays it again for a StatefulSet whose replicas stop fitting in member1."""
    out = out.split("### Descheduler for a StatefulSet")[1]
    assert "statefulset.apps/web created" in out
    assignment = ("kubectl --context karmada-apiserver get resourcebinding web-statefulset "
                  "-o jsonpath='{.spec.clusters}'")
    assert json.loads(_after(out, assignment).splitlines()[0]) == [{"name": "member1", "replicas": 2},
                                                   {"name": "member2", "replicas": 1},
                                                   {"name": "member3", "replicas": 1}]
    assert _rows(_after(out, "kubectl --context karmada-apiserver get statefulset web"), "web")[0][1] == "4/4"
    stuck = _pods(_after(out, "kubectl --context member1 get pod -l app=web -o wide"))
    assert stuck["web-0"][:2] == ["1/1", "Running"] and stuck["web-0"][5] == "member1-worker"
    assert stuck["web-1"][:2] == ["0/1", "Pending"]
    assert list(_pods(_after(out, "kubectl --context member1 get pod -l app=web"))) == ["web-0"]
    final = {c["name"]: c["replicas"] for c in json.loads(_after(out, assignment, 2).splitlines()[0])}
    assert final["member1"] == 1 and sorted([final["member2"], final["member3"]]) == [1, 2]
    assert _rows(_after(out, "kubectl --context karmada-apiserver get statefulset web", 2), "web")[0][1] == "4/4"


def test_a_missed_outcome_fails_the_demo_naming_the_step(tmp_path: Path) -> None:
    """If the product is not there to do its part, the demo says which step's outcome never came."""
    result = _run_patched_demo("rebalancer", tmp_path, (
        "d.STEP_TIMEOUT = ds.STEP_TIMEOUT = 8\n"
        "async def no_products(self, **_options): pass\n"
        "d.Session.start_products = no_products\n"))
    assert result.returncode == 1, result.stdout
    assert "DEMO FAILED (rebalancer): step 2" in result.stdout


def test_a_statefulset_left_stuck_fails_the_descheduler_demo_naming_the_step(tmp_path: Path) -> None:
    """Without the descheduler the StatefulSet's Pending replica never moves, and the demo says so (the
    StatefulSet part alone, after the example's Deployment was applied)."""
    result = _run_patched_demo("descheduler", tmp_path, (
        "d.STEP_TIMEOUT = ds.STEP_TIMEOUT = 8\n"
        "start_products = d.Session.start_products\n"
        "async def no_descheduler(self, **options):\n"
        "    await start_products(self, **{**options, 'descheduler': False})\n"
        "d.Session.start_products = no_descheduler\n"
        "async def statefulset_only(s):\n"
        "    s.write('nginx.yaml', d.document('nginx.yaml'))\n"
        "    await s.kubectl('--context', 'karmada-apiserver', 'apply', '-f', 'nginx.yaml')\n"
        "    await d.play_descheduler_statefulset(s)\n"
        "d.play_descheduler = statefulset_only\n"))
    assert result.returncode == 1, result.stdout
    assert "web-1   0/1     Pending" in result.stdout
    assert "DEMO FAILED (descheduler): statefulset web: member1 keeps 1 replica" in result.stdout


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_demo_stops_its_programs_and_removes_its_files(tmp_path: Path, signum: int) -> None:
    """Ctrl-C (or a SIGTERM) a few seconds in: exit 130, a line saying so, and nothing left in the temp dir."""
    demo = subprocess.Popen([sys.executable, "-m", "devplane", "demo", "rebalancer"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("karmada-demo-*/rebalancer/*")):  # its session has begun
            assert demo.poll() is None and time.monotonic() < deadline, "the demo did not start"
            time.sleep(0.1)
        demo.send_signal(signum)
        out, err = demo.communicate(timeout=60)
    finally:
        if demo.poll() is None:
            demo.kill()
    assert demo.returncode == 130, err[-2000:]
    assert out.rstrip().endswith("Demo interrupted. Its files and product logs were removed."), out[-2000:]
    assert not list(tmp_path.glob("karmada-demo-*"))
