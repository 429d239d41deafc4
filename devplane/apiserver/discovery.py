"""Discovery documents (/api, /apis, /apis/G/V) and the minimal OpenAPI kubectl relies on."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from .resources import SUBRESOURCE_VERBS, Registry, ResourceType

SERVER_VERSION = {
    "major": "1",
    "minor": "36",
    "gitVersion": "v1.36.0",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-11-21T00:00:00Z",
    "goVersion": "go1.24.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int]:
    """kube's version ordering: GA > beta > alpha, then higher numbers first (sort descending)."""
    m = _VERSION_RE.match(version)
    if not m:
        return (-1, 0, 0)
    major = int(m.group(1))
    stage = {None: 2, "beta": 1, "alpha": 0}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, major, minor)


def sorted_versions(versions: list[str]) -> list[str]:
    return sorted(versions, key=version_priority, reverse=True)


def api_versions() -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def api_group(registry: Registry, group: str) -> dict[str, Any]:
    versions = sorted_versions(registry.versions(group))
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = [api_group(registry, g) for g in registry.groups()]
    for g in groups:
        del g["kind"], g["apiVersion"]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _storage_version_hash(rtype: ResourceType) -> str:
    digest = hashlib.sha256(f"{rtype.group}/{rtype.storage_version}/{rtype.kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for rtype in sorted(registry.in_group_version(group, version), key=lambda t: t.plural):
        entry: dict[str, Any] = {
            "name": rtype.plural,
            "singularName": rtype.singular or rtype.kind.lower(),
            "namespaced": rtype.namespaced,
            "kind": rtype.kind,
            "verbs": list(rtype.verbs),
        }
        if rtype.short_names:
            entry["shortNames"] = list(rtype.short_names)
        if rtype.categories:
            entry["categories"] = list(rtype.categories)
        if not rtype.builtin:
            entry["storageVersionHash"] = _storage_version_hash(rtype)
        resources.append(entry)
        for sub in rtype.subresources:
            sub_entry: dict[str, Any] = {"name": f"{rtype.plural}/{sub}", "singularName": "",
                                         "namespaced": rtype.namespaced, "kind": rtype.kind,
                                         "verbs": list(SUBRESOURCE_VERBS)}
            if sub == "scale":
                sub_entry.update(group="autoscaling", version="v1", kind="Scale")
            if sub == "finalize":
                sub_entry["verbs"] = ["update"]
            resources.append(sub_entry)
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}" if group
            else version, "resources": resources}
