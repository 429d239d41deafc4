"""The slice of OpenAPI v3 that kubectl reads.

kubectl asks ``/openapi/v3`` whether the server supports the ``fieldValidation`` query
parameter (it then leaves validation to the server instead of downloading schemas). It
looks for a PATCH operation tagged with the kind's ``x-kubernetes-group-version-kind`` and
a ``fieldValidation`` parameter. We publish exactly that for every served resource.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .codec import encode_json
from .resources import Registry, ResourceType


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _query(name: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}


def _operation(rtype: ResourceType, action: str, params: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "operationId": f"{action}{rtype.kind}",
        "parameters": [_query(p) for p in params],
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rtype.group, "version": rtype.version, "kind": rtype.kind},
    }


_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")


def group_version_document(registry: Registry, group: str, version: str) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    prefix = "/" + _gv_path(group, version)
    for rtype in registry.in_group_version(group, version):
        scope = f"{prefix}/namespaces/{{namespace}}/{rtype.plural}" if rtype.namespaced else \
            f"{prefix}/{rtype.plural}"
        paths[scope] = {"get": _operation(rtype, "list"), "post": _operation(rtype, "post", _WRITE_PARAMS)}
        paths[scope + "/{name}"] = {
            "get": _operation(rtype, "get"),
            "put": _operation(rtype, "put", _WRITE_PARAMS),
            "patch": _operation(rtype, "patch", (*_WRITE_PARAMS, "force")),
            "delete": _operation(rtype, "delete", ("dryRun",)),
        }
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.31.0"}, "paths": paths}


def root_document(registry: Registry) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    gvs = [("", "v1")] + [(g, v) for g in registry.groups() for v in registry.versions(g)]
    for group, version in gvs:
        digest = hashlib.sha256(encode_json(group_version_document(registry, group, version))).hexdigest()
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest[:64].upper()}"}
    return {"paths": paths}
