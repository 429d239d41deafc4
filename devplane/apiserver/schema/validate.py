"""Validation of custom resources against their schema, in kube-openapi's order and words.

Follows kube-openapi's ``SchemaValidator``: for each value the type, then anyOf/oneOf/
allOf/not, then string, format, number and array checks, then enum, then the object's
properties; a null only gets the type and enum checks. The causes are worded as
apiextensions-apiserver's ``apiservervalidation.ValidateCustomResource`` words them.
"""

from __future__ import annotations

from typing import Any

from devplane.apiserver.errors import Cause
from devplane.apiserver.schema.compile import META_KEYS, Node
from devplane.apiserver.schema.render import (
    INVALID,
    NOT_SUPPORTED,
    REQUIRED,
    TOO_LONG,
    composite,
    field_path,
    go_float,
    invalid,
    render,
    type_cause,
)
from devplane.apiserver.schema.values import JSON_TYPES, canon, is_json_integer, json_equal, json_type
from kube_api.validation import go_quote


def validate_value(node: Node, value: Any, path: str, errs: list[Cause]) -> None:
    """One kube-openapi ``SchemaValidator.Validate`` call: a null only gets the type and enum checks."""
    if value is None:
        if node.null_error:
            errs.append(type_cause(path, node.type_label, "null"))
        if node.enum is not None:
            detail = f'Unsupported value: "null": {node.enum_detail}'
            errs.append(Cause(NOT_SUPPORTED, detail, field_path(path)))
        return
    t = JSON_TYPES.get(type(value)) or json_type(value)
    if node.check_type and t not in node.types:
        _check_type(node, value, t, path, errs)
    if node.junctors:
        _check_junctors(node, value, path, errs)
    if t == "string":
        if node.string_checks:
            _check_string(node, value, path, errs)
        if node.format_check is not None and not node.format_check(value):
            errs.append(type_cause(path, node.format, value))
    elif t in ("integer", "number"):
        if node.number_checks:
            _check_number(node, value, t == "integer", path, errs)
    elif t == "array":
        items = node.items
        if items is not None:
            for i, item in enumerate(value):
                if items.trivial and (items.fast_any or type(item) in items.fast_types):
                    continue
                validate_value(items, item, f"{path}[{i}]", errs)
        if node.array_checks:
            _check_array(node, value, path, errs)
    if node.enum is not None and not any(json_equal(value, e) for e in node.enum):
        errs.append(
            Cause(NOT_SUPPORTED, f"Unsupported value: {render(value)}: {node.enum_detail}", field_path(path))
        )
    if t == "object":
        validate_object(node, value, path, errs, False)


def validate_object(node: Node, d: dict[str, Any], path: str, errs: list[Cause], root: bool) -> None:
    count = len(d)
    if node.min_properties is not None and count < node.min_properties:
        errs.append(
            invalid(path, count, f"{path} in body should have at least {node.min_properties} properties")
        )
        return
    if node.max_properties is not None and count > node.max_properties:
        errs.append(
            invalid(path, count, f"{path} in body should have at most {node.max_properties} properties")
        )
        return
    prefix = f"{path}." if path else ""
    for key in node.required:
        if key not in d:
            errs.append(Cause(REQUIRED, "Required value", prefix + key))
    props = node.properties
    additional = node.additional
    if not props and additional is None:
        return
    for key in sorted(d):
        if root and key in META_KEYS:
            continue
        v = d[key]
        child = props.get(key)
        if child is not None:
            if child.trivial and (child.fast_any or type(v) in child.fast_types):
                continue
            validate_value(child, v, prefix + key, errs)
        elif additional is not None:
            if additional.trivial and (additional.fast_any or type(v) in additional.fast_types):
                continue
            validate_value(additional, v, f"{path}[{key}]", errs)


def _check_type(node: Node, value: Any, t: str, path: str, errs: list[Cause]) -> None:
    """kube-openapi ``typeValidator`` for a value whose JSON type is not among the declared ones."""
    types = node.types
    if t == "number" and "integer" in types and is_json_integer(value):
        return
    if t == "integer" and "number" in types:
        return
    fmt = node.format
    if fmt:
        if t not in ("string", "array"):
            go_format = "int64" if t == "integer" else "float64" if t == "number" else ""
            errs.append(type_cause(path, fmt, go_format))
            return
        if "number" not in types and "integer" not in types:
            return  # kube-openapi lets strings and arrays through when a format is set
    if types:
        errs.append(type_cause(path, node.type_label, t))


def _check_string(node: Node, value: str, path: str, errs: list[Cause]) -> None:
    """maxLength, minLength, pattern; kube-openapi stops at the first failure."""
    if node.max_length is not None and len(value) > node.max_length:
        errs.append(Cause(TOO_LONG, f"Too long: may not be longer than {node.max_length}", field_path(path)))
        return
    if node.min_length is not None and len(value) < node.min_length:
        errs.append(invalid(path, value, f"{path} in body should be at least {node.min_length} chars long"))
        return
    if node.regex is not None and node.regex.search(value) is None:
        errs.append(invalid(path, value, f"{path} in body should match '{node.pattern}'"))


def _check_number(node: Node, value: int | float, is_int: bool, path: str, errs: list[Cause]) -> None:
    """multipleOf, minimum, maximum; integers compare against bounds truncated to int64, as Go does."""
    factor = node.multiple_of
    if factor is not None:
        if is_int and int(factor) != 0:
            if value % int(factor) != 0:
                errs.append(invalid(path, value, f"{path} in body should be a multiple of {int(factor)}"))
        elif factor != 0:
            ratio = value / factor if factor >= 1 else (1 / factor) * value
            if not is_json_integer(float(ratio)):
                errs.append(
                    invalid(path, value, f"{path} in body should be a multiple of {go_float(factor)}")
                )
    low = node.minimum
    if low is not None:
        bound: int | float = int(low) if is_int else low
        exclusive = node.exclusive_minimum
        if value <= bound if exclusive else value < bound:
            shown = str(bound) if is_int else go_float(low)
            relation = "greater than" if exclusive else "greater than or equal to"
            errs.append(invalid(path, value, f"{path} in body should be {relation} {shown}"))
    high = node.maximum
    if high is not None:
        bound = int(high) if is_int else high
        exclusive = node.exclusive_maximum
        if value >= bound if exclusive else value > bound:
            shown = str(bound) if is_int else go_float(high)
            relation = "less than" if exclusive else "less than or equal to"
            errs.append(invalid(path, value, f"{path} in body should be {relation} {shown}"))


def _check_array(node: Node, value: list[Any], path: str, errs: list[Cause]) -> None:
    size = len(value)
    if node.min_items is not None and size < node.min_items:
        errs.append(invalid(path, size, f"{path} in body should have at least {node.min_items} items"))
    if node.max_items is not None and size > node.max_items:
        errs.append(invalid(path, size, f"{path} in body should have at most {node.max_items} items"))
    if node.unique_items and len({canon(v) for v in value}) != size:
        errs.append(
            Cause(INVALID, f'Invalid value: "": {path} in body shouldn\'t contain duplicates', field_path(path))
        )


def _check_junctors(node: Node, value: Any, path: str, errs: list[Cause]) -> None:
    """anyOf, oneOf, allOf, not — each alternative validated at the same path."""
    quoted = go_quote(path)
    if node.any_of:
        first: list[Cause] = []
        for sub in node.any_of:
            found = _causes(sub, value, path)
            if not found:
                break
            first = first or found
        else:  # none matched: the first alternative's causes follow
            errs.append(composite(f"{quoted} must validate at least one schema (anyOf)"))
            errs.extend(first)
    if node.one_of:
        results = [_causes(sub, value, path) for sub in node.one_of]
        valid = results.count([])
        if valid != 1:
            extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            errs.append(composite(f"{quoted} must validate one and only one schema (oneOf). {extra}"))
            if valid == 0:
                errs.extend(results[0])
    if node.all_of:
        results = [_causes(sub, value, path) for sub in node.all_of]
        valid = results.count([])
        for found in results:
            errs.extend(found)
        if valid != len(node.all_of):
            extra = ". None validated" if valid == 0 else ""
            errs.append(composite(f"{quoted} must validate all the schemas (allOf){extra}"))
    if node.not_ is not None and not _causes(node.not_, value, path):
        errs.append(composite(f"{quoted} must not validate the schema (not)"))


def _causes(node: Node, value: Any, path: str) -> list[Cause]:
    """The causes of one alternative of a junctor, validated on its own."""
    found: list[Cause] = []
    validate_value(node, value, path, found)
    return found
