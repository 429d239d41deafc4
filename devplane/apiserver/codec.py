"""JSON encoding, copying and timestamps, in the one form the server stores and answers with."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from kube_api.timeutil import format_time

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON, as kube-apiserver writes it."""
    return _encoder.encode(value).encode("utf-8")


def decode_json(data: bytes | str) -> Any:
    """Strict JSON, as Go decodes it: ``NaN`` and ``Infinity`` are syntax errors, not numbers."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data

    def reject(constant: str) -> Any:
        raise json.JSONDecodeError("Expecting value", text, max(text.find(constant), 0))

    return json.loads(text, parse_constant=reject)


def copy_json(value: Any) -> Any:
    """Deep copy of a decoded JSON value: faster than ``copy.deepcopy``, and shares no container.

    Patches and schema defaults are copied with it, so a stored object never shares a list
    or a map with a request body or with a schema.
    """
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


def now_rfc3339(offset_seconds: float = 0) -> str:
    """The metav1.Time ``offset_seconds`` from now (a deletionTimestamp is now plus the grace period)."""
    return format_time(datetime.now(UTC) + timedelta(seconds=offset_seconds))


# ---- Go formatting: kube prints bad values with Go verbs; these render them the same way.

def go_json_type_name(value: Any) -> str:
    """The JSON type name Go's ``encoding/json`` uses in its unmarshal errors."""
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if value is None:
        return "null"
    return "number"
