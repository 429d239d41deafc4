"""The descheduler against a host and three member dev API servers, with the real estimator.

The seed document's example at binding level: 3 replicas over 3 members, member1's pod stuck
PodScheduled=False/Unschedulable past the threshold → member1's replicas lowered by one.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller_manager.events import EVENTS, EventRecorder
from controller_manager.informer import SharedInformer
from descheduler.core import CoolDown
from descheduler.loop import Descheduler
from devplane.kubeconfig import write_kubeconfig
from estimator.client import EstimatorClient
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from karmada_api.resources import RESOURCE_BINDINGS
from tests.clusteraccess.test_clusteraccess import (
    Plane,
    add_deployment,
    add_node,
    add_pod,
    control_plane,
)
from tests.conftest import eventually

DYNAMIC = {"clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]},
           "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
STATIC = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                "weightPreference": {"staticWeightList": [
                                    {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1}]}}}
NGINX = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx"}


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
                          cool_down: CoolDown | None = None) -> tuple[Descheduler, SharedInformer]:
    bindings = SharedInformer(plane.host_client, RESOURCE_BINDINGS)
    task = asyncio.create_task(bindings.run())
    plane_tasks.append(task)
    await asyncio.wait_for(bindings.wait_for_sync(), 10)
    estimator = EstimatorClient(plane.registry, timeout=3.0)
    events = EventRecorder(plane.host_client, "karmada-descheduler")
    return Descheduler(plane.host_client, bindings.store, estimator.unschedulable_replicas, events,
                       interval=1.0, threshold=threshold, dry_run=dry_run, cool_down=cool_down), bindings


plane_tasks: list[asyncio.Task[None]] = []


async def stop_informers() -> None:
    for task in plane_tasks:
        task.cancel()
    await asyncio.gather(*plane_tasks, return_exceptions=True)
    plane_tasks.clear()


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
    async with control_plane() as plane:
        try:
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
        finally:
            await stop_informers()


async def test_threshold_is_respected() -> None:
    async with control_plane() as plane:
        try:
            await seed_nginx(plane, stuck_for=timedelta(minutes=1))
            descheduler, bindings = await descheduler_for(plane, threshold=300.0)
            assert await cycle_until_synced(descheduler, bindings, plane) == []
            assert await binding_clusters(plane) == {"member1": 1, "member2": 1, "member3": 1}
        finally:
            await stop_informers()


async def test_static_weights_are_not_descheduled() -> None:
    async with control_plane() as plane:
        try:
            await seed_nginx(plane, stuck_for=timedelta(minutes=10), placement=STATIC)
            descheduler, bindings = await descheduler_for(plane)
            assert await cycle_until_synced(descheduler, bindings, plane) == []
        finally:
            await stop_informers()


async def test_never_below_ready_replicas() -> None:
    async with control_plane() as plane:
        try:
            # member1: 3 assigned, all 3 pods stuck, but the binding reports 2 ready → target 2, not 0.
            await seed_nginx(plane, stuck_for=timedelta(minutes=10),
                             clusters={"member1": 3, "member2": 1, "member3": 1},
                             ready={"member1": 2, "member2": 1, "member3": 1})
            descheduler, bindings = await descheduler_for(plane)
            await cycle_until_synced(descheduler, bindings, plane)
            assert await binding_clusters(plane) == {"member1": 2, "member2": 1, "member3": 1}
        finally:
            await stop_informers()


async def test_an_unreachable_member_does_not_stop_the_others() -> None:
    async with control_plane() as plane:
        try:
            await seed_nginx(plane, stuck_for=timedelta(minutes=10), ready={"member1": 0, "member2": 1,
                                                                            "member3": 0})
            descheduler, bindings = await descheduler_for(plane)
            await plane.wait_synced("member1", "member2", "member3")
            await plane.members["member3"].stop()  # member3 reports 0 ready and cannot be asked
            outcomes = await cycle_until_synced_partial(descheduler, bindings)
            assert outcomes and await binding_clusters(plane) == {"member1": 0, "member2": 1, "member3": 1}
        finally:
            await stop_informers()


async def cycle_until_synced_partial(descheduler: Descheduler, bindings: SharedInformer) -> list[Any]:
    async def cached() -> bool:
        return "default/nginx-deployment" in bindings.store

    await eventually(cached)
    return await descheduler.cycle()


async def test_dry_run_writes_nothing() -> None:
    async with control_plane() as plane:
        try:
            await seed_nginx(plane, stuck_for=timedelta(minutes=10))
            before = await plane.host_client.get(RESOURCE_BINDINGS, "nginx-deployment", "default")
            descheduler, bindings = await descheduler_for(plane, dry_run=True)
            outcomes = await cycle_until_synced(descheduler, bindings, plane)
            assert [o.written for o in outcomes] == [False]
            after = await plane.host_client.get(RESOURCE_BINDINGS, "nginx-deployment", "default")
            assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        finally:
            await stop_informers()


@pytest.mark.slow
async def test_karmada_descheduler_process_does_the_seed_example(tmp_path: Path) -> None:
    async with control_plane() as plane:
        await seed_nginx(plane, stuck_for=timedelta(minutes=10))
        kubeconfig = tmp_path / "karmada.config"
        write_kubeconfig(kubeconfig, {"karmada-apiserver": plane.host.url}, "karmada-apiserver")
        log = tmp_path / "descheduler.log"
        with log.open("wb") as out:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "descheduler", "--kubeconfig", str(kubeconfig), "--leader-elect=false",
                "--descheduling-interval=1s", "--unschedulable-threshold=5m", "--metrics-bind-address=0",
                "--health-probe-bind-address=0", stdout=out, stderr=out, env=dict(os.environ))
        try:
            async def descheduled() -> bool:
                return (await binding_clusters(plane)).get("member1") == 0

            await eventually(descheduled, timeout=30)
        finally:
            proc.terminate()
            assert await asyncio.wait_for(proc.wait(), 10) == 0, log.read_text()
