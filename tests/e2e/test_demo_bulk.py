"""``karmada-devplane demo bulk`` end to end: ``karmada-rebalance create --cluster member1 --wait``, run as a
real process against the dev plane and the real controller-manager, brings an application back to member1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.test_demo import _assert_gone, _rows, _run_demo

pytestmark = pytest.mark.kubectl  # the demo plays the documents with the real kubectl


def _distribution(block: str, name: str) -> dict[str, str]:
    return {row[1]: row[2] for row in _rows(block, name)}


def test_bulk_demo_moves_the_application_back(tmp_path: Path) -> None:
    result = _run_demo("bulk", tmp_path)
    out = result.stdout
    assert result.returncode == 0, f"{out}\n{result.stderr[-3000:]}"
    for name in ("web", "api"):
        tables = out.split(f"$ karmadactl --karmada-context karmada-apiserver get deploy {name}\n")[1:]
        first, tainted, back = (_distribution(t.split("$ ")[0], name) for t in tables)
        assert "member1" in first and tainted == {"member2": "3/3"} and "member1" in back, (first, tainted, back)
    assert "cluster/member1 untainted" in out
    command = out.split("$ karmada-rebalance --context karmada-apiserver create --cluster member1 --wait")[1]
    rows = {line.split()[0]: line.split()[1:] for line in command.split("\n###")[0].splitlines()[3:] if line}
    assert rows == {"ConfigMap/default/settings": ["Successful"], "Deployment.apps/default/api": ["Successful"],
                    "Deployment.apps/default/web": ["Successful"]}
    assert re.search(r"\$ kubectl --context member1 get configmap settings\nNAME +DATA +AGE\nsettings +1 ", out)
    _assert_gone([int(p) for p in re.findall(r"\(pid (\d+)\)", out)])
