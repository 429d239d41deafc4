"""``karmada-devplane demo failback`` end to end: seven workloads fail back to member1 two at a time, two never
get healthy there and pause it, the operator resumes it.

What the user sees: exit 0, the shortened timings, the records on the bindings, the batches as they go (never
more than 2 in flight), the Cluster's events (scheduled, triggered, paused naming the stuck ones, a resume value
not understood, resumed), foo back on member1, the rebalancers nobody wrote, and no process left behind.
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
    assert ("--controllers=*,clusterFailback --failback-stabilization-window=10s --failback-max-concurrent=2 "
            "--failback-progress-deadline=15s --failback-rebalancer-ttl=0s") in out
    assert ("the demo shortens the window to 10s (default 5m0s) and the progress deadline to 15s (default 10m0s); "
            "at most 2 workloads in flight (default 10)") in out
    tables = out.split("$ karmadactl --karmada-context karmada-apiserver get deploy foo\n")[1:]
    distributions = [{row[1]: row[2] for row in _rows(block.split("$ ")[0], "foo")} for block in tables]
    assert distributions == [{"member1": "2/2", "member2": "1/1"}, {"member2": "3/3"},
                             {"member1": "2/2", "member2": "1/1"}]
    assert "cluster/member1 tainted" in out and "cluster/member1 untainted" in out
    assert re.search(r"Normal\s+FailbackScheduled\s+cluster/member1\s+cluster member1 has recovered; "
                     r"7 evicted workload\(s\) fail back if it stays recovered for 10s", out)
    # the batches: never more than 2 in flight, everything waiting at first, done at the end
    progress = re.findall(r"^# in flight: (.*) \| waiting: (.*) \| done: (.*)$", out, re.MULTILINE)
    assert progress[0] == ("-", "foo, web-1, web-2, web-3, web-4, web-5, web-6", "-")
    assert progress[-1] == ("-", "-", "foo, web-1, web-2, web-3, web-4, web-5, web-6")
    assert all(len(flying.split(", ")) <= 2 for flying, _, _ in progress)
    assert ("web-3, web-4", "web-5, web-6", "foo, web-1, web-2") in progress  # held by the stuck ones
    triggered = re.findall(r"Normal\s+FailbackTriggered\s+cluster/member1\s+created WorkloadRebalancer\(s\) "
                           r"(failback-member1-\w+) for (\d) workload\(s\)", out)
    assert len(triggered) >= 3 and sum(int(n) for _, n in triggered) == 5  # foo, web-1 … web-4
    paused = re.findall(r"Warning\s+FailbackPaused\s+cluster/member1\s+fail-back to cluster member1 "
                        r"(?:still )?paused: \d workload\(s\) not healthy within 15s \((.*)\); it resumes", out)
    assert paused and all(f"Deployment/default/{n}: 0/1 replicas ready on member1" in " ".join(paused)
                          for n in ("web-3", "web-4"))  # ready on member2, never on member1
    assert re.search(r"Warning\s+FailbackResumeInvalid\s+cluster/member1\s+failback.karmada-rebalance.io/resume="
                     r'"yes" is not understood', out)
    assert re.search(r"Normal\s+FailbackResumed\s+cluster/member1\s+fail-back to cluster member1 resumed: resumed "
                     r"by failback.karmada-rebalance.io/resume; given up: Deployment/default/web-3, "
                     r"Deployment/default/web-4", out)
    listed = out.split("$ kubectl --context karmada-apiserver get workloadrebalancers\n")[1].split("$ ")[0]
    names = [line.split()[0] for line in listed.splitlines()[1:] if line.strip()]
    assert len(names) >= 4 and all(n.startswith("failback-member1-") for n in names)  # none by hand
    assert "Demo passed" in out
    _assert_gone([int(pid) for pid in re.findall(r"\(pid (\d+)\)", out)])
