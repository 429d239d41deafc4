"""How kube-openapi types and compares decoded JSON values.

Validation needs a value's JSON type (Go decodes integers and floats as different types),
enum membership and the identity used for ``uniqueItems`` and list-type uniqueness;
these follow kube-openapi's ``validate`` package and apimachinery's decoder.
"""

from __future__ import annotations

import math
from typing import Any, Final

from devplane.apiserver.schema.render import go_json

# JSON type names of decoded values (exact types first; subclasses go through json_type).
JSON_TYPES: Final[dict[type, str]] = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}

# The types a subclass of a decoded value's type is checked against, in order.
_SUBCLASS_TYPES: Final[tuple[tuple[type | tuple[type, ...], str], ...]] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (dict, "object"),
    ((list, tuple), "array"),
)
_MAX_JSON_INT: Final = float(1 << 53)


def is_json_integer(v: Any) -> bool:
    """``swag.IsFloat64AJSONInteger``: integral and within ±2^53."""
    return isinstance(v, float) and math.isfinite(v) and v.is_integer() and abs(v) <= _MAX_JSON_INT


def json_type(v: Any) -> str:
    """The JSON type name of a decoded value (``object``, ``integer``, ...), as the validator sees it."""
    t = JSON_TYPES.get(type(v))
    if t is not None:
        return t
    for types, name in _SUBCLASS_TYPES:  # a subclass: the first base it has, a bool before an int
        if isinstance(v, types):
            return name
    return "object"


def canon(v: Any) -> Any:
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
    return ("j", go_json(v))


def json_equal(a: Any, b: Any) -> bool:
    """Enum membership the way kube-openapi compares (numbers by value, bools only with bools)."""
    if b is None or a is None:
        return False  # a nil enum entry is skipped, a nil value never matches
    if isinstance(b, bool) or isinstance(a, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(b, (int, float)):
        return isinstance(a, (int, float)) and a == b
    if isinstance(b, str):
        return isinstance(a, str) and a == b
    return go_json(a) == go_json(b)
