"""Fault (e) of ``benchmarks/faults.py``: a member cluster's API server restarted during descheduling cycles.

A host dev API server and two member dev API servers (``member1`` on its own ``--data-dir``, so that
it can be SIGKILLed and started again on its data); the real ``karmada-descheduler`` runs against the
host with ``--descheduling-interval=1s``, its estimator reading the members through each Cluster's
``apiEndpoint`` and token Secret. ``--member-workloads`` Deployments (3 replicas: 2 in member1, 1 in
member2, dynamically weighted) fall in three groups, by what member1's pods say:

- ``healthy``  Running all along: descheduling any of them is wrong;
- ``flip``     PodScheduled=False for a little less than the threshold, then set Running just before
               member1 is killed. A cache that missed that update and is used again before a relist
               would see them unschedulable past the threshold during the outage: wrong;
- ``stuck``    PodScheduled=False for longer than the threshold all along: descheduled, rightly (the
               proof that the descheduler works in this run).

member1 is killed ``--restart-after`` seconds (6) and started again. Printed: the replicas
descheduled from ``healthy`` and ``flip`` (on stale or partial data: must be 0), those from ``stuck``,
and the seconds from the restart until the descheduler's estimator reached member1 again.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import re
import signal
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import client as k8s

from benchmarks.rebalancer import scrape
from benchmarks.support import (
    BenchError,
    ServerProcess,
    child_env,
    die_with_parent,
    free_port,
    log_tail,
    run_server,
    stop_process,
)
from controller_manager.client import KubeClient
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from karmada_api.resources import CLUSTERS, RESOURCE_BINDINGS
from kube_api.resources import DEPLOYMENTS, NAMESPACES, NODES, PODS, REPLICA_SETS, SECRETS
from kube_api.timeutil import format_time

NAMESPACE = "default"
SECRET_NAMESPACE = "karmada-cluster"
THRESHOLD = 20.0  # --unschedulable-threshold of the run, seconds
FLIP_SHORT_OF = 3.0  # the flip group's pods are this many seconds short of the threshold when member1 dies
GROUPS = ("healthy", "flip", "stuck")
DYNAMIC = {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
           "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}


@dataclass
class MemberResult:
    """What fault (e) found."""

    stale_descheduled: int  # replicas of the healthy and flip groups descheduled: must be 0
    rightly_descheduled: int  # replicas of the stuck group
    recovery_seconds: float  # from member1's restart until the estimator reached it again
    notes: list[str]


def client_for(url: str) -> KubeClient:
    return KubeClient(k8s.ApiClient(k8s.Configuration(host=url)), qps=0)


def group_of(i: int) -> str:
    return GROUPS[i % len(GROUPS)]


def pod_status(*, unschedulable_since: datetime | None) -> dict[str, Any]:
    if unschedulable_since is None:
        return {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True",
                                                    "lastTransitionTime": format_time(datetime.now(UTC))}]}
    return {"phase": "Pending", "conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
        "message": "0/1 nodes are available: 1 Insufficient cpu.",
        "lastTransitionTime": format_time(unschedulable_since)}]}


async def add_workload(member: KubeClient, app: str, replicas: int, *, node: str,
                       unschedulable_since: datetime | None) -> None:
    """A Deployment, its ReplicaSet and ``replicas`` pods (Running on ``node``, or unschedulable since then)."""
    container = {"name": "main", "image": "nginx", "resources": {"requests": {"cpu": "100m"}}}
    template: dict[str, Any] = {"metadata": {"labels": {"app": app}}, "spec": {"containers": [container]}}
    deployment = await member.create(DEPLOYMENTS, {"metadata": {"name": app, "namespace": NAMESPACE},
                                                   "spec": {"replicas": replicas,
                                                            "selector": {"matchLabels": {"app": app}},
                                                            "template": template}})
    labels = {"app": app, "pod-template-hash": "5d8f7c"}
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": app,
             "uid": deployment["metadata"]["uid"], "controller": True}
    rs = await member.create(REPLICA_SETS, {
        "metadata": {"name": f"{app}-5d8f7c", "namespace": NAMESPACE, "labels": labels, "ownerReferences": [owner]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                 "template": {**template, "metadata": {"labels": labels}}}})
    rs_owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"],
                "uid": rs["metadata"]["uid"], "controller": True}
    for k in range(replicas):
        spec = {**template["spec"], **({"nodeName": node} if unschedulable_since is None else {})}
        name = f"{app}-5d8f7c-{k}"
        await member.create(PODS, {"metadata": {"name": name, "namespace": NAMESPACE, "labels": labels,
                                                "ownerReferences": [rs_owner]}, "spec": spec})
        await member.patch_status(PODS, name, {"status": pod_status(unschedulable_since=unschedulable_since)},
                                  namespace=NAMESPACE)


async def set_pods(member: KubeClient, app: str, replicas: int, *, node: str,
                   unschedulable_since: datetime | None) -> None:
    for k in range(replicas):
        name = f"{app}-5d8f7c-{k}"
        if unschedulable_since is None:
            await member.patch(PODS, name, {"spec": {"nodeName": node}}, namespace=NAMESPACE)
        await member.patch_status(PODS, name, {"status": pod_status(unschedulable_since=unschedulable_since)},
                                  namespace=NAMESPACE)


async def register(host: KubeClient, name: str, endpoint: str) -> None:
    token = base64.b64encode(f"token-of-{name}".encode()).decode()
    await host.create(SECRETS, {"metadata": {"name": name, "namespace": SECRET_NAMESPACE}, "data": {"token": token}})
    await host.create(CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                 "metadata": {"name": name},
                                 "spec": {"syncMode": "Push", "apiEndpoint": endpoint,
                                          "secretRef": {"namespace": SECRET_NAMESPACE, "name": name}}})


async def add_binding(host: KubeClient, app: str) -> None:
    clusters = {"member1": 2, "member2": 1}
    await host.create(RESOURCE_BINDINGS, {
        "metadata": {"name": f"{app}-deployment", "namespace": NAMESPACE,
                     "annotations": {APPLIED_PLACEMENT_ANNOTATION: json.dumps(DYNAMIC)}},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NAMESPACE, "name": app},
                 "replicas": 3, "clusters": [{"name": n, "replicas": r} for n, r in clusters.items()]}})
    await host.patch_status(RESOURCE_BINDINGS, f"{app}-deployment", {"status": {"aggregatedStatus": [
        {"clusterName": "member1", "applied": True, "status": {"readyReplicas": 0}},
        {"clusterName": "member2", "applied": True, "status": {"readyReplicas": 1}}]}}, namespace=NAMESPACE)


async def member1_replicas(host: KubeClient, workloads: int) -> dict[str, int]:
    """member1's replicas per workload, as the bindings say now."""
    items = (await host.list(RESOURCE_BINDINGS, NAMESPACE))["items"]
    found = {b["spec"]["resource"]["name"]: next((c.get("replicas", 0) for c in b["spec"].get("clusters") or []
                                                  if c["name"] == "member1"), 0) for b in items}
    return {f"app-{i:03d}": found.get(f"app-{i:03d}", 0) for i in range(workloads)}


async def reachable(probes: aiohttp.ClientSession, metrics_url: str) -> bool:
    with contextlib.suppress(aiohttp.ClientError, OSError, BenchError):
        for name, labels, value in await scrape(probes, metrics_url):
            if name == "estimator_member_reachable" and 'cluster="member1"' in labels:
                return value == 1
    return False


async def cycles(probes: aiohttp.ClientSession, metrics_url: str) -> int:
    """Descheduling cycles the descheduler has finished (its cycle-duration histogram's count)."""
    with contextlib.suppress(aiohttp.ClientError, OSError):
        async with probes.get(metrics_url + "/metrics") as resp:
            text = await resp.text()
        found = re.search(r"^descheduler_cycle_duration_seconds_count (\S+)$", text, re.M)
        if found:
            return int(float(found.group(1)))
    return 0


async def more_cycles(what: str, probes: aiohttp.ClientSession, metrics_url: str, count: int,
                      deadline: float) -> None:
    """Wait until ``count`` more cycles than now have finished."""
    target = await cycles(probes, metrics_url) + count

    async def done() -> bool:
        return await cycles(probes, metrics_url) >= target

    await wait_for(what, deadline, done)


async def wait_for(what: str, deadline: float, check: Any) -> float:
    while time.monotonic() < deadline:
        if await check():
            return time.monotonic()
        await asyncio.sleep(0.2)
    raise BenchError(f"{what}: not before the deadline")


@contextlib.asynccontextmanager
async def descheduler(kubeconfig: Path, log_path: Path) -> Any:
    metrics = free_port()
    cmd = [sys.executable, "-m", "descheduler", "--kubeconfig", str(kubeconfig), "--leader-elect=false",
           "--descheduling-interval=1s", f"--unschedulable-threshold={THRESHOLD:.0f}s",
           f"--metrics-bind-address=127.0.0.1:{metrics}", "--health-probe-bind-address=0"]
    with log_path.open("wb") as log_file:
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=log_file, stderr=log_file,
                                                    stdin=asyncio.subprocess.DEVNULL, env=child_env(),
                                                    preexec_fn=die_with_parent)
    try:
        yield proc, f"http://127.0.0.1:{metrics}"
    finally:
        await stop_process(proc)


async def member_fault(args: argparse.Namespace, tmp: Path) -> MemberResult:
    """Fault (e); see the module docstring."""
    from devplane.kubeconfig import write_kubeconfig  # noqa: PLC0415

    workloads = args.member_workloads
    deadline = time.monotonic() + args.run_time
    port1, data1 = free_port(), tmp / "member1-data"
    async with contextlib.AsyncExitStack() as stack:
        host_server = await stack.enter_async_context(run_server(tmp / "host.log"))
        member1: ServerProcess = await stack.enter_async_context(
            run_server(tmp / "member1-1.log", "--no-karmada", "--port", str(port1), "--data-dir", str(data1)))
        member2 = await stack.enter_async_context(run_server(tmp / "member2.log", "--no-karmada"))
        host, m1, m2 = client_for(host_server.url), client_for(member1.url), client_for(member2.url)
        for kube in (host, m1, m2):
            stack.push_async_callback(kube.close)
        await host.create(NAMESPACES, {"metadata": {"name": SECRET_NAMESPACE}})
        await register(host, "member1", member1.url)
        await register(host, "member2", member2.url)
        now = datetime.now(UTC)
        for member in (m1, m2):
            await member.create(NODES, {"metadata": {"name": "node-a"}})
            capacity = {"cpu": "64", "memory": "256Gi", "pods": "500"}
            await member.patch_status(NODES, "node-a", {"status": {"capacity": capacity, "allocatable": capacity}})
        for i in range(workloads):
            app, group = f"app-{i:03d}", group_of(i)
            since = now - timedelta(minutes=10) if group == "stuck" else None  # flip: Running until the fault
            await add_workload(m1, app, 2, node="node-a", unschedulable_since=since)
            await add_workload(m2, app, 1, node="node-a", unschedulable_since=None)
            await add_binding(host, app)
        before = await member1_replicas(host, workloads)

        kubeconfig = tmp / "karmada.config"
        write_kubeconfig(kubeconfig, {"karmada-apiserver": host_server.url}, "karmada-apiserver")
        probes = await stack.enter_async_context(aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)))
        proc, metrics_url = await stack.enter_async_context(descheduler(kubeconfig, tmp / "descheduler.log"))
        await wait_for("member1 reachable", deadline, lambda: reachable(probes, metrics_url))

        async def stuck_descheduled() -> bool:
            now_replicas = await member1_replicas(host, workloads)
            return all(now_replicas[a] < before[a] for a in before if group_of(int(a[4:])) == "stuck")

        await wait_for("the stuck group descheduled", deadline, stuck_descheduled)
        # The flip group: a little short of the threshold, then Running (the truth), then member1 dies.
        short = datetime.now(UTC) - timedelta(seconds=THRESHOLD - FLIP_SHORT_OF)
        flips = [f"app-{i:03d}" for i in range(workloads) if group_of(i) == "flip"]
        for app in flips:
            await set_pods(m1, app, 2, node="node-a", unschedulable_since=short)
        # a cycle that started after those writes: the estimator's cache holds them, unschedulable
        await more_cycles("a cycle after the flip", probes, metrics_url, 2, deadline)
        for app in flips:
            await set_pods(m1, app, 2, node="node-a", unschedulable_since=None)
        member1.proc.send_signal(signal.SIGKILL)
        await member1.proc.wait()
        await asyncio.sleep(args.restart_after)
        await stack.enter_async_context(
            run_server(tmp / "member1-2.log", "--no-karmada", "--port", str(port1), "--data-dir", str(data1)))
        restarted = time.monotonic()
        back = await wait_for("member1 reachable again", deadline, lambda: reachable(probes, metrics_url))
        recovery = back - restarted
        await more_cycles("three cycles with member1 answering", probes, metrics_url, 3, deadline)
        if proc.returncode is not None:
            raise BenchError(f"the descheduler exited ({proc.returncode}):\n{log_tail(tmp / 'descheduler.log')}")
        after = await member1_replicas(host, workloads)
    lost = {group: sum(before[a] - after[a] for a in before if group_of(int(a[4:])) == group) for group in GROUPS}
    note = (f"descheduled rightly (stuck past the threshold): {lost['stuck']} replicas; "
            f"wrongly: healthy {lost['healthy']}, flip {lost['flip']}")
    return MemberResult(lost["healthy"] + lost["flip"], lost["stuck"], recovery, [note])
