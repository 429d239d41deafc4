"""Owner references: how an object names the controller that manages it.

``metav1.NewControllerRef``, used by every controller that creates dependents (a Deployment's
ReplicaSets, a ReplicaSet's Pods, a template's ResourceBinding) so that the garbage collector
deletes them with their owner; ``metav1.GetControllerOf``, how readers find that controller again.
"""

from __future__ import annotations

from typing import cast

from controller_manager import objects
from controller_manager.objects import Obj
from controller_manager.resource import Resource

from .shapes import OwnerReference


def controller_reference(owner: Obj, resource: Resource) -> OwnerReference:
    """``owner`` (of kind ``resource``) as its dependents' controller, with ``blockOwnerDeletion``."""
    return {"apiVersion": resource.api_version, "kind": resource.kind, "name": objects.name(owner),
            "uid": objects.uid(owner), "controller": True, "blockOwnerDeletion": True}


def controller_of(obj: Obj) -> OwnerReference | None:
    """``metav1.GetControllerOf``: the first ownerReference with ``controller: true``, None without one."""
    found = next((reference for reference in objects.owner_references(obj) if reference.get("controller")), None)
    return cast(OwnerReference | None, found)


def controller_uid_index(obj: Obj) -> list[str]:
    """Index function: the uid of the object's controller (pods by ReplicaSet, ReplicaSets by Deployment)."""
    reference = controller_of(obj)
    uid = reference.get("uid") if reference else None
    return [str(uid)] if uid else []
