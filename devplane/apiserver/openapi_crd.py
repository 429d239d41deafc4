"""A custom resource's OpenAPI v3 schemas, built from its CRD as kube-apiserver builds them.

kube's apiextensions OpenAPI builder publishes each served CRD version as two schemas named
by the reversed group, the version and the kind (``apps.karmada.io/v1alpha1 WorkloadRebalancer``
→ ``io.karmada.apps.v1alpha1.WorkloadRebalancer``, and ``...WorkloadRebalancerList``). The
kind's schema is the CRD's ``openAPIV3Schema`` with kube's standard ``apiVersion``/``kind``/
``metadata`` fields and the ``x-kubernetes-group-version-kind`` extension that
``kubectl explain`` looks the kind up by.
"""

from __future__ import annotations

import copy
from typing import Any

from .openapi_builtin import META_SCHEMA_REFS
from .resources import ResourceType

_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"
API_VERSION_FIELD: dict[str, Any] = {
    "type": "string",
    "description": "APIVersion defines the versioned schema of this representation of an object. Servers should "
                   "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
                   f"More info: {_CONVENTIONS}#resources",
}
KIND_FIELD: dict[str, Any] = {
    "type": "string",
    "description": "Kind is a string value representing the REST resource this object represents. Servers may "
                   "infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. "
                   f"More info: {_CONVENTIONS}#types-kinds",
}


def _ref(name: str) -> str:
    return f"#/components/schemas/{name}"


def schema_name(group: str, version: str, kind: str) -> str:
    """kube-openapi's ToRESTFriendlyName of ``group/version.kind``: the group's labels reversed."""
    reversed_group = ".".join(reversed(group.split(".")))
    return f"{reversed_group}.{version}.{kind}"


def _gvk(rtype: ResourceType, kind: str) -> list[dict[str, str]]:
    return [{"group": rtype.group, "kind": kind, "version": rtype.version}]


def kind_schema(rtype: ResourceType) -> dict[str, Any]:
    """The kind's schema: the CRD's (or a native kind's declared) schema with kube's standard fields."""
    schema: dict[str, Any] = copy.deepcopy(rtype.openapi_schema) if rtype.openapi_schema else {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}
    properties: dict[str, Any] = schema.setdefault("properties", {})
    properties["apiVersion"] = {**API_VERSION_FIELD, **_described(properties.get("apiVersion"))}
    properties["kind"] = {**KIND_FIELD, **_described(properties.get("kind"))}
    properties["metadata"] = {"allOf": [{"$ref": _ref(META_SCHEMA_REFS["ObjectMeta"])}],
                              "description": f"Standard object's metadata. More info: {_CONVENTIONS}#metadata"}
    schema["x-kubernetes-group-version-kind"] = _gvk(rtype, rtype.kind)
    return schema


def _described(field: Any) -> dict[str, Any]:
    """The CRD's own description of a standard field wins over kube's default text."""
    if isinstance(field, dict) and isinstance(field.get("description"), str):
        return {"description": field["description"]}
    return {}


def list_schema(rtype: ResourceType) -> dict[str, Any]:
    """The list kind kube publishes beside each custom kind."""
    return {
        "description": f"{rtype.list_kind} is a list of {rtype.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": API_VERSION_FIELD,
            "items": {"type": "array", "items": {"$ref": _ref(schema_name(rtype.group, rtype.version, rtype.kind))},
                      "description": f"List of {rtype.plural}. More info: {_CONVENTIONS}"},
            "kind": KIND_FIELD,
            "metadata": {"allOf": [{"$ref": _ref(META_SCHEMA_REFS["ListMeta"])}],
                         "description": f"Standard list metadata. More info: {_CONVENTIONS}#types-kinds"},
        },
        "x-kubernetes-group-version-kind": _gvk(rtype, rtype.list_kind),
    }


def custom_schemas(rtype: ResourceType) -> dict[str, dict[str, Any]]:
    """Both schemas of one custom resource version, by their published names."""
    return {
        schema_name(rtype.group, rtype.version, rtype.kind): kind_schema(rtype),
        schema_name(rtype.group, rtype.version, rtype.list_kind): list_schema(rtype),
    }
