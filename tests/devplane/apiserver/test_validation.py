"""Object metadata validation: kube's messages, fields and reasons."""

from __future__ import annotations

from typing import Any

import pytest

from devplane.apiserver.errors import Cause, invalid
from devplane.apiserver.validation import (
    generate_name,
    generate_name_suffix,
    validate_name,
    validate_object_meta,
)

SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_ERR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
QNAME_ERR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def meta(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": fields}


def test_valid_object_has_no_causes() -> None:
    obj = meta(
        name="web.example-1",
        namespace="default",
        labels={"app": "web", "app.kubernetes.io/name": "", "Tier": "Front_end.1"},
        annotations={"Example.com/Note": "anything at all: {}", "plain": ""},
    )
    assert validate_object_meta(obj, namespaced=True) == []


def test_bad_subdomain_name() -> None:
    assert validate_object_meta(meta(name="bad_name"), namespaced=True) == [
        Cause("FieldValueInvalid", f'Invalid value: "bad_name": {SUBDOMAIN_ERR}', "metadata.name")
    ]


def test_exact_subdomain_message_from_the_brief() -> None:
    [cause] = validate_object_meta(meta(name="bad_name"), namespaced=False)
    assert cause.message == (
        'Invalid value: "bad_name": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    # The server formats "field: message" itself.
    err = invalid("ConfigMap", "", "bad_name", [cause])
    assert err.message.startswith(
        'ConfigMap "bad_name" is invalid: metadata.name: Invalid value: "bad_name": '
    )


def test_too_long_subdomain_name() -> None:
    name = "a" * 254
    assert validate_name(name, "subdomain") == ["must be no more than 253 characters"]
    assert validate_name("a" * 253, "subdomain") == []
    [cause] = validate_object_meta(meta(name=name), namespaced=True)
    assert cause == Cause(
        "FieldValueInvalid", f'Invalid value: "{name}": must be no more than 253 characters', "metadata.name"
    )


def test_dns_label_rule() -> None:
    assert validate_name("my-ns", "label") == []
    assert validate_name("My_NS", "label") == [LABEL_ERR]
    assert validate_name("a.b", "label") == ["must not contain dots"]
    assert validate_name("a" * 64, "label") == ["must be no more than 63 characters"]
    [cause] = validate_object_meta({"metadata": {"name": "Member_1"}}, namespaced=False, name_rule="label")
    assert cause == Cause("FieldValueInvalid", f'Invalid value: "Member_1": {LABEL_ERR}', "metadata.name")


def test_label_message_has_two_spaces_before_or() -> None:
    assert "'my-name',  or '123-abc'" in validate_name("X", "label")[0]


def test_path_segment_rule() -> None:
    assert validate_name("system:controller:tom", "path-segment") == []
    assert validate_name("Any_Thing Goes", "path-segment") == []
    assert validate_name(".", "path-segment") == ["may not be '.'"]
    assert validate_name("..", "path-segment") == ["may not be '..'"]
    assert validate_name("a/b", "path-segment") == ["may not contain '/'"]
    assert validate_name("a%b", "path-segment") == ["may not contain '%'"]
    assert validate_name("a/%b", "path-segment") == ["may not contain '/'", "may not contain '%'"]
    [cause] = validate_object_meta(meta(name="a/b"), namespaced=False, name_rule="path-segment")
    assert cause == Cause("FieldValueInvalid", "Invalid value: \"a/b\": may not contain '/'", "metadata.name")


def test_unknown_rule_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown name rule"):
        validate_name("x", "dns")


def test_name_or_generate_name_required() -> None:
    expected = [
        Cause("FieldValueRequired", "Required value: name or generateName is required", "metadata.name")
    ]
    assert validate_object_meta(meta(), namespaced=True) == expected
    assert validate_object_meta(meta(name=""), namespaced=True) == expected
    assert validate_object_meta({"kind": "ConfigMap"}, namespaced=True) == expected
    assert validate_object_meta(meta(generateName="web-"), namespaced=True) == []


def test_generate_name_prefix_may_end_with_a_dash() -> None:
    assert validate_name("web-", "subdomain", prefix=True) == []
    assert validate_name("web-", "label", prefix=True) == []
    assert validate_name("web-", "subdomain") != []
    causes = validate_object_meta(meta(generateName="Web-", name="Web-x2k4z"), namespaced=True)
    assert [c.field for c in causes] == ["metadata.generateName", "metadata.name"]
    assert causes[0].message == f'Invalid value: "Web-": {SUBDOMAIN_ERR}'


def test_namespace_on_cluster_scoped_object_is_not_reported() -> None:
    assert validate_object_meta(meta(name="n1", namespace="whatever"), namespaced=False) == []
    assert validate_object_meta(meta(name="n1", namespace="Bad_NS"), namespaced=False) == []


def test_invalid_namespace_on_namespaced_object() -> None:
    assert validate_object_meta(meta(name="n1", namespace="Bad_NS"), namespaced=True) == [
        Cause("FieldValueInvalid", f'Invalid value: "Bad_NS": {LABEL_ERR}', "metadata.namespace")
    ]


def test_bad_label_value() -> None:
    causes = validate_object_meta(meta(name="x", labels={"app": "bad value!"}), namespaced=True)
    assert causes == [
        Cause("FieldValueInvalid", f'Invalid value: "bad value!": {LABEL_VALUE_ERR}', "metadata.labels")
    ]


def test_bad_label_key() -> None:
    [cause] = validate_object_meta(meta(name="x", labels={"bad key": "v"}), namespaced=True)
    assert cause == Cause("FieldValueInvalid", f'Invalid value: "bad key": {QNAME_ERR}', "metadata.labels")
    [cause] = validate_object_meta(meta(name="x", labels={"/x": "v"}), namespaced=True)
    assert cause.message == 'Invalid value: "/x": prefix part must be non-empty'
    causes = validate_object_meta(meta(name="x", labels={"x/": "v"}), namespaced=True)
    assert [c.message for c in causes] == [
        'Invalid value: "x/": name part must be non-empty',
        f'Invalid value: "x/": {QNAME_ERR}',
    ]


def test_long_label_value() -> None:
    value = "v" * 64
    [cause] = validate_object_meta(meta(name="x", labels={"k": value}), namespaced=True)
    assert cause.message == f'Invalid value: "{value}": must be no more than 63 characters'


def test_non_string_maps() -> None:
    for bad in (["a"], "a=b", 5):
        [cause] = validate_object_meta(meta(name="x", labels=bad), namespaced=True)
        assert (cause.reason, cause.field) == ("FieldValueInvalid", "metadata.labels")
    [cause] = validate_object_meta(meta(name="x", annotations={"a": 1}), namespaced=True)
    assert (cause.reason, cause.field) == ("FieldValueInvalid", "metadata.annotations")
    assert cause.message.startswith("Invalid value: 1: ")
    assert validate_object_meta(meta(name="x", labels=None, annotations=None), namespaced=True) == []


def test_annotation_keys_are_case_insensitive_qualified_names() -> None:
    assert validate_object_meta(meta(name="x", annotations={"Example.COM/Key": "v"}), namespaced=True) == []
    [cause] = validate_object_meta(meta(name="x", annotations={"a b": "v"}), namespaced=True)
    assert cause.field == "metadata.annotations"
    assert cause.message.startswith('Invalid value: "a b": name part must consist')


def test_annotations_total_size() -> None:
    limit = 256 * 1024
    ok = {"k": "v" * (limit - 1)}
    assert validate_object_meta(meta(name="x", annotations=ok), namespaced=True) == []
    too_big = {"k": "v" * limit}
    assert validate_object_meta(meta(name="x", annotations=too_big), namespaced=True) == [
        Cause("FieldValueTooLong", "Too long: must have at most 262144 bytes", "metadata.annotations")
    ]
    # Bytes, not characters: "é" is two bytes in UTF-8.
    wide = {"k": "é" * (limit // 2)}
    assert [c.reason for c in validate_object_meta(meta(name="x", annotations=wide), namespaced=True)] == [
        "FieldValueTooLong"
    ]


def test_cause_order_follows_kube() -> None:
    causes = validate_object_meta(
        meta(generateName="A_", name="B_", namespace="C_", labels={"d": "e!"}, annotations={"f g": ""}),
        namespaced=True,
    )
    assert [c.field for c in causes] == [
        "metadata.generateName",
        "metadata.name",
        "metadata.namespace",
        "metadata.labels",
        "metadata.annotations",
    ]


def test_non_string_name_and_metadata() -> None:
    [cause] = validate_object_meta(meta(name=5), namespaced=True)
    assert cause == Cause("FieldValueInvalid", "Invalid value: 5: must be a string", "metadata.name")
    [cause] = validate_object_meta({"metadata": ["x"]}, namespaced=True)
    assert cause.field == "metadata"


def test_generate_name_suffix_alphabet_and_length() -> None:
    alphabet = set("bcdfghjklmnpqrstvwxz2456789")
    suffixes = {generate_name_suffix() for _ in range(300)}
    assert len(suffixes) > 250  # random, not constant
    for suffix in suffixes:
        assert len(suffix) == 5
        assert set(suffix) <= alphabet


def test_generate_name_truncates_base() -> None:
    name = generate_name("x" * 100)
    assert len(name) == 63
    assert name.startswith("x" * 58)
    assert generate_name("web-")[:4] == "web-"

