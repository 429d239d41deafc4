"""Which objects a controller owns: Kubernetes' ``ControllerRefManager`` (``ClaimPods``, ``ClaimReplicaSets``).

A ReplicaSet's pods, and a Deployment's ReplicaSets, are not only those it created. On every sync
the controller claims, from the candidates of its namespace (``pkg/controller/controller_ref_manager.go``):

* objects it controls whose labels still match its selector: kept;
* objects it controls that stopped matching: released (its ownerReference removed), unless the
  owner is being deleted;
* orphans (no controller reference) that match and are not being deleted, while the owner is not
  being deleted: adopted (a controller ownerReference added), after a fresh read of the owner
  confirms it is still there and not being deleted (``RecheckDeletionTimestamp``);
* objects another controller owns: ignored.

So pods made before their ReplicaSet are adopted rather than duplicated. The writes are JSON
patches that test the object's uid and resourceVersion: Kubernetes sends a strategic merge patch
with the uid as precondition and relies on the API server refusing a second controller
reference; the resourceVersion test gives the same guarantee on the dev server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.cache import Indexer
from controller_manager.client import JSON_PATCH, KubeClient
from controller_manager.objects import Obj
from controller_manager.reconcile import Request
from controller_manager.resource import Resource
from kube_api.ownerrefs import controller_of
from kube_api.selectors import compile_label_selector
from kube_api.shapes import OwnerReference

LabelMatch = Callable[[Mapping[str, str]], bool]


class AdoptionRefused(Exception):
    """The owner may not adopt (gone, replaced or being deleted): as Kubernetes' ``CanAdopt`` error."""


def selector_of(owner: Obj) -> LabelMatch:
    """The owner's ``spec.selector``; an invalid one matches nothing (Kubernetes fails the sync instead)."""
    try:
        return compile_label_selector(objects.spec(owner).get("selector"))
    except (ValueError, AttributeError, TypeError):
        return lambda _labels: False


def _guarded(obj: Obj) -> list[dict[str, Any]]:
    """JSON-patch tests: the same object (uid), unchanged since the cache saw it (resourceVersion)."""
    return [{"op": "test", "path": "/metadata/uid", "value": objects.uid(obj)},
            {"op": "test", "path": "/metadata/resourceVersion", "value": objects.resource_version(obj)}]


def adopt_patch(obj: Obj, reference: OwnerReference) -> list[dict[str, Any]]:
    """``ownerRefControllerPatch``: add the controller reference to the object's ownerReferences."""
    if objects.owner_references(obj):
        return [*_guarded(obj), {"op": "add", "path": "/metadata/ownerReferences/-", "value": reference}]
    return [*_guarded(obj), {"op": "add", "path": "/metadata/ownerReferences", "value": [reference]}]


def release_patch(obj: Obj, owner_uid: str) -> list[dict[str, Any]]:
    """``GenerateDeleteOwnerRefStrategicMergeBytes``: drop the owner's reference, keep the others."""
    kept = [r for r in objects.owner_references(obj) if r.get("uid") != owner_uid]
    if kept:
        return [*_guarded(obj), {"op": "replace", "path": "/metadata/ownerReferences", "value": kept}]
    return [*_guarded(obj), {"op": "remove", "path": "/metadata/ownerReferences"}]


class Claimer:
    """Claims one owner's dependents of one resource (adopting and releasing), as the ControllerRefManager."""

    def __init__(self, client: KubeClient, owner: Obj, owner_resource: Resource, reference: OwnerReference,
                 dependents: Resource) -> None:
        self.client = client
        self.owner = owner
        self.owner_resource = owner_resource
        self.reference = reference
        self.dependents = dependents
        self.match = selector_of(owner)
        self._can_adopt: bool | None = None

    async def claim(self, candidates: Iterable[Obj]) -> list[Obj]:
        """The candidates the owner owns after claiming; the first write error is raised after trying all."""
        claimed: list[Obj] = []
        errors: list[Exception] = []
        for obj in candidates:
            try:
                if await self._claim_one(obj):
                    claimed.append(obj)
            except (ApiError, AdoptionRefused) as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
        return claimed

    async def _claim_one(self, obj: Obj) -> bool:
        deleting = objects.is_deleting(self.owner)
        reference = controller_of(obj)
        if reference is not None:
            if reference.get("uid") != objects.uid(self.owner):
                return False  # another controller's
            if self.match(objects.labels(obj)):
                return True
            if not deleting:
                await self._patch(obj, release_patch(obj, objects.uid(self.owner)), ignore_invalid=True)
            return False
        if deleting or not self.match(objects.labels(obj)) or objects.is_deleting(obj):
            return False
        await self._check_can_adopt()
        return await self._patch(obj, adopt_patch(obj, self.reference), ignore_invalid=False)

    async def _check_can_adopt(self) -> None:
        """``RecheckDeletionTimestamp``: one fresh read of the owner per claim."""
        owner = self.owner
        if self._can_adopt is None:
            fresh = await self.client.get_or_none(self.owner_resource, objects.name(owner), objects.namespace(owner))
            self._can_adopt = (fresh is not None and objects.uid(fresh) == objects.uid(owner)
                               and not objects.is_deleting(fresh))
        if not self._can_adopt:
            raise AdoptionRefused(f"can't adopt {self.dependents.plural}: {objects.key(owner)} "
                                  "is gone or being deleted")

    async def _patch(self, obj: Obj, patch: list[dict[str, Any]], *, ignore_invalid: bool) -> bool:
        """Whether the patch applied; an object that is gone is not an error (nor, for a release, a changed one)."""
        try:
            await self.client.patch(self.dependents, objects.name(obj), patch, namespace=objects.namespace(obj),
                                    content_type=JSON_PATCH)
        except ApiError as exc:
            if exc.is_not_found or (ignore_invalid and exc.is_invalid):
                return False
            raise
        return True


def orphan_requests(owners: Indexer) -> Callable[[Obj], list[Request]]:
    """``getPodReplicaSets`` / ``getDeploymentsForReplicaSet``: an orphan → the owners of its namespace
    whose selector matches it."""

    def mapper(obj: Obj) -> list[Request]:
        if controller_of(obj) is not None or objects.is_deleting(obj):
            return []
        labels = objects.labels(obj)
        return [Request.for_object(owner) for owner in owners.by_index("namespace", objects.namespace(obj))
                if selector_of(owner)(labels)]

    return mapper
