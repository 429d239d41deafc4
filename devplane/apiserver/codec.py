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


_GO_JSON_CONTEXT = {
    "Expecting value": "looking for beginning of value",
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Expecting ':' delimiter": "after object key",
    "Extra data": "after top-level value",
    "Invalid control character at": "in string literal",
}


def _innermost_container(doc: str, pos: int) -> str:
    """'{' or '[': the container open at ``pos`` (strings skipped)."""
    stack: list[str] = []
    in_string = escaped = False
    for char in doc[:pos]:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append(char)
        elif char in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else ""


def go_json_syntax_error(exc: Exception) -> str:
    """Go encoding/json's wording for a parse error (kube clients and tests match on it). A document decoded from
    bytes with ``surrogateescape`` has its invalid bytes named as Go names them."""
    if not isinstance(exc, json.JSONDecodeError):
        return str(exc)
    doc, pos, msg = exc.doc, exc.pos, exc.msg
    if pos >= len(doc) or msg.startswith("Unterminated string") or not doc[pos:].strip():
        return "unexpected end of JSON input"
    shown = _quote_byte(doc[pos].encode("utf-8", "surrogateescape")[0])  # Go names the byte, not the character
    if msg == "Expecting ',' delimiter":
        context = "after array element" if _innermost_container(doc, pos) == "[" else "after object key:value pair"
    else:
        context = _GO_JSON_CONTEXT.get(msg, msg.lower())
    return f"invalid character {shown} {context}"


def _quote_byte(byte: int) -> str:
    """encoding/json's ``quoteChar``: a byte in single quotes (``'b'``, ``'\\n'``, ``'\\u0081'``, ``'\\x01'``)."""
    if byte == ord("'"):
        return "'\\''"
    if byte == ord('"'):
        return "'\"'"
    if 0x20 <= byte < 0x7F:
        return f"'{chr(byte)}'" if byte != ord("\\") else "'\\\\'"
    escapes = {0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v"}
    if byte in escapes:
        return f"'{escapes[byte]}'"
    return f"'\\x{byte:02x}'" if byte < 0x80 else f"'\\u{byte:04x}'"
