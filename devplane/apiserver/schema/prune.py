"""Pruning of custom resources: fields the schema does not declare are dropped, in place.

Follows apiextensions-apiserver ``structuralpruning.Prune`` (with its ``skipPrune`` mode
under ``x-kubernetes-preserve-unknown-fields``) and ``PruneNonNullableNullsWithoutDefaults``:
a null on a non-nullable field that has no default is dropped too, as the kube docs say.
"""

from __future__ import annotations

from typing import Any

from devplane.apiserver.schema.compile import META_KEYS, Node


def prune_map(node: Node | None, d: dict[str, Any], skip: bool, root: bool = False) -> None:
    """kube's ``prune``/``skipPrune`` of one object, plus dropping non-nullable nulls without default.

    ``skip`` is kube's skipPrune mode (inside ``x-kubernetes-preserve-unknown-fields``):
    unknown keys stay, declared ones are still pruned normally below.
    """
    if node is None:
        if not skip:
            d.clear()
        return
    skip = skip or node.preserve
    props = node.properties
    additional = node.additional
    dead: list[str] = []
    for key, v in d.items():
        if key in META_KEYS and (root or (node.embedded and _keeps_meta(key, v, skip))):
            continue
        child = props.get(key)
        if child is None:
            child = additional
            if child is None:
                if node.additional_any:  # additionalProperties: true — values are pruned with no schema
                    if isinstance(v, dict):
                        v.clear()
                    elif isinstance(v, list):
                        _prune_list(None, v, False)
                elif not skip:
                    dead.append(key)
                continue
        if v is None:
            if not child.nullable and not child.has_default:
                dead.append(key)
        elif isinstance(v, dict):
            prune_map(child, v, False)
        elif isinstance(v, list):
            _prune_list(child, v, False)
    for key in dead:
        del d[key]


def _keeps_meta(key: str, v: Any, skip: bool) -> bool:
    """An embedded resource keeps string apiVersion/kind and an object metadata (all three when skipping)."""
    return skip or (isinstance(v, dict) if key == "metadata" else isinstance(v, str))


def _prune_list(node: Node | None, values: list[Any], skip: bool) -> None:
    if node is not None and node.preserve:
        skip = True
    items = node.items if node is not None else None
    if skip and items is None:
        return
    for v in values:
        if isinstance(v, dict):
            prune_map(items, v, skip)
        elif isinstance(v, list):
            _prune_list(items, v, skip)
