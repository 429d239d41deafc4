"""Decode ``application/vnd.kubernetes.protobuf`` request bodies into the JSON kube would have got.

kubectl's typed commands (``create namespace``, ``create deployment``, ``run`` …) send built-in
kinds as protobuf: the magic ``k8s\\x00`` then a ``runtime.Unknown`` whose ``raw`` holds the
object's message. The wire schema comes from ``protobuf_schema.json``, generated from Kubernetes'
own ``generated.proto`` files and Go struct tags by ``hack/generate_proto_table.py``; the JSON
rules (names, ``omitempty``, pointers, inlined structs) follow Go's ``encoding/json`` on those
structs, so the result equals what the JSON path stores. Custom resources are never protobuf.

A field number the table does not know (a newer Kubernetes field) is a 400 naming the message and
the number: storing the object without it would silently drop what the client asked for.
"""

from __future__ import annotations

import base64
import json
import struct
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any, Final

from . import errors
from .codec import decode_json
from .resources import ResourceType

MEDIA_TYPE: Final = "application/vnd.kubernetes.protobuf"
MAGIC: Final = b"k8s\x00"
MAX_DEPTH: Final = 64  # deeper nesting than any built-in kind has: a hostile or broken body

_META: Final = "k8s.io.apimachinery.pkg.apis.meta.v1"
_EXT: Final = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"
_UNKNOWN: Final = "k8s.io.apimachinery.pkg.runtime.Unknown"
_TYPE_META: Final = "k8s.io.apimachinery.pkg.runtime.TypeMeta"
_DELETE_OPTIONS: Final = f"{_META}.DeleteOptions"
_RAW_JSON: Final = frozenset({f"{_META}.FieldsV1", "k8s.io.apimachinery.pkg.runtime.RawExtension", f"{_EXT}.JSON"})
_VARINT_TYPES: Final = {"int32", "int64", "uint32", "uint64", "sint32", "sint64", "bool"}
_WIRE_TYPE: Final = {"double": 1, "fixed64": 1, "sfixed64": 1, "float": 5, "fixed32": 5, "sfixed32": 5,
                     "string": 2, "bytes": 2, **dict.fromkeys(_VARINT_TYPES, 0)}


class DecodeError(Exception):
    """The body is not a well-formed message of the type the table gives."""


@cache
def schema() -> dict[str, Any]:
    """The generated table, read once (about 150 KB)."""
    text = resources.files(__package__).joinpath("protobuf_schema.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    for message in data["messages"].values():
        message["by_number"] = {f["n"]: f for f in message["fields"]}
    return data


def kubernetes_version() -> str:
    return str(schema()["kubernetesVersion"])


def decode_body(body: bytes, rtype: ResourceType) -> dict[str, Any]:
    """A request body for ``rtype`` as its JSON object; 415 for custom resources, 400 if undecodable."""
    if not rtype.builtin:
        raise errors.unsupported_media_type("application/json, application/yaml")
    api_version, kind, raw = _unwrap(body, rtype.kind)
    message = schema()["kinds"].get(f"{api_version}/{kind}")
    if message is None:
        raise errors.bad_request(f'no kind "{kind}" is registered for version "{api_version}" in the '
                                 f"protobuf table (Kubernetes {kubernetes_version()})")
    return _typed(message, raw, api_version, kind, rtype.kind)


def decode_delete_options(body: bytes) -> dict[str, Any]:
    """DeleteOptions sent as protobuf: any group's version of it is the meta/v1 message."""
    api_version, kind, raw = _unwrap(body, "DeleteOptions")
    if kind != "DeleteOptions":
        raise errors.bad_request(f'DeleteOptions expected, got kind "{kind}" ({api_version})')
    return _typed(_DELETE_OPTIONS, raw, api_version, kind, "DeleteOptions")


def _unwrap(body: bytes, expected_kind: str) -> tuple[str, str, bytes]:
    """The ``runtime.Unknown`` envelope: type meta and the object's own bytes."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("provided data does not appear to be a protobuf message, expected prefix "
                                 "[107 56 115 0]")
    try:
        fields = _fields(_UNKNOWN, body[len(MAGIC):])
        type_meta = _fields(_TYPE_META, _as_bytes(_last(fields.get(1), b""), "typeMeta"))
        api_version = _string(_last(type_meta.get(1), b""))
        kind = _string(_last(type_meta.get(2), b""))
        raw = _last(fields.get(2), b"")
        encoding = _string(_last(fields.get(3), b""))
    except DecodeError as exc:
        raise _bad(expected_kind, str(exc)) from exc
    if encoding:
        raise _bad(expected_kind, f"unsupported contentEncoding {encoding!r}")
    if not isinstance(raw, bytes):
        raise _bad(expected_kind, "runtime.Unknown field 2 (raw) has the wrong wire type")
    return api_version, kind, raw


def _typed(message: str, raw: bytes, api_version: str, kind: str, expected_kind: str) -> dict[str, Any]:
    try:
        obj = _message(message, raw, 0)
    except DecodeError as exc:
        raise _bad(expected_kind, str(exc)) from exc
    assert isinstance(obj, dict)
    return {"kind": kind, "apiVersion": api_version, **obj}


def _bad(kind: str, detail: str) -> errors.StatusError:
    return errors.bad_request(f"the object provided is unrecognized (must be of type {kind}): "
                              f"protobuf decode error: {detail}")


# ---- the wire format

def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise DecodeError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise DecodeError("varint longer than 10 bytes")


def _fields(message: str, data: bytes) -> dict[int, list[int | bytes]]:
    """Field number → the raw values in wire order; unknown numbers are refused."""
    known = schema()["messages"][message]["by_number"]
    out: dict[int, list[int | bytes]] = {}
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number not in known:
            raise DecodeError(f"unknown field number {number} (wire type {wire}) in message {message}: "
                              f"newer than the table (Kubernetes {kubernetes_version()})")
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > end:
                raise DecodeError(f"truncated field {number} of message {message}: {length} bytes announced, "
                                  f"{end - pos} left")
            value, pos = data[pos:pos + length], pos + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > end:
                raise DecodeError(f"truncated field {number} of message {message}")
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        else:
            raise DecodeError(f"unsupported wire type {wire} for field {number} of message {message}")
        out.setdefault(number, []).append(value)
    return out


def _last(values: list[int | bytes] | None, default: int | bytes) -> int | bytes:
    return values[-1] if values else default


def _string(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise DecodeError("string field has a non length-delimited wire type")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"invalid UTF-8 in string field: {exc}") from exc


def _scalar(type_name: str, value: int | bytes, where: str) -> Any:
    """One scalar as Go's JSON writes it: bytes are base64, int64 a number, floats without ``.0``."""
    if type_name == "string":
        return _string(value)
    if type_name == "bytes":
        if not isinstance(value, bytes):
            raise DecodeError(f"{where}: bytes field has a non length-delimited wire type")
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, bytes):
        raise DecodeError(f"{where}: {type_name} field is length-delimited")
    if type_name == "bool":
        return value != 0
    if type_name in ("int32", "int64", "sfixed64"):  # two's complement in 64 bits
        value = value - (1 << 64) if value >= 1 << 63 else value
        return ((value + (1 << 31)) % (1 << 32)) - (1 << 31) if type_name == "int32" else value
    if type_name == "sfixed32":
        return value - (1 << 32) if value >= 1 << 31 else value
    if type_name in ("sint32", "sint64"):
        return (value >> 1) ^ -(value & 1)
    if type_name in ("uint32", "uint64", "fixed32", "fixed64"):
        return value
    number = struct.unpack("<d" if type_name == "double" else "<f", value.to_bytes(
        8 if type_name == "double" else 4, "little"))[0]
    return int(number) if number.is_integer() and abs(number) < 1e21 else number


def _packed(type_name: str, value: int | bytes, where: str) -> list[int | bytes]:
    """Repeated numbers may come packed in one length-delimited field."""
    if not isinstance(value, bytes) or _WIRE_TYPE.get(type_name, 2) == 2:
        return [value]
    items: list[int | bytes] = []
    pos = 0
    while pos < len(value):
        if _WIRE_TYPE[type_name] == 0:
            item, pos = _varint(value, pos)
        else:
            size = 8 if _WIRE_TYPE[type_name] == 1 else 4
            if pos + size > len(value):
                raise DecodeError(f"{where}: truncated packed field")
            item, pos = int.from_bytes(value[pos:pos + size], "little"), pos + size
        items.append(item)
    return items


# ---- messages → JSON

def _message(name: str, data: bytes, depth: int) -> Any:
    """A message's JSON value: an object for structs, the custom form for kube's special types."""
    if depth > MAX_DEPTH:
        raise DecodeError(f"message {name} nested more than {MAX_DEPTH} deep")
    special = _SPECIAL.get(name)
    if special is not None:
        return special(_fields(name, data), depth)
    if name in _RAW_JSON:
        raw = _last(_fields(name, data).get(1), b"")
        if not raw:
            return None
        try:
            return decode_json(raw) if isinstance(raw, bytes) else None
        except (ValueError, UnicodeDecodeError) as exc:
            raise DecodeError(f"message {name}: raw is not JSON: {exc}") from exc
    spec = schema()["messages"][name]
    values = _fields(name, data)
    if spec.get("list"):
        return [_value(spec["fields"][0], v, name, depth) for v in values.get(1, [])] or None
    out: dict[str, Any] = {}
    for field in spec["fields"]:
        raws = values.get(field["n"])
        where = f"{name} field {field['n']} ({field['name'] or field['type']})"
        if field.get("inline"):  # json:",inline": the embedded struct's fields sit in this object
            out.update(_message(field["type"], _as_bytes(_last(raws, b""), where), depth + 1))
            continue
        if raws is None and field.get("ptr"):
            continue  # a nil pointer: omitted, or null without omitempty (no such kube field)
        if "key" in field or field.get("rep"):
            value: Any = None  # Go's nil slice or map
            if raws is not None and "key" in field:
                value = _map(field, raws, name, depth)
            elif raws is not None:
                items = [item for raw in raws for item in _packed(field["type"], raw, where)]
                value = [_value(field, item, name, depth) for item in items]
            if not (field.get("omitempty") and not value):
                out[field["name"]] = value
            continue
        value = _zero(field["type"], depth) if raws is None else _value(field, raws[-1], name, depth)
        if not field.get("ptr"):
            if field.get("omitempty") and field["type"] in _WIRE_TYPE and value in (None, "", 0):
                continue  # omitempty drops zero scalars (and empty bytes), never structs
            if field.get("omitzero") and value == _zero(field["type"], depth):
                continue
        out[field["name"]] = value
    return out


def _as_bytes(value: int | bytes, where: str) -> bytes:
    if not isinstance(value, bytes):
        raise DecodeError(f"{where}: message field has a non length-delimited wire type")
    return value


def _value(field: dict[str, Any], raw: int | bytes, parent: str, depth: int) -> Any:
    where = f"{parent} field {field['n']} ({field['name']})"
    type_name = field["type"]
    if type_name in _WIRE_TYPE:
        return _scalar(type_name, raw, where)
    return _message(type_name, _as_bytes(raw, where), depth + 1)


def _map(field: dict[str, Any], entries: list[int | bytes], parent: str, depth: int) -> dict[str, Any]:
    """``map<K, V>``: repeated entries of key = 1, value = 2; a missing value is V's zero."""
    where = f"{parent} field {field['n']} ({field['name']})"
    out: dict[str, Any] = {}
    for entry in entries:
        kv = _entry_fields(_as_bytes(entry, where), where)
        key = _scalar(field["key"], _last(kv.get(1), b"" if field["key"] == "string" else 0), where)
        raw = kv.get(2)
        if raw is None:
            value = _zero(field["type"], depth) if field["type"] not in _WIRE_TYPE else _scalar_zero(field["type"])
        else:
            value = _value(field, raw[-1], parent, depth)
        out[str(key).lower() if isinstance(key, bool) else str(key)] = value
    return out


def _entry_fields(data: bytes, where: str) -> dict[int, list[int | bytes]]:
    out: dict[int, list[int | bytes]] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number not in (1, 2):
            raise DecodeError(f"{where}: unknown field number {number} in a map entry")
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise DecodeError(f"{where}: truncated map entry")
            value, pos = data[pos:pos + length], pos + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > len(data):
                raise DecodeError(f"{where}: truncated map entry")
            value, pos = int.from_bytes(data[pos:pos + size], "little"), pos + size
        else:
            raise DecodeError(f"{where}: unsupported wire type {wire} in a map entry")
        out.setdefault(number, []).append(value)
    return out


def _scalar_zero(type_name: str) -> Any:
    return "" if type_name in ("string", "bytes") else False if type_name == "bool" else 0


def _zero(type_name: str, depth: int) -> Any:
    """What Go's JSON writes for a field the body left out: the type's zero value."""
    if type_name in _WIRE_TYPE:
        return None if type_name == "bytes" else _scalar_zero(type_name)
    return _message(type_name, b"", depth + 1)


# ---- kube's types with their own JSON form

def _time(fields: dict[int, list[int | bytes]], micro: bool) -> str | None:
    if not fields:
        return None  # the zero time.Time marshals to an empty message and to JSON null
    seconds = _scalar("int64", _last(fields.get(1), 0), "Time.seconds")
    nanos = _scalar("int32", _last(fields.get(2), 0), "Time.nanos")
    moment = datetime.fromtimestamp(seconds, UTC)
    if micro:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{nanos // 1000:06d}Z"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _go_duration(ns: int) -> str:
    """time.Duration.String(): ``1h2m3.5s``, ``1.5ms``, ``0s``."""
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                whole, frac = divmod(ns, size)
                digits = f"{frac:0{len(str(size)) - 1}d}".rstrip("0") if size > 1 else ""
                return f"{sign}{whole}{'.' + digits if digits else ''}{unit}"
    seconds, frac = divmod(ns, 1_000_000_000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    digits = f"{frac:09d}".rstrip("0")
    text = f"{seconds}{'.' + digits if digits else ''}s"
    if hours or minutes:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _schema_props(fields: dict[int, list[int | bytes]], number: int, depth: int) -> Any:
    raw = fields.get(number)
    return None if raw is None else _message(f"{_EXT}.JSONSchemaProps", _as_bytes(raw[-1], "schema"), depth + 1)


def _or_array(fields: dict[int, list[int | bytes]], depth: int) -> Any:
    many = [_message(f"{_EXT}.JSONSchemaProps", _as_bytes(v, "jSONSchemas"), depth + 1) for v in fields.get(2, [])]
    return many or _schema_props(fields, 1, depth)


def _or_bool(fields: dict[int, list[int | bytes]], depth: int) -> Any:
    schema_value = _schema_props(fields, 2, depth)
    if schema_value is not None:
        return schema_value
    return bool(_scalar("bool", _last(fields.get(1), 0), "allows"))


def _or_string_array(fields: dict[int, list[int | bytes]], depth: int) -> Any:
    strings = [_string(v) for v in fields.get(2, [])]
    return strings or _schema_props(fields, 1, depth)


def _int_or_string(fields: dict[int, list[int | bytes]], _depth: int) -> Any:
    if _scalar("int64", _last(fields.get(1), 0), "IntOrString.type") == 1:
        return _string(_last(fields.get(3), b""))
    return _scalar("int32", _last(fields.get(2), 0), "IntOrString.intVal")


_SPECIAL: Final = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity": lambda f, _d: _string(_last(f.get(1), b"")) or "0",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
    f"{_META}.Time": lambda f, _d: _time(f, micro=False),
    f"{_META}.MicroTime": lambda f, _d: _time(f, micro=True),
    f"{_META}.Duration": lambda f, _d: _go_duration(_scalar("int64", _last(f.get(1), 0), "Duration")),
    f"{_EXT}.JSONSchemaPropsOrArray": _or_array,
    f"{_EXT}.JSONSchemaPropsOrBool": _or_bool,
    f"{_EXT}.JSONSchemaPropsOrStringArray": _or_string_array,
}
