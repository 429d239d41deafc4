"""The descheduler's budgets (issue 26): the arithmetic of a budgeted plan, the cool-down letting the held-back
replicas through, the cycle's order and accounting, and the flags' bad input."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.events import EventRecorder
from descheduler.app import budget_error, build_parser, main
from descheduler.budget import CYCLE_BUDGET, WORKLOAD_BUDGET, Budget, CycleBudget, rotate
from descheduler.core import CoolDown, Row, plan, rows_for
from descheduler.loop import Descheduler
from tests.descheduler.test_descheduler_core import DYNAMIC, FakeClock, clusters_of, make_binding


def planned(clusters: list[tuple[str, int]], ready: dict[str, int], unschedulable: dict[str, int],
            budget: Budget | None = None, cool_down: CoolDown | None = None) -> Any:
    binding = make_binding(clusters, ready)
    rows = rows_for(binding)
    for row in rows:
        row.unschedulable = unschedulable.get(row.name, 0)
    return plan(binding, rows, cool_down, budget)


# --------------------------------------------------------------------------------------------
# the arithmetic


def test_a_workload_budget_takes_in_spec_clusters_order_and_says_what_it_held() -> None:
    p = planned([("m1", 5), ("m2", 10)], {"m1": 0, "m2": 3}, {"m1": 5, "m2": 7}, Budget(workload=4))
    assert clusters_of(p.apply(make_binding([("m1", 5), ("m2", 10)]))) == [("m1", 1), ("m2", 10)]
    assert (p.total, p.descheduled) == (4, {"m1": 4})
    assert p.held_back == {WORKLOAD_BUDGET: 8}
    assert p.held_by_cluster == {"m1": 1, "m2": 7}
    assert p.message == "Binding has been descheduled, 4 replica(s) in cluster(m1), 4 total descheduled replica(s)"


def test_the_ready_floor_comes_before_the_budget() -> None:
    # 4 ready of 5 and 3 "unschedulable": Karmada's floor allows only 1 to move; the budget of 3 changes nothing
    p = planned([("m1", 5)], {"m1": 4}, {"m1": 3}, Budget(workload=3, cycle=3))
    assert (p.total, p.held_back, p.held_by_cluster) == (1, {}, {})
    # a budget below what the floor allows lowers it further, never below the floor
    p = planned([("m1", 10)], {"m1": 4}, {"m1": 6}, Budget(cycle=2))
    assert (p.clusters[0]["replicas"], p.held_back) == (8, {CYCLE_BUDGET: 4})


def test_a_spent_cycle_budget_holds_everything_back_and_changes_nothing() -> None:
    p = planned([("m1", 5), ("m2", 3)], {"m1": 0, "m2": 0}, {"m1": 2, "m2": 3}, Budget(workload=4, cycle=0))
    assert p.total == 0 and p.descheduled == {}
    assert [c["replicas"] for c in p.clusters] == [5, 3]
    assert p.held_back == {WORKLOAD_BUDGET: 1, CYCLE_BUDGET: 4}  # the cap alone would hold 1, the cycle the rest


def test_nothing_to_hold_is_no_plan() -> None:
    assert planned([("m1", 5)], {"m1": 5}, {"m1": 0}, Budget(cycle=1)) is None


@pytest.mark.parametrize(("budget", "expected"), [
    (Budget(), None), (Budget(workload=3), 3), (Budget(cycle=2), 2), (Budget(3, 2), 2), (Budget(1, 2), 1)])
def test_the_limit_is_the_lower_of_the_two(budget: Budget, expected: int | None) -> None:
    assert budget.limit == expected


clusters_strategy = st.lists(st.tuples(st.integers(0, 20), st.integers(-1, 25), st.integers(0, 25)),
                             min_size=1, max_size=4)


@given(clusters_strategy, st.one_of(st.none(), st.integers(1, 30)), st.one_of(st.none(), st.integers(0, 30)))
def test_a_budget_only_ever_reduces_movement(rows: list[tuple[int, int, int]], workload: int | None,
                                             cycle: int | None) -> None:
    clusters = [(f"m{i}", spec) for i, (spec, _, _) in enumerate(rows)]
    ready = {f"m{i}": r for i, (_, r, _) in enumerate(rows) if r >= 0}
    unschedulable = {f"m{i}": u for i, (_, _, u) in enumerate(rows)}
    free = planned(clusters, ready, unschedulable)
    budget = Budget(workload, cycle)
    bounded = planned(clusters, ready, unschedulable, budget)
    free_total = free.total if free else 0
    if bounded is None:
        assert free_total == 0
        return
    limit = budget.limit
    assert bounded.total == (free_total if limit is None else min(free_total, limit))
    assert bounded.total + sum(bounded.held_back.values()) == free_total
    assert sum(bounded.held_by_cluster.values()) == free_total - bounded.total
    for name, taken in bounded.descheduled.items():
        assert free is not None and taken <= free.descheduled[name]
        assert taken + bounded.held_by_cluster.get(name, 0) == free.descheduled[name]


# --------------------------------------------------------------------------------------------
# the cool-down lets exactly the held-back replicas through


def test_the_cool_down_lets_the_held_back_replicas_through_and_no_more() -> None:
    clock = FakeClock()
    cool_down = CoolDown(240, clock)
    key = "default/nginx-deployment"
    first = planned([("m1", 10)], {"m1": 0}, {"m1": 8}, Budget(cycle=3), cool_down)
    assert (first.total, first.held_by_cluster) == (3, {"m1": 5})
    cool_down.record_plan(key, first)
    assert cool_down.allowance(key, "m1") == 5

    # next cycle, stale member data: still 8 unschedulable of the 7 now assigned -> inconsistent, left alone
    clock.now += 120
    assert planned([("m1", 7)], {"m1": 0}, {"m1": 8}, Budget(cycle=3), cool_down) is None
    # stale but consistent (a count that did not drop yet): never more than the 5 held back
    stale = planned([("m1", 7)], {"m1": 0}, {"m1": 7}, None, cool_down)
    assert (stale.total, stale.held_back) == (5, {})
    # fresh data: the 5 left, 3 this cycle, 2 still held
    second = planned([("m1", 7)], {"m1": 0}, {"m1": 5}, Budget(cycle=3), cool_down)
    assert (second.total, second.held_by_cluster) == (3, {"m1": 2})
    cool_down.record_plan(key, second)
    third = planned([("m1", 4)], {"m1": 0}, {"m1": 2}, Budget(cycle=3), cool_down)
    assert (third.total, third.held_back) == (2, {})
    cool_down.record_plan(key, third)
    # all taken: the ordinary cool-down again, until it expires
    assert cool_down.allowance(key, "m1") == 0
    assert planned([("m1", 2)], {"m1": 0}, {"m1": 2}, None, cool_down) is None
    clock.now += 240
    assert cool_down.allowance(key, "m1") is None


# --------------------------------------------------------------------------------------------
# the cycle: order and accounting


def test_rotate_starts_where_the_budget_stopped() -> None:
    assert rotate(["b", "c", "a"], None) == ["a", "b", "c"]
    assert rotate(["b", "c", "a"], "b") == ["b", "c", "a"]
    assert rotate(["a", "c"], "b") == ["c", "a"]  # the binding it stopped at is gone: the next one
    assert rotate(["a", "b"], "z") == ["a", "b"]


def test_cycle_budget_accounting() -> None:
    budget = CycleBudget(per_cycle=5, per_workload=3)
    assert budget.start(["b", "a"]) == ["a", "b"]
    assert budget.for_binding() == Budget(3, 5)
    budget.spend(3)
    budget.hold("a", {WORKLOAD_BUDGET: 1})
    assert budget.for_binding() == Budget(3, 2)
    budget.spend(2)
    budget.hold("b", {CYCLE_BUDGET: 4, WORKLOAD_BUDGET: 2})
    budget.hold("c", {CYCLE_BUDGET: 1})
    assert budget.held == {WORKLOAD_BUDGET: 3, CYCLE_BUDGET: 5}
    budget.finish()
    assert budget.start(["a", "b", "c"]) == ["b", "c", "a"] and budget.left == 5 and not budget.held
    budget.finish()  # nothing held by the cycle budget: back to key order
    assert budget.start(["a", "b", "c"]) == ["a", "b", "c"]
    assert CycleBudget().for_binding() is None


def held_back_total(reason: str) -> float:
    return REGISTRY.get_sample_value("descheduler_replicas_held_back_total", {"reason": reason}) or 0.0


async def test_a_dry_run_cycle_spends_the_budget_in_round_robin_order() -> None:
    """Three bindings with 2 unschedulable replicas each, a budget of 3 per cycle (dry run: nothing changes)."""
    store = Indexer()
    store.replace([make_binding([("m1", 2)], {"m1": 0}, annotation=json.dumps(DYNAMIC), name=name)
                   for name in ("a", "b", "c")])

    async def estimate(clusters: list[str], resource: dict[str, Any], threshold: timedelta) -> dict[str, int]:
        return {name: 2 for name in clusters}

    descheduler = Descheduler(cast(KubeClient, None), store, estimate, cast(EventRecorder, None), interval=1.0,
                              threshold=300.0, dry_run=True, budget=CycleBudget(per_cycle=3))
    before = held_back_total(CYCLE_BUDGET)
    first = await descheduler.cycle()
    assert [(o.binding, o.plan.total) for o in first] == [("default/a", 2), ("default/b", 1)]
    assert held_back_total(CYCLE_BUDGET) - before == 3  # 1 of b, 2 of c
    second = await descheduler.cycle()
    assert [(o.binding, o.plan.total) for o in second] == [("default/b", 2), ("default/c", 1)]


# --------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(("argv", "expected"), [
    (["--max-descheduled-replicas-per-cycle", "0"],
     "karmada-descheduler: error: --max-descheduled-replicas-per-cycle: must be a positive integer, got 0"),
    (["--max-descheduled-replicas-per-cycle", "5", "--max-descheduled-replicas-per-workload=-2"],
     "karmada-descheduler: error: --max-descheduled-replicas-per-workload: must be a positive integer, got -2"),
])
def test_a_non_positive_budget_exits_2_with_one_line(argv: list[str], expected: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", expected + "\n")


def test_budgets_are_off_unless_given() -> None:
    assert budget_error(build_parser().parse_args([])) is None
    args = build_parser().parse_args(["--max-descheduled-replicas-per-cycle", "1",
                                      "--max-descheduled-replicas-per-workload", "7"])
    assert budget_error(args) is None
    assert (args.max_descheduled_replicas_per_cycle, args.max_descheduled_replicas_per_workload) == (1, 7)


def test_rows_without_a_budget_are_karmadas() -> None:
    binding = make_binding([("m1", 5)], {"m1": 0})
    rows = [Row("m1", 5, 0, 5)]
    assert plan(binding, rows, None, None) == plan(binding, rows, None, Budget())
