"""The three PATCH flavours kube-apiserver accepts, applied to plain JSON values.

* ``application/merge-patch+json``: RFC 7386 (:func:`apply_merge_patch`).
* ``application/json-patch+json``: RFC 6902 (:func:`apply_json_patch`), with kube's error
  split: a malformed operations document is 400, an operation that does not apply is 422.
* ``application/strategic-merge-patch+json``: k8s.io/apimachinery ``strategicpatch``
  (:func:`apply_strategic_merge_patch`), driven by the ``patchStrategy``/``patchMergeKey``
  tags of the Go types, kept here as a data table (:data:`_SCHEMAS`).

Every function works on deep copies and returns a new value: the caller keeps the stored
object untouched, so a patch that fails half-way stores nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from devplane.apiserver.codec import go_json_type_name
from devplane.apiserver.errors import StatusError, bad_request, unsupported_media_type

__all__ = [
    "STRATEGIC_MERGE_KINDS",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "supports_strategic_merge_patch",
]

# What kube lists in its 415 answer to a strategic merge patch on a custom resource.
_NON_STRATEGIC_MEDIA_TYPES: Final = (
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)


def _clone(value: Any) -> Any:
    """Deep copy of a JSON value (faster than ``copy.deepcopy`` and never shares containers)."""
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


def _rejected() -> StatusError:
    """kube's answer when a patch is well formed but does not apply (observed, details ``{}``)."""
    return StatusError(422, "Invalid", "the server rejected our request due to an error in our request", {})


# --------------------------------------------------------------------------------------
# RFC 7386 merge patch
# --------------------------------------------------------------------------------------


def apply_merge_patch(original: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch.

    ``null`` deletes a key, objects merge recursively, anything else (lists included)
    replaces; a patch that is not an object replaces the whole document.
    """
    if not isinstance(patch, dict):
        return _clone(patch)
    target: dict[str, Any] = _clone(original) if isinstance(original, dict) else {}
    return _merge_into(target, patch)


def _merge_into(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """RFC 7386 ``MergePatch`` on a target this module owns (already a copy)."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            target[key] = _merge_into(current if isinstance(current, dict) else {}, value)
        else:
            target[key] = _clone(value)
    return target


# --------------------------------------------------------------------------------------
# RFC 6902 JSON patch
# --------------------------------------------------------------------------------------

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
    doc = _clone(original)
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


def _parse_pointer(pointer: Any) -> list[str]:
    """RFC 6901 pointer to reference tokens (``~1`` is ``/``, ``~0`` is ``~``)."""
    if not isinstance(pointer, str):
        raise _rejected()
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise _rejected()
    tokens = pointer[1:].split("/")
    for token in tokens:
        if re.search(r"~(?![01])", token):
            raise _rejected()
    return [t.replace("~1", "/").replace("~0", "~") for t in tokens]


def _array_index(token: str, length: int, *, for_add: bool) -> int:
    """Index into an array; ``-`` (append) and ``length`` itself only for ``add``."""
    if for_add and token == "-":
        return length
    if not _ARRAY_INDEX.fullmatch(token):
        raise _rejected()
    index = int(token)
    if index > length or (index == length and not for_add):
        raise _rejected()
    return index


def _parent(doc: Any, tokens: list[str]) -> Any:
    """The container the last token addresses into; every step must exist."""
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise _rejected()
            node = node[token]
        elif isinstance(node, list):
            node = node[_array_index(token, len(node), for_add=False)]
        else:
            raise _rejected()
    return node


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    container = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(container, dict):
        if last not in container:
            raise _rejected()
        return container[last]
    if isinstance(container, list):
        return container[_array_index(last, len(container), for_add=False)]
    raise _rejected()


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
        raise _rejected()
    return doc


def _remove(doc: Any, tokens: list[str]) -> Any:
    """Remove and return the addressed value; the root cannot be removed."""
    if not tokens:
        raise _rejected()
    container = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(container, dict):
        if last not in container:
            raise _rejected()
        return container.pop(last)
    if isinstance(container, list):
        return container.pop(_array_index(last, len(container), for_add=False))
    raise _rejected()


def _replace(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    container = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(container, dict):
        if last not in container:
            raise _rejected()
        container[last] = value
    elif isinstance(container, list):
        container[_array_index(last, len(container), for_add=False)] = value
    else:
        raise _rejected()
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
        raise _rejected()
    return _clone(op["value"])


def _apply_operation(doc: Any, op: dict[str, Any]) -> Any:
    kind = op["op"]
    path = _parse_pointer(op["path"])
    if kind == "add":
        return _add(doc, path, _operand(op))
    if kind == "remove":
        _remove(doc, path)
        return doc
    if kind == "replace":
        return _replace(doc, path, _operand(op))
    if kind == "test":
        if not _json_equal(_get(doc, path), _operand(op)):
            raise _rejected()
        return doc
    if "from" not in op:
        raise _rejected()
    source = _parse_pointer(op["from"])
    if kind == "copy":
        return _add(doc, path, _clone(_get(doc, source)))
    # move: a value cannot be moved into one of its own children
    if path[: len(source)] == source and len(path) > len(source):
        raise _rejected()
    if path == source:
        _get(doc, source)
        return doc
    value = _remove(doc, source)
    return _add(doc, path, value)


# --------------------------------------------------------------------------------------
# Strategic merge patch: patch metadata
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Field:
    """Patch metadata of one field, as the ``patchStrategy``/``patchMergeKey`` Go tags say.

    ``strategy`` is ``merge`` (lists merge, by ``merge_key`` for lists of objects or as a set
    for primitives), ``replace`` (even a map is replaced whole) or empty (no tag: maps merge,
    lists are replaced whole). ``schema`` names the :data:`_SCHEMAS` entry describing the map
    value or list element, so nested tags apply. ``retain_keys`` mirrors the ``retainKeys``
    tag; it only changes how clients build patches, since a ``$retainKeys`` directive is
    honoured wherever it appears.
    """

    strategy: str = ""
    merge_key: str = ""
    schema: str = ""
    retain_keys: bool = False


_UNTAGGED: Final = _Field()
_CONDITIONS: Final = _Field("merge", "type")

# Struct name -> json field name -> tags. Only tagged fields and the fields leading to them
# are listed; anything else is untagged (maps merge, lists are replaced whole). Checked
# against k8s.io/api as compiled into kubectl 1.32.
_SCHEMAS: Final[dict[str, dict[str, _Field]]] = {
    "ObjectMeta": {
        "ownerReferences": _Field("merge", "uid"),
        "finalizers": _Field("merge"),
    },
    "PodTemplateSpec": {
        "metadata": _Field(schema="ObjectMeta"),
        "spec": _Field(schema="PodSpec"),
    },
    "PodSpec": {
        "volumes": _Field("merge", "name", retain_keys=True),
        "initContainers": _Field("merge", "name", "Container"),
        "containers": _Field("merge", "name", "Container"),
        # EphemeralContainerCommon carries the same tags as Container.
        "ephemeralContainers": _Field("merge", "name", "Container"),
        "imagePullSecrets": _Field("merge", "name"),
        "hostAliases": _Field("merge", "ip"),
        "topologySpreadConstraints": _Field("merge", "topologyKey"),
        "resourceClaims": _Field("merge", "name", retain_keys=True),
        "schedulingGates": _Field("merge", "name"),
        # tolerations, readinessGates: untagged, replaced whole.
    },
    "Container": {
        "ports": _Field("merge", "containerPort"),
        "env": _Field("merge", "name"),
        "volumeMounts": _Field("merge", "mountPath"),
        "volumeDevices": _Field("merge", "devicePath"),
        # envFrom, resizePolicy (listType=atomic): untagged, replaced whole.
    },
    "PodStatus": {
        "conditions": _CONDITIONS,
        "podIPs": _Field("merge", "ip"),
        "hostIPs": _Field("merge", "ip"),
        "resourceClaimStatuses": _Field("merge", "name", retain_keys=True),
        # containerStatuses & co: untagged, replaced whole.
    },
    "Pod": {
        "metadata": _Field(schema="ObjectMeta"),
        "spec": _Field(schema="PodSpec"),
        "status": _Field(schema="PodStatus"),
    },
    "NodeSpec": {
        "podCIDRs": _Field("merge"),
        # taints: untagged, replaced whole.
    },
    "NodeStatus": {
        "conditions": _CONDITIONS,
        "addresses": _Field("merge", "type"),
        # images, volumesAttached, volumesInUse: untagged.
    },
    "Node": {
        "metadata": _Field(schema="ObjectMeta"),
        "spec": _Field(schema="NodeSpec"),
        "status": _Field(schema="NodeStatus"),
    },
    # Namespace, Service, PVC, workload, PDB and HPA statuses: only conditions are tagged.
    "ConditionedStatus": {"conditions": _CONDITIONS},
    "ObjectWithStatus": {
        "metadata": _Field(schema="ObjectMeta"),
        "status": _Field(schema="ConditionedStatus"),
    },
    "ServiceSpec": {"ports": _Field("merge", "port")},
    "Service": {
        "metadata": _Field(schema="ObjectMeta"),
        "spec": _Field(schema="ServiceSpec"),
        "status": _Field(schema="ConditionedStatus"),
    },
    "ServiceAccount": {
        "metadata": _Field(schema="ObjectMeta"),
        "secrets": _Field("merge", "name"),
        # imagePullSecrets: untagged here (unlike PodSpec).
    },
    # ConfigMap, Secret, Event, PV, Lease, RBAC (rules/subjects untagged), Ingress.
    "ObjectMetaOnly": {"metadata": _Field(schema="ObjectMeta")},
    "DeploymentSpec": {
        "template": _Field(schema="PodTemplateSpec"),
        "strategy": _Field(retain_keys=True),
    },
    # ReplicaSet, StatefulSet, DaemonSet and Job specs reach the pod template the same way.
    "TemplatedSpec": {"template": _Field(schema="PodTemplateSpec")},
    "Deployment": {
        "metadata": _Field(schema="ObjectMeta"),
        "spec": _Field(schema="DeploymentSpec"),
        "status": _Field(schema="ConditionedStatus"),
    },
    "TemplatedWorkload": {
        "metadata": _Field(schema="ObjectMeta"),
        "spec": _Field(schema="TemplatedSpec"),
        "status": _Field(schema="ConditionedStatus"),
    },
    "JobTemplateSpec": {
        "metadata": _Field(schema="ObjectMeta"),
        "spec": _Field(schema="TemplatedSpec"),
    },
    "CronJobSpec": {"jobTemplate": _Field(schema="JobTemplateSpec")},
    "CronJob": {
        "metadata": _Field(schema="ObjectMeta"),
        "spec": _Field(schema="CronJobSpec"),
    },
    "PodDisruptionBudgetSpec": {"selector": _Field("replace")},
    "PodDisruptionBudget": {
        "metadata": _Field(schema="ObjectMeta"),
        "spec": _Field(schema="PodDisruptionBudgetSpec"),
        "status": _Field(schema="ConditionedStatus"),
    },
}

# ``group/Kind`` (core group empty) -> top-level schema. Kinds missing here (custom
# resources) get kube's 415: strategic merge needs Go struct tags.
STRATEGIC_MERGE_KINDS: Final[dict[str, str]] = {
    "/Pod": "Pod",
    "/Node": "Node",
    "/Namespace": "ObjectWithStatus",
    "/Service": "Service",
    "/ConfigMap": "ObjectMetaOnly",
    "/Secret": "ObjectMetaOnly",
    "/ServiceAccount": "ServiceAccount",
    "/Event": "ObjectMetaOnly",
    "/PersistentVolume": "ObjectMetaOnly",
    "/PersistentVolumeClaim": "ObjectWithStatus",
    "apps/Deployment": "Deployment",
    "apps/ReplicaSet": "TemplatedWorkload",
    "apps/StatefulSet": "TemplatedWorkload",
    "apps/DaemonSet": "TemplatedWorkload",
    "batch/Job": "TemplatedWorkload",
    "batch/CronJob": "CronJob",
    "coordination.k8s.io/Lease": "ObjectMetaOnly",
    "rbac.authorization.k8s.io/Role": "ObjectMetaOnly",
    "rbac.authorization.k8s.io/ClusterRole": "ObjectMetaOnly",
    "rbac.authorization.k8s.io/RoleBinding": "ObjectMetaOnly",
    "rbac.authorization.k8s.io/ClusterRoleBinding": "ObjectMetaOnly",
    "policy/PodDisruptionBudget": "PodDisruptionBudget",
    "autoscaling/HorizontalPodAutoscaler": "ObjectWithStatus",
    "networking.k8s.io/Ingress": "ObjectMetaOnly",
}


def supports_strategic_merge_patch(kind_key: str) -> bool:
    """Whether ``group/Kind`` accepts ``application/strategic-merge-patch+json``."""
    return kind_key in STRATEGIC_MERGE_KINDS


def _lookup(schema: str, key: str) -> _Field:
    return _SCHEMAS.get(schema, {}).get(key, _UNTAGGED)


# --------------------------------------------------------------------------------------
# Strategic merge patch: the algorithm (port of apimachinery's strategicpatch apply half)
# --------------------------------------------------------------------------------------

_DIRECTIVE: Final = "$patch"
_RETAIN_KEYS: Final = "$retainKeys"
_DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList"
_SET_ELEMENT_ORDER: Final = "$setElementOrder"


def apply_strategic_merge_patch(original: Any, patch: Any, kind_key: str) -> Any:
    """Apply a strategic merge patch to a built-in object of kind ``group/Kind``.

    Follows k8s.io/apimachinery ``StrategicMergeMapPatch``: lists tagged ``merge`` merge by
    their key (new elements first, then the others in their stored order, as the library
    orders them), ``$patch``/``$retainKeys``/``$deleteFromPrimitiveList``/``$setElementOrder``
    directives, ``null`` deletes. Directive keys left inside values taken from the patch
    are dropped, as kube's typed decode of the result drops them.
    """
    schema = STRATEGIC_MERGE_KINDS.get(kind_key)
    if schema is None:
        raise unsupported_media_type(_NON_STRATEGIC_MEDIA_TYPES)
    if patch is None:
        patch = {}
    if not isinstance(patch, dict):
        raise bad_request(
            f"json: cannot unmarshal {go_json_type_name(patch)} into Go value of type map[string]interface {{}}"
        )
    if not isinstance(original, dict):
        raise bad_request("invalid JSON document")
    merged = _merge_map(_clone(original), _clone(patch), schema)
    return _drop_directive_keys(merged)


def _drop_directive_keys(value: Any) -> Any:
    """Remove ``$``-prefixed keys (no built-in field, label, annotation or data key has one)."""
    if isinstance(value, dict):
        return {k: _drop_directive_keys(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_drop_directive_keys(v) for v in value]
    return value


def _go_type(value: Any) -> str:
    """The Go dynamic type a decoded JSON value would have (ints preserved, as kube decodes)."""
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    return "<nil>"


def _go_eq(a: Any, b: Any) -> bool:
    """Go's ``==`` on interface values: equal only with the same dynamic type."""
    return _go_type(a) == _go_type(b) and a == b


def _go_format(value: Any) -> str:
    """Go's ``%v`` of a decoded JSON value, for error messages that match kube's."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_format(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_format(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _no_merge_key(item: dict[str, Any], merge_key: str) -> StatusError:
    return bad_request(f"map: {_go_format(item)} does not contain declared merge key: {merge_key}")


def _bad_arg_type(expected: str, actual: Any) -> StatusError:
    return bad_request(f"expected a {expected}, but received a {_go_type(actual)}")


def _extract_key(key: str, prefix: str) -> str:
    """``$setElementOrder/containers`` -> ``containers``."""
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        if prefix == _DELETE_FROM_PRIMITIVE_LIST:
            raise bad_request("invalid patch format of primitive list")
        raise bad_request("invalid patch format of setElementOrder list")
    return rest


def _discard_nulls(value: Any) -> None:
    """Drop ``null`` members everywhere in a value about to be added as is."""
    if isinstance(value, dict):
        for k in [k for k, v in value.items() if v is None]:
            del value[k]
        for v in value.values():
            _discard_nulls(v)
    elif isinstance(value, list):
        for v in value:
            _discard_nulls(v)


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """Strip maps carrying ``$patch`` from a value added as is; False if ``value`` is one."""
    if isinstance(value, dict):
        if _DIRECTIVE in value:
            return None, False
        for k in list(value):
            cleaned, keep = _remove_directives(value[k])
            if keep:
                value[k] = cleaned
            else:
                del value[k]
        return value, True
    if isinstance(value, list):
        kept: list[Any] = []
        for item in value:
            cleaned, keep = _remove_directives(item)
            if keep:
                kept.append(cleaned)
        return kept, True
    return value, True


def _merge_map(original: dict[str, Any], patch: dict[str, Any], schema: str) -> dict[str, Any]:
    """``mergeMap``: merge ``patch`` into ``original`` (both owned copies, mutated)."""
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        if directive == "replace":
            del patch[_DIRECTIVE]
            return patch
        if directive == "delete":
            return {}
        raise bad_request(f"unknown patch type: {_go_format(directive)} in map: {_go_format(patch)}")

    _apply_retain_keys(original, patch)
    _merge_ordered_lists(original, patch, schema)

    for raw_key, patch_value in list(patch.items()):
        key = raw_key
        is_delete_list = raw_key.startswith(_DELETE_FROM_PRIMITIVE_LIST)
        if is_delete_list:
            key = _extract_key(raw_key, _DELETE_FROM_PRIMITIVE_LIST)

        if patch_value is None:
            original.pop(key, None)
            continue

        if key not in original or _go_type(original[key]) != _go_type(patch_value):
            if not is_delete_list:
                _discard_nulls(patch_value)
                cleaned, keep = _remove_directives(patch_value)
                if keep:
                    original[key] = cleaned
                else:
                    original.pop(key, None)
            continue

        current = original[key]
        field = _lookup(schema, key)
        if isinstance(current, dict):
            if field.strategy == "replace":
                original[key] = patch_value
            else:
                original[key] = _merge_map(current, patch_value, field.schema)
        elif isinstance(current, list):
            if field.strategy == "merge" or is_delete_list:
                original[key] = _merge_slice(current, patch_value, field, is_delete_list)[0]
            else:
                original[key] = patch_value
        else:
            original[key] = patch_value
    return original


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    """``$retainKeys``: drop stored keys not listed; every patched key must be listed."""
    if _RETAIN_KEYS not in patch:
        return
    retain = patch.pop(_RETAIN_KEYS)
    if not isinstance(retain, list):
        raise bad_request("invalid patch format of retainKeys")
    for key, value in patch.items():
        if value is None or key.startswith((_DELETE_FROM_PRIMITIVE_LIST, _SET_ELEMENT_ORDER)):
            continue
        if not any(_go_eq(key, r) for r in retain):
            raise bad_request("invalid patch format of retainKeys")
    for key in list(original):
        if not any(_go_eq(key, r) for r in retain):
            del original[key]


def _merge_ordered_lists(original: dict[str, Any], patch: dict[str, Any], schema: str) -> None:
    """``mergePatchIntoOriginal``: merge each list that has a ``$setElementOrder`` and order it.

    Listed elements come first in the directive's order, the others keep their stored
    order; the list is then removed from ``patch`` so it is not merged twice.
    """
    for directive_key in [k for k in patch if k.startswith(_SET_ELEMENT_ORDER)]:
        order = patch.pop(directive_key)
        if not isinstance(order, list):
            raise _bad_arg_type("[]interface {}", order)
        key = _extract_key(directive_key, _SET_ELEMENT_ORDER)
        found_original = key in original
        found_patch = key in patch
        original_list: list[Any] = []
        patch_list: list[Any] = []
        if found_original:
            if not isinstance(original[key], list):
                raise _bad_arg_type("[]interface {}", original[key])
            original_list = original[key]
        if found_patch:
            if not isinstance(patch[key], list):
                raise _bad_arg_type("[]interface {}", patch[key])
            patch_list = patch[key]
        field = _lookup(schema, key)
        merge_key = field.merge_key
        _check_patch_follows_order(patch_list, order, merge_key)

        server_order = original_list
        if found_original and not found_patch:
            merged = original_list
        elif found_patch and not found_original:
            merged = _remove_directives(patch_list)[0]
        elif found_original and found_patch:
            if field.strategy == "merge":
                merged, server_order = _merge_slice(original_list, patch_list, field, False)
            else:
                merged = patch_list
        else:
            continue

        if merge_key:
            in_order, server_only = _partition_maps(merged, order, merge_key)
        else:
            in_order, server_only = _partition_primitives(merged, order)
        kind = _element_kind(original_list, patch_list)
        if kind is None:
            raise bad_request("no elements in any of the given slices")
        original[key] = _normalize_order(
            in_order,
            server_only,
            patch_order=order,
            server_order=server_order,
            merge_key=merge_key,
            kind=kind,
        )
        patch.pop(key, None)


def _check_patch_follows_order(patch_list: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch list must be a subsequence of the ``$setElementOrder`` list (deletions aside)."""
    if not order or not patch_list:
        return
    items = patch_list
    if merge_key:
        for item in patch_list:
            if not isinstance(item, dict):
                raise _bad_arg_type("map[string]interface {}", item)
        items = [item for item in patch_list if item.get(_DIRECTIVE) != "delete"]
    p = s = 0
    while p < len(items) and s < len(order):
        if isinstance(items[p], dict) and _DIRECTIVE in items[p]:
            p += 1
            continue
        if _merge_key_equal(items[p], order[s], merge_key):
            p += 1
        s += 1
    if p < len(items) and s >= len(order):
        raise bad_request(
            f"the order in patch list:\n{_go_format(patch_list)}\n doesn't match "
            f"{_SET_ELEMENT_ORDER} list:\n{_go_format(order)}"
        )


def _merge_key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _go_eq(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise _bad_arg_type("map[string]interface {}", item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
    return _go_eq(left[merge_key], right[merge_key])


def _element_kind(*lists: list[Any]) -> str | None:
    """``sliceElementType``: all elements share one type, never a list; None if empty."""
    kind: str | None = None
    for items in lists:
        for item in items:
            current = _go_type(item)
            if kind is None:
                kind = current
                if isinstance(item, list):
                    raise _rejected()  # lists of lists: kube answers 422
            elif current != kind:
                raise bad_request("list element types are not identical: " + _go_format(list(lists)))
    return kind


def _go_capacity(length: int) -> int:
    """Capacity Go gives a decoded array of ``length`` elements (append growth: 1, 2, 4, ...).

    The library edits slices in place, and with spare capacity those edits leak into the
    caller's view of the stored list, which ``$setElementOrder`` then orders by. kube keeps
    the capacity its decoder gave the typed object (``ToUnstructured`` copies it); assuming
    append growth reproduces kubectl's element order exactly, and kube's in practice.
    """
    return 0 if length == 0 else 1 << (length - 1).bit_length()


def _merge_slice(
    original: list[Any], patch: list[Any], field: _Field, is_delete_list: bool
) -> tuple[list[Any], list[Any]]:
    """``mergeSlice``: merge a ``merge``-tagged list.

    Returns the merged list and the stored list as Go's caller sees it afterwards (same
    length, but edited in place by deletions, appends into spare capacity and de-duplication),
    which is what ``$setElementOrder`` orders the elements it does not list by.
    """
    if not original and not patch:
        return original, original
    kind = _element_kind(original, patch)
    if kind is None:
        return original, original
    merge_key = field.merge_key
    if kind != "map[string]interface {}":
        if is_delete_list:
            return [v for v in original if not any(_go_eq(v, d) for d in patch)], original
        both = [*original, *patch]
        merged = _go_dedupe(both)
        # ``append(original, patch...)`` reuses the stored array when it has room.
        view = both[: len(original)] if len(both) <= _go_capacity(len(original)) else original
        server_order = view
    else:
        if not merge_key:
            raise bad_request(f"cannot merge lists without merge key for {field.schema or 'type'}")
        merged, patch, server_order, view = _merge_list_of_maps(original, patch, merge_key, field.schema)

    if merge_key:
        in_patch, server_only = _partition_maps(merged, patch, merge_key)
    else:
        in_patch, server_only = _partition_primitives(merged, patch)
    ordered = _normalize_order(
        in_patch, server_only, patch_order=patch, server_order=server_order, merge_key=merge_key, kind=kind
    )
    return ordered, view


def _go_dedupe(items: list[Any]) -> list[Any]:
    """``deduplicateScalars``, in place like Go (moves the last element into each duplicate's slot)."""
    last = len(items) - 1
    i = 0
    while i < last:
        j = i + 1
        while j <= last:
            if _go_eq(items[i], items[j]):
                items[j] = items[last]
                last -= 1
                j -= 1
            j += 1
        i += 1
    return items[: last + 1]


def _find_by_key(items: list[Any], merge_key: str, value: Any) -> int:
    """Index of the first map whose merge key equals ``value``, or -1."""
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise bad_request(f"value for key {index} is not a map")
        if merge_key in item and _go_eq(item[merge_key], value):
            return index
    return -1


def _merge_list_of_maps(
    original: list[Any], patch: list[Any], merge_key: str, schema: str
) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """Merge a list of maps by ``merge_key`` (``mergeSliceWith[out]SpecialElements``).

    ``{"$patch": "delete"}`` elements delete by key, ``{"$patch": "replace"}`` makes the
    remaining patch elements the whole list; other elements merge into the stored one with
    the same key or are appended. Returns the merged list, the patch without directive
    elements, the stored order to keep the other elements in, and the caller's view of the
    stored array (see :func:`_go_capacity`).
    """
    length = len(original)
    backing = list(original)  # the stored array, edited in place as Go does
    live = length
    plain: list[Any] = []
    replace = False
    for item in patch:
        if _DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[_DIRECTIVE]
        if directive == "delete":
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            while (index := _find_by_key(backing[:live], merge_key, item[merge_key])) >= 0:
                backing[index : live - 1] = backing[index + 1 : live]
                live -= 1
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise bad_request("merging lists cannot yet be specified in the patch")
        else:
            raise bad_request(f"unknown patch type: {_go_format(directive)} in map: {_go_format(item)}")

    if replace:
        return plain, [], plain, backing
    merged = backing[:live]
    server_order = list(merged)
    shared = True  # appends land in the stored array until it is full
    capacity = _go_capacity(length)
    for item in plain:
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        index = _find_by_key(merged, merge_key, item[merge_key])
        if index >= 0:
            merged[index] = _merge_map(merged[index], item, schema)
            continue
        merged.append(item)
        if shared and len(merged) <= capacity:
            if len(merged) <= length:
                backing[len(merged) - 1] = item
        else:
            shared = False
    return merged, plain, server_order, backing


def _partition_primitives(items: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    present = [v for v in items if any(_go_eq(v, b) for b in by)]
    absent = [v for v in items if not any(_go_eq(v, b) for b in by)]
    return present, absent


def _partition_maps(items: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    present: list[Any] = []
    absent: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            raise _bad_arg_type("map[string]interface {}", item)
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        (present if _find_by_key(by, merge_key, item[merge_key]) >= 0 else absent).append(item)
    return present, absent


def _index(items: list[Any], value: Any, merge_key: str, kind: str) -> int:
    """Position of ``value`` in ``items`` (maps compare by merge key), or -1."""
    if kind == "map[string]interface {}":
        wanted = value.get(merge_key) if isinstance(value, dict) else None
        for i, item in enumerate(items):
            if _go_eq(item.get(merge_key) if isinstance(item, dict) else None, wanted):
                return i
        return -1
    for i, item in enumerate(items):
        if _go_eq(item, value):
            return i
    return -1


def _sort_by(items: list[Any], order: list[Any], merge_key: str, kind: str) -> list[Any]:
    """``normalizeSliceOrder``: stable sort by position in ``order``; deletions go last."""
    deletions: list[Any] = []
    if kind == "map[string]interface {}":
        for item in [*items, *order]:
            if not isinstance(item, dict):
                raise _bad_arg_type("map[string]interface {}", item)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
        deletions = [item for item in items if item.get(_DIRECTIVE) == "delete"]
        items = [item for item in items if item.get(_DIRECTIVE) != "delete"]

    def position(item: Any) -> int:
        index = _index(order, item, merge_key, kind)
        return index if index >= 0 else len(order)

    return sorted(items, key=position) + deletions


def _normalize_order(
    in_patch: list[Any],
    server_only: list[Any],
    *,
    patch_order: list[Any],
    server_order: list[Any],
    merge_key: str,
    kind: str,
) -> list[Any]:
    """``normalizeElementOrder``: patch elements in patch order, stored ones in stored order,
    interleaved by stored position; an element the store did not have goes before the rest.
    """
    right = _sort_by(in_patch, patch_order, merge_key, kind)
    left = _sort_by(server_only, server_order, merge_key, kind)
    merged: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            merged.append(right[j])
            j += 1
        elif j >= len(right):
            merged.append(left[i])
            i += 1
        else:
            li = _index(server_order, left[i], merge_key, kind)
            ri = _index(server_order, right[j], merge_key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                merged.append(left[i])
                i += 1
            else:
                merged.append(right[j])
                j += 1
    return merged
