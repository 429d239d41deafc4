"""Taints/tolerations, node selectors, required node affinity and label selectors (Kubernetes semantics)."""

from __future__ import annotations

from typing import Any

import pytest

from kube_api.affinity import RequiredNodeAffinity, node_fields, node_selector_map_matches, node_selector_matches
from kube_api.selectors import compile_label_selector, label_selector_matches
from kube_api.tolerations import (
    UNSCHEDULABLE_TAINT,
    find_untolerated_taint,
    get_matching_tolerations,
    node_tolerated,
    tolerates,
    tolerates_all,
    tolerations_tolerate_taint,
)
from kube_api.validation import is_qualified_name, is_valid_label_value

NO_SCHEDULE = {"key": "key1", "value": "value1", "effect": "NoSchedule"}
NO_EXECUTE = {"key": "key1", "value": "value1", "effect": "NoExecute"}


@pytest.mark.parametrize(("toleration", "taint", "expected"), [
    # Equal (explicit or default) compares key, value and effect
    ({"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoSchedule"}, NO_SCHEDULE, True),
    ({"key": "key1", "value": "value1", "effect": "NoSchedule"}, NO_SCHEDULE, True),
    ({"key": "key1", "operator": "Equal", "value": "other", "effect": "NoSchedule"}, NO_SCHEDULE, False),
    ({"key": "key2", "operator": "Equal", "value": "value1"}, NO_SCHEDULE, False),
    ({"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoExecute"}, NO_SCHEDULE, False),
    # an empty effect matches every effect
    ({"key": "key1", "operator": "Equal", "value": "value1"}, NO_SCHEDULE, True),
    ({"key": "key1", "operator": "Equal", "value": "value1"}, NO_EXECUTE, True),
    # Exists ignores the value
    ({"key": "key1", "operator": "Exists"}, NO_SCHEDULE, True),
    ({"key": "key1", "operator": "Exists", "effect": "NoExecute"}, NO_SCHEDULE, False),
    # an empty key with Exists tolerates everything
    ({"operator": "Exists"}, NO_SCHEDULE, True),
    ({"operator": "Exists"}, {"key": "anything", "effect": "PreferNoSchedule"}, True),
    ({"operator": "Exists", "effect": "NoSchedule"}, NO_EXECUTE, False),
    # an empty key with Equal matches any key but compares values
    ({"operator": "Equal", "value": "value1"}, NO_SCHEDULE, True),
    ({"operator": "Equal", "value": "x"}, NO_SCHEDULE, False),
    # empty values on both sides
    ({"key": "key1"}, {"key": "key1", "effect": "NoSchedule"}, True),
    # comparison operators are disabled; unknown operators never match
    ({"key": "key1", "operator": "Gt", "value": "0"}, {"key": "key1", "value": "5", "effect": "NoSchedule"}, False),
    ({"key": "key1", "operator": "Lt", "value": "9"}, {"key": "key1", "value": "5", "effect": "NoSchedule"}, False),
    ({"key": "key1", "operator": "Bogus", "value": "value1"}, NO_SCHEDULE, False),
])
def test_tolerates(toleration: dict[str, Any], taint: dict[str, Any], expected: bool) -> None:
    assert tolerates(toleration, taint) is expected


def test_tolerations_tolerate_taint() -> None:
    assert not tolerations_tolerate_taint(None, NO_SCHEDULE)
    assert not tolerations_tolerate_taint([], NO_SCHEDULE)
    assert tolerations_tolerate_taint([{"key": "x", "operator": "Exists"}, {"key": "key1", "operator": "Exists"}],
                                      NO_SCHEDULE)


def test_find_untolerated_taint_filters_effects() -> None:
    prefer = {"key": "p", "effect": "PreferNoSchedule"}
    taints = [prefer, NO_SCHEDULE, {"key": "k2", "effect": "NoExecute"}]
    tolerations = [{"key": "key1", "operator": "Exists"}]
    # PreferNoSchedule is ignored by default (scheduling filters)
    assert find_untolerated_taint(taints, tolerations) == {"key": "k2", "effect": "NoExecute"}
    assert not tolerates_all(tolerations, taints)
    assert tolerates_all([*tolerations, {"key": "k2", "operator": "Exists"}], taints)
    # effects=None considers every taint
    assert find_untolerated_taint(taints, tolerations, None) == prefer
    assert find_untolerated_taint(taints, tolerations, {"NoSchedule"}) is None
    assert tolerates_all(None, None)
    assert tolerates_all([], [prefer])


def test_get_matching_tolerations() -> None:
    t1 = {"key": "key1", "operator": "Exists"}
    t2 = {"key": "key2", "operator": "Exists"}
    assert get_matching_tolerations([], [t1]) == (True, [])
    assert get_matching_tolerations([NO_SCHEDULE], []) == (False, [])
    assert get_matching_tolerations([NO_SCHEDULE, {"key": "key2", "effect": "NoExecute"}], [t2, t1]) == (True, [t1, t2])
    assert get_matching_tolerations([NO_SCHEDULE, {"key": "key3", "effect": "NoExecute"}], [t1, t2]) == (False, [])


def test_node_tolerated_cordon_and_taints() -> None:
    cordoned = {"spec": {"unschedulable": True}}
    assert not node_tolerated(cordoned, [])
    assert node_tolerated(cordoned, [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                      "effect": "NoSchedule"}])
    assert node_tolerated(cordoned, [{"operator": "Exists"}])
    assert not node_tolerated(cordoned, [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                          "effect": "NoExecute"}])
    assert UNSCHEDULABLE_TAINT == {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    tainted = {"spec": {"taints": [NO_EXECUTE, {"key": "soft", "effect": "PreferNoSchedule"}]}}
    assert not node_tolerated(tainted, [])
    assert node_tolerated(tainted, [{"key": "key1", "value": "value1"}])
    assert node_tolerated({}, None)


# --------------------------------------------------------------------------------------------------
# node selectors and node affinity

LABELS = {"a": "3", "b": "2", "zone": "z1", "gpu": "true", "neg": "-5", "text": "abc"}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(("requirement", "expected"), [
    (expr("zone", "In", "z1", "z2"), True),
    (expr("zone", "In", "z3"), False),
    (expr("missing", "In", "z1"), False),
    (expr("zone", "NotIn", "z3"), True),
    (expr("zone", "NotIn", "z1"), False),
    (expr("missing", "NotIn", "z1"), True),
    (expr("gpu", "Exists"), True),
    (expr("missing", "Exists"), False),
    (expr("gpu", "DoesNotExist"), False),
    (expr("missing", "DoesNotExist"), True),
    (expr("a", "Gt", "0"), True),
    (expr("a", "Gt", "3"), False),
    (expr("a", "Lt", "4"), True),
    (expr("a", "Lt", "3"), False),
    (expr("neg", "Lt", "0"), True),
    (expr("text", "Gt", "0"), False),  # label value not an integer
    (expr("missing", "Gt", "0"), False),
    (expr("missing", "Lt", "0"), False),
])
def test_node_selector_operators(requirement: dict[str, Any], expected: bool) -> None:
    terms = [{"matchExpressions": [requirement]}]
    assert node_selector_matches(LABELS, {"metadata.name": "n1"}, terms) is expected


@pytest.mark.parametrize("requirement", [
    expr("zone", "In"),                 # In needs values
    expr("zone", "NotIn"),
    expr("zone", "Exists", "z1"),       # Exists takes none
    expr("zone", "DoesNotExist", "z1"),
    expr("a", "Gt"),                    # Gt/Lt need exactly one integer
    expr("a", "Gt", "1", "2"),
    expr("a", "Gt", "x"),
    expr("a", "Lt", "1.5"),
    expr("a", "Gt", "-1"),              # "-1" is not a valid label value
    expr("zone", "Equals", "z1"),       # not a node selector operator
    expr("bad key!", "Exists"),
    expr("zone", "In", "bad value!"),
])
def test_invalid_requirement_fails_its_term_only(requirement: dict[str, Any]) -> None:
    invalid = {"matchExpressions": [requirement]}
    valid = {"matchExpressions": [expr("gpu", "Exists")]}
    assert not node_selector_matches(LABELS, {}, [invalid])
    assert node_selector_matches(LABELS, {}, [invalid, valid])
    assert node_selector_matches(LABELS, {}, [valid, invalid])


def test_terms_are_ored_and_expressions_anded() -> None:
    both = {"matchExpressions": [expr("zone", "In", "z1"), expr("a", "Gt", "5")]}
    assert not node_selector_matches(LABELS, {}, [both])
    other = {"matchExpressions": [expr("b", "In", "2")]}
    assert node_selector_matches(LABELS, {}, [both, other])


def test_empty_terms_match_nothing() -> None:
    assert not node_selector_matches(LABELS, {}, [])
    assert not node_selector_matches(LABELS, {}, None)
    assert not node_selector_matches(LABELS, {}, [{}])
    assert not node_selector_matches(LABELS, {}, [{"matchExpressions": []}])


def test_match_fields_on_metadata_name() -> None:
    fields = {"metadata.name": "node-1"}
    assert node_selector_matches({}, fields, [{"matchFields": [expr("metadata.name", "In", "node-1")]}])
    assert not node_selector_matches({}, fields, [{"matchFields": [expr("metadata.name", "In", "node-2")]}])
    assert node_selector_matches({}, fields, [{"matchFields": [expr("metadata.name", "NotIn", "node-2")]}])
    assert not node_selector_matches({}, fields, [{"matchFields": [expr("metadata.name", "NotIn", "node-1")]}])
    # matchFields needs In/NotIn with exactly one value
    assert not node_selector_matches({}, fields, [{"matchFields": [expr("metadata.name", "In", "a", "b")]}])
    assert not node_selector_matches({}, fields, [{"matchFields": [expr("metadata.name", "Exists")]}])
    # combined with expressions in one term: both must hold
    term = {"matchExpressions": [expr("zone", "In", "z1")], "matchFields": [expr("metadata.name", "In", "node-1")]}
    assert node_selector_matches(LABELS, fields, [term])
    assert not node_selector_matches({"zone": "z2"}, fields, [term])
    # a node without fields (no name) is not checked against matchFields, as in Kubernetes
    assert node_selector_matches({}, {}, [{"matchFields": [expr("metadata.name", "In", "node-1")]}])
    assert node_fields({"metadata": {"name": "n"}}) == {"metadata.name": "n"}
    assert node_fields({}) == {}


def test_node_selector_map() -> None:
    assert node_selector_map_matches(None, {})
    assert node_selector_map_matches({}, None)
    assert node_selector_map_matches({"a": "3"}, LABELS)
    assert not node_selector_map_matches({"a": "1"}, LABELS)
    assert not node_selector_map_matches({"missing": ""}, LABELS)
    assert node_selector_map_matches({"e": ""}, {"e": ""})


def test_required_node_affinity_combines_selector_and_affinity() -> None:
    node = {"metadata": {"name": "machine2", "labels": {"a": "3", "b": "2"}}}
    assert RequiredNodeAffinity().is_empty
    assert RequiredNodeAffinity().matches(node)
    assert RequiredNodeAffinity({"a": "3"}).matches(node)
    assert not RequiredNodeAffinity({"a": "1"}).matches(node)
    gt = {"nodeSelectorTerms": [{"matchExpressions": [expr("a", "Gt", "0")]}]}
    assert RequiredNodeAffinity(None, gt).matches(node)
    assert not RequiredNodeAffinity({"b": "9"}, gt).matches(node)
    assert not RequiredNodeAffinity(None, {"nodeSelectorTerms": []}).matches(node)
    by_name = {"nodeSelectorTerms": [{"matchFields": [expr("metadata.name", "In", "machine2")]}]}
    assert RequiredNodeAffinity(None, by_name).matches(node)
    spec = {"nodeSelector": {"a": "3"}, "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": gt}}}
    assert RequiredNodeAffinity.from_pod_spec(spec).matches(node)
    assert RequiredNodeAffinity.from_pod_spec({}).is_empty


def test_label_syntax() -> None:
    """The one syntax rule (apimachinery's): no message means valid."""
    assert is_qualified_name("app") == []
    assert is_qualified_name("example.com/app-name_1.x") == []
    assert is_qualified_name("Example.com/app")
    assert is_qualified_name("a/b/c")
    assert is_qualified_name("")
    assert is_qualified_name("x" * 64)
    assert is_valid_label_value("") == []
    assert is_valid_label_value("v1.2_3-a") == []
    assert is_valid_label_value("-v")
    assert is_valid_label_value("x" * 64)


def test_label_selector() -> None:
    labels = {"app": "web", "tier": "front"}
    assert label_selector_matches({}, labels)
    assert not label_selector_matches(None, labels)
    assert label_selector_matches({"matchLabels": {"app": "web"}}, labels)
    assert not label_selector_matches({"matchLabels": {"app": "db"}}, labels)
    selector = {"matchLabels": {"app": "web"},
                "matchExpressions": [expr("tier", "In", "front", "back"), expr("legacy", "DoesNotExist")]}
    assert label_selector_matches(selector, labels)
    assert not label_selector_matches(selector, {**labels, "legacy": "1"})
    assert label_selector_matches({"matchExpressions": [expr("tier", "NotIn", "back")]}, labels)
    assert label_selector_matches({"matchExpressions": [expr("tier", "Exists")]}, labels)
    with pytest.raises(ValueError, match="not a valid label selector operator"):
        compile_label_selector({"matchExpressions": [expr("a", "Gt", "1")]})
    with pytest.raises(ValueError):
        compile_label_selector({"matchExpressions": [expr("a", "In")]})
