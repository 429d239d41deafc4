"""How kube-apiserver words a custom resource's validation errors.

kube builds each cause from a ``field.Error`` and prints the bad value with Go's verbs
(``%q``, ``%v``, ``%#v``) or ``json.Marshal``; a 422 from the dev server must read the same,
so this module renders decoded JSON values the way Go prints them and builds the causes.
See k8s.io/apimachinery ``pkg/util/validation/field/errors.go`` (``ErrorBody``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

from devplane.apiserver.errors import Cause
from kube_api.validation import go_quote

INVALID: Final = "FieldValueInvalid"
REQUIRED: Final = "FieldValueRequired"
NOT_SUPPORTED: Final = "FieldValueNotSupported"
TOO_LONG: Final = "FieldValueTooLong"
DUPLICATE: Final = "FieldValueDuplicate"


def _float_digits(f: float) -> tuple[str, int]:
    """Shortest round-trip digits of ``abs(f)`` (non-zero, finite) and the decimal-point position."""
    sign, digits, exponent = Decimal(repr(abs(f))).normalize().as_tuple()
    del sign
    text = "".join(map(str, digits))
    assert isinstance(exponent, int)
    return text, len(text) + exponent


def go_float(f: float) -> str:
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
        return "0" if f == 0 else go_float(f)
    digits, dp = _float_digits(f)
    sign = "-" if f < 0 else ""
    if abs(f) < 1e-6 or abs(f) >= 1e21:
        exp = dp - 1
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}".replace("e-0", "e-")
    return sign + _fixed(digits, dp)


def _go_scalar(v: Any, *, null: str, number: Callable[[float], str], string: Callable[[str], str]) -> str:
    """A non-container value: booleans and integers print alike in every Go form."""
    if v is None:
        return null
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return number(v)
    return string(v if isinstance(v, str) else str(v))


def _json_string(s: str) -> str:
    """``json.Marshal`` of a string: HTML-safe escapes for ``<``, ``>`` and ``&``."""
    text = json.dumps(s, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def go_json(v: Any) -> str:
    """``json.Marshal`` of a decoded JSON value (sorted keys, Go's number forms)."""
    if isinstance(v, dict):
        return "{" + ",".join(f"{go_json(str(k))}:{go_json(v[k])}" for k in sorted(v)) + "}"
    if isinstance(v, list):
        return "[" + ",".join(go_json(x) for x in v) + "]"
    return _go_scalar(v, null="null", number=_go_json_float, string=_json_string)


def go_sharp_v(v: Any) -> str:
    """Go's ``%#v`` of a decoded JSON value (``map[string]interface {}{"key":"a"}``)."""
    if isinstance(v, dict):
        inner = ", ".join(f"{go_quote(str(k))}:{go_sharp_v(v[k])}" for k in sorted(v))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(v, list):
        return "[]interface {}{" + ", ".join(go_sharp_v(x) for x in v) + "}"
    return _go_scalar(v, null="interface {}(nil)", number=go_float, string=go_quote)


def render(v: Any) -> str:
    """How ``field.Error`` prints a bad value: ``"str"``, ``0``, ``true``, ``%#v``.

    A nil value becomes the *string* "null" before printing, so it shows quoted.
    """
    return '"null"' if v is None else go_sharp_v(v)


def field_path(path: str) -> str:
    """The cause's field; kube builds it from a nil ``*field.Path`` when the error has no name."""
    return path or "<nil>"


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(INVALID, f"Invalid value: {render(value)}: {detail}", field_path(path))


def type_cause(path: str, want: str, got: str) -> Cause:
    quoted = go_quote(got)
    return Cause(
        INVALID, f"Invalid value: {quoted}: {path} in body must be of type {want}: {quoted}", field_path(path)
    )


def composite(detail: str) -> Cause:
    """anyOf/oneOf/allOf/not failures are not ``*Validation`` errors: kube reports them at ``<nil>``."""
    return Cause(INVALID, f'Invalid value: "": {detail}', "<nil>")
