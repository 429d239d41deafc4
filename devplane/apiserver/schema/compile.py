"""A CRD version's ``openAPIV3Schema`` compiled into a tree of nodes, once per version.

Every write of a custom resource walks its schema three times (defaulting, pruning,
validation). The raw schema dict is compiled once into :class:`Node` objects that hold
the keywords as plain attributes, with regexes compiled and what each walk needs to know
about a subtree (defaults below, extension checks below, a type-only leaf) worked out,
so the per-request walks follow the object and only read attributes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from devplane.apiserver.schema.formats import FORMAT_CHECKERS, SUPPORTED_FORMATS
from devplane.apiserver.schema.patterns import compile_pattern
from devplane.apiserver.schema.render import go_json
from kube_api.validation import go_quote

# The root keys the server handles itself: never defaulted, pruned or validated by the schema.
META_KEYS: Final = frozenset({"apiVersion", "kind", "metadata"})
# An absent key (None is a present JSON null).
MISSING: Final[Any] = object()

# Python types that satisfy a declared type without further checks (used by the fast path).
_PY_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}


def _opt_int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _opt_float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


class Node:
    """One compiled schema node: the keywords a walk needs, as plain attributes."""

    __slots__ = (
        "additional",
        "additional_any",
        "all_of",
        "any_of",
        "array_checks",
        "check_type",
        "default",
        "default_additional",
        "default_children",
        "default_items",
        "defaulted",
        "embedded",
        "enum",
        "enum_detail",
        "exclusive_maximum",
        "exclusive_minimum",
        "fast_any",
        "fast_types",
        "format",
        "format_check",
        "has_default",
        "has_defaults",
        "has_extra",
        "items",
        "junctors",
        "list_map_defaults",
        "list_map_keys",
        "list_type",
        "max_items",
        "max_length",
        "max_properties",
        "maximum",
        "min_items",
        "min_length",
        "min_properties",
        "minimum",
        "multiple_of",
        "not_",
        "null_error",
        "nullable",
        "number_checks",
        "one_of",
        "pattern",
        "preserve",
        "properties",
        "regex",
        "required",
        "string_checks",
        "trivial",
        "type_label",
        "types",
        "unique_items",
    )

    types: tuple[str, ...]
    type_label: str
    format: str
    format_check: Callable[[str], bool] | None
    check_type: bool
    nullable: bool
    null_error: bool
    has_default: bool
    default: Any
    properties: dict[str, Node]
    additional: Node | None
    additional_any: bool
    items: Node | None
    preserve: bool
    embedded: bool
    required: tuple[str, ...]
    enum: tuple[Any, ...] | None
    enum_detail: str
    minimum: float | None
    maximum: float | None
    exclusive_minimum: bool
    exclusive_maximum: bool
    multiple_of: float | None
    number_checks: bool
    min_length: int | None
    max_length: int | None
    pattern: str
    regex: re.Pattern[str] | None
    string_checks: bool
    min_items: int | None
    max_items: int | None
    unique_items: bool
    array_checks: bool
    min_properties: int | None
    max_properties: int | None
    list_type: str | None
    list_map_keys: tuple[str, ...]
    list_map_defaults: tuple[Any, ...]
    any_of: tuple[Node, ...]
    one_of: tuple[Node, ...]
    all_of: tuple[Node, ...]
    not_: Node | None
    junctors: bool
    defaulted: tuple[tuple[str, Node], ...]
    default_children: tuple[tuple[str, Node], ...]
    default_additional: Node | None
    default_items: Node | None
    has_defaults: bool
    has_extra: bool
    trivial: bool
    fast_any: bool
    fast_types: tuple[type, ...]

    def __init__(self, s: dict[str, Any]) -> None:
        raw_type = s.get("type")
        if s.get("x-kubernetes-int-or-string") is True:
            types: tuple[str, ...] = ("integer", "string")  # kube rewrites int-or-string this way
        elif isinstance(raw_type, str) and raw_type:
            types = (raw_type,)
        elif isinstance(raw_type, list):
            types = tuple(str(t) for t in raw_type)
        else:
            types = ()
        self.types = types
        self.type_label = ",".join(types)
        raw_format = s.get("format")
        fmt = raw_format if isinstance(raw_format, str) else ""
        normalized = fmt.replace("-", "")
        self.format = fmt if normalized in SUPPORTED_FORMATS else ""
        self.format_check = FORMAT_CHECKERS.get(normalized) if self.format else None
        self.check_type = bool(types) or bool(self.format)
        self.nullable = s.get("nullable") is True
        self.null_error = bool(types) and "null" not in types and not self.nullable
        self.default = s.get("default")
        self.has_default = self.default is not None

        props = s.get("properties")
        self.properties = (
            {str(k): Node(v) for k, v in props.items() if isinstance(v, dict)}
            if isinstance(props, dict)
            else {}
        )
        additional = s.get("additionalProperties")
        self.additional = Node(additional) if isinstance(additional, dict) else None
        self.additional_any = additional is True
        items = s.get("items")
        self.items = Node(items) if isinstance(items, dict) else None
        self.preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded = s.get("x-kubernetes-embedded-resource") is True
        required = s.get("required")
        self.required = tuple(str(r) for r in required) if isinstance(required, list) else ()

        enum = s.get("enum")
        self.enum = tuple(enum) if isinstance(enum, list) and enum else None
        self.enum_detail = ""
        if self.enum is not None:
            shown = [go_quote(v if isinstance(v, str) else go_json(v)) for v in self.enum]
            self.enum_detail = "supported values: " + ", ".join(shown)

        self.minimum = _opt_float(s.get("minimum"))
        self.maximum = _opt_float(s.get("maximum"))
        self.exclusive_minimum = s.get("exclusiveMinimum") is True
        self.exclusive_maximum = s.get("exclusiveMaximum") is True
        self.multiple_of = _opt_float(s.get("multipleOf"))
        self.number_checks = (
            self.minimum is not None or self.maximum is not None or self.multiple_of is not None
        )

        self.min_length = _opt_int(s.get("minLength"))
        self.max_length = _opt_int(s.get("maxLength"))
        pattern = s.get("pattern")
        self.pattern = pattern if isinstance(pattern, str) else ""
        self.regex = compile_pattern(self.pattern) if self.pattern else None
        self.string_checks = (
            self.min_length is not None or self.max_length is not None or self.regex is not None
        )

        self.min_items = _opt_int(s.get("minItems"))
        self.max_items = _opt_int(s.get("maxItems"))
        self.unique_items = s.get("uniqueItems") is True
        self.array_checks = self.min_items is not None or self.max_items is not None or self.unique_items
        self.min_properties = _opt_int(s.get("minProperties"))
        self.max_properties = _opt_int(s.get("maxProperties"))

        list_type = s.get("x-kubernetes-list-type")
        self.list_type = list_type if list_type in ("set", "map") else None
        keys = s.get("x-kubernetes-list-map-keys")
        self.list_map_keys = tuple(str(k) for k in keys) if isinstance(keys, list) else ()
        item_props = self.items.properties if self.items is not None else {}
        self.list_map_defaults = tuple(
            item_props[k].default if k in item_props and item_props[k].has_default else MISSING
            for k in self.list_map_keys
        )

        self.any_of = _compile_list(s.get("anyOf"))
        self.one_of = _compile_list(s.get("oneOf"))
        self.all_of = _compile_list(s.get("allOf"))
        raw_not = s.get("not")
        self.not_ = Node(raw_not) if isinstance(raw_not, dict) else None
        self.junctors = bool(self.any_of or self.one_of or self.all_of or self.not_ is not None)

        self._derive()

    def _derive(self) -> None:
        """Pre-compute what the walks need to know about the subtree below this node."""
        children = list(self.properties.items())
        self.defaulted = tuple((k, c) for k, c in children if c.has_default)
        self.default_children = tuple((k, c) for k, c in children if c.has_defaults)
        add, items = self.additional, self.items
        self.default_additional = add if add is not None and (add.has_default or add.has_defaults) else None
        self.default_items = (
            items if items is not None and (items.has_default or items.has_defaults) else None
        )
        self.has_defaults = bool(
            self.defaulted or self.default_children or self.default_additional or self.default_items
        )
        self.has_extra = (
            self.embedded
            or self.list_type is not None
            or any(c.has_extra for _, c in children)
            or (add is not None and add.has_extra)
            or (items is not None and items.has_extra)
        )
        # A leaf whose only rule is its type: the object walk skips calling into it.
        self.trivial = not (
            self.junctors
            or self.string_checks
            or self.number_checks
            or self.array_checks
            or self.format_check is not None
            or self.enum is not None
            or self.properties
            or self.additional is not None
            or self.items is not None
            or self.required
            or self.min_properties is not None
            or self.max_properties is not None
        )
        self.fast_any = not self.check_type
        fast: list[type] = []
        for t in self.types:
            fast.extend(_PY_TYPES.get(t, ()))
        if self.types and self.nullable:
            fast.append(type(None))
        if self.format:  # the format/type interplay has quirks: let the full check run
            fast = []
        self.fast_types = tuple(fast)


def _compile_list(raw: Any) -> tuple[Node, ...]:
    return tuple(Node(s) for s in raw if isinstance(s, dict)) if isinstance(raw, list) else ()
