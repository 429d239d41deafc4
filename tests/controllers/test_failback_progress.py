"""The progressive fail-back rules: the budget, the deadline, pause and resume, the batch names, the marks."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers.failback import progress
from controllers.failback.progress import Eviction, InFlight, Resume, plan
from karmada_api.health import binding_not_healthy
from karmada_api.shapes import Workload
from kube_api.timeutil import format_time

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NOW = T0 + timedelta(seconds=100)


def flight(name: str, started_ago: float, not_healthy: str | None = "0/1 replicas ready on member1") -> InFlight:
    return InFlight(name, NOW - timedelta(seconds=started_ago), not_healthy)


NO_RESUME = Resume()


def decide(in_flight: list[InFlight], pending: int = 10, *, paused_at: datetime | None = None,
           resume: Resume = NO_RESUME, may_start: bool = True) -> progress.Plan:
    return plan(in_flight, pending, now=NOW, max_concurrent=3, deadline=60, may_start=may_start,
                paused_at=paused_at, resume=resume)


def test_starts_only_what_the_budget_leaves() -> None:
    assert decide([]).start == 3
    assert decide([], pending=2).start == 2
    assert decide([flight("a", 10), flight("b", 10)]).start == 1
    assert decide([flight("a", 10), flight("b", 10), flight("c", 10)]).start == 0


def test_healthy_ones_finish_and_free_their_slot() -> None:
    result = decide([flight("a", 10, None), flight("b", 10), flight("c", 10, None)])
    assert result.finished == ["a", "c"] and result.start == 2
    assert result.next_deadline == pytest.approx(50)


def test_a_relapse_or_a_window_not_over_starts_nothing() -> None:
    assert decide([], may_start=False).start == 0


def test_a_missed_deadline_pauses_and_starts_nothing() -> None:
    result = decide([flight("a", 61), flight("b", 10, None)])
    assert [f.workload for f in result.stuck] == ["a"] and result.pause and result.start == 0
    assert result.finished == ["b"]


def test_a_pause_holds_until_the_stuck_ones_are_healthy() -> None:
    held = decide([flight("a", 61)], paused_at=T0)
    assert not held.pause and not held.unpause and held.start == 0
    healed = decide([flight("a", 61, None)], paused_at=T0)
    assert healed.unpause and healed.finished == ["a"] and healed.start == 3


def test_a_resume_at_or_after_the_pause_gives_the_stuck_ones_up_once() -> None:
    resumed = decide([flight("a", 61), flight("b", 10)], paused_at=T0, resume=Resume(at=T0))
    assert resumed.unpause and resumed.given_up == ["a"] and resumed.start == 2
    stale = decide([flight("a", 61)], paused_at=T0, resume=Resume(at=T0 - timedelta(seconds=1)))
    assert not stale.unpause and stale.given_up == [] and stale.start == 0
    unpaused = decide([flight("a", 61)], resume=Resume(at=T0))  # a resume before the pause: a new pause
    assert unpaused.pause and unpaused.given_up == []


def cluster(annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "member1", "annotations": annotations}}


@pytest.mark.parametrize("value", ["now", "", "yesterday", "2026-13-01T00:00:00Z"])
def test_a_resume_value_not_understood_is_invalid(value: str) -> None:
    resume = progress.read_resume(cluster({progress.RESUME_ANNOTATION: value}))
    assert resume.at is None and resume.invalid is not None and f'resume="{value}"' in resume.invalid


def test_a_resume_value_is_a_time() -> None:
    assert progress.read_resume(cluster({progress.RESUME_ANNOTATION: "2026-01-01T00:00:00Z"})) == Resume(at=T0)
    assert progress.read_resume(cluster({})) == Resume()


def test_batch_names_are_the_same_for_the_same_batch_only() -> None:
    a = Workload(apiVersion="apps/v1", kind="Deployment", namespace="default", name="a")
    b = Workload(apiVersion="apps/v1", kind="Deployment", namespace="default", name="b")
    body = progress.batch_body("member1", "2026-01-01T00:00:00Z", [b, a], ttl_seconds=60)
    assert body == progress.batch_body("member1", "2026-01-01T00:00:00Z", [a, b], ttl_seconds=60)
    assert body["metadata"]["name"].startswith("failback-member1-")
    assert body["metadata"]["labels"] == {progress.CLUSTER_LABEL: "member1",
                                          progress.ROUND_LABEL: progress.round_digest("member1",
                                                                                      "2026-01-01T00:00:00Z")}
    assert [w["name"] for w in body["spec"]["workloads"]] == ["a", "b"]
    other_round = progress.batch_body("member1", "2026-01-02T00:00:00Z", [a, b], ttl_seconds=60)
    assert other_round["metadata"]["name"] != body["metadata"]["name"]
    assert progress.batch_body("member1", "r", [a], ttl_seconds=0)["spec"] == {"workloads": [a]}


def binding(annotations: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "a-deployment", "namespace": "default", "resourceVersion": "7",
                         "annotations": annotations}}


def test_the_marks_round_trip_and_bad_entries_are_pending_again() -> None:
    patch = progress.progress_patch(binding({}), progress.Progress(frozenset({"member1", "member2"}),
                                                                   {"member1": T0}, {"member2": NOW}, {"m3": T0}))
    annotations = patch["metadata"]["annotations"]
    assert annotations == {progress.EVICTED_FROM_ANNOTATION: "member1,member2",
                           progress.FAILING_BACK_ANNOTATION: '{"member1": "2026-01-01T00:00:00Z"}',
                           progress.EVICTED_AT_ANNOTATION: json.dumps({"member2": format_time(NOW)}),
                           progress.SKIPPED_ANNOTATION: '{"m3": "2026-01-01T00:00:00Z"}'}
    assert progress.current(binding(annotations)) == progress.Progress(frozenset({"member1", "member2"}),
                                                                       {"member1": T0}, {"member2": NOW}, {"m3": T0})
    assert progress.failing_back(binding({progress.FAILING_BACK_ANNOTATION: "{bad"})) == {}
    assert progress.failing_back(binding({progress.FAILING_BACK_ANNOTATION: json.dumps({"m": "x"})})) == {}
    assert progress.evicted_at(binding({progress.EVICTED_AT_ANNOTATION: "[]"})) == {}
    cleared = progress.progress_patch(binding({}), progress.Progress())["metadata"]["annotations"]
    assert cleared == {progress.EVICTED_FROM_ANNOTATION: None, progress.FAILING_BACK_ANNOTATION: None,
                       progress.EVICTED_AT_ANNOTATION: None, progress.SKIPPED_ANNOTATION: None}


def state(record: set[str], flight: dict[str, datetime] | None = None,
          evicted_at: dict[str, datetime] | None = None, skipped: dict[str, datetime] | None = None
          ) -> progress.Progress:
    return progress.Progress(frozenset(record), flight or {}, evicted_at or {}, skipped or {})


LATER = T0 + timedelta(seconds=1)


def test_started_and_finished_changes() -> None:
    evicted = state({"member1"}, evicted_at={"member1": T0})
    assert progress.started_change("member1", LATER)(evicted) == state({"member1"}, {"member1": LATER},
                                                                       {"member1": T0})
    assert progress.started_change("member1", LATER)(state({"member1"})) == state({"member1"}, {"member1": LATER})
    marked = state({"member1"}, {"member1": T0})
    assert progress.started_change("member1", NOW)(marked) == marked  # already marked: kept as it is
    assert progress.started_change("member1", T0)(state(set())) == state(set())  # finished meanwhile
    done = progress.finished_change("member1", NOW)(state({"member1", "m2"}, {"member1": NOW}, {"member1": T0}))
    assert done == state({"m2"})
    skipped = progress.skipped_change("member1", NOW)(state({"member1", "m2"}, evicted_at={"member1": T0}))
    assert skipped == state({"m2"}, skipped={"member1": NOW})
    assert progress.skipped_change("member1", LATER)(skipped) == skipped  # decided already: the first mark stays


def test_an_eviction_decided_against_is_not_recorded_again_and_a_newer_one_is() -> None:
    """The skip mark: the eviction it was decided on (a task or an Event outliving the decision, seen again after
    a restart) is left out; a later eviction is recorded and drops the mark."""
    skipped = state(set(), skipped={"member1": LATER})
    assert progress.evicted_change({"member1": progress.Eviction(T0)})(skipped) == skipped
    assert progress.evicted_change({"member1": progress.Eviction(LATER)})(skipped) == skipped  # the same second
    later = LATER + timedelta(seconds=1)
    assert progress.evicted_change({"member1": progress.Eviction(later)})(skipped) == state({"member1"})
    marked = binding({progress.SKIPPED_ANNOTATION: json.dumps({"member1": format_time(LATER)})})
    assert progress.decided_already(marked, "member1", T0)
    assert not progress.decided_already(marked, "member1", None)  # a task not stamped yet may be a new eviction
    assert progress.decided_already(marked, "member1", LATER + timedelta(seconds=2), timedelta(seconds=2))
    assert not progress.decided_already(marked, "member1", later)
    assert not progress.decided_already(marked, "member2", T0)


def test_a_first_eviction_is_only_recorded_and_a_relapse_is_stamped() -> None:
    """A stamp only where an eviction undid a fail-back (the cluster recorded or in flight, now or when the
    eviction was seen); no batch that began in its second or before marks the binding (a tie counts as before: a
    relapse in the batch's own second must not be missed)."""
    assert progress.evicted_change({"member1": Eviction(T0)})(state(set())) == state({"member1"})
    assert progress.evicted_change({"member1": Eviction(T0)})(state({"member1"})) == state({"member1"},
                                                                                 evicted_at={"member1": T0})
    assert progress.evicted_change({"member1": Eviction(T0, undoes=True)})(state(set())) == state({"member1"},
                                                                                        evicted_at={"member1": T0})
    evicted = state({"member1"}, evicted_at={"member1": T0})
    assert progress.started_change("member1", T0)(evicted) == evicted


def test_an_eviction_while_going_back_undoes_the_move_and_no_batch_of_then_marks_it_again() -> None:
    """A relapse: the binding, in flight to member1 since LATER, is evicted from it again (seen at NOW). It is
    pending again, stamped NOW; a batch that began by then (re-adopted, say, or by its later reschedule trigger)
    cannot mark it; one of a later round can. Seen in the move's own second, the stamp is that second."""
    flying = state({"member1"}, {"member1": LATER}, {"member1": T0})
    relapsed = progress.evicted_change({"member1": Eviction(NOW)})(flying)
    assert relapsed == state({"member1"}, evicted_at={"member1": NOW})
    same_second = progress.evicted_change({"member1": Eviction(LATER)})(state({"member1"}, {"member1": LATER}))
    assert same_second == state({"member1"}, evicted_at={"member1": LATER})
    assert progress.started_change("member1", LATER)(relapsed) == relapsed
    assert progress.started_change("member1", NOW)(relapsed) == relapsed
    after = NOW + timedelta(seconds=1)
    assert progress.started_change("member1", after)(relapsed) == state({"member1"}, {"member1": after},
                                                                        {"member1": NOW})


def test_an_eviction_seen_before_a_newer_move_began_leaves_that_move_alone() -> None:
    """A recorder that lagged a whole window: the eviction it writes now was seen before the move in flight."""
    flying = state({"member1"}, {"member1": NOW}, {"member1": T0})
    assert progress.evicted_change({"member1": Eviction(LATER)})(flying) == flying


def test_a_move_judged_over_on_a_late_copy_leaves_the_eviction_that_undid_it_recorded() -> None:
    """The flight was judged healthy on a cache copy from before the recorder noted a relapse: finishing it then
    must not clear the record of that eviction; finishing it first leaves the recorder's write a stamped record."""
    relapsed = progress.evicted_change({"member1": Eviction(NOW)})(state({"member1"}, {"member1": T0}))
    assert progress.finished_change("member1", T0)(relapsed) == relapsed
    finished = progress.finished_change("member1", T0)(state({"member1"}, {"member1": T0}))
    assert progress.evicted_change({"member1": Eviction(NOW, undoes=True)})(finished) == state({"member1"},
                                                                                     evicted_at={"member1": NOW})


def test_a_move_seen_off_an_unhealthy_cluster_is_undone_only_if_still_in_flight() -> None:
    flying = state({"member1"}, {"member1": T0})
    assert progress.relapsed_change("member1", T0, NOW)(flying) == state({"member1"}, evicted_at={"member1": NOW})
    assert progress.relapsed_change("member1", LATER, NOW)(flying) == flying  # another move: not this one's


def test_the_policy_of_a_binding_and_its_opt_out() -> None:
    pp = binding({progress.PP_NAME_ANNOTATION: "p", progress.PP_NAMESPACE_ANNOTATION: "ns"})
    assert progress.policy_of(pp) == ("ns", "p")
    assert progress.policy_of(binding({progress.CPP_NAME_ANNOTATION: "c"})) == ("", "c")
    assert progress.policy_of(binding({})) is None
    policy = {"metadata": {"name": "p", "namespace": "ns", "annotations": {progress.OPT_OUT_ANNOTATION: "true"}}}
    assert progress.opted_out(policy) and not progress.opted_out(None)
    assert progress.opt_out_reason(policy).startswith("its PropagationPolicy ns/p opts out")


def test_a_binding_is_not_healthy_until_the_move_was_triggered() -> None:
    healthy = {"metadata": {"generation": 1},
               "spec": {"replicas": 1, "clusters": [{"name": "member1", "replicas": 1}],
                        "resource": {"apiVersion": "apps/v1", "kind": "Deployment"}},
               "status": {"schedulerObservedGeneration": 1,
                          "aggregatedStatus": [{"clusterName": "member1", "applied": True,
                                                "status": {"readyReplicas": 1}}]}}
    assert binding_not_healthy(healthy) is None
    assert binding_not_healthy(healthy, T0) == "reschedule not triggered yet"
    triggered = {**healthy, "spec": {**healthy["spec"], "rescheduleTriggeredAt": "2026-01-01T00:00:00Z"},
                 "status": {**healthy["status"], "lastScheduledTime": "2026-01-01T00:00:01Z"}}
    assert binding_not_healthy(triggered, T0) is None
    assert binding_not_healthy(triggered, T0 + timedelta(seconds=1)) == "reschedule not triggered yet"


def test_a_trigger_at_or_after_the_rounds_start_was_made_in_the_round() -> None:
    def triggered(at: str | None) -> dict[str, Any]:
        return {**binding({}), "spec": {"rescheduleTriggeredAt": at} if at else {}}

    round_value = "2026-01-01T00:00:00Z"
    assert progress.triggered_in_round(triggered("2026-01-01T00:00:00Z"), round_value) == T0  # at: the same second
    assert progress.triggered_in_round(triggered("2026-01-01T00:00:07Z"), round_value) == T0 + timedelta(seconds=7)
    assert progress.triggered_in_round(triggered("2025-12-31T23:59:59Z"), round_value) is None  # an earlier move
    assert progress.triggered_in_round(triggered(None), round_value) is None
    assert progress.triggered_in_round(triggered("soon"), round_value) is None
    assert progress.triggered_in_round(triggered("2026-01-01T00:00:07Z"), "bad") is None
