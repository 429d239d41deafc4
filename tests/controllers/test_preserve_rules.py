"""controllers.preserve: which refusal a binding gets, and the clusters a lowering writes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controllers import preserve, workloadrebalancer
from controllers.preserve import (
    Lowering,
    PreserveOptions,
    Refusal,
    lower,
    refusal,
    requested,
    retry_since_value,
    retry_started,
)
from estimator.podselectors import BUILTIN_KINDS
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from karmada_api.rebalancers import PRESERVE_ANNOTATION

DYNAMIC = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
AGGREGATED = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}
STATIC = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                "weightPreference": {"staticWeightList": [
                                    {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1}]}}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"}


def binding(*, clusters: dict[str, int] | None = None, placement: dict[str, Any] | None = None,
            applied: str | None = None, generation: int = 3, observed: int | None = 3, scheduled: str | None = "True",
            resource: dict[str, str] | None = None, evicting: list[str] | None = None,
            ready: dict[str, int] | None = None) -> dict[str, Any]:
    """A scheduled ResourceBinding: 10 replicas, member1 6 and member2 4, a dynamic-weight placement; 4 ready on
    each member (the user story: 2 of member1's are stuck), unless ``ready`` says otherwise."""
    clusters = {"member1": 6, "member2": 4} if clusters is None else clusters
    placement = DYNAMIC if placement is None else placement
    ready = {"member1": 4, "member2": 4} if ready is None else ready
    status: dict[str, Any] = {"aggregatedStatus": [{"clusterName": n, "status": {"readyReplicas": r} if r else {}}
                                                   for n, r in ready.items()]}
    if observed is not None:
        status["schedulerObservedGeneration"] = observed
    if scheduled is not None:
        status["conditions"] = [{"type": "Scheduled", "status": scheduled, "reason": "Success"}]
    spec: dict[str, Any] = {"resource": resource or DEPLOYMENT, "replicas": sum(clusters.values()),
                            "placement": placement,
                            "clusters": [{"name": n, "replicas": r} for n, r in clusters.items()]}
    if evicting:
        spec["gracefulEvictionTasks"] = [{"fromCluster": c, "reason": "TaintUntolerated"} for c in evicting]
    return {"metadata": {"name": "web-deployment", "namespace": "default", "generation": generation,
                         "resourceVersion": "42",
                         "annotations": {APPLIED_PLACEMENT_ANNOTATION: applied or json.dumps(placement)}},
            "spec": spec, "status": status}


def rebalancer(annotation: str | None = None, reschedule: dict[str, Any] | None = None, *,
               generation: int = 1, retry_since: str | None = None) -> dict[str, Any]:
    annotations = {} if annotation is None else {PRESERVE_ANNOTATION: annotation}
    if retry_since is not None:
        annotations[preserve.RETRY_SINCE_ANNOTATION] = retry_since
    spec: dict[str, Any] = {"workloads": [DEPLOYMENT]}
    if reschedule is not None:
        spec["reschedule"] = reschedule
    return {"metadata": {"name": "wr", "generation": generation, "creationTimestamp": "2026-11-27T10:00:00Z",
                         "annotations": annotations}, "spec": spec}


# ---- requested ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("annotation", "reschedule", "expected"), [
    (None, None, False),
    ("true", None, True),
    ("false", None, False),
    (None, {"preserveAvailableReplicas": True}, True),  # #7662's field, on a CRD that has it
    (None, {"preserveAvailableReplicas": False}, False),
    ("false", {"preserveAvailableReplicas": True}, True),  # either one asks
])
def test_preserve_mode_is_asked_by_the_field_or_the_annotation(annotation: str | None,
                                                                 reschedule: dict[str, Any] | None,
                                                                 expected: bool) -> None:
    assert requested(rebalancer(annotation, reschedule)) is expected


@pytest.mark.parametrize("value", ["yes", "True", "", "1"])
def test_an_annotation_value_other_than_true_or_false_is_refused_naming_it(value: str) -> None:
    refused = requested(rebalancer(value))
    assert isinstance(refused, Refusal) and not refused.transient
    assert str(refused) == (f'InvalidPreserveAnnotation: {PRESERVE_ANNOTATION}="{value}", want "true" or "false"')


def test_the_disabled_refusal_names_the_flag() -> None:
    assert str(preserve.disabled()) == ("PreserveModeDisabled: karmada-controller-manager runs without "
                                        "--enable-preserve-available-replicas")


# ---- refusal --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("placement", [DYNAMIC, AGGREGATED])
def test_a_scheduled_dynamic_divided_deployment_may_be_lowered(placement: dict[str, Any]) -> None:
    assert refusal(binding(placement=placement)) is None


@pytest.mark.parametrize(("kwargs", "text", "transient"), [
    ({"observed": 2}, "SchedulingNotComplete: schedulerObservedGeneration 2 != generation 3", True),
    ({"observed": None}, "SchedulingNotComplete: no schedulerObservedGeneration != generation 3", True),
    ({"scheduled": "False"}, "SchedulingNotComplete: Scheduled is False (Success) condition", True),
    ({"scheduled": None}, "SchedulingNotComplete: no Scheduled condition", True),
    ({"applied": json.dumps(AGGREGATED)},
     "AppliedPlacementDiffers: the placement of the last schedule is not spec.placement", False),
    ({"applied": "{not json"}, "AppliedPlacementDiffers: invalid applied placement annotation: ", False),
    ({"placement": STATIC},
     "NotDynamicDivided: the placement is StaticWeight; preserve mode needs Divided with a dynamicWeight or "
     "Aggregated", False),
    ({"placement": {}},
     "NotDynamicDivided: the placement is Duplicated; preserve mode needs Divided with a dynamicWeight or "
     "Aggregated", False),
    ({"resource": {"apiVersion": "example.io/v1", "kind": "Widget", "namespace": "default", "name": "web"}},
     "UnsupportedKind: example.io/v1 Widget has no unschedulable-replica estimate", True),
    ({"evicting": ["member1", "member3"]}, "GracefulEvictionInProgress: evicting from member1, member3", True),
])
def test_each_refusal_says_why_and_whether_it_can_pass(kwargs: dict[str, Any], text: str, transient: bool) -> None:
    refused = refusal(binding(**kwargs))
    assert refused is not None
    assert str(refused).startswith(text)
    assert refused.transient is transient


def test_a_kind_declared_with_a_pod_selector_may_be_lowered() -> None:
    widget = {"apiVersion": "example.io/v1", "kind": "Widget", "namespace": "default", "name": "web"}
    assert refusal(binding(resource=widget), {*BUILTIN_KINDS, ("example.io/v1", "Widget")}) is None


def test_scheduling_under_way_is_judged_before_the_placement_it_is_about_to_change() -> None:
    refused = refusal(binding(placement=STATIC, observed=2))
    assert refused is not None and refused.reason == preserve.SCHEDULING_NOT_COMPLETE


# ---- lower ----------------------------------------------------------------------------------------------


def test_the_user_story_lowers_member1_by_its_two_unschedulable_replicas() -> None:
    lowering = lower(binding(), {"member1": 2, "member2": 0})
    assert lowering == Lowering([{"name": "member1", "replicas": 4}, {"name": "member2", "replicas": 4}],
                                {"member1": 2})


def test_the_write_changes_only_spec_clusters() -> None:
    before = binding()
    lowering = lower(before, {"member1": 2, "member2": 0})
    assert isinstance(lowering, Lowering)
    after = lowering.apply(before)
    assert after["metadata"] == before["metadata"]
    assert "status" not in after  # the status subresource: the server keeps the stored one
    assert {k: v for k, v in after["spec"].items() if k != "clusters"} == \
        {k: v for k, v in before["spec"].items() if k != "clusters"}
    assert before["spec"]["clusters"][0]["replicas"] == 6  # the (cached) input is left alone


def test_nothing_unschedulable_moves_nothing() -> None:
    lowering = lower(binding(), {"member1": 0, "member2": 0})
    assert isinstance(lowering, Lowering) and lowering.moved == {}


def test_a_cluster_the_estimator_could_not_judge_refuses_the_whole_workload() -> None:
    refused = lower(binding(), {"member1": 2})
    assert refused == Refusal(preserve.ESTIMATOR_UNAVAILABLE, "no unschedulable-replica estimate for member2",
                              transient=True)
    assert isinstance(lower(binding(), {"member1": 2, "member2": -1}), Refusal)  # -1: "cannot calculate"


def test_clusters_still_on_their_first_list_refuse_without_counting_against_the_retry_timeout() -> None:
    waiting = lower(binding(), {"member1": 2}, starting=["member2"])
    assert waiting == Refusal(preserve.ESTIMATOR_UNAVAILABLE, "the member caches of member2 are still on their first "
                                                              "list", transient=True, bounded=False)
    both = lower(binding(), {}, starting=["member2"])  # member1 left out for another reason: the bound counts
    assert isinstance(both, Refusal) and both.bounded and both.detail == (
        "no unschedulable-replica estimate for member1, member2")


def test_a_cluster_without_replicas_needs_no_estimate() -> None:
    lowering = lower(binding(clusters={"member1": 6, "member2": 0}), {"member1": 1})
    assert isinstance(lowering, Lowering) and lowering.moved == {"member1": 1}
    assert preserve.clusters_to_ask(binding(clusters={"member1": 6, "member2": 0})) == ["member1"]


def test_never_below_the_ready_replicas_nor_below_zero() -> None:
    # A stuck rollout: 6 old Pods serve while 2 new ones wait; the serving ones are kept.
    kept = lower(binding(ready={"member1": 6}), {"member1": 2, "member2": 0})
    assert isinstance(kept, Lowering) and kept.moved == {}
    floored = lower(binding(ready={"member1": 5}), {"member1": 2, "member2": 0})
    assert isinstance(floored, Lowering) and floored.moved == {"member1": 1}
    # Every Pod stuck: the status has no readyReplicas (Go's omitempty drops a zero), which counts as 0.
    emptied = lower(binding(ready={"member1": 0, "member2": 4}), {"member1": 9, "member2": 0})
    assert isinstance(emptied, Lowering) and emptied.clusters[0]["replicas"] == 0


def test_a_cluster_to_lower_without_collected_status_is_refused_until_it_has_one() -> None:
    # member1's ready count is unknown (its Work's status not reported yet): the floor that keeps serving Pods
    # cannot be known, so nothing moves, and the refusal can pass by itself.
    refused = lower(binding(ready={"member2": 4}), {"member1": 2, "member2": 0})
    assert refused == Refusal(preserve.READY_UNKNOWN, "no workload status collected from member1 yet: its ready "
                                                      "replicas are unknown", transient=True)
    # A cluster with nothing to give up needs no ready count.
    kept = lower(binding(ready={"member2": 4}), {"member1": 0, "member2": 0})
    assert isinstance(kept, Lowering) and kept.moved == {}


# ---- the retry bound ------------------------------------------------------------------------------------


def test_generation_one_retries_from_the_creation() -> None:
    assert retry_started(rebalancer("true")) == datetime(2026, 11, 27, 10, 0, tzinfo=UTC)


def test_a_later_generation_retries_from_its_own_mark() -> None:
    moment = datetime(2026, 11, 27, 11, 30, tzinfo=UTC)
    mark = retry_since_value(rebalancer("true", generation=3), moment)
    assert mark == "3/2026-11-27T11:30:00Z"
    assert retry_started(rebalancer("true", generation=3, retry_since=mark)) == moment
    assert retry_started(rebalancer("true", generation=4, retry_since=mark)) is None  # a mark of an older spec
    assert retry_started(rebalancer("true", generation=3, retry_since="3/garbage")) is None
    assert retry_started(rebalancer("true", generation=2)) is None


def test_the_placement_is_compared_as_karmadas_scheduler_compares_it() -> None:
    # zero-valued fields written out are absent ones, as Go decodes them
    explicit = {**DYNAMIC, "spreadConstraints": [], "clusterTolerations": []}
    assert refusal(binding(placement=explicit, applied=json.dumps(DYNAMIC))) is None
    # only the clusterAffinities term the scheduler is observing matters
    terms = [{"affinityName": "a", "clusterNames": ["member1", "member2"]}, {"affinityName": "b"}]
    edited = [terms[0], {"affinityName": "b", "clusterNames": ["member3"]}]
    scheduled = binding(placement={**DYNAMIC, "clusterAffinities": edited},
                        applied=json.dumps({**DYNAMIC, "clusterAffinities": terms}))
    scheduled["status"]["schedulerObservingAffinityName"] = "a"
    assert refusal(scheduled) is None
    scheduled["status"]["schedulerObservingAffinityName"] = "b"
    refused = refusal(scheduled)
    assert refused is not None and refused.reason == preserve.PLACEMENT_DIFFERS


def test_a_binding_without_an_applied_placement_is_refused() -> None:
    unscheduled = binding()
    del unscheduled["metadata"]["annotations"][APPLIED_PLACEMENT_ANNOTATION]
    refused = refusal(unscheduled)
    assert refused is not None and refused.reason == preserve.PLACEMENT_DIFFERS and not refused.transient


async def test_the_retry_bound_is_not_put_off_by_cycles_without_a_bounded_refusal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A workload alternates between a bounded refusal and one the bound does not count (a member still on its
    first list), 40 s apart, with a 1 minute bound: the bound still ends about a minute after the first look, not
    never (the first sighting is kept across the cycles in between). Nothing is written: generation 1 counts from
    its creationTimestamp."""
    clock = [datetime(2026, 11, 28, 12, 0, tzinfo=UTC)]
    monkeypatch.setattr(workloadrebalancer, "now", lambda: clock[0])
    reconciler = workloadrebalancer.WorkloadRebalancerReconciler(
        None, None, None, None, None,  # type: ignore[arg-type]  # this path makes no request
        preserve_options=PreserveOptions(started=clock[0] - timedelta(hours=1), retry_timeout=timedelta(minutes=1)))
    rebalancer = {"metadata": {"name": "r", "uid": "u", "generation": 1, "creationTimestamp": "2026-11-28T11:59:00Z"}}
    bounded = Refusal("ReadyReplicasUnknown", "x", transient=True)
    unbounded = Refusal("EstimatorUnavailable", "y", transient=True, bounded=False)
    expired = []
    for step in range(5):
        expired.append(await reconciler._retries_expired(rebalancer, [bounded if step % 2 == 0 else unbounded]))
        clock[0] += timedelta(seconds=40)
    assert expired == [False, False, True, False, True]  # 0 s, 40 s (not counted), 80 s: past the bound
