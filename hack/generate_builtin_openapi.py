#!/usr/bin/env python3
"""Write the built-in kinds' OpenAPI v3 schemas from Kubernetes' published definitions (``--check``: fail if stale).

The dev API server publishes ``components.schemas`` for the built-in kinds it serves so that
``kubectl explain`` (and kubectl apply's strategic-merge patch metadata) see kube's own
schemas. They are not typed by hand: this script takes Kubernetes' published API definitions
(``api/openapi-spec``) as shipped by the ``kubernetes-validate`` PyPI package (a dev
dependency), whose ``vX.Y.Z-local/_definitions.json`` holds every definition with its
descriptions and ``x-kubernetes-*`` extensions, converted to JSON Schema. It turns them back
into kube's OpenAPI v3 form and keeps only what the served kinds reach:

* ``"type": [T, "null"]`` (the converter's nullability) → ``"type": T``;
* ``$ref`` → ``#/components/schemas/NAME``, and a ``$ref`` with a description becomes
  ``allOf: [{$ref}]`` beside it, as kube's v3 documents write it;
* the ``enum`` the converter adds to a kind's ``apiVersion``/``kind`` is dropped.

The output, ``devplane/apiserver/openapi_defs/kube-<version>.json``, is package data the server
reads at run time (the server does not need ``kubernetes-validate``).

    python hack/generate_builtin_openapi.py           # rewrite the file
    python hack/generate_builtin_openapi.py --check   # verify it
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate  # a dev dependency: the server never imports it

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from devplane.apiserver.openapi_builtin import KUBE_VERSION, OUTPUT, ROOT_DEFINITIONS, root_kinds  # noqa: E402

_JSON_SCHEMA_REF = "#/$defs/"
_V3_REF = "#/components/schemas/"


def _published_definitions() -> dict[str, Any]:
    folder = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / f"{KUBE_VERSION}-local"
    defs: dict[str, Any] = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))["$defs"]
    return defs


def _to_v3(node: Any) -> Any:
    """One JSON-Schema node back to kube's OpenAPI v3 spelling."""
    if isinstance(node, list):
        return [_to_v3(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _to_v3(v) for k, v in node.items() if k != "$ref"}
    kind = out.get("type")
    if isinstance(kind, list):
        rest = [t for t in kind if t != "null"]
        out["type"] = rest[0] if len(rest) == 1 else rest
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = _V3_REF + ref.removeprefix(_JSON_SCHEMA_REF)
        if out:
            out["allOf"] = [{"$ref": target}]
        else:
            out["$ref"] = target
    return out


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref.removeprefix(_JSON_SCHEMA_REF))
        for value in node.values():
            found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def _gvks(definition: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(g.get("group", ""), g.get("version", ""), g.get("kind", ""))
            for g in definition.get("x-kubernetes-group-version-kind") or []]


def build() -> dict[str, Any]:
    """The schemas the served kinds (and their lists) reach, in kube's v3 form."""
    defs = _published_definitions()
    by_gvk = {gvk: name for name, d in defs.items() for gvk in _gvks(d) if len(_gvks(d)) == 1}
    wanted: list[str] = list(ROOT_DEFINITIONS)
    for group, version, kind in root_kinds():
        name = by_gvk.get((group, version, kind))
        if name is None:
            raise SystemExit(f"no published definition for {group}/{version} {kind}")
        wanted.append(name)
    seen: set[str] = set()
    while wanted:
        name = wanted.pop()
        if name not in seen:
            seen.add(name)
            wanted.extend(_refs(defs[name]) - seen)
    schemas: dict[str, Any] = {}
    for name in sorted(seen):
        schema = _to_v3(defs[name])
        if schema.get("x-kubernetes-group-version-kind"):
            for field in ("apiVersion", "kind"):
                (schema.get("properties") or {}).get(field, {}).pop("enum", None)
        schemas[name] = schema
    return {"source": f"Kubernetes {KUBE_VERSION} API definitions (kubernetes-validate package)",
            "schemas": schemas}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when the file is stale")
    args = parser.parse_args()
    text = json.dumps(build(), indent=1, sort_keys=True) + "\n"
    if args.check:
        if not OUTPUT.exists() or OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT} is stale: run python hack/generate_builtin_openapi.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
