"""``--kind`` values resolved through the API server's discovery, as kubectl resolves resource names.

A value is ``apiVersion/Kind`` (``apps/v1/Deployment``, ``v1/ConfigMap``), ``Kind.group``
(``Deployment.apps``) or a resource name: plural, singular or short name, optionally with its group
(``deployments``, ``deploy``, ``deployments.apps``). Matching ignores case and the version: a
binding names its template by the version it was created with, and every version of a kind is the
same object.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp

from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.resource import Resource

from .errors import CommandError, UsageError


@dataclass(frozen=True)
class ApiResource:
    """One discovered resource (subresources excluded)."""

    resource: Resource
    singular: str
    short_names: tuple[str, ...]


@dataclass(frozen=True, order=True)
class GroupKind:
    """A kind regardless of version: what ``--kind`` filters on."""

    group: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


def group_of(api_version: str) -> str:
    """``apps/v1`` → ``apps``; ``v1`` → ``""``."""
    return api_version.rpartition("/")[0]


def _parse_list(group_version: str, body: dict[str, Any]) -> list[ApiResource]:
    group, _, version = group_version.rpartition("/")
    found: list[ApiResource] = []
    for item in body.get("resources") or []:
        name = str(item.get("name") or "")
        if not name or "/" in name:
            continue
        resource = Resource(group, version, name, str(item.get("kind") or ""), bool(item.get("namespaced")))
        found.append(ApiResource(resource, str(item.get("singularName") or ""), tuple(item.get("shortNames") or ())))
    return found


@dataclass(frozen=True)
class Discovered:
    resources: list[ApiResource]
    unavailable: tuple[str, ...] = ()
    """Group versions whose resource list could not be read (an aggregated API down, a busy server)."""

    def explain_missing(self, what: str) -> None:
        """When ``what`` was not found and some groups could not be read, say so (CommandError, exit 1):
        the answer may be there once they can be; otherwise the caller reports a plain usage error."""
        if self.unavailable:
            raise CommandError(f"{what}: not found, and the resource lists of {', '.join(self.unavailable)} "
                               "could not be read; try again")


async def discover(client: KubeClient) -> Discovered:
    """Every resource of the preferred version of every group (``/api/v1`` first, like kubectl).

    As kubectl, a group version whose list fails (503 from an unavailable aggregated API, a 5xx, a 404
    while it is not served, a dropped connection) is left out and named, instead of failing the command.
    """
    groups = await client.request("GET", "/apis")
    versions = ["v1"] + [str((g.get("preferredVersion") or {}).get("groupVersion") or "")
                         for g in groups.get("groups") or []]
    versions = [v for v in versions if v]
    unavailable: list[str] = []

    async def one(group_version: str) -> list[ApiResource]:
        path = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        try:
            return _parse_list(group_version, await client.request("GET", path))
        except ApiError as exc:
            if exc.status < 500 and not exc.is_not_served and exc.status != 429:
                raise
        except (aiohttp.ClientError, TimeoutError):
            pass
        unavailable.append(group_version)
        return []

    lists = await asyncio.gather(*(one(v) for v in versions))
    return Discovered([resource for listed in lists for resource in listed], tuple(sorted(unavailable)))


def resolve_kind(text: str, resources: Sequence[ApiResource]) -> GroupKind:
    """The kind a ``--kind`` value names; UsageError when the server has no such resource."""
    value = text.strip()
    if not value:
        raise UsageError("--kind: empty value")
    if "/" in value:
        api_version, _, kind = value.rpartition("/")
        group = group_of(api_version)
        version = api_version.rpartition("/")[2]
        matches = [r for r in resources if r.resource.group == group and r.resource.kind.lower() == kind.lower()]
        if not matches or not kind:
            raise UsageError(f'--kind {text}: the server doesn\'t have a resource type "{kind}" in "{api_version}"')
        if not any(r.resource.version == version for r in matches):
            served = sorted({r.resource.api_version for r in matches})
            raise UsageError(f"--kind {text}: version {version} is not served (served: {', '.join(served)})")
        return GroupKind(group, matches[0].resource.kind)
    name, _, group = value.partition(".")
    lowered = name.lower()
    candidates = [r for r in resources if not group or r.resource.group == group]
    matchers: tuple[Callable[[ApiResource], bool], ...] = (
            lambda r: lowered in (r.resource.plural, r.singular),
            lambda r: lowered in r.short_names,
            lambda r: r.resource.kind.lower() == lowered)
    for matches_name in matchers:
        found = sorted({GroupKind(r.resource.group, r.resource.kind) for r in candidates if matches_name(r)})
        if found:
            return _prefer_core(found)
    raise UsageError(f'--kind {text}: the server doesn\'t have a resource type "{value}"')


def _prefer_core(found: Sequence[GroupKind]) -> GroupKind:
    """Ambiguous short names resolve to the core group first, then the first group by name (kubectl's priority)."""
    for kind in found:
        if not kind.group:
            return kind
    return found[0]


def resource_for(kind: GroupKind, resources: Iterable[ApiResource]) -> Resource | None:
    """The discovered REST resource of a kind (to read its templates)."""
    for entry in resources:
        if entry.resource.group == kind.group and entry.resource.kind == kind.kind:
            return entry.resource
    return None
