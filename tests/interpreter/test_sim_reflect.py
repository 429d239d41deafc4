"""Status reflection and health rules (``interpreter``) and the simulated work-status controller's items.

Rows from Karmada's ``reflectstatus_test.go`` and ``healthy_test.go``
(``pkg/resourceinterpreter/default/native``), plus the JSON shape Go's ``omitempty`` gives.
"""

from __future__ import annotations

from typing import Any

import pytest

from devplane.karmada.memberobjects import (
    allow_update,
    desired_object,
    retain_cluster_fields,
    strip_karmada_metadata,
)
from devplane.karmada.workstatus import manifest_identifier, manifest_status
from interpreter.goconvert import ReflectError
from interpreter.health import HEALTHY, UNHEALTHY, UNKNOWN, interpret_health
from interpreter.reflectstatus import reflect_status
from karmada_api.resources import WORKS

GEN = "resourcetemplate.karmada.io/generation"


def deployment(*, generation: int = 2, annotation: str | None = "1", status: Any = "default",
               replicas: int | None = 3) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "test-deployment", "namespace": "test-ns", "generation": generation}
    if annotation is not None:
        meta["annotations"] = {GEN: annotation}
    obj: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                           "spec": {} if replicas is None else {"replicas": replicas}}
    if status == "default":
        status = {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                  "unavailableReplicas": 0, "observedGeneration": 2,
                  "conditions": [{"type": "Available", "status": "True"}], "collisionCount": 1}
    if status is not None:
        obj["status"] = status
    return obj


# ----------------------------------------------------------------------------- reflection


def test_deployment_reflects_federated_generation_and_counters_without_zeros() -> None:
    reflected = reflect_status("apps/v1", "Deployment", deployment())
    assert reflected == {"generation": 2, "resourceTemplateGeneration": 1, "observedGeneration": 2, "replicas": 3,
                         "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}
    assert list(reflected or {}) == ["generation", "resourceTemplateGeneration", "observedGeneration", "replicas",
                                     "updatedReplicas", "readyReplicas", "availableReplicas"]  # Go's field order


def test_deployment_without_status_reflects_nothing() -> None:
    assert reflect_status("apps/v1", "Deployment", deployment(status=None)) is None


def test_deployment_all_zero_reflects_nothing() -> None:
    """An empty result means the member has not reported yet: no status, not ``{}``."""
    assert reflect_status("apps/v1", "Deployment", deployment(generation=0, annotation=None, status={})) is None


def test_new_deployment_reflects_generations_only() -> None:
    assert reflect_status("apps/v1", "Deployment", deployment(generation=1, status={})) == {
        "generation": 1, "resourceTemplateGeneration": 1}


def test_deployment_without_generation_annotation_omits_it() -> None:
    reflected = reflect_status("apps/v1", "Deployment", deployment(annotation=None)) or {}
    assert "resourceTemplateGeneration" not in reflected
    assert reflected["generation"] == 2


@pytest.mark.parametrize("annotation", ["invalid", "1.5", " 3", "99999999999999999999"])
def test_deployment_with_invalid_generation_annotation_is_an_error(annotation: str) -> None:
    with pytest.raises(ReflectError, match="ParseInt"):
        reflect_status("apps/v1", "Deployment", deployment(annotation=annotation))


def test_deployment_with_non_integer_counter_is_an_error() -> None:
    with pytest.raises(ReflectError):
        reflect_status("apps/v1", "Deployment", deployment(status={"replicas": "three"}))


def test_statefulset_keeps_non_omitempty_zeros() -> None:
    obj = {"metadata": {"generation": 3, "annotations": {GEN: "2"}},
           "status": {"observedGeneration": 3, "replicas": 0, "currentRevision": "r1"}}
    assert reflect_status("apps/v1", "StatefulSet", obj) == {
        "generation": 3, "resourceTemplateGeneration": 2, "replicas": 0, "availableReplicas": 0}


def test_daemonset_reflects_counters_and_observed_generation() -> None:
    obj = {"metadata": {"generation": 1}, "status": {"desiredNumberScheduled": 2, "numberReady": 1,
                                                     "observedGeneration": 1, "updatedNumberScheduled": 2}}
    assert reflect_status("apps/v1", "DaemonSet", obj) == {
        "generation": 1, "currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 2,
        "numberReady": 1, "observedGeneration": 1, "updatedNumberScheduled": 2}


def test_job_reflects_counters_conditions_and_times() -> None:
    conditions = [{"type": "Complete", "status": "True"}]
    obj = {"status": {"active": 0, "succeeded": 2, "failed": 0, "conditions": conditions,
                      "startTime": "2024-01-01T00:00:00Z", "uncountedTerminatedPods": {}, "ready": 0}}
    assert reflect_status("batch/v1", "Job", obj) == {
        "conditions": conditions, "startTime": "2024-01-01T00:00:00Z", "succeeded": 2}


def test_service_reflects_load_balancer_only_for_load_balancer_type() -> None:
    ingress = [{"ip": "10.0.0.1"}]
    lb = {"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": ingress}, "conditions": []}}
    assert reflect_status("v1", "Service", lb) == {"loadBalancer": {"ingress": ingress}}
    assert reflect_status("v1", "Service", {"spec": {"type": "LoadBalancer"}, "status": {}}) == {"loadBalancer": {}}
    assert reflect_status("v1", "Service", {"spec": {"type": "ClusterIP"}, "status": {"loadBalancer": {}}}) is None
    assert reflect_status("v1", "Service", {"spec": {}, "status": {"loadBalancer": {}}}) is None


def test_pdb_and_hpa_reflect_their_counters() -> None:
    pdb = {"status": {"currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 3, "observedGeneration": 1}}
    assert reflect_status("policy/v1", "PodDisruptionBudget", pdb) == {
        "disruptionsAllowed": 0, "currentHealthy": 2, "desiredHealthy": 2, "expectedPods": 3}
    assert reflect_status("autoscaling/v2", "HorizontalPodAutoscaler", {"status": {"desiredReplicas": 0}}) == {
        "desiredReplicas": 0}


@pytest.mark.parametrize(("api_version", "kind"), [("apps/v1", "ReplicaSet"), ("v1", "Pod"),
                                                   ("networking.k8s.io/v1", "Ingress"),
                                                   ("example.io/v1", "Widget")])
def test_other_kinds_reflect_their_whole_status(api_version: str, kind: str) -> None:
    status = {"phase": "Running", "replicas": 2, "custom": {"nested": [1, 2]}}
    obj = {"metadata": {"generation": 1}, "status": status}
    reflected = reflect_status(api_version, kind, obj)
    assert reflected == status
    assert reflected is not status  # a copy: the cache object is never shared into a write
    assert reflect_status(api_version, kind, {"status": {}}) == {}
    assert reflect_status(api_version, kind, {"metadata": {}}) is None


def test_status_that_is_not_an_object_is_an_error() -> None:
    with pytest.raises(ReflectError):
        reflect_status("apps/v1", "ReplicaSet", {"status": ["not", "a", "map"]})


# ----------------------------------------------------------------------------- health


def workload(kind: str, *, generation: int = 1, spec: dict[str, Any] | None = None,
             **status: Any) -> tuple[str, str, dict[str, Any]]:
    return "apps/v1", kind, {"metadata": {"generation": generation}, "spec": spec or {}, "status": status}


@pytest.mark.parametrize(("row", "want"), [
    (workload("Deployment", spec={"replicas": 3}, availableReplicas=3, updatedReplicas=3, observedGeneration=1),
     HEALTHY),
    (workload("Deployment", spec={"replicas": 3}, availableReplicas=3, updatedReplicas=3, observedGeneration=2),
     UNHEALTHY),
    (workload("Deployment", spec={"replicas": 3}, updatedReplicas=1, observedGeneration=1), UNHEALTHY),
    (workload("Deployment", spec={"replicas": 3}, availableReplicas=0, updatedReplicas=3, observedGeneration=1),
     UNHEALTHY),
    (workload("Deployment", spec={"replicas": 0}, observedGeneration=1), HEALTHY),
    (workload("StatefulSet", spec={"replicas": 3}, availableReplicas=3, updatedReplicas=3, observedGeneration=1),
     HEALTHY),
    (workload("StatefulSet", spec={"replicas": 3}, availableReplicas=1, updatedReplicas=3, observedGeneration=1),
     UNHEALTHY),
    # Karmada's rule ignores a rolling-update partition: 1 of 3 updated is Unhealthy (f8fdd02, healthy.go)
    (workload("StatefulSet", spec={"replicas": 3, "updateStrategy": {"rollingUpdate": {"partition": 2}}},
              availableReplicas=3, updatedReplicas=1, observedGeneration=1), UNHEALTHY),
    (workload("StatefulSet", spec={"replicas": 3}, availableReplicas=3, updatedReplicas=3, observedGeneration=2),
     UNHEALTHY),
    (workload("StatefulSet", spec={"replicas": 3, "updateStrategy": {"rollingUpdate": {"partition": 2}}},
              availableReplicas=2, updatedReplicas=1, observedGeneration=1), UNHEALTHY),
    (workload("ReplicaSet", spec={"replicas": 3}, availableReplicas=3, observedGeneration=1), HEALTHY),
    (workload("ReplicaSet", spec={"replicas": 3}, availableReplicas=3, observedGeneration=2), UNHEALTHY),
    (workload("ReplicaSet", spec={"replicas": 3}, availableReplicas=2, observedGeneration=1), UNHEALTHY),
    (workload("DaemonSet", observedGeneration=1), HEALTHY),
    (workload("DaemonSet", observedGeneration=2), UNHEALTHY),
    (workload("DaemonSet", generation=0, updatedNumberScheduled=3, desiredNumberScheduled=5), UNHEALTHY),
    (workload("DaemonSet", generation=0, updatedNumberScheduled=5, desiredNumberScheduled=5, numberAvailable=3),
     UNHEALTHY),
])
def test_workload_health(row: tuple[str, str, dict[str, Any]], want: str) -> None:
    assert interpret_health(*row) == want


READY = {"type": "Ready", "status": "True"}


@pytest.mark.parametrize(("api_version", "kind", "obj", "want"), [
    ("v1", "Pod", {"status": {"phase": "Running", "conditions": [READY]}}, HEALTHY),
    ("v1", "Pod", {"status": {"phase": "Succeeded"}}, HEALTHY),
    ("v1", "Pod", {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "Unknown"}]}},
     UNHEALTHY),
    ("v1", "Pod", {"status": {"phase": "Running"}}, UNHEALTHY),
    ("v1", "Pod", {"status": {"phase": "Failed"}}, UNHEALTHY),
    ("v1", "Pod", {"metadata": {"name": "p"}}, UNHEALTHY),
    ("v1", "Service", {"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": [{"ip": "x"}]}}},
     HEALTHY),
    ("v1", "Service", {"spec": {"type": "NodePort"}, "status": {}}, HEALTHY),
    ("v1", "Service", {"spec": {"type": "LoadBalancer"}, "status": {"loadBalancer": {"ingress": []}}}, UNHEALTHY),
    ("networking.k8s.io/v1", "Ingress", {"status": {"loadBalancer": {"ingress": [{"hostname": "a"}]}}}, HEALTHY),
    ("networking.k8s.io/v1", "Ingress", {"status": {"loadBalancer": {"ingress": []}}}, UNHEALTHY),
    ("v1", "PersistentVolumeClaim", {"status": {"phase": "Bound"}}, HEALTHY),
    ("v1", "PersistentVolumeClaim", {"status": {"phase": "Pending"}}, UNHEALTHY),
    ("policy/v1", "PodDisruptionBudget", {"status": {"currentHealthy": 2, "desiredHealthy": 2}}, HEALTHY),
    ("policy/v1", "PodDisruptionBudget", {"status": {"currentHealthy": 1, "desiredHealthy": 2}}, UNHEALTHY),
])
def test_other_health_rules(api_version: str, kind: str, obj: dict[str, Any], want: str) -> None:
    assert interpret_health(api_version, kind, obj) == want


def test_kinds_without_a_health_rule_are_healthy() -> None:
    """Karmada's interpretHealth skips the assessment when no hook exists and reports Healthy."""
    assert interpret_health("v1", "ConfigMap", {"data": {}}) == HEALTHY
    assert interpret_health("batch/v1", "Job", {"status": {"failed": 3}}) == HEALTHY
    assert interpret_health("example.io/v1", "Widget", {}) == HEALTHY


def test_unreadable_object_health_is_unknown() -> None:
    obj = {"metadata": {"generation": 1}, "spec": {"replicas": "3"}, "status": {"observedGeneration": 1}}
    assert interpret_health("apps/v1", "Deployment", obj) == UNKNOWN
    assert interpret_health("v1", "Service", {"spec": {"type": "LoadBalancer"},
                                              "status": {"loadBalancer": "nope"}}) == UNKNOWN


# ----------------------------------------------------------------------------- manifest status shape


def test_identifier_omits_empty_group_and_namespace() -> None:
    from controller_manager.resource import Resource  # noqa: PLC0415

    namespaced = manifest_identifier(0, Resource("apps", "v1", "deployments", "Deployment", True), deployment())
    assert namespaced == {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment",
                          "resource": "deployments", "namespace": "test-ns", "name": "test-deployment"}
    cluster_scoped = manifest_identifier(2, Resource("", "v1", "namespaces", "Namespace", False),
                                         {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}})
    assert cluster_scoped == {"ordinal": 2, "version": "v1", "kind": "Namespace", "resource": "namespaces",
                              "name": "ns1"}
    assert manifest_status(cluster_scoped, None, HEALTHY) == {"identifier": cluster_scoped, "health": HEALTHY}


def test_manifest_statuses_are_what_binding_status_reads() -> None:
    """The product's assembleWorkStatus finds our item by identifier and copies status and health."""
    from controller_manager.resource import Resource  # noqa: PLC0415
    from controllers.bindingstatus import assemble_work_status  # noqa: PLC0415

    manifest = deployment()
    item = manifest_status(manifest_identifier(0, Resource("apps", "v1", "deployments", "Deployment", True),
                                               manifest),
                           reflect_status("apps/v1", "Deployment", manifest), HEALTHY)
    work = {"apiVersion": WORKS.api_version, "kind": WORKS.kind,
            "metadata": {"name": "w", "namespace": "karmada-es-member1"},
            "spec": {"workload": {"manifests": [manifest]}},
            "status": {"conditions": [{"type": "Applied", "status": "True"}], "manifestStatuses": [item]}}
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "test-ns", "name": "test-deployment"}
    [aggregated] = assemble_work_status([work], ref)
    assert aggregated["clusterName"] == "member1"
    assert aggregated["health"] == HEALTHY
    assert aggregated["status"]["readyReplicas"] == 3


# ----------------------------------------------------------------------------- member object writes


def test_update_keeps_what_belongs_to_the_member() -> None:
    desired = desired_object({"apiVersion": "apps/v1", "kind": "Deployment",
                              "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                                           "annotations": {"a": "new"}},
                              "spec": {"replicas": 2}}, "karmada-es-m1", "web-1234")
    observed = {"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default", "resourceVersion": "42",
                             "finalizers": ["member/finalizer"], "labels": {"team": "x"},
                             "annotations": {"a": "old", "deployment.kubernetes.io/revision": "3"}},
                "spec": {"replicas": 5}, "status": {"replicas": 5}}
    out = retain_cluster_fields(desired, observed)
    assert out["metadata"]["resourceVersion"] == "42"
    assert out["metadata"]["finalizers"] == ["member/finalizer"]
    assert out["metadata"]["labels"] == {"team": "x", "app": "web"}
    assert out["metadata"]["annotations"] == {"a": "new", "deployment.kubernetes.io/revision": "3",
                                              "work.karmada.io/namespace": "karmada-es-m1",
                                              "work.karmada.io/name": "web-1234"}
    assert out["spec"] == {"replicas": 2}
    assert out["status"] == {"replicas": 5}
    assert "resourceVersion" not in desired["metadata"]  # the input is left alone


def test_update_keeps_member_owned_pod_and_service_fields() -> None:
    pod = retain_cluster_fields({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
                                {"metadata": {"resourceVersion": "7"},
                                 "spec": {"nodeName": "node-a", "serviceAccountName": "default",
                                          "containers": [{"name": "c", "volumeMounts": [{"name": "token"}]}]}})
    assert pod["spec"]["nodeName"] == "node-a"
    assert pod["spec"]["containers"][0]["volumeMounts"] == [{"name": "token"}]
    # as Karmada's RetainServiceFields: the member's cluster IP and health-check node port win, node ports are the
    # desired Service's (the Karmada API server's, which the member was created with)
    service = retain_cluster_fields({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                                     "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                                              "healthCheckNodePort": 30111,
                                              "ports": [{"port": 80, "nodePort": 30080}]}},
                                    {"metadata": {"resourceVersion": "8"},
                                     "spec": {"clusterIP": "10.0.0.7", "healthCheckNodePort": 30222,
                                              "ports": [{"port": 80, "nodePort": 30081}]}})
    assert (service["spec"]["clusterIP"], service["spec"]["healthCheckNodePort"]) == ("10.0.0.7", 30222)
    assert service["spec"]["ports"] == [{"port": 80, "nodePort": 30080}]


def test_conflict_resolution() -> None:
    managed = {"metadata": {"labels": {"karmada.io/managed": "true"}}}
    unmanaged: dict[str, Any] = {"metadata": {"labels": {"app": "x"}}}
    desired = desired_object({"metadata": {"name": "web", "labels": {"karmada.io/managed": "true"}}}, "ns", "w")
    aborting = desired_object({"metadata": {"name": "web", "labels": {"karmada.io/managed": "true"},
                                            "annotations": {"work.karmada.io/conflict-resolution": "abort"}}},
                              "ns", "w")
    assert allow_update(desired, managed)
    assert allow_update(desired, unmanaged)  # no conflictResolution on the Work: applied
    assert allow_update(aborting, managed)
    assert not allow_update(aborting, unmanaged)
    claimed = {"metadata": {"annotations": {"work.karmada.io/namespace": "ns", "work.karmada.io/name": "w"}}}
    assert allow_update(aborting, claimed)  # already this Work's: adopted


def test_preserved_objects_lose_karmada_metadata_only() -> None:
    obj = {"metadata": {"name": "web", "labels": {"app": "web", "karmada.io/managed": "true"},
                        "annotations": {"work.karmada.io/name": "w", "work.karmada.io/namespace": "ns",
                                        "resourcetemplate.karmada.io/generation": "2", "keep": "me"}}}
    stripped = strip_karmada_metadata(obj)
    assert stripped is not None
    assert stripped["metadata"]["labels"] == {"app": "web"}
    assert stripped["metadata"]["annotations"] == {"keep": "me"}
    assert strip_karmada_metadata(stripped) is None
