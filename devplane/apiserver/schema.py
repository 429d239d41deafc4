"""Structural OpenAPI v3 schemas of custom resources: defaulting, pruning and validation.

kube-apiserver runs three steps on every custom-resource write: it applies ``default:``
values, prunes the fields the schema does not declare, and validates the result with
kube-openapi's validator, whose errors it turns into ``field.Error`` causes. This module
does the same three steps and reproduces the cause texts, so a 422 from the dev server
reads like one from a real server.

The raw schema dict is compiled once into a tree of small :class:`_Node` objects; the
per-request walks follow the *object* and only look up pre-computed node attributes, and
regexes are compiled at that time. Behaviour follows kube's code:

* defaulting: ``structuraldefaulting.Default`` (a default applies when its key is absent,
  or null on a non-nullable field, and only inside a parent object that exists);
* pruning: ``structuralpruning.Prune`` plus ``PruneNonNullableNullsWithoutDefaults``
  (a null on a non-nullable field without default is dropped, as the kube docs say);
* validation: kube-openapi's ``SchemaValidator`` (type, anyOf/oneOf/allOf/not, string,
  format, number, array, enum, object checks, in that order), then the embedded-resource
  checks of ``schemaobjectmeta.Validate``, then ``x-kubernetes-list-type`` set/map
  uniqueness, mapped to causes as ``apiservervalidation.ValidateCustomResource`` does.

Field paths use newer kube's form: ``spec.workloads[0].name``, map keys in brackets.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import warnings
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from devplane.apiserver.codec import go_quote
from devplane.apiserver.errors import Cause

__all__ = ["StructuralSchema"]

_META_KEYS: Final = frozenset({"apiVersion", "kind", "metadata"})
_MISSING: Final[Any] = object()

_INVALID: Final = "FieldValueInvalid"
_REQUIRED: Final = "FieldValueRequired"
_NOT_SUPPORTED: Final = "FieldValueNotSupported"
_TOO_LONG: Final = "FieldValueTooLong"
_DUPLICATE: Final = "FieldValueDuplicate"

# JSON type names of decoded values (exact types first; subclasses go through _json_type).
_JSON_TYPES: Final[dict[type, str]] = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}
# Python types that satisfy a declared type without further checks (used by the fast path).
_PY_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}

# Formats kube keeps (apiservervalidation.StripUnsupportedFormatsPostProcess, dashes removed);
# any other format (int32, int64, float, ...) is dropped before validation.
_SUPPORTED_FORMATS: Final = frozenset(
    {
        "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid",
        "uuid3", "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn",
        "hexcolor", "rgbcolor", "byte", "password", "date", "duration", "datetime",
    }
)  # fmt: skip

_MAX_JSON_INT: Final = float(1 << 53)


# --------------------------------------------------------------------------------------
# Go-compatible rendering of values (field.Error.ErrorBody, %q, %v, %#v, json.Marshal)
# --------------------------------------------------------------------------------------

def _float_digits(f: float) -> tuple[str, int]:
    """Shortest round-trip digits of ``abs(f)`` (non-zero, finite) and the decimal-point position."""
    sign, digits, exponent = Decimal(repr(abs(f))).normalize().as_tuple()
    del sign
    text = "".join(map(str, digits))
    assert isinstance(exponent, int)
    return text, len(text) + exponent


def _go_float(f: float) -> str:
    """Go's ``%v`` for a float64 (``strconv`` 'g' with shortest digits: ``1e+06``, ``0.5``)."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    digits, dp = _float_digits(f)
    sign = "-" if f < 0 else ""
    exp = dp - 1
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return sign + _fixed(digits, dp)


def _fixed(digits: str, dp: int) -> str:
    if dp <= 0:
        return "0." + "0" * -dp + digits
    if dp >= len(digits):
        return digits + "0" * (dp - len(digits))
    return digits[:dp] + "." + digits[dp:]


def _go_json_float(f: float) -> str:
    """``encoding/json``'s float64 form (``1``, ``0.5``, ``1e+21``, ``1e-7``)."""
    if f == 0 or not math.isfinite(f):
        return "0" if f == 0 else _go_float(f)
    digits, dp = _float_digits(f)
    sign = "-" if f < 0 else ""
    if abs(f) < 1e-6 or abs(f) >= 1e21:
        exp = dp - 1
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}".replace("e-0", "e-")
    return sign + _fixed(digits, dp)


def _go_json(v: Any) -> str:
    """``json.Marshal`` of a decoded JSON value (sorted keys, Go's number forms)."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_json_float(v)
    if isinstance(v, str):
        text = json.dumps(v, ensure_ascii=False)
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    if isinstance(v, dict):
        return "{" + ",".join(f"{_go_json(str(k))}:{_go_json(v[k])}" for k in sorted(v)) + "}"
    if isinstance(v, list):
        return "[" + ",".join(_go_json(x) for x in v) + "]"
    return _go_json(str(v))


def _go_sharp_v(v: Any) -> str:
    """Go's ``%#v`` of a decoded JSON value (``map[string]interface {}{"key":"a"}``)."""
    if v is None:
        return "interface {}(nil)"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{_go_sharp_v(v[k])}" for k in sorted(v))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(v, list):
        return "[]interface {}{" + ", ".join(_go_sharp_v(x) for x in v) + "}"
    return go_quote(str(v))


def _render(v: Any) -> str:
    """How ``field.Error`` prints a bad value: ``"str"``, ``0``, ``true``, ``%#v``.

    A nil value becomes the *string* "null" before printing, so it shows quoted.
    """
    if v is None:
        return '"null"'
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, str):
        return go_quote(v)
    return _go_sharp_v(v)


def _field(path: str) -> str:
    # kube builds the field from a nil *field.Path when the error has no name.
    return path or "<nil>"


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(_INVALID, f"Invalid value: {_render(value)}: {detail}", _field(path))


def _type_cause(path: str, want: str, got: str) -> Cause:
    quoted = go_quote(got)
    return Cause(
        _INVALID, f"Invalid value: {quoted}: {path} in body must be of type {want}: {quoted}", _field(path)
    )


def _composite(detail: str) -> Cause:
    """anyOf/oneOf/allOf/not failures are not ``*Validation`` errors: kube reports them at ``<nil>``."""
    return Cause(_INVALID, f'Invalid value: "": {detail}', "<nil>")


# --------------------------------------------------------------------------------------
# Formats, regexes, comparisons
# --------------------------------------------------------------------------------------

_RX_DATE: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_RX_TIME: Final = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_date(s: str) -> bool:
    """strfmt ``date``: Go's ``time.Parse("2006-01-02", s)`` succeeds."""
    m = _RX_DATE.match(s)
    if m is None:
        return False
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= day <= _DAYS[month - 1] + (1 if month == 2 and leap else 0)


def _is_date_time(s: str) -> bool:
    """strfmt ``IsDateTime`` (date, a ``t``, then ``hh:mm:ss[.frac](z|±hh:mm)``, case-insensitive)."""
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _RX_TIME.match(parts[1])
    return m is not None and m[1] <= "23" and m[2] <= "59" and m[3] <= "59"


def _is_base64(s: str) -> bool:
    """strfmt ``byte``: Go's ``base64.StdEncoding.DecodeString`` (padding required, CR/LF ignored)."""
    try:
        base64.b64decode(s.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


_FORMAT_CHECKERS: Final[dict[str, Callable[[str], bool]]] = {
    "datetime": _is_date_time,
    "date": _is_date,
    "byte": _is_base64,
}

_POSIX_CLASSES: Final = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}  # fmt: skip
_RX_MULTILINE_FLAG: Final = re.compile(r"\(\?[a-zA-Z]*m")
_REGEX_CACHE: dict[str, re.Pattern[str] | None] = {}


def _go_regex_to_python(pattern: str) -> str:
    """Translate the RE2 (Go) constructs that differ in Python's ``re``.

    ``$`` means end of text in Go (Python's also matches before a final newline), ``\\z``
    is Python's ``\\Z``, POSIX classes and ``(?<name>`` need rewriting, and a literal ``[``
    inside a class is escaped so Python does not read it as a nested set.
    """
    multiline = _RX_MULTILINE_FLAG.search(pattern) is not None
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append("\\Z" if pattern[i + 1] == "z" and not in_class else pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "[":
                end = pattern.find(":]", i + 2) if pattern.startswith("[:", i) else -1
                name = pattern[i + 2 : end] if end != -1 else ""
                if name in _POSIX_CLASSES:
                    out.append(_POSIX_CLASSES[name])
                    i = end + 2
                    continue
                out.append("\\[")
            else:
                if c == "]":
                    in_class = False
                out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":
                out.append("\\]")
                i += 1
            continue
        if c == "$" and not multiline:
            out.append("\\Z")
        elif c == "(" and pattern.startswith("(?<", i) and pattern[i + 3 : i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _compile_pattern(pattern: str) -> re.Pattern[str] | None:
    """Compile a schema ``pattern`` once; a pattern Python cannot express is not enforced."""
    if pattern in _REGEX_CACHE:
        return _REGEX_CACHE[pattern]
    flags = 0 if "(?i" in pattern else re.ASCII  # Go's \d \w \s \b are ASCII-only
    compiled: re.Pattern[str] | None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = re.compile(_go_regex_to_python(pattern), flags)
    except (re.error, ValueError, OverflowError):
        compiled = None
    _REGEX_CACHE[pattern] = compiled
    return compiled


def _is_json_integer(v: Any) -> bool:
    """``swag.IsFloat64AJSONInteger``: integral and within ±2^53."""
    return isinstance(v, float) and math.isfinite(v) and v.is_integer() and abs(v) <= _MAX_JSON_INT


def _json_type(v: Any) -> str:
    t = _JSON_TYPES.get(type(v))
    if t is not None:
        return t
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    if isinstance(v, (list, tuple)):
        return "array"
    return "null" if v is None else "object"


def _canon(v: Any) -> Any:
    """A hashable identity for set/map-list uniqueness (Go compares int64 and float64 as different)."""
    if v is None:
        return ("n",)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int):
        return ("i", v)
    if isinstance(v, float):
        return ("f", v)
    if isinstance(v, str):
        return ("s", v)
    return ("j", _go_json(v))


def _json_equal(a: Any, b: Any) -> bool:
    """Enum membership the way kube-openapi compares (numbers by value, bools only with bools)."""
    if b is None or a is None:
        return False  # a nil enum entry is skipped, a nil value never matches
    if isinstance(b, bool) or isinstance(a, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(b, (int, float)):
        return isinstance(a, (int, float)) and a == b
    if isinstance(b, str):
        return isinstance(a, str) and a == b
    return _go_json(a) == _go_json(b)


def _copy_json(v: Any) -> Any:
    """Deep copy of a JSON value (defaults must never be shared between objects)."""
    if isinstance(v, dict):
        return {k: _copy_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy_json(x) for x in v]
    return v


def _opt_int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _opt_float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# --------------------------------------------------------------------------------------
# Compiled schema nodes
# --------------------------------------------------------------------------------------


class _Node:
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
    properties: dict[str, _Node]
    additional: _Node | None
    additional_any: bool
    items: _Node | None
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
    any_of: tuple[_Node, ...]
    one_of: tuple[_Node, ...]
    all_of: tuple[_Node, ...]
    not_: _Node | None
    junctors: bool
    defaulted: tuple[tuple[str, _Node], ...]
    default_children: tuple[tuple[str, _Node], ...]
    default_additional: _Node | None
    default_items: _Node | None
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
        self.format = fmt if normalized in _SUPPORTED_FORMATS else ""
        self.format_check = _FORMAT_CHECKERS.get(normalized) if self.format else None
        self.check_type = bool(types) or bool(self.format)
        self.nullable = s.get("nullable") is True
        self.null_error = bool(types) and "null" not in types and not self.nullable
        self.default = s.get("default")
        self.has_default = self.default is not None

        props = s.get("properties")
        self.properties = (
            {str(k): _Node(v) for k, v in props.items() if isinstance(v, dict)}
            if isinstance(props, dict)
            else {}
        )
        additional = s.get("additionalProperties")
        self.additional = _Node(additional) if isinstance(additional, dict) else None
        self.additional_any = additional is True
        items = s.get("items")
        self.items = _Node(items) if isinstance(items, dict) else None
        self.preserve = s.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded = s.get("x-kubernetes-embedded-resource") is True
        required = s.get("required")
        self.required = tuple(str(r) for r in required) if isinstance(required, list) else ()

        enum = s.get("enum")
        self.enum = tuple(enum) if isinstance(enum, list) and enum else None
        self.enum_detail = ""
        if self.enum is not None:
            shown = [go_quote(v if isinstance(v, str) else _go_json(v)) for v in self.enum]
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
        self.regex = _compile_pattern(self.pattern) if self.pattern else None
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
            item_props[k].default if k in item_props and item_props[k].has_default else _MISSING
            for k in self.list_map_keys
        )

        self.any_of = _compile_list(s.get("anyOf"))
        self.one_of = _compile_list(s.get("oneOf"))
        self.all_of = _compile_list(s.get("allOf"))
        raw_not = s.get("not")
        self.not_ = _Node(raw_not) if isinstance(raw_not, dict) else None
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


def _compile_list(raw: Any) -> tuple[_Node, ...]:
    return tuple(_Node(s) for s in raw if isinstance(s, dict)) if isinstance(raw, list) else ()


# --------------------------------------------------------------------------------------
# Defaulting
# --------------------------------------------------------------------------------------


def _default_map(node: _Node, d: dict[str, Any], root: bool = False) -> None:
    """kube's ``Default`` on an object: fill absent (or non-nullable null) keys, then descend."""
    for key, child in node.defaulted:
        if root and key in _META_KEYS:
            continue
        v = d.get(key, _MISSING)
        if v is _MISSING or (v is None and not child.nullable):
            d[key] = _copy_json(child.default)
    for key, child in node.default_children:
        if root and key in _META_KEYS:
            continue
        v = d.get(key)
        if isinstance(v, dict):
            _default_map(child, v)
        elif isinstance(v, list):
            _default_list(child, v)
    add = node.default_additional
    if add is not None:
        props = node.properties
        for key, v in d.items():
            if key in props:
                continue
            if v is None:
                if add.has_default and not add.nullable:
                    d[key] = _copy_json(add.default)
            elif isinstance(v, dict):
                _default_map(add, v)
            elif isinstance(v, list):
                _default_list(add, v)


def _default_list(node: _Node, values: list[Any]) -> None:
    """Item defaults only replace non-nullable null items; other items are walked."""
    items = node.default_items
    if items is None:
        return
    for i, v in enumerate(values):
        if v is None:
            if items.has_default and not items.nullable:
                values[i] = _copy_json(items.default)
        elif isinstance(v, dict):
            _default_map(items, v)
        elif isinstance(v, list):
            _default_list(items, v)


# --------------------------------------------------------------------------------------
# Pruning
# --------------------------------------------------------------------------------------


def _prune_map(node: _Node | None, d: dict[str, Any], skip: bool, root: bool = False) -> None:
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
        if key in _META_KEYS and (root or (node.embedded and _keeps_meta(key, v, skip))):
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
            _prune_map(child, v, False)
        elif isinstance(v, list):
            _prune_list(child, v, False)
    for key in dead:
        del d[key]


def _keeps_meta(key: str, v: Any, skip: bool) -> bool:
    """An embedded resource keeps string apiVersion/kind and an object metadata (all three when skipping)."""
    return skip or (isinstance(v, dict) if key == "metadata" else isinstance(v, str))


def _prune_list(node: _Node | None, values: list[Any], skip: bool) -> None:
    if node is not None and node.preserve:
        skip = True
    items = node.items if node is not None else None
    if skip and items is None:
        return
    for v in values:
        if isinstance(v, dict):
            _prune_map(items, v, skip)
        elif isinstance(v, list):
            _prune_list(items, v, skip)


# --------------------------------------------------------------------------------------
# Validation (kube-openapi SchemaValidator order)
# --------------------------------------------------------------------------------------


def _validate(node: _Node, value: Any, path: str, errs: list[Cause]) -> None:
    """One kube-openapi ``SchemaValidator.Validate`` call: a null only gets the type and enum checks."""
    if value is None:
        if node.null_error:
            errs.append(_type_cause(path, node.type_label, "null"))
        if node.enum is not None:
            detail = f'Unsupported value: "null": {node.enum_detail}'
            errs.append(Cause(_NOT_SUPPORTED, detail, _field(path)))
        return
    t = _JSON_TYPES.get(type(value)) or _json_type(value)
    if node.check_type and t not in node.types:
        _check_type(node, value, t, path, errs)
    if node.junctors:
        _check_junctors(node, value, path, errs)
    if t == "string":
        if node.string_checks:
            _check_string(node, value, path, errs)
        if node.format_check is not None and not node.format_check(value):
            errs.append(_type_cause(path, node.format, value))
    elif t in ("integer", "number"):
        if node.number_checks:
            _check_number(node, value, t == "integer", path, errs)
    elif t == "array":
        items = node.items
        if items is not None:
            for i, item in enumerate(value):
                if items.trivial and (items.fast_any or type(item) in items.fast_types):
                    continue
                _validate(items, item, f"{path}[{i}]", errs)
        if node.array_checks:
            _check_array(node, value, path, errs)
    if node.enum is not None and not any(_json_equal(value, e) for e in node.enum):
        errs.append(
            Cause(_NOT_SUPPORTED, f"Unsupported value: {_render(value)}: {node.enum_detail}", _field(path))
        )
    if t == "object":
        _validate_object(node, value, path, errs, False)


def _validate_object(node: _Node, d: dict[str, Any], path: str, errs: list[Cause], root: bool) -> None:
    count = len(d)
    if node.min_properties is not None and count < node.min_properties:
        errs.append(
            _invalid(path, count, f"{path} in body should have at least {node.min_properties} properties")
        )
        return
    if node.max_properties is not None and count > node.max_properties:
        errs.append(
            _invalid(path, count, f"{path} in body should have at most {node.max_properties} properties")
        )
        return
    prefix = f"{path}." if path else ""
    for key in node.required:
        if key not in d:
            errs.append(Cause(_REQUIRED, "Required value", prefix + key))
    props = node.properties
    additional = node.additional
    if not props and additional is None:
        return
    for key in sorted(d):
        if root and key in _META_KEYS:
            continue
        v = d[key]
        child = props.get(key)
        if child is not None:
            if child.trivial and (child.fast_any or type(v) in child.fast_types):
                continue
            _validate(child, v, prefix + key, errs)
        elif additional is not None:
            if additional.trivial and (additional.fast_any or type(v) in additional.fast_types):
                continue
            _validate(additional, v, f"{path}[{key}]", errs)


def _check_type(node: _Node, value: Any, t: str, path: str, errs: list[Cause]) -> None:
    """kube-openapi ``typeValidator`` for a value whose JSON type is not among the declared ones."""
    types = node.types
    if t == "number" and "integer" in types and _is_json_integer(value):
        return
    if t == "integer" and "number" in types:
        return
    fmt = node.format
    if fmt:
        if t not in ("string", "array"):
            go_format = "int64" if t == "integer" else "float64" if t == "number" else ""
            errs.append(_type_cause(path, fmt, go_format))
            return
        if "number" not in types and "integer" not in types:
            return  # kube-openapi lets strings and arrays through when a format is set
    if types:
        errs.append(_type_cause(path, node.type_label, t))


def _check_string(node: _Node, value: str, path: str, errs: list[Cause]) -> None:
    """maxLength, minLength, pattern; kube-openapi stops at the first failure."""
    if node.max_length is not None and len(value) > node.max_length:
        errs.append(Cause(_TOO_LONG, f"Too long: may not be longer than {node.max_length}", _field(path)))
        return
    if node.min_length is not None and len(value) < node.min_length:
        errs.append(_invalid(path, value, f"{path} in body should be at least {node.min_length} chars long"))
        return
    if node.regex is not None and node.regex.search(value) is None:
        errs.append(_invalid(path, value, f"{path} in body should match '{node.pattern}'"))


def _check_number(node: _Node, value: int | float, is_int: bool, path: str, errs: list[Cause]) -> None:
    """multipleOf, minimum, maximum; integers compare against bounds truncated to int64, as Go does."""
    factor = node.multiple_of
    if factor is not None:
        if is_int and int(factor) != 0:
            if value % int(factor) != 0:
                errs.append(_invalid(path, value, f"{path} in body should be a multiple of {int(factor)}"))
        elif factor != 0:
            ratio = value / factor if factor >= 1 else (1 / factor) * value
            if not _is_json_integer(float(ratio)):
                errs.append(
                    _invalid(path, value, f"{path} in body should be a multiple of {_go_float(factor)}")
                )
    low = node.minimum
    if low is not None:
        bound: int | float = int(low) if is_int else low
        exclusive = node.exclusive_minimum
        if value <= bound if exclusive else value < bound:
            shown = str(bound) if is_int else _go_float(low)
            relation = "greater than" if exclusive else "greater than or equal to"
            errs.append(_invalid(path, value, f"{path} in body should be {relation} {shown}"))
    high = node.maximum
    if high is not None:
        bound = int(high) if is_int else high
        exclusive = node.exclusive_maximum
        if value >= bound if exclusive else value > bound:
            shown = str(bound) if is_int else _go_float(high)
            relation = "less than" if exclusive else "less than or equal to"
            errs.append(_invalid(path, value, f"{path} in body should be {relation} {shown}"))


def _check_array(node: _Node, value: list[Any], path: str, errs: list[Cause]) -> None:
    size = len(value)
    if node.min_items is not None and size < node.min_items:
        errs.append(_invalid(path, size, f"{path} in body should have at least {node.min_items} items"))
    if node.max_items is not None and size > node.max_items:
        errs.append(_invalid(path, size, f"{path} in body should have at most {node.max_items} items"))
    if node.unique_items and len({_canon(v) for v in value}) != size:
        errs.append(
            Cause(_INVALID, f'Invalid value: "": {path} in body shouldn\'t contain duplicates', _field(path))
        )


def _check_junctors(node: _Node, value: Any, path: str, errs: list[Cause]) -> None:
    """anyOf, oneOf, allOf, not — each alternative validated at the same path."""
    quoted = go_quote(path)
    if node.any_of:
        best: list[Cause] | None = None
        matched = False
        for sub in node.any_of:
            found: list[Cause] = []
            _validate(sub, value, path, found)
            if not found:
                matched, best = True, None
                break
            if best is None:
                best = found
        if not matched:
            errs.append(_composite(f"{quoted} must validate at least one schema (anyOf)"))
        if best:
            errs.extend(best)
    if node.one_of:
        best = None
        valid = 0
        for sub in node.one_of:
            found = []
            _validate(sub, value, path, found)
            if not found:
                valid += 1
                best = None
            elif valid == 0 and best is None:
                best = found
        if valid != 1:
            extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            errs.append(_composite(f"{quoted} must validate one and only one schema (oneOf). {extra}"))
            if best:
                errs.extend(best)
    if node.all_of:
        valid = 0
        for sub in node.all_of:
            found = []
            _validate(sub, value, path, found)
            if not found:
                valid += 1
            errs.extend(found)
        if valid != len(node.all_of):
            extra = ". None validated" if valid == 0 else ""
            errs.append(_composite(f"{quoted} must validate all the schemas (allOf){extra}"))
    if node.not_ is not None:
        found = []
        _validate(node.not_, value, path, found)
        if not found:
            errs.append(_composite(f"{quoted} must not validate the schema (not)"))


# --------------------------------------------------------------------------------------
# Embedded resources and list-type uniqueness (run after the schema validation, as kube does)
# --------------------------------------------------------------------------------------

_RX_DNS1035: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1035_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def _walk_extra(
    node: _Node, value: Any, path: str, embedded: list[Cause], lists: list[Cause], *, root: bool = False
) -> None:
    if isinstance(value, dict):
        if node.embedded and not root:
            _check_embedded(path, value, embedded)
        props, additional = node.properties, node.additional
        prefix = f"{path}." if path else ""
        for key in sorted(value):
            if root and key in _META_KEYS:
                continue
            child = props.get(key)
            if child is not None:
                if child.has_extra:
                    _walk_extra(child, value[key], prefix + key, embedded, lists)
            elif additional is not None and additional.has_extra:
                _walk_extra(additional, value[key], f"{path}[{key}]", embedded, lists)
    elif isinstance(value, list):
        if node.list_type == "set":
            _check_list_set(path, value, lists)
        elif node.list_type == "map":
            _check_list_map(node, path, value, lists)
        items = node.items
        if items is not None and items.has_extra:
            for i, item in enumerate(value):
                _walk_extra(items, item, f"{path}[{i}]", embedded, lists)


def _check_embedded(path: str, d: dict[str, Any], errs: list[Cause]) -> None:
    """``schemaobjectmeta.validateEmbeddedResource``: apiVersion and kind are required strings."""
    prefix = f"{path}." if path else ""
    for key in ("apiVersion", "kind"):
        if key not in d:
            errs.append(Cause(_REQUIRED, "Required value: must not be empty", prefix + key))
    api_version = d.get("apiVersion", _MISSING)
    if api_version is not _MISSING:
        field = prefix + "apiVersion"
        if not isinstance(api_version, str):
            errs.append(_invalid(field, api_version, "must be a string"))
        elif not api_version:
            errs.append(_invalid(field, api_version, "must not be empty"))
        elif api_version.count("/") > 1:
            errs.append(_invalid(field, api_version, f"unexpected GroupVersion string: {api_version}"))
    kind = d.get("kind", _MISSING)
    if kind is not _MISSING:
        field = prefix + "kind"
        if not isinstance(kind, str):
            errs.append(_invalid(field, kind, "must be a string"))
        elif not kind:
            errs.append(_invalid(field, kind, "must not be empty"))
        else:
            problems = []
            if len(kind) > 63:
                problems.append("must be no more than 63 characters")
            if _RX_DNS1035.match(kind.lower()) is None:
                problems.append(_DNS1035_MSG)
            if problems:
                errs.append(
                    _invalid(
                        field, kind, "may have mixed case, but should otherwise match: " + ",".join(problems)
                    )
                )


def _check_list_set(path: str, values: list[Any], errs: list[Cause]) -> None:
    """Report the second occurrence of each repeated item (kube reports no further ones)."""
    if len(values) <= 1:
        return
    seen: dict[Any, int] = {}
    for i, v in enumerate(values):
        key = _canon(v)
        times = seen.get(key, 0)
        if times == 1:
            errs.append(Cause(_DUPLICATE, f"Duplicate value: {_render(v)}", f"{path}[{i}]"))
        seen[key] = times + 1


def _check_list_map(node: _Node, path: str, values: list[Any], errs: list[Cause]) -> None:
    for i, v in enumerate(values):
        if v is not None and not isinstance(v, dict):
            errs.append(_invalid(f"{path}[{i}]", v, "must be an object for an array of list-type map"))
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
                parts.append(_canon(item[key]))
            elif fallback is not _MISSING:
                parts.append(_canon(fallback))
            else:
                parts.append(("u",))
        identity = tuple(parts)
        times = seen.get(identity, 0)
        if times == 1:
            shown = {key: item[key] for key in keys if key in item}
            errs.append(Cause(_DUPLICATE, f"Duplicate value: {_go_sharp_v(shown)}", f"{path}[{i}]"))
        seen[identity] = times + 1


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------


class StructuralSchema:
    """A CRD version's ``openAPIV3Schema``, compiled once, applied to every write of that version.

    The server calls :meth:`default`, :meth:`prune`, then :meth:`validate` (a non-empty
    result is a 422). ``apiVersion``, ``kind`` and ``metadata`` at the root are left to the
    server: they are never defaulted, pruned or validated here.
    """

    __slots__ = ("_root",)

    def __init__(self, openapi_v3_schema: dict[str, Any]) -> None:
        self._root = _Node(openapi_v3_schema if isinstance(openapi_v3_schema, dict) else {})

    def default(self, obj: dict[str, Any]) -> None:
        """Apply ``default:`` values in place (only inside parent objects that exist)."""
        if self._root.has_defaults:
            _default_map(self._root, obj, root=True)

    def prune(self, obj: dict[str, Any]) -> None:
        """Drop undeclared fields, and non-nullable nulls that have no default, in place."""
        _prune_map(self._root, obj, False, root=True)

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        """The causes kube-apiserver would report for ``obj`` (``[]`` when it is valid)."""
        errs: list[Cause] = []
        root = self._root
        _validate_object(root, obj, "", errs, True)
        if root.has_extra:
            embedded: list[Cause] = []
            lists: list[Cause] = []
            _walk_extra(root, obj, "", embedded, lists, root=True)
            errs.extend(embedded)
            errs.extend(lists)
        return errs
