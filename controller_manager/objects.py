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
import re
from collections.abc import Callable, Mapping, Sequence
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


def _text(field: str, doc: str) -> Callable[[Obj], str]:
    """The reader of the string ``metadata.<field>`` (``""`` when missing), named after the field in snake case."""

    def read(obj: Obj) -> str:
        return str((obj.get("metadata") or {}).get(field) or "")

    read.__name__ = read.__qualname__ = re.sub(r"[A-Z]", lambda upper: "_" + upper[0].lower(), field)
    read.__doc__ = doc
    return read


name = _text("name", "``metadata.name``.")
namespace = _text("namespace", '``metadata.namespace``; ``""`` for a cluster-scoped object.')
uid = _text("uid", "``metadata.uid``.")
resource_version = _text("resourceVersion", "``metadata.resourceVersion``: opaque, compare it only for equality.")
creation_timestamp = _text("creationTimestamp", "``metadata.creationTimestamp`` (RFC 3339).")


def key(obj: Obj) -> str:
    """``namespace/name``, or ``name`` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc)."""
    meta = obj.get("metadata") or {}
    return join_key(meta.get("namespace") or "", meta.get("name") or "")


def join_key(namespace: str, name: str) -> str:
    """The cache key of the object ``name`` in ``namespace`` (``name`` alone when cluster-scoped)."""
    return f"{namespace}/{name}" if namespace else name


def split_key(text: str) -> tuple[str, str]:
    """The inverse of :func:`key`: (namespace, name)."""
    ns, _, nm = text.rpartition("/")
    return ns, nm


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


def is_deleting(obj: Obj) -> bool:
    """Whether ``metadata.deletionTimestamp`` is set: deleted, waiting for its finalizers."""
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def deep_copy(obj: Obj) -> MutableObj:
    """A private copy of ``obj`` to change (``copy.deepcopy``), e.g. a cached object made into an update."""
    return copy.deepcopy(dict(obj))


def is_valid_path_segment_name(name: str, *, prefix: bool = False) -> list[str]:
    """Names that only have to survive as one URL path segment (RBAC objects allow ``:``): what kube-apiserver
    requires of every object name, and what client-go checks before it sends a request naming one."""
    if not prefix:
        for illegal in (".", ".."):
            if name == illegal:
                return [f"may not be '{illegal}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]
