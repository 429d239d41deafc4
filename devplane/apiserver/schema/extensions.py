"""The ``x-kubernetes-*`` checks kube-apiserver runs after the OpenAPI validation.

Two extensions are not part of OpenAPI and are checked on their own walk: an
``x-kubernetes-embedded-resource`` object must carry ``apiVersion`` and ``kind``
(apiextensions-apiserver ``schemaobjectmeta.Validate``), and an array with
``x-kubernetes-list-type`` ``set`` or ``map`` must not repeat an item or a key (its
``listtype`` validation). Their causes follow the schema validator's, embedded ones first.
"""

from __future__ import annotations

import re
from typing import Any, Final

from devplane.apiserver.errors import Cause
from devplane.apiserver.schema.compile import META_KEYS, MISSING, Node
from devplane.apiserver.schema.render import DUPLICATE, REQUIRED, go_sharp_v, invalid, render
from devplane.apiserver.schema.values import canon

_RX_DNS1035: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1035_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def walk_extensions(
    node: Node, value: Any, path: str, embedded: list[Cause], lists: list[Cause], *, root: bool = False
) -> None:
    """Collect the embedded-resource and the list-type causes of ``value`` (only where a subtree has them)."""
    if isinstance(value, dict):
        if node.embedded and not root:
            _check_embedded(path, value, embedded)
        props, additional = node.properties, node.additional
        prefix = f"{path}." if path else ""
        for key in sorted(value):
            if root and key in META_KEYS:
                continue
            child = props.get(key)
            if child is not None:
                if child.has_extra:
                    walk_extensions(child, value[key], prefix + key, embedded, lists)
            elif additional is not None and additional.has_extra:
                walk_extensions(additional, value[key], f"{path}[{key}]", embedded, lists)
    elif isinstance(value, list):
        if node.list_type == "set":
            _check_list_set(path, value, lists)
        elif node.list_type == "map":
            _check_list_map(node, path, value, lists)
        items = node.items
        if items is not None and items.has_extra:
            for i, item in enumerate(value):
                walk_extensions(items, item, f"{path}[{i}]", embedded, lists)


def _check_embedded(path: str, d: dict[str, Any], errs: list[Cause]) -> None:
    """``schemaobjectmeta.validateEmbeddedResource``: apiVersion and kind are required strings."""
    prefix = f"{path}." if path else ""
    for key in ("apiVersion", "kind"):
        if key not in d:
            errs.append(Cause(REQUIRED, "Required value: must not be empty", prefix + key))
    api_version = _nonempty_string(d, "apiVersion", prefix + "apiVersion", errs)
    if api_version is not None and api_version.count("/") > 1:
        errs.append(invalid(prefix + "apiVersion", api_version, f"unexpected GroupVersion string: {api_version}"))
    kind = _nonempty_string(d, "kind", prefix + "kind", errs)
    if kind is not None:
        problems = []
        if len(kind) > 63:
            problems.append("must be no more than 63 characters")
        if _RX_DNS1035.match(kind.lower()) is None:
            problems.append(_DNS1035_MSG)
        if problems:
            detail = "may have mixed case, but should otherwise match: " + ",".join(problems)
            errs.append(invalid(prefix + "kind", kind, detail))


def _nonempty_string(d: dict[str, Any], key: str, field: str, errs: list[Cause]) -> str | None:
    """``d[key]`` when it is a non-empty string; a present value of another kind, or empty, is a cause."""
    value = d.get(key, MISSING)
    if value is MISSING:
        return None  # reported as required
    if not isinstance(value, str):
        errs.append(invalid(field, value, "must be a string"))
    elif not value:
        errs.append(invalid(field, value, "must not be empty"))
    else:
        return value
    return None


def _check_list_set(path: str, values: list[Any], errs: list[Cause]) -> None:
    """Report the second occurrence of each repeated item (kube reports no further ones)."""
    if len(values) <= 1:
        return
    seen: dict[Any, int] = {}
    for i, v in enumerate(values):
        key = canon(v)
        times = seen.get(key, 0)
        if times == 1:
            errs.append(Cause(DUPLICATE, f"Duplicate value: {render(v)}", f"{path}[{i}]"))
        seen[key] = times + 1


def _check_list_map(node: Node, path: str, values: list[Any], errs: list[Cause]) -> None:
    for i, v in enumerate(values):
        if v is not None and not isinstance(v, dict):
            errs.append(invalid(f"{path}[{i}]", v, "must be an object for an array of list-type map"))
            return
    if len(values) <= 1:
        return
    keys, defaults = node.list_map_keys, node.list_map_defaults
    seen: dict[Any, int] = {}
    for i, v in enumerate(values):
        item: dict[str, Any] = v if isinstance(v, dict) else {}
        parts = []
        for key, fallback in zip(keys, defaults, strict=True):
            if key in item:
                parts.append(canon(item[key]))
            elif fallback is not MISSING:
                parts.append(canon(fallback))
            else:
                parts.append(("u",))
        identity = tuple(parts)
        times = seen.get(identity, 0)
        if times == 1:
            shown = {key: item[key] for key in keys if key in item}
            errs.append(Cause(DUPLICATE, f"Duplicate value: {go_sharp_v(shown)}", f"{path}[{i}]"))
        seen[identity] = times + 1
