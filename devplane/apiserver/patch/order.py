"""The element order of a list a strategic merge patch merged, as ``strategicpatch`` orders it.

kubectl and kube-apiserver agree on the order of a merged list's elements, and clients see
it (``kubectl apply`` diffs, the order of containers); ``normalizeElementOrder`` puts the
patch's elements in patch order and the stored ones in stored order, interleaved by stored
position. This module is that ordering, and the partitions it starts from.
"""

from __future__ import annotations

from typing import Any

from devplane.apiserver.errors import bad_request
from devplane.apiserver.patch.govalues import bad_arg_type, go_eq, no_merge_key
from devplane.apiserver.patch.tags import DIRECTIVE


def find_by_key(items: list[Any], merge_key: str, value: Any) -> int:
    """Index of the first map whose merge key equals ``value``, or -1."""
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise bad_request(f"value for key {index} is not a map")
        if merge_key in item and go_eq(item[merge_key], value):
            return index
    return -1


def partition_primitives(items: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    """``items`` found in ``by`` and the others, each in their order."""
    present = [v for v in items if any(go_eq(v, b) for b in by)]
    absent = [v for v in items if not any(go_eq(v, b) for b in by)]
    return present, absent


def partition_maps(items: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """The maps of ``items`` whose merge key is in ``by`` and the others, each in their order."""
    present: list[Any] = []
    absent: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise bad_arg_type("map[string]interface {}", item)
        if merge_key not in item:
            raise no_merge_key(item, merge_key)
        (present if find_by_key(by, merge_key, item[merge_key]) >= 0 else absent).append(item)
    return present, absent


def _index(items: list[Any], value: Any, merge_key: str, kind: str) -> int:
    """Position of ``value`` in ``items`` (maps compare by merge key), or -1."""
    if kind == "map[string]interface {}":
        wanted = value.get(merge_key) if isinstance(value, dict) else None
        for i, item in enumerate(items):
            if go_eq(item.get(merge_key) if isinstance(item, dict) else None, wanted):
                return i
        return -1
    for i, item in enumerate(items):
        if go_eq(item, value):
            return i
    return -1


def _sort_by(items: list[Any], order: list[Any], merge_key: str, kind: str) -> list[Any]:
    """``normalizeSliceOrder``: stable sort by position in ``order``; deletions go last."""
    deletions: list[Any] = []
    if kind == "map[string]interface {}":
        for item in [*items, *order]:
            if not isinstance(item, dict):
                raise bad_arg_type("map[string]interface {}", item)
            if merge_key not in item:
                raise no_merge_key(item, merge_key)
        deletions = [item for item in items if item.get(DIRECTIVE) == "delete"]
        items = [item for item in items if item.get(DIRECTIVE) != "delete"]

    def position(item: Any) -> int:
        index = _index(order, item, merge_key, kind)
        return index if index >= 0 else len(order)

    return sorted(items, key=position) + deletions


def normalize_order(
    in_patch: list[Any],
    server_only: list[Any],
    *,
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    kind: str,
) -> list[Any]:
    """``normalizeElementOrder``: patch elements in patch order, stored ones in stored order,
    interleaved by stored position; an element the store did not have goes before the rest.
    """
    right = _sort_by(in_patch, patch_order, merge_key, kind)
    left = _sort_by(server_only, server_order, merge_key, kind)
    merged: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            merged.append(right[j])
            j += 1
        elif j >= len(right):
            merged.append(left[i])
            i += 1
        else:
            li = _index(server_order, left[i], merge_key, kind)
            ri = _index(server_order, right[j], merge_key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                merged.append(left[i])
                i += 1
            else:
                merged.append(right[j])
                j += 1
    return merged
