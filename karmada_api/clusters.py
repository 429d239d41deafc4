"""What a Cluster object says about its health (``pkg/apis/cluster/v1alpha1``, ``pkg/controllers/cluster``).

Shared by the dev plane's cluster controller (which sets the taints) and the fail-back controller
(which reads them): the ``Ready`` condition and the two taint keys Karmada's cluster controller
manages from it (``taintClusterByCondition`` in ``pkg/controllers/cluster/cluster_controller.go``).
"""

from __future__ import annotations

from controller_manager.objects import Obj
from kube_api.conditions import find_condition

from .shapes import cluster_status

CONDITION_READY = "Ready"
TAINT_NOT_READY = "cluster.karmada.io/not-ready"
TAINT_UNREACHABLE = "cluster.karmada.io/unreachable"
CLUSTER_CONTROLLER_TAINT_KEYS = frozenset({TAINT_NOT_READY, TAINT_UNREACHABLE})
"""The taint keys Karmada's cluster controller adds and removes by the Ready condition."""


def is_ready(cluster: Obj) -> bool:
    """The Cluster's ``Ready`` condition is True."""
    ready = find_condition(cluster_status(cluster).get("conditions"), CONDITION_READY)
    return ready is not None and ready.get("status") == "True"
