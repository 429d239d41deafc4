"""``karmada-devplane demo failback`` end to end: replicas go back to member1 with no hand-made rebalancer.

What the user sees: exit 0, the karmadactl tables in the tutorial's order, the two Cluster events, the
``failback-member1-…`` rebalancer reported Successful and then deleted by its TTL, the timings that
differ from the defaults, and no process left behind.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.test_demo import _assert_gone, _rows, _run_demo

pytestmark = pytest.mark.kubectl  # the demo plays the documents with the real kubectl


def test_failback_demo(tmp_path: Path) -> None:
    result = _run_demo("failback", tmp_path)
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr[-3000:]}"
    assert "--controllers=*,clusterFailback --failback-stabilization-window=10s --failback-rebalancer-ttl=15s" in out
    assert "the demo shortens the window to 10s (default 5m0s) and the rebalancers' TTL to 15s (default 1h0m0s)" in out
    # step 1, after the taint, during the window, after the fail-back
    tables = out.split("$ karmadactl --karmada-context karmada-apiserver get deploy foo\n")[1:]
    distributions = [{row[1]: row[2] for row in _rows(block.split("$ ")[0], "foo")} for block in tables]
    assert distributions == [{"member1": "2/2", "member2": "1/1"}, {"member2": "3/3"}, {"member2": "3/3"},
                             {"member1": "2/2", "member2": "1/1"}]
    assert "cluster/member1 tainted" in out and "cluster/member1 untainted" in out
    record = out.split("get rb foo-deployment -o jsonpath=")[1].splitlines()[1]
    assert record == "member1"
    assert re.search(r"Normal\s+FailbackScheduled\s+cluster/member1\s+cluster member1 has recovered; "
                     r"1 evicted workload\(s\) fail back if it stays recovered for 10s", out)
    triggered = re.search(r"Normal\s+FailbackTriggered\s+cluster/member1\s+created WorkloadRebalancer\(s\) "
                          r"(failback-member1-\w+) for 1 workload\(s\) evicted from cluster member1", out)
    assert triggered, out
    name = triggered.group(1)
    listed = out.split("$ kubectl --context karmada-apiserver get workloadrebalancers\n")[1].split("$ ")[0]
    assert [row[0] for row in (line.split() for line in listed.splitlines()[1:])] == [name]  # none by hand
    assert re.search(r"ttlSecondsAfterFinished: 15\n.*observedWorkloads:\n  - result: Successful\n    workload:\n"
                     r"      apiVersion: apps/v1\n      kind: Deployment\n      name: foo\n", out, re.DOTALL)
    assert f'workloadrebalancers.apps.karmada.io "{name}" not found' in out  # deleted by its TTL
    assert "Demo passed" in out
    _assert_gone([int(pid) for pid in re.findall(r"\(pid (\d+)\)", out)])
