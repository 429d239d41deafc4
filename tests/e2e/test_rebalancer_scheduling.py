"""Karmada's WorkloadRebalancer e2e suite (``workloadrebalancer_test.go`` under ``test/e2e/``) on the dev
plane with the real controller-manager.

Two member clusters; a ClusterPropagationPolicy selecting a Deployment, a second Deployment
added later and a ClusterRole; a rebalancer naming the Deployment, the ClusterRole and a
Deployment that does not exist. The simulated scheduler does the rescheduling the rebalancer
triggers, so these tests see what users see: the bindings placed on both clusters again, the
trigger consumed (``lastScheduledTime >= rescheduleTriggeredAt``), the exact status lists, and
the TTL clean-up.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.resource import Resource
from devplane.ctl import taint_cluster
from devplane.plane import DevPlane
from karmada_api.resources import (
    CLUSTER_PROPAGATION_POLICIES,
    CLUSTER_RESOURCE_BINDINGS,
    RESOURCE_BINDINGS,
    WORKLOAD_REBALANCERS,
)
from kube_api.resources import DEPLOYMENTS, NAMESPACES
from kube_api.timeutil import parse_time
from tests.conftest import eventually

CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
TIMEOUT = 60.0
CLUSTERS = ["member1", "member2"]


def deployment(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{
                         "name": "nginx", "image": "nginx",
                         "resources": {"requests": {"cpu": "10m"}, "limits": {"cpu": "100m"}}}]}}}}


def ref(kind: str, name: str, namespace: str = "") -> dict[str, str]:
    api_version = "apps/v1" if kind == "Deployment" else "rbac.authorization.k8s.io/v1"
    return {"apiVersion": api_version, "kind": kind, "name": name, **({"namespace": namespace} if namespace else {})}


def placement(context: str, taint_key: str) -> dict[str, Any]:
    toleration = [{"key": taint_key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}]
    affinity = {"clusterNames": CLUSTERS}
    if context == "dynamic":
        return {"clusterAffinity": affinity, "clusterTolerations": toleration, "replicaScheduling": {
            "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
            "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
    if context == "static":
        return {"clusterAffinity": affinity, "clusterTolerations": toleration, "replicaScheduling": {
            "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": [
                {"targetCluster": {"clusterNames": ["member1"]}, "weight": 2},
                {"targetCluster": {"clusterNames": ["member2"]}, "weight": 1}]}}}
    return {"clusterAffinity": affinity, "replicaScheduling": {
        "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}


class Suite:
    def __init__(self, host: KubeClient, context: str) -> None:
        self.host = host
        self.context = context
        suffix = uuid.uuid4().hex[:6]
        self.namespace = f"karmadatest-{suffix}"
        self.deploy, self.added, self.role = f"deploy-{suffix}", f"new-deploy-{suffix}", f"clusterrole-{suffix}"
        self.taint_key = f"workload-rebalancer-test-{suffix}"

    async def setup(self) -> None:
        await self.host.create(NAMESPACES, {"metadata": {"name": self.namespace}})
        for name in (self.deploy, self.added):
            await self.host.create(DEPLOYMENTS, deployment(name, self.namespace), self.namespace)
        await self.host.create(CLUSTER_ROLES, {"metadata": {"name": self.role}, "rules": [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["get"]}]})
        await self.host.create(CLUSTER_PROPAGATION_POLICIES, {
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
            "metadata": {"name": f"cpp-{self.deploy}"},
            "spec": {"resourceSelectors": [ref("Deployment", self.deploy, self.namespace),
                                           ref("Deployment", self.added, self.namespace),
                                           ref("ClusterRole", self.role)],
                     "placement": placement(self.context, self.taint_key)}})

    async def rb(self, name: str) -> dict[str, Any]:
        return await self.host.get(RESOURCE_BINDINGS, f"{name}-deployment", self.namespace)

    async def crb(self) -> dict[str, Any]:
        return await self.host.get(CLUSTER_RESOURCE_BINDINGS, f"{self.role}-clusterrole")

    async def scheduled_to(self, binding: dict[str, Any]) -> list[str]:
        return sorted(c["name"] for c in (binding.get("spec") or {}).get("clusters") or [])

    async def wait_scheduled(self, want: list[str] | None, *, name: str = "") -> dict[str, Any]:
        async def check() -> dict[str, Any] | None:
            try:
                binding = await self.rb(name or self.deploy)
            except ApiError as exc:
                if exc.is_not_found:  # the detector has not made it yet
                    return None
                raise
            clusters = await self.scheduled_to(binding)
            if want is None:  # aggregated: exactly one of the two
                return binding if len(clusters) == 1 else None
            return binding if clusters == want else None

        result: dict[str, Any] = await eventually(check, timeout=TIMEOUT)
        return result

    async def rebalance(self, workloads: list[dict[str, str]], **spec: Any) -> dict[str, Any]:
        return await self.host.create(WORKLOAD_REBALANCERS, {
            "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": f"rebalancer-{self.deploy}"}, "spec": {"workloads": workloads, **spec}})

    async def observed(self, name: str) -> list[tuple[str, str, str]] | None:
        status = (await self.host.get(WORKLOAD_REBALANCERS, name)).get("status") or {}
        if not status.get("finishTime"):
            return None
        return [(w["workload"]["name"], w.get("result", ""), w.get("reason", ""))
                for w in status.get("observedWorkloads") or []]

    async def gone(self, name: str) -> bool:
        try:
            await self.host.get(WORKLOAD_REBALANCERS, name)
        except ApiError as exc:
            return exc.is_not_found
        return False


def assert_triggered_and_consumed(binding: dict[str, Any], rebalancer: dict[str, Any],
                                  scheduled_before: str) -> None:
    """The trigger is the rebalancer's creation time (or the next second after the last schedule, our
    documented deviation) and the scheduler has consumed it."""
    triggered = parse_time(binding["spec"]["rescheduleTriggeredAt"])
    assert triggered >= parse_time(rebalancer["metadata"]["creationTimestamp"])
    assert triggered > parse_time(scheduled_before)
    assert parse_time(binding["status"]["lastScheduledTime"]) >= triggered


@pytest.mark.parametrize("context", ["dynamic", "static", "aggregated"])
async def test_rebalancer_reschedules_bindings(plane: DevPlane, controller_manager: asyncio.subprocess.Process,
                                               context: str) -> None:
    assert plane.client is not None
    suite = Suite(plane.client, context)
    await suite.setup()
    both = None if context == "aggregated" else CLUSTERS

    # 1) scheduled to both clusters (aggregated: to one); the ClusterRole (Duplicated) to both
    await suite.wait_scheduled(both)
    await eventually(lambda: _crb_on(suite, CLUSTERS), timeout=TIMEOUT)

    if context != "aggregated":
        # 2) taint member1 → only member2; wait for the graceful eviction to finish; remove the taint
        await taint_cluster(plane.client, "member1", [f"{suite.taint_key}:NoExecute"])
        await suite.wait_scheduled(["member2"])
        await eventually(lambda: _no_eviction_tasks(suite), timeout=TIMEOUT)
        await taint_cluster(plane.client, "member1", [f"{suite.taint_key}:NoExecute-"])

    before_rb = (await suite.rb(suite.deploy))["status"]["lastScheduledTime"]
    before_crb = (await suite.crb())["status"]["lastScheduledTime"]

    # 3) the rebalancer: back on both clusters, exact status, triggers consumed
    rebalancer = await suite.rebalance([ref("Deployment", suite.deploy, suite.namespace),
                                        ref("ClusterRole", suite.role),
                                        ref("Deployment", f"not-exist-{suite.deploy}", suite.namespace)])
    name = rebalancer["metadata"]["name"]
    expected = sorted([(suite.deploy, "Successful", ""), (f"not-exist-{suite.deploy}", "Failed",
                                                          "ReferencedBindingNotFound"), (suite.role, "Successful", "")])
    assert sorted(await eventually(lambda: suite.observed(name), timeout=TIMEOUT)) == expected

    async def consumed() -> bool:
        rb, crb = await suite.rb(suite.deploy), await suite.crb()
        try:
            assert_triggered_and_consumed(rb, rebalancer, before_rb)
            assert_triggered_and_consumed(crb, rebalancer, before_crb)
        except KeyError:
            return False
        return True

    await eventually(consumed, timeout=TIMEOUT)
    await suite.wait_scheduled(both)

    # 4) new workloads: the finished items stay, the new one is processed
    current = await plane.client.get(WORKLOAD_REBALANCERS, name)
    current["spec"]["workloads"] = [ref("ClusterRole", suite.role), ref("Deployment", suite.added, suite.namespace)]
    await plane.client.update(WORKLOAD_REBALANCERS, current)

    async def updated() -> list[tuple[str, str, str]] | None:
        rows = await suite.observed(name)
        return rows if rows is not None and len(rows) == 3 and all(r[1] == "Successful" for r in rows) else None

    rows = await eventually(updated, timeout=TIMEOUT)
    assert sorted(r[0] for r in rows) == sorted([suite.deploy, suite.added, suite.role])

    # 5) a TTL makes it disappear
    current = await plane.client.get(WORKLOAD_REBALANCERS, name)
    current["spec"]["ttlSecondsAfterFinished"] = 1
    await plane.client.update(WORKLOAD_REBALANCERS, current)
    await eventually(lambda: suite.gone(name), timeout=TIMEOUT)


async def test_ttl_given_at_creation(plane: DevPlane, controller_manager: asyncio.subprocess.Process) -> None:
    assert plane.client is not None
    suite = Suite(plane.client, "dynamic")
    await suite.setup()
    await suite.wait_scheduled(CLUSTERS)
    rebalancer = await suite.rebalance([ref("Deployment", suite.deploy, suite.namespace)], ttlSecondsAfterFinished=1)
    await eventually(lambda: suite.gone(rebalancer["metadata"]["name"]), timeout=TIMEOUT)


async def _crb_on(suite: Suite, clusters: list[str]) -> bool:
    try:
        return await suite.scheduled_to(await suite.crb()) == clusters
    except ApiError as exc:
        if exc.is_not_found:
            return False
        raise


async def _no_eviction_tasks(suite: Suite) -> bool:
    rb = await suite.rb(suite.deploy)
    return not (rb.get("spec") or {}).get("gracefulEvictionTasks")
