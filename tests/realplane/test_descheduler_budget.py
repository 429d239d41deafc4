"""Our descheduler's cycle budget (issue 26) on the real plane: three replicas stuck on member1, a budget of two
per cycle (conftest's ``--max-descheduled-replicas-per-cycle``); one cycle takes two, a later one the last.

The stuck replicas are played as in test_descheduler.py (faker paused, a ReplicaSet with Pending Pods the member's
scheduler marked ``Unschedulable`` ten minutes ago, the member Deployment's status one ready replica fewer per stuck
Pod). The test also plays the member's ReplicaSet controller when Karmada scales member1's Deployment down: it
deletes Pending Pods first, so after the first deschedule one stuck Pod is left, and none after the second.

Seen on this plane: the two deschedules come in consecutive cycles, 3 s apart (the second within the cool-down of
two intervals, which lets exactly the held-back replica through); Karmada's scheduler places each deficit again
(its scale-up path) between or after them, and its writes only ever raise the total, so the versions that lower it
are the descheduler's alone.
"""

from __future__ import annotations

from typing import Any

import anyio

from controller_manager.client import KubeClient
from controller_manager.events import EVENTS
from descheduler.budget import CYCLE_BUDGET as HELD_BY_THE_CYCLE
from descheduler.core import EVENT_REASON_DESCHEDULE_SUCCEED
from tests.conftest import eventually
from tests.realplane.conftest import CYCLE_BUDGET, Ours
from tests.realplane.support import (
    SCHEDULED,
    assigned,
    delete_pod_now,
    faker_paused,
    fresh_namespace,
    make_replicas_unschedulable,
    propagate,
    versions_seen,
    wait_assigned,
    wait_member_ready,
)

REPLICAS = 8
STUCK = CYCLE_BUDGET + 1
HELD_BACK = f'descheduler_replicas_held_back_total{{reason="{HELD_BY_THE_CYCLE}"}}'


def message(replicas: int) -> str:
    return (f"Binding has been descheduled, {replicas} replica(s) in cluster(member1), "
            f"{replicas} total descheduled replica(s)")


def drops(versions: list[dict[str, Any]], first: dict[str, int]) -> list[dict[str, int]]:
    """Each write that lowered the assignment's total (the descheduler's; Karmada's scheduler only raises it): by how
    much, per cluster, from the version before it."""
    lowered, before = [], first
    for version in versions:
        now = assigned(version)
        if sum(now.values()) < sum(before.values()):
            lowered.append({c: n - now.get(c, 0) for c, n in before.items() if now.get(c, 0) < n})
        before = now
    return lowered


async def test_a_cycle_moves_no_more_than_its_budget_and_a_later_cycle_the_rest(
        ours: Ours, karmada: KubeClient, member1: KubeClient) -> None:
    ns = await fresh_namespace(karmada, "rp-deschedule-budget")
    await propagate(karmada, ns, ["many"], REPLICAS)  # a dynamic weight: the only division a descheduler handles
    binding = await wait_assigned(karmada, ns, "many",
                                  lambda a: a.get("member1", 0) >= STUCK and sum(a.values()) == REPLICAS)
    await wait_member_ready(member1, ns, "many", assigned(binding)["member1"])
    held_before = await anyio.to_thread.run_sync(ours.descheduler.sample, HELD_BACK) or 0.0
    stuck: list[str] = []
    try:
        async with versions_seen(karmada, binding) as seen:
            async with faker_paused(ours.plane):
                stuck = await make_replicas_unschedulable(member1, ns, "many", STUCK)
                await eventually(lambda: _descheduled(karmada, binding, message(CYCLE_BUDGET)), timeout=SCHEDULED)
                # the budget held one back; member1's Deployment scaled down by two loses two Pending Pods
                for pod in stuck[:CYCLE_BUDGET]:
                    await delete_pod_now(member1, ns, pod)
                await eventually(lambda: _descheduled(karmada, binding, message(1)), timeout=SCHEDULED)
                for pod in stuck[CYCLE_BUDGET:]:
                    await delete_pod_now(member1, ns, pod)
            await wait_assigned(karmada, ns, "many", lambda a: sum(a.values()) == REPLICAS)

            def both_seen() -> bool:
                lowered = drops(seen, assigned(binding))
                assert len(lowered) >= 2, (lowered, [assigned(v) for v in seen])
                return True

            await eventually(both_seen, timeout=10)
        # one write per cycle, never more than the budget: two replicas, then the one held back
        assert drops(seen, assigned(binding)) == [{"member1": CYCLE_BUDGET}, {"member1": 1}], [
            assigned(v) for v in seen]
        events = await _descheduled(karmada, binding, message(1))
        assert sorted((e["message"], e.get("count", 1)) for e in events) == [
            (message(1), 1), (message(CYCLE_BUDGET), 1)], events  # one event each
        held = await anyio.to_thread.run_sync(ours.descheduler.sample, HELD_BACK)
        assert held == held_before + 1, (held_before, held)
    finally:
        for pod in stuck:
            await delete_pod_now(member1, ns, pod)


async def _descheduled(karmada: KubeClient, binding: dict[str, Any], wanted: str) -> list[dict[str, Any]]:
    """The binding's ``DescheduleBindingSucceed`` events once one says ``wanted`` (empty before)."""
    about = f"involvedObject.uid={binding['metadata']['uid']}"
    events = (await karmada.list(EVENTS, binding["metadata"]["namespace"], field_selector=about)).get("items") or []
    found = [e for e in events if e["reason"] == EVENT_REASON_DESCHEDULE_SUCCEED]
    return found if any(e["message"] == wanted for e in found) else []
