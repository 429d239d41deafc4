"""The descheduler against a host and three member dev API servers, with the real estimator.

The seed document's example at binding level: 3 replicas over 3 members, member1's pod stuck
PodScheduled=False/Unschedulable past the threshold → member1's replicas lowered by one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client import REGISTRY

from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.events import EVENTS, EventRecorder
from controller_manager.informer import SharedInformer
from controller_manager.resource import Resource
from descheduler.budget import CYCLE_BUDGET, CycleBudget
from descheduler.core import COOL_DOWN_ANNOTATION, CoolDown
from descheduler.loop import Descheduler
from devplane.kubeconfig import write_kubeconfig
from estimator.client import EstimatorClient
from estimator.kinds import WorkloadKinds
from estimator.podselectors import load_pod_selectors
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from karmada_api.resources import RESOURCE_BINDINGS
from kube_api.resources import PODS, STATEFUL_SETS
from tests.clusteraccess.test_clusteraccess import (
    Plane,
    add_deployment,
    add_node,
    add_pod,
    pod_template,
)
from tests.clusteraccess.test_clusteraccess import control_plane as member_plane
from tests.conftest import eventually

DYNAMIC = {"clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]},
           "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
STATIC = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                "weightPreference": {"staticWeightList": [
                                    {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1}]}}}
NGINX = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx"}


def control_plane(*args: Any, **options: Any) -> contextlib.AbstractAsyncContextManager[Plane]:
    """The host and members, reached as the descheduler reaches them: slim member caches (descheduler/app.py)."""
    return member_plane(*args, slim=True, **options)


async def seed_nginx(plane: Plane, *, stuck_for: timedelta, ready: dict[str, int] | None = None,
                     clusters: dict[str, int] | None = None, placement: dict[str, Any] | None = None) -> None:
    """nginx over three members; member1's only pod is unschedulable for ``stuck_for``."""
    now = datetime.now(UTC)
    clusters = clusters or {"member1": 1, "member2": 1, "member3": 1}
    for name, replicas in clusters.items():
        member = plane.clients[name]
        await add_node(member, "node-a")
        _, rs = await add_deployment(member, "nginx", replicas=replicas)
        for i in range(replicas):
            if name == "member1":
                await add_pod(member, f"nginx-{i}", rs, app="nginx", unschedulable_since=now - stuck_for)
            else:
                await add_pod(member, f"nginx-{i}", rs, app="nginx", node="node-a")
    ready = ready if ready is not None else {"member1": 0, "member2": 1, "member3": 1}
    binding = {"metadata": {"name": "nginx-deployment", "namespace": "default",
                            "annotations": {APPLIED_PLACEMENT_ANNOTATION: json.dumps(placement or DYNAMIC)}},
               "spec": {"resource": dict(NGINX), "replicas": sum(clusters.values()),
                        "clusters": [{"name": n, "replicas": r} for n, r in clusters.items()]}}
    await plane.host_client.create(RESOURCE_BINDINGS, binding)
    await plane.host_client.patch_status(RESOURCE_BINDINGS, "nginx-deployment", {"status": {"aggregatedStatus": [
        {"clusterName": n, "applied": True, "status": {"readyReplicas": ready.get(n, 0)}} for n in clusters]}},
        namespace="default")


async def descheduler_for(plane: Plane, *, dry_run: bool = False, threshold: float = 300.0,
                          cool_down: CoolDown | None = None, kinds: WorkloadKinds | None = None,
                          budget: CycleBudget | None = None) -> tuple[Descheduler, SharedInformer]:
    bindings = SharedInformer(plane.host_client, RESOURCE_BINDINGS)
    task = asyncio.create_task(bindings.run())
    plane_tasks.append(task)
    await asyncio.wait_for(bindings.wait_for_sync(), 10)
    kinds = kinds or WorkloadKinds()
    estimator = EstimatorClient(plane.registry, timeout=3.0, kinds=kinds)
    events = EventRecorder(plane.host_client, "karmada-descheduler")
    return Descheduler(plane.host_client, bindings.store, estimator.unschedulable_replicas, events,
                       interval=1.0, threshold=threshold, dry_run=dry_run, cool_down=cool_down,
                       gvks=kinds.gvks(), budget=budget), bindings


plane_tasks: list[asyncio.Task[None]] = []


async def stop_informers() -> None:
    for task in plane_tasks:
        task.cancel()
    await asyncio.gather(*plane_tasks, return_exceptions=True)
    plane_tasks.clear()


@contextlib.asynccontextmanager
async def descheduler_plane(*args: Any, **options: Any) -> AsyncIterator[Plane]:
    """:func:`control_plane`, and the informers the test started (:func:`descheduler_for`) stopped at its end."""
    async with control_plane(*args, **options) as plane:
        try:
            yield plane
        finally:
            await stop_informers()


async def binding_clusters(plane: Plane) -> dict[str, int]:
    binding = await plane.host_client.get(RESOURCE_BINDINGS, "nginx-deployment", "default")
    return {c["name"]: c.get("replicas", 0) for c in binding["spec"]["clusters"]}


async def cycle_until_synced(descheduler: Descheduler, bindings: SharedInformer, plane: Plane) -> list[Any]:
    await plane.wait_synced("member1", "member2", "member3")

    async def cached() -> bool:
        return "default/nginx-deployment" in bindings.store

    await eventually(cached)
    return await descheduler.cycle()


async def test_seed_example_lowers_member1_by_one_and_records_events() -> None:
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10))
        descheduler, bindings = await descheduler_for(plane)
        outcomes = await cycle_until_synced(descheduler, bindings, plane)
        assert [o.binding for o in outcomes] == ["default/nginx-deployment"]
        assert await binding_clusters(plane) == {"member1": 0, "member2": 1, "member3": 1}
        await descheduler.events.flush()
        events = (await plane.host_client.list(EVENTS, "default"))["items"]
        messages = {(e["involvedObject"]["kind"], e["reason"], e["message"]) for e in events}
        message = ("Binding has been descheduled, 1 replica(s) in cluster(member1), "
                   "1 total descheduled replica(s)")
        assert ("ResourceBinding", "DescheduleBindingSucceed", message) in messages
        assert ("Deployment", "DescheduleBindingSucceed", message) in messages


async def test_threshold_is_respected() -> None:
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=1))
        descheduler, bindings = await descheduler_for(plane, threshold=300.0)
        assert await cycle_until_synced(descheduler, bindings, plane) == []
        assert await binding_clusters(plane) == {"member1": 1, "member2": 1, "member3": 1}


async def test_static_weights_are_not_descheduled() -> None:
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10), placement=STATIC)
        descheduler, bindings = await descheduler_for(plane)
        assert await cycle_until_synced(descheduler, bindings, plane) == []


async def test_never_below_ready_replicas() -> None:
    async with descheduler_plane() as plane:
        # member1: 3 assigned, all 3 pods stuck, but the binding reports 2 ready → target 2, not 0.
        await seed_nginx(plane, stuck_for=timedelta(minutes=10),
                         clusters={"member1": 3, "member2": 1, "member3": 1},
                         ready={"member1": 2, "member2": 1, "member3": 1})
        descheduler, bindings = await descheduler_for(plane)
        await cycle_until_synced(descheduler, bindings, plane)
        assert await binding_clusters(plane) == {"member1": 2, "member2": 1, "member3": 1}


async def test_an_unreachable_member_does_not_stop_the_others() -> None:
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10), ready={"member1": 0, "member2": 1,
                                                                        "member3": 0})
        descheduler, bindings = await descheduler_for(plane)
        await plane.wait_synced("member1", "member2", "member3")
        await plane.members["member3"].stop()  # member3 reports 0 ready and cannot be asked
        outcomes = await cycle_until_synced_partial(descheduler, bindings)
        assert outcomes and await binding_clusters(plane) == {"member1": 0, "member2": 1, "member3": 1}


async def cycle_until_synced_partial(descheduler: Descheduler, bindings: SharedInformer) -> list[Any]:
    async def cached() -> bool:
        return "default/nginx-deployment" in bindings.store

    await eventually(cached)
    return await descheduler.cycle()


async def test_dry_run_writes_nothing() -> None:
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10))
        before = await plane.host_client.get(RESOURCE_BINDINGS, "nginx-deployment", "default")
        descheduler, bindings = await descheduler_for(plane, dry_run=True)
        outcomes = await cycle_until_synced(descheduler, bindings, plane)
        assert [o.written for o in outcomes] == [False]
        after = await plane.host_client.get(RESOURCE_BINDINGS, "nginx-deployment", "default")
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


class DroppedUpdates(KubeClient):
    """The host client, except that its next ``drops`` updates lose their connection before reaching the
    server (a ServerDisconnectedError, as aiohttp raises when a proxy or load balancer drops it)."""

    def __init__(self, base: KubeClient, drops: int = 1) -> None:
        super().__init__(base.api_client, qps=0)
        self.drops = drops

    async def update(self, resource: Resource, obj: dict[str, Any], *, subresource: str = "") -> dict[str, Any]:
        if self.drops > 0:
            self.drops -= 1
            raise aiohttp.ServerDisconnectedError()
        return await super().update(resource, obj, subresource=subresource)


class RefusedUpdates(DroppedUpdates):
    """The first update finds the API server's port closed (aiohttp's ClientConnectorError): never sent."""

    async def update(self, resource: Resource, obj: dict[str, Any], *, subresource: str = "") -> dict[str, Any]:
        if self.drops > 0:
            self.drops -= 1
            raise aiohttp.ClientConnectorError(aiohttp.client_reqrep.ConnectionKey(
                "127.0.0.1", 1, False, True, None, None, None), ConnectionRefusedError(111, "Connection refused"))
        return await super(DroppedUpdates, self).update(resource, obj, subresource=subresource)


def descheduled_total(cluster: str) -> float:
    return REGISTRY.get_sample_value("descheduler_descheduled_replicas_total", {"cluster": cluster}) or 0.0


async def warnings_on_binding(descheduler: Descheduler, plane: Plane, event_type: str = "Warning") -> list[str]:
    await descheduler.events.flush()
    return [e["message"] for e in (await plane.host_client.list(EVENTS, "default"))["items"]
            if e["type"] == event_type and e["involvedObject"]["kind"] == "ResourceBinding"]


@pytest.mark.parametrize("fault", ["dropped connection", "504 Timeout", "500 ServerTimeout"])
async def test_a_write_that_may_have_landed_is_made_again_once_a_fresh_read_shows_it_did_not(fault: str) -> None:
    """A lost answer, a 504 (the API server stopped waiting) or a 500 (etcd timed out; the write can still commit)
    says nothing of the write (here it did not land): the cycle ends normally and a Warning says the result is
    unknown. The next cycle reads the binding from the API server: unchanged, so the write did not land, and it
    is made then, not one cool-down (here 4 minutes) later."""
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10),
                         clusters={"member1": 2, "member2": 1, "member3": 1})
        descheduler, bindings = await descheduler_for(plane, cool_down=CoolDown(240))
        if fault == "dropped connection":
            descheduler.client = DroppedUpdates(plane.host_client)
        else:
            code, reason = fault.split()
            plane.host.inject_fault("PUT", "/resourcebindings/nginx-deployment", code=int(code), reason=reason)
        unchanged = {"member1": 2, "member2": 1, "member3": 1}
        assert await cycle_until_synced(descheduler, bindings, plane) == []
        assert await binding_clusters(plane) == unchanged
        [warning] = await warnings_on_binding(descheduler, plane)
        assert warning.startswith("result unknown, the update may have been stored")
        assert [o.binding for o in await descheduler.cycle()] == ["default/nginx-deployment"]
        assert await binding_clusters(plane) == {"member1": 0, "member2": 1, "member3": 1}


async def test_while_a_write_of_unknown_result_cannot_be_read_back_its_clusters_cool_down() -> None:
    """The update's answer is lost, and so is the next cycle's fresh read (the API server still unreachable for
    reads): had the update landed, the member data may still count the replicas it released, so nothing is taken
    there until a read says whether it landed."""
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10),
                         clusters={"member1": 2, "member2": 1, "member3": 1})
        descheduler, bindings = await descheduler_for(plane, cool_down=CoolDown(240))
        descheduler.client = DroppedUpdates(plane.host_client)
        unchanged = {"member1": 2, "member2": 1, "member3": 1}
        assert await cycle_until_synced(descheduler, bindings, plane) == []
        reads = plane.host.inject_fault("GET", "/resourcebindings/nginx-deployment", code=503,
                                        reason="ServiceUnavailable", times=1_000)
        assert await descheduler.cycle() == []
        assert reads.times < 1_000  # the cycle did try to read it back
        reads.times = 0
        assert await binding_clusters(plane) == unchanged
        assert [o.binding for o in await descheduler.cycle()] == ["default/nginx-deployment"]  # read back now
        assert await binding_clusters(plane) == {"member1": 0, "member2": 1, "member3": 1}


async def test_a_new_descheduler_keeps_the_cool_down_its_predecessor_wrote_on_the_binding() -> None:
    """A lowers member1; then the scheduler puts the replica back on member1, whose pod is still stuck (or not yet
    gone from the member data). B, a restart or a new leader with no memory of A's write, runs its first cycle at
    once: the cool-down A wrote on the binding with its lowering keeps B from taking the replica again."""
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10))
        first, bindings = await descheduler_for(plane, cool_down=CoolDown(240))
        assert [o.binding for o in await cycle_until_synced(first, bindings, plane)] == ["default/nginx-deployment"]
        lowered = await plane.host_client.get(RESOURCE_BINDINGS, "nginx-deployment", "default")
        assert set(json.loads(lowered["metadata"]["annotations"][COOL_DOWN_ANNOTATION])) == {"member1"}
        back = [{"name": name, "replicas": 1} for name in ("member1", "member2", "member3")]
        await plane.host_client.patch(RESOURCE_BINDINGS, "nginx-deployment", {"spec": {"clusters": back}},
                                      namespace="default")
        second, fresh = await descheduler_for(plane, cool_down=CoolDown(240))

        def cached() -> bool:
            binding = fresh.store.get("default/nginx-deployment")
            return binding is not None and binding["spec"]["clusters"][0]["replicas"] == 1

        await eventually(cached)
        assert await second.cycle() == []
        assert await binding_clusters(plane) == {"member1": 1, "member2": 1, "member3": 1}
        unbounded, _ = await descheduler_for(plane)  # without a cool-down, the same data takes it at once
        assert [o.binding for o in await unbounded.cycle()] == ["default/nginx-deployment"]


@pytest.mark.parametrize("resent_into", ["its own write (409)", "a restarting server (404 page not found)",
                                         "its own write (409), the cool-down off"])
async def test_a_500_that_landed_and_was_sent_again_is_a_result_unknown_not_a_conflict(resent_into: str) -> None:
    """kube-apiserver's 500 ServerTimeout (etcd timed out) asks for a pause; the client sends the update again, and
    the write the 500 answered had landed: the 409 is our own write's, and a server restarting meanwhile refuses
    the resend with a ``404 page not found`` that says nothing of the first attempt. Either way the descheduler
    must hold it as of unknown result, and count it as made once read back (its budget spent, its Event)."""
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10))
        cool_down = None if "cool-down off" in resent_into else CoolDown(240)
        descheduler, bindings = await descheduler_for(plane, cool_down=cool_down)
        fault = plane.host.inject_fault("PUT", "/resourcebindings/nginx-deployment", code=500, reason="ServerTimeout",
                                        retry_after=1, after_dispatch=True)
        if "404" in resent_into:
            plane.host.inject_fault("PUT", "/resourcebindings/nginx-deployment", code=404, page_not_found=True)
        assert await cycle_until_synced(descheduler, bindings, plane) == []
        assert fault.times == 0
        landed = {"member1": 0, "member2": 1, "member3": 1}
        assert await binding_clusters(plane) == landed
        [warning] = await warnings_on_binding(descheduler, plane)
        assert warning.startswith("result unknown, the update may have been stored (500 ServerTimeout")
        assert await warnings_on_binding(descheduler, plane, "Normal") == []
        counted = descheduled_total("member1")
        assert await descheduler.cycle() == []
        assert await binding_clusters(plane) == landed
        # read back: stored, so now the success Event and the count the Warning held back
        [succeeded] = await warnings_on_binding(descheduler, plane, "Normal")
        assert succeeded.endswith("(the update of unknown result was stored, read back)")
        assert descheduled_total("member1") == counted + 1


async def test_an_update_of_unknown_result_is_read_back_though_its_binding_is_no_longer_judged() -> None:
    """The update landed with its answer lost; before the next cycle the workload's placement became Duplicated,
    so the descheduler no longer judges the binding. The read-back is made all the same: the landed update gets
    its success Event and its count."""
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10))
        descheduler, bindings = await descheduler_for(plane, cool_down=CoolDown(240))
        counted = descheduled_total("member1")
        plane.host.inject_fault("PUT", "/resourcebindings/nginx-deployment", code=504, reason="Timeout",
                                after_dispatch=True)
        assert await cycle_until_synced(descheduler, bindings, plane) == []
        duplicated = json.dumps({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}})
        await plane.host_client.patch(RESOURCE_BINDINGS, "nginx-deployment", {"metadata": {"annotations": {
            APPLIED_PLACEMENT_ANNOTATION: duplicated}}}, namespace="default")

        def judged_no_more() -> bool:
            binding = bindings.store.get("default/nginx-deployment")
            return binding is not None and "Duplicated" in binding["metadata"]["annotations"][
                APPLIED_PLACEMENT_ANNOTATION]

        await eventually(judged_no_more, what="the informer seeing the Duplicated placement")
        assert await descheduler.cycle() == []
        [succeeded] = await warnings_on_binding(descheduler, plane, "Normal")
        assert succeeded.endswith("(the update of unknown result was stored, read back)")
        assert descheduled_total("member1") == counted + 1


async def test_a_binding_whose_read_back_fails_is_left_alone_until_it_is_read_back() -> None:
    """member1's two replicas are stuck, one moves per cycle (a per-workload budget). The first update's answer is
    lost after it landed; the next cycle's read-back fails. Judged on its cache instead, that cycle would lower the
    held-back replica with a new cool-down stamp, and the read-back after it could no longer tell the first update
    stored: its Event and count would never come. Left alone until the read-back works, both updates get them."""
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10), clusters={"member1": 2, "member2": 1, "member3": 1},
                         ready={"member1": 0, "member2": 1, "member3": 1})
        descheduler, bindings = await descheduler_for(plane, cool_down=CoolDown(240),
                                                      budget=CycleBudget(per_workload=1))
        counted = descheduled_total("member1")
        plane.host.inject_fault("PUT", "/resourcebindings/nginx-deployment", code=504, reason="Timeout",
                                after_dispatch=True)
        assert await cycle_until_synced(descheduler, bindings, plane) == []
        assert (await binding_clusters(plane))["member1"] == 1  # it landed
        await plane.clients["member1"].delete(PODS, "nginx-1", "default")  # the member follows the assignment

        async def observed() -> bool:
            return await descheduler.estimate(["member1"], dict(NGINX), timedelta(minutes=5)) == {"member1": 1}

        await eventually(observed, what="the estimator seeing 1 stuck pod")
        read_back = plane.host.inject_fault("GET", "/resourcebindings/nginx-deployment", code=500)
        assert await descheduler.cycle() == []
        assert read_back.times == 0
        assert (await binding_clusters(plane))["member1"] == 1  # left alone
        assert [o.binding for o in await descheduler.cycle()] == ["default/nginx-deployment"]
        assert (await binding_clusters(plane))["member1"] == 0
        succeeded = await warnings_on_binding(descheduler, plane, "Normal")
        assert len(succeeded) == 2
        assert any(m.endswith("(the update of unknown result was stored, read back)") for m in succeeded)
        assert descheduled_total("member1") == counted + 2


async def test_a_refused_connection_is_a_plain_failure_retried_by_the_next_cycle() -> None:
    """Nothing was sent, so nothing can have landed: no cool-down, and the next cycle takes the replicas."""
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10))
        descheduler, bindings = await descheduler_for(plane, cool_down=CoolDown(240))
        refused = RefusedUpdates(plane.host_client)
        descheduler.client = refused
        assert await cycle_until_synced(descheduler, bindings, plane) == []
        [warning] = await warnings_on_binding(descheduler, plane)
        assert "result unknown" not in warning
        assert [o.binding for o in await descheduler.cycle()] == ["default/nginx-deployment"]
        assert await binding_clusters(plane) == {"member1": 0, "member2": 1, "member3": 1}


async def test_a_binding_that_fails_unexpectedly_is_retried_by_the_next_cycle() -> None:
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10))
        descheduler, bindings = await descheduler_for(plane)
        estimate, failures = descheduler.estimate, [RuntimeError("a bug in one binding's path")]

        async def failing_once(*args: Any) -> dict[str, int]:
            if failures:
                raise failures.pop()
            return await estimate(*args)

        descheduler.estimate = failing_once
        assert await cycle_until_synced(descheduler, bindings, plane) == []  # no exception out of the cycle
        assert [o.binding for o in await descheduler.cycle()] == ["default/nginx-deployment"]
        assert await binding_clusters(plane) == {"member1": 0, "member2": 1, "member3": 1}


def held_back(reason: str) -> float:
    return REGISTRY.get_sample_value("descheduler_replicas_held_back_total", {"reason": reason}) or 0.0


async def test_a_cycle_budget_moves_exactly_the_budget_and_later_cycles_finish() -> None:
    """member1's 5 replicas are all stuck, the budget is 2 per cycle: 2, 2, then the last one. The member
    follows each lowered assignment (its ReplicaSet removes the pending pods), and the cool-down (on, as by
    default) lets the held-back replicas through without waiting for it."""
    async with descheduler_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10),
                         clusters={"member1": 5, "member2": 1, "member3": 1})
        descheduler, bindings = await descheduler_for(plane, cool_down=CoolDown(240),
                                                      budget=CycleBudget(per_cycle=2))
        member1 = plane.clients["member1"]
        threshold = timedelta(minutes=5)
        held = held_back(CYCLE_BUDGET)
        for moved, assigned, left in ((2, 3, 3), (2, 1, 1), (1, 0, 0)):
            outcomes = await cycle_until_synced(descheduler, bindings, plane)
            assert [(o.binding, o.plan.total) for o in outcomes] == [("default/nginx-deployment", moved)]
            assert await binding_clusters(plane) == {"member1": assigned, "member2": 1, "member3": 1}
            assert held_back(CYCLE_BUDGET) - held == left
            held = held_back(CYCLE_BUDGET)
            for i in range(assigned, assigned + moved):  # the member's ReplicaSet follows the assignment
                await member1.delete(PODS, f"nginx-{i}", "default")

            async def observed(count: int = left) -> bool:
                answer = await descheduler.estimate(["member1"], dict(NGINX), threshold)
                return answer == {"member1": count}

            await eventually(observed, what=f"the estimator seeing {left} stuck pods")

            def cached(replicas: int = assigned) -> bool:
                binding = bindings.store.get("default/nginx-deployment")
                return binding is not None and binding["spec"]["clusters"][0]["replicas"] == replicas

            await eventually(cached, what="the informer seeing the lowered assignment")
        assert await descheduler.cycle() == []
        await descheduler.events.flush()
        events = (await plane.host_client.list(EVENTS, "default"))["items"]
        totals = {e["message"].rsplit(", ", 1)[1]: e.get("count", 1) for e in events
                  if e["involvedObject"]["kind"] == "ResourceBinding"}  # the same message twice: count 2
        assert totals == {"2 total descheduled replica(s)": 2, "1 total descheduled replica(s)": 1}


# ------------------------------------------------------------------------------------------------
# kinds beyond Karmada's Deployment. The members here are bare API servers with no controllers, so
# the tests create the workloads' Pods themselves, as a member's StatefulSet (or Flink) operator would.

FLINK_RESOURCE = Resource("flink.apache.org", "v1beta1", "flinkdeployments", "FlinkDeployment", True)
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
FLINK_SELECTORS = """\
- apiVersion: flink.apache.org/v1beta1
  kind: FlinkDeployment
  podSelector: "app={name},component=taskmanager"
"""


async def create_binding(plane: Plane, name: str, resource: dict[str, Any], clusters: dict[str, int],
                         statuses: dict[str, dict[str, Any]]) -> None:
    """A dynamically divided binding of ``resource`` with the given per-cluster aggregated statuses."""
    binding = {"metadata": {"name": name, "namespace": "default",
                            "annotations": {APPLIED_PLACEMENT_ANNOTATION: json.dumps(DYNAMIC)}},
               "spec": {"resource": resource, "replicas": sum(clusters.values()),
                        "clusters": [{"name": n, "replicas": r} for n, r in clusters.items()]}}
    await plane.host_client.create(RESOURCE_BINDINGS, binding)
    await plane.host_client.patch_status(RESOURCE_BINDINGS, name, {"status": {"aggregatedStatus": [
        {"clusterName": n, "applied": True, "status": statuses[n]} for n in clusters]}}, namespace="default")


async def clusters_of(plane: Plane, name: str) -> dict[str, int]:
    binding = await plane.host_client.get(RESOURCE_BINDINGS, name, "default")
    return {c["name"]: c.get("replicas", 0) for c in binding["spec"]["clusters"]}


async def cycle_when_cached(descheduler: Descheduler, bindings: SharedInformer, *keys: str) -> list[Any]:
    await eventually(lambda: all(key in bindings.store for key in keys))
    return await descheduler.cycle()


async def add_statefulset(member: KubeClient, name: str, replicas: int) -> dict[str, Any]:
    return await member.create(STATEFUL_SETS, {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                 "template": pod_template(name)}})


async def test_a_statefulsets_stuck_replicas_are_moved() -> None:
    async with descheduler_plane() as plane:
        now = datetime.now(UTC)
        layout = {"member1": 3, "member2": 1, "member3": 1}
        for name, replicas in layout.items():
            member = plane.clients[name]
            await add_node(member, "node-a")
            sts = await add_statefulset(member, "db", replicas)
            for i in range(replicas):
                stuck = name == "member1" and i > 0  # member1: db-0 runs, db-1 and db-2 are stuck
                await add_pod(member, f"db-{i}", sts, app="db", owner_kind="StatefulSet",
                              node="" if stuck else "node-a",
                              unschedulable_since=now - timedelta(minutes=10) if stuck else None)
        # a pod of the same labels owned by something else is not the StatefulSet's
        await add_pod(plane.clients["member2"], "db-stray", None, app="db",
                      unschedulable_since=now - timedelta(minutes=10))
        # StatefulSet statuses as reflected: readyReplicas (omitted when 0)
        await create_binding(plane, "db-statefulset", {"apiVersion": "apps/v1", "kind": "StatefulSet",
                                                       "namespace": "default", "name": "db"}, layout,
                             {"member1": {"replicas": 3, "readyReplicas": 1}, "member2": {"replicas": 1},
                              "member3": {"replicas": 1, "readyReplicas": 1}})
        descheduler, bindings = await descheduler_for(plane)
        await plane.wait_synced(*layout)
        outcomes = await cycle_when_cached(descheduler, bindings, "default/db-statefulset")
        assert [(o.binding, o.plan.descheduled) for o in outcomes] == [("default/db-statefulset", {"member1": 2})]
        assert await clusters_of(plane, "db-statefulset") == {"member1": 1, "member2": 1, "member3": 1}


async def add_flink_crd(member: KubeClient) -> None:
    await member.create(CRDS, {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "flinkdeployments.flink.apache.org"},
        "spec": {"group": "flink.apache.org", "scope": "Namespaced",
                 "names": {"plural": "flinkdeployments", "singular": "flinkdeployment", "kind": "FlinkDeployment",
                           "listKind": "FlinkDeploymentList"},
                 "versions": [{"name": "v1beta1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})


async def seed_flink(plane: Plane) -> None:
    """FlinkDeployment ``job`` in member1 (3 assigned: 1 taskmanager running, 2 stuck, and a stuck
    jobmanager that is not one of its replicas) and member2 (1 running), its binding, and a
    Deployment binding whose workload the members do not have."""
    stuck = datetime.now(UTC) - timedelta(minutes=10)
    for name in ("member1", "member2"):
        member = plane.clients[name]
        await add_node(member, "node-a")
        await add_flink_crd(member)

        async def job_created(member: KubeClient = member) -> bool:
            with contextlib.suppress(ApiError):  # until the new CRD is served
                await member.create(FLINK_RESOURCE, {"apiVersion": "flink.apache.org/v1beta1",
                                                     "kind": "FlinkDeployment",
                                                     "metadata": {"name": "job", "namespace": "default"},
                                                     "spec": {"job": {"parallelism": 4}}})
                return True
            return False

        await eventually(job_created)
    tm = {"component": "taskmanager"}
    m1, m2 = plane.clients["member1"], plane.clients["member2"]
    await add_pod(m1, "job-jobmanager", None, app="job", labels={"component": "jobmanager"},
                  unschedulable_since=stuck)  # not selected: not one of the binding's replicas
    await add_pod(m1, "job-tm-1", None, app="job", labels=tm, node="node-a")
    await add_pod(m1, "job-tm-2", None, app="job", labels=tm, unschedulable_since=stuck)
    await add_pod(m1, "job-tm-3", None, app="job", labels=tm, unschedulable_since=stuck)
    await add_pod(m2, "job-tm-1", None, app="job", labels=tm, node="node-a")
    # the whole member status is reflected for a custom kind; Flink's has no readyReplicas: no floor
    running = {"jobStatus": {"state": "RUNNING"}}
    await create_binding(plane, "job-flinkdeployment", {"apiVersion": "flink.apache.org/v1beta1",
                                                        "kind": "FlinkDeployment", "namespace": "default",
                                                        "name": "job"},
                         {"member1": 3, "member2": 1}, {"member1": running, "member2": running})
    await create_binding(plane, "nginx-deployment", dict(NGINX), {"member1": 1, "member2": 1},
                         {"member1": {}, "member2": {}})  # not in the members: unknown, left alone


FLINK_MOVED = {"member1": 1, "member2": 1}


async def test_a_declared_custom_kinds_stuck_replicas_are_moved(tmp_path: Path) -> None:
    path = tmp_path / "selectors.yaml"
    path.write_text(FLINK_SELECTORS)
    kinds = WorkloadKinds(load_pod_selectors(path))
    async with descheduler_plane(2, workloads=kinds.member_resources()) as plane:
        await seed_flink(plane)
        descheduler, bindings = await descheduler_for(plane, kinds=kinds)
        await plane.wait_synced("member1", "member2")

        async def moved() -> bool:  # the members' FlinkDeployment informers start listing once served
            await cycle_when_cached(descheduler, bindings, "default/job-flinkdeployment")
            return (await clusters_of(plane, "job-flinkdeployment")) == FLINK_MOVED

        await eventually(moved, timeout=20)
        assert await clusters_of(plane, "nginx-deployment") == {"member1": 1, "member2": 1}


def unsupported_gauge(api_version: str, kind: str) -> float | None:
    return REGISTRY.get_sample_value("descheduler_unsupported_workloads", {"api_version": api_version, "kind": kind})


async def test_an_unsupported_kind_is_skipped_logged_and_counted(capsys: pytest.CaptureFixture[str]) -> None:
    async with descheduler_plane(1) as plane:
        clone_set = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "namespace": "default",
                     "name": "cs"}
        await create_binding(plane, "cs-cloneset", clone_set, {"member1": 2}, {"member1": {}})
        descheduler, bindings = await descheduler_for(plane)
        assert await cycle_when_cached(descheduler, bindings, "default/cs-cloneset") == []
        assert unsupported_gauge("apps.kruise.io/v1alpha1", "CloneSet") == 1.0
        assert await clusters_of(plane, "cs-cloneset") == {"member1": 2}
        assert await descheduler.cycle() == []
        logged = capsys.readouterr().out
        assert logged.count("workload skipped: its kind is not supported") == 1  # once per binding
        assert "declare it in --unschedulable-pod-selectors" in logged
        await plane.host_client.delete(RESOURCE_BINDINGS, "cs-cloneset", "default")
        await eventually(lambda: "default/cs-cloneset" not in bindings.store)
        await descheduler.cycle()
        assert unsupported_gauge("apps.kruise.io/v1alpha1", "CloneSet") == 0.0


async def test_an_unusable_selectors_file_stops_the_process_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "selectors.yaml"
    path.write_text(FLINK_SELECTORS + "- {apiVersion: example.io/v1, kind: Widget, podSelector: 'app=={name'}\n")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "descheduler", "--unschedulable-pod-selectors", str(path),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=dict(os.environ))
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2
    assert out == b""
    assert err.decode() == (f"karmada-descheduler: error: --unschedulable-pod-selectors: {path}: entry 2 "
                            "(example.io/v1 Widget): unbalanced brace in podSelector 'app=={name'\n")


@contextlib.asynccontextmanager
async def descheduler_process(plane: Plane, tmp_path: Path, *flags: str) -> AsyncIterator[None]:
    """``karmada-descheduler`` against the plane (1s interval, no election, no servers), stopped with SIGTERM."""
    kubeconfig = tmp_path / "karmada.config"
    write_kubeconfig(kubeconfig, {"karmada-apiserver": plane.host.url}, "karmada-apiserver")
    log = tmp_path / "descheduler.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "descheduler", "--kubeconfig", str(kubeconfig), "--leader-elect=false",
            "--descheduling-interval=1s", "--metrics-bind-address=0", "--health-probe-bind-address=0", *flags,
            stdout=out, stderr=out, env=dict(os.environ))
    try:
        yield
    finally:
        proc.terminate()
        assert await asyncio.wait_for(proc.wait(), 10) == 0, log.read_text()


@pytest.mark.slow
async def test_karmada_descheduler_process_does_the_seed_example(tmp_path: Path) -> None:
    async with control_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10))
        async with descheduler_process(plane, tmp_path, "--unschedulable-threshold=5m"):
            async def descheduled() -> bool:
                return (await binding_clusters(plane)).get("member1") == 0

            await eventually(descheduled, timeout=30)


@pytest.mark.slow
async def test_karmada_descheduler_process_applies_its_budget_flag(tmp_path: Path) -> None:
    """The flag reaches the cycle: 5 stuck replicas, a budget of 2, the first write lowers member1 by 2 and the
    cycle's log line counts the 3 held back (the bare member keeps its 5 pending pods, so nothing moves after
    that: 5 unschedulable of 3 assigned is inconsistent data)."""
    async with control_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10), clusters={"member1": 5, "member2": 1, "member3": 1})
        async with descheduler_process(plane, tmp_path, "--max-descheduled-replicas-per-cycle=2",
                                       "--max-descheduled-replicas-per-workload=4"):
            async def descheduled() -> bool:
                return (await binding_clusters(plane)).get("member1") == 3

            await eventually(descheduled, timeout=30)
        logged = (tmp_path / "descheduler.log").read_text()
        assert "held_back=3" in logged and "held_back_cycle_budget=2" in logged, logged
        assert "held_back_workload_budget=1" in logged, logged


async def test_karmada_descheduler_process_moves_a_declared_kind(tmp_path: Path) -> None:
    selectors = tmp_path / "selectors.yaml"
    selectors.write_text(FLINK_SELECTORS)
    async with control_plane(2) as plane:
        await seed_flink(plane)
        async with descheduler_process(plane, tmp_path, "--unschedulable-pod-selectors", str(selectors)):
            async def descheduled() -> bool:
                return (await clusters_of(plane, "job-flinkdeployment")) == FLINK_MOVED

            await eventually(descheduled, timeout=30)
        assert await clusters_of(plane, "nginx-deployment") == {"member1": 1, "member2": 1}
