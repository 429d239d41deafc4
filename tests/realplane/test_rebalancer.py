"""Our WorkloadRebalancer controller in place of Karmada's, with Karmada's own scheduler doing the rescheduling."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import anyio

from benchmarks.refplane import KARMADA_API_PORT, RefPlane, listening
from controller_manager.client import KubeClient
from karmada_api.resources import WORKLOAD_REBALANCERS
from kube_api.resources import PODS
from tests.conftest import eventually
from tests.realplane.conftest import Ours
from tests.realplane.support import (
    SCHEDULED,
    assigned,
    binding_of,
    delete_quietly,
    fresh_namespace,
    policy,
    propagate,
    rebalancer,
    results,
    run_kubectl,
    set_taint,
    wait_assigned,
    wait_finished,
)

TUTORIAL_TAINT = {"key": "workload-rebalancer-test", "effect": "NoExecute"}


async def test_tutorial_replicas_come_back_to_the_recovered_cluster(ours: Ours, karmada: KubeClient,
                                                                   member1: KubeClient) -> None:
    """The tutorial: a NoExecute taint moves foo to member2; once it is gone, a WorkloadRebalancer spreads
    foo over both members again, and its status says Successful."""
    ns = await fresh_namespace(karmada, "rp-tutorial")
    await delete_quietly(karmada, WORKLOAD_REBALANCERS, "demo")
    tolerate = [{"key": TUTORIAL_TAINT["key"], "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}]
    await propagate(karmada, ns, ["foo"], 3, policy("default-pp", tolerations=tolerate))
    await wait_assigned(karmada, ns, "foo", lambda a: set(a) == {"member1", "member2"} and sum(a.values()) == 3)

    await set_taint(karmada, "member1", [TUTORIAL_TAINT])
    try:
        await wait_assigned(karmada, ns, "foo", lambda a: a == {"member2": 3})
        # as the tutorial's reader does, wait until the move is over: Karmada's scheduler keeps a cluster
        # out of a binding while a graceful eviction from it is still in progress
        await eventually(lambda: _eviction_done(karmada, ns, "foo"), timeout=SCHEDULED, interval=0.25)
    finally:
        await set_taint(karmada, "member1", [])

    manifest = (f"apiVersion: apps.karmada.io/v1alpha1\nkind: WorkloadRebalancer\nmetadata:\n  name: demo\n"
                f"spec:\n  workloads:\n  - apiVersion: apps/v1\n    kind: Deployment\n    name: foo\n"
                f"    namespace: {ns}\n")
    await run_kubectl(ours.plane, "apply", "-f", "-", stdin=manifest)
    finished = await wait_finished(karmada, "demo")
    assert results(finished) == {f"{ns}/foo": "Successful"}
    binding = await wait_assigned(karmada, ns, "foo", lambda a: set(a) == {"member1", "member2"})
    on_member1 = assigned(binding)["member1"]

    async def pods_on_member1() -> bool:
        pods = (await member1.list(PODS, ns, label_selector="app=foo")).get("items") or []
        return len(pods) == on_member1

    await eventually(pods_on_member1, timeout=SCHEDULED)
    table = await run_kubectl(ours.plane, "get", "workloadrebalancer", "demo", "-o",
                              "jsonpath={.status.observedWorkloads[0].result}")
    assert table == "Successful"
    await karmada.delete(WORKLOAD_REBALANCERS, "demo")


async def test_finished_rebalancer_is_deleted_after_its_ttl(ours: Ours, karmada: KubeClient) -> None:
    ns = await fresh_namespace(karmada, "rp-ttl")
    await propagate(karmada, ns, ["web"], 2)
    await wait_assigned(karmada, ns, "web", lambda a: sum(a.values()) == 2)
    await karmada.create(WORKLOAD_REBALANCERS, rebalancer(ns, [(ns, "web")], ttl=3))
    finished = await wait_finished(karmada, ns)
    assert results(finished) == {f"{ns}/web": "Successful"}

    async def deleted() -> bool:
        return await karmada.get_or_none(WORKLOAD_REBALANCERS, ns) is None

    await eventually(deleted, timeout=30)


async def test_karmada_rebalance_create_waits_for_the_results(ours: Ours, karmada: KubeClient) -> None:
    ns = await fresh_namespace(karmada, "rp-cli")
    await propagate(karmada, ns, ["a", "b"], 2)
    for name in ("a", "b"):
        await wait_assigned(karmada, ns, name, lambda a: sum(a.values()) == 2)

    def create() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rebalancectl", "create", ns, "-n", ns,
                               "--kind", "deploy", "--wait", "--timeout", "1m", "--ttl", "0"],
                              capture_output=True, text=True, timeout=90, check=False,
                              env={**os.environ, "KUBECONFIG": str(ours.plane.karmada_kubeconfig)})

    done = await anyio.to_thread.run_sync(create)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {tuple(line.split()[:2]) for line in done.stdout.splitlines()}
    assert {(f"Deployment.apps/{ns}/a", "Successful"), (f"Deployment.apps/{ns}/b", "Successful")} <= rows, done.stdout
    finished = await wait_finished(karmada, ns)  # the rebalancer is named after the namespace: unique
    assert set(results(finished).values()) == {"Successful"}
    await karmada.delete(WORKLOAD_REBALANCERS, ns)


WORKLOADS = 12
REBALANCERS = 20


async def test_api_server_killed_under_load_fails_no_workload(ours: Ours, karmada: KubeClient) -> None:
    """kube-apiserver SIGKILLed while rebalancers run, then started again: every workload still ends
    Successful (a refused connection, a 503 or the CRDs' early 404s are not answers about the workload)."""
    ns = await fresh_namespace(karmada, "rp-restart")
    names = [f"w{k:02d}" for k in range(WORKLOADS)]
    await propagate(karmada, ns, names, 2)
    for name in names:
        await wait_assigned(karmada, ns, name, lambda a: sum(a.values()) == 2)

    workloads = [(ns, name) for name in names]
    rebalancers = [f"{ns}-{k:02d}" for k in range(REBALANCERS)]
    await asyncio.gather(*(karmada.create(WORKLOAD_REBALANCERS, rebalancer(r, workloads)) for r in rebalancers))
    plane: RefPlane = ours.plane
    plane.send_signal("apiserver-karmada", signal.SIGKILL)
    # started again once its port is free (a copy started sooner cannot bind it and exits); until it serves,
    # clients are refused or get 503s and the CRDs' early 404s
    await eventually(lambda: not listening(KARMADA_API_PORT), timeout=10)
    await anyio.to_thread.run_sync(plane.restart, "apiserver-karmada")
    try:
        outcomes = [results(await wait_finished(karmada, r, timeout=120)) for r in rebalancers]
    finally:
        # Karmada's components exit when they lose their Leases during the outage; their Pods would restart
        await eventually(lambda: _revived(plane), timeout=30, interval=1.0)
    for name, outcome in zip(rebalancers, outcomes, strict=True):
        assert set(outcome.values()) == {"Successful"} and len(outcome) == WORKLOADS, (name, outcome)
    for r in rebalancers:
        await karmada.delete(WORKLOAD_REBALANCERS, r)


async def _eviction_done(karmada: KubeClient, ns: str, name: str) -> bool:
    binding = await binding_of(karmada, ns, name)
    return binding is not None and not binding["spec"].get("gracefulEvictionTasks")


def _revived(plane: RefPlane) -> bool:
    plane.revive()
    return not plane.dead()
