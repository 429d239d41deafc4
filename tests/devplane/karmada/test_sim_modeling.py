"""Cluster status rules: resource-model grades, summaries, quantities, Ready thresholds, taints by condition."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from devplane.apiserver.kinds import default_resource_models
from devplane.karmada.cluster import NOT_READY_TAINT, UNREACHABLE_TAINT, taints_for_condition
from devplane.karmada.clusterstatus import (
    ReadyThresholds,
    api_enablements_condition,
    build_api_enablements,
    is_push_cluster,
    ready_condition,
)
from devplane.karmada.modeling import (
    allocatable_modelings,
    allocated_resources,
    allocating_resources,
    cluster_allocatable,
    node_summary,
    resource_summary,
    search_last_less_or_equal,
)
from estimator.general import GeneralEstimator
from karmada_api.taints import generate_taints_message as taints_message

Obj = dict[str, Any]
MODELS = default_resource_models()
NO_PODS_USED: dict[str, str] = {}  # Karmada: only amounts above zero, so none at all


def node(name: str, cpu: str, memory: str, pods: str = "110", *, ready: bool = True) -> Obj:
    status: Obj = {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}
    status["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {"metadata": {"name": name}, "status": status}


def pod(name: str, cpu: str, memory: str, *, node_name: str = "", phase: str = "Running",
        init: dict[str, str] | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if init is not None:
        spec["initContainers"] = [{"name": "init", "resources": {"requests": init}}]
    if node_name:
        spec["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "default"}, "spec": spec, "status": {"phase": phase}}


def grades(nodes: list[Obj], pods: list[Obj] | None = None, models: list[Obj] | None = None) -> dict[int, int]:
    """Non-zero counts per grade."""
    result = allocatable_modelings(MODELS if models is None else models, nodes, pods or [])
    assert result is not None
    return {m["grade"]: m["count"] for m in result if m["count"]}


# ----------------------------------------------------------------------------------- grades


@pytest.mark.parametrize(("cpu", "memory", "grade"), [
    ("500m", "1Gi", 0),
    ("999m", "100Gi", 0),            # cpu decides: the minimum over resources
    ("1", "4Gi", 1),                 # a grade's min is inclusive
    ("1", "4095Mi", 0),              # memory just under grade 1
    ("1500m", "32Gi", 1),
    ("2", "16Gi", 2),
    ("4", "64Gi", 3),                # cpu grade 3, memory grade 4
    ("8", "64Gi", 4),
    ("127", "1023Gi", 7),
    ("128", "1024Gi", 8),
    ("1000", "10Ti", 8),             # the last grade is open-ended
    ("0", "0", 0),
])
def test_default_grade_boundaries(cpu: str, memory: str, grade: int) -> None:
    assert grades([node("n", cpu, memory)]) == {grade: 1}


def test_every_grade_is_listed_with_zero_counts() -> None:
    result = allocatable_modelings(MODELS, [node("a", "2", "16Gi"), node("b", "2", "20Gi"), node("c", "64", "1Ti")],
                                   [])
    assert result == [{"grade": 0, "count": 0}, {"grade": 1, "count": 0}, {"grade": 2, "count": 2},
                      {"grade": 3, "count": 0}, {"grade": 4, "count": 0}, {"grade": 5, "count": 0},
                      {"grade": 6, "count": 0}, {"grade": 7, "count": 1}, {"grade": 8, "count": 0}]


def test_grades_use_what_bound_pods_leave_free() -> None:
    nodes = [node("a", "4", "32Gi"), node("b", "4", "32Gi")]
    pods = [pod("p1", "1", "1Gi", node_name="a"),                       # a: 3 cpu, 31Gi → cpu grade 2
            pod("done", "3", "20Gi", node_name="b", phase="Succeeded"),  # terminated: b keeps 4 / 32Gi → 3
            pod("pending", "4", "32Gi")]                                 # not bound: no node pays for it
    assert grades(nodes, pods) == {2: 1, 3: 1}


def test_nodes_without_a_grade_or_a_pod_slot_are_skipped() -> None:
    nodes = [node("over", "1", "4Gi"), node("full", "8", "64Gi", pods="1"), node("after", "2", "16Gi")]
    pods = [pod("big", "2", "1Gi", node_name="over"),   # negative cpu left: no grade
            pod("one", "1m", "1Mi", node_name="full")]  # the only pod slot is used
    # Karmada would stop at "full" (break) and drop "after"; we skip "full" only.
    assert grades(nodes, pods) == {2: 1}


def test_models_that_cannot_be_used_give_no_modelings() -> None:
    assert allocatable_modelings(None, [node("a", "1", "1Gi")], []) is None
    assert allocatable_modelings([], [node("a", "1", "1Gi")], []) is None
    uneven = [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}]},
              {"grade": 1, "ranges": [{"name": "cpu", "min": "1", "max": "2"}, {"name": "memory", "min": "0",
                                                                                 "max": "4Gi"}]}]
    assert allocatable_modelings(uneven, [node("a", "1", "1Gi")], []) is None


def test_custom_models_search_by_their_own_resources() -> None:
    models = [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "2"}]},
              {"grade": 1, "ranges": [{"name": "cpu", "min": "2", "max": "4"}]},
              {"grade": 2, "ranges": [{"name": "cpu", "min": "4", "max": "9223372036854775807"}]}]
    assert grades([node("a", "3", "1Gi"), node("b", "4", "0"), node("c", "1", "1Ti")], models=models) == {
        0: 1, 1: 1, 2: 1}


def test_binary_search_is_karmadas() -> None:
    values = [Fraction(v) for v in (0, 1, 2, 4)]
    assert [search_last_less_or_equal(values, Fraction(t)) for t in ("-1", "0", "0.5", "2", "3", "100")] == [
        -1, 0, 0, 2, 2, 3]
    assert search_last_less_or_equal([], Fraction(1)) == -1


# ----------------------------------------------------------------------------------- summaries


def test_pending_bound_and_terminated_pods() -> None:
    pods = [pod("pending", "500m", "512Mi"),
            pod("failed-before-binding", "250m", "256Mi", phase="Failed"),  # Karmada: still allocating
            pod("running", "1", "1Gi", node_name="a"),
            pod("succeeded", "2", "2Gi", node_name="a", phase="Succeeded"),
            pod("failed", "2", "2Gi", node_name="a", phase="Failed")]
    assert allocating_resources(pods) == {"cpu": "750m", "memory": "768Mi", "pods": "2"}
    assert allocated_resources(pods) == {"cpu": "1", "memory": "1Gi", "pods": "1"}
    assert allocating_resources([]) == NO_PODS_USED
    assert allocated_resources([]) == NO_PODS_USED


def test_init_containers_raise_the_running_total() -> None:
    # Karmada's accumulator: pod b's init request (500m) is compared with the total so far (1100m).
    pods = [pod("a", "1", "1Gi", node_name="n"), pod("b", "100m", "0", node_name="n", init={"cpu": "500m"})]
    assert allocated_resources(pods)["cpu"] == "1100m"
    assert allocated_resources([pod("b", "100m", "0", node_name="n", init={"cpu": "500m"})])["cpu"] == "500m"


def test_cluster_allocatable_sums_nodes_in_the_first_format() -> None:
    nodes = [node("a", "4", "8Gi"), node("b", "3500m", "8Gi"), node("c", "500m", "1000000Ki", pods="10")]
    assert cluster_allocatable(nodes) == {"cpu": "8", "memory": "17777216Ki", "pods": "230"}
    assert cluster_allocatable([node("a", "1", "1G"), node("b", "1", "1G")])["memory"] == "2G"
    assert cluster_allocatable([]) == {}


def test_node_summary_counts_ready_nodes_and_omits_zeros() -> None:
    assert node_summary([node("a", "1", "1Gi"), node("b", "1", "1Gi", ready=False)]) == {"totalNum": 2,
                                                                                           "readyNum": 1}
    assert node_summary([node("b", "1", "1Gi", ready=False)]) == {"totalNum": 1}
    assert node_summary([]) == {}


def test_summary_feeds_the_general_estimator() -> None:
    nodes = [node("a", "4", "8Gi"), node("b", "2", "4Gi")]
    pods = [pod("running", "1", "1Gi", node_name="a"), pod("pending", "500m", "512Mi"),
            pod("done", "1", "1Gi", node_name="b", phase="Succeeded")]
    summary = resource_summary(nodes, pods, MODELS)
    assert summary == {
        "allocatable": {"cpu": "6", "memory": "12Gi", "pods": "220"},
        "allocating": {"cpu": "500m", "memory": "512Mi", "pods": "1"},
        "allocated": {"cpu": "1", "memory": "1Gi", "pods": "1"},
        "allocatableModelings": [{"grade": g, "count": 2 if g == 1 else 0} for g in range(9)]}
    cluster = {"metadata": {"name": "m"}, "spec": {"resourceModels": MODELS}, "status": {"resourceSummary": summary}}
    # two grade-1 virtual nodes (1 cpu, 4Gi, 110 pods): 100 replicas of 10m each
    assert GeneralEstimator().max_available_replicas(cluster, {"resourceRequest": {"cpu": "10m",
                                                                                    "memory": "10Mi"}}) == 200
    # without models: the summary alone (cpu 4500m free / 10m = 450; pods 218)
    assert GeneralEstimator(customized_resource_modeling=False).max_available_replicas(
        cluster, {"resourceRequest": {"cpu": "10m", "memory": "10Mi"}}) == 218
    assert "allocatableModelings" not in resource_summary(nodes, pods, MODELS, modeling=False)


# ----------------------------------------------------------------------------------- quantities


# ----------------------------------------------------------------------------------- conditions


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_ready_condition_texts() -> None:
    assert ready_condition(True, True) == {"type": "Ready", "status": "True", "reason": "ClusterReady",
                                           "message": "cluster is healthy and ready to accept workloads"}
    assert ready_condition(False, False)["reason"] == "ClusterNotReachable"
    assert ready_condition(False, False)["message"] == "cluster is not reachable"
    assert ready_condition(True, False)["reason"] == "ClusterNotReady"
    assert api_enablements_condition(3, True)["reason"] == "Complete"
    assert api_enablements_condition(3, False)["message"] == "might collect partial APIEnablements(3) from the cluster"
    assert api_enablements_condition(0, False)["status"] == "False"


def test_failure_threshold_holds_ready_true() -> None:
    clock = Clock()
    thresholds = ReadyThresholds(success_threshold=5, failure_threshold=30, clock=clock)
    up, down = ready_condition(True, True), ready_condition(False, False)
    ready = [{**up, "lastTransitionTime": "2025-01-01T00:00:00Z"}]
    assert thresholds.adjust("m", None, up) == up                    # first observation: as is
    assert thresholds.adjust("m", ready, up) == up
    clock.now += 10
    assert thresholds.adjust("m", ready, down) == ready[0]           # flip starts the timer: held
    clock.now += 29.9
    assert thresholds.adjust("m", ready, down) == ready[0]
    clock.now += 0.1
    assert thresholds.adjust("m", ready, down) == down               # lasted 30 s: shown
    not_ready = [{**down, "lastTransitionTime": "2025-01-01T00:00:40Z"}]
    clock.now += 1
    assert thresholds.adjust("m", not_ready, up) == not_ready[0]     # recovery waits the success threshold
    clock.now += 5
    assert thresholds.adjust("m", not_ready, up) == up


def test_first_failure_and_false_to_false_are_not_held() -> None:
    clock = Clock()
    thresholds = ReadyThresholds(success_threshold=30, failure_threshold=30, clock=clock)
    down, unhealthy = ready_condition(False, False), ready_condition(True, False)
    assert thresholds.adjust("m", [{**ready_condition(True, True)}], down) == down  # never observed before
    assert thresholds.adjust("m", [down], unhealthy) == unhealthy                    # not True either way
    thresholds.forget("m")
    assert thresholds.adjust("m", [down], ready_condition(True, True))["status"] == "True"


def test_api_enablements_drop_subresources_and_sort() -> None:
    lists: list[Obj] = [{"groupVersion": "v1", "resources": [{"name": "pods", "kind": "Pod"}, {"name": "pods/status",
                                                                                     "kind": "Pod"},
                                                   {"name": "nodes", "kind": "Node"}]},
             {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"},
                                                       {"name": "deployments/scale", "kind": "Scale"}]},
             {"groupVersion": "batch/v1", "resources": []}]
    assert build_api_enablements(lists) == [
        {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
        {"groupVersion": "batch/v1"},
        {"groupVersion": "v1", "resources": [{"name": "nodes", "kind": "Node"}, {"name": "pods", "kind": "Pod"}]}]


def test_only_push_clusters_with_a_secret_are_synced() -> None:
    assert is_push_cluster({"spec": {"syncMode": "Push", "secretRef": {"namespace": "n", "name": "s"}}})
    assert not is_push_cluster({"spec": {"syncMode": "Pull", "secretRef": {"namespace": "n", "name": "s"}}})
    assert not is_push_cluster({"spec": {"syncMode": "Push"}})


# ----------------------------------------------------------------------------------- taints


def cluster_with(status: str | None, taints: list[Obj] | None = None) -> Obj:
    conditions = [] if status is None else [{"type": "Ready", "status": status}]
    return {"spec": {"taints": taints or []}, "status": {"conditions": conditions}}


USER_TAINT = {"key": "team", "value": "a", "effect": "NoSchedule"}
NOW = "2025-09-23T12:00:00Z"


@pytest.mark.parametrize(("status", "before", "after"), [
    ("False", [USER_TAINT], [USER_TAINT, {**NOT_READY_TAINT, "timeAdded": NOW}]),
    ("False", [UNREACHABLE_TAINT], [{**NOT_READY_TAINT, "timeAdded": NOW}]),
    ("Unknown", [NOT_READY_TAINT, USER_TAINT], [USER_TAINT, {**UNREACHABLE_TAINT, "timeAdded": NOW}]),
    ("True", [NOT_READY_TAINT, USER_TAINT, UNREACHABLE_TAINT], [USER_TAINT]),
    ("True", [USER_TAINT], [USER_TAINT]),
    (None, [], [{**NOT_READY_TAINT, "timeAdded": NOW}]),       # just joined: not ready until shown Ready
    ("False", [{**NOT_READY_TAINT, "timeAdded": "2020-01-01T00:00:00Z"}],
     [{**NOT_READY_TAINT, "timeAdded": "2020-01-01T00:00:00Z"}]),  # already there: untouched
])
def test_taints_follow_ready(status: str | None, before: list[Obj], after: list[Obj]) -> None:
    assert taints_for_condition(cluster_with(status, before), NOW) == after


def test_taints_message() -> None:
    assert taints_message([]) == "cluster now does not have taints"
    assert taints_message([USER_TAINT, NOT_READY_TAINT]) == (
        "cluster now has taints([{Key:team,Value:a,Effect:NoSchedule},"
        "{Key:cluster.karmada.io/not-ready,Effect:NoSchedule}])")
