"""Our descheduler in place of Karmada's: a replica stuck unschedulable on member1 is taken from it, and
Karmada's scheduler places the deficit again.

The members have no kubelet, scheduler or ReplicaSet controller: the test plays them. It pauses the
readiness faker (which would report every replica Ready, and Karmada's floor rightly never takes a Ready
replica away), creates the member Deployment's ReplicaSet with one Pending Pod that the scheduler marked
``Unschedulable`` ten minutes ago, and writes the member Deployment's status as its controller would
(one replica fewer ready).
"""

from __future__ import annotations

from controller_manager.client import KubeClient
from tests.realplane.conftest import Ours
from tests.realplane.support import (
    assigned,
    assignments_seen,
    descheduled,
    faker_paused,
    fresh_namespace,
    lowered_then_refilled,
    make_replicas_unschedulable,
    propagate,
    wait_assigned,
    wait_member_ready,
)


async def test_replica_unschedulable_on_a_member_is_moved(ours: Ours, karmada: KubeClient,
                                                          member1: KubeClient) -> None:
    ns = await fresh_namespace(karmada, "rp-deschedule")
    # Karmada's descheduler (and so ours) handles only bindings divided by a dynamic weight
    await propagate(karmada, ns, ["stuck"], 4)
    binding = await wait_assigned(karmada, ns, "stuck", lambda a: a.get("member1", 0) >= 2 and sum(a.values()) == 4)
    on_member1 = assigned(binding)["member1"]
    await wait_member_ready(member1, ns, "stuck", on_member1)
    async with assignments_seen(karmada, binding) as seen:
        async with faker_paused(ours.plane):
            await make_replicas_unschedulable(member1, ns, "stuck")
            events = await descheduled(karmada, binding)
        assert "1 replica(s) in cluster(member1)" in events[0]["message"], events[0]["message"]
        await lowered_then_refilled(karmada, binding, seen, cluster="member1", before=on_member1)
