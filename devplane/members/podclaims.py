"""Which pods a ReplicaSet owns: Kubernetes' ``PodControllerRefManager.ClaimPods``.

A ReplicaSet's pods are not only those it created. On every sync it claims, from the active pods of
its namespace (``pkg/controller/controller_ref_manager.go``):

* pods it controls whose labels still match its selector: kept;
* pods it controls that stopped matching: released (its ownerReference removed), unless the
  ReplicaSet is being deleted;
* orphans (no controller reference) that match, are not being deleted, while the ReplicaSet is not
  being deleted: adopted (a controller ownerReference added), after a fresh read of the ReplicaSet
  confirms it is still there and not being deleted (``RecheckDeletionTimestamp``);
* pods another controller owns: ignored.

So pods made before their ReplicaSet are adopted rather than duplicated. The writes are JSON
patches that test the pod's uid and resourceVersion: Kubernetes sends a strategic merge patch
with the uid as precondition and relies on the API server refusing a second controller
reference; the resourceVersion test gives the same guarantee on the dev server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller_manager.cache import Indexer, Obj
from controller_manager.client import JSON_PATCH, ApiError, KubeClient
from controller_manager.controller import Request
from estimator.members import PODS, REPLICA_SETS
from estimator.unschedulable import controller_ref
from karmada_api.tolerations import compile_label_selector

LabelMatch = Callable[[Mapping[str, str]], bool]


class AdoptionRefused(Exception):
    """The ReplicaSet may not adopt (gone, replaced or being deleted): as Kubernetes' ``CanAdopt`` error."""


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def selector_of(rs: Mapping[str, Any]) -> LabelMatch:
    """The ReplicaSet's selector; an invalid one matches nothing (Kubernetes fails the sync instead)."""
    try:
        return compile_label_selector((rs.get("spec") or {}).get("selector"))
    except (ValueError, AttributeError, TypeError):
        return lambda _labels: False


def _labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    return _meta(pod).get("labels") or {}


def _guarded(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    """JSON-patch tests: the same pod (uid), unchanged since the cache saw it (resourceVersion)."""
    meta = _meta(pod)
    return [{"op": "test", "path": "/metadata/uid", "value": meta.get("uid")},
            {"op": "test", "path": "/metadata/resourceVersion", "value": meta.get("resourceVersion")}]


def adopt_patch(pod: Mapping[str, Any], reference: dict[str, Any]) -> list[dict[str, Any]]:
    """``ownerRefControllerPatch``: add the controller reference to the pod's ownerReferences."""
    if _meta(pod).get("ownerReferences"):
        return [*_guarded(pod), {"op": "add", "path": "/metadata/ownerReferences/-", "value": reference}]
    return [*_guarded(pod), {"op": "add", "path": "/metadata/ownerReferences", "value": [reference]}]


def release_patch(pod: Mapping[str, Any], owner_uid: str) -> list[dict[str, Any]]:
    """``GenerateDeleteOwnerRefStrategicMergeBytes``: drop the owner's reference, keep the others."""
    kept = [r for r in _meta(pod).get("ownerReferences") or [] if r.get("uid") != owner_uid]
    if kept:
        return [*_guarded(pod), {"op": "replace", "path": "/metadata/ownerReferences", "value": kept}]
    return [*_guarded(pod), {"op": "remove", "path": "/metadata/ownerReferences"}]


class PodClaimer:
    """Claims one ReplicaSet's pods (adopting and releasing), as the ControllerRefManager does."""

    def __init__(self, client: KubeClient, rs: Obj, reference: dict[str, Any]) -> None:
        self.client = client
        self.rs = rs
        self.reference = reference
        self.match = selector_of(rs)
        self._can_adopt: bool | None = None

    async def claim(self, pods: Iterable[Obj]) -> list[Obj]:
        """The pods the ReplicaSet owns after claiming; the first write error is raised after trying all."""
        claimed: list[Obj] = []
        errors: list[Exception] = []
        for pod in pods:
            try:
                if await self._claim_one(pod):
                    claimed.append(pod)
            except (ApiError, AdoptionRefused) as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
        return claimed

    async def _claim_one(self, pod: Obj) -> bool:
        deleting = bool(_meta(self.rs).get("deletionTimestamp"))
        reference = controller_ref(pod)
        if reference is not None:
            if reference.get("uid") != _meta(self.rs).get("uid"):
                return False  # another controller's
            if self.match(_labels(pod)):
                return True
            if not deleting:
                await self._patch(pod, release_patch(pod, str(_meta(self.rs).get("uid"))), ignore_invalid=True)
            return False
        if deleting or not self.match(_labels(pod)) or _meta(pod).get("deletionTimestamp"):
            return False
        await self._check_can_adopt()
        return await self._patch(pod, adopt_patch(pod, self.reference), ignore_invalid=False)

    async def _check_can_adopt(self) -> None:
        """``RecheckDeletionTimestamp``: one fresh read of the ReplicaSet per claim."""
        if self._can_adopt is None:
            meta = _meta(self.rs)
            fresh = await self.client.get_or_none(REPLICA_SETS, str(meta.get("name")), str(meta.get("namespace")))
            self._can_adopt = (fresh is not None and _meta(fresh).get("uid") == meta.get("uid")
                               and not _meta(fresh).get("deletionTimestamp"))
        if not self._can_adopt:
            meta = _meta(self.rs)
            raise AdoptionRefused(f"can't adopt pods: {meta.get('namespace')}/{meta.get('name')} is gone "
                                  "or being deleted")

    async def _patch(self, pod: Obj, patch: list[dict[str, Any]], *, ignore_invalid: bool) -> bool:
        """Whether the patch applied; a pod that is gone is not an error (nor, for a release, a changed one)."""
        meta = _meta(pod)
        try:
            await self.client.patch(PODS, str(meta.get("name")), patch, namespace=str(meta.get("namespace") or ""),
                                    content_type=JSON_PATCH)
        except ApiError as exc:
            if exc.is_not_found or (ignore_invalid and exc.is_invalid):
                return False
            raise
        return True


def orphan_requests(replica_sets: Indexer) -> Callable[[Obj], list[Request]]:
    """``getPodReplicaSets``: an orphan pod → the ReplicaSets of its namespace whose selector matches it."""

    def mapper(pod: Obj) -> list[Request]:
        if controller_ref(pod) is not None or _meta(pod).get("deletionTimestamp"):
            return []
        namespace = str(_meta(pod).get("namespace") or "")
        return [Request.for_object(rs) for rs in replica_sets.by_index("namespace", namespace)
                if selector_of(rs)(_labels(pod))]

    return mapper
