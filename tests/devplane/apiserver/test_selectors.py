"""Field selectors: kube's syntax, semantics and error messages (label selectors: tests/kube_api)."""

from __future__ import annotations

import pytest

from devplane.apiserver.errors import StatusError
from devplane.apiserver.selectors import FieldSelector, field_values

# --- field selectors -----------------------------------------------------------------------

META = ("metadata.name", "metadata.namespace")
POD_FIELDS = ("metadata.name", "metadata.namespace", "spec.nodeName", "status.phase")


def fsel(text: str, allowed: tuple[str, ...] = POD_FIELDS, *, builtin: bool = True) -> FieldSelector:
    return FieldSelector.parse(text, allowed, builtin=builtin)


def field_error(text: str, allowed: tuple[str, ...] = POD_FIELDS, *, builtin: bool = True) -> str:
    with pytest.raises(StatusError) as info:
        FieldSelector.parse(text, allowed, builtin=builtin)
    assert (info.value.code, info.value.reason) == (400, "BadRequest")
    return info.value.message


@pytest.mark.parametrize("op", ["=", "=="])
def test_field_equals(op: str) -> None:
    s = fsel(f"metadata.name{op}web")
    assert s.keys == frozenset({"metadata.name"})
    assert s.matches({"metadata.name": "web"})
    assert not s.matches({"metadata.name": "db"})
    assert not s.matches({})


def test_field_not_equals_and_missing_field_is_empty_string() -> None:
    s = fsel("spec.nodeName!=node-1")
    assert s.matches({"spec.nodeName": "node-2"})
    assert s.matches({})
    assert not s.matches({"spec.nodeName": "node-1"})
    assert fsel("spec.nodeName=").matches({})
    assert not fsel("spec.nodeName!=").matches({})


def test_field_and() -> None:
    s = fsel("metadata.namespace=default,status.phase!=Succeeded,spec.nodeName=n1")
    assert s.keys == frozenset({"metadata.namespace", "status.phase", "spec.nodeName"})
    fields = {"metadata.namespace": "default", "status.phase": "Running", "spec.nodeName": "n1"}
    assert s.matches(fields)
    assert not s.matches({**fields, "status.phase": "Succeeded"})
    assert s.requires_exact_match("spec.nodeName") == "n1"
    assert s.requires_exact_match("status.phase") is None


def test_field_empty() -> None:
    for text in ("", ",", ",,"):
        s = fsel(text)
        assert s.empty()
        assert s.keys == frozenset()
        assert s.matches({})
    assert not fsel("metadata.name=x").empty()


def test_field_escapes() -> None:
    s = fsel(r"metadata.name=a\,b\=c\\d,status.phase=x")
    assert s.matches({"metadata.name": "a,b=c\\d", "status.phase": "x"})
    assert fsel("metadata.name=a!b").matches({"metadata.name": "a!b"})
    assert fsel(r"metadata.name=a!\=b").matches({"metadata.name": "a!=b"})  # the op is the first '='
    assert str(fsel(r"metadata.name=a\,b")) == r"metadata.name=a\,b"


def test_field_not_equals_wins_over_a_later_equals() -> None:
    s = fsel(r"status.phase!=a\=b")
    assert s.matches({"status.phase": "x"})
    assert not s.matches({"status.phase": "a=b"})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
        ("a=1,junk", "invalid selector: 'a=1,junk'; can't understand 'junk'"),
        (r"metadata.name=a\x", r"invalid field selector: invalid escape sequence: \x"),
        ("metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"),
        ("metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
    ],
)
def test_field_syntax_errors(text: str, message: str) -> None:
    assert field_error(text) == message


def test_unknown_field_builtin_message() -> None:
    assert field_error("spec.foo=x", META) == (
        '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )
    assert field_error("metadata.name=a,spec.foo=x", ("metadata.namespace", "metadata.name")) == (
        '"spec.foo" is not a known field selector: only "metadata.namespace", "metadata.name"'
    )


def test_unknown_field_custom_resource_message() -> None:
    assert field_error("spec.foo=x", META, builtin=False) == "field label not supported: spec.foo"


def test_syntax_errors_win_over_unknown_fields() -> None:
    assert field_error("spec.foo=x,bad", META).startswith("invalid selector:")


def test_field_whitespace_is_part_of_the_name() -> None:
    assert (
        field_error("metadata.name = x", META, builtin=False) == "field label not supported: metadata.name "
    )


# --- field_values --------------------------------------------------------------------------


def test_field_values_nested_paths() -> None:
    event = {
        "type": "Warning",
        "metadata": {"name": "e1", "namespace": "default"},
        "involvedObject": {"uid": "123", "kind": "Pod"},
        "spec": {"unschedulable": True, "replicas": 3, "paused": False, "ratio": 2.0},
        "status": None,
    }
    names = (
        "type",
        "metadata.name",
        "involvedObject.uid",
        "spec.unschedulable",
        "spec.replicas",
        "spec.paused",
        "spec.ratio",
        "spec.nodeName",
        "status.phase",
        "type.deeper",
    )
    assert field_values(event, names) == {
        "type": "Warning",
        "metadata.name": "e1",
        "involvedObject.uid": "123",
        "spec.unschedulable": "true",
        "spec.replicas": "3",
        "spec.paused": "false",
        "spec.ratio": "2",
        "spec.nodeName": "",
        "status.phase": "",
        "type.deeper": "",
    }


def test_field_selector_matches_object() -> None:
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1"},
        "status": {"phase": "Running"},
    }
    assert fsel("spec.nodeName=n1,status.phase!=Failed").matches_object(pod)
    assert not fsel("spec.nodeName=n2").matches_object(pod)
    assert fsel("").matches_object(pod)
