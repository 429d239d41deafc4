"""Pod and Node facts that schedulers, estimators and kubelets all read.

Whether a Pod has terminated (its requests no longer count on its node) and whether a Node is
Ready. The product's estimator and the dev plane's member simulation apply the same rules.
"""

from __future__ import annotations

from controller_manager.objects import Obj

from .conditions import find_condition
from .shapes import node_status, pod_status

TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})
"""Pod phases after which no container runs again (``v1.PodSucceeded``, ``v1.PodFailed``)."""


def is_pod_terminated(pod: Obj) -> bool:
    """Succeeded or Failed: nothing of the pod runs any more, its requests no longer count."""
    return pod_status(pod).get("phase") in TERMINAL_POD_PHASES


def node_ready(node: Obj) -> bool:
    """The Node's ``Ready`` condition is True (Karmada's ``helper.NodeReady``)."""
    ready = find_condition(node_status(node).get("conditions"), "Ready")
    return ready is not None and ready.get("status") == "True"
