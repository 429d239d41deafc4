"""OpenAPI v3: the ``/openapi/v3`` index and one document per group-version.

kubectl reads these for three things, so each document carries what they need:

* ``kubectl explain`` finds the kind through a path's ``x-kubernetes-group-version-kind``
  (collection paths, cluster-wide and namespaced), then the ``components.schemas`` entry with
  the same extension, and walks its ``properties``/``$ref``/``allOf`` for fields and descriptions;
* ``kubectl apply`` reads the kind's schema for strategic-merge metadata
  (``x-kubernetes-patch-strategy``/``-merge-key``) of built-in kinds;
* kubectl's validation looks for a PATCH operation with a ``fieldValidation`` parameter and
  then leaves validation to the server.

Built-in schemas are kube's published ones (:mod:`.openapi_builtin`); custom resources' come
from their CRDs (:mod:`.openapi_crd`). A document holds its kinds' schemas and everything they
reference. Documents are cached until the group-version's served types change (a CRD write).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from .codec import encode_json
from .discovery import SERVER_VERSION
from .openapi_builtin import PATCH_SCHEMA, ROOT_DEFINITIONS, builtin_schemas
from .openapi_crd import custom_schemas, schema_name
from .resources import Registry, ResourceType

_REF_PREFIX = "#/components/schemas/"
_PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json", "application/merge-patch+json")


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _query(name: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}


def _content(schema_name_: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": _REF_PREFIX + schema_name_}}}


def _patch_types(rtype: ResourceType) -> tuple[str, ...]:
    """The PATCH content types kube lists: strategic merge only for built-in kinds. kubectl apply
    reads this list: it takes its strategic-merge metadata from these schemas only when it is there."""
    if rtype.builtin:
        return (*_PATCH_TYPES, "application/strategic-merge-patch+json")
    return _PATCH_TYPES


def _operation(rtype: ResourceType, action: str, names: tuple[str, str], params: tuple[str, ...] = ()) \
        -> dict[str, Any]:
    """One operation; ``names`` = (kind schema, list schema) the bodies and responses refer to."""
    returned = names[1] if action == "list" else names[0]
    operation: dict[str, Any] = {
        "operationId": f"{action}{rtype.kind}",
        "parameters": [_query(p) for p in params],
        "responses": {"200": {"description": "OK", "content": _content(returned)}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rtype.group, "version": rtype.version, "kind": rtype.kind},
    }
    if action in ("post", "put"):
        operation["requestBody"] = {"content": {"*/*": {"schema": {"$ref": _REF_PREFIX + names[0]}}},
                                    "required": True}
    elif action == "patch":
        patch = {"schema": {"$ref": _REF_PREFIX + PATCH_SCHEMA}}
        operation["requestBody"] = {"content": dict.fromkeys(_patch_types(rtype), patch), "required": True}
    return operation


_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")


class _Index:
    """Built-in schemas and kube's definition name of each built-in (group, version, kind)."""

    def __init__(self) -> None:
        self.schemas = builtin_schemas()
        self.by_gvk: dict[tuple[str, str, str], str] = {}
        for name, schema in self.schemas.items():
            gvks = schema.get("x-kubernetes-group-version-kind") or []
            if len(gvks) == 1:  # shared kinds (DeleteOptions, WatchEvent) list every group
                g = gvks[0]
                self.by_gvk[(g.get("group", ""), g.get("version", ""), g.get("kind", ""))] = name


_INDEX: _Index | None = None


def _index() -> _Index:
    global _INDEX
    if _INDEX is None:
        _INDEX = _Index()
    return _INDEX


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
            found.add(ref[len(_REF_PREFIX):])
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _schema_names(rtype: ResourceType) -> tuple[str, str]:
    """(kind schema, list schema) names: kube's definition names, or the CRD naming."""
    if rtype.builtin:
        index = _index()
        kind = index.by_gvk.get((rtype.group, rtype.version, rtype.kind))
        listed = index.by_gvk.get((rtype.group, rtype.version, rtype.list_kind), kind)  # reviews have no list
        if kind and listed:
            return kind, listed
    return (schema_name(rtype.group, rtype.version, rtype.kind),
            schema_name(rtype.group, rtype.version, rtype.list_kind))


def _components(types: list[ResourceType]) -> dict[str, Any]:
    """The kinds' schemas, their lists', and the closure of what they reference."""
    index = _index()
    schemas: dict[str, Any] = {}
    pending: set[str] = set(ROOT_DEFINITIONS)
    for rtype in types:
        if rtype.builtin and (rtype.group, rtype.version, rtype.kind) in index.by_gvk:
            pending.update(_schema_names(rtype))
        else:
            schemas.update(custom_schemas(rtype))
    for schema in schemas.values():
        _refs(schema, pending)
    while pending:
        name = pending.pop()
        if name in schemas or name not in index.schemas:
            continue
        schemas[name] = index.schemas[name]
        found: set[str] = set()
        _refs(schemas[name], found)
        pending |= found - schemas.keys()
    return {name: schemas[name] for name in sorted(schemas)}


def _paths(group: str, version: str, types: list[ResourceType]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    prefix = "/" + _gv_path(group, version)
    for rtype in sorted(types, key=lambda t: t.plural):
        names = _schema_names(rtype)
        if "list" not in rtype.verbs:  # create-only kinds (access reviews)
            paths[f"{prefix}/{rtype.plural}"] = {"post": _operation(rtype, "post", names, _WRITE_PARAMS)}
            continue
        cluster = f"{prefix}/{rtype.plural}"
        scope = f"{prefix}/namespaces/{{namespace}}/{rtype.plural}" if rtype.namespaced else cluster
        if rtype.namespaced:  # kube also serves the list across namespaces
            paths[cluster] = {"get": _operation(rtype, "list", names)}
        paths[scope] = {"get": _operation(rtype, "list", names), "post": _operation(rtype, "post", names,
                                                                                     _WRITE_PARAMS)}
        paths[scope + "/{name}"] = {
            "get": _operation(rtype, "get", names),
            "put": _operation(rtype, "put", names, _WRITE_PARAMS),
            "patch": _operation(rtype, "patch", names, (*_WRITE_PARAMS, "force")),
            "delete": _operation(rtype, "delete", names, ("dryRun",)),
        }
    return paths


@dataclass
class _Cached:
    types: list[ResourceType]  # kept so that the ids in the key stay unique while cached
    document: dict[str, Any]
    digest: str


_CACHE: dict[tuple[str, str], _Cached] = {}


def _cached(registry: Registry, group: str, version: str) -> _Cached:
    types = registry.in_group_version(group, version)
    entry = _CACHE.get((group, version))
    if entry is None or [id(t) for t in entry.types] != [id(t) for t in types]:
        document = {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": SERVER_VERSION["gitVersion"]},
            "paths": _paths(group, version, types),
            "components": {"schemas": _components(types)},
        }
        digest = hashlib.sha512(encode_json(document)).hexdigest()[:128].upper()
        entry = _CACHE[(group, version)] = _Cached(types, document, digest)
    return entry


def group_version_document(registry: Registry, group: str, version: str) -> dict[str, Any]:
    """The document of ``/openapi/v3/api/v1`` or ``/openapi/v3/apis/G/V`` (shared: do not modify)."""
    return _cached(registry, group, version).document


def root_document(registry: Registry) -> dict[str, Any]:
    """The ``/openapi/v3`` index: each group-version's URL, with a hash of its content as kube's."""
    paths: dict[str, Any] = {}
    gvs = [("", "v1")] + [(g, v) for g in registry.groups() for v in registry.versions(g)]
    for group, version in gvs:
        path = _gv_path(group, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={_cached(registry, group, version).digest}"}
    return {"paths": paths}


# ------------------------------------------------------------------------------------------------ v2

OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
"""What kubectl asks ``/openapi/v2`` for (client-go's ``OpenAPISchema``), gnostic's ``openapi_v2.Document``."""


def _proto_string(field: int, text: str) -> bytes:
    """One protobuf length-delimited field (wire type 2) holding ``text``; lengths here stay below 128 bytes."""
    data = text.encode()
    assert len(data) < 128
    return bytes([field << 3 | 2, len(data)]) + data


def v2_document(protobuf: bool) -> bytes:
    """``/openapi/v2`` without definitions: the version, and no schema of any kind.

    kubectl validates against v3 and leaves it to the server (the ``fieldValidation`` parameter); it falls back
    to v2 only for a kind v3 does not have (a mistyped kind, or one with no PATCH operation such as an access
    review). A real server's v2 document has no schema for a mistyped kind either, so kubectl goes on to say
    ``no matches for kind``; without any v2 document it would stop at ``failed to download openapi``. With no
    definitions kubectl validates nothing on the client: the server still does. Protobuf for kubectl (gnostic's
    Document: ``swagger`` is field 1, ``info`` 2 with ``title`` 1 and ``version`` 2), JSON otherwise.
    """
    version = str(SERVER_VERSION["gitVersion"])
    if protobuf:
        info = _proto_string(1, "Kubernetes") + _proto_string(2, version)
        return _proto_string(1, "2.0") + bytes([2 << 3 | 2, len(info)]) + info
    return encode_json({"swagger": "2.0", "info": {"title": "Kubernetes", "version": version}, "paths": {},
                        "definitions": {}})
