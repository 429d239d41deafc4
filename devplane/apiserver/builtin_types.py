"""Go's type check of a built-in kind's body: a value of the wrong JSON type is a decode error (400), not a 422.

kube-apiserver decodes a built-in object into its Go struct, so ``"data": {"k": 1}`` in a ConfigMap or
``"replicas": "3"`` in a Deployment fails in the decoder, and nothing is stored: ``400 BadRequest``,
``ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct
field ConfigMap.data of type string``. Go names the innermost struct, then the JSON path from the root
(``ObjectMeta.metadata.labels``). That is the wording of kube >= 1.21, whose version this server reports;
1.20's json-iterator said ``v1.ConfigMap.Data: ReadString: ...``. Custom resources are checked by their
CRD's schema instead (:mod:`.validation`, a 422).

The Go types are read from kube's own OpenAPI schemas (:mod:`.openapi_builtin`). Only what Go's decoder
refuses is refused: ``null`` anywhere (it leaves the zero value), fields the struct does not have (dropped),
and values whose schema says nothing (``RawExtension``, ``JSON``) pass; formats (base64, times) are not
parsed here. A number with a fraction or an exponent (``3.0``, ``1e3``) in an integer field is refused, as
Go's ParseInt does. Bodies of creates and updates are checked, and the results of patches (:func:`check_patched`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from kube_api.validation import go_quote

from . import errors
from .codec import encode_json, go_json_type_name
from .openapi_builtin import builtin_schemas
from .patch import JSON_PATCH, STRATEGIC_MERGE_PATCH, parse_pointer
from .patch.govalues import go_format, go_type
from .resources import ResourceType

REF_PREFIX = "#/components/schemas/"
INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
GO_SCALARS = {"string": "string", "boolean": "bool", "number": "float64"}
ANY_JSON = frozenset({"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"})
"""Definitions whose Go type takes any JSON value (its own UnmarshalJSON), whatever the schema says."""


class _Mismatch(Exception):
    def __init__(self, value: Any, where: _Where, go_type: str, *, literal: bool = False) -> None:
        super().__init__()
        self.value, self.where, self.go_type, self.literal = value, where, go_type, literal


@dataclass(frozen=True)
class _Where:
    """Where a value is, as Go names it: the innermost struct being decoded and the JSON path from the root."""

    struct: str
    path: tuple[str, ...] = ()

    def field(self, key: str) -> _Where:
        return _Where(self.struct, (*self.path, key))

    def inside(self, definition: str) -> _Where:
        return _Where(definition.rsplit(".", 1)[-1], self.path)


@functools.cache
def _schemas() -> dict[str, Any]:
    return builtin_schemas()


def _go_name(definition: str) -> str:
    """A definition as Go prints its type: package and name (``io.k8s.api.apps.v1.Deployment``: ``v1.Deployment``)."""
    return ".".join(definition.split(".")[-2:])

@functools.cache
def _root(group: str, version: str, kind: str) -> str | None:
    """The definition name of a built-in kind."""
    for name, schema in _schemas().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            if (gvk.get("group") or "", gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return name
    return None


def _resolve(schema: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The schema behind a ``$ref`` (directly or as ``allOf``'s only member) and its definition name; (None,
    name) when the definition is not among kube's published ones (then anything goes)."""
    ref = schema.get("$ref")
    if ref is None and len(schema.get("allOf") or []) == 1:
        ref = schema["allOf"][0].get("$ref")
    if not isinstance(ref, str):
        return schema, None
    name = ref.removeprefix(REF_PREFIX)
    return (None if name in ANY_JSON else _schemas().get(name)), name


def _go_type(schema: dict[str, Any] | None, name: str | None = None) -> str:
    """The Go type an error names: ``int32``, ``v1.DeploymentSpec``, ``[]v1.Container``, ``map[string]string``."""
    if schema is None:
        return "interface {}"
    target, ref_name = _resolve(schema)
    if ref_name is not None:
        if target is None or target.get("properties") is not None:  # a struct: its package and name
            return _go_name(ref_name)
        return _go_type(target, ref_name)
    kind = schema.get("type")
    if kind == "integer":
        return str(schema.get("format") or "int64")
    if kind == "string" and schema.get("format") == "byte":
        return "[]uint8"
    if kind == "array":
        return "[]" + _go_type(schema.get("items"))
    if kind == "object":
        if schema.get("properties") is not None and name is not None:
            return _go_name(name)
        extra = schema.get("additionalProperties")
        return "map[string]" + _go_type(extra if isinstance(extra, dict) else None)
    return GO_SCALARS.get(str(kind), "interface {}")


def _check(value: Any, schema: dict[str, Any] | None, where: _Where, name: str | None = None) -> None:
    if value is None or schema is None:
        return
    target, ref_name = _resolve(schema)
    if target is None:
        return
    if ref_name is not None:
        _check(value, target, where, ref_name)
        return
    if "oneOf" in schema:  # IntOrString (a string or an int32), Quantity (a string or a number)
        options = {option.get("type") for option in schema["oneOf"]}
        if not any(_fits(value, str(option)) and not (option == "integer" and isinstance(value, float))
                   for option in options):
            raise _Mismatch(value, where, _go_name(name) if name else "interface {}")
        return
    kind = schema.get("type")
    if kind is None:
        return
    if not _fits(value, str(kind)):
        raise _Mismatch(value, where, _go_type(schema, name))
    if kind == "integer":
        low, high = INT_RANGES.get(str(schema.get("format") or "int64"), INT_RANGES["int64"])
        if isinstance(value, float) or not low <= value <= high:
            raise _Mismatch(value, where, _go_type(schema, name), literal=True)
    elif kind == "array":
        for item in value:
            _check(item, schema.get("items"), where)
    elif kind == "object":
        properties = schema.get("properties")
        if properties is not None:
            inner = where.inside(name) if name is not None else where
            for key, item in value.items():
                if key in properties:
                    _check(item, properties[key], inner.field(key))
        elif isinstance(schema.get("additionalProperties"), dict):
            for item in value.values():
                _check(item, schema["additionalProperties"], where)


def _fits(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("integer", "number"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    return True


def _first_mismatch(rtype: ResourceType, obj: dict[str, Any]) -> _Mismatch | None:
    root = _root(rtype.group, rtype.version, rtype.kind)
    if root is None:
        return None
    try:
        _check(obj, _schemas()[root], _Where(rtype.kind), root)
    except _Mismatch as exc:
        return exc
    return None


def _decode_error(mismatch: _Mismatch) -> str:
    found = go_json_type_name(mismatch.value) + (f" {mismatch.value}" if mismatch.literal else "")
    field = ".".join((mismatch.where.struct, *mismatch.where.path))
    return f"json: cannot unmarshal {found} into Go struct field {field} of type {mismatch.go_type}"


def check_types(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Refuse, as kube's decoder does, a built-in object with a value of the wrong JSON type (see the module)."""
    mismatch = _first_mismatch(rtype, obj)
    if mismatch is not None:
        raise errors.bad_request(f'{rtype.kind} in version "{rtype.version}" cannot be handled as a {rtype.kind}: '
                                 f"{_decode_error(mismatch)}")


def check_patched(rtype: ResourceType, patched: dict[str, Any], patch: Any, media_type: str) -> None:
    """Refuse, as kube does, a patch of a built-in object whose result has a value of the wrong JSON type.

    kube decodes the patched object into its Go struct; a failure is ``422 Invalid`` on the field ``patch``,
    with no kind or name (``"" is invalid: patch: Invalid value: ...``; refplane kube 1.20, observed), and
    nothing is stored. A JSON merge or JSON patch shows the patched object as JSON and the decoder's error;
    a strategic merge patch shows the patch (Go's ``%v``) and the unstructured converter's error
    (:func:`_converter_error`). ``media_type``: the patch's content type.
    Approximations: the first wrong value is found in the object's key order, not Go's field order, and the
    decoder's message is kube >= 1.21's, as for creates.
    """
    mismatch = _first_mismatch(rtype, patched)
    if mismatch is None:
        return
    if media_type == STRATEGIC_MERGE_PATCH:
        shown, error = go_format(patch), _converter_error(mismatch)
    else:
        shown, error = _as_reencoded(patched, patch, json_patch=media_type == JSON_PATCH), _decode_error(mismatch)
    raise errors.invalid("", "", "", [errors.Cause("FieldValueInvalid", f"Invalid value: {go_quote(shown)}: {error}",
                                                   "patch")])


def check_applied(rtype: ResourceType, applied: dict[str, Any], namespace: str, name: str) -> None:
    """Refuse a server-side apply of a built-in object with a value of the wrong JSON type, before anything is
    stored. kube (1.20 and still in 2026, kubernetes#139253) answers such a patch ``500`` without a reason, from
    structured-merge-diff; as for a malformed merge patch, this server answers ``400 BadRequest`` with a message
    of that shape (the type named as JSON names it, where kube prints Go's internal value type)."""
    mismatch = _first_mismatch(rtype, applied)
    if mismatch is None:
        return
    want = mismatch.go_type
    if want in ("intstr.IntOrString", "resource.Quantity"):
        expected = "string or numeric"
    elif want.startswith("map[") or "." in want:
        expected = "map"
    elif want.startswith("[]") and want != "[]uint8":
        expected = "list"
    elif want in ("int32", "int64", "float64"):
        expected = "numeric (int or float)"
    else:
        expected = {"bool": "boolean"}.get(want, "string")
    path = "".join(f".{key}" for key in mismatch.where.path)
    who = f"{namespace}/{name}" if namespace else name
    raise errors.bad_request(f"failed to create typed patch object ({who}; {rtype.api_version}, Kind={rtype.kind}): "
                             f"{path}: expected {expected}, got {go_json_type_name(mismatch.value)}")


QUANTITY_PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"


def _go_kind(value: Any) -> str:
    """The ``reflect.Kind`` of a value as kube's patch handler decodes it (integral numbers as int64)."""
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "slice"
    return go_type(value)


def _converter_error(mismatch: _Mismatch) -> str:
    """apimachinery's ``DefaultUnstructuredConverter.FromUnstructured`` refusing a value (observed on kube 1.20):
    scalars it can convert but JSON would not (an int to a string, a float to an int) are ``cannot convert``,
    others ``unrecognized type``; a non-object for a map or struct, a non-array for a slice, ``cannot restore``;
    IntOrString and Quantity decode themselves."""
    value, target = mismatch.value, mismatch.go_type
    source = _go_kind(value)
    if target == "intstr.IntOrString":
        found = go_json_type_name(value) + (f" {value}" if isinstance(value, float) else "")
        return f"json: cannot unmarshal {found} into Go value of type int32"
    if target == "resource.Quantity":
        return f"quantities must match the regular expression '{QUANTITY_PATTERN}'"
    if target.startswith("map["):
        return f"cannot restore map from {source}"
    if target.startswith("[]"):
        return f"cannot restore slice from {source}"
    if "." in target:
        return f"cannot restore struct from: {source}"
    numeric = ("int32", "int64", "float64")
    convertible = (source in ("int64", "float64") and target in (*numeric, "string") and not (
        source == "float64" and target == "string")) or source == target
    return f"cannot convert {source} to {target}" if convertible else f"unrecognized type: {target}"


def _as_reencoded(patched: Any, patch: Any, *, json_patch: bool) -> str:
    """The patched object as evanphx/json-patch hands it to the decoder: Go's ``json.Marshal`` (HTML characters
    escaped) with the keys sorted in each object the patch reached (a merge patch's objects, or the containers on a
    JSON patch's operation paths), the others as they were stored."""
    def sort_merge(doc: Any, part: Any) -> Any:
        if isinstance(doc, dict) and isinstance(part, dict):
            return {key: sort_merge(doc[key], part.get(key)) for key in sorted(doc)}
        return doc

    def sort_path(doc: Any, tokens: list[str]) -> Any:
        if isinstance(doc, dict):
            head = tokens[0] if tokens else None
            return {key: sort_path(doc[key], tokens[1:]) if key == head else doc[key] for key in sorted(doc)}
        if isinstance(doc, list) and tokens and tokens[0].isdigit() and int(tokens[0]) < len(doc):
            index = int(tokens[0])
            return [sort_path(item, tokens[1:]) if i == index else item for i, item in enumerate(doc)]
        return doc

    if json_patch:  # the patch applied, so each operation's pointers parse
        ordered = patched
        for pointer in (op.get(key) for op in patch for key in ("path", "from")):
            if isinstance(pointer, str):
                ordered = sort_path(ordered, parse_pointer(pointer)[:-1])
    else:
        ordered = sort_merge(patched, patch)
    text = encode_json(ordered).decode("utf-8")
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                          ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text
