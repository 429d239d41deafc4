"""One typed view of Kubernetes objects: the type aliases and small read accessors.

Objects are parsed JSON dicts everywhere (the informer cache shares them with every reader), so
rather than wrapper classes (kopf's ``bodies``) this module gives plain functions named like kopf's
``Body``/``Meta`` properties: ``name(obj)``, ``labels(obj)``, ``spec(obj)``... They sit on hot
paths (every event, every reconcile), hence one dict lookup chain each and no per-call objects.

A missing (or null) part reads as empty: ``""`` for strings, ``{}`` for mappings, ``[]`` for lists,
as the hand-written ``(obj.get("metadata") or {}).get(...)`` chains they replace did. The results
are the object's own parts: read them, do not change them (copy first).
"""

import copy
from collections.abc import Mapping, Sequence
from typing import Any

Obj = Mapping[str, Any]
"""An object (or a part of one: a spec, a taint...) as read, e.g. from an informer cache. Do not change it."""

MutableObj = dict[str, Any]
"""An object (or a part of one) being built or changed: a fresh dict or a deep copy, e.g. a body to write."""


def metadata(obj: Obj) -> Mapping[str, Any]:
    """``metadata`` (kopf's ``Body.metadata``)."""
    meta: Mapping[str, Any] = obj.get("metadata") or {}
    return meta


def spec(obj: Obj) -> Mapping[str, Any]:
    """``spec`` (kopf's ``Body.spec``)."""
    value: Mapping[str, Any] = obj.get("spec") or {}
    return value


def status(obj: Obj) -> Mapping[str, Any]:
    """``status`` (kopf's ``Body.status``)."""
    value: Mapping[str, Any] = obj.get("status") or {}
    return value


def name(obj: Obj) -> str:
    """``metadata.name``."""
    return str((obj.get("metadata") or {}).get("name") or "")


def namespace(obj: Obj) -> str:
    """``metadata.namespace``; ``""`` for a cluster-scoped object."""
    return str((obj.get("metadata") or {}).get("namespace") or "")


def key(obj: Obj) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc)."""
    meta = obj.get("metadata") or {}
    ns: str = meta.get("namespace") or ""
    nm: str = meta.get("name") or ""
    return f"{ns}/{nm}" if ns else nm


def split_key(text: str) -> tuple[str, str]:
    """The inverse of :func:`key`: (namespace, name)."""
    ns, _, nm = text.rpartition("/")
    return ns, nm


def uid(obj: Obj) -> str:
    """``metadata.uid``."""
    return str((obj.get("metadata") or {}).get("uid") or "")


def resource_version(obj: Obj) -> str:
    """``metadata.resourceVersion``: opaque, compare it only for equality."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def generation(obj: Obj) -> int:
    """``metadata.generation``; 0 when not set."""
    return int((obj.get("metadata") or {}).get("generation") or 0)


def labels(obj: Obj) -> Mapping[str, str]:
    """``metadata.labels``."""
    value: Mapping[str, str] = (obj.get("metadata") or {}).get("labels") or {}
    return value


def annotations(obj: Obj) -> Mapping[str, str]:
    """``metadata.annotations``."""
    value: Mapping[str, str] = (obj.get("metadata") or {}).get("annotations") or {}
    return value


def finalizers(obj: Obj) -> Sequence[str]:
    """``metadata.finalizers``."""
    value: Sequence[str] = (obj.get("metadata") or {}).get("finalizers") or []
    return value


def owner_references(obj: Obj) -> Sequence[Mapping[str, Any]]:
    """``metadata.ownerReferences``."""
    value: Sequence[Mapping[str, Any]] = (obj.get("metadata") or {}).get("ownerReferences") or []
    return value


def creation_timestamp(obj: Obj) -> str:
    """``metadata.creationTimestamp`` (RFC 3339); ``""`` when not set."""
    return str((obj.get("metadata") or {}).get("creationTimestamp") or "")


def deletion_timestamp(obj: Obj) -> str:
    """``metadata.deletionTimestamp`` (RFC 3339); ``""`` unless the object is being deleted."""
    return str((obj.get("metadata") or {}).get("deletionTimestamp") or "")


def is_deleting(obj: Obj) -> bool:
    """Whether ``metadata.deletionTimestamp`` is set: deleted, waiting for its finalizers."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def deep_copy(obj: Obj) -> MutableObj:
    """A private copy of ``obj`` to change (``copy.deepcopy``), e.g. a cached object made into an update."""
    return copy.deepcopy(dict(obj))
