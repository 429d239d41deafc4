"""Graceful eviction rules: the rows of Karmada's ``pkg/controllers/gracefuleviction/evictiontask_test.go``.

``assessSingleTask``, ``assessEvictionTasks`` and ``nextRetry`` (default timeout 20 min in the
``nextRetry`` rows), plus the watch predicate and the scheduler-observed check.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devplane.karmada.gracefuleviction import (
    TASKS_PREDICATE,
    AssessmentOption,
    assess_eviction_tasks,
    assess_single_task,
    has_scheduled,
    next_retry,
)
from kube_api.timeutil import format_time

NOW = datetime(2025, 9, 23, 12, 0, 0, tzinfo=UTC)
MINUTE = 60.0
TIMEOUT = 3 * MINUTE


def ago(minutes: float) -> str:
    return format_time(NOW - timedelta(minutes=minutes))


def task(cluster: str = "member1", minutes_ago: float | None = 1, **extra: Any) -> dict[str, Any]:
    result: dict[str, Any] = {"fromCluster": cluster, "reason": "TaintUntolerated", "producer": "TaintManager"}
    if minutes_ago is not None:
        result["creationTimestamp"] = ago(minutes_ago)
    result.update(extra)
    return result


SCHEDULED = [{"name": "member2"}, {"name": "member3"}]


def status(*health: str) -> list[dict[str, Any]]:
    return [{"clusterName": f"member{i + 2}", "applied": True, "health": h} for i, h in enumerate(health)]


# ----------------------------------------------------------------------------- assessSingleTask


@pytest.mark.parametrize(("the_task", "option", "kept"), [
    pytest.param(task(minutes_ago=1), AssessmentOption(TIMEOUT), True, id="not timed out, not scheduled"),
    pytest.param(task(minutes_ago=4), AssessmentOption(TIMEOUT), False, id="timed out"),
    pytest.param(task(minutes_ago=1), AssessmentOption(TIMEOUT, SCHEDULED, status("Healthy", "Healthy"), True), False,
                 id="scheduled and all healthy"),
    pytest.param(task(minutes_ago=1), AssessmentOption(TIMEOUT, SCHEDULED, status("Healthy", "Unhealthy"), True), True,
                 id="scheduled, one Unhealthy"),
    pytest.param(task(minutes_ago=1), AssessmentOption(TIMEOUT, SCHEDULED, status("Unknown", "Healthy"), True), True,
                 id="scheduled, one Unknown"),
    pytest.param(task(minutes_ago=1), AssessmentOption(TIMEOUT, SCHEDULED, status("Healthy", "Healthy"), False), True,
                 id="all healthy but not scheduled"),
    pytest.param(task(minutes_ago=10, suppressDeletion=True), AssessmentOption(TIMEOUT), True,
                 id="suppressDeletion true"),
    pytest.param(task(minutes_ago=1, suppressDeletion=False), AssessmentOption(TIMEOUT), False,
                 id="suppressDeletion false"),
    pytest.param(task(minutes_ago=4, gracePeriodSeconds=600), AssessmentOption(TIMEOUT), True,
                 id="gracePeriodSeconds beats the default timeout"),
    pytest.param(task(minutes_ago=2, gracePeriodSeconds=60), AssessmentOption(TIMEOUT), False,
                 id="gracePeriodSeconds shorter than the default"),
])
def test_assess_single_task(the_task: dict[str, Any], option: AssessmentOption, kept: bool) -> None:
    assert assess_single_task(the_task, option, NOW) is kept


# ----------------------------------------------------------------------------- assessEvictionTasks


def assess(tasks: list[dict[str, Any]], observed: list[dict[str, Any]] | None = None, *,
           clusters: list[dict[str, Any]] | None = None,
           scheduled: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
    spec: dict[str, Any] = {"gracefulEvictionTasks": tasks}
    if clusters is not None:
        spec["clusters"] = clusters
    return assess_eviction_tasks(spec, observed, timeout=TIMEOUT, now=NOW, has_scheduled=scheduled)


def test_assess_tasks_without_creation_timestamp_get_now_and_are_kept() -> None:
    kept, evicted = assess([task("member1", None), task("member2", None)])
    assert kept == [task("member1", 0), task("member2", 0)]
    assert kept[0]["creationTimestamp"] == "2025-09-23T12:00:00Z"
    assert evicted == []


def test_assess_tasks_within_timeout_are_kept() -> None:
    tasks = [task("member1", 1), task("member2", 2)]
    assert assess(tasks) == (tasks, [])


def test_assess_tasks_past_timeout_are_removed() -> None:
    assert assess([task("member1", 4), task("member2", 5)]) == ([], ["member1", "member2"])


def test_assess_mixed_tasks() -> None:
    kept, evicted = assess([task("member1", None), task("member2", 2), task("member3", 4)])
    assert kept == [task("member1", 0), task("member2", 2)]
    assert evicted == ["member3"]


def test_assess_custom_grace_period_does_not_affect_the_next_task() -> None:
    kept, evicted = assess([task("member1", 4, gracePeriodSeconds=600), task("member2", 4)])
    assert kept == [task("member1", 4, gracePeriodSeconds=600)]
    assert evicted == ["member2"]


def test_assess_missing_status_item_for_a_scheduled_cluster_keeps_the_task() -> None:
    observed = [{"clusterName": "member2", "applied": True, "health": "Healthy"}]
    kept, evicted = assess([task("member1", 1)], observed, clusters=SCHEDULED, scheduled=True)
    assert kept == [task("member1", 1)]
    assert evicted == []


def test_assess_scheduled_and_healthy_removes_every_stamped_task() -> None:
    kept, evicted = assess([task("member1", 1), task("member4", None)], status("Healthy", "Healthy"),
                           clusters=SCHEDULED, scheduled=True)
    assert kept == [task("member4", 0)]  # a new task is only stamped this round
    assert evicted == ["member1"]


def test_assess_does_not_modify_its_input() -> None:
    tasks = [task("member1", None)]
    assess(tasks)
    assert "creationTimestamp" not in tasks[0]


# ----------------------------------------------------------------------------- nextRetry (timeout 20 min)

TWENTY_MINUTES = 20 * MINUTE


@pytest.mark.parametrize(("tasks", "expected"), [
    pytest.param([], 0, id="no tasks"),
    pytest.param([task("member1", 19), task("member2", 10)], 1 * MINUTE, id="-19 and -10 min"),
    pytest.param([task("member1", 10), task("member2", 5)], 10 * MINUTE, id="-10 and -5 min"),
    pytest.param([task("member1", 60, suppressDeletion=True), task("member2", 5)], 15 * MINUTE,
                 id="suppressed -60 + normal -5"),
    pytest.param([task("member1", 60, suppressDeletion=True)], 0, id="only suppressed"),
    pytest.param([task("member1", 5, gracePeriodSeconds=600)], 5 * MINUTE, id="gracePeriodSeconds 600, -5 min"),
])
def test_next_retry(tasks: list[dict[str, Any]], expected: float) -> None:
    assert next_retry(tasks, TWENTY_MINUTES, NOW) == expected


# ----------------------------------------------------------------------------- watch and scheduling


def binding(tasks: list[dict[str, Any]] | None, generation: int = 2, observed: int | None = 2) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "b", "namespace": "default", "generation": generation},
                           "spec": {}, "status": {}}
    if tasks is not None:
        obj["spec"]["gracefulEvictionTasks"] = tasks
    if observed is not None:
        obj["status"]["schedulerObservedGeneration"] = observed
    return obj


def test_predicate_only_lets_bindings_with_tasks_through() -> None:
    assert TASKS_PREDICATE.create(binding([task()]))
    assert not TASKS_PREDICATE.create(binding(None))
    assert not TASKS_PREDICATE.create(binding([]))
    assert TASKS_PREDICATE.update(binding(None), binding([task()]))
    assert not TASKS_PREDICATE.update(binding([task()]), binding(None))
    assert not TASKS_PREDICATE.delete(binding([task()]))


def test_has_scheduled_compares_observed_and_current_generation() -> None:
    assert has_scheduled(binding(None, 2, 2))
    assert not has_scheduled(binding(None, 3, 2))
    assert not has_scheduled(binding(None, 1, None))
