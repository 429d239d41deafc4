"""When a moved workload is healthy again (karmada_api.health): the rule fail-back's batches and the CLI's
waves wait on."""

from __future__ import annotations

from typing import Any

import pytest

from interpreter.reflectstatus import reflect_status
from karmada_api.health import binding_not_healthy, template_not_healthy, workload_not_healthy

SCHEDULED_AT = "2026-11-27T10:00:00Z"


def binding(clusters: dict[str, int], ready: dict[str, int] | None = None, *, replicas: int | None = None,
            kind: tuple[str, str] = ("apps/v1", "Deployment"), generation: int = 2, observed: int = 2,
            triggered: str | None = None, applied: dict[str, bool] | None = None) -> dict[str, Any]:
    """A scheduled binding of ``clusters`` whose members report ``ready`` replicas ready (all, by default)."""
    ready = dict(clusters) if ready is None else ready
    applied = applied or {}
    spec: dict[str, Any] = {"resource": {"apiVersion": kind[0], "kind": kind[1], "namespace": "default",
                                         "name": "web"},
                            "replicas": sum(clusters.values()) if replicas is None else replicas,
                            "clusters": [{"name": n, "replicas": r} for n, r in clusters.items()]}
    if triggered:
        spec["rescheduleTriggeredAt"] = triggered
    items = [{"clusterName": n, "applied": applied.get(n, True),
              "status": {"readyReplicas": r, "generation": 3, "observedGeneration": 3} if r else {}}
             for n, r in ready.items()]
    return {"metadata": {"name": "web-deployment", "namespace": "default", "generation": generation},
            "spec": spec,
            "status": {"schedulerObservedGeneration": observed, "lastScheduledTime": SCHEDULED_AT,
                       "aggregatedStatus": items}}


def test_every_target_applied_with_its_replicas_ready_is_healthy() -> None:
    assert binding_not_healthy(binding({"member1": 4, "member2": 6})) is None


def test_a_target_short_of_ready_replicas_says_how_many() -> None:
    assert binding_not_healthy(binding({"member1": 4, "member2": 6}, {"member1": 4, "member2": 5})) == \
        "5/6 replicas ready on member2"


def test_zero_ready_is_omitted_by_the_member_and_still_counts_as_zero() -> None:
    assert binding_not_healthy(binding({"member1": 2}, {"member1": 0})) == "0/2 replicas ready on member1"


def test_a_target_without_status_or_not_applied_is_not_healthy() -> None:
    assert binding_not_healthy(binding({"member1": 2, "member3": 2}, {"member1": 2})) == "no status from member3 yet"
    assert binding_not_healthy(binding({"member1": 2}, applied={"member1": False})) == "not applied on member1"


def test_a_cluster_left_with_no_replicas_is_not_waited_for() -> None:
    assert binding_not_healthy(binding({"member1": 4, "member2": 0}, {"member1": 4})) is None


@pytest.mark.parametrize(("observed", "triggered", "why"), [
    (1, None, "not scheduled yet (schedulerObservedGeneration 1 < generation 2)"),
    (2, "2026-11-27T10:00:01Z", "reschedule not done yet (lastScheduledTime before rescheduleTriggeredAt)"),
])
def test_the_old_assignment_before_the_reschedule_is_not_healthy(observed: int, triggered: str | None,
                                                                  why: str) -> None:
    assert binding_not_healthy(binding({"member1": 4}, observed=observed, triggered=triggered)) == why


def test_a_reschedule_already_done_is_healthy() -> None:
    assert binding_not_healthy(binding({"member1": 4}, triggered="2026-11-27T09:59:59Z")) is None


def test_a_kind_without_replicas_is_healthy_once_applied_everywhere() -> None:
    configmap = binding({"member1": 0, "member2": 0}, {"member1": 0, "member2": 0}, replicas=0,
                        kind=("v1", "ConfigMap"))
    assert binding_not_healthy(configmap) is None


def test_a_custom_kind_without_a_ready_count_is_judged_by_being_applied() -> None:
    flink = binding({"member1": 2}, {"member1": 0}, kind=("flink.apache.org/v1beta1", "FlinkDeployment"))
    assert binding_not_healthy(flink) is None


def template(replicas: int | None, status: dict[str, Any], *, generation: int = 3,
             kind: tuple[str, str] = ("apps/v1", "Deployment")) -> dict[str, Any]:
    spec = {} if replicas is None else {"replicas": replicas}
    return {"apiVersion": kind[0], "kind": kind[1], "metadata": {"name": "web", "generation": generation},
            "spec": spec, "status": status}


def test_the_template_needs_all_its_replicas_ready_for_its_generation() -> None:
    assert template_not_healthy(template(10, {"readyReplicas": 10, "observedGeneration": 3})) is None
    assert template_not_healthy(template(10, {"readyReplicas": 8, "observedGeneration": 3})) == "8/10 replicas ready"
    assert template_not_healthy(template(10, {"readyReplicas": 10, "observedGeneration": 2})) == \
        "the template's status is not aggregated for its latest generation yet"
    assert template_not_healthy(template(10, {})) == "0/10 replicas ready"


def test_a_template_without_replicas_or_ready_count_is_healthy() -> None:
    assert template_not_healthy(template(None, {})) is None
    assert template_not_healthy(template(2, {}, kind=("flink.apache.org/v1beta1", "FlinkDeployment"))) is None


def test_the_workload_needs_both_and_its_template() -> None:
    healthy = binding({"member1": 10})
    assert workload_not_healthy(healthy, template(10, {"readyReplicas": 10, "observedGeneration": 3})) is None
    assert workload_not_healthy(healthy, None) == "the resource template is not found"
    assert workload_not_healthy(binding({"member1": 10}, {"member1": 9}), None) == "9/10 replicas ready on member1"


def _member_object(kind: str, ready: int, generation: int, observed: int) -> dict[str, Any]:
    """A member's workload as its controller leaves it (as the readiness faker writes it on the real plane)."""
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "web", "namespace": "default", "generation": generation,
                         "annotations": {"resourcetemplate.karmada.io/generation": "1"}},
            "status": {"replicas": ready, "readyReplicas": ready, "availableReplicas": ready,
                       "updatedReplicas": ready, "currentReplicas": ready, "observedGeneration": observed}}


def _reflected(kind: str, ready: int, generation: int, observed: int) -> dict[str, Any]:
    """A binding of 2 replicas on member1, its member status as Karmada's interpreter reflects it."""
    bound = binding({"member1": 2}, kind=("apps/v1", kind))
    status = reflect_status("apps/v1", kind, _member_object(kind, ready, generation, observed))
    bound["status"]["aggregatedStatus"] = [{"clusterName": "member1", "applied": True, "status": status}]
    return bound


def test_a_statefulset_is_judged_by_its_ready_count_as_karmada_reflects_no_observed_generation() -> None:
    # Karmada's reflectStatefulSetStatus keeps generation but drops observedGeneration: comparing them would wait
    # forever (seen on the real plane: a StatefulSet never counted healthy during fail-back)
    reflected = _reflected("StatefulSet", 2, generation=3, observed=3)
    assert "observedGeneration" not in reflected["status"]["aggregatedStatus"][0]["status"]
    assert binding_not_healthy(reflected) is None
    assert binding_not_healthy(_reflected("StatefulSet", 1, generation=3, observed=3)) == \
        "1/2 replicas ready on member1"


def test_a_deployment_behind_its_generation_on_the_member_is_not_healthy() -> None:
    assert binding_not_healthy(_reflected("Deployment", 2, generation=3, observed=3)) is None
    assert binding_not_healthy(_reflected("Deployment", 2, generation=3, observed=2)) == \
        "member1 has not observed its latest generation"
