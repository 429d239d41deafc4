"""clusterFailback on the real plane: Karmada's taint manager evicts, ours brings the replicas back."""

from __future__ import annotations

import anyio

from benchmarks.support import log_tail
from controller_manager.client import KubeClient
from controllers.failback.progress import CLUSTER_LABEL
from karmada_api.resources import WORKLOAD_REBALANCERS
from kube_api.resources import DEPLOYMENTS
from tests.conftest import eventually
from tests.realplane.conftest import Ours
from tests.realplane.support import (
    SCHEDULED,
    binding_of,
    delete_quietly,
    fresh_namespace,
    propagate,
    results,
    set_taint,
    wait_assigned,
)


async def test_replicas_evicted_by_a_noexecute_taint_come_back_after_it_is_removed(
        ours: Ours, karmada: KubeClient) -> None:
    # A controller-manager of its own, with only clusterFailback, on a Lease of its own: the session's
    # controller-manager (its rebalancer runs what fail-back creates) keeps fail-back off for the other tests.
    failback = ours.launch("controller_manager", "failback-controller-manager", "--controllers=clusterFailback",
                           "--leader-elect-resource-name=rp-failback", "--failback-stabilization-window=5s",
                           "--failback-rebalancer-ttl=0s", "-v", "4")
    ns = ""
    try:
        # It records evictions as they happen: it must lead before the taint, or it never sees this one
        await eventually(lambda: anyio.to_thread.run_sync(failback.leads, "rp-failback"), timeout=30, interval=0.25)
        ns = await fresh_namespace(karmada, "rp-failback")
        await propagate(karmada, ns, ["back"], 4)
        await wait_assigned(karmada, ns, "back", lambda a: set(a) == {"member1", "member2"})

        await set_taint(karmada, "member1", [{"key": "rp-failback", "effect": "NoExecute"}])
        try:
            await wait_assigned(karmada, ns, "back", lambda a: a == {"member2": 4})
        finally:
            await set_taint(karmada, "member1", [])

        try:
            await wait_assigned(karmada, ns, "back",
                                lambda a: set(a) == {"member1", "member2"} and sum(a.values()) == 4)
        except AssertionError as exc:
            binding = await binding_of(karmada, ns, "back")
            raise AssertionError(f"not failed back: {(binding or {}).get('metadata')}\n"
                                 f"{log_tail(failback.log)}") from exc

        async def failed_back() -> bool:
            """A fail-back WorkloadRebalancer listed the workload, and our rebalancer ran it."""
            found = (await karmada.list(WORKLOAD_REBALANCERS, label_selector=CLUSTER_LABEL)).get("items") or []
            return any(results(r).get(f"{ns}/back") == "Successful" for r in found)

        await eventually(failed_back, timeout=SCHEDULED, interval=0.5)
    finally:
        failback.stop()
        if ns:  # a workload left on member1 would be evicted (and failed back) by a later test's taint
            await delete_quietly(karmada, DEPLOYMENTS, "back", ns)
