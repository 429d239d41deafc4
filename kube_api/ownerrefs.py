"""Owner references: how an object names the controller that manages it.

``metav1.NewControllerRef``, used by every controller that creates dependents (a Deployment's
ReplicaSets, a ReplicaSet's Pods, a template's ResourceBinding) so that the garbage collector
deletes them with their owner.
"""

from __future__ import annotations

from typing import Any

from controller_manager import objects
from controller_manager.client import Resource
from controller_manager.objects import Obj


def controller_reference(owner: Obj, resource: Resource) -> dict[str, Any]:
    """``owner`` (of kind ``resource``) as its dependents' controller, with ``blockOwnerDeletion``."""
    return {"apiVersion": resource.api_version, "kind": resource.kind, "name": objects.name(owner),
            "uid": objects.uid(owner), "controller": True, "blockOwnerDeletion": True}
