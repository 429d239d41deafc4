"""Scheduler rules as pure functions: the rows of Karmada's ``pkg/scheduler/helper_test.go`` at commit
f8fdd02 (placementChanged, getConditionByError, getAffinityIndex), scheduler_test's doSchedule
decisions, FitError, the filters, ClusterMatches, the algorithm's selection and estimation, and the
status the scheduler writes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller_manager.apierrors import ApiError
from devplane.karmada.events import template_reference
from devplane.karmada.scheduler.algorithm import Algorithm, order_candidates, select_best_clusters
from devplane.karmada.scheduler.controller import (
    RECONCILE_SCHEDULE,
    SCALE_SCHEDULE,
    affected_by_cluster,
    binding_predicate,
    cluster_changed,
    condition_for,
    placement_changed,
    result_message,
    schedulable,
    schedule_type,
    scheduled_status,
    status_merge_patch,
)
from devplane.karmada.scheduler.division import (
    AggregateError,
    Candidate,
    SchedulingError,
    UnschedulableError,
    WrappedError,
)
from devplane.karmada.scheduler.filters import (
    API_DISABLED,
    API_ENABLED,
    API_UNKNOWN,
    REASON_AFFINITY,
    REASON_EVICTION,
    REASON_NO_API,
    REASON_NO_PROVIDER,
    REASON_NO_REGION,
    REASON_NO_ZONES,
    FitError,
    affinity_index,
    api_enablement,
    run_filters,
    taint_to_string,
)
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION, PP_PERMANENT_ID
from karmada_api.placement import (
    cluster_matches,
    is_binding_replicas_changed,
    is_workload,
    reschedule_required,
    strategy_type,
)

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx", "uid": "u-1"}
APPS_V1 = [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}]
DYNAMIC = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
           "weightPreference": {"dynamicWeight": "AvailableReplicas"}}


def cluster(name: str, *, labels: dict[str, str] | None = None, taints: list[dict[str, Any]] | None = None,
            apis: list[dict[str, Any]] | None = None, deleting: bool = False, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "generation": 1}
    if labels:
        meta["labels"] = labels
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"syncMode": "Push", **({"taints": taints} if taints else {}), **spec},
            "status": {"apiEnablements": APPS_V1 if apis is None else apis}}


def binding(placement: dict[str, Any] | None = None, *, replicas: int = 2, clusters: list[dict[str, Any]] | None = None,
            annotation: str | None = None, status: dict[str, Any] | None = None, generation: int = 1,
            **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "nginx-deployment", "namespace": "default", "generation": generation,
                            "labels": {PP_PERMANENT_ID: "id"}}
    if annotation is not None:
        meta["annotations"] = {APPLIED_PLACEMENT_ANNOTATION: annotation}
    body: dict[str, Any] = {"resource": dict(DEPLOYMENT), "replicas": replicas,
                            "placement": placement if placement is not None else {}, **spec}
    if clusters is not None:
        body["clusters"] = clusters
    return {"metadata": meta, "spec": body, "status": status or {}}


# ----------------------------------------------------------------------------- placementChanged (helper_test.go)

AFFINITY_1 = {"clusterNames": ["member1"]}
AFFINITY_2 = {"clusterNames": ["member1", "member2"]}
TERMS = [{"affinityName": "group1", "clusterNames": ["member1"]},
         {"affinityName": "group2", "clusterNames": ["member2"]}]


def with_terms(terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"clusterAffinities": terms}


@pytest.mark.parametrize(("case", "placement", "applied", "observed", "expected"), [
    ("annotation missing", {"clusterAffinity": AFFINITY_1}, None, "", True),
    ("identical", {"clusterAffinity": AFFINITY_1}, {"clusterAffinity": AFFINITY_1}, "", False),
    ("clusterAffinity differs", {"clusterAffinity": AFFINITY_2}, {"clusterAffinity": AFFINITY_1}, "", True),
    ("clusterTolerations differ", {"clusterTolerations": [{"key": "a", "operator": "Exists"}]}, {}, "", True),
    ("spreadConstraints differ", {"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1}]},
     {"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2}]}, "", True),
    ("replicaScheduling differs", {"replicaScheduling": DYNAMIC},
     {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}, "", True),
    ("clusterAffinities differ, observed name empty", with_terms(TERMS), with_terms(TERMS[:1]), "", True),
    ("observed term updated", with_terms([{"affinityName": "group1", "clusterNames": ["member3"]}, TERMS[1]]),
     with_terms(TERMS), "group1", True),
    ("observed term deleted", with_terms(TERMS[1:]), with_terms(TERMS), "group1", True),
    ("all terms deleted", {}, with_terms(TERMS), "group1", True),
    ("other term added", with_terms([*TERMS, {"affinityName": "group3", "clusterNames": ["member3"]}]),
     with_terms(TERMS), "group1", False),
    ("other term updated", with_terms([TERMS[0], {"affinityName": "group2", "clusterNames": ["member4"]}]),
     with_terms(TERMS), "group1", False),
    ("other term deleted", with_terms(TERMS[:1]), with_terms(TERMS), "group1", False),
    ("absent equals zero", {"clusterAffinity": {"clusterNames": ["member1"], "exclude": []}},
     {"clusterAffinity": AFFINITY_1}, "", False),
])
def test_placement_changed(case: str, placement: dict[str, Any], applied: dict[str, Any] | None, observed: str,
                           expected: bool) -> None:
    text = "" if applied is None else json.dumps(applied)
    assert placement_changed(placement, text, observed) is expected, case


def test_placement_changed_unparseable_annotation_is_unchanged() -> None:
    assert placement_changed({"clusterAffinity": AFFINITY_1}, "{not json", "") is False


def test_placement_changed_null_annotation_is_the_zero_placement() -> None:
    assert placement_changed({}, "null", "") is False
    assert placement_changed({"clusterAffinity": AFFINITY_1}, "null", "") is True


# ----------------------------------------------------------------------------- getConditionByError (helper_test.go)


def fit_error() -> FitError:
    return FitError(2, {"member1": [REASON_AFFINITY], "member2": [REASON_AFFINITY]})


@pytest.mark.parametrize(("case", "err", "status", "reason", "ignore"), [
    ("nil", None, "True", "Success", True),
    ("aggregate of an empty error", AggregateError([Exception("")]), "False", "SchedulerError", False),
    ("fit error", fit_error(), "False", "NoClusterFit", True),
    ("aggregate with a fit error", AggregateError([fit_error(), Exception("")]), "False", "NoClusterFit", False),
    ("unschedulable", UnschedulableError("Clusters available replicas 3 are not enough to schedule."), "False",
     "Unschedulable", False),
    ("doubly wrapped unschedulable", WrappedError("failed to assign replicas", WrappedError(
        "failed to scale up", UnschedulableError("no"))), "False", "Unschedulable", False),
    ("quota exceeded", AggregateError([ApiError(403, "QuotaExceeded", "exceeded quota: q")]), "False",
     "QuotaExceeded", False),
    ("other", SchedulingError("boom"), "False", "SchedulerError", False),
])
def test_condition_for(case: str, err: BaseException | None, status: str, reason: str, ignore: bool) -> None:
    condition, ignored = condition_for(err)
    assert (condition["type"], condition["status"], condition["reason"], ignored) == (
        "Scheduled", status, reason, ignore), case
    assert "observedGeneration" not in condition
    if err is None:
        assert condition["message"] == "Binding has been scheduled successfully."


def test_condition_messages() -> None:
    wrapped = WrappedError("failed to assign replicas", WrappedError("failed to scale up", UnschedulableError(
        "Clusters available replicas 3 are not enough to schedule.")))
    assert condition_for(wrapped)[0]["message"] == (
        "failed to assign replicas: failed to scale up: Clusters available replicas 3 are not enough to schedule.")
    quota = ApiError(403, "QuotaExceeded", "exceeded quota: q")
    assert condition_for(AggregateError([quota]))[0]["message"] == "exceeded quota: q"
    assert str(AggregateError([Exception("a"), Exception("b")])) == "[a, b]"


# ----------------------------------------------------------------------------- getAffinityIndex


@pytest.mark.parametrize(("name", "expected"), [("", 0), ("unknown", 0), ("group1", 0), ("group2", 1)])
def test_get_affinity_index(name: str, expected: int) -> None:
    assert affinity_index(TERMS, name) == expected


# ----------------------------------------------------------------------------- doSchedule decisions (scheduler_test.go)


def not_deleting(_name: str) -> bool:
    return False


def test_do_schedule_placement_changed() -> None:
    rb = binding({"clusterAffinity": AFFINITY_2}, annotation=json.dumps({"clusterAffinity": AFFINITY_1}))
    assert schedule_type(rb, not_deleting) == RECONCILE_SCHEDULE


def test_do_schedule_without_annotation() -> None:
    rb = binding({"replicaScheduling": {"replicaSchedulingType": "Divided"}}, replicas=2)
    assert schedule_type(rb, not_deleting) == RECONCILE_SCHEDULE


def test_do_schedule_reschedule_triggered() -> None:
    rb = binding({}, annotation="{}", rescheduleTriggeredAt="2025-01-01T00:00:10Z",
                 status={"lastScheduledTime": "2025-01-01T00:00:00Z"})
    assert schedule_type(rb, not_deleting) == RECONCILE_SCHEDULE


def steady(**changes: Any) -> dict[str, Any]:
    """A dynamically divided binding whose last schedule is still valid."""
    placement = {"replicaScheduling": DYNAMIC}
    args: dict[str, Any] = {"replicas": 3, "clusters": [{"name": "member1", "replicas": 2},
                                                        {"name": "member2", "replicas": 1}],
                            "annotation": json.dumps(placement),
                            "status": {"lastScheduledTime": "2025-01-01T00:00:00Z", "schedulerObservedGeneration": 1}}
    args.update(changes)
    return binding(placement, **args)


def test_do_schedule_nothing_to_do() -> None:
    assert schedule_type(steady(), not_deleting) is None


def test_do_schedule_replicas_changed_is_a_scale_schedule() -> None:
    assert schedule_type(steady(replicas=5), not_deleting) == SCALE_SCHEDULE


def test_do_schedule_trigger_not_after_last_schedule_is_ignored() -> None:
    assert schedule_type(steady(rescheduleTriggeredAt="2025-01-01T00:00:00Z"), not_deleting) is None
    assert schedule_type(steady(rescheduleTriggeredAt="2025-01-01T00:00:01Z"), not_deleting) == RECONCILE_SCHEDULE


def test_do_schedule_duplicated_and_non_workloads_always_schedule() -> None:
    duplicated = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    rb = binding(duplicated, replicas=2, clusters=[{"name": "member1", "replicas": 2}],
                 annotation=json.dumps(duplicated))
    assert schedule_type(rb, not_deleting) == RECONCILE_SCHEDULE
    non_workload = steady(replicas=0, clusters=[{"name": "member1"}])
    assert schedule_type(non_workload, not_deleting) == RECONCILE_SCHEDULE


def test_do_schedule_deleting_target_cluster() -> None:
    assert schedule_type(steady(), lambda name: name == "member2") == RECONCILE_SCHEDULE


@pytest.mark.parametrize(("spec", "strategy", "expected"), [
    ({"replicas": 3, "clusters": [{"name": "a", "replicas": 3}]}, None, False),
    ({"replicas": 3, "clusters": [{"name": "a", "replicas": 3}]}, {"replicaSchedulingType": "Duplicated"}, False),
    ({"replicas": 4, "clusters": [{"name": "a", "replicas": 3}]}, {"replicaSchedulingType": "Duplicated"}, True),
    ({"replicas": 3, "clusters": [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 1}]},
     {"replicaSchedulingType": "Divided"}, False),
    ({"replicas": 5, "clusters": [{"name": "a", "replicas": 2}, {"name": "b", "replicas": 1}]},
     {"replicaSchedulingType": "Divided"}, True),
])
def test_is_binding_replicas_changed(spec: dict[str, Any], strategy: dict[str, Any] | None, expected: bool) -> None:
    assert is_binding_replicas_changed(spec, strategy) is expected


@pytest.mark.parametrize(("trigger", "last", "expected"), [
    (None, "2025-01-01T00:00:00Z", False),
    ("2025-01-01T00:00:01Z", None, False),
    ("2025-01-01T00:00:00Z", "2025-01-01T00:00:00Z", False),
    ("2025-01-01T00:00:00.900Z", "2025-01-01T00:00:00Z", False),  # second precision
    ("2025-01-01T00:00:01Z", "2025-01-01T00:00:00Z", True),
])
def test_reschedule_required(trigger: str | None, last: str | None, expected: bool) -> None:
    assert reschedule_required(trigger, last) is expected


def test_is_workload() -> None:
    assert is_workload({"replicas": 1})
    assert is_workload({"replicaRequirements": {}})
    assert is_workload({"components": [{"name": "c"}]})
    assert not is_workload({"replicas": 0})


@pytest.mark.parametrize(("placement", "expected"), [
    ({}, "Duplicated"),
    ({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}},
     "Aggregated"),
    ({"replicaScheduling": DYNAMIC}, "DynamicWeight"),
    ({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}},
     "StaticWeight"),
    ({"replicaScheduling": {"replicaSchedulingType": "Divided"}}, ""),
])
def test_strategy_type(placement: dict[str, Any], expected: str) -> None:
    assert strategy_type(placement) == expected


def test_success_event_messages() -> None:
    result = [{"name": "cluster1", "replicas": 1}]
    assert result_message(result, cluster_scoped=False) == (
        "Binding has been scheduled successfully. Result: {cluster1:1}")
    assert result_message(result, cluster_scoped=True) == "Binding has been scheduled successfully. Result {cluster1:1}"
    assert result_message([{"name": "m1", "replicas": 2}, {"name": "m2"}], cluster_scoped=False).endswith(
        "Result: {m1:2, m2:0}")


def test_template_reference() -> None:
    assert template_reference(binding()) == {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "uid": "u-1"}}


# ----------------------------------------------------------------------------- event intake (event_handler.go)


def test_schedulable_needs_label_scheduler_name_and_no_suspension() -> None:
    rb = binding()
    assert schedulable(rb)
    assert not schedulable({**rb, "metadata": {**rb["metadata"], "labels": {}}})
    assert not schedulable(binding(schedulerName="other"))
    assert schedulable(binding(schedulerName="other"), "other")
    assert not schedulable(binding(suspension={"scheduling": True}))


def test_binding_updates_only_on_generation_change() -> None:
    predicate = binding_predicate("default-scheduler")
    old = binding(generation=1)
    assert predicate.create(old)
    assert not predicate.update(old, binding(generation=1, status={"lastScheduledTime": "2025-01-01T00:00:00Z"}))
    assert predicate.update(old, binding(generation=2))
    hidden = {**old, "metadata": {**old["metadata"], "labels": {}}}
    assert predicate.update(hidden, old)  # becomes visible: an add
    assert not predicate.delete(old)


def test_cluster_changes_that_requeue() -> None:
    old = cluster("member1")
    assert not cluster_changed(old, {**old, "status": {"resourceSummary": {}}})
    assert cluster_changed(old, cluster("member1", labels={"a": "b"}))
    assert cluster_changed(old, {**old, "metadata": {**old["metadata"], "generation": 2}})
    assert cluster_changed(old, cluster("member1", deleting=True))


def test_affected_bindings() -> None:
    member1, member2 = cluster("member1"), cluster("member2")
    assert affected_by_cluster(binding({}), member2)
    assert affected_by_cluster(binding({"clusterAffinity": AFFINITY_1}), member1)
    assert not affected_by_cluster(binding({"clusterAffinity": AFFINITY_1}), member2)
    observed = {"schedulerObservingAffinityName": "group2", "schedulerObservedGeneration": 1}
    assert affected_by_cluster(binding(with_terms(TERMS), status=observed), member2)
    assert not affected_by_cluster(binding(with_terms(TERMS), status=observed), member1)
    assert affected_by_cluster(binding(with_terms(TERMS), status=observed, generation=2), member1)


# ----------------------------------------------------------------------------- status written


def test_scheduled_status_success_and_failure() -> None:
    ok = condition_for(None)[0]
    status = scheduled_status({}, ok, 3, "2025-01-01T00:00:00Z")
    assert status["schedulerObservedGeneration"] == 3
    assert status["lastScheduledTime"] == "2025-01-01T00:00:00Z"
    [cond] = status["conditions"]
    assert cond["lastTransitionTime"]
    again = scheduled_status(status, ok, 4, "2025-01-01T00:00:05Z")
    assert again["conditions"][0]["lastTransitionTime"] == cond["lastTransitionTime"]  # status unchanged
    failed = scheduled_status(again, condition_for(SchedulingError("x"))[0], 5, "2025-01-01T00:00:09Z")
    assert failed["schedulerObservedGeneration"] == 4  # only success moves these
    assert failed["lastScheduledTime"] == "2025-01-01T00:00:05Z"
    assert failed["conditions"][0]["reason"] == "SchedulerError"
    assert scheduled_status(failed, ok, 5, "t", "group1")["schedulerObservingAffinityName"] == "group1"


def test_status_merge_patch() -> None:
    assert status_merge_patch({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 5, "d": 4}) == {"b": 5, "c": None, "d": 4}


# ----------------------------------------------------------------------------- FitError and filters


def test_fit_error_text() -> None:
    err = FitError(3, {"member1": [REASON_NO_API], "member2": [REASON_AFFINITY], "member3": [REASON_AFFINITY]})
    assert str(err) == ("0/3 clusters are available: 1 cluster(s) did not have the API resource, "
                        "2 cluster(s) did not match the placement cluster affinity constraint.")
    assert str(FitError(0, {})) == "0/0 clusters are available: no cluster exists."
    assert str(FitError(1, {})) == "0/1 clusters are available: no cluster exists."


def test_api_enablement() -> None:
    assert api_enablement(cluster("m"), "apps/v1", "Deployment") == API_ENABLED
    assert api_enablement(cluster("m"), "v1", "ConfigMap") == API_UNKNOWN
    complete = cluster("m")
    complete["status"]["conditions"] = [{"type": "CompleteAPIEnablements", "status": "True"}]
    assert api_enablement(complete, "v1", "ConfigMap") == API_DISABLED


@pytest.mark.parametrize(("case", "member", "spec", "status", "reason"), [
    ("feasible", cluster("m1"), binding()["spec"], {}, None),
    ("api missing", cluster("m1", apis=[]), binding()["spec"], {}, REASON_NO_API),
    ("api missing but already scheduled", cluster("m1", apis=[]),
     binding(clusters=[{"name": "m1", "replicas": 1}])["spec"], {}, None),
    ("untolerated NoSchedule", cluster("m1", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
     binding()["spec"], {}, "cluster(s) had untolerated taint {k=v:NoSchedule}"),
    ("untolerated NoExecute without value", cluster("m1", taints=[{"key": "k", "effect": "NoExecute"}]),
     binding()["spec"], {}, "cluster(s) had untolerated taint {k:NoExecute}"),
    ("PreferNoSchedule ignored", cluster("m1", taints=[{"key": "k", "effect": "PreferNoSchedule"}]),
     binding()["spec"], {}, None),
    ("tolerated", cluster("m1", taints=[{"key": "k", "effect": "NoSchedule"}]),
     binding({"clusterTolerations": [{"key": "k", "operator": "Exists"}]})["spec"], {}, None),
    ("taint on a cluster already scheduled", cluster("m1", taints=[{"key": "k", "effect": "NoExecute"}]),
     binding(clusters=[{"name": "m1", "replicas": 1}])["spec"], {}, None),
    ("affinity", cluster("m2"), binding({"clusterAffinity": {"clusterNames": ["m1"]}})["spec"], {},
     REASON_AFFINITY),
    ("observed affinity term", cluster("m2"), binding(with_terms(TERMS))["spec"],
     {"schedulerObservingAffinityName": "group1"}, REASON_AFFINITY),
    ("no provider", cluster("m1"), binding({"spreadConstraints": [{"spreadByField": "provider"}]})["spec"], {},
     REASON_NO_PROVIDER),
    ("no region", cluster("m1"), binding({"spreadConstraints": [{"spreadByField": "region"}]})["spec"], {},
     REASON_NO_REGION),
    ("no zones", cluster("m1"), binding({"spreadConstraints": [{"spreadByField": "zone"}]})["spec"], {},
     REASON_NO_ZONES),
    ("being evicted", cluster("m1"),
     binding(gracefulEvictionTasks=[{"fromCluster": "m1", "reason": "TaintUntolerated", "producer": "x"}])["spec"],
     {}, REASON_EVICTION),
])
def test_filters(case: str, member: dict[str, Any], spec: dict[str, Any], status: dict[str, Any],
                 reason: str | None) -> None:
    assert run_filters(member, spec, status) == reason, case


def test_taint_to_string() -> None:
    assert taint_to_string({"key": "a", "value": "b", "effect": "NoSchedule"}) == "a=b:NoSchedule"
    assert taint_to_string({"key": "a", "effect": "NoExecute"}) == "a:NoExecute"


@pytest.mark.parametrize(("case", "affinity", "expected"), [
    ("empty", {}, True),
    ("names", {"clusterNames": ["m1", "m2"]}, True),
    ("not named", {"clusterNames": ["m2"]}, False),
    ("excluded", {"exclude": ["m1"]}, False),
    ("label selector", {"labelSelector": {"matchLabels": {"env": "prod"}}}, True),
    ("label selector no match", {"labelSelector": {"matchLabels": {"env": "dev"}}}, False),
    ("invalid selector", {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "In"}]}}, False),
    ("provider In", {"fieldSelector": {"matchExpressions": [{"key": "provider", "operator": "In",
                                                              "values": ["aws"]}]}}, True),
    ("region NotIn", {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "NotIn",
                                                              "values": ["eu"]}]}}, False),
    ("zones In (all zones)", {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "In",
                                                                      "values": ["z1", "z2"]}]}}, True),
    ("zones In (one missing)", {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "In",
                                                                        "values": ["z1"]}]}}, False),
    ("all parts ANDed", {"clusterNames": ["m1"], "labelSelector": {"matchLabels": {"env": "dev"}}}, False),
])
def test_cluster_matches(case: str, affinity: dict[str, Any], expected: bool) -> None:
    member = cluster("m1", labels={"env": "prod"}, provider="aws", region="eu", zones=["z1", "z2"])
    assert cluster_matches(member, affinity) is expected, case


def test_cluster_matches_zone_needs_zones() -> None:
    selector = {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z"]}]}}
    assert not cluster_matches(cluster("m1"), selector)


# ----------------------------------------------------------------------------- algorithm


def test_order_candidates() -> None:
    cands = [Candidate(cluster("b"), allocatable=5), Candidate(cluster("a"), allocatable=5),
             Candidate(cluster("c"), allocatable=1, score=100), Candidate(cluster("d"), allocatable=9)]
    assert [c.name for c in order_candidates(cands)] == ["c", "d", "a", "b"]


def test_select_swaps_in_clusters_with_more_resources() -> None:
    # spreadconstraint's example: need 80 from 2 clusters → member1 and member3
    cands = [Candidate(cluster("member1"), allocatable=40, score=60),
             Candidate(cluster("member2"), allocatable=30, score=50),
             Candidate(cluster("member3"), allocatable=60, score=40)]
    placement = {"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}],
                 "replicaScheduling": DYNAMIC}
    assert [c.name for c in select_best_clusters(cands, placement, 80)] == ["member1", "member3"]
    with pytest.raises(SchedulingError, match=r"^no enough resource when selecting 2 clusters$"):
        select_best_clusters(cands, placement, 101)
    with pytest.raises(SchedulingError, match=r"less than spreadConstraint\.MinGroups"):
        select_best_clusters(cands, {**placement, "spreadConstraints": [
            {"spreadByField": "cluster", "minGroups": 4, "maxGroups": 4}]}, 1)


def test_select_region_is_not_simulated() -> None:
    placement = {"spreadConstraints": [{"spreadByField": "region", "minGroups": 1},
                                       {"spreadByField": "cluster", "minGroups": 1}]}
    with pytest.raises(SchedulingError, match="not supported by the simulation"):
        select_best_clusters([Candidate(cluster("m1"))], placement, 1)
    with pytest.raises(SchedulingError, match=r"^just support cluster and region spread constraint$"):
        select_best_clusters([Candidate(cluster("m1"))], {"spreadConstraints": [{"spreadByField": "zone"}]}, 1)


def test_static_weight_ignores_spread_constraints() -> None:
    placement = {"spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 1}],
                 "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}
    cands = [Candidate(cluster("m1")), Candidate(cluster("m2"))]
    assert select_best_clusters(cands, placement, 2) == cands


class Estimator:
    def __init__(self, answer: dict[str, int]) -> None:
        self.answer = answer
        self.calls: list[tuple[list[str], Any, int]] = []

    async def __call__(self, clusters: list[dict[str, Any]], requirements: dict[str, Any] | None,
                       replicas: int) -> dict[str, int]:
        self.calls.append(([c["metadata"]["name"] for c in clusters], requirements, replicas))
        return dict(self.answer)


async def test_algorithm_dynamic_weight_and_missing_estimates() -> None:
    estimator = Estimator({"m1": 10})  # m2 unknown: gets spec.replicas
    algorithm = Algorithm(lambda: [cluster("m1"), cluster("m2")], estimator)
    spec = binding({"replicaScheduling": DYNAMIC}, replicas=4)["spec"]
    result = await algorithm.schedule(spec, {})
    assert {c["name"]: c["replicas"] for c in result} == {"m1": 3, "m2": 1}
    assert estimator.calls == [(["m1", "m2"], None, 4)]


async def test_algorithm_non_workload_does_not_estimate() -> None:
    estimator = Estimator({})
    algorithm = Algorithm(lambda: [cluster("m2"), cluster("m1")], estimator)
    result = await algorithm.schedule(binding({}, replicas=0)["spec"], {})
    assert result == [{"name": "m1"}, {"name": "m2"}]
    assert estimator.calls == []


async def test_algorithm_error_texts() -> None:
    algorithm = Algorithm(lambda: [cluster("m1")], Estimator({"m1": 3}))
    spec = binding({"replicaScheduling": DYNAMIC}, replicas=10)["spec"]
    with pytest.raises(SchedulingError) as caught:
        await algorithm.schedule(spec, {})
    assert str(caught.value) == ("failed to assign replicas: failed to scale up: "
                                 "Clusters available replicas 3 are not enough to schedule.")
    fresh = {**spec, "rescheduleTriggeredAt": "2025-01-01T00:00:01Z"}
    with pytest.raises(SchedulingError) as caught:
        await algorithm.schedule(fresh, {"lastScheduledTime": "2025-01-01T00:00:00Z"})
    assert str(caught.value) == ("failed to assign replicas: failed to do fresh scale: "
                                 "Clusters available replicas 3 are not enough to schedule.")
    assert condition_for(caught.value)[0]["reason"] == "Unschedulable"


async def test_algorithm_fit_error_counts_every_cluster() -> None:
    algorithm = Algorithm(lambda: [cluster("m1", deleting=True), cluster("m2", apis=[]), cluster("m3")],
                          Estimator({}))
    spec = binding({"clusterAffinity": {"clusterNames": ["m1", "m2"]}})["spec"]
    with pytest.raises(FitError) as caught:
        await algorithm.schedule(spec, {})
    assert str(caught.value) == ("0/3 clusters are available: 1 cluster(s) did not have the API resource, "
                                 "1 cluster(s) did not match the placement cluster affinity constraint.")


async def test_algorithm_estimator_failure_falls_back_to_general() -> None:
    async def broken(_clusters: list[dict[str, Any]], _req: dict[str, Any] | None, _replicas: int) -> dict[str, int]:
        raise RuntimeError("member down")

    member = cluster("m1")
    member["status"]["resourceSummary"] = {"allocatable": {"pods": "5"}}
    algorithm = Algorithm(lambda: [member], broken)
    result = await algorithm.schedule(binding({"replicaScheduling": DYNAMIC}, replicas=4)["spec"], {})
    assert result == [{"name": "m1", "replicas": 4}]


async def test_algorithm_empty_workload_propagation() -> None:
    algorithm = Algorithm(lambda: [cluster("m1"), cluster("m2")], Estimator({"m1": 10, "m2": 0}),
                          enable_empty_workload_propagation=True)
    result = await algorithm.schedule(binding({"replicaScheduling": DYNAMIC}, replicas=2)["spec"], {})
    assert result == [{"name": "m1", "replicas": 2}, {"name": "m2"}]
