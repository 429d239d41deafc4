"""Label selectors in the string form (``labels.Parse``): kube's syntax, semantics and error messages."""

from __future__ import annotations

import pytest

from kube_api.selectors import LabelSelector, parse_label_selector

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
    with pytest.raises(ValueError) as info:
        LabelSelector.parse(text)
    return str(info.value)


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
        ("Bad Key=1", "unable to parse requirement: found 'Key', expected: in, notin, =, ==, !=, gt, lt"),
        ("app=bad value", "found 'value', expected: ',' or 'end of string'"),
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


# --- parse_label_selector: the predicate the estimator's custom kinds use -------------------

_LABEL_SETS = [{}, {"app": "web"}, {"app": "web", "tier": "db"}, {"app": "api", "n": "5"}, {"canary": ""},
               {"app": "web", "component": "taskmanager"}]


@pytest.mark.parametrize(("text", "selected"), [
    ("app=web,component=taskmanager", [False, False, False, False, False, True]),
    ("app in (web, api),!canary", [False, True, True, True, False, True]),
    ("app!=web", [True, False, False, True, True, False]),
    ("n>3", [False, False, False, True, False, False]),
    ("canary=", [False, False, False, False, True, False]),
    ("example.com/team=blue", [False] * 6),
    ("", [True] * 6),
])
def test_parse_label_selector_is_a_predicate_over_label_maps(text: str, selected: list[bool]) -> None:
    predicate = parse_label_selector(text)
    assert [predicate(labels) for labels in _LABEL_SETS] == selected
