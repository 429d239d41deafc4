"""Our descheduler in place of Karmada's: a replica stuck unschedulable on member1 is taken from it, and
Karmada's scheduler places the deficit again.

The members have no kubelet, scheduler or ReplicaSet controller: the test plays them. It pauses the
readiness faker (which would report every replica Ready, and Karmada's floor rightly never takes a Ready
replica away), creates the member Deployment's ReplicaSet with one Pending Pod that the scheduler marked
``Unschedulable`` ten minutes ago, and writes the member Deployment's status as its controller would
(one replica fewer ready).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.refplane import RefPlane
from controller_manager.client import ApiError, KubeClient
from controller_manager.events import EVENTS
from karmada_api.resources import RESOURCE_BINDINGS
from kube_api.resources import DEPLOYMENTS, PODS, REPLICA_SETS
from tests.conftest import eventually
from tests.realplane.conftest import Ours
from tests.realplane.support import (
    SCHEDULED,
    assigned,
    fresh_namespace,
    propagate,
    wait_assigned,
)

POD_TEMPLATE_HASH = "7f9d8c6b5d"


@contextlib.asynccontextmanager
async def faker_paused(plane: RefPlane) -> AsyncIterator[None]:
    plane.send_signal("readiness-faker", signal.SIGSTOP)
    try:
        yield
    finally:
        plane.send_signal("readiness-faker", signal.SIGCONT)


async def make_one_replica_unschedulable(member: KubeClient, ns: str, name: str) -> None:
    """What a member's controllers and scheduler would show for a Deployment with one Pod that cannot fit."""
    deployment = await member.get(DEPLOYMENTS, name, ns)
    template = deployment["spec"]["template"]
    labels = {**template["metadata"]["labels"], "pod-template-hash": POD_TEMPLATE_HASH}
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": deployment["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    replica_set = await member.create(REPLICA_SETS, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": f"{name}-{POD_TEMPLATE_HASH}", "namespace": ns, "labels": labels,
                     "ownerReferences": [owner]},
        "spec": {"replicas": deployment["spec"]["replicas"],
                 "selector": {"matchLabels": {**deployment["spec"]["selector"]["matchLabels"],
                                              "pod-template-hash": POD_TEMPLATE_HASH}},
                 "template": {**template, "metadata": {**template["metadata"], "labels": labels}}}})
    rs_owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replica_set["metadata"]["name"],
                "uid": replica_set["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    pod = await member.create(PODS, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{name}-{POD_TEMPLATE_HASH}-stuck", "namespace": ns, "labels": labels,
                     "ownerReferences": [rs_owner]},
        "spec": template["spec"]})
    long_ago = (datetime.now(UTC) - timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pod["status"] = {"phase": "Pending", "conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": long_ago,
        "message": "0/2 nodes are available: 2 Insufficient cpu."}]}
    await member.update_status(PODS, pod)
    deployment = await member.get(DEPLOYMENTS, name, ns)
    generation = deployment["metadata"]["generation"]
    replicas = deployment["spec"]["replicas"]
    deployment["status"] = {**(deployment.get("status") or {}), "observedGeneration": generation,
                            "replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas - 1,
                            "availableReplicas": replicas - 1, "unavailableReplicas": 1}
    await member.update_status(DEPLOYMENTS, deployment)


async def test_replica_unschedulable_on_a_member_is_moved(ours: Ours, karmada: KubeClient,
                                                          member1: KubeClient) -> None:
    ns = await fresh_namespace(karmada, "rp-deschedule")
    # Karmada's descheduler (and so ours) handles only bindings divided by a dynamic weight
    await propagate(karmada, ns, ["stuck"], 4)
    binding = await wait_assigned(karmada, ns, "stuck", lambda a: a.get("member1", 0) >= 2 and sum(a.values()) == 4)
    on_member1 = assigned(binding)["member1"]

    async def member_deployment_ready() -> bool:
        with contextlib.suppress(ApiError):
            status = (await member1.get(DEPLOYMENTS, "stuck", ns)).get("status") or {}
            return bool(status.get("readyReplicas") == on_member1)
        return False

    await eventually(member_deployment_ready, timeout=SCHEDULED)
    seen: list[dict[str, int]] = []
    watcher = asyncio.create_task(_record_assignments(karmada, ns, binding, seen))
    try:
        async with faker_paused(ours.plane):
            await make_one_replica_unschedulable(member1, ns, "stuck")

            async def descheduled() -> list[dict[str, Any]]:
                about = f"involvedObject.uid={binding['metadata']['uid']}"
                events = await karmada.list(EVENTS, ns, field_selector=about)
                return [e for e in events.get("items") or [] if e["reason"] == "DescheduleBindingSucceed"]

            events = await eventually(descheduled, timeout=SCHEDULED, interval=0.5)
        assert "1 replica(s) in cluster(member1)" in events[0]["message"], events[0]["message"]
        # Karmada's scheduler places the deficit again (its scale-up path), by the policy's weights
        await wait_assigned(karmada, ns, "stuck", lambda a: sum(a.values()) == 4)
        await eventually(lambda: any(a.get("member1") == on_member1 - 1 and sum(a.values()) < 4 for a in seen),
                         timeout=10)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def _record_assignments(karmada: KubeClient, ns: str, binding: dict[str, Any],
                              seen: list[dict[str, int]]) -> None:
    """Every assignment the binding goes through (a watch sees each version, however briefly it lasted); watched
    again from the last version when the server ends a watch, and not at all after an error (an expired version
    cannot be watched from again: the test then fails on what was seen)."""
    version = binding["metadata"]["resourceVersion"]
    name = binding["metadata"]["name"]
    with contextlib.suppress(ApiError):
        while True:
            async for event in karmada.watch(RESOURCE_BINDINGS, ns, resource_version=version,
                                             field_selector=f"metadata.name={name}"):
                obj = event.get("object") or {}
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if event.get("type") in ("ADDED", "MODIFIED"):
                    seen.append(assigned(obj))
