"""Kubernetes object rules that both simulations and the dev API server apply, one definition each.

The member simulation (kubelet, pod scheduler, ReplicaSet and Deployment controllers), the Karmada
simulation (detector, cluster status) and the API server's pod strategy read the same Kubernetes
facts: whether a Node is Ready, whether a Pod has terminated, and what a controller
ownerReference is (apimachinery's ``metav1.NewControllerRef``). They are Kubernetes semantics, the
material of ``kube_api``; they live here until ``kube_api`` has them.
"""

from __future__ import annotations

from typing import Any

from controller_manager import objects
from controller_manager.client import Resource
from controller_manager.objects import Obj

TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed"})
"""Pod phases after which no container runs again (``v1.PodSucceeded``, ``v1.PodFailed``)."""


def is_pod_terminated(pod: Obj) -> bool:
    """Succeeded or Failed: nothing of the pod runs any more, its requests no longer count."""
    return objects.status(pod).get("phase") in TERMINAL_POD_PHASES


def node_ready(node: Obj) -> bool:
    """The Node's ``Ready`` condition is True (Karmada's ``helper.NodeReady``)."""
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in objects.status(node).get("conditions") or ())


def controller_reference(owner: Obj, resource: Resource) -> dict[str, Any]:
    """``metav1.NewControllerRef``: ``owner`` (of kind ``resource``) as its dependents' controller, with
    ``blockOwnerDeletion``, so that the garbage collector deletes them with it."""
    return {"apiVersion": resource.api_version, "kind": resource.kind, "name": objects.name(owner),
            "uid": objects.uid(owner), "controller": True, "blockOwnerDeletion": True}
