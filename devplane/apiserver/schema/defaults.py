"""Defaulting of custom resources: the schema's ``default:`` values, applied in place.

Follows apiextensions-apiserver ``structuraldefaulting.Default``: a default applies when
its key is absent, or null on a non-nullable field, and only inside a parent object that
exists (defaults never create parents).
"""

from __future__ import annotations

from typing import Any

from devplane.apiserver.codec import copy_json
from devplane.apiserver.schema.compile import META_KEYS, MISSING, Node


def default_map(node: Node, d: dict[str, Any], root: bool = False) -> None:
    """kube's ``Default`` on an object: fill absent (or non-nullable null) keys, then descend."""
    for key, child in node.defaulted:
        if root and key in META_KEYS:
            continue
        v = d.get(key, MISSING)
        if v is MISSING or (v is None and not child.nullable):
            d[key] = copy_json(child.default)
    for key, child in node.default_children:
        if root and key in META_KEYS:
            continue
        v = d.get(key)
        if isinstance(v, dict):
            default_map(child, v)
        elif isinstance(v, list):
            _default_list(child, v)
    add = node.default_additional
    if add is not None:
        props = node.properties
        for key, v in d.items():
            if key not in props:
                d[key] = _default_member(add, v)


def _default_list(node: Node, values: list[Any]) -> None:
    """Item defaults only replace non-nullable null items; other items are walked."""
    items = node.default_items
    if items is None:
        return
    for i, v in enumerate(values):
        values[i] = _default_member(items, v)


def _default_member(node: Node, v: Any) -> Any:
    """A map value or list item under ``node``, defaulted: a null becomes the default unless the
    node is nullable or has none (then it stays null); an object or list is defaulted inside.
    """
    if v is None:
        return copy_json(node.default) if node.has_default and not node.nullable else None
    if isinstance(v, dict):
        default_map(node, v)
    elif isinstance(v, list):
        _default_list(node, v)
    return v
