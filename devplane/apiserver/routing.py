"""Where a resource request points: the path after ``/api/v1`` or ``/apis/G/V``, parsed.

A resource path names a resource type, and maybe a namespace, an object and a subresource
(``/namespaces/ns/deployments/web/scale``); old clients prefix watches with ``/watch/``.
An unknown core resource is kube's Status 404, any other unserved path its text/plain 404.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import errors
from .resources import Registry, ResourceType


@dataclass
class Target:
    """Where a resource request points."""

    rtype: ResourceType
    namespace: str
    name: str
    subresource: str
    legacy_watch: bool = False  # the /watch/ path prefix of old clients


def parse_target(registry: Registry, group: str, version: str, parts: list[str]) -> tuple[Target | None, bool]:
    """Parse the path after /api/v1 or /apis/G/V. Returns (target, is_collection)."""
    legacy_watch = False
    if parts[:1] == ["watch"]:
        legacy_watch, parts = True, parts[1:]
    namespace = ""
    if parts[:1] == ["namespaces"] and len(parts) >= 3 and not (
            len(parts) == 3 and parts[2] in ("status", "finalize")):
        namespace, parts = parts[1], parts[2:]
    if not parts or len(parts) > 3:
        return None, False
    rtype = registry.get(group, version, parts[0])
    if rtype is None:
        if not group:
            raise errors.resource_not_found()
        raise errors.page_not_found()
    if namespace and not rtype.namespaced:
        raise errors.page_not_found()
    name = parts[1] if len(parts) >= 2 else ""
    sub = parts[2] if len(parts) == 3 else ""
    if sub and sub not in rtype.subresources:
        raise errors.page_not_found()
    return Target(rtype, namespace, name, sub, legacy_watch), not name

