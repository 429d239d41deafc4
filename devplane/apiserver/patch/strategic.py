"""Strategic merge patch (``application/strategic-merge-patch+json``) of built-in objects.

A port of the apply half of k8s.io/apimachinery ``pkg/util/strategicpatch/patch.go``
(``StrategicMergeMapPatch``): maps merge, lists tagged ``merge`` merge by their key (or as
a set of primitives), the ``$patch``, ``$retainKeys``, ``$deleteFromPrimitiveList`` and
``$setElementOrder`` directives apply, ``null`` deletes. The tags come from ``tags.py``,
the merged lists' element order from ``order.py``.
"""

from __future__ import annotations

from typing import Any

from devplane.apiserver.codec import copy_json, go_json_type_name
from devplane.apiserver.errors import bad_request, patch_rejected, unsupported_media_type
from devplane.apiserver.patch.govalues import bad_arg_type, go_eq, go_format, go_type, no_merge_key
from devplane.apiserver.patch.order import (
    find_by_key,
    normalize_order,
    partition_maps,
    partition_primitives,
)
from devplane.apiserver.patch.tags import (
    DELETE_FROM_PRIMITIVE_LIST,
    DIRECTIVE,
    NON_STRATEGIC_MEDIA_TYPES,
    RETAIN_KEYS,
    SET_ELEMENT_ORDER,
    STRATEGIC_MERGE_KINDS,
    Field,
    lookup,
)


def apply_strategic_merge_patch(original: Any, patch: Any, kind_key: str) -> Any:
    """Apply a strategic merge patch to a built-in object of kind ``group/Kind``.

    Follows k8s.io/apimachinery ``StrategicMergeMapPatch``: lists tagged ``merge`` merge by
    their key (new elements first, then the others in their stored order, as the library
    orders them), ``$patch``/``$retainKeys``/``$deleteFromPrimitiveList``/``$setElementOrder``
    directives, ``null`` deletes. Directive keys left inside values taken from the patch
    are dropped, as kube's typed decode of the result drops them.
    """
    schema = STRATEGIC_MERGE_KINDS.get(kind_key)
    if schema is None:
        raise unsupported_media_type(NON_STRATEGIC_MEDIA_TYPES)
    if patch is None:
        patch = {}
    if not isinstance(patch, dict):
        raise bad_request(
            f"json: cannot unmarshal {go_json_type_name(patch)} into Go value of type map[string]interface {{}}"
        )
    if not isinstance(original, dict):
        raise bad_request("invalid JSON document")
    merged = _merge_map(copy_json(original), copy_json(patch), schema)
    return _drop_directive_keys(merged)


def _drop_directive_keys(value: Any) -> Any:
    """Remove ``$``-prefixed keys (no built-in field, label, annotation or data key has one)."""
    if isinstance(value, dict):
        return {k: _drop_directive_keys(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_drop_directive_keys(v) for v in value]
    return value



def _extract_key(key: str, prefix: str) -> str:
    """``$setElementOrder/containers`` -> ``containers``."""
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        if prefix == DELETE_FROM_PRIMITIVE_LIST:
            raise bad_request("invalid patch format of primitive list")
        raise bad_request("invalid patch format of setElementOrder list")
    return rest


def _discard_nulls(value: Any) -> None:
    """Drop ``null`` members everywhere in a value about to be added as is."""
    if isinstance(value, dict):
        for k in [k for k, v in value.items() if v is None]:
            del value[k]
        for v in value.values():
            _discard_nulls(v)
    elif isinstance(value, list):
        for v in value:
            _discard_nulls(v)


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """Strip maps carrying ``$patch`` from a value added as is; False if ``value`` is one."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        for k in list(value):
            cleaned, keep = _remove_directives(value[k])
            if keep:
                value[k] = cleaned
            else:
                del value[k]
        return value, True
    if isinstance(value, list):
        kept: list[Any] = []
        for item in value:
            cleaned, keep = _remove_directives(item)
            if keep:
                kept.append(cleaned)
        return kept, True
    return value, True


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: str) -> dict[str, Any]:
    """``mergeMap``: merge ``patch`` into ``original`` (both owned copies, mutated)."""
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == "replace":
            del patch[DIRECTIVE]
            return patch
        if directive == "delete":
            return {}
        raise bad_request(f"unknown patch type: {go_format(directive)} in map: {go_format(patch)}")

    _apply_retain_keys(original, patch)
    _merge_ordered_lists(original, patch, schema)

    for raw_key, patch_value in list(patch.items()):
        key = raw_key
        is_delete_list = raw_key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if is_delete_list:
            key = _extract_key(raw_key, DELETE_FROM_PRIMITIVE_LIST)

        if patch_value is None:
            original.pop(key, None)
            continue

        if key not in original or go_type(original[key]) != go_type(patch_value):
            if not is_delete_list:
                _discard_nulls(patch_value)
                cleaned, keep = _remove_directives(patch_value)
                if keep:
                    original[key] = cleaned
                else:
                    original.pop(key, None)
            continue

        current = original[key]
        field = lookup(schema, key)
        if isinstance(current, dict):
            if field.strategy == "replace":
                original[key] = patch_value
            else:
                original[key] = _merge_map(current, patch_value, field.schema)
        elif isinstance(current, list):
            if field.strategy == "merge" or is_delete_list:
                original[key] = _merge_slice(current, patch_value, field, is_delete_list)[0]
            else:
                original[key] = patch_value
        else:
            original[key] = patch_value
    return original


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """``$retainKeys``: drop stored keys not listed; every patched key must be listed."""
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise bad_request("invalid patch format of retainKeys")
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if not any(go_eq(key, r) for r in retain):
            raise bad_request("invalid patch format of retainKeys")
    for key in list(original):
        if not any(go_eq(key, r) for r in retain):
            del original[key]


def _merge_ordered_lists(original: dict[str, Any], patch: dict[str, Any], schema: str) -> None:
    """``mergePatchIntoOriginal``: merge each list that has a ``$setElementOrder`` and order it.

    Listed elements come first in the directive's order, the others keep their stored
    order; the list is then removed from ``patch`` so it is not merged twice.
    """
    for directive_key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(directive_key)
        if not isinstance(order, list):
            raise bad_arg_type("[]interface {}", order)
        key = _extract_key(directive_key, SET_ELEMENT_ORDER)
        found_original = key in original
        found_patch = key in patch
        original_list: list[Any] = []
        patch_list: list[Any] = []
        if found_original:
            if not isinstance(original[key], list):
                raise bad_arg_type("[]interface {}", original[key])
            original_list = original[key]
        if found_patch:
            if not isinstance(patch[key], list):
                raise bad_arg_type("[]interface {}", patch[key])
            patch_list = patch[key]
        field = lookup(schema, key)
        merge_key = field.merge_key
        _check_patch_follows_order(patch_list, order, merge_key)

        server_order = original_list
        if found_original and not found_patch:
            merged = original_list
        elif found_patch and not found_original:
            merged = _remove_directives(patch_list)[0]
        elif found_original and found_patch:
            if field.strategy == "merge":
                merged, server_order = _merge_slice(original_list, patch_list, field, False)
            else:
                merged = patch_list
        else:
            continue

        if merge_key:
            in_order, server_only = partition_maps(merged, order, merge_key)
        else:
            in_order, server_only = partition_primitives(merged, order)
        kind = _element_kind(original_list, patch_list)
        if kind is None:
            raise bad_request("no elements in any of the given slices")
        original[key] = normalize_order(
            in_order,
            server_only,
            patch_order=order,
            server_order=server_order,
            merge_key=merge_key,
            kind=kind,
        )
        patch.pop(key, None)


def _check_patch_follows_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch list must be a subsequence of the ``$setElementOrder`` list (deletions aside)."""
    if not order or not patch_list:
        return
    items = patch_list
    if merge_key:
        for item in patch_list:
            if not isinstance(item, dict):
                raise bad_arg_type("map[string]interface {}", item)
        items = [item for item in patch_list if item.get(DIRECTIVE) != "delete"]
    p = s = 0
    while p < len(items) and s < len(order):
        if isinstance(items[p], dict) and DIRECTIVE in items[p]:
            p += 1
            continue
        if _merge_key_equal(items[p], order[s], merge_key):
            p += 1
        s += 1
    if p < len(items) and s >= len(order):
        raise bad_request(
            f"the order in patch list:\n{go_format(patch_list)}\n doesn't match "
            f"{SET_ELEMENT_ORDER} list:\n{go_format(order)}"
        )


def _merge_key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return go_eq(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise bad_arg_type("map[string]interface {}", item)
        if merge_key not in item:
            raise no_merge_key(item, merge_key)
    return go_eq(left[merge_key], right[merge_key])


def _element_kind(*lists: list[Any]) -> str | None:
    """``sliceElementType``: all elements share one type, never a list; None if empty."""
    kind: str | None = None
    for items in lists:
        for item in items:
            current = go_type(item)
            if kind is None:
                kind = current
                if isinstance(item, list):
                    raise patch_rejected()  # lists of lists: kube answers 422
            elif current != kind:
                raise bad_request("list element types are not identical: " + go_format(list(lists)))
    return kind


def _go_capacity(length: int) -> int:
    """Capacity Go gives a decoded array of ``length`` elements (append growth: 1, 2, 4, ...).

    The library edits slices in place, and with spare capacity those edits leak into the
    caller's view of the stored list, which ``$setElementOrder`` then orders by. kube keeps
    the capacity its decoder gave the typed object (``ToUnstructured`` copies it); assuming
    append growth reproduces kubectl's element order exactly, and kube's in practice.
    """
    return 0 if length == 0 else 1 << (length - 1).bit_length()


def _merge_slice(
    original: list[Any], patch: list[Any], field: Field, is_delete_list: bool
) -> tuple[list[Any], list[Any]]:
    """``mergeSlice``: merge a ``merge``-tagged list.

    Returns the merged list and the stored list as Go's caller sees it afterwards (same
    length, but edited in place by deletions, appends into spare capacity and de-duplication),
    which is what ``$setElementOrder`` orders the elements it does not list by.
    """
    if not original and not patch:
        return original, original
    kind = _element_kind(original, patch)
    if kind is None:
        return original, original
    merge_key = field.merge_key
    if kind != "map[string]interface {}":
        if is_delete_list:
            return [v for v in original if not any(go_eq(v, d) for d in patch)], original
        both = [*original, *patch]
        merged = _go_dedupe(both)
        # ``append(original, patch...)`` reuses the stored array when it has room.
        view = both[: len(original)] if len(both) <= _go_capacity(len(original)) else original
        server_order = view
    else:
        if not merge_key:
            raise bad_request(f"cannot merge lists without merge key for {field.schema or 'type'}")
        merged, patch, server_order, view = _merge_list_of_maps(original, patch, merge_key, field.schema)

    if merge_key:
        in_patch, server_only = partition_maps(merged, patch, merge_key)
    else:
        in_patch, server_only = partition_primitives(merged, patch)
    ordered = normalize_order(
        in_patch, server_only, patch_order=patch, server_order=server_order, merge_key=merge_key, kind=kind
    )
    return ordered, view


def _go_dedupe(items: list[Any]) -> list[Any]:
    """``deduplicateScalars``, in place like Go (moves the last element into each duplicate's slot)."""
    last = len(items) - 1
    i = 0
    while i < last:
        j = i + 1
        while j <= last:
            if go_eq(items[i], items[j]):
                items[j] = items[last]
                last -= 1
                j -= 1
            j += 1
        i += 1
    return items[: last + 1]


def _merge_list_of_maps(
    original: list[Any], patch: list[Any], merge_key: str, schema: str
) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """Merge a list of maps by ``merge_key`` (``mergeSliceWith[out]SpecialElements``).

    ``{"$patch": "delete"}`` elements delete by key, ``{"$patch": "replace"}`` makes the
    remaining patch elements the whole list; other elements merge into the stored one with
    the same key or are appended. Returns the merged list, the patch without directive
    elements, the stored order to keep the other elements in, and the caller's view of the
    stored array (see :func:`_go_capacity`).
    """
    length = len(original)
    backing = list(original)  # the stored array, edited in place as Go does
    live = length
    plain: list[Any] = []
    replace = False
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == "delete":
            if merge_key not in item:
                raise no_merge_key(item, merge_key)
            while (index := find_by_key(backing[:live], merge_key, item[merge_key])) >= 0:
                backing[index : live - 1] = backing[index + 1 : live]
                live -= 1
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise bad_request("merging lists cannot yet be specified in the patch")
        else:
            raise bad_request(f"unknown patch type: {go_format(directive)} in map: {go_format(item)}")

    if replace:
        return plain, [], plain, backing
    merged = backing[:live]
    server_order = list(merged)
    shared = True  # appends land in the stored array until it is full
    capacity = _go_capacity(length)
    for item in plain:
        if merge_key not in item:
            raise no_merge_key(item, merge_key)
        index = find_by_key(merged, merge_key, item[merge_key])
        if index >= 0:
            merged[index] = _merge_map(merged[index], item, schema)
            continue
        merged.append(item)
        if shared and len(merged) <= capacity:
            if len(merged) <= length:
                backing[len(merged) - 1] = item
        else:
            shared = False
    return merged, plain, server_order, backing
