"""Our descheduler in place of Karmada's, for a StatefulSet: a replica stuck unschedulable on member1 is taken
from it, and Karmada's scheduler places the deficit again (Karmada's own descheduler skips StatefulSets).

The members have no kubelet, scheduler or StatefulSet controller; the readiness faker keeps Pods
``<name>-0..replicas-1`` Ready and writes the StatefulSet's status. The test plays a Pod that cannot fit: with
the faker paused it replaces the faker's highest-ordinal Pod by one of its own, owned by the member StatefulSet,
that the member's scheduler marked ``Unschedulable`` ten minutes ago, and writes the member StatefulSet's status
as its controller would (one replica fewer ready). Afterwards it deletes that Pod, as if the cluster gained room,
so the faker makes the ordinal Ready again and the workload settles.
"""

from __future__ import annotations

from typing import Any

from controller_manager.client import KubeClient
from kube_api.resources import STATEFUL_SETS
from tests.realplane.conftest import Ours
from tests.realplane.support import (
    assigned,
    assignments_seen,
    controller_ref,
    delete_pod_now,
    deployment,
    descheduled,
    divide,
    faker_paused,
    lowered_then_refilled,
    make_unschedulable,
    wait_ready_reported,
)

KIND = "StatefulSet"


def stateful_set(name: str, replicas: int) -> dict[str, Any]:
    """The project's test Deployment's spec as a StatefulSet (``serviceName`` is required)."""
    template = deployment(name, replicas)
    return {**template, "kind": KIND, "spec": {**template["spec"], "serviceName": name}}


async def make_highest_ordinal_unschedulable(member: KubeClient, ns: str, name: str) -> str:
    """What a member's StatefulSet controller and scheduler would show for a last replica that cannot fit; the
    stuck Pod's name."""
    sts = await member.get(STATEFUL_SETS, name, ns)
    replicas = sts["spec"]["replicas"]
    stuck = f"{name}-{replicas - 1}"
    await delete_pod_now(member, ns, stuck)  # the faker's Ready Pod of that ordinal
    template = sts["spec"]["template"]
    await make_unschedulable(member, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": stuck, "namespace": ns, "ownerReferences": [controller_ref(sts)],
                     "labels": {**template["metadata"]["labels"], "statefulset.kubernetes.io/pod-name": stuck}},
        "spec": template["spec"]})
    # kube 1.20 has no StatefulSet status.availableReplicas (1.22 added it): the server drops it, so Karmada's
    # ReflectStatus reports 0 and its health check calls every member StatefulSet here Unhealthy; the descheduler's
    # floor reads readyReplicas, which 1.20 has
    sts["status"] = {**(sts.get("status") or {}), "observedGeneration": sts["metadata"]["generation"],
                     "replicas": replicas, "currentReplicas": replicas, "updatedReplicas": replicas,
                     "readyReplicas": replicas - 1, "availableReplicas": replicas - 1}
    await member.update_status(STATEFUL_SETS, sts)
    return stuck


async def test_statefulset_replica_unschedulable_on_a_member_is_moved(ours: Ours, karmada: KubeClient,
                                                                      member1: KubeClient) -> None:
    # Karmada's default interpreter gives a StatefulSet's binding its replicas (GetReplicas), so it is divided
    ns, binding = await divide(karmada, "rp-deschedule-sts", STATEFUL_SETS, stateful_set("db", 4))
    on_member1 = assigned(binding)["member1"]
    # and its ReflectStatus carries the member StatefulSet's readyReplicas into the binding's aggregatedStatus
    binding = await wait_ready_reported(karmada, binding, "member1", on_member1)
    stuck = ""
    try:
        async with assignments_seen(karmada, binding) as seen:
            async with faker_paused(ours.plane):
                stuck = await make_highest_ordinal_unschedulable(member1, ns, "db")
                events = await descheduled(karmada, binding)
            assert "1 replica(s) in cluster(member1)" in events[0]["message"], events[0]["message"]
            await lowered_then_refilled(karmada, binding, seen, cluster="member1", before=on_member1)
    finally:
        if stuck:
            await delete_pod_now(member1, ns, stuck)
