"""The cluster and cluster-status controllers against a host and a member dev API server.

The host serves Clusters and their token Secrets; the member is a plain Kubernetes dev server on
which the test creates Nodes and Pods by hand. A Manager runs both controllers and the
MemberRegistry (member-cluster access, ``clusteraccess``). Every wait is a deadline
(``eventually``); every server and task started here is stopped.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s
from prometheus_client import REGISTRY

from clusteraccess.registry import MemberRegistry
from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.manager import Manager, ManagerOptions
from devplane.apiserver.discovery import SERVER_VERSION
from devplane.apiserver.server import ApiServer
from devplane.karmada.cluster import CLUSTER_CONTROLLER_FINALIZER, setup_cluster_controller
from devplane.karmada.clusterstatus import setup_cluster_status
from estimator.general import GeneralEstimator
from karmada_api.resources import CLUSTERS, WORKS
from kube_api.conditions import find_condition
from kube_api.resources import NAMESPACES, NODES, PODS, SECRETS
from tests.conftest import eventually

SECRET_NAMESPACE = "karmada-cluster"
PERIOD = 0.3
FAILURE_THRESHOLD = 1.5
REQUEST = {"resourceRequest": {"cpu": "10m", "memory": "10Mi"}}
NOT_READY = {"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}


def plain_client(url: str) -> KubeClient:
    return KubeClient(k8s.ApiClient(k8s.Configuration(host=url)), qps=0)


async def register(host: KubeClient, name: str, endpoint: str, *, with_secret: bool = True) -> None:
    """A token Secret in karmada-cluster and a Push Cluster pointing at ``endpoint``."""
    if with_secret:
        await host.create(SECRETS, {"metadata": {"name": name, "namespace": SECRET_NAMESPACE},
                                    "data": {"token": base64.b64encode(b"t0ken").decode()}})
    await host.create(CLUSTERS, {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
        "spec": {"syncMode": "Push", "apiEndpoint": endpoint,
                 "secretRef": {"namespace": SECRET_NAMESPACE, "name": name}}})


async def add_node(member: KubeClient, name: str, cpu: str, memory: str) -> None:
    await member.create(NODES, {"metadata": {"name": name}})
    capacity = {"cpu": cpu, "memory": memory, "pods": "110"}
    await member.patch_status(NODES, name, {"status": {"capacity": capacity, "allocatable": capacity,
                                                       "conditions": [{"type": "Ready", "status": "True"}]}})


async def add_pod(member: KubeClient, name: str, cpu: str, memory: str, *, node: str = "",
                  phase: str = "Running") -> None:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "nginx",
                                            "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    if node:
        spec["nodeName"] = node
    await member.create(PODS, {"metadata": {"name": name, "namespace": "default"}, "spec": spec})
    await member.patch_status(PODS, name, {"status": {"phase": phase if node else "Pending"}}, namespace="default")


def sample(metric: str, cluster: str) -> float | None:
    return REGISTRY.get_sample_value(metric, {"member_cluster": cluster})


@dataclass
class Plane:
    host: ApiServer
    member: ApiServer
    host_client: KubeClient
    member_client: KubeClient

    async def cluster(self, name: str = "member1") -> dict[str, Any]:
        return await self.host_client.get(CLUSTERS, name)

    async def condition(self, ctype: str, name: str = "member1") -> dict[str, Any] | None:
        return find_condition(((await self.cluster(name)).get("status") or {}).get("conditions"), ctype)


@pytest.fixture
async def plane() -> AsyncIterator[Plane]:
    async with ApiServer(extra_namespaces=(SECRET_NAMESPACE,)) as host:
        member = ApiServer(karmada=False)
        await member.start()
        host_client, member_client = plain_client(host.url), plain_client(member.url)
        manager = Manager(host_client, ManagerOptions(name="test-cluster-status", metrics_bind_address="0"))
        registry = MemberRegistry(host_client, manager.informer(CLUSTERS), sync_timeout=5.0, client_timeout=1.0)
        manager.add_runnable("member-registry", registry.run, needs_leader=False)
        setup_cluster_controller(manager)
        setup_cluster_status(manager, registry, period=PERIOD, failure_threshold=FAILURE_THRESHOLD)
        task = asyncio.create_task(manager.run())
        try:
            yield Plane(host, member, host_client, member_client)
        finally:
            manager.request_shutdown()
            await asyncio.wait_for(task, 15)
            await member_client.close()
            await host_client.close()
            await member.stop()


async def seed_member(member: KubeClient) -> None:
    """node-a 4 cpu / 8Gi with a running pod of 1 cpu / 1Gi; node-b 2 cpu / 4Gi with a finished pod;
    one pending pod of 500m / 512Mi."""
    await add_node(member, "node-a", "4", "8Gi")
    await add_node(member, "node-b", "2", "4Gi")
    await add_pod(member, "running", "1", "1Gi", node="node-a")
    await add_pod(member, "done", "1", "1Gi", node="node-b", phase="Succeeded")
    await add_pod(member, "pending", "500m", "512Mi")


async def wait_ready(plane: Plane, name: str = "member1") -> dict[str, Any]:
    async def ready() -> dict[str, Any] | None:
        cluster = await plane.cluster(name)
        condition = find_condition((cluster.get("status") or {}).get("conditions"), "Ready")
        summary = (cluster.get("status") or {}).get("resourceSummary") or {}
        if condition and condition["status"] == "True" and summary.get("allocatableModelings"):
            return cluster
        return None

    result: dict[str, Any] = await eventually(ready, timeout=15)
    return result


@pytest.mark.slow
async def test_status_describes_the_member(plane: Plane) -> None:
    await seed_member(plane.member_client)
    await register(plane.host_client, "member1", plane.member.url)
    cluster = await wait_ready(plane)
    status = cluster["status"]
    ready = find_condition(status["conditions"], "Ready")
    assert ready is not None
    assert (ready["reason"], ready["message"]) == ("ClusterReady", "cluster is healthy and ready to accept workloads")
    complete = find_condition(status["conditions"], "CompleteAPIEnablements")
    assert complete is not None and (complete["status"], complete["reason"]) == ("True", "Complete")
    assert status["kubernetesVersion"] == SERVER_VERSION["gitVersion"]
    apps = next(e for e in status["apiEnablements"] if e["groupVersion"] == "apps/v1")
    assert {"name": "deployments", "kind": "Deployment"} in apps["resources"]
    assert all("/" not in r["name"] for e in status["apiEnablements"] for r in e.get("resources") or [])
    assert [e["groupVersion"] for e in status["apiEnablements"]] == sorted(
        e["groupVersion"] for e in status["apiEnablements"])
    assert status["nodeSummary"] == {"totalNum": 2, "readyNum": 2}
    assert status["resourceSummary"] == {
        "allocatable": {"cpu": "6", "memory": "12Gi", "pods": "220"},
        "allocating": {"cpu": "500m", "memory": "512Mi", "pods": "1"},
        "allocated": {"cpu": "1", "memory": "1Gi", "pods": "1"},
        # both nodes have >= 1 cpu and >= 4Gi (but < 16Gi) left: grade 1
        "allocatableModelings": [{"grade": g, "count": 2 if g == 1 else 0} for g in range(9)]}
    # two grade-1 model nodes (1 cpu, 4Gi, 110 pods) take 100 replicas of 10m each
    assert GeneralEstimator().max_available_replicas(cluster, REQUEST) == 200

    # the cluster controller's part: execution space, finalizer, no scheduling taint once Ready
    namespace = await plane.host_client.get(NAMESPACES, "karmada-es-member1")
    assert namespace["metadata"]["labels"]["karmada.io/system"] == "true"
    assert CLUSTER_CONTROLLER_FINALIZER in cluster["metadata"]["finalizers"]

    async def untainted() -> bool:
        return not (await plane.cluster())["spec"].get("taints")

    await eventually(untainted)

    # the status follows the member: a new bound pod is counted at the next sync
    await add_pod(plane.member_client, "second", "3", "1Gi", node="node-a")

    async def recounted() -> bool:
        summary = (await plane.cluster())["status"]["resourceSummary"]
        return bool(summary["allocated"] == {"cpu": "4", "memory": "2Gi", "pods": "2"})

    await eventually(recounted, timeout=10)
    cluster = await plane.cluster()
    # node-a has no cpu left (grade 0, whose model node holds nothing): only node-b's 100 remain
    assert [m["count"] for m in cluster["status"]["resourceSummary"]["allocatableModelings"][:2]] == [1, 1]
    assert GeneralEstimator().max_available_replicas(cluster, REQUEST) == 100
    assert sample("cluster_ready_state", "member1") == 1.0
    assert sample("cluster_cpu_allocatable_number", "member1") == 6.0

    # a sync that finds nothing new writes nothing: three more syncs leave the Cluster as it was
    syncs = sample("cluster_sync_status_duration_seconds_count", "member1") or 0.0
    assert syncs > 0
    version = cluster["metadata"]["resourceVersion"]
    await eventually(lambda: (sample("cluster_sync_status_duration_seconds_count", "member1") or 0) >= syncs + 3,
                     timeout=10)
    assert (await plane.cluster())["metadata"]["resourceVersion"] == version


@pytest.mark.slow
async def test_unreachable_member_turns_not_ready_after_the_threshold(plane: Plane) -> None:
    await seed_member(plane.member_client)
    await register(plane.host_client, "member1", plane.member.url)
    await wait_ready(plane)
    # Stop the member just after a sync has ended: a sync whose probe passed before the stop reads
    # /version after it, and Karmada then clears kubernetesVersion; that is not what this test is about.
    syncs = sample("cluster_sync_status_duration_seconds_count", "member1") or 0.0
    await eventually(lambda: (sample("cluster_sync_status_duration_seconds_count", "member1") or 0) > syncs,
                     timeout=10, interval=0.002)
    await plane.member.stop()
    stopped = time.monotonic()

    async def not_ready() -> dict[str, Any] | None:
        condition = await plane.condition("Ready")
        return condition if condition and condition["status"] == "False" else None

    condition = await eventually(not_ready, timeout=15)
    assert time.monotonic() - stopped >= FAILURE_THRESHOLD  # held while the failure was shorter
    assert (condition["reason"], condition["message"]) == ("ClusterNotReachable", "cluster is not reachable")

    async def tainted() -> list[dict[str, Any]] | None:
        taints = (await plane.cluster())["spec"].get("taints") or []
        return taints if any(t["key"] == NOT_READY["key"] for t in taints) else None

    taints = await eventually(tainted, timeout=10)
    assert [{"key": t["key"], "effect": t["effect"]} for t in taints] == [NOT_READY]
    assert all(t.get("timeAdded") for t in taints)
    status = (await plane.cluster())["status"]
    assert status["kubernetesVersion"] == SERVER_VERSION["gitVersion"]  # an unreachable member keeps its last summaries
    assert sample("cluster_ready_state", "member1") == 0.0


async def test_cluster_without_its_secret_is_not_ready(plane: Plane) -> None:
    await register(plane.host_client, "lost", plane.member.url, with_secret=False)

    async def failed() -> dict[str, Any] | None:
        condition = await plane.condition("Ready", "lost")
        return condition if condition and condition["reason"] == "StatusCollectionFailed" else None

    condition = await eventually(failed, timeout=10)
    assert condition["status"] == "False"
    assert condition["message"].startswith("failed to create a ClusterClient: ")
    assert "not found" in condition["message"]


async def test_deleting_a_cluster_removes_its_execution_space(plane: Plane) -> None:
    await register(plane.host_client, "member1", plane.member.url)

    async def space() -> bool:
        cluster = await plane.cluster()
        if CLUSTER_CONTROLLER_FINALIZER not in (cluster["metadata"].get("finalizers") or []):
            return False
        await plane.host_client.get(NAMESPACES, "karmada-es-member1")
        return True

    await eventually(space)
    await plane.host_client.create(WORKS, {
        "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
        "metadata": {"name": "web-58bcf5bd9c", "namespace": "karmada-es-member1"},
        "spec": {"workload": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": "web", "namespace": "default"}}]}}})
    await plane.host_client.delete(CLUSTERS, "member1")

    async def gone() -> bool:
        for resource, name, namespace in ((CLUSTERS, "member1", ""), (NAMESPACES, "karmada-es-member1", ""),
                                          (WORKS, "web-58bcf5bd9c", "karmada-es-member1")):
            try:
                await plane.host_client.get(resource, name, namespace)
            except ApiError as exc:
                if not exc.is_not_found:
                    raise
            else:
                return False
        return True

    await eventually(gone, timeout=15)
    await eventually(lambda: sample("cluster_ready_state", "member1") is None)
