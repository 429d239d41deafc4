"""``karmada-devplane demo preserve`` end to end: karmada-io/karmada#7662's user story with the real
controller-manager in preserve mode and the real ``karmada-rebalance``: of 10 replicas, only the 2 stuck
in member1 move (to member3); the 8 running ones are the same Pods, never restarted."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.test_demo import _assert_gone, _rows, _run_demo


def test_preserve_demo_moves_only_the_stuck_replicas(tmp_path: Path) -> None:
    result = _run_demo("preserve", tmp_path)
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr[-3000:]}"
    assert "--enable-preserve-available-replicas --preserve-unschedulable-threshold=5s" in out
    tables = out.split("$ karmadactl --karmada-context karmada-apiserver get deploy web\n")[1:]
    first, last = ({row[1]: row[2] for row in _rows(t.split("$ ")[0], "web")} for t in tables)
    assert first == {"member1": "6/6", "member2": "4/4"}
    assert last == {"member1": "4/4", "member2": "4/4", "member3": "2/2"}
    assert "Mode: preserve available replicas (only replicas confirmed unschedulable move)" in out
    assert re.search(r"Deployment\.apps/default/web +Successful", out)
    assert "the 8 Pods that ran before are the same Pods, never restarted" in out
    assert re.search(r"Normal +AvailableReplicasPreserved +workloadrebalancer/preserve-web +unschedulable replicas "
                     r"released, the available ones kept, for 1 workload\(s\): apps/v1 Deployment default/web "
                     r"\(member1 -2\)", out)
    _assert_gone([int(p) for p in re.findall(r"\(pid (\d+)\)", out)])
