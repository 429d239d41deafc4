"""The taint manager's rules: every row of Karmada's taint manager and taint helper tests (commit f8fdd02).

``needEvictionWithCurrentTime``, ``enqueueBinding``, ``getPurgeMode`` and ``syncBindingEviction``
(as a pure transformation) from ``pkg/controllers/cluster/taint_manager_test.go`` with the fixed
now 2025-09-23T12:00:00Z; ``GetMinTolerationTime`` and ``GenerateTaintsMessage`` from
``pkg/util/helper/taint_test.go``; the cluster reconcile's routing of bindings to the RB and CRB
eviction queues (``syncCluster``), and the eviction pacing limiter.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller_manager.cache import Indexer
from controller_manager.controller import Controller
from controller_manager.reconcile import Request, Result
from devplane.karmada.events import template_reference
from devplane.karmada.taintmanager import (
    CLUSTER_TAINT_EVICTION_RETRY_FREQUENCY,
    CRB_INDEX_BY_CLUSTER,
    MAX_EVICTION_DELAY,
    RB_INDEX_BY_CLUSTER,
    ClusterTaintReconciler,
    EvictionKey,
    EvictionRateLimiter,
    PlacementError,
    bindings_by_cluster,
    decide_binding_eviction,
    enqueue_delay,
    eviction_rate_limiter,
    get_purge_mode,
    need_eviction_with_current_time,
)
from karmada_api.bindings import binding_cluster_names
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from karmada_api.taints import (
    generate_taints_message,
    get_applied_placement,
    get_min_toleration_time,
    graceful_evict_cluster,
    has_no_execute_taints,
    no_execute_taints,
)
from kube_api.timeutil import format_time

NOW = datetime(2025, 9, 23, 12, 0, 0, tzinfo=UTC)
ONE_SECOND_AGO = format_time(NOW - timedelta(seconds=1))
ONE_SECOND_LATER = format_time(NOW + timedelta(seconds=1))
AFFINITY_ONLY = '{"clusterAffinity":{"clusterNames":["test-cluster"]}}'


def placement(tolerations: list[dict[str, Any]] | None, clusters: tuple[str, ...] = ("test-cluster",)) -> str:
    body: dict[str, Any] = {"clusterAffinity": {"clusterNames": list(clusters)}}
    if tolerations is not None:
        body["clusterTolerations"] = tolerations
    return json.dumps(body)


def exists(key: str, seconds: int | None = None) -> dict[str, Any]:
    toleration: dict[str, Any] = {"key": key, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        toleration["tolerationSeconds"] = seconds
    return toleration


def taint(key: str, effect: str = "NoExecute", added: str | None = None, value: str = "") -> dict[str, Any]:
    result: dict[str, Any] = {"key": key, "effect": effect}
    if value:
        result["value"] = value
    if added is not None:
        result["timeAdded"] = added
    return result


def cluster(*taints: dict[str, Any], name: str = "test-cluster") -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"syncMode": "Push", "taints": list(taints)}}


def annotated(value: str | None) -> dict[str, str]:
    return {} if value is None else {APPLIED_PLACEMENT_ANNOTATION: value}


# ----------------------------------------------------------------------------- GetMinTolerationTime (taint_test.go)


def test_min_toleration_time_no_taints_is_forever() -> None:
    assert get_min_toleration_time([], [exists("k", 60)], NOW) == -1


def test_min_toleration_time_no_used_tolerations_is_now() -> None:
    assert get_min_toleration_time([taint("k", added=format_time(NOW))], [], NOW) == 0


def test_min_toleration_time_counts_from_time_added() -> None:
    assert get_min_toleration_time([taint("k", added=format_time(NOW))], [exists("k", 60)], NOW) == 60


def test_min_toleration_time_without_toleration_seconds_is_forever() -> None:
    assert get_min_toleration_time([taint("k", added=format_time(NOW))], [exists("k")], NOW) == -1


def test_min_toleration_time_without_time_added_is_forever() -> None:
    """Fact 8: a NoExecute taint without timeAdded is tolerated forever by a toleration with seconds."""
    assert get_min_toleration_time([taint("k")], [exists("k", 60)], NOW) == -1


def test_min_toleration_time_takes_the_earliest_trigger() -> None:
    """Fact 16: the earliest, despite Karmada's comment saying "latest"."""
    taints = [taint("a", added=format_time(NOW)), taint("b", added=format_time(NOW))]
    assert get_min_toleration_time(taints, [exists("a", 60), exists("b", 120)], NOW) == 60
    assert get_min_toleration_time(taints, [exists("a", 120), exists("b", 60)], NOW) == 60


def test_min_toleration_time_passed_trigger_is_now() -> None:
    added = format_time(NOW - timedelta(seconds=120))
    assert get_min_toleration_time([taint("k", added=added)], [exists("k", 60)], NOW) == 0


def test_min_toleration_time_only_pairs_a_toleration_with_taints_it_tolerates() -> None:
    """A toleration's seconds apply to the taints it tolerates, not to every taint."""
    taints = [taint("a", added=format_time(NOW - timedelta(seconds=300))), taint("b", added=format_time(NOW))]
    assert get_min_toleration_time(taints, [exists("a"), exists("b", 30)], NOW) == 30


# ----------------------------------------------------------------------------- GenerateTaintsMessage (taint_test.go)


@pytest.mark.parametrize(("taints", "message"), [
    ([], "cluster now does not have taints"),
    (None, "cluster now does not have taints"),
    ([taint("key1", "NoSchedule", value="value1")],
     "cluster now has taints([{Key:key1,Value:value1,Effect:NoSchedule}])"),
    ([taint("key1", "NoSchedule")], "cluster now has taints([{Key:key1,Effect:NoSchedule}])"),
    ([taint("key1", "NoSchedule", value="value1"), taint("key2", "NoExecute")],
     "cluster now has taints([{Key:key1,Value:value1,Effect:NoSchedule},{Key:key2,Effect:NoExecute}])"),
])
def test_generate_taints_message(taints: list[dict[str, Any]] | None, message: str) -> None:
    assert generate_taints_message(taints) == message


def test_no_execute_taint_filtering() -> None:
    taints = [taint("a", "NoSchedule"), taint("b"), taint("c", "PreferNoSchedule"), taint("d")]
    assert [t["key"] for t in no_execute_taints(taints)] == ["b", "d"]
    assert has_no_execute_taints(taints)
    assert not has_no_execute_taints(taints[:1])
    assert no_execute_taints(None) == []


@pytest.mark.parametrize(("annotations", "expected"), [
    ({}, None),
    ({APPLIED_PLACEMENT_ANNOTATION: "null"}, {}),
    ({APPLIED_PLACEMENT_ANNOTATION: AFFINITY_ONLY}, {"clusterAffinity": {"clusterNames": ["test-cluster"]}}),
])
def test_get_applied_placement(annotations: dict[str, str], expected: Any) -> None:
    assert get_applied_placement(annotations) == expected


@pytest.mark.parametrize("value", ["", "invalid-json", "[1]", '"text"'])
def test_get_applied_placement_rejects_what_is_not_a_placement(value: str) -> None:
    with pytest.raises(ValueError, match="invalid applied placement"):
        get_applied_placement({APPLIED_PLACEMENT_ANNOTATION: value})


# ----------------------------------------------------------------------------- needEvictionWithCurrentTime


@pytest.mark.parametrize("annotations", [
    pytest.param({}, id="annotation missing"),
    pytest.param(annotated("invalid-json"), id="invalid JSON"),
    pytest.param(annotated(""), id="empty annotation"),
])
def test_need_eviction_without_placement_is_an_error(annotations: dict[str, str]) -> None:
    with pytest.raises(PlacementError):
        need_eviction_with_current_time(cluster(taint("test-key", added=ONE_SECOND_AGO)), annotations, NOW)


@pytest.mark.parametrize(("annotation", "test_cluster", "enabled", "expected"), [
    pytest.param(AFFINITY_ONLY, None, True, (False, -1), id="cluster not found"),
    pytest.param(AFFINITY_ONLY, cluster(taint("test-key")), False, (False, -1), id="eviction disabled"),
    pytest.param(AFFINITY_ONLY, cluster(taint("test-key", "NoSchedule")), True, (False, -1), id="no NoExecute taint"),
    pytest.param(placement([]), cluster(taint("test-key", added=ONE_SECOND_AGO)), True, (True, 0),
                 id="not tolerated"),
    pytest.param(placement([exists("test-key", 0)]), cluster(taint("test-key", added=ONE_SECOND_AGO)), True,
                 (True, 0), id="tolerated, 0 s"),
    pytest.param(placement([exists("test-key", 60)]), cluster(taint("test-key", added=ONE_SECOND_AGO)), True,
                 (False, 59), id="tolerated, 60 s"),
    pytest.param(placement([exists("test-key")]), cluster(taint("test-key", added=ONE_SECOND_AGO)), True,
                 (False, -1), id="tolerated forever"),
    pytest.param(placement([exists("tolerated-key", 30)]),
                 cluster(taint("tolerated-key", added=ONE_SECOND_LATER),
                         taint("not-tolerated-key", added=ONE_SECOND_AGO)),
                 True, (True, 0), id="mixed"),
    pytest.param(placement([exists("test-key", 1)]),
                 cluster(taint("test-key", added=format_time(NOW - timedelta(seconds=2)))), True, (True, 0),
                 id="expired"),
])
def test_need_eviction_with_current_time(annotation: str, test_cluster: dict[str, Any] | None, enabled: bool,
                                         expected: tuple[bool, float]) -> None:
    assert need_eviction_with_current_time(test_cluster, annotated(annotation), NOW, enabled=enabled) == expected


# ----------------------------------------------------------------------------- enqueueBinding


def action(delay: float | None) -> str:
    if delay is None:
        return "skip"
    return "immediate" if delay == 0 else "delayed"


TWO_TAINTS = [taint("key1", added=ONE_SECOND_AGO), taint("key2", added=ONE_SECOND_AGO)]


@pytest.mark.parametrize(("taints", "annotations", "expected"), [
    pytest.param([], {}, "skip", id="no taints"),
    pytest.param([taint("test-key", added=ONE_SECOND_AGO)], {}, "immediate", id="no annotation"),
    pytest.param([taint("test-key", added=ONE_SECOND_AGO)], annotated("invalid-json"), "immediate",
                 id="invalid JSON"),
    pytest.param([taint("test-key", added=ONE_SECOND_AGO)], annotated(placement([], ("member1",))), "immediate",
                 id="empty tolerations"),
    pytest.param([taint("test-key", added=ONE_SECOND_AGO)], annotated(placement([exists("test-key", 60)])), "delayed",
                 id="60 s unexpired"),
    pytest.param([taint("test-key", added=ONE_SECOND_AGO)], annotated(placement([exists("test-key")])), "skip",
                 id="no seconds"),
    pytest.param([taint("tolerated-key", added=ONE_SECOND_AGO), taint("not-tolerated-key", added=ONE_SECOND_AGO)],
                 annotated(placement([exists("tolerated-key")])), "immediate", id="one of two untolerated"),
    pytest.param(TWO_TAINTS, annotated(placement([exists("key1"), exists("key2")])), "skip",
                 id="both tolerated forever"),
    pytest.param(TWO_TAINTS, annotated(placement([exists("key1"), exists("key2", 120)])), "delayed",
                 id="one forever + one 120 s"),
])
def test_enqueue_binding(taints: list[dict[str, Any]], annotations: dict[str, str], expected: str) -> None:
    assert action(enqueue_delay(taints, annotations, NOW)) == expected


def test_enqueue_delay_is_the_time_left() -> None:
    assert enqueue_delay([taint("test-key", added=ONE_SECOND_AGO)], annotated(placement([exists("test-key", 60)])),
                         NOW) == 59
    assert enqueue_delay(TWO_TAINTS, annotated(placement([exists("key1"), exists("key2", 120)])), NOW) == 119


# ----------------------------------------------------------------------------- getPurgeMode


@pytest.mark.parametrize(("failover", "flag", "expected"), [
    pytest.param(None, "", "Gracefully", id="nil, flag empty"),
    pytest.param(None, "Directly", "Directly", id="nil, Directly"),
    pytest.param(None, "Gracefully", "Gracefully", id="nil, Gracefully"),
    pytest.param({}, "Directly", "Directly", id="failover without cluster"),
    pytest.param({"cluster": {"purgeMode": ""}}, "Directly", "Gracefully", id="cluster purgeMode empty"),
    pytest.param({"cluster": {"purgeMode": "Directly"}}, "Gracefully", "Directly", id="cluster Directly"),
    pytest.param({"cluster": {"purgeMode": "Gracefully"}}, "Directly", "Gracefully", id="cluster Gracefully"),
])
def test_get_purge_mode(failover: dict[str, Any] | None, flag: str, expected: str) -> None:
    assert get_purge_mode(failover, flag) == expected


# ----------------------------------------------------------------------------- syncBindingEviction

UNREACHABLE_ONLY = ('{"clusterAffinity":{"clusterNames":["member1","member2"]},"clusterTolerations":[{"key":'
                    '"cluster.karmada.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":30}],'
                    '"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted",'
                    '"weightPreference":{"staticWeightList":[{"targetCluster":{"clusterNames":["member1"]},"weight":1},'
                    '{"targetCluster":{"clusterNames":["member2"]},"weight":1}]}}}')
NOT_READY_AND_UNREACHABLE = UNREACHABLE_ONLY.replace(
    '"clusterTolerations":[', '"clusterTolerations":[{"key":"cluster.karmada.io/not-ready","operator":"Exists",'
    '"effect":"NoExecute","tolerationSeconds":30},')
NOT_READY_CLUSTER = cluster(taint("cluster.karmada.io/not-ready"))  # no timeAdded


def binding(annotation: str, *, namespace: str = "default") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "test-rb" if namespace else "test-crb",
                            "annotations": {APPLIED_PLACEMENT_ANNOTATION: annotation}}
    if namespace:
        meta["namespace"] = namespace
    kind = "ResourceBinding" if namespace else "ClusterResourceBinding"
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": kind, "metadata": meta,
            "spec": {"clusters": [{"name": "test-cluster", "replicas": 1}]}}


@pytest.mark.parametrize("namespace", ["default", ""], ids=["RB", "CRB"])
def test_sync_binding_eviction_untolerated(namespace: str) -> None:
    original = binding(UNREACHABLE_ONLY, namespace=namespace)
    decision = decide_binding_eviction(original, "test-cluster", NOT_READY_CLUSTER, now=NOW)
    assert decision.binding is not None
    assert decision.binding["spec"] == {"gracefulEvictionTasks": [
        {"fromCluster": "test-cluster", "purgeMode": "Gracefully", "replicas": 1, "reason": "TaintUntolerated",
         "producer": "TaintManager"}]}
    assert decision.binding["metadata"] == original["metadata"]
    assert original["spec"] == {"clusters": [{"name": "test-cluster", "replicas": 1}]}  # the input is not modified


@pytest.mark.parametrize("namespace", ["default", ""], ids=["RB", "CRB"])
def test_sync_binding_eviction_tolerated_without_time_added(namespace: str) -> None:
    decision = decide_binding_eviction(binding(NOT_READY_AND_UNREACHABLE, namespace=namespace), "test-cluster",
                                       NOT_READY_CLUSTER, now=NOW)
    assert decision.binding is None
    assert decision.wait == 0  # tolerated forever: nothing to come back for


@pytest.mark.parametrize("namespace", ["default", ""], ids=["RB", "CRB"])
def test_sync_binding_eviction_binding_missing(namespace: str) -> None:
    assert decide_binding_eviction(None, "test-cluster", NOT_READY_CLUSTER, now=NOW).binding is None


@pytest.mark.parametrize("namespace", ["default", ""], ids=["RB", "CRB"])
def test_sync_binding_eviction_cluster_missing(namespace: str) -> None:
    decision = decide_binding_eviction(binding(UNREACHABLE_ONLY, namespace=namespace), "test-cluster", None, now=NOW)
    assert decision.binding is None
    assert decision.wait == 0


def test_sync_binding_eviction_waits_for_a_finite_toleration() -> None:
    tainted = cluster(taint("cluster.karmada.io/not-ready", added=ONE_SECOND_AGO))
    decision = decide_binding_eviction(binding(NOT_READY_AND_UNREACHABLE), "test-cluster", tainted, now=NOW)
    assert (decision.binding, decision.wait) == (None, 29)


def test_sync_binding_eviction_skips_deleting_or_unscheduled_bindings() -> None:
    deleting = binding(UNREACHABLE_ONLY)
    deleting["metadata"]["deletionTimestamp"] = format_time(NOW)
    assert decide_binding_eviction(deleting, "test-cluster", NOT_READY_CLUSTER, now=NOW).binding is None
    assert decide_binding_eviction(binding(UNREACHABLE_ONLY), "other", cluster(taint("k"), name="other"),
                                   now=NOW).binding is None


def test_sync_binding_eviction_with_a_bad_placement_is_an_error() -> None:
    broken = binding("invalid-json")
    with pytest.raises(PlacementError):
        decide_binding_eviction(broken, "test-cluster", NOT_READY_CLUSTER, now=NOW)


def test_sync_binding_eviction_purge_mode_from_binding_and_flag() -> None:
    directly = decide_binding_eviction(binding(UNREACHABLE_ONLY), "test-cluster", NOT_READY_CLUSTER, now=NOW,
                                       purge_mode="Directly").binding
    assert directly is not None
    assert directly["spec"]["gracefulEvictionTasks"][0]["purgeMode"] == "Directly"
    own = binding(UNREACHABLE_ONLY)
    own["spec"]["failover"] = {"cluster": {"purgeMode": "Gracefully"}}
    evicted = decide_binding_eviction(own, "test-cluster", NOT_READY_CLUSTER, now=NOW, purge_mode="Directly").binding
    assert evicted is not None
    assert evicted["spec"]["gracefulEvictionTasks"][0]["purgeMode"] == "Gracefully"


# ------------------------------------------------------------------ GracefulEvictCluster (binding_types_helper.go)


def test_graceful_evict_cluster_keeps_other_clusters_and_omits_zero_replicas() -> None:
    spec: dict[str, Any] = {"clusters": [{"name": "member1"}, {"name": "member2", "replicas": 2}]}
    assert graceful_evict_cluster(spec, "member1", purge_mode="Gracefully", reason="TaintUntolerated",
                                  producer="TaintManager")
    assert spec == {"clusters": [{"name": "member2", "replicas": 2}], "gracefulEvictionTasks": [
        {"fromCluster": "member1", "purgeMode": "Gracefully", "reason": "TaintUntolerated",
         "producer": "TaintManager"}]}


def test_graceful_evict_cluster_not_in_clusters_is_a_no_op() -> None:
    spec: dict[str, Any] = {"clusters": [{"name": "member2"}]}
    assert not graceful_evict_cluster(spec, "member1", reason="TaintUntolerated", producer="TaintManager")
    assert spec == {"clusters": [{"name": "member2"}]}


def test_graceful_evict_cluster_with_an_existing_task_only_removes_the_cluster() -> None:
    existing = {"fromCluster": "member1", "reason": "ApplicationFailure", "producer": "other",
                "creationTimestamp": ONE_SECOND_AGO}
    spec: dict[str, Any] = {"clusters": [{"name": "member1", "replicas": 3}], "gracefulEvictionTasks": [existing]}
    assert graceful_evict_cluster(spec, "member1", reason="TaintUntolerated", producer="TaintManager")
    assert spec == {"gracefulEvictionTasks": [existing]}


def test_graceful_evict_cluster_carries_every_option() -> None:
    spec: dict[str, Any] = {"clusters": [{"name": "member1", "replicas": 3}]}
    graceful_evict_cluster(spec, "member1", purge_mode="Never", reason="ApplicationFailure", message="m",
                           producer="p", grace_period_seconds=30, suppress_deletion=True,
                           preserved_label_state={"a": "b"}, clusters_before_failover=["member1"])
    assert spec["gracefulEvictionTasks"] == [{
        "fromCluster": "member1", "purgeMode": "Never", "replicas": 3, "reason": "ApplicationFailure", "message": "m",
        "producer": "p", "gracePeriodSeconds": 30, "suppressDeletion": True, "preservedLabelState": {"a": "b"},
        "clustersBeforeFailover": ["member1"]}]


# ----------------------------------------------------------------------------- syncCluster routing


def store_of(*objects: dict[str, Any]) -> Indexer:
    store = Indexer({RB_INDEX_BY_CLUSTER: bindings_by_cluster, CRB_INDEX_BY_CLUSTER: bindings_by_cluster})
    for obj in objects:
        store.upsert(obj)
    return store


def scheduled(name: str, annotation: str, namespace: str = "default") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "annotations": {APPLIED_PLACEMENT_ANNOTATION: annotation}}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, "spec": {"clusters": [{"name": "test-cluster", "replicas": 1}]}}


async def _noop(_request: Request) -> Result:
    return Result()


async def test_sync_cluster_routes_bindings_to_their_queues() -> None:
    """``Test_syncCluster_enqueuesBindingsCorrectly``: skip / delayed / immediate, CRBs to the CRB queue."""
    added = format_time(datetime.now(UTC) - timedelta(seconds=1))
    clusters = Indexer()
    clusters.upsert(cluster(taint("cluster.karmada.io/maintenance", added=added)))
    rbs = store_of(scheduled("infinite-rb", placement([exists("cluster.karmada.io/maintenance")])),
                   scheduled("finite-rb", placement([exists("cluster.karmada.io/maintenance", 142)])),
                   scheduled("no-toleration-rb", placement([])),
                   {"metadata": {"name": "elsewhere-rb", "namespace": "default"},
                    "spec": {"clusters": [{"name": "other"}]}})
    crbs = store_of(scheduled("no-toleration-crb", placement([]), namespace=""))
    rb_worker = Controller("test-binding-eviction", _noop)
    crb_worker = Controller("test-cluster-binding-eviction", _noop)
    reconciler = ClusterTaintReconciler(clusters, rbs, crbs, rb_worker, crb_worker, enabled=True)
    result = await reconciler.reconcile(Request("", "test-cluster"))
    assert result == Result(requeue_after=CLUSTER_TAINT_EVICTION_RETRY_FREQUENCY)
    assert rb_worker.queue.get_nowait() == EvictionKey("default", "no-toleration-rb", "test-cluster")
    assert rb_worker.queue.get_nowait() is None
    assert rb_worker.queue.waiting() == 1  # finite-rb, after its 142 s
    assert crb_worker.queue.get_nowait() == EvictionKey("", "no-toleration-crb", "test-cluster")
    assert crb_worker.queue.waiting() == 0
    rb_worker.queue.shut_down()
    crb_worker.queue.shut_down()


@pytest.mark.parametrize(("taints", "enabled"), [
    pytest.param([], True, id="no taints"),
    pytest.param([taint("test-taint", value="test-value")], False, id="have taints, eviction disabled"),
    pytest.param([taint("test-taint", "NoSchedule")], True, id="only NoSchedule"),
])
async def test_cluster_reconcile_short_path(taints: list[dict[str, Any]], enabled: bool) -> None:
    clusters = Indexer()
    clusters.upsert(cluster(*taints))
    rb_worker = Controller("test-binding-eviction", _noop)
    crb_worker = Controller("test-cluster-binding-eviction", _noop)
    reconciler = ClusterTaintReconciler(clusters, store_of(scheduled("test-rb", placement([]))),
                                        store_of(scheduled("test-crb", placement([]), namespace="")),
                                        rb_worker, crb_worker, enabled=enabled)
    assert await reconciler.reconcile(Request("", "test-cluster")) == Result()
    assert await reconciler.reconcile(Request("", "missing")) == Result()  # cluster not found
    assert len(rb_worker.queue) == len(crb_worker.queue) == 0


def test_bindings_index_by_cluster_names() -> None:
    assert bindings_by_cluster({"spec": {"clusters": [{"name": "a"}, {"name": "b", "replicas": 2}]}}) == ["a", "b"]
    assert binding_cluster_names({}) == []


# ----------------------------------------------------------------------------- pacing and events


@pytest.mark.parametrize(("rate", "delay"), [(0.5, 2.0), (10, 0.1), (0, MAX_EVICTION_DELAY)])
def test_eviction_rate_limiter(rate: float, delay: float) -> None:
    limiter = EvictionRateLimiter(rate)
    assert limiter.when("x") == pytest.approx(delay)
    assert limiter.num_requeues("x") == 0


def test_eviction_rate_combined_with_the_controller_limiter() -> None:
    limiter = eviction_rate_limiter(0.5)
    key = Request("", "k")
    assert limiter.when(key) == pytest.approx(2.0)  # the rate dominates the 5 ms first backoff
    for _ in range(12):
        limiter.when(key)
    assert limiter.when(key) > 2.0  # 5 ms * 2^13 ≈ 41 s: the backoff dominates repeated failures
    limiter.forget(key)
    assert limiter.when(key) == pytest.approx(2.0)


def test_eviction_rate_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        EvictionRateLimiter(-1)


def test_template_reference_for_events() -> None:
    rb = {"spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                                "name": "nginx", "uid": "u1", "resourceVersion": "7"}}}
    assert template_reference(rb) == {"apiVersion": "apps/v1", "kind": "Deployment",
                                      "metadata": {"name": "nginx", "namespace": "default", "uid": "u1"}}
    assert template_reference({"spec": {}}) is None
