"""The clusterFailback rules: recovery, the recovery window, what counts as an eviction, skips, chunking, TTL."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller_manager.cache import Indexer
from controller_manager.reconcile import Request
from controllers.failback import recovery
from controllers.failback.owed import UnrecordedSkip, UnrecordedSkips
from controllers.failback.progress import FAILING_BACK_ANNOTATION, SKIPPED_ANNOTATION, Eviction
from controllers.failback.recorder import EvictionRecorder
from controllers.failback.recovery import EVICTED_FROM_ANNOTATION, RecoveryWindows, evicted_by_event, eviction_event
from karmada_api.bindings import RB_KIND
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from karmada_api.rebalancers import chunks


def cluster(name: str = "member1", ready: str | None = "True", taints: list[dict[str, str]] | None = None,
            labels: dict[str, str] | None = None) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []},
            "status": {"conditions": conditions}}


def binding(clusters: list[str], *, tasks: tuple[str, ...] | list[str] = (), record: str | None = None,
            deleting: bool = False, placement: dict[str, Any] | None = None) -> dict[str, Any]:
    annotations = {}
    if record is not None:
        annotations[EVICTED_FROM_ANNOTATION] = record
    if placement is not None:
        annotations[APPLIED_PLACEMENT_ANNOTATION] = json.dumps(placement)
    metadata: dict[str, Any] = {"name": "foo-deployment", "namespace": "default", "annotations": annotations,
                                "resourceVersion": "7"}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": metadata,
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo", "namespace": "default"},
                     "clusters": [{"name": c, "replicas": 1} for c in clusters],
                     "gracefulEvictionTasks": [{"fromCluster": c} for c in tasks]}}


NO_EXECUTE = {"key": "workload-rebalancer-test", "effect": "NoExecute"}


@pytest.mark.parametrize(("obj", "recovered"), [
    (cluster(), True),
    (cluster(ready="False"), False),
    (cluster(ready="Unknown"), False),
    (cluster(ready=None), False),
    (cluster(taints=[NO_EXECUTE]), False),
    (cluster(taints=[{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}]), False),
    (cluster(taints=[{"key": "cluster.karmada.io/unreachable", "effect": "NoSchedule"}]), False),
    (cluster(taints=[{"key": "maintenance", "effect": "NoSchedule"}]), True),  # the user's: not Karmada's
    (cluster(taints=[{"key": "cluster.karmada.io/not-ready", "effect": "PreferNoSchedule"}]), True),
])
def test_recovered_means_ready_and_no_eviction_or_cluster_controller_taint(obj: dict[str, Any],
                                                                          recovered: bool) -> None:
    assert recovery.is_recovered(obj) is recovered


def test_window_starts_once_and_ends_after_the_full_window() -> None:
    windows = RecoveryWindows(10.0)
    assert windows.observe("m1", True, 100.0) == (True, 10.0)
    assert windows.observe("m1", True, 104.0) == (False, 6.0)
    assert windows.observe("m1", True, 110.0) == (False, 0.0)


def test_a_relapse_resets_the_window_so_a_flapping_cluster_never_reaches_its_end() -> None:
    windows = RecoveryWindows(10.0)
    for start in range(0, 100, 8):  # healthy 6 s, sick 2 s, again and again
        started, _ = windows.observe("m1", True, float(start))
        assert started
        assert windows.observe("m1", True, start + 6.0)[1] > 0
        assert windows.observe("m1", False, start + 6.5) == (False, 10.0)


def test_a_new_process_starts_the_window_again() -> None:
    before, after = RecoveryWindows(10.0), RecoveryWindows(10.0)
    before.observe("m1", True, 0.0)
    assert after.observe("m1", True, 9.0) == (True, 10.0)  # never earlier than a full observed window


def test_graceful_eviction_task_is_recorded() -> None:
    new = binding(["member2"], tasks=["member1"])
    assert recovery.evicted_clusters(None, new, lambda _n: None) == {"member1"}
    old = binding(["member1", "member2"])
    assert recovery.evicted_clusters(old, new, lambda _n: None) == {"member1"}
    # the task outlives the fail-back that removed the record: not recorded again
    assert recovery.evicted_clusters(new, new, lambda _n: None) == set()


def test_dropped_cluster_is_recorded_only_when_unhealthy() -> None:
    old, new = binding(["member1", "member2"]), binding(["member2"])
    sick = {"member1": cluster(taints=[NO_EXECUTE])}
    assert recovery.evicted_clusters(old, new, sick.get) == {"member1"}
    assert recovery.evicted_clusters(old, new, {"member1": cluster(ready="False")}.get) == {"member1"}
    assert recovery.evicted_clusters(old, new, {"member1": cluster()}.get) == set()  # a plain reschedule
    assert recovery.evicted_clusters(old, new, {}.get) == set()  # an unknown (deleted) cluster


def test_recording_is_idempotent_and_skips_bindings_being_deleted() -> None:
    assert recovery.evicted_clusters(None, binding(["member2"], tasks=["member1"], record="member1"),
                                     lambda _n: None) == set()
    assert recovery.evicted_clusters(None, binding([], tasks=["member1"], deleting=True), lambda _n: None) == set()


def test_record_value_is_sorted_and_none_removes_it() -> None:
    assert recovery.recorded_clusters(binding([], record="member3, member1,,member1")) == ["member1", "member3"]
    assert recovery.record_value({"b", "a"}) == "a,b"
    assert recovery.record_value([]) is None


def test_skip_reasons() -> None:
    member1 = cluster(labels={"env": "prod"})
    assert recovery.skip_reason(binding([]), member1) is None
    assert "being deleted" in (recovery.skip_reason(binding([], deleting=True), member1) or "")
    moved = binding([], placement={"clusterAffinity": {"clusterNames": ["member2"]}})
    assert "no longer matches cluster member1" in (recovery.skip_reason(moved, member1) or "")
    kept = binding([], placement={"clusterAffinity": {"clusterNames": ["member1", "member2"]}})
    assert recovery.skip_reason(kept, member1) is None
    groups = binding([], placement={"clusterAffinities": [{"affinityName": "a", "clusterNames": ["x"]}]})
    assert "no cluster affinity" in (recovery.skip_reason(groups, member1) or "")

def test_a_taint_not_tolerated_blocks_but_does_not_skip() -> None:
    kept = binding([], placement={"clusterAffinity": {"clusterNames": ["member1", "member2"]}})
    tainted = cluster(taints=[{"key": "maintenance", "effect": "NoSchedule"}])
    assert recovery.skip_reason(kept, tainted) is None
    assert recovery.blocking_taint(kept, tainted) == "maintenance:NoSchedule"
    tolerant = binding([], placement={"clusterTolerations": [{"key": "maintenance", "operator": "Exists"}]})
    assert recovery.blocking_taint(tolerant, tainted) is None
    assert recovery.blocking_taint(binding([]), tainted) is None  # never scheduled: the scheduler decides
    assert recovery.blocking_taint(kept, cluster(taints=[{"key": "m", "effect": "PreferNoSchedule"}])) is None


def test_chunk_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        chunks([1], 0)


def test_a_drop_seen_before_the_clusters_cache_knows_the_cluster_is_checked_later() -> None:
    old, new = binding(["member1", "member2"]), binding(["member2"])
    unknown: set[str] = set()
    assert recovery.evicted_clusters(old, new, {}.get, unknown) == set()
    assert unknown == {"member1"}

    clusters = Indexer()
    recorder = EvictionRecorder(None, clusters, {})  # type: ignore[arg-type]  # verify() sends no request
    recorder.controller = Queue()  # type: ignore[assignment]
    recorder.observe(old, new)  # the Clusters cache is still empty, as at start-up
    request = Request.for_object(new)
    assert recorder.pending == {} and set(recorder.unverified[request]) == {"member1"}
    seen = recorder.unverified[request]["member1"]
    clusters.upsert(cluster(taints=[NO_EXECUTE]))
    recorder.verify(request)  # the reconcile, once the cache has synced: it was an eviction, seen back then
    assert recorder.pending == {request: {"member1": seen}} and recorder.unverified == {}


def test_an_application_failover_is_not_an_eviction_to_fail_back() -> None:
    """Karmada's application failover leaves a task with reason ApplicationFailure on a healthy cluster: the
    application failed there, the cluster did not; there is nothing to bring back when it "recovers"."""
    healthy = {"member1": cluster()}
    old = binding(["member1", "member2"])
    moved = binding(["member2"])
    moved["spec"]["gracefulEvictionTasks"] = [{"fromCluster": "member1", "reason": "ApplicationFailure"}]
    assert recovery.evicted_clusters(old, moved, healthy.get) == set()
    moved["spec"]["gracefulEvictionTasks"] = [{"fromCluster": "member1", "reason": "TaintUntolerated"}]
    assert recovery.evicted_clusters(old, moved, healthy.get) == {"member1"}


def test_an_eviction_of_a_recorded_cluster_is_recorded_again_only_when_named_again() -> None:
    sick = {"member1": cluster(taints=[NO_EXECUTE])}
    old = binding(["member1", "member2"], record="member1")
    dropped = binding(["member2"], record="member1")
    assert recovery.evicted_clusters(old, dropped, sick.get) == set()  # recorded, not in flight: nothing new
    assert recovery.evicted_clusters(old, dropped, sick.get, again=["member1"]) == {"member1"}
    tasked = binding(["member1", "member2"], record="member1", tasks=["member1"])
    assert recovery.evicted_clusters(old, tasked, sick.get, again=["member1"]) == {"member1"}
    assert recovery.evicted_clusters(tasked, tasked, sick.get, again=["member1"]) == set()  # the same task


# ---- evictions told by Karmada's Events ---------------------------------------------------------------------

TRIGGERED = "2026-11-27T10:00:00Z"


def eviction(cluster: str = "member1", *, at: str = "2026-11-27T10:05:00Z", kind: str = "ResourceBinding",
             reason: str = "EvictWorkloadFromClusterSucceed", uid: str = "uid-1") -> dict[str, Any]:
    """The Event Karmada's graceful-eviction controller records on a binding once the eviction is done."""
    return {"metadata": {"name": "foo-deployment.1", "namespace": "default", "creationTimestamp": at},
            "involvedObject": {"kind": kind, "namespace": "default", "name": "foo-deployment", "uid": uid,
                               "apiVersion": "work.karmada.io/v1alpha2"},
            "reason": reason, "message": f"Evict from cluster {cluster} succeed.", "type": "Normal",
            "firstTimestamp": at, "lastTimestamp": at}


def test_an_eviction_event_names_the_binding_the_cluster_and_when() -> None:
    told = eviction_event(eviction())
    assert told is not None
    assert (told.request, told.uid, told.cluster, told.at.isoformat()) == (
        Request("default", "foo-deployment"), "uid-1", "member1", "2026-11-27T10:05:00+00:00")
    crb = eviction_event(eviction(kind="ClusterResourceBinding"))
    assert crb is not None and crb.request == Request("", "foo-deployment")
    # the template's copy of the Event, another reason, a message that is not Karmada's: nothing
    assert eviction_event(eviction(kind="Deployment")) is None
    assert eviction_event(eviction(reason="EvictWorkloadFromClusterFailed")) is None
    assert eviction_event({**eviction(), "message": "evicted"}) is None


def test_an_eviction_event_is_recorded_only_if_the_binding_does_not_show_it_over() -> None:
    told = eviction_event(eviction())
    assert told is not None
    gone = {**binding(["member2"]), "metadata": {**binding(["member2"])["metadata"], "uid": "uid-1"}}
    assert evicted_by_event(gone, told, {})
    back = {**gone, "spec": {**gone["spec"], "clusters": [{"name": "member1", "replicas": 1}]}}
    assert not evicted_by_event(back, told, {})  # back on member1 (failed back, or rescheduled there)
    # a fail-back to it in flight that began at or after the eviction (a tie counts as older): the old eviction
    assert not evicted_by_event(gone, told, {"member1": told.at})
    assert not evicted_by_event(gone, told, {"member1": told.at + timedelta(seconds=30)})
    rescheduled = {**gone, "spec": {**gone["spec"], "rescheduleTriggeredAt": "2026-11-27T10:05:00Z"}}
    assert not evicted_by_event(rescheduled, told, {})  # moved afresh at or after the eviction
    earlier = {**gone, "spec": {**gone["spec"], "rescheduleTriggeredAt": TRIGGERED}}
    assert evicted_by_event(earlier, told, {})  # a reschedule before it says nothing of it
    other = {**gone, "metadata": {**gone["metadata"], "uid": "uid-2"}}
    assert not evicted_by_event(other, told, {})  # another binding by that name
    recorded_already = {**gone, "metadata": {**gone["metadata"], "annotations": {EVICTED_FROM_ANNOTATION: "member1"}}}
    assert not evicted_by_event(recorded_already, told, {})


def test_an_eviction_event_later_than_a_fail_back_in_flight_is_a_relapse() -> None:
    """No fail-back starts while an eviction from its cluster is going on, so an eviction that ended after the move
    began is a new one (the controller-manager was down while it happened): not over, though the cluster is in
    flight (and so recorded), unless the workload is back on the cluster."""
    told = eviction_event(eviction())
    assert told is not None
    flying = {"member1": told.at - timedelta(seconds=3)}
    gone = {**binding(["member2"], record="member1"), "metadata": {**binding(["member2"], record="member1")["metadata"],
                                                                   "uid": "uid-1"}}
    moved = {**gone, "spec": {**gone["spec"], "rescheduleTriggeredAt": "2026-11-27T10:04:59Z"}}
    assert evicted_by_event(moved, told, flying)
    back = {**moved, "spec": {**moved["spec"], "clusters": [{"name": "member1", "replicas": 1}]}}
    assert not evicted_by_event(back, told, flying)
    # Karmada stamps the Event with its own clock: up to 2 s after the move's start it is the older eviction
    assert not evicted_by_event(moved, told, {"member1": told.at - timedelta(seconds=2)})
    # with application failover on, the Event may tell of an application that failed on a healthy cluster
    failover = {**moved, "spec": {**moved["spec"], "failover": {"application": {"purgeMode": "Gracefully"}}}}
    assert not evicted_by_event(failover, told, flying)
    assert not evicted_by_event({**failover, "metadata": gone["metadata"] | {"annotations": {}}}, told, {})


class Queue:
    """The recorder's controller, as far as its informer handlers use it."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def enqueue(self, request: Request) -> None:
        self.requests.append(request)


def recorder_of(*bindings: dict[str, Any]) -> EvictionRecorder:
    store = Indexer()
    for b in bindings:
        store.upsert(b)
    recorder = EvictionRecorder(None, Indexer(), {RB_KIND: store})  # type: ignore[arg-type]  # no request sent
    recorder.controller = Queue()  # type: ignore[assignment]
    return recorder


def test_a_task_from_a_cluster_in_flight_on_the_initial_list_undoes_that_move() -> None:
    """No fail-back starts while an eviction from its cluster goes on: a task from a cluster in flight, found on the
    initial list, came while no recorder ran (a relapse). One from a cluster only recorded is the eviction that
    started it all, still going on: nothing new."""
    in_flight = binding(["member2"], tasks=["member1"], record="member1")
    in_flight["metadata"]["annotations"][FAILING_BACK_ANNOTATION] = json.dumps({"member1": TRIGGERED})
    recorder = recorder_of()
    recorder.observe(None, in_flight)
    assert [e.undoes for e in recorder.pending[Request.for_object(in_flight)].values()] == [True]
    waiting = binding(["member2"], tasks=["member1"], record="member1")
    recorder = recorder_of()
    recorder.observe(None, waiting)
    assert recorder.pending == {}
    # a task older than the move (a move an earlier version started while it ran): the eviction it answers
    in_flight["spec"]["gracefulEvictionTasks"][0]["creationTimestamp"] = "2026-11-27T09:59:00Z"
    recorder = recorder_of()
    recorder.observe(None, in_flight)
    assert recorder.pending == {}


def test_an_eviction_seen_after_a_reschedule_trigger_is_stamped_as_undoing_that_move() -> None:
    """Seen live, on a binding not in flight nor recorded (its fail-back judged over already), but moved by a
    trigger: the eviction undid that move, so it is stamped (no batch of the round may adopt that move again)."""
    old = binding(["member1", "member2"])
    old["spec"]["rescheduleTriggeredAt"] = TRIGGERED
    new = binding(["member2"], tasks=["member1"])
    new["spec"]["rescheduleTriggeredAt"] = TRIGGERED
    recorder = recorder_of()
    recorder.observe(old, new)
    assert [e.undoes for e in recorder.pending[Request.for_object(new)].values()] == [True]
    recorder = recorder_of()
    recorder.observe(binding(["member1", "member2"]), binding(["member2"], tasks=["member1"]))  # never moved
    assert [e.undoes for e in recorder.pending[Request.for_object(new)].values()] == [False]


def test_a_task_found_on_the_initial_list_is_dated_by_when_it_began() -> None:
    """A task that outlived a restart (held, or its workload not healthy elsewhere yet) is an eviction of when it
    began, not of the restart: stamped at the restart, it would look like a relapse during a round that began since
    and end that round for nothing."""
    lingering = binding(["member2"], tasks=["member1"])
    lingering["spec"]["rescheduleTriggeredAt"] = "2026-01-01T00:00:00Z"  # a user's rebalancer, long ago
    lingering["spec"]["gracefulEvictionTasks"][0]["creationTimestamp"] = "2026-11-27T09:30:00Z"
    recorder = recorder_of()
    recorder.observe(None, lingering)
    noted = recorder.pending[Request.for_object(lingering)]["member1"]
    assert (noted.at.isoformat(), noted.undoes) == ("2026-11-27T09:30:00+00:00", True)


def test_a_note_of_a_cluster_the_binding_is_on_again_is_dropped() -> None:
    """A standby notes evictions it cannot write and writes them once it leads, maybe much later: a cluster the
    binding is on again by then is no eviction to fail back."""
    evicted = binding(["member2"], tasks=["member1"])
    recorder = recorder_of(binding(["member1", "member2"]))  # as cached when it leads: placed back since
    recorder.observe(binding(["member1", "member2"]), evicted)
    request = Request.for_object(evicted)
    assert set(recorder.pending[request]) == {"member1"}
    recorder._drop_placed_back(request)
    assert recorder.pending == {}
    recorder = recorder_of(evicted)
    recorder.observe(binding(["member1", "member2"]), evicted)
    recorder._drop_placed_back(request)
    assert set(recorder.pending[request]) == {"member1"}


def test_an_event_later_than_the_last_trigger_undoes_that_move() -> None:
    """Found in an Event while the binding shows no move in flight (its finish may have been judged on a copy
    older than the eviction): later than the last reschedule trigger, it undid that move, and is stamped as
    such; with no trigger ever, it is a plain eviction."""
    told = eviction_event(eviction())
    assert told is not None
    moved = binding(["member2"])
    moved["metadata"]["uid"] = "uid-1"
    moved["spec"]["rescheduleTriggeredAt"] = TRIGGERED
    recorder = recorder_of(moved)
    recorder.observe_event(eviction())
    recorder._judge_events(told.request)
    assert recorder.pending == {told.request: {"member1": Eviction(told.at, undoes=True)}}
    never = binding(["member2"])
    never["metadata"]["uid"] = "uid-1"
    recorder = recorder_of(never)
    recorder.observe_event(eviction())
    recorder._judge_events(told.request)
    assert recorder.pending == {told.request: {"member1": Eviction(told.at, undoes=False)}}


def skip_test_binding(*, record: bool, skipped: str | None = None) -> dict[str, Any]:
    annotations = {EVICTED_FROM_ANNOTATION: "member1"} if record else {}
    if skipped is not None:
        annotations[SKIPPED_ANNOTATION] = json.dumps({"member1": skipped})
    return {"metadata": {"name": "web-deployment", "namespace": "default", "annotations": annotations}}


def test_a_skip_stored_by_an_earlier_attempt_than_the_last_failed_one_still_gets_its_warning() -> None:
    """Attempt 1 (12:00:00) is stored, its answer lost; the retry's cache is behind (the record still there), so it
    decides the skip again at 12:00:03 and that write fails too. Once the cache shows attempt 1's mark, the Warning
    is said, once; while the record shows, it is kept; a later attempt that succeeds says its own instead."""
    skips = UnrecordedSkips()
    first = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    key = "default/web-deployment"
    skips.failed("member1", UnrecordedSkip(RB_KIND, key, first, "not failed back to cluster member1: why"))
    behind = skip_test_binding(record=True)
    assert list(skips.stored("member1", lambda kind, k: behind)) == []  # kept: the retry may decide it again
    skips.failed("member1", UnrecordedSkip(RB_KIND, key, first + timedelta(seconds=3), "the same, later"))
    landed = skip_test_binding(record=False, skipped="2026-11-29T12:00:00Z")
    said = list(skips.stored("member1", lambda kind, k: landed))
    assert said == [(landed, "not failed back to cluster member1: why")]
    assert list(skips.stored("member1", lambda kind, k: landed)) == []  # once

    skips.failed("member1", UnrecordedSkip(RB_KIND, key, first, "m"))
    skips.said("member1", RB_KIND, key)  # a later attempt stored, its own Warning recorded
    assert list(skips.stored("member1", lambda kind, k: landed)) == []
    skips.failed("member1", UnrecordedSkip(RB_KIND, key, first, "m"))
    gone_otherwise = skip_test_binding(record=False)  # not stored, and the record went another way: nothing to say
    assert list(skips.stored("member1", lambda kind, k: gone_otherwise)) == []
    assert list(skips.stored("member1", lambda kind, k: landed)) == []
