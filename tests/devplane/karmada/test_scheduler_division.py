"""Replica division: every row of Karmada's division, assignment, Webster and Dispenser tests
(commit f8fdd02: ``pkg/scheduler/core/division_algorithm_test.go``, ``assignment_test.go``,
``pkg/util/helper/webstermethod_test.go``, ``binding_test.go``); the overflow-affinity rows of
``pkg/scheduler/core/common_test.go`` are not simulated."""

from __future__ import annotations

from typing import Any

import pytest

from devplane.karmada.scheduler.algorithm import select_best_clusters
from devplane.karmada.scheduler.division import (
    Candidate,
    Party,
    SchedulingError,
    UnschedulableError,
    WrappedError,
    assign_duplicated,
    assign_dynamic,
    assign_replicas,
    assign_static,
    attach_zero_replicas_clusters,
    dispense,
    divide,
    find_error,
    merge,
    spread_replicas_by_target_clusters,
    static_weights,
    uid_tiebreak,
    webster,
)
from karmada_api.names import fnv32a

DYNAMIC, AGGREGATED = "DynamicWeight", "Aggregated"
EVEN_UID = "4858ca61-3ff8-4095-8267-f3d059d8074c"
ODD_UID = "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"


def cluster(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, **({"labels": labels} if labels else {})}, "spec": {"syncMode": "Push"}}


def members(*numbers: int) -> list[dict[str, Any]]:
    return [cluster(f"member{n}") for n in numbers]


def rule(name: str, weight: int) -> dict[str, Any]:
    return {"targetCluster": {"clusterNames": [name]}, "weight": weight}


def weighted_placement(rules: list[dict[str, Any]] | None) -> dict[str, Any]:
    strategy: dict[str, Any] = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}
    if rules is not None:
        strategy["weightPreference"] = {"staticWeightList": rules}
    return {"replicaScheduling": strategy}


def m(n: int) -> str:
    return f"member{n}"


# ----------------------------------------------------------------------------- division_algorithm_test.go


@pytest.mark.parametrize(("case", "strategy", "available", "expected"), [
    ("dynamic weight 18:12:6", DYNAMIC, [(m(1), 18), (m(2), 12), (m(3), 6)], {m(1): 6, m(2): 4, m(3): 2}),
    ("dynamic weight 20:12:6", DYNAMIC, [(m(1), 20), (m(2), 12), (m(3), 6)], {m(1): 6, m(2): 4, m(3): 2}),
    ("dynamic weight 6:12:6", DYNAMIC, [(m(1), 6), (m(2), 12), (m(3), 6)], {m(1): 3, m(2): 6, m(3): 3}),
    ("aggregated 12:6:6", AGGREGATED, [(m(2), 12), (m(1), 6), (m(3), 6)], {m(2): 12}),
    ("aggregated 6:6:6", AGGREGATED, [(m(1), 6), (m(2), 6), (m(3), 6)], {m(1): 6, m(2): 6}),
])
def test_dynamic_divide_replicas(case: str, strategy: str, available: list[tuple[str, int]],
                                 expected: dict[str, int]) -> None:
    result = divide(strategy, available, 12, None)
    assert {n: r for n, r in result if r} == expected, case


# ----------------------------------------------------------------------------- assignment_test.go: static weight


@pytest.mark.parametrize(("case", "names", "rules", "replicas", "expected"), [
    ("replica 12, weight 3:2:1", [1, 2, 3], [rule(m(1), 3), rule(m(2), 2), rule(m(3), 1)], 12,
     {m(1): 6, m(2): 4, m(3): 2}),
    ("replica 12, default weight", [1, 2, 3], None, 12, {m(1): 4, m(2): 4, m(3): 4}),
    ("replica 13, weight 3:2:1", [1, 2, 3], [rule(m(1), 3), rule(m(2), 2), rule(m(3), 1)], 13,
     {m(1): 7, m(2): 4, m(3): 2}),
    ("replica 14, weight 3:2:1", [1, 2, 3], [rule(m(1), 3), rule(m(2), 2), rule(m(3), 1)], 14,
     {m(1): 7, m(2): 5, m(3): 2}),
    ("insufficient replica assignment should get 0 replica", [1, 2], [rule(m(1), 1), rule(m(2), 1)], 0,
     {m(1): 0, m(2): 0}),
    ("selected cluster without weight should be ignored", [1, 2], [rule(m(1), 1)], 2, {m(1): 2}),
    ("cluster with multiple weights", [1, 2], [rule(m(1), 1), rule(m(2), 1), rule(m(1), 2)], 3,
     {m(1): 2, m(2): 1}),
])
def test_assign_by_static_weight_strategy(case: str, names: list[int], rules: list[dict[str, Any]] | None,
                                          replicas: int, expected: dict[str, int]) -> None:
    clusters = members(*names)
    weights = static_weights(clusters, weighted_placement(rules))
    result = assign_static([c["metadata"]["name"] for c in clusters], weights, replicas)
    assert dict(result) == expected, case


# ----------------------------------------------------------------------------- assignment_test.go: Test_dynamicScale


def candidates(*allocatable: int, names: list[int] | None = None) -> list[tuple[str, int]]:
    return [(m(n), a) for n, a in zip(names or range(1, len(allocatable) + 1), allocatable, strict=True)]


@pytest.mark.parametrize(("case", "strategy", "cand", "previous", "replicas", "expected"), [
    ("replica 12 -> 6, dynamic weighted 1:1:1", DYNAMIC, candidates(1, 1, 1),
     [(m(1), 2), (m(2), 4), (m(3), 6)], 6, {m(1): 1, m(2): 2, m(3): 3}),
    ("replica 12 -> 24, dynamic weighted 10:10:10", DYNAMIC, candidates(10, 10, 10),
     [(m(1), 2), (m(2), 4), (m(3), 6)], 24, {m(1): 6, m(2): 8, m(3): 10}),
    ("replica 12 -> 24, dynamic weighted 1:1:1", DYNAMIC, candidates(1, 1, 1),
     [(m(1), 2), (m(2), 4), (m(3), 6)], 24, None),
    ("replica 12 -> 6, aggregated 1:1:1", AGGREGATED, candidates(1, 1, 1),
     [(m(1), 4), (m(2), 8)], 6, {m(2): 6}),
    ("replica 12 -> 8, aggregated 100:100", AGGREGATED, candidates(100, 100),
     [(m(1), 4), (m(2), 8)], 8, {m(2): 8}),
    ("replica 12 -> 24, aggregated 4:6:8", AGGREGATED, candidates(4, 6, 8),
     [(m(1), 4), (m(2), 8)], 24, {m(1): 7, m(2): 12, m(3): 5}),
    ("replica 12 -> 24, aggregated 6:6:20", AGGREGATED, candidates(6, 6, 20),
     [(m(1), 4), (m(2), 8)], 24, {m(1): 10, m(2): 14}),
    ("replica 12 -> 24, aggregated 1:1:1", AGGREGATED, candidates(1, 1, 1),
     [(m(1), 4), (m(2), 8)], 24, None),
    ("replica 12 -> 24, aggregated 4:8:12, with cluster2 disappeared and cluster4 appeared", AGGREGATED,
     candidates(4, 8, 12, names=[1, 3, 4]), [(m(1), 4), (m(2), 8)], 24, {m(1): 7, m(3): 7, m(4): 10}),
])
def test_dynamic_scale(case: str, strategy: str, *, cand: list[tuple[str, int]], previous: list[tuple[str, int]],
                       replicas: int, expected: dict[str, int] | None) -> None:
    if expected is None:
        with pytest.raises(WrappedError) as caught:
            assign_dynamic(strategy, cand, replicas, previous)
        assert find_error(caught.value, UnschedulableError) is not None
        assert str(caught.value) == "failed to scale up: Clusters available replicas 3 are not enough to schedule."
        return
    assert dict(assign_dynamic(strategy, cand, replicas, previous)) == expected, case


@pytest.mark.parametrize(("case", "strategy", "cand", "previous", "replicas", "expected"), [
    ("replica 12, dynamic weight 6:8:10", DYNAMIC, candidates(6, 8, 10), [], 12, {m(1): 3, m(2): 4, m(3): 5}),
    ("replica 12, dynamic weight 8:8:10", DYNAMIC, candidates(8, 8, 10), [], 12, {m(1): 4, m(2): 4, m(3): 4}),
    ("replica 12, dynamic weight 3:3:3", DYNAMIC, candidates(3, 3, 3), [], 12, None),
    ("replica 12, aggregated 6:8:10", AGGREGATED, candidates(6, 8, 10), [], 12, {m(2): 5, m(3): 7}),
    ("replica 12, aggregated 12:8:10", AGGREGATED, candidates(12, 8, 10), [], 12, {m(1): 12}),
    ("replica 12, aggregated 3:3:3", AGGREGATED, candidates(3, 3, 3), [], 12, None),
    ("replica 12, dynamic weight 3:3, with original cluster replicas 6:6, cluster3 gone, cluster2 new", DYNAMIC,
     candidates(3, 3), [(m(1), 6), (m(3), 6)], 12, {m(1): 9, m(2): 3}),
])
def test_dynamic_scale_up(case: str, strategy: str, *, cand: list[tuple[str, int]], previous: list[tuple[str, int]],
                          replicas: int, expected: dict[str, int] | None) -> None:
    if expected is None:
        with pytest.raises(WrappedError) as caught:
            assign_dynamic(strategy, cand, replicas, previous)
        assert find_error(caught.value, UnschedulableError) is not None
        assert str(caught.value).startswith("failed to scale up: Clusters available replicas ")
        return
    assert dict(assign_dynamic(strategy, cand, replicas, previous)) == expected, case


def test_scale_down_to_zero_removes_every_cluster() -> None:
    result = assign_dynamic(DYNAMIC, candidates(1, 1), 0, [(m(1), 2), (m(2), 1)])
    assert result == []


def test_fresh_scale_error_text() -> None:
    with pytest.raises(WrappedError) as caught:
        assign_dynamic(DYNAMIC, candidates(1, 1), 5, [(m(1), 1)], fresh=True)
    assert str(caught.value) == "failed to do fresh scale: Clusters available replicas 3 are not enough to schedule."
    assert find_error(caught.value, UnschedulableError) is not None


def test_fresh_ignores_previous_distribution() -> None:
    # Steady keeps 2:2; Fresh re-divides 4 by (free + own) = 4:32
    assert dict(assign_dynamic(DYNAMIC, candidates(2, 30), 4, [(m(1), 2), (m(2), 2)])) == {m(1): 2, m(2): 2}
    assert dict(assign_dynamic(DYNAMIC, candidates(2, 30), 4, [(m(1), 2), (m(2), 2)], fresh=True)) == {m(2): 4}


def test_aggregated_fresh_has_no_preference_for_previous_clusters() -> None:
    # Steady scale up prefers the cluster already used; Fresh ranks by capacity only
    steady = assign_dynamic(AGGREGATED, candidates(10, 20), 6, [(m(1), 2)])
    fresh = assign_dynamic(AGGREGATED, candidates(10, 20), 6, [(m(1), 2)], fresh=True)
    assert dict(steady) == {m(1): 6}
    assert dict(fresh) == {m(2): 6}


# ----------------------------------------------------------------------------- assignment_test.go: duplicated


@pytest.mark.parametrize(("names", "replicas", "expected"), [
    ([m(1), m(2)], 2, [(m(1), 2), (m(2), 2)]),
    ([], 2, []),
    ([m(1), m(2)], 0, [(m(1), 0), (m(2), 0)]),
])
def test_assign_by_duplicated_strategy(names: list[str], replicas: int, expected: list[tuple[str, int]]) -> None:
    assert assign_duplicated(names, replicas) == expected


def dynamic_spec(replicas: int, clusters: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return {"replicas": replicas, "replicaRequirements": {"resourceRequest": {}},
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "namespace": "default"},
            "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                "replicaDivisionPreference": "Weighted",
                                                "weightPreference": {"dynamicWeight": "AvailableReplicas"}}},
            "clusters": clusters or [], **extra}


def test_assign_by_dynamic_strategy_unschedulable_error_preserved() -> None:
    with pytest.raises(SchedulingError) as caught:
        assign_replicas([Candidate(cluster(m(1)), allocatable=3)], dynamic_spec(10), {})
    assert find_error(caught.value, UnschedulableError) is not None
    assert str(caught.value) == "failed to scale up: Clusters available replicas 3 are not enough to schedule."


# ----------------------------------------------------------------------------- generic_scheduler_test.go


@pytest.mark.parametrize(("replicas", "weights", "expected"), [
    (3, [1, 1], [2, 1]),
    (3, [1, 1, 1], [1, 1, 1]),
    (5, [1, 1, 1], [2, 2, 1]),
    (7, [2, 1, 1, 1], [3, 2, 1, 1]),
    (8, [2, 1, 1, 1], [3, 2, 2, 1]),
    (9, [2, 1, 1, 1], [3, 2, 2, 2]),
    (8, [2, 1, 1, 1], [3, 2, 2, 1]),
    (6, [1, 1, 1, 1], [2, 2, 1, 1]),
    (6, [2, 1, 1, 1], [3, 1, 1, 1]),
    (5, [1, 1, 1], [2, 2, 1]),
    (5, [1, 1, 1, 1], [2, 1, 1, 1]),
    (6, [1, 1, 1, 1], [2, 2, 1, 1]),
    (6, [1, 1, 1], [2, 2, 2]),
])
def test_assign_replicas_static_weight_exact_order(replicas: int, weights: list[int], expected: list[int]) -> None:
    names = [m(i + 1) for i in range(len(weights))]
    spec = {"replicas": replicas, "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
            "placement": weighted_placement([rule(n, w) for n, w in zip(names, weights, strict=True)])}
    result = assign_replicas([Candidate(cluster(n)) for n in names], spec, {})
    assert result == [{"name": n, "replicas": r} for n, r in zip(names, expected, strict=True) if r]


# ----------------------------------------------------------------------------- common_test.go


def test_assign_replicas_single_cluster_weighted_without_preference() -> None:
    spec = {"replicas": 3, "placement": weighted_placement(None), "resource": {}}
    assert assign_replicas([Candidate(cluster(m(1)))], spec, {}) == [{"name": m(1), "replicas": 3}]


def test_assign_replicas_no_clusters() -> None:
    with pytest.raises(SchedulingError, match=r"^no clusters available to schedule$"):
        assign_replicas([], {"replicas": 3, "placement": weighted_placement(None)}, {})


def test_assign_replicas_non_workload() -> None:
    spec = {"replicas": 0, "placement": weighted_placement(None)}
    assert assign_replicas([Candidate(cluster(m(1))), Candidate(cluster(m(2)))], spec, {}) == [
        {"name": m(1)}, {"name": m(2)}]


def test_assign_replicas_unsupported_type() -> None:
    spec = {"replicas": 3, "placement": {"replicaScheduling": {"replicaSchedulingType": "UnsupportedType"}}}
    with pytest.raises(SchedulingError) as caught:
        assign_replicas([Candidate(cluster(m(1)))], spec, {})
    assert "unsupported replica scheduling strategy" in str(caught.value)
    assert str(caught.value) == ("unsupported replica scheduling strategy, replicaSchedulingType: UnsupportedType, "
                                 "replicaDivisionPreference: , please try another scheduling strategy")


def test_select_clusters_without_constraints_selects_all() -> None:
    cands = [Candidate(cluster(f"cluster{i}"), score=s) for i, s in ((1, 10), (2, 20), (3, 15))]
    assert select_best_clusters(cands, {}, 0) == cands


def test_select_clusters_by_cluster_spread_constraint() -> None:
    cands = sorted([Candidate(cluster(f"cluster{i}"), score=s) for i, s in ((1, 10), (2, 20), (3, 15))],
                   key=lambda c: -c.score)
    placement = {"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1}]}
    assert [c.name for c in select_best_clusters(cands, placement, 0)] == ["cluster2"]


# ----------------------------------------------------------------------------- util_test.go


def test_attach_zero_replicas_cluster() -> None:
    assert attach_zero_replicas_clusters([m(1), m(2), m(3)], [(m(1), 1), (m(2), 2)]) == [
        (m(1), 1), (m(2), 2), (m(3), 0)]


# ----------------------------------------------------------------------------- webstermethod_test.go


def seats(parties: list[Party] | None) -> dict[str, int] | None:
    return None if parties is None else {p.name: p.seats for p in parties}


WIKIPEDIA = {"A": 100000, "B": 80000, "C": 30000, "D": 20000}


@pytest.mark.parametrize(("k", "expected"), [
    (1, [1, 0, 0, 0]), (2, [1, 1, 0, 0]), (3, [2, 1, 0, 0]), (4, [2, 1, 1, 0]),
    (5, [2, 2, 1, 0]), (6, [2, 2, 1, 1]), (7, [3, 2, 1, 1]), (8, [3, 3, 1, 1]),
])
def test_webster_wikipedia_rounds(k: int, expected: list[int]) -> None:
    assert seats(webster(k, WIKIPEDIA)) == dict(zip("ABCD", expected, strict=True))


def by_name_asc(a: Party, b: Party) -> bool:
    return a.name < b.name


def by_name_desc(a: Party, b: Party) -> bool:
    return a.name > b.name


@pytest.mark.parametrize(("case", "n", "votes", "initial", "tiebreak", "expected"), [
    ("example", 4, {"Alpha": 1200, "Beta": 900, "Gamma": 400}, None, None, {"Alpha": 2, "Beta": 1, "Gamma": 1}),
    ("empty votes", 1, {}, None, None, None),
    ("seats 0", 0, {"A": 100, "B": 200}, None, None, {"A": 0, "B": 0}),
    ("both empty", 0, {}, None, None, None),
    ("tie by seats", 1, {"A": 3, "B": 1}, {"A": 1, "B": 0}, None, {"A": 1, "B": 1}),
    ("tie by name", 1, {"A": 1, "B": 1}, None, None, {"A": 1, "B": 0}),
    ("custom tiebreak name asc", 1, {"A": 1, "B": 1}, None, by_name_asc, {"A": 1, "B": 0}),
    ("custom tiebreak name desc", 1, {"A": 1, "B": 1}, None, by_name_desc, {"A": 0, "B": 1}),
    ("new parties join", 2, {"NewParty1": 1, "NewParty2": 1}, {"OldParty": 0}, None,
     {"NewParty1": 1, "NewParty2": 1, "OldParty": 0}),
    ("new vs old compete", 2, {"OldParty": 1, "NewParty": 1}, {"OldParty": 1}, None, {"NewParty": 2, "OldParty": 1}),
    ("initial-only party", 2, {"PartyA": 100}, {"PartyB": 3}, None, {"PartyA": 2, "PartyB": 3}),
])
def test_allocate_webster_seats(case: str, n: int, *, votes: dict[str, int], initial: dict[str, int] | None,
                                tiebreak: Any, expected: dict[str, int] | None) -> None:
    result = webster(n, votes, initial, tiebreak)
    assert seats(result) == expected, case
    if result is not None:
        assert [p.name for p in result] == sorted(p.name for p in result)  # sorted by name


def test_webster_initial_only_parties_have_no_votes() -> None:
    result = webster(2, {"NewParty1": 1, "NewParty2": 1}, {"OldParty": 0})
    assert result is not None
    assert {p.name: p.votes for p in result}["OldParty"] == 0


# ----------------------------------------------------------------------------- binding_test.go: Dispenser


def test_uid_parities() -> None:
    assert fnv32a(EVEN_UID.encode()) % 2 == 0
    assert fnv32a(ODD_UID.encode()) % 2 == 1


@pytest.mark.parametrize(("case", "n", "initial", "weights", "uid", "expected"), [
    ("scale up 6", 6, [("A", 1), ("B", 2), ("C", 3)], [("A", 1), ("B", 2), ("C", 3)], "", {"A": 2, "B": 4, "C": 6}),
    ("scale up 3", 3, [("A", 1), ("B", 2), ("C", 3)], [("A", 1), ("B", 2), ("C", 3)], "", {"A": 2, "B": 3, "C": 4}),
    ("scale up 2", 2, [("A", 1), ("B", 2), ("C", 3)], [("A", 1), ("B", 2), ("C", 3)], "", {"A": 1, "B": 3, "C": 4}),
    ("HA 2:1, 1", 1, None, [("A", 2), ("B", 1)], "", {"A": 1, "B": 0}),
    ("HA 2:1, 2", 2, None, [("A", 2), ("B", 1)], "", {"A": 1, "B": 1}),
    ("HA 2:1, 3", 3, None, [("A", 2), ("B", 1)], "", {"A": 2, "B": 1}),
    ("new 5", 5, None, [("A", 170), ("B", 110), ("C", 60)], "", {"A": 2, "B": 2, "C": 1}),
    ("new 6", 6, None, [("A", 170), ("B", 110), ("C", 60)], "", {"A": 3, "B": 2, "C": 1}),
    ("odd uid", 5, None, [("A", 1), ("B", 1)], ODD_UID, {"A": 2, "B": 3}),
    ("even uid", 5, None, [("A", 1), ("B", 1)], EVEN_UID, {"A": 3, "B": 2}),
])
def test_dispenser_allocate_by_weight(case: str, n: int, *, initial: list[tuple[str, int]] | None,
                                      weights: list[tuple[str, int]], uid: str, expected: dict[str, int]) -> None:
    assert dict(dispense(n, initial, weights, uid)) == expected, case


def test_dispenser_zero_seats_and_zero_weights_keep_initial() -> None:
    assert dispense(0, [("A", 1)], [("A", 5)]) == [("A", 1)]
    assert dispense(3, [("A", 1)], [("A", 0)]) == [("A", 1)]


@pytest.mark.parametrize(("total", "clusters", "expected"), [
    (10, [], {}),
    (10, [(m(1), 5)], {m(1): 10}),
    (12, [(m(1), 5), (m(2), 5), (m(3), 5)], {m(1): 4, m(2): 4, m(3): 4}),
    (10, [(m(1), 5), (m(2), 5), (m(3), 5)], {m(1): 4, m(2): 3, m(3): 3}),
    (13, [(m(1), 1), (m(2), 2), (m(3), 3)], {m(1): 2, m(2): 4, m(3): 7}),
])
def test_spread_replicas_by_target_clusters(total: int, clusters: list[tuple[str, int]],
                                            expected: dict[str, int]) -> None:
    assert dict(spread_replicas_by_target_clusters(total, clusters)) == expected


def test_spread_replicas_odd_uid_breaks_ties_the_other_way() -> None:
    result = dict(spread_replicas_by_target_clusters(10, [(m(1), 5), (m(2), 5), (m(3), 5)], uid=ODD_UID))
    assert sorted(result.values()) == [3, 3, 4]
    assert result[m(3)] == 4


def test_uid_tiebreak_prefers_fewer_seats() -> None:
    wins = uid_tiebreak(ODD_UID)
    assert wins(Party("A", 1, 0), Party("B", 1, 1))
    assert wins(Party("B", 1, 0), Party("A", 1, 0))  # odd: larger name first


def test_merge_adds_per_name_then_appends_previous_only() -> None:
    assert merge([("b", 1), ("c", 2)], [("a", 1), ("b", 1)]) == [("a", 1), ("b", 2), ("c", 2)]
    assert merge(None, [("a", 1)]) == [("a", 1)]
    assert merge([("a", 1)], []) == [("a", 1)]
