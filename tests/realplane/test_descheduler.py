"""Our descheduler in place of Karmada's: a replica stuck unschedulable on member1 is taken from it, and
Karmada's scheduler places the deficit again.

The members have no kubelet, scheduler or ReplicaSet controller: the test plays them. It pauses the
readiness faker (which would report every replica Ready, and Karmada's floor rightly never takes a Ready
replica away), creates the member Deployment's ReplicaSet with one Pending Pod that the scheduler marked
``Unschedulable`` ten minutes ago, and writes the member Deployment's status as its controller would
(one replica fewer ready).
"""

from __future__ import annotations

import contextlib

from controller_manager.client import ApiError, KubeClient
from kube_api.resources import DEPLOYMENTS, REPLICA_SETS
from tests.conftest import eventually
from tests.realplane.conftest import Ours
from tests.realplane.support import (
    SCHEDULED,
    assigned,
    assignments_seen,
    controller_ref,
    descheduled,
    faker_paused,
    fresh_namespace,
    lowered_then_refilled,
    make_unschedulable,
    propagate,
    wait_assigned,
)

POD_TEMPLATE_HASH = "7f9d8c6b5d"


async def make_one_replica_unschedulable(member: KubeClient, ns: str, name: str) -> None:
    """What a member's controllers and scheduler would show for a Deployment with one Pod that cannot fit."""
    deployment = await member.get(DEPLOYMENTS, name, ns)
    template = deployment["spec"]["template"]
    labels = {**template["metadata"]["labels"], "pod-template-hash": POD_TEMPLATE_HASH}
    replica_set = await member.create(REPLICA_SETS, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": f"{name}-{POD_TEMPLATE_HASH}", "namespace": ns, "labels": labels,
                     "ownerReferences": [controller_ref(deployment)]},
        "spec": {"replicas": deployment["spec"]["replicas"],
                 "selector": {"matchLabels": {**deployment["spec"]["selector"]["matchLabels"],
                                              "pod-template-hash": POD_TEMPLATE_HASH}},
                 "template": {**template, "metadata": {**template["metadata"], "labels": labels}}}})
    await make_unschedulable(member, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{name}-{POD_TEMPLATE_HASH}-stuck", "namespace": ns, "labels": labels,
                     "ownerReferences": [controller_ref(replica_set)]},
        "spec": template["spec"]})
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
    async with assignments_seen(karmada, binding) as seen:
        async with faker_paused(ours.plane):
            await make_one_replica_unschedulable(member1, ns, "stuck")
            events = await descheduled(karmada, binding)
        assert "1 replica(s) in cluster(member1)" in events[0]["message"], events[0]["message"]
        await lowered_then_refilled(karmada, binding, seen, cluster="member1", before=on_member1)
