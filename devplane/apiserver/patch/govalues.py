"""Decoded JSON values as Go's ``interface{}`` sees them, for the strategic merge patch.

``strategicpatch`` compares list elements with Go's ``==`` on interface values (equal only
with the same dynamic type: ``1`` is not ``1.0``, as kube decodes integers as int64) and
prints values with ``%v`` in its errors; this module gives both, and the errors built on them.
"""

from __future__ import annotations

from typing import Any, Final

from devplane.apiserver.errors import StatusError, bad_request

# Python type -> Go dynamic type; a bool before an int, as a bool is an int in Python.
_GO_TYPES: Final = (
    (dict, "map[string]interface {}"),
    (list, "[]interface {}"),
    (str, "string"),
    (bool, "bool"),
    (int, "int64"),
    (float, "float64"),
)


def go_type(value: Any) -> str:
    """The Go dynamic type a decoded JSON value would have (ints preserved, as kube decodes)."""
    for python_type, name in _GO_TYPES:
        if isinstance(value, python_type):
            return name
    return "<nil>"


def go_eq(a: Any, b: Any) -> bool:
    """Go's ``==`` on interface values: equal only with the same dynamic type."""
    return go_type(a) == go_type(b) and a == b


def go_format(value: Any) -> str:
    """Go's ``%v`` of a decoded JSON value, for error messages that match kube's."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def no_merge_key(item: dict[str, Any], merge_key: str) -> StatusError:
    return bad_request(f"map: {go_format(item)} does not contain declared merge key: {merge_key}")


def bad_arg_type(expected: str, actual: Any) -> StatusError:
    return bad_request(f"expected a {expected}, but received a {go_type(actual)}")
