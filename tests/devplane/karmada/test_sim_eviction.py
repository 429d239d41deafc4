"""NoExecute taint eviction and graceful eviction against a real dev API server.

The host serves Karmada's CRDs and Cluster natively (it stamps ``timeAdded`` on NoExecute
taints, as Karmada's aggregated server does). Bindings carry the applied-placement annotation
the scheduler would write; the binding status the scheduler and status controllers would write
(``schedulerObservedGeneration``, ``aggregatedStatus``) is written by the tests themselves.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client

from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import EVENTS
from controller_manager.manager import Manager, ManagerOptions
from devplane.apiserver.server import ApiServer
from devplane.karmada.gracefuleviction import RB_GRACEFUL_EVICTION_NAME, setup_graceful_eviction
from devplane.karmada.taintmanager import setup_taint_manager
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from karmada_api.resources import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, RESOURCE_BINDINGS
from kube_api.resources import DEPLOYMENTS
from kube_api.timeutil import parse_time
from tests.conftest import eventually

TAINT_KEY = "workload-rebalancer-test"
NS = "default"


# ----------------------------------------------------------------------------- helpers


def toleration(seconds: int | None) -> dict[str, Any]:
    result: dict[str, Any] = {"key": TAINT_KEY, "operator": "Exists", "effect": "NoExecute"}
    if seconds is not None:
        result["tolerationSeconds"] = seconds
    return result


async def create_cluster(kube: KubeClient, name: str) -> None:
    await kube.create(CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                 "metadata": {"name": name}, "spec": {"syncMode": "Push"}})


async def taint(kube: KubeClient, cluster: str) -> datetime:
    """Taint ``cluster`` with ``workload-rebalancer-test:NoExecute``; the server's ``timeAdded``."""
    updated = await kube.patch(CLUSTERS, cluster, {"spec": {"taints": [{"key": TAINT_KEY, "effect": "NoExecute"}]}})
    return parse_time(updated["spec"]["taints"][0]["timeAdded"])


async def create_deployment(kube: KubeClient, name: str) -> dict[str, Any]:
    labels = {"app": name}
    pod = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    return await kube.create(DEPLOYMENTS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels}, "template": pod}})


async def create_binding(kube: KubeClient, name: str, tolerations: list[dict[str, Any]], *,
                         template: dict[str, Any] | None = None, cluster_scoped: bool = False) -> dict[str, Any]:
    """A binding scheduled to member1 and member2 (1 replica each), as the scheduler leaves it."""
    placement = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}, "clusterTolerations": tolerations}
    if template is not None:
        ref = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NS, "name": template["metadata"]["name"],
               "uid": template["metadata"]["uid"]}
    else:
        ref = {"apiVersion": "v1", "kind": "Namespace" if cluster_scoped else "ConfigMap", "name": name}
        if not cluster_scoped:
            ref["namespace"] = NS
    meta: dict[str, Any] = {"name": name, "annotations": {APPLIED_PLACEMENT_ANNOTATION: json.dumps(placement)}}
    if not cluster_scoped:
        meta["namespace"] = NS
    body = {"apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ClusterResourceBinding" if cluster_scoped else "ResourceBinding", "metadata": meta,
            "spec": {"resource": ref, "replicas": 2,
                     "clusters": [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 1}]}}
    return await kube.create(CLUSTER_RESOURCE_BINDINGS if cluster_scoped else RESOURCE_BINDINGS, body)


async def get_rb(kube: KubeClient, name: str) -> dict[str, Any]:
    return await kube.get(RESOURCE_BINDINGS, name, NS)


def cluster_names(binding: dict[str, Any]) -> list[str]:
    return [c["name"] for c in binding["spec"].get("clusters") or []]


def tasks_of(binding: dict[str, Any]) -> list[dict[str, Any]]:
    return list(binding["spec"].get("gracefulEvictionTasks") or [])


async def events_about(kube: KubeClient, obj: dict[str, Any], reason: str) -> list[dict[str, Any]]:
    namespace = obj["metadata"].get("namespace") or NS
    listed = await kube.list(EVENTS, namespace, field_selector=f"involvedObject.uid={obj['metadata']['uid']}")
    return [e for e in listed["items"] if e["reason"] == reason]


def idle(controller: Controller) -> bool:
    """Nothing queued, waiting for a delay, or being reconciled."""
    queue = controller.queue
    return len(queue) == 0 and queue.waiting() == 0 and queue.processing() == 0


# ----------------------------------------------------------------------------- fixtures


@dataclass
class Env:
    kube: KubeClient
    manager: Manager
    taint_controllers: list[Controller]
    graceful_controllers: list[Controller] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.manager.run())
        await self.manager.informers.wait_for_sync(timeout=10)

    @property
    def rb_eviction(self) -> Controller:
        return self.taint_controllers[1]


@pytest.fixture
async def kube(server: ApiServer) -> AsyncIterator[KubeClient]:
    kube = KubeClient(client.ApiClient(client.Configuration(host=server.url)), qps=0)
    for name in ("member1", "member2"):
        await create_cluster(kube, name)
    yield kube
    await kube.close()


async def _env(kube: KubeClient, *, graceful: bool, rate: float) -> AsyncIterator[Env]:
    manager = Manager(kube, ManagerOptions(name="test-eviction", metrics_bind_address="0",
                                           health_probe_bind_address="0"))
    env = Env(kube, manager, setup_taint_manager(manager, resource_eviction_rate=rate))
    if graceful:
        env.graceful_controllers = setup_graceful_eviction(manager)
    yield env
    if env.task is not None:
        manager.request_shutdown()
        await asyncio.wait_for(env.task, 10)


@pytest.fixture
async def taint_only(kube: KubeClient) -> AsyncIterator[Env]:
    """The taint manager alone, at Karmada's default eviction rate (a 2 s pause after each item)."""
    async for env in _env(kube, graceful=False, rate=0.5):
        yield env


@pytest.fixture
async def both(kube: KubeClient) -> AsyncIterator[Env]:
    """Taint manager and graceful eviction, with a fast eviction rate so tests don't wait on pacing."""
    async for env in _env(kube, graceful=True, rate=50):
        yield env


# ----------------------------------------------------------------------------- tests


async def test_untolerated_taint_moves_the_cluster_into_an_eviction_task(taint_only: Env) -> None:
    kube = taint_only.kube
    rb = await create_binding(kube, "zero-seconds", [toleration(0)])
    await create_binding(kube, "no-tolerations", [], cluster_scoped=True)
    await taint_only.start()
    await taint(kube, "member1")

    async def evicted() -> dict[str, Any] | None:
        current = await get_rb(kube, "zero-seconds")
        return current if cluster_names(current) == ["member2"] else None

    current = await eventually(evicted)
    assert tasks_of(current) == [{"fromCluster": "member1", "purgeMode": "Gracefully", "replicas": 1,
                                  "reason": "TaintUntolerated", "producer": "TaintManager"}]
    assert current["metadata"]["generation"] > rb["metadata"]["generation"]  # the scheduler will look again

    async def crb_evicted() -> dict[str, Any] | None:
        crb = await kube.get(CLUSTER_RESOURCE_BINDINGS, "no-tolerations")
        return crb if cluster_names(crb) == ["member2"] else None

    crb = await eventually(crb_evicted)
    assert [t["fromCluster"] for t in tasks_of(crb)] == ["member1"]
    assert all("creationTimestamp" not in t for t in tasks_of(crb))  # stamped by the graceful eviction controller


async def test_graceful_eviction_stamps_the_task_then_removes_it_once_healthy_elsewhere(both: Env) -> None:
    kube = both.kube
    deployment = await create_deployment(kube, "nginx")
    await create_binding(kube, "nginx-deployment", [toleration(0)], template=deployment)
    await both.start()
    await taint(kube, "member1")

    async def stamped() -> dict[str, Any] | None:
        current = await get_rb(kube, "nginx-deployment")
        tasks = tasks_of(current)
        return current if cluster_names(current) == ["member2"] and tasks and "creationTimestamp" in tasks[0] else None

    current = await eventually(stamped)
    [task] = tasks_of(current)
    assert parse_time(task["creationTimestamp"]) <= datetime.now(UTC)
    assert {k: v for k, v in task.items() if k != "creationTimestamp"} == {
        "fromCluster": "member1", "purgeMode": "Gracefully", "replicas": 1, "reason": "TaintUntolerated",
        "producer": "TaintManager"}

    # Healthy on member2, but the scheduler has not observed this generation: the task stays.
    healthy = [{"clusterName": "member2", "applied": True, "health": "Healthy"}]
    written = await kube.patch_status(RESOURCE_BINDINGS, "nginx-deployment", {"status": {
        "schedulerObservedGeneration": current["metadata"]["generation"] - 1, "aggregatedStatus": healthy}},
        namespace=NS)
    rbs = both.manager.informer(RESOURCE_BINDINGS).store
    graceful = both.graceful_controllers[0]
    assert graceful.name == RB_GRACEFUL_EVICTION_NAME

    def reconciled() -> bool:
        cached = rbs.get(f"{NS}/nginx-deployment")
        return bool(cached and cached["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
                    and len(graceful.queue) == 0 and graceful.queue.processing() == 0)

    await eventually(reconciled)
    assert len(tasks_of(await get_rb(kube, "nginx-deployment"))) == 1

    # Scheduled and healthy everywhere it is scheduled: the task is done.
    await kube.patch_status(RESOURCE_BINDINGS, "nginx-deployment", {"status": {
        "schedulerObservedGeneration": current["metadata"]["generation"]}}, namespace=NS)

    async def done() -> dict[str, Any] | None:
        latest = await get_rb(kube, "nginx-deployment")
        return latest if not tasks_of(latest) else None

    latest = await eventually(done)
    assert "gracefulEvictionTasks" not in latest["spec"]
    assert cluster_names(latest) == ["member2"]
    [on_binding] = await eventually(lambda: events_about(kube, latest, "EvictWorkloadFromClusterSucceed"))
    assert on_binding["type"] == "Normal"
    assert on_binding["message"] == "Evict from cluster member1 succeed."
    assert on_binding["source"]["component"] == RB_GRACEFUL_EVICTION_NAME
    [on_template] = await eventually(lambda: events_about(kube, deployment, "EvictWorkloadFromClusterSucceed"))
    assert on_template["message"] == "Evict from cluster member1 succeed."
    assert on_template["involvedObject"]["kind"] == "Deployment"


async def test_toleration_without_seconds_never_evicts(both: Env) -> None:
    kube = both.kube
    forever = await create_binding(kube, "forever", [toleration(None)])
    await create_binding(kube, "sentinel", [toleration(0)])  # decided in the same pass as "forever"
    await both.start()
    await taint(kube, "member1")

    async def sentinel_evicted() -> bool:
        return cluster_names(await get_rb(kube, "sentinel")) == ["member2"]

    await eventually(sentinel_evicted)
    await eventually(lambda: idle(both.rb_eviction))  # nothing queued or waiting for "forever"
    current = await get_rb(kube, "forever")
    assert current["spec"] == forever["spec"]
    assert current["metadata"]["resourceVersion"] == forever["metadata"]["resourceVersion"]


@pytest.mark.slow
async def test_short_toleration_evicts_once_it_runs_out(both: Env) -> None:
    kube = both.kube
    await create_binding(kube, "two-seconds", [toleration(2)])
    await both.start()
    added = await taint(kube, "member1")
    trigger = added + timedelta(seconds=2)

    await eventually(lambda: both.rb_eviction.queue.waiting() == 1)  # queued for later, not now
    if datetime.now(UTC) < trigger:
        assert cluster_names(await get_rb(kube, "two-seconds")) == ["member1", "member2"]

    async def evicted() -> bool:
        return cluster_names(await get_rb(kube, "two-seconds")) == ["member2"]

    await eventually(evicted, timeout=15)
    assert datetime.now(UTC) >= trigger
    [task] = tasks_of(await get_rb(kube, "two-seconds"))
    assert (task["fromCluster"], task["reason"]) == ("member1", "TaintUntolerated")
