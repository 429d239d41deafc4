"""CustomResourceDefinitions: the packaged Karmada CRDs, and CRD → served resource types.

Storing a CRD object makes its resource served (as kube-apiserver's apiextensions server
does); deleting it stops serving and removes its objects.
"""

from __future__ import annotations

import functools
import json
from importlib import resources as importlib_resources
from typing import Any

import yaml

from controller_manager import objects

from .errors import Cause
from .resources import ResourceType
from .schema import StructuralSchema


@functools.cache
def _packaged_crds_json() -> str:
    """Parsed once per process (YAML parsing dominated server start-up), kept as JSON text."""
    folder = importlib_resources.files(__package__).joinpath("crds")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crds: list[dict[str, Any]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            for doc in yaml.load_all(entry.read_text(encoding="utf-8"), Loader=loader):
                if doc:
                    crds.append(doc)
    return json.dumps(crds)


def packaged_crds() -> list[dict[str, Any]]:
    """Karmada's CRDs, copied unchanged from the Karmada repository (see crds/README.md). Fresh copies."""
    crds: list[dict[str, Any]] = json.loads(_packaged_crds_json())
    return crds


def validate_crd(crd: dict[str, Any]) -> list[Cause]:
    """The checks that keep a CRD servable; kube has many more, these are the ones that matter here."""
    causes: list[Cause] = []
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [Cause("FieldValueRequired", "Required value", "spec")]
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    assert isinstance(names, dict)
    group = spec.get("group")
    plural = names.get("plural")
    if not group:
        causes.append(Cause("FieldValueRequired", "Required value", "spec.group"))
    if not plural:
        causes.append(Cause("FieldValueRequired", "Required value", "spec.names.plural"))
    if not names.get("kind"):
        causes.append(Cause("FieldValueRequired", "Required value", "spec.names.kind"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(Cause("FieldValueNotSupported",
                            f'Unsupported value: "{spec.get("scope")}": supported values: "Cluster", "Namespaced"',
                            "spec.scope"))
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        causes.append(Cause("FieldValueRequired", "Required value: must have exactly one version marked as "
                            "storage version", "spec.versions"))
    elif sum(1 for v in versions if isinstance(v, dict) and v.get("storage")) != 1:
        causes.append(Cause("FieldValueInvalid", "Invalid value: must have exactly one version marked as "
                            "storage version", "spec.versions"))
    name = objects.metadata(crd).get("name")
    if group and plural and name != f"{plural}.{group}":
        causes.append(Cause("FieldValueInvalid", f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
                            "metadata.name"))
    return causes


def types_for_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """One ResourceType per served version of the CRD."""
    spec = crd["spec"]
    names = spec["names"]
    storage = next(v["name"] for v in spec["versions"] if v.get("storage"))
    types: list[ResourceType] = []
    for version in spec["versions"]:
        if not version.get("served", True):
            continue
        schema_doc = (version.get("schema") or {}).get("openAPIV3Schema")
        subresources = version.get("subresources") or {}
        subs = tuple(s for s in ("status", "scale") if s in subresources)
        types.append(ResourceType(
            group=spec["group"],
            version=version["name"],
            plural=names["plural"],
            kind=names["kind"],
            namespaced=spec["scope"] == "Namespaced",
            singular=names.get("singular") or names["kind"].lower(),
            list_kind=names.get("listKind") or names["kind"] + "List",
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            subresources=subs,
            has_generation=True,
            status_on_create="drop" if "status" in subs else "keep",
            builtin=False,
            storage_version=storage,
            schema=StructuralSchema(schema_doc) if schema_doc else None,
            openapi_schema=schema_doc if isinstance(schema_doc, dict) else None,
            printer_columns=list(version.get("additionalPrinterColumns") or []),
            crd_name=objects.name(crd),
        ))
    return types


def established_status(crd: dict[str, Any], now: str) -> dict[str, Any]:
    """The status kube's CRD controllers write once names are accepted and the API is served."""
    spec = crd["spec"]
    return {
        "acceptedNames": dict(spec["names"]),
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
        "storedVersions": [v["name"] for v in spec["versions"] if v.get("storage")],
    }
