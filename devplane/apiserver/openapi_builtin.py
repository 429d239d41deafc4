"""The built-in kinds' OpenAPI v3 schemas, as Kubernetes publishes them.

They are generated (``hack/generate_builtin_openapi.py``) from Kubernetes' published API
definitions for the version the server reports, so ``kubectl explain deployment.spec`` shows
kube's own descriptions and kubectl apply finds kube's patch strategies; nothing here is typed
by hand. This module names what the generator must keep and loads its output.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .discovery import SERVER_VERSION
from .resources import BUILTIN_TYPES

KUBE_VERSION: str = SERVER_VERSION["gitVersion"]
OUTPUT = Path(__file__).resolve().parent / "openapi_defs" / f"kube-{KUBE_VERSION}.json"

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
PATCH_SCHEMA = _META + "Patch"
# Definitions every group-version document carries (kube's do too): what CRD schemas refer to,
# the Status errors are, the bodies of a delete and a patch, and the scale subresource's kind.
ROOT_DEFINITIONS: tuple[str, ...] = (
    _META + "ObjectMeta", _META + "ListMeta", _META + "Status", _META + "DeleteOptions", PATCH_SCHEMA,
    "io.k8s.api.autoscaling.v1.Scale",
)
META_SCHEMA_REFS = {"ObjectMeta": _META + "ObjectMeta", "ListMeta": _META + "ListMeta"}


def root_kinds() -> Iterator[tuple[str, str, str]]:
    """(group, version, kind) of every built-in served kind and of its list kind (when it can be listed)."""
    for rtype in BUILTIN_TYPES:
        if rtype.builtin:
            yield rtype.group, rtype.version, rtype.kind
            if "list" in rtype.verbs:
                yield rtype.group, rtype.version, rtype.list_kind


@functools.cache
def _schemas_json() -> str:
    text = OUTPUT.read_text(encoding="utf-8")
    schemas = json.loads(text)["schemas"]
    return json.dumps(schemas)


def builtin_schemas() -> dict[str, Any]:
    """Every generated schema by kube's definition name (a fresh copy: callers may keep it)."""
    schemas: dict[str, Any] = json.loads(_schemas_json())
    return schemas
