"""The simulated karmada-scheduler against a real dev API server (host, Karmada CRDs, native Clusters).

Clusters are created in Push mode, then their status (``resourceSummary`` for the general
estimator, ``apiEnablements`` for the APIEnablement filter) is written through the status
subresource, as Karmada's cluster status controller would. Bindings carry the policy label the
scheduler requires and reference a real Deployment (or ClusterRole) template, whose uid the
template events point at.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import EVENTS
from controller_manager.manager import Manager, ManagerOptions
from controller_manager.resource import Resource
from devplane.karmada.scheduler import setup_scheduler
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION, CPP_PERMANENT_ID, PP_PERMANENT_ID
from karmada_api.resources import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, RESOURCE_BINDINGS
from kube_api.resources import DEPLOYMENTS
from kube_api.timeutil import now_text, parse_time
from tests.conftest import eventually

CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
API_ENABLEMENTS = [
    {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
    {"groupVersion": "rbac.authorization.k8s.io/v1", "resources": [{"name": "clusterroles", "kind": "ClusterRole"}]},
]
DYNAMIC = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
DUPLICATED = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}


# ----------------------------------------------------------------------------- environment


@dataclass
class Env:
    kube: KubeClient
    manager: Manager
    controllers: list[Controller]
    task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.manager.run())
        await self.manager.informers.wait_for_sync(timeout=10)

    async def cluster(self, name: str, *, pods: int = 10, taints: list[dict[str, Any]] | None = None,
                      labels: dict[str, str] | None = None) -> None:
        """A Push cluster whose status the general estimator and the APIEnablement filter can read."""
        meta: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
        spec: dict[str, Any] = {"syncMode": "Push", **({"taints": taints} if taints else {})}
        created = await self.kube.create(CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                                    "metadata": meta, "spec": spec})
        await self.set_free_pods(created, pods)

    async def set_free_pods(self, cluster: dict[str, Any] | str, pods: int) -> None:
        """Write the cluster's status, then wait until the scheduler's cache has it (status changes
        do not re-enqueue bindings, so the next schedule must see it)."""
        if isinstance(cluster, str):
            cluster = await self.kube.get(CLUSTERS, cluster)
        status = {"apiEnablements": API_ENABLEMENTS, "resourceSummary": {"allocatable": {"pods": str(pods)}}}
        await self.kube.update_status(CLUSTERS, {**cluster, "status": status})
        if self.task is not None:
            store = self.manager.informer(CLUSTERS).store
            name = cluster["metadata"]["name"]

            def seen() -> bool:
                cached = store.get(name)
                return cached is not None and (cached.get("status") or {}).get("resourceSummary") == \
                    status["resourceSummary"]

            await eventually(seen)


@pytest.fixture
async def env(kube: KubeClient) -> AsyncIterator[Env]:
    manager = Manager(kube, ManagerOptions(name="test-scheduler", metrics_bind_address="127.0.0.1:0",
                                           health_probe_bind_address="127.0.0.1:0"))
    environment = Env(kube, manager, setup_scheduler(manager))
    yield environment
    if environment.task is not None:
        manager.request_shutdown()
        await asyncio.wait_for(environment.task, 10)


async def deployment(kube: KubeClient, name: str = "nginx") -> dict[str, Any]:
    labels = {"app": name}
    return await kube.create(DEPLOYMENTS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})


async def resource_binding(kube: KubeClient, template: dict[str, Any], placement: dict[str, Any], *,
                           replicas: int, labelled: bool = True, name: str = "",
                           **spec: Any) -> dict[str, Any]:
    meta = template["metadata"]
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": meta["namespace"], "name": meta["name"],
           "uid": meta["uid"]}
    labels = {PP_PERMANENT_ID: "policy-id"} if labelled else {}
    body = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": name or f"{meta['name']}-deployment", "namespace": "default", "labels": labels},
            "spec": {"resource": ref, "replicas": replicas, "placement": placement, **spec}}
    return await kube.create(RESOURCE_BINDINGS, body)


async def rb(kube: KubeClient, name: str = "nginx-deployment") -> dict[str, Any]:
    return await kube.get(RESOURCE_BINDINGS, name, "default")


def clusters_of(binding: dict[str, Any]) -> dict[str, int]:
    return {c["name"]: c.get("replicas", 0) for c in binding["spec"].get("clusters") or []}


def scheduled(binding: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in binding.get("status", {}).get("conditions") or [] if c["type"] == "Scheduled"), None)


async def wait_clusters(kube: KubeClient, expected: dict[str, int], name: str = "nginx-deployment",
                        resource: Resource = RESOURCE_BINDINGS, timeout: float = 10.0) -> dict[str, Any]:
    """The binding once its result is ``expected`` and its Scheduled condition is True."""
    async def check() -> dict[str, Any] | None:
        binding = await kube.get(resource, name, "default" if resource.namespaced else "")
        condition = scheduled(binding)
        ok = clusters_of(binding) == expected and condition is not None and condition["status"] == "True"
        return binding if ok else None

    result: dict[str, Any] = await eventually(check, timeout=timeout)
    return result


async def events_about(kube: KubeClient, obj: dict[str, Any], reason: str) -> list[dict[str, Any]]:
    namespace = obj["metadata"].get("namespace") or "default"
    listed = await kube.list(EVENTS, namespace, field_selector=f"involvedObject.uid={obj['metadata']['uid']}")
    return [e for e in listed["items"] if e["reason"] == reason]


async def wait_event(env: Env, obj: dict[str, Any], reason: str, message: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        await env.manager.flush_events()
        return next((e for e in await events_about(env.kube, obj, reason) if e["message"] == message), None)

    result: dict[str, Any] = await eventually(check)
    return result


# ----------------------------------------------------------------------------- tests


async def test_dynamic_weight_over_two_clusters(env: Env) -> None:
    await env.cluster("member1", pods=10)
    await env.cluster("member2", pods=20)
    template = await deployment(env.kube)
    await env.start()
    created = await resource_binding(env.kube, template, DYNAMIC, replicas=3)

    binding = await wait_clusters(env.kube, {"member1": 1, "member2": 2})
    condition = scheduled(binding)
    assert condition is not None
    assert (condition["reason"], condition["message"]) == ("Success", "Binding has been scheduled successfully.")
    assert "observedGeneration" not in condition
    last = binding["status"]["lastScheduledTime"]
    assert last.endswith("Z") and parse_time(last) >= parse_time(created["metadata"]["creationTimestamp"])
    assert "." not in last  # whole seconds
    assert json.loads(binding["metadata"]["annotations"][APPLIED_PLACEMENT_ANNOTATION]) == DYNAMIC
    assert binding["spec"]["clusters"] == [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 2}]

    # our spec write bumped the generation; the next round only catches schedulerObservedGeneration up
    async def observed() -> bool:
        current = await rb(env.kube)
        return bool(current["status"].get("schedulerObservedGeneration") == current["metadata"]["generation"])

    await eventually(observed)

    message = "Binding has been scheduled successfully. Result: {member1:1, member2:2}"
    event = await wait_event(env, binding, "ScheduleBindingSucceed", message)
    assert (event["type"], event["source"]["component"]) == ("Normal", "default-scheduler")
    template_event = await wait_event(env, template, "ScheduleBindingSucceed", message)
    assert template_event["involvedObject"]["kind"] == "Deployment"
    assert template_event["involvedObject"]["name"] == "nginx"


async def test_steady_scale_up_keeps_existing_replicas(env: Env) -> None:
    await env.cluster("member1", pods=10)
    await env.cluster("member2", pods=20)
    template = await deployment(env.kube)
    await env.start()
    await resource_binding(env.kube, template, DYNAMIC, replicas=3)
    await wait_clusters(env.kube, {"member1": 1, "member2": 2})

    await env.set_free_pods("member2", 0)  # a fresh division would now move member2's replicas away
    await env.kube.patch(RESOURCE_BINDINGS, "nginx-deployment", {"spec": {"replicas": 5}}, namespace="default")
    await wait_clusters(env.kube, {"member1": 3, "member2": 2})


async def test_reschedule_trigger_gives_a_fresh_division(env: Env) -> None:
    await env.cluster("member1", pods=10)
    await env.cluster("member2", pods=10)
    template = await deployment(env.kube)
    await env.start()
    await resource_binding(env.kube, template, DYNAMIC, replicas=4)
    binding = await wait_clusters(env.kube, {"member1": 2, "member2": 2})
    last = binding["status"]["lastScheduledTime"]

    await env.set_free_pods("member1", 2)
    await env.set_free_pods("member2", 30)
    # Steady would keep 2:2; a trigger strictly after the last schedule divides 4 by (free + own) = 4:32
    trigger = await eventually(lambda: (t := now_text()) > last and t)
    await env.kube.patch(RESOURCE_BINDINGS, "nginx-deployment", {"spec": {"rescheduleTriggeredAt": trigger}},
                         namespace="default")
    binding = await wait_clusters(env.kube, {"member2": 4})
    assert parse_time(binding["status"]["lastScheduledTime"]) >= parse_time(trigger)  # the trigger is consumed

    async def settled() -> dict[str, Any] | None:
        current = await rb(env.kube)
        ok = current["status"].get("schedulerObservedGeneration") == current["metadata"]["generation"]
        return current if ok else None

    assert clusters_of(await eventually(settled)) == {"member2": 4}


async def test_duplicated(env: Env) -> None:
    await env.cluster("member1")
    await env.cluster("member2")
    template = await deployment(env.kube)
    await env.start()
    await resource_binding(env.kube, template, DUPLICATED, replicas=2)
    await wait_clusters(env.kube, {"member1": 2, "member2": 2})


async def test_no_cluster_fit_clears_the_result(env: Env) -> None:
    await env.cluster("member1")
    await env.cluster("member2")
    template = await deployment(env.kube)
    await env.start()
    await resource_binding(env.kube, template, {**DUPLICATED, "clusterAffinity": {"clusterNames": ["member1"]}},
                           replicas=1)
    await wait_clusters(env.kube, {"member1": 1})

    placement = {**DUPLICATED, "clusterAffinity": {"clusterNames": ["nowhere"]}}
    await env.kube.patch(RESOURCE_BINDINGS, "nginx-deployment", {"spec": {"placement": placement}},
                         namespace="default")
    message = ("0/2 clusters are available: 2 cluster(s) did not match the placement cluster affinity "
               "constraint.")

    async def cleared() -> dict[str, Any] | None:
        binding = await rb(env.kube)
        condition = scheduled(binding)
        ok = "clusters" not in binding["spec"] and condition is not None and condition["reason"] == "NoClusterFit"
        return binding if ok else None

    binding = await eventually(cleared)
    condition = scheduled(binding)
    assert condition is not None
    assert (condition["status"], condition["message"]) == ("False", message)
    assert json.loads(binding["metadata"]["annotations"][APPLIED_PLACEMENT_ANNOTATION]) == placement
    event = await wait_event(env, binding, "ScheduleBindingFailed", message)
    assert event["type"] == "Warning"
    await wait_event(env, template, "ScheduleBindingFailed", message)


async def test_untolerated_taint_excludes_the_cluster(env: Env) -> None:
    await env.cluster("member1", taints=[{"key": "maintenance", "value": "true", "effect": "NoSchedule"}])
    await env.cluster("member2")
    template = await deployment(env.kube)
    await env.start()
    await resource_binding(env.kube, template, DUPLICATED, replicas=1)
    await wait_clusters(env.kube, {"member2": 1})

    tolerant = {**DUPLICATED, "clusterTolerations": [{"key": "maintenance", "operator": "Exists"}]}
    await env.kube.patch(RESOURCE_BINDINGS, "nginx-deployment", {"spec": {"placement": tolerant}},
                         namespace="default")
    await wait_clusters(env.kube, {"member1": 1, "member2": 1})


async def test_new_taint_does_not_evict_but_a_new_binding_avoids_it(env: Env) -> None:
    await env.cluster("member1")
    await env.cluster("member2")
    template = await deployment(env.kube)
    await env.start()
    await resource_binding(env.kube, template, DUPLICATED, replicas=1)
    await wait_clusters(env.kube, {"member1": 1, "member2": 1})
    member1 = await env.kube.get(CLUSTERS, "member1")
    member1["spec"]["taints"] = [{"key": "gone", "effect": "NoSchedule"}]
    await env.kube.update(CLUSTERS, member1)  # spec change: re-enqueues the binding, which keeps member1
    other = await deployment(env.kube, "other")
    await resource_binding(env.kube, other, DUPLICATED, replicas=1)
    await wait_clusters(env.kube, {"member2": 1}, name="other-deployment")
    assert clusters_of(await rb(env.kube)) == {"member1": 1, "member2": 1}


async def test_graceful_eviction_task_excludes_its_cluster(env: Env) -> None:
    await env.cluster("member1")
    await env.cluster("member2")
    template = await deployment(env.kube)
    await env.start()
    task = {"fromCluster": "member1", "reason": "TaintUntolerated", "producer": "TaintManager",
            "purgeMode": "Gracefully"}
    await resource_binding(env.kube, template, DUPLICATED, replicas=1, gracefulEvictionTasks=[task])
    await wait_clusters(env.kube, {"member2": 1})


async def test_cluster_affinities_move_to_the_next_term_and_restart_on_reschedule(env: Env) -> None:
    await env.cluster("member2")
    template = await deployment(env.kube)
    await env.start()
    terms = [{"affinityName": "primary", "clusterNames": ["member1"]},
             {"affinityName": "backup", "clusterNames": ["member2"]}]
    await resource_binding(env.kube, template, {**DUPLICATED, "clusterAffinities": terms}, replicas=1)
    binding = await wait_clusters(env.kube, {"member2": 1})
    assert binding["status"]["schedulerObservingAffinityName"] == "backup"
    first_term_failed = ("failed to schedule ResourceBinding(default/nginx-deployment) with clusterAffiliates "
                         "index(0): 0/1 clusters are available: 1 cluster(s) did not match the placement cluster "
                         "affinity constraint.")
    await wait_event(env, binding, "ScheduleBindingFailed", first_term_failed)

    await env.cluster("member1")  # a new cluster does not move the binding by itself...
    trigger = await eventually(lambda: (t := now_text()) > binding["status"]["lastScheduledTime"] and t)
    await env.kube.patch(RESOURCE_BINDINGS, "nginx-deployment", {"spec": {"rescheduleTriggeredAt": trigger}},
                         namespace="default")
    binding = await wait_clusters(env.kube, {"member1": 1})  # ...a manual reschedule starts from the first term
    assert binding["status"]["schedulerObservingAffinityName"] == "primary"


async def test_cluster_resource_binding_non_workload(env: Env) -> None:
    await env.cluster("member1")
    await env.cluster("member2")
    role = await env.kube.create(CLUSTER_ROLES, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                                 "metadata": {"name": "reader"}, "rules": []})
    await env.start()
    ref = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "reader",
           "uid": role["metadata"]["uid"]}
    await env.kube.create(CLUSTER_RESOURCE_BINDINGS, {
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding",
        "metadata": {"name": "reader-clusterrole", "labels": {CPP_PERMANENT_ID: "cpp-id"}},
        "spec": {"resource": ref, "placement": DYNAMIC}})
    binding = await wait_clusters(env.kube, {"member1": 0, "member2": 0}, name="reader-clusterrole",
                                  resource=CLUSTER_RESOURCE_BINDINGS)
    assert binding["spec"]["clusters"] == [{"name": "member1"}, {"name": "member2"}]
    message = "Binding has been scheduled successfully. Result {member1:0, member2:0}"
    await wait_event(env, binding, "ScheduleBindingSucceed", message)
    await wait_event(env, role, "ScheduleBindingSucceed", message)


async def test_bindings_without_scheduler_labels_are_ignored(env: Env) -> None:
    await env.cluster("member1")
    ignored = await deployment(env.kube, "ignored")
    template = await deployment(env.kube)
    await env.start()
    await resource_binding(env.kube, ignored, DUPLICATED, replicas=1, labelled=False)
    await resource_binding(env.kube, template, DUPLICATED, replicas=1)  # queued after the ignored one, if it were
    await wait_clusters(env.kube, {"member1": 1})
    unlabelled = await rb(env.kube, "ignored-deployment")
    assert "clusters" not in unlabelled["spec"]
    assert scheduled(unlabelled) is None


async def test_unschedulable_is_reported_and_retried(env: Env) -> None:
    await env.cluster("member1", pods=1)
    template = await deployment(env.kube)
    await env.start()
    await resource_binding(env.kube, template, DYNAMIC, replicas=3)
    message = ("failed to assign replicas: failed to scale up: Clusters available replicas 1 are not enough to "
               "schedule.")

    async def unschedulable() -> bool:
        condition = scheduled(await rb(env.kube))
        return condition is not None and (condition["reason"], condition["message"]) == ("Unschedulable", message)

    await eventually(unschedulable)
    await env.set_free_pods("member1", 5)  # no event re-enqueues the binding: only the retry can succeed
    await wait_clusters(env.kube, {"member1": 3}, timeout=30)  # backoff 1 s doubling to 10 s
