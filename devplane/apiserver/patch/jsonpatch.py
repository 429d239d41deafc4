"""RFC 6902 JSON patch (``application/json-patch+json``), on plain JSON values, all or nothing.

kube-apiserver applies it with evanphx/json-patch (k8s.io/apiserver
``pkg/endpoints/handlers/patch.go``) and splits its errors: a malformed operations
document is a 400, an operation that does not apply a 422 with empty details.
"""

from __future__ import annotations

import re
from typing import Any, Final

from devplane.apiserver.codec import copy_json, go_json_type_name
from devplane.apiserver.errors import bad_request, patch_rejected

_JSON_PATCH_OPS: Final = frozenset({"add", "remove", "replace", "move", "copy", "test"})
_ARRAY_INDEX: Final = re.compile(r"0|[1-9][0-9]*")


def apply_json_patch(original: Any, operations: Any) -> Any:
    """Apply an RFC 6902 JSON patch, all or nothing.

    The whole operations document is checked first (400 ``BadRequest`` if it is not an array
    of operations with ``op`` and ``path``), then operations apply in order; one that does not
    apply (failed ``test``, missing path, index out of range, missing ``from``/``value``)
    is kube's 422 ``Invalid`` with an empty ``details``.
    """
    ops = _decode_operations(operations)
    doc = copy_json(original)
    for op in ops:
        doc = _apply_operation(doc, op)
    return doc


def _decode_operations(operations: Any) -> list[dict[str, Any]]:
    """Check the document's shape the way kube's decoder does before applying anything."""
    if operations is None:  # ``null`` decodes to an empty patch in Go
        return []
    if not isinstance(operations, list):
        type_name = go_json_type_name(operations)
        raise bad_request(f"json: cannot unmarshal {type_name} into Go value of type jsonpatch.Patch")
    ops: list[dict[str, Any]] = []
    for entry in operations:
        item = {} if entry is None else entry
        if not isinstance(item, dict):
            raise bad_request(
                f"json: cannot unmarshal {go_json_type_name(item)} into Go value of type jsonpatch.Operation"
            )
        kind = item.get("op")
        if not isinstance(kind, str) or kind not in _JSON_PATCH_OPS:
            raise bad_request(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")
        if not isinstance(item.get("path"), str):
            raise bad_request("operation missing path field")
        ops.append(item)
    return ops


def parse_pointer(pointer: Any) -> list[str]:
    """RFC 6901 pointer to reference tokens (``~1`` is ``/``, ``~0`` is ``~``)."""
    if not isinstance(pointer, str):
        raise patch_rejected()
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise patch_rejected()
    tokens = pointer[1:].split("/")
    for token in tokens:
        if re.search(r"~(?![01])", token):
            raise patch_rejected()
    return [t.replace("~1", "/").replace("~0", "~") for t in tokens]


def _array_index(token: str, length: int, *, for_add: bool) -> int:
    """Index into an array; ``-`` (append) and ``length`` itself only for ``add``."""
    if for_add and token == "-":
        return length
    if not _ARRAY_INDEX.fullmatch(token):
        raise patch_rejected()
    index = int(token)
    if index > length or (index == length and not for_add):
        raise patch_rejected()
    return index


def _parent(doc: Any, tokens: list[str]) -> Any:
    """The container the last token addresses into; every step must exist."""
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise patch_rejected()
            node = node[token]
        elif isinstance(node, list):
            node = node[_array_index(token, len(node), for_add=False)]
        else:
            raise patch_rejected()
    return node


def _member(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
    """The container and key (a name, or an index) of the existing member the pointer addresses."""
    container = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(container, dict):
        if last not in container:
            raise patch_rejected()
        return container, last
    if isinstance(container, list):
        return container, _array_index(last, len(container), for_add=False)
    raise patch_rejected()


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    container, key = _member(doc, tokens)
    return container[key]


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    container = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(container, dict):
        container[last] = value
    elif isinstance(container, list):
        container.insert(_array_index(last, len(container), for_add=True), value)
    else:
        raise patch_rejected()
    return doc


def _remove(doc: Any, tokens: list[str]) -> Any:
    """Remove and return the addressed value; the root cannot be removed."""
    if not tokens:
        raise patch_rejected()
    container, key = _member(doc, tokens)
    return container.pop(key)


def _replace(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    container, key = _member(doc, tokens)
    container[key] = value
    return doc


def _json_equal(a: Any, b: Any) -> bool:
    """JSON value equality: numbers by value, but ``true`` is not ``1``."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _operand(op: dict[str, Any]) -> Any:
    if "value" not in op:
        raise patch_rejected()
    return copy_json(op["value"])


def _apply_operation(doc: Any, op: dict[str, Any]) -> Any:
    kind = op["op"]
    path = parse_pointer(op["path"])
    if kind == "add":
        return _add(doc, path, _operand(op))
    if kind == "remove":
        _remove(doc, path)
        return doc
    if kind == "replace":
        return _replace(doc, path, _operand(op))
    if kind == "test":
        if not _json_equal(_get(doc, path), _operand(op)):
            raise patch_rejected()
        return doc
    if "from" not in op:
        raise patch_rejected()
    source = parse_pointer(op["from"])
    if kind == "copy":
        return _add(doc, path, copy_json(_get(doc, source)))
    # move: a value cannot be moved into one of its own children
    if path[: len(source)] == source and len(path) > len(source):
        raise patch_rejected()
    if path == source:
        _get(doc, source)
        return doc
    value = _remove(doc, source)
    return _add(doc, path, value)
