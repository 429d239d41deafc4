"""AggregateStatus interpreters (Karmada's ``pkg/resourceinterpreter/default/native/aggregatestatus.go``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from interpreter.aggregatestatus import InterpretError, aggregate_status, has_interpreter, template_resource


def template(api_version: str, kind: str, status: dict[str, Any] | None = None, *, generation: int = 0,
             spec: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind,
                           "metadata": {"name": "foo", "namespace": "default"}}
    if generation:
        obj["metadata"]["generation"] = generation
    if spec is not None:
        obj["spec"] = spec
    if status is not None:
        obj["status"] = status
    return obj


def item(cluster: str, status: dict[str, Any] | None) -> dict[str, Any]:
    result: dict[str, Any] = {"clusterName": cluster, "applied": True}
    if status is not None:
        result["status"] = status
    return result


def deployment(status: dict[str, Any] | None = None, generation: int = 0) -> dict[str, Any]:
    return template("apps/v1", "Deployment", status, generation=generation)


ONE_EACH = {"replicas": 1, "readyReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1,
            "unavailableReplicas": 0}


# ----------------------------------------------------------------------------- Deployment (Karmada's unit test)


def test_deployment_sums_two_members_and_is_then_unchanged() -> None:
    obj = deployment({})
    items = [item("member1", dict(ONE_EACH)), item("member2", dict(ONE_EACH))]
    status = aggregate_status(obj, items)
    assert status == {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2}
    obj["status"] = status
    assert aggregate_status(obj, items) == status


def test_deployment_does_not_modify_the_template() -> None:
    obj = deployment({"replicas": 9})
    before = copy.deepcopy(obj)
    aggregate_status(obj, [item("member1", dict(ONE_EACH))])
    assert obj == before


def test_deployment_keeps_other_status_fields() -> None:
    conditions = [{"type": "Available", "status": "True"}]
    obj = deployment({"conditions": conditions, "collisionCount": 2, "replicas": 1})
    status = aggregate_status(obj, [item("m1", {"replicas": 3, "readyReplicas": 3})])
    assert status == {"conditions": conditions, "collisionCount": 2, "replicas": 3, "readyReplicas": 3}


def _member(generation: int, observed: int, template_generation: int, replicas: int = 1) -> dict[str, Any]:
    return {"replicas": replicas, "generation": generation, "observedGeneration": observed,
            "resourceTemplateGeneration": template_generation}


def test_observed_generation_follows_template_when_every_member_caught_up() -> None:
    obj = deployment({"observedGeneration": 2}, generation=3)
    status = aggregate_status(obj, [item("m1", _member(5, 5, 3)), item("m2", _member(1, 1, 4))])
    assert status is not None and status["observedGeneration"] == 3


@pytest.mark.parametrize("member", [
    _member(5, 4, 3),  # member controller has not observed its latest generation
    _member(5, 5, 2),  # member still runs the previous template
])
def test_observed_generation_kept_when_a_member_lags(member: dict[str, Any]) -> None:
    obj = deployment({"observedGeneration": 2}, generation=3)
    status = aggregate_status(obj, [item("m1", _member(1, 1, 3)), item("m2", member)])
    assert status is not None
    assert status["observedGeneration"] == 2
    assert status["replicas"] == 2


def test_item_without_status_skipped_for_sums_but_counted_for_generation() -> None:
    obj = deployment({"observedGeneration": 1}, generation=2)
    status = aggregate_status(obj, [item("m1", _member(1, 1, 2, replicas=4)), item("m2", None)])
    assert status == {"observedGeneration": 1, "replicas": 4}
    # the same member alone has caught up
    status = aggregate_status(obj, [item("m1", _member(1, 1, 2, replicas=4))])
    assert status == {"observedGeneration": 2, "replicas": 4}


def test_unchanged_sums_and_generation_return_old_status_untouched() -> None:
    old = {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2,
           "unavailableReplicas": 0, "observedGeneration": 0, "extra": "kept"}
    assert aggregate_status(deployment(old), [item("m1", dict(ONE_EACH)), item("m2", dict(ONE_EACH))]) == old


def test_no_items_zeroes_deployment_sums() -> None:
    status = aggregate_status(deployment({"replicas": 3, "readyReplicas": 3}, generation=1), [])
    assert status == {"observedGeneration": 1}


def test_member_status_of_wrong_type_is_an_error() -> None:
    with pytest.raises(InterpretError):
        aggregate_status(deployment({}), [item("m1", {"replicas": "three"})])
    with pytest.raises(InterpretError):
        aggregate_status(deployment({}), [{"clusterName": "m1", "status": "not an object"}])


# ----------------------------------------------------------------------------- other replica workloads


def test_replicaset_sums_three_fields() -> None:
    obj = template("apps/v1", "ReplicaSet", {}, generation=1)
    members = [item("m1", {**_member(1, 1, 1, replicas=2), "readyReplicas": 2, "availableReplicas": 1,
                           "fullyLabeledReplicas": 2}),
               item("m2", {**_member(1, 1, 1, replicas=1), "readyReplicas": 1, "availableReplicas": 1})]
    assert aggregate_status(obj, members) == {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3,
                                              "availableReplicas": 2}


def test_statefulset_quirk_compares_template_generation_with_member_generation() -> None:
    obj = template("apps/v1", "StatefulSet", {}, generation=7)
    # resourceTemplateGeneration (2) < template generation (7), but >= member generation (2): accepted.
    members = [item("m1", {**_member(2, 2, 2, replicas=1), "readyReplicas": 1, "currentReplicas": 1,
                           "updatedReplicas": 1, "availableReplicas": 1})]
    assert aggregate_status(obj, members) == {"observedGeneration": 7, "replicas": 1, "readyReplicas": 1,
                                              "currentReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1}
    lagging = [item("m1", {**_member(3, 3, 2, replicas=1)})]
    assert aggregate_status(obj, lagging) == {"replicas": 1, "availableReplicas": 0}  # not omitempty in Go


@pytest.mark.parametrize(("kind", "kept"), [
    ("StatefulSet", {"replicas": 0, "availableReplicas": 0}),
    ("ReplicaSet", {"replicas": 0}),
    ("DaemonSet", {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                   "numberReady": 0}),
    ("Deployment", {}),
])
def test_zero_sums_keep_the_fields_go_serialises_without_omitempty(kind: str, kept: dict[str, int]) -> None:
    """Scaled to 0 everywhere: Karmada's ``ToUnstructured`` of the typed status keeps the non-omitempty zeros."""
    obj = template("apps/v1", kind, {field: 2 for field in kept or {"replicas": 2}}, generation=1)
    assert aggregate_status(obj, [item("m1", _member(1, 1, 1, replicas=0))]) == {"observedGeneration": 1, **kept}


def test_daemonset_sums_seven_fields() -> None:
    obj = template("apps/v1", "DaemonSet", {"observedGeneration": 1}, generation=1)
    fields = ("currentNumberScheduled", "desiredNumberScheduled", "numberAvailable", "numberMisscheduled",
              "numberReady", "updatedNumberScheduled", "numberUnavailable")
    members = [item(f"m{i}", {**_member(1, 1, 1), **{f: i for f in fields}}) for i in (1, 2)]
    members[0]["status"].pop("replicas")
    members[1]["status"].pop("replicas")
    assert aggregate_status(obj, members) == {"observedGeneration": 1, **{f: 3 for f in fields}}
    obj["status"] = aggregate_status(obj, members)
    assert aggregate_status(obj, members) == obj["status"]


# ----------------------------------------------------------------------------- batch


def _job_condition(ctype: str) -> dict[str, Any]:
    return {"type": ctype, "status": "True"}


def test_job_sums_counts_and_takes_earliest_start() -> None:
    obj = template("batch/v1", "Job", {})
    members = [item("m1", {"active": 1, "succeeded": 2, "startTime": "2024-01-01T00:00:10Z"}),
               item("m2", {"active": 2, "failed": 1, "startTime": "2024-01-01T00:00:05Z"})]
    assert aggregate_status(obj, members) == {"active": 3, "succeeded": 2, "failed": 1,
                                              "startTime": "2024-01-01T00:00:05Z"}


def test_job_complete_when_every_member_completed() -> None:
    obj = template("batch/v1", "Job", {})
    members = [item("m1", {"succeeded": 1, "startTime": "2024-01-01T00:00:00Z",
                           "completionTime": "2024-01-01T00:01:00Z", "conditions": [_job_condition("Complete")]}),
               item("m2", {"succeeded": 1, "startTime": "2024-01-01T00:00:00Z",
                           "completionTime": "2024-01-01T00:02:00Z", "conditions": [_job_condition("Complete")]})]
    status = aggregate_status(obj, members)
    assert status is not None
    assert status["succeeded"] == 2
    assert status["completionTime"] == "2024-01-01T00:02:00Z"
    [complete] = status["conditions"]
    assert (complete["type"], complete["status"], complete["reason"]) == ("Complete", "True", "Completed")


def test_job_not_complete_while_a_member_runs_nor_with_no_members() -> None:
    obj = template("batch/v1", "Job", {})
    members = [item("m1", {"succeeded": 1, "conditions": [_job_condition("Complete")],
                           "completionTime": "2024-01-01T00:01:00Z"}), item("m2", {"active": 1})]
    assert aggregate_status(obj, members) == {"active": 1, "succeeded": 1}
    assert aggregate_status(obj, []) == {}


def test_job_failed_names_failed_clusters() -> None:
    obj = template("batch/v1", "Job", {})
    members = [item("m1", {"failed": 1, "conditions": [_job_condition("Failed")]}),
               item("m2", {"failed": 2, "conditions": [_job_condition("Failed")]})]
    status = aggregate_status(obj, members)
    assert status is not None
    [failed] = status["conditions"]
    assert (failed["type"], failed["reason"]) == ("Failed", "JobFailed")
    assert failed["message"] == "Job executed failed in member clusters m1,m2"


def test_finished_job_is_never_updated_again() -> None:
    old = {"succeeded": 1, "conditions": [_job_condition("Complete")]}
    assert aggregate_status(template("batch/v1", "Job", old), [item("m1", {"active": 5})]) == old


def test_cronjob_unions_active_and_takes_latest_times() -> None:
    obj = template("batch/v1", "CronJob", {})
    members = [item("m1", {"active": [{"name": "a"}], "lastScheduleTime": "2024-01-01T00:05:00Z",
                           "lastSuccessfulTime": "2024-01-01T00:01:00Z"}),
               item("m2", {"active": [{"name": "b"}], "lastScheduleTime": "2024-01-01T00:03:00Z"}),
               item("m3", None)]
    status = aggregate_status(obj, members)
    assert status == {"active": [{"name": "a"}, {"name": "b"}], "lastScheduleTime": "2024-01-01T00:05:00Z",
                      "lastSuccessfulTime": "2024-01-01T00:01:00Z"}
    obj["status"] = status
    assert aggregate_status(obj, members) == status


# ----------------------------------------------------------------------------- networking


def test_loadbalancer_service_unions_ingress_and_fills_hostname() -> None:
    obj = template("v1", "Service", {"loadBalancer": {}}, spec={"type": "LoadBalancer"})
    members = [item("m1", {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}),
               item("m2", {"loadBalancer": {"ingress": [{"ip": "5.6.7.8", "hostname": "lb.example"}]}})]
    assert aggregate_status(obj, members) == {"loadBalancer": {"ingress": [
        {"ip": "1.2.3.4", "hostname": "m1"}, {"ip": "5.6.7.8", "hostname": "lb.example"}]}}


def test_non_loadbalancer_service_is_unchanged() -> None:
    obj = template("v1", "Service", {"loadBalancer": {}}, spec={"type": "ClusterIP"})
    members = [item("m1", {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}})]
    assert aggregate_status(obj, members) == {"loadBalancer": {}}


def test_ingress_unions_ingress_points() -> None:
    obj = template("networking.k8s.io/v1", "Ingress", {})
    members = [item("m1", {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}), item("m2", {"loadBalancer": {}})]
    assert aggregate_status(obj, members) == {"loadBalancer": {"ingress": [{"ip": "10.0.0.1", "hostname": "m1"}]}}
    assert aggregate_status(obj, []) == {"loadBalancer": {}}


# ----------------------------------------------------------------------------- core


@pytest.mark.parametrize(("phases", "expected"), [
    (["Running", "Running"], "Running"),
    (["Running", "Succeeded"], "Running"),
    (["Succeeded", "Succeeded"], "Succeeded"),
    (["Running", "Pending"], "Pending"),
    (["Pending", "Failed", "Running"], "Failed"),
    (["Running", None], "Pending"),  # not collected yet counts as Pending
])
def test_pod_phase(phases: list[str | None], expected: str) -> None:
    obj = template("v1", "Pod", {"phase": "Pending"})
    members = [item(f"m{i}", {"phase": p} if p else None) for i, p in enumerate(phases)]
    status = aggregate_status(obj, members)
    assert status is not None and status["phase"] == expected


def test_pod_container_statuses_reduced_to_ready_and_state() -> None:
    obj = template("v1", "Pod", {"phase": "Pending"})
    running = {"running": {"startedAt": "2024-01-01T00:00:00Z"}}
    members = [item("m1", {"phase": "Running", "containerStatuses": [
        {"name": "c", "ready": True, "state": running, "restartCount": 3, "image": "x"}]})]
    assert aggregate_status(obj, members) == {"phase": "Running",
                                              "containerStatuses": [{"ready": True, "state": running}]}


def test_pod_without_members_is_unchanged() -> None:
    assert aggregate_status(template("v1", "Pod", {"phase": "Pending", "qosClass": "BestEffort"}), []) == \
        {"phase": "Pending", "qosClass": "BestEffort"}


@pytest.mark.parametrize(("phases", "expected"), [
    (["Bound", "Bound"], "Bound"),
    (["Bound", "Available"], "Available"),
    (["Bound", None], "Pending"),
    (["Released", "Bound"], "Bound"),
    (["Failed", "Pending"], "Failed"),
])
def test_persistentvolume_phase(phases: list[str | None], expected: str) -> None:
    obj = template("v1", "PersistentVolume", {})
    members = [item(f"m{i}", {"phase": p} if p else None) for i, p in enumerate(phases)]
    assert aggregate_status(obj, members) == {"phase": expected}


@pytest.mark.parametrize(("phases", "expected"), [
    (["Bound", "Bound"], "Bound"),
    (["Bound", "Pending"], "Pending"),
    (["Lost", "Pending"], "Lost"),
    (["Pending", "Lost"], "Lost"),
    ([None], "Bound"),
])
def test_persistentvolumeclaim_phase(phases: list[str | None], expected: str) -> None:
    obj = template("v1", "PersistentVolumeClaim", {})
    members = [item(f"m{i}", {"phase": p} if p else None) for i, p in enumerate(phases)]
    assert aggregate_status(obj, members) == {"phase": expected}


# ----------------------------------------------------------------------------- policy, autoscaling


def test_pdb_sums_and_prefixes_disrupted_pods() -> None:
    obj = template("policy/v1", "PodDisruptionBudget", {})
    members = [item("m1", {"currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2, "disruptionsAllowed": 1,
                           "disruptedPods": {"p": "2024-01-01T00:00:00Z"}}),
               item("m2", {"currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1})]
    assert aggregate_status(obj, members) == {"currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3,
                                              "disruptionsAllowed": 1,
                                              "disruptedPods": {"m1/p": "2024-01-01T00:00:00Z"}}


def test_hpa_sums_replicas_and_keeps_conditions() -> None:
    conditions = [{"type": "AbleToScale", "status": "True"}]
    obj = template("autoscaling/v2", "HorizontalPodAutoscaler", {"conditions": conditions})
    members = [item("m1", {"currentReplicas": 2, "desiredReplicas": 3}),
               item("m2", {"currentReplicas": 1, "desiredReplicas": 1})]
    status = aggregate_status(obj, members)
    assert status == {"conditions": conditions, "currentReplicas": 3, "desiredReplicas": 4}
    obj["status"] = status
    assert aggregate_status(obj, members) == status


# ----------------------------------------------------------------------------- registry


@pytest.mark.parametrize(("api_version", "kind"), [
    ("v1", "ConfigMap"), ("rbac.authorization.k8s.io/v1", "ClusterRole"), ("example.io/v1", "Widget"),
    ("autoscaling/v1", "HorizontalPodAutoscaler"),
])
def test_kinds_without_interpreter_give_none(api_version: str, kind: str) -> None:
    assert aggregate_status(template(api_version, kind, {"a": 1}), [item("m1", {"a": 2})]) is None
    assert not has_interpreter(api_version, kind)
    assert template_resource(api_version, kind) is None


def test_template_resources_of_interpreted_kinds() -> None:
    deployments = template_resource("apps/v1", "Deployment")
    assert deployments is not None and deployments.path("default", "foo", "status") == \
        "/apis/apps/v1/namespaces/default/deployments/foo/status"
    volumes = template_resource("v1", "PersistentVolume")
    assert volumes is not None and volumes.path("", "pv", "status") == "/api/v1/persistentvolumes/pv/status"
