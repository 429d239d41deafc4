"""sync_spec_to_status: the status it builds is the reconciler's to fill in, never the cached rebalancer's."""

from __future__ import annotations

import copy
from typing import Any

from controllers.rebalancerstatus import SUCCESSFUL, sync_spec_to_status


def _deployment(name: str) -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": name}


def test_setting_results_leaves_the_cached_rebalancer_unchanged() -> None:
    rebalancer: dict[str, Any] = {
        "metadata": {"name": "demo", "generation": 2},
        "spec": {"workloads": [_deployment("b"), _deployment("a")]},
        "status": {"observedWorkloads": [{"workload": _deployment("b")},
                                         {"workload": _deployment("gone"), "result": SUCCESSFUL}]},
    }
    cached = copy.deepcopy(rebalancer)
    status = sync_spec_to_status(rebalancer)
    assert [item["workload"]["name"] for item in status["observedWorkloads"]] == ["a", "b", "gone"]
    for item in status["observedWorkloads"]:
        item["result"], item["reason"] = "Failed", "ReferencedBindingNotFound"
    assert rebalancer == cached
