"""Our descheduler in place of Karmada's, for an operator-declared custom kind: a replica stuck unschedulable on
member1 is taken from it, and Karmada's scheduler places the deficit again (Karmada's own descheduler skips every
kind but Deployments).

The kind is ``TaskPool`` (:mod:`tests.realplane.customkind`): its CRD is on the Karmada API server and on both
members, a ResourceInterpreterCustomization tells Karmada's controllers its replicas (Lua ``GetReplicas``,
``ReviseReplica``; its status is reflected whole by default), and our descheduler finds its Pods by the selector
declared in ``--unschedulable-pod-selectors`` (``app=<name>,component=worker``). The members run no operator for
it and the readiness faker ignores it: the test plays the operator and the member's scheduler. On member1 it
writes the TaskPool's status (one replica fewer ready) and creates one of its Pods, which the scheduler marked
``Unschedulable`` ten minutes ago; afterwards it deletes that Pod, as if the cluster gained room.
"""

from __future__ import annotations

import contextlib
from typing import Any

from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from tests.conftest import eventually
from tests.realplane.conftest import Ours
from tests.realplane.customkind import TASK_POOLS, task_pool
from tests.realplane.support import (
    SCHEDULED,
    assigned,
    assignments_seen,
    controller_ref,
    delete_pod_now,
    descheduled,
    divide,
    lowered_then_refilled,
    make_unschedulable,
    wait_ready_reported,
)


async def test_custom_kind_replica_unschedulable_on_a_member_is_moved(ours: Ours, karmada: KubeClient,
                                                                      member1: KubeClient) -> None:
    # the customization's GetReplicas gives the binding its replicas, so Karmada's scheduler divides them
    ns, binding = await divide(karmada, "rp-deschedule-kind", TASK_POOLS, task_pool("pool", 4))
    on_member1 = assigned(binding)["member1"]

    async def member1_pool() -> dict[str, Any] | None:
        with contextlib.suppress(ApiError):
            pool = await member1.get(TASK_POOLS, "pool", ns)
            return pool if pool["spec"]["replicas"] == on_member1 else None
        return None

    # and its ReviseReplica gives member1's TaskPool member1's share (Karmada's binding controller)
    pool = await eventually(member1_pool, timeout=SCHEDULED)
    pool["status"] = {"replicas": on_member1, "readyReplicas": on_member1 - 1}
    await member1.update_status(TASK_POOLS, pool)
    # Karmada reflects the whole status of a kind without a ReflectStatus script, so member1's readyReplicas reach
    # the binding: the floor holds for the custom kind too (member2's TaskPool has no status, so its item has
    # none: unknown, no floor, and nothing there to move). Without a healthInterpretation script Karmada calls the
    # kind Healthy whatever its status.
    binding = await wait_ready_reported(karmada, binding, "member1", on_member1 - 1)
    stuck = "pool-worker-stuck"
    try:
        async with assignments_seen(karmada, binding) as seen:
            await make_unschedulable(member1, {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": stuck, "namespace": ns, "labels": {"app": "pool", "component": "worker"},
                             "ownerReferences": [controller_ref(pool)]},
                "spec": pool["spec"]["template"]["spec"]})
            events = await descheduled(karmada, binding)
            assert "1 replica(s) in cluster(member1)" in events[0]["message"], events[0]["message"]
            await lowered_then_refilled(karmada, binding, seen, cluster="member1", before=on_member1)
    finally:
        await delete_pod_now(member1, ns, stuck)
