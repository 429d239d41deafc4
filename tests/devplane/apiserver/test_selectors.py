"""Label and field selectors: kube's syntax, semantics and error messages."""

from __future__ import annotations

import pytest

from devplane.apiserver.errors import StatusError
from devplane.apiserver.selectors import FieldSelector, LabelSelector, field_values
from kube_api.selectors import parse_label_selector

QNAME_REGEX_ERR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
    "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
    "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def sel(text: str) -> LabelSelector:
    return LabelSelector.parse(text)


def parse_error(text: str) -> str:
    with pytest.raises(StatusError) as info:
        LabelSelector.parse(text)
    err = info.value
    assert (err.code, err.reason) == (400, "BadRequest")
    return err.message


# --- label selectors: operators ------------------------------------------------------------


@pytest.mark.parametrize("text", ["app=web", "app==web", "app in (web)", "app in (web,db)"])
def test_equality_and_in_require_the_key(text: str) -> None:
    s = sel(text)
    assert s.matches({"app": "web"})
    assert not s.matches({"app": "cache"})
    assert not s.matches({"other": "web"})
    assert not s.matches(None)


def test_in_matches_any_listed_value() -> None:
    s = sel("tier in (frontend, backend)")
    assert s.matches({"tier": "frontend"})
    assert s.matches({"tier": "backend"})
    assert not s.matches({"tier": "db"})


@pytest.mark.parametrize("text", ["app!=web", "app notin (web)", "app notin (web,db)"])
def test_not_equals_and_notin_match_objects_without_the_key(text: str) -> None:
    s = sel(text)
    assert not s.matches({"app": "web"})
    assert s.matches({"app": "cache"})
    assert s.matches({"other": "x"})
    assert s.matches({})
    assert s.matches(None)


def test_exists_and_does_not_exist() -> None:
    exists, absent = sel("app"), sel("!app")
    assert exists.matches({"app": ""})
    assert not exists.matches({"other": "x"})
    assert not absent.matches({"app": ""})
    assert absent.matches({"other": "x"})
    assert absent.matches(None)


def test_comma_is_and() -> None:
    s = sel("app=web,tier!=db,!legacy,env in (prod,staging),team")
    labels = {"app": "web", "tier": "frontend", "env": "prod", "team": "a"}
    assert s.matches(labels)
    assert not s.matches({**labels, "legacy": "true"})
    assert not s.matches({**labels, "env": "dev"})
    assert not s.matches({k: v for k, v in labels.items() if k != "team"})


def test_double_equals_with_empty_value_matches_empty_label_only() -> None:
    s = sel("n==")
    assert s.matches({"n": ""})
    assert not s.matches({"n": "x"})
    assert not s.matches({})
    assert sel("n=,m").matches({"n": "", "m": "1"})
    assert sel("n!=").matches({})


def test_empty_values_inside_sets() -> None:
    # kube reads "()" and stray commas as the empty value.
    assert sel("n in ()").matches({"n": ""})
    assert not sel("n in ()").matches({"n": "a"})
    s = sel("n in (a,,b)")
    assert s.matches({"n": ""})
    assert s.matches({"n": "b"})
    assert sel("n in (,a)").matches({"n": ""})


def test_keywords_are_values_inside_sets() -> None:
    assert sel("x in (in,notin)").matches({"x": "notin"})


def test_greater_and_less_than() -> None:
    assert sel("replicas>2").matches({"replicas": "3"})
    assert not sel("replicas>2").matches({"replicas": "2"})
    assert not sel("replicas>2").matches({"replicas": "abc"})
    assert not sel("replicas>2").matches({})
    assert sel("replicas<10").matches({"replicas": "9"})
    assert parse_error("n>abc") == (
        'unable to parse requirement: values[0]: Invalid value: "abc": '
        "for 'Gt', 'Lt' operators, the value must be an integer"
    )


def test_prefixed_keys() -> None:
    s = sel("app.kubernetes.io/name=web,karmada.io/managed")
    assert s.matches({"app.kubernetes.io/name": "web", "karmada.io/managed": "true"})


@pytest.mark.parametrize("text", ["", "   ", "\t"])
def test_empty_selector_matches_everything(text: str) -> None:
    s = sel(text)
    assert s.empty()
    assert s.matches(None)
    assert s.matches({"a": "b"})
    assert not sel("a").empty()


def test_whitespace_is_tolerated_around_tokens() -> None:
    s = sel("  app = web ,  tier  notin  ( a ,  b ) ,\t! gone , x   ")
    assert s.matches({"app": "web", "tier": "c", "x": "1"})
    assert not s.matches({"app": "web", "tier": "a", "x": "1"})
    assert str(s) == "app=web,!gone,tier notin (a,b),x"  # sorted by key, like kube's String()


def test_requires_exact_match() -> None:
    s = sel("a=1,b in (2),c in (3,4),d!=5")
    assert s.requires_exact_match("a") == "1"
    assert s.requires_exact_match("b") == "2"
    assert s.requires_exact_match("c") is None
    assert s.requires_exact_match("d") is None
    assert s.requires_exact_match("zzz") is None


# --- label selectors: errors ---------------------------------------------------------------


def test_missing_closing_paren_message() -> None:
    assert parse_error("n in (1,2") == "unable to parse requirement: found '', expected: ',' or ')'"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("n in 1", "unable to parse requirement: found '1' expected: '('"),
        ("n in (1 2)", "unable to parse requirement: found '2', expected: ',' or ')'"),
        ("n in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("n in", "unable to parse requirement: found '' expected: '('"),
        ("n===x", "unable to parse requirement: found '=', expected: identifier"),
        ("n=(", "unable to parse requirement: found '(', expected: identifier"),
        ("n foo", "unable to parse requirement: found 'foo', expected: in, notin, =, ==, !=, gt, lt"),
        ("n (x)", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("! =x", "unable to parse requirement: found '=', expected: identifier"),
        ("!=x", "found '!=', expected: !, identifier, or 'end of string'"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ("a,,b", "found ',', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
    ],
)
def test_syntax_error_messages(text: str, message: str) -> None:
    assert parse_error(text) == message


def test_invalid_key_message() -> None:
    assert (
        parse_error("app:x=y")
        == f'unable to parse requirement: <nil>: Invalid value: "app:x": {QNAME_REGEX_ERR}'
    )
    assert parse_error("a/b/c") == (
        'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name must consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
        "(e.g. 'example.com/MyName')"
    )
    message = parse_error("Bad_Prefix/name")
    assert message.startswith(
        'unable to parse requirement: <nil>: Invalid value: "Bad_Prefix/name": prefix part '
    )
    assert "a lowercase RFC 1123 subdomain" in message
    assert parse_error("x" * 64).endswith("name part must be no more than 63 characters")


def test_invalid_value_message() -> None:
    assert parse_error("app=foo$") == (
        f'unable to parse requirement: values[0][app]: Invalid value: "foo$": {LABEL_VALUE_ERR}'
    )
    too_long = "v" * 64
    assert parse_error(f"app={too_long}") == (
        f'unable to parse requirement: values[0][app]: Invalid value: "{too_long}": '
        "must be no more than 63 characters"
    )
    # Values are validated in sorted order; each bad one is reported.
    assert parse_error("app in (ok,z$,a$)") == (
        "unable to parse requirement: ["
        f'values[0][app]: Invalid value: "a$": {LABEL_VALUE_ERR}, '
        f'values[2][app]: Invalid value: "z$": {LABEL_VALUE_ERR}]'
    )


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


# ----------------------------------------------------------------------------------------------
# kube_api.selectors.parse_label_selector: the components' parser agrees with the API server's

_LABEL_SETS = [{}, {"app": "web"}, {"app": "web", "tier": "db"}, {"app": "api", "n": "5"}, {"canary": ""},
               {"app": "web", "component": "taskmanager"}]


@pytest.mark.parametrize("text", [
    "app=web", "app==web", "app!=web", "app", "!app", "app in (web, api)", "app notin (web)", "n>3", "n<3",
    "app=web,component=taskmanager", "app in (web,api),!canary", " app = web , tier ", "app=", "canary=",
    "example.com/team=blue", "app in ()", "app in (,web)",
])
def test_parse_label_selector_matches_like_the_api_server(text: str) -> None:
    ours, theirs = parse_label_selector(text), sel(text)
    assert [ours(labels) for labels in _LABEL_SETS] == [theirs.matches(labels) for labels in _LABEL_SETS]


@pytest.mark.parametrize("text", ["app=web,,tier", "app in (web", "app=(", "a b", "Bad Key=1", "app=bad value",
                                  "n>x", "-app=1", "app=web,"])
def test_parse_label_selector_rejects_what_the_api_server_rejects(text: str) -> None:
    with pytest.raises(StatusError):
        sel(text)
    with pytest.raises(ValueError):
        parse_label_selector(text)
