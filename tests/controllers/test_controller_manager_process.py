"""The karmada-controller-manager process: leader election, outages, missing CRDs.

The API server runs in the test process (so faults can be injected); the controller-managers
are real subprocesses started as users start them.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.support import free_port, stop_process
from devplane.apiserver.server import ApiServer
from devplane.kubeconfig import write_kubeconfig
from tests.conftest import eventually
from tests.controllers.test_bindingstatus import applied_work, create_binding, create_deployment, wait_fully_applied
from tests.controllers.test_preserve import RB, scheduled_binding
from tests.controllers.test_preserve import create as create_preserve_rebalancer
from tests.controllers.test_workloadrebalancer import WR, create_rebalancer, deploy_ref, make_binding

LEASE = "karmada-rebalance-controller-manager"  # not Karmada's karmada-controller-manager: both run side by side
FAST_ELECTION = ("--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
                 "--leader-elect-retry-period=500ms")


@dataclass
class Process:
    proc: asyncio.subprocess.Process
    metrics_port: int
    log: Path

    async def metric(self, metric: str, **labels: str) -> float:
        try:
            async with aiohttp.ClientSession() as h, h.get(f"http://127.0.0.1:{self.metrics_port}/metrics") as r:
                body = await r.text()
        except aiohttp.ClientError:
            return -1.0
        for family in text_string_to_metric_families(body):
            for sample in family.samples:
                if sample.name == metric and all(sample.labels.get(k) == v for k, v in labels.items()):
                    return float(sample.value)
        return 0.0

    async def leads(self) -> bool:
        return await self.metric("leader_election_master_status", name=LEASE) == 1


@pytest.fixture
async def launch(tmp_path: Path) -> AsyncIterator[Any]:
    started: list[Process] = []

    async def start(server_url: str, *extra: str) -> Process:
        kubeconfig = tmp_path / f"kubeconfig-{len(started)}"
        write_kubeconfig(kubeconfig, {"karmada-apiserver": server_url}, "karmada-apiserver")
        metrics = free_port()
        log = tmp_path / f"cm-{len(started)}.log"
        with log.open("wb") as out:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "controller_manager", "--kubeconfig", str(kubeconfig),
                "--metrics-bind-address", f"127.0.0.1:{metrics}", "--health-probe-bind-address", "0",
                "--rate-limiter-max-delay=2s", *extra, stdout=out, stderr=out, env=dict(os.environ))
        process = Process(proc, metrics, log)
        started.append(process)
        return process

    yield start
    for process in started:
        await stop_process(process.proc, grace=10)


async def karmada_system(http: aiohttp.ClientSession) -> None:
    async with http.post("/api/v1/namespaces", json={"metadata": {"name": "karmada-system"}}) as r:
        assert r.status in (201, 409)


async def done(http: aiohttp.ClientSession, name: str) -> bool:
    async with http.get(f"{WR}/{name}") as r:
        wr = await r.json()
    return bool((wr.get("status") or {}).get("finishTime"))


@pytest.mark.slow
async def test_only_the_leader_writes_and_a_standby_finishes_pending_work(
        server: ApiServer, http: aiohttp.ClientSession, launch: Any) -> None:
    await karmada_system(http)
    first = await launch(server.url, *FAST_ELECTION)
    await eventually(first.leads, timeout=20)
    second = await launch(server.url, *FAST_ELECTION)
    await eventually(lambda: _serving(second), timeout=20)

    await make_binding(http, "Deployment", "foo")
    await create_rebalancer(http, "one", [deploy_ref("foo")])
    await eventually(lambda: done(http, "one"), timeout=20)
    assert await second.metric("controller_runtime_reconcile_total", controller="workload-rebalancer",
                               result="success") == 0  # the standby did nothing

    # Kill the leader while a rebalancer is pending (its binding write keeps failing), then let it go.
    await make_binding(http, "Deployment", "bar")
    fault = server.inject_fault("PUT", "/resourcebindings/bar-deployment", code=500, times=10_000)
    await create_rebalancer(http, "two", [deploy_ref("bar")])
    await eventually(lambda: fault.times <= 10_000 - 2, timeout=20)
    first.proc.kill()
    await first.proc.wait()
    fault.times = 0
    await eventually(second.leads, timeout=20)
    await eventually(lambda: done(http, "two"), timeout=20)



@pytest.mark.slow
async def test_a_missing_lease_namespace_is_warned_once_and_unready_until_created(
        server: ApiServer, http: aiohttp.ClientSession, launch: Any) -> None:
    health = free_port()
    cm = await launch(server.url, *FAST_ELECTION, f"--health-probe-bind-address=127.0.0.1:{health}", "--v=4")

    async def readyz() -> tuple[int, str]:
        try:
            async with aiohttp.ClientSession() as h, h.get(f"http://127.0.0.1:{health}/readyz") as r:
                return r.status, await r.text()
        except aiohttp.ClientError as exc:  # not listening yet
            return 0, repr(exc)

    async def unready_for_the_namespace() -> bool:
        status, body = await readyz()
        assert status == 500, body
        assert '[-]leader-election failed: namespace "karmada-system" not found' in body, body
        assert f"karmada-system/{LEASE}" in body, body
        return True

    await eventually(unready_for_the_namespace, timeout=20)

    def rounds_and_warnings() -> tuple[int, int]:
        text = cm.log.read_text()
        return text.count("leader election namespace still missing"), text.count("namespace does not exist")

    await eventually(lambda: rounds_and_warnings()[0] >= 3, timeout=20)  # many rounds...
    assert rounds_and_warnings()[1] == 1  # ...one warning
    [warning] = [line for line in cm.log.read_text().splitlines() if "namespace does not exist" in line]
    assert "warning" in warning and "namespace=karmada-system" in warning, warning
    assert "creating the lease failed" not in cm.log.read_text()
    assert not await cm.leads()

    await karmada_system(http)
    await eventually(cm.leads, timeout=20)

    async def ready() -> bool:
        status, body = await readyz()
        return status == 200 and body == "ok"

    await eventually(ready, timeout=20)
    async with http.get(f"/apis/coordination.k8s.io/v1/namespaces/karmada-system/leases/{LEASE}") as r:
        assert r.status == 200
        assert (await r.json())["spec"]["holderIdentity"]
    assert cm.proc.returncode is None


async def _serving(process: Process) -> bool:
    return await process.metric("leader_election_master_status", name=LEASE) == 0


async def _outage_felt(cm: Process, retries_before: float) -> bool:
    """The outage has lasted through the process's retries: each informer failed to relist several times (its
    backoff grew past a few seconds) and the pending reconcile was retried at its 2 s cap several times."""
    failed_lists = await cm.metric("rest_client_requests_total", code="<error>", method="GET")
    retries = await cm.metric("workqueue_retries_total", name="workload-rebalancer")
    return failed_lists >= 12 and retries >= retries_before + 5


@pytest.mark.slow
async def test_survives_an_api_server_outage_longer_than_its_backoffs(tmp_path: Path, launch: Any) -> None:
    data = tmp_path / "data"
    first = ApiServer(data_dir=data)
    await first.start()
    port = first.port
    second: ApiServer | None = None
    try:
        async with aiohttp.ClientSession(base_url=first.url) as http:
            await make_binding(http, "Deployment", "foo")
            cm = await launch(first.url, "--leader-elect=false")
            fault = first.inject_fault("PUT", "/resourcebindings/foo-deployment", code=503,
                                       reason="ServiceUnavailable", times=10_000)
            await create_rebalancer(http, "pending", [deploy_ref("foo")])
            await eventually(lambda: fault.times <= 10_000 - 2, timeout=20)
        retries_before = await cm.metric("workqueue_retries_total", name="workload-rebalancer")
        await first.stop()
        await eventually(lambda: _outage_felt(cm, retries_before), timeout=60)
        assert cm.proc.returncode is None, cm.log.read_text()
        second = ApiServer(data_dir=data, port=port)
        await second.start()
        async with aiohttp.ClientSession(base_url=second.url) as http:
            await eventually(lambda: done(http, "pending"), timeout=90)
        assert cm.proc.returncode is None
    finally:
        if second is not None:
            await second.stop()
        await first.stop()


async def test_a_missing_crd_is_reported_and_the_other_controllers_keep_working(
        server: ApiServer, http: aiohttp.ClientSession, launch: Any) -> None:
    async with http.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                           "workloadrebalancers.apps.karmada.io") as r:
        assert r.status == 200
    cm = await launch(server.url, "--leader-elect=false", "--cluster-cache-sync-timeout=2s")
    await create_deployment(http)
    binding = await create_binding(http, "binding-1", ["member1"])
    await applied_work(http, binding, "member1", {"replicas": 3})
    await wait_fully_applied(http, binding, "True", items=1)  # bindingStatus works

    async def reported() -> bool:
        text = cm.log.read_text()
        return "workloadrebalancers.apps.karmada.io" in text and "CustomResourceDefinition" in text

    await eventually(reported, timeout=20)
    assert cm.proc.returncode is None


async def test_preserve_mode_flags_reach_the_rebalancer(server: ApiServer, http: aiohttp.ClientSession,
                                                        launch: Any) -> None:
    """With --enable-preserve-available-replicas the process reads member clusters; none is registered here,
    so the estimator cannot judge member1 or member2 and, with no retry allowed, the workload fails closed."""
    await karmada_system(http)
    await launch(server.url, "--leader-elect=false", "--enable-preserve-available-replicas",
                 "--preserve-available-replicas-retry-timeout=0s")
    before = await scheduled_binding(http, "web")
    await create_preserve_rebalancer(http, "keep", ["web"])
    await eventually(lambda: done(http, "keep"), timeout=20)
    async with http.get(f"{WR}/keep") as r:
        wr = await r.json()
    assert [(i["result"], i["reason"]) for i in wr["status"]["observedWorkloads"]] == [
        ("Failed", "EstimatorUnavailable: no unschedulable-replica estimate for member1, member2 "
                   "(for longer than the retry timeout, 0s)")]
    async with http.get(f"{RB}/web-deployment") as r:
        assert (await r.json())["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
