"""Pure rules of the simulated detector and binding controller.

Quantity printing as apimachinery does it (``kube_api.quantity``), replicas and replica requirements
per kind (``interpreter.replicas``); workloads (``devplane.karmada.workloads``): Webster division of
Job completions, manifest rendering and pruning.
Detector (``devplane.karmada.detector``, ``policies``, ``policybinding``): resource selector
priorities, policy choice, webhook defaults, what an apply writes over an existing binding. Binding controller
(``devplane.karmada.binding``): target and retained clusters, dispatching suspension, Work shape.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from devplane.karmada.binding import (
    conflict_resolution,
    desired_work,
    merge_target_clusters,
    merge_work,
    suspend_dispatching,
)
from devplane.karmada.detector import (
    ignored_namespace,
    parse_template_request,
    specification_changed,
    template_request,
)
from devplane.karmada.policies import (
    CPP_KIND,
    PP_KIND,
    PRIORITY_MATCH_ALL,
    PRIORITY_MATCH_LABEL_SELECTOR,
    PRIORITY_MATCH_NAME,
    PRIORITY_MISMATCH,
    highest_priority_policy,
    selector_priority,
)
from devplane.karmada.policybinding import (
    build_binding,
    default_failover,
    default_placement,
    merge_binding,
    merge_suspension,
)
from devplane.karmada.scheduler.division import webster_seats as webster
from devplane.karmada.workloads import (
    TemplateKind,
    job_completions,
    kind_for,
    render_manifest,
    spread_by_target_clusters,
)
from interpreter.replicas import (
    get_replicas,
    node_claim,
    replica_requirements,
    resource_request,
)
from karmada_api.bindings import existing_clusters
from karmada_api.names import fnv32a
from kube_api.quantity import format_binary, format_decimal
from kube_api.quantity import format_resource_amount as format_quantity


def known(api_version: str, kind: str) -> TemplateKind:
    found = kind_for(api_version, kind)
    assert found is not None
    return found


DEPLOYMENT = known("apps/v1", "Deployment")
JOB = known("batch/v1", "Job")
CONFIGMAP = known("v1", "ConfigMap")


def container(name: str = "c", requests: dict[str, str] | None = None,
              limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "nginx", "resources": resources}


def deployment(replicas: int = 3, pod_spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    metadata = {"name": "foo", "namespace": "default", "uid": "uid-1", "resourceVersion": "7", "generation": 2,
                "creationTimestamp": "2025-01-01T00:00:00Z", "labels": {"app": "test"}, **meta}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "foo"}},
                     "template": {"metadata": {"labels": {"app": "foo"}},
                                  "spec": pod_spec or {"containers": [container(limits={"cpu": "10m",
                                                                                        "memory": "10Mi"})]}}},
            "status": {"replicas": 3}}


# ----------------------------------------------------------------------------- quantities


@pytest.mark.parametrize(("mantissa", "exponent", "text"), [
    (0, 0, "0"), (10, -3, "10m"), (1000, -3, "1"), (1500, -3, "1500m"), (2500000, -3, "2500"),
    (100, -3, "100m"), (1000, 0, "1k"), (1, -9, "1n"), (5, 0, "5"), (12000000, 0, "12M"), (1, 21, "1e21"),
])
def test_decimal_si_is_canonical(mantissa: int, exponent: int, text: str) -> None:
    assert format_decimal(mantissa, exponent) == text


@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (512, "512"), (1000, "1k"), (1024, "1Ki"), (1536, "1536"), (10 * 2**20, "10Mi"), (2**30, "1Gi"),
    (10**9, "1000000000"), (3 * 2**40, "3Ti"),
])
def test_binary_si_is_canonical(value: int, text: str) -> None:
    assert format_binary(value) == text


def test_quantity_format_per_resource() -> None:
    assert format_quantity("cpu", 250) == "250m"
    assert format_quantity("memory", 64 * 2**20) == "64Mi"
    assert format_quantity("ephemeral-storage", 2**30) == "1Gi"
    assert format_quantity("hugepages-2Mi", 2**21) == "2Mi"
    assert format_quantity("nvidia.com/gpu", 2) == "2"


# ----------------------------------------------------------------------------- replicas and requirements


def test_requests_sum_containers_take_init_max_and_default_from_limits() -> None:
    spec = {"containers": [container("a", requests={"cpu": "100m"}, limits={"cpu": "1", "memory": "1Gi"}),
                           container("b", requests={"cpu": "0.5", "memory": "512Mi"})],
            "initContainers": [container("i", limits={"cpu": "2", "memory": "100Mi"})],
            "overhead": {"memory": "10Mi"}}
    # cpu: max(0.1 + 0.5, 2) = 2; memory: max(1Gi + 512Mi, 100Mi) + 10Mi overhead.
    assert resource_request(spec) == {"cpu": "2", "memory": f"{1024 + 512 + 10}Mi"}
    assert resource_request({"containers": [container()]}) is None


def test_node_claim_has_only_what_is_set() -> None:
    assert node_claim({"containers": []}) is None
    affinity = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}
    spec = {"nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "k", "operator": "Exists"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": affinity}}}
    assert node_claim(spec) == {"nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "k", "operator": "Exists"}],
                                "hardNodeAffinity": affinity}
    assert node_claim({"nodeSelector": {"disk": "ssd"}}) == {"nodeSelector": {"disk": "ssd"}}


def test_seed_deployment_replicas_and_requirements() -> None:
    assert get_replicas(deployment(), DEPLOYMENT) == (
        3, {"resourceRequest": {"cpu": "10m", "memory": "10Mi"}, "namespace": "default"})


def test_requirements_carry_priority_class_and_are_omitted_when_empty() -> None:
    spec = {"priorityClassName": "high", "containers": [container(requests={"cpu": "1"})]}
    assert replica_requirements(deployment(pod_spec=spec)) == {
        "resourceRequest": {"cpu": "1"}, "namespace": "default", "priorityClassName": "high"}
    assert get_replicas(deployment(2, pod_spec={"containers": [container()]}), DEPLOYMENT) == (2, None)


def test_job_replicas_are_its_parallelism_and_other_kinds_have_none() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
           "spec": {"parallelism": 4, "completions": 8,
                    "template": {"spec": {"containers": [container(requests={"memory": "1Mi"})]}}}}
    replicas, requirements = get_replicas(job, JOB)
    assert replicas == 4 and requirements is not None and requirements["resourceRequest"] == {"memory": "1Mi"}
    assert get_replicas({"metadata": {"name": "cm"}, "data": {"a": "1"}}, CONFIGMAP) == (0, None)


# ----------------------------------------------------------------------------- division


@pytest.mark.parametrize(("seats", "votes", "want"), [
    (13, [("a", 3), ("b", 2), ("c", 1)], {"a": 7, "b": 4, "c": 2}),
    (14, [("a", 3), ("b", 2), ("c", 1)], {"a": 7, "b": 5, "c": 2}),
    (10, [("m1", 2), ("m2", 1)], {"m1": 7, "m2": 3}),
    (1, [("a", 1), ("b", 1)], {"a": 1, "b": 0}),  # tie: the smaller name (empty uid)
])
def test_webster(seats: int, votes: list[tuple[str, int]], want: dict[str, int]) -> None:
    assert webster(seats, votes) == want


def test_webster_tie_breaks_by_uid_parity() -> None:
    odd = next(u for u in (f"uid-{i}" for i in range(100)) if fnv32a(u.encode()) & 1)
    assert webster(1, [("a", 1), ("b", 1)], odd) == {"a": 0, "b": 1}


def test_completions_are_divided_only_for_divided_jobs() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
           "spec": {"parallelism": 3, "completions": 10, "template": {"spec": {"containers": []}}}}
    clusters = [{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 1}]
    divided = {"spec": {"replicas": 3, "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided"}}}}
    assert job_completions(job, divided, clusters) == {"m1": 7, "m2": 3}
    assert job_completions(job, {"spec": {"replicas": 3, "placement": {}}}, clusters) is None
    assert spread_by_target_clusters(5, [{"name": "x"}]) == {"x": 0}


# ----------------------------------------------------------------------------- manifests

RB = {"metadata": {"name": "foo-deployment", "namespace": "default",
                   "labels": {"resourcebinding.karmada.io/permanent-id": "rb-id"}},
      "spec": {"replicas": 3}}


def test_manifest_follows_the_work_contract() -> None:
    template = deployment(annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "x",
                                       "deployment.kubernetes.io/revision": "4"},
                          managedFields=[{}], ownerReferences=[{}], finalizers=["f"])
    body = render_manifest(template, RB, 2)
    assert body["metadata"] == {
        "name": "foo", "namespace": "default",
        "labels": {"app": "test", "karmada.io/managed": "true", "resourcebinding.karmada.io/permanent-id": "rb-id"},
        "annotations": {"note": "x", "resourcetemplate.karmada.io/generation": "2",
                        "resourcebinding.karmada.io/namespace": "default",
                        "resourcebinding.karmada.io/name": "foo-deployment"}}
    assert "status" not in body
    assert body["spec"]["replicas"] == 2
    assert template["spec"]["replicas"] == 3 and "status" in template  # the template is not touched


def test_replicas_are_revised_only_for_bindings_with_replicas() -> None:
    assert render_manifest(deployment(), {**RB, "spec": {}}, 2)["spec"]["replicas"] == 3
    crb = {"metadata": {"name": "foo-deployment", "labels": {"clusterresourcebinding.karmada.io/permanent-id": "i"}},
           "spec": {"replicas": 3}}
    body = render_manifest(deployment(), crb, 1)
    assert body["spec"]["replicas"] == 1
    assert body["metadata"]["labels"]["clusterresourcebinding.karmada.io/permanent-id"] == "i"
    assert body["metadata"]["annotations"]["clusterresourcebinding.karmada.io/name"] == "foo-deployment"


def test_job_gets_parallelism_and_completions() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default"},
           "spec": {"parallelism": 3, "completions": 10, "selector": {"matchLabels": {"controller-uid": "u",
                                                                                       "keep": "y"}},
                    "template": {"metadata": {"labels": {"job-name": "j", "batch.kubernetes.io/controller-uid": "u",
                                                         "app": "j"}}, "spec": {"containers": []}}}}
    body = render_manifest(job, RB, 2, completions=7)
    assert (body["spec"]["parallelism"], body["spec"]["completions"]) == (2, 7)
    assert body["spec"]["selector"]["matchLabels"] == {"keep": "y"}
    assert body["spec"]["template"]["metadata"]["labels"] == {"app": "j"}


def test_member_generated_fields_are_pruned() -> None:
    service: dict[str, Any] = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
               "spec": {"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "ports": [{"port": 80}]}}
    assert render_manifest(service, RB, None)["spec"] == {"ports": [{"port": 80}]}
    headless = copy.deepcopy(service)
    headless["spec"].update(clusterIP="None", clusterIPs=["None"])
    assert render_manifest(headless, RB, None)["spec"]["clusterIP"] == "None"
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa", "namespace": "default"},
               "secrets": [{"name": "sa-token-abc"}, {"name": "other"}]}
    assert render_manifest(account, RB, None)["secrets"] == [{"name": "other"}]
    token = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
             "metadata": {"name": "t", "namespace": "default",
                          "annotations": {"kubernetes.io/service-account.uid": "u"}}, "data": {"token": "x"}}
    pruned = render_manifest(token, RB, None)
    assert pruned["data"] is None and "kubernetes.io/service-account.uid" not in pruned["metadata"]["annotations"]


# ----------------------------------------------------------------------------- detector: selectors and choice


def template(name: str = "foo", labels: dict[str, str] | None = None, namespace: str = "default") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}}


DEPLOY_SELECTOR = {"apiVersion": "apps/v1", "kind": "Deployment"}


@pytest.mark.parametrize(("selector", "want"), [
    ({**DEPLOY_SELECTOR, "name": "foo"}, PRIORITY_MATCH_NAME),
    ({**DEPLOY_SELECTOR, "name": "foo", "labelSelector": {"matchLabels": {"app": "nope"}}}, PRIORITY_MATCH_NAME),
    ({**DEPLOY_SELECTOR, "name": "bar"}, PRIORITY_MISMATCH),
    ({**DEPLOY_SELECTOR, "labelSelector": {"matchLabels": {"app": "x"}}}, PRIORITY_MATCH_LABEL_SELECTOR),
    ({**DEPLOY_SELECTOR, "labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn",
                                                                  "values": ["x"]}]}}, PRIORITY_MISMATCH),
    (DEPLOY_SELECTOR, PRIORITY_MATCH_ALL),
    ({**DEPLOY_SELECTOR, "namespace": "other"}, PRIORITY_MISMATCH),
    ({**DEPLOY_SELECTOR, "namespace": "default"}, PRIORITY_MATCH_ALL),
    ({"apiVersion": "apps/v1beta1", "kind": "Deployment"}, PRIORITY_MISMATCH),
    ({"apiVersion": "apps/v1", "kind": "StatefulSet"}, PRIORITY_MISMATCH),
])
def test_selector_priority(selector: dict[str, Any], want: int) -> None:
    assert selector_priority(template(labels={"app": "x"}), selector) == want


def pp(name: str, *selectors: dict[str, Any], priority: int | None = None,
       namespace: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceSelectors": list(selectors)}
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


@pytest.mark.parametrize(("policies", "want"), [
    ([pp("all", DEPLOY_SELECTOR), pp("named", {**DEPLOY_SELECTOR, "name": "foo"})], "named"),
    ([pp("all", DEPLOY_SELECTOR), pp("label", {**DEPLOY_SELECTOR, "labelSelector": {"matchLabels": {"app": "x"}}})],
     "label"),
    ([pp("b", DEPLOY_SELECTOR), pp("a", DEPLOY_SELECTOR)], "a"),
    ([pp("named", {**DEPLOY_SELECTOR, "name": "foo"}), pp("urgent", DEPLOY_SELECTOR, priority=1)], "urgent"),
    ([pp("low", DEPLOY_SELECTOR, priority=-1)], None),  # Karmada's loop never picks a negative priority
    ([pp("other-ns", {**DEPLOY_SELECTOR, "namespace": "x"})], None),
    ([pp("mixed", {"apiVersion": "v1", "kind": "ConfigMap"}, {**DEPLOY_SELECTOR, "name": "foo"}),
      pp("all", DEPLOY_SELECTOR)], "mixed"),  # the best of a policy's selectors counts
])
def test_highest_priority_policy(policies: list[dict[str, Any]], want: str | None) -> None:
    best = highest_priority_policy(policies, template(labels={"app": "x"}))
    assert (best["metadata"]["name"] if best else None) == want


def test_pp_selector_without_namespace_means_the_pp_namespace() -> None:
    elsewhere = template(namespace="other")
    assert highest_priority_policy([pp("p", DEPLOY_SELECTOR)], elsewhere) is None
    cpp = {"metadata": {"name": "c"}, "spec": {"resourceSelectors": [DEPLOY_SELECTOR]}}
    assert highest_priority_policy([cpp], elsewhere) is cpp


def test_ignored_namespaces() -> None:
    for namespace in ("karmada-system", "karmada-cluster", "karmada-es-member1", "kube-system", "kube-public",
                      "kube-node-lease"):
        assert ignored_namespace(namespace), namespace
    for namespace in ("", "default", "my-kube-apps", "karmada"):
        assert not ignored_namespace(namespace), namespace


def test_template_requests_round_trip() -> None:
    request = template_request(DEPLOYMENT, template())
    assert (request.namespace, request.name) == ("default", "deployments.apps/foo")
    assert parse_template_request(request) == (DEPLOYMENT, "foo")
    role = known("rbac.authorization.k8s.io/v1", "ClusterRole")
    request = template_request(role, {"metadata": {"name": "system:reader"}})
    assert parse_template_request(request) == (role, "system:reader")


def test_specification_changed_ignores_status_and_resource_version() -> None:
    old = deployment()
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1}
    new["metadata"]["resourceVersion"] = "99"
    assert not specification_changed(old, new)
    new["metadata"]["labels"] = {"app": "other"}
    assert specification_changed(old, new)


# ----------------------------------------------------------------------------- detector: binding


def test_webhook_defaults() -> None:
    placement: dict[str, Any] = {"spreadConstraints": [{}, {"spreadByLabel": "zone", "minGroups": 2}],
                 "replicaScheduling": {"replicaSchedulingType": "Divided"}}
    assert default_placement(placement) == {
        "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1}, {"spreadByLabel": "zone", "minGroups": 2}],
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}
    assert placement["spreadConstraints"][0] == {}  # the policy is not touched
    duplicated = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    assert default_placement(duplicated) == duplicated
    assert default_placement(None) == {}
    assert default_failover({"application": {"purgeMode": "Gracefully"}}) == {
        "application": {"purgeMode": "Gracefully", "gracePeriodSeconds": 600}}
    assert default_failover({"application": {"purgeMode": "Directly"}}) == {"application": {"purgeMode": "Directly"}}
    assert default_failover(None) is None


POLICY = {"metadata": {"name": "default-pp", "namespace": "default",
                       "labels": {"propagationpolicy.karmada.io/permanent-id": "pp-id"}},
          "spec": {"resourceSelectors": [DEPLOY_SELECTOR], "schedulerName": "default-scheduler",
                   "conflictResolution": "Abort", "placement": {"clusterAffinity": {"clusterNames": ["m1"]}},
                   "suspension": {"dispatching": True}}}


def test_build_binding_for_a_namespaced_template() -> None:
    binding = build_binding(deployment(), DEPLOYMENT, POLICY, PP_KIND)
    assert binding["metadata"] == {
        "name": "foo-deployment", "namespace": "default",
        "labels": {"propagationpolicy.karmada.io/permanent-id": "pp-id"},
        "annotations": {"propagationpolicy.karmada.io/name": "default-pp",
                        "propagationpolicy.karmada.io/namespace": "default"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo", "uid": "uid-1",
                             "controller": True, "blockOwnerDeletion": True}],
        "finalizers": ["karmada.io/binding-controller"]}
    assert binding["spec"] == {
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "foo",
                     "uid": "uid-1", "resourceVersion": "7"},
        "replicaRequirements": {"resourceRequest": {"cpu": "10m", "memory": "10Mi"}, "namespace": "default"},
        "replicas": 3, "schedulerName": "default-scheduler", "placement": {"clusterAffinity": {"clusterNames": ["m1"]}},
        "conflictResolution": "Abort", "suspension": {"dispatching": True}}


def test_build_binding_for_a_cluster_scoped_template_under_a_cpp() -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "system:reader", "uid": "u", "resourceVersion": "3"}, "rules": []}
    cpp = {"metadata": {"name": "c", "labels": {"clusterpropagationpolicy.karmada.io/permanent-id": "cpp-id"}},
           "spec": {"resourceSelectors": [], "schedulePriority": {}}}
    binding = build_binding(role, known("rbac.authorization.k8s.io/v1", "ClusterRole"), cpp, CPP_KIND,
                            schedule_priority=7)
    assert binding["kind"] == "ClusterResourceBinding"
    assert binding["metadata"]["name"] == "system.reader-clusterrole" and "namespace" not in binding["metadata"]
    assert binding["metadata"]["annotations"] == {"clusterpropagationpolicy.karmada.io/name": "c"}
    assert binding["metadata"]["finalizers"] == ["karmada.io/cluster-resource-binding-controller"]
    assert binding["spec"] == {"resource": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                            "name": "system:reader", "uid": "u", "resourceVersion": "3"},
                               "schedulerName": "default-scheduler", "placement": {},
                               "schedulePriority": {"priority": 7}}


def test_merge_binding_writes_only_what_the_detector_owns() -> None:
    existing = {
        "metadata": {"name": "foo-deployment", "namespace": "default", "resourceVersion": "40",
                     "labels": {"resourcebinding.karmada.io/permanent-id": "rb-id", "other": "kept",
                                "clusterpropagationpolicy.karmada.io/permanent-id": "old-cpp"},
                     "annotations": {"clusterpropagationpolicy.karmada.io/name": "old",
                                     "policy.karmada.io/applied-placement": "{}"},
                     "finalizers": ["someone/else"]},
        "spec": {"resource": {"name": "foo"}, "replicas": 1, "propagateDeps": True,
                 "clusters": [{"name": "m1", "replicas": 1}], "rescheduleTriggeredAt": "2025-01-01T00:00:00Z",
                 "gracefulEvictionTasks": [{"fromCluster": "m2"}], "suspension": {"scheduling": True}},
        "status": {"lastScheduledTime": "2025-01-01T00:00:00Z"}}
    desired = build_binding(deployment(), DEPLOYMENT, POLICY, PP_KIND)
    merged = merge_binding(existing, desired, PP_KIND)
    assert merged["metadata"]["labels"] == {"resourcebinding.karmada.io/permanent-id": "rb-id", "other": "kept",
                                            "propagationpolicy.karmada.io/permanent-id": "pp-id"}
    assert merged["metadata"]["annotations"] == {"policy.karmada.io/applied-placement": "{}",
                                                 "propagationpolicy.karmada.io/name": "default-pp",
                                                 "propagationpolicy.karmada.io/namespace": "default"}
    assert merged["metadata"]["finalizers"] == ["someone/else", "karmada.io/binding-controller"]
    spec = merged["spec"]
    assert spec["replicas"] == 3 and "propagateDeps" not in spec
    assert spec["clusters"] == [{"name": "m1", "replicas": 1}]
    assert spec["rescheduleTriggeredAt"] == "2025-01-01T00:00:00Z"
    assert spec["gracefulEvictionTasks"] == [{"fromCluster": "m2"}]
    assert spec["suspension"] == {"scheduling": True, "dispatching": True}
    assert merged["status"] == existing["status"]
    assert merge_binding(merged, desired, PP_KIND) == merged  # applying again changes nothing


def test_merge_suspension() -> None:
    assert merge_suspension(None, None) is None
    assert merge_suspension({"scheduling": True, "dispatching": True}, None) == {"scheduling": True}
    assert merge_suspension({"dispatching": True}, {}) is None
    assert merge_suspension(None, {"dispatchingOnClusters": {"clusterNames": ["m1"]}}) == {
        "dispatchingOnClusters": {"clusterNames": ["m1"]}}


# ----------------------------------------------------------------------------- binding controller


def test_merged_targets_and_existing_clusters() -> None:
    spec = {"clusters": [{"name": "m1", "replicas": 2}],
            "requiredBy": [{"name": "dep", "clusters": [{"name": "m1", "replicas": 5}, {"name": "m3"}]}],
            "gracefulEvictionTasks": [{"fromCluster": "m2", "purgeMode": "Gracefully"},
                                      {"fromCluster": "m4", "purgeMode": "Directly"},
                                      {"fromCluster": "m5"}]}
    assert merge_target_clusters(spec) == [{"name": "m1", "replicas": 2}, {"name": "m3"}]
    assert existing_clusters(spec) == {"m1", "m2", "m3", "m5"}
    assert merge_target_clusters({}) == [] and existing_clusters({}) == set()


def test_dispatching_suspension_and_conflict_resolution() -> None:
    assert suspend_dispatching({"suspension": {"dispatching": True}}, "m1")
    assert suspend_dispatching({"suspension": {"dispatchingOnClusters": {"clusterNames": ["m1"]}}}, "m1")
    assert not suspend_dispatching({"suspension": {"dispatchingOnClusters": {"clusterNames": ["m1"]}}}, "m2")
    assert not suspend_dispatching({}, "m1")
    assert conflict_resolution({}, {"conflictResolution": "Overwrite"}) == "overwrite"
    assert conflict_resolution({}, {}) == "abort"
    annotated = {"metadata": {"annotations": {"work.karmada.io/conflict-resolution": "overwrite"}}}
    assert conflict_resolution(annotated, {"conflictResolution": "Abort"}) == "overwrite"


def test_desired_work_and_its_update() -> None:
    binding = {"metadata": RB["metadata"], "spec": {"replicas": 3, "preserveResourcesOnDeletion": False,
                                                    "suspension": {"dispatchingOnClusters": {"clusterNames": ["m1"]}}}}
    work = desired_work(deployment(), binding, {"name": "m1", "replicas": 2}, None)
    assert work["metadata"] == {
        "name": "foo-58bcf5bd9c", "namespace": "karmada-es-m1",
        "finalizers": ["karmada.io/execution-controller"],  # ensureWork's workMeta: execution never adds it
        "labels": {"resourcebinding.karmada.io/permanent-id": "rb-id", "karmada.io/managed": "true"},
        "annotations": {"resourcebinding.karmada.io/namespace": "default",
                        "resourcebinding.karmada.io/name": "foo-deployment",
                        "work.karmada.io/conflict-resolution": "abort"}}
    assert work["spec"]["preserveResourcesOnDeletion"] is False and work["spec"]["suspendDispatching"] is True
    assert work["spec"]["workload"]["manifests"][0]["spec"]["replicas"] == 2
    existing = {"metadata": {**work["metadata"], "labels": {"extra": "1"}, "finalizers": ["karmada.io/x"],
                             "resourceVersion": "5"},
                "spec": {"workload": {"manifests": []}}, "status": {"conditions": []}}
    merged = merge_work(existing, work)
    assert merged["metadata"]["labels"] == {"extra": "1", **work["metadata"]["labels"]}
    assert merged["metadata"]["finalizers"] == ["karmada.io/x", "karmada.io/execution-controller"]
    assert merged["status"] == {"conditions": []}
    assert merged["spec"] == work["spec"]
