"""Next to a real Karmada: which Leases the two processes take (docs/deploy.md, "Next to Karmada").

Karmada's own karmada-controller-manager keeps running (``--controllers=*,-workloadRebalancer,
-bindingStatus``) and holds the Lease ``karmada-controller-manager``, whose name it cannot change:
ours must lead on a Lease of its own. Our descheduler replaces Karmada's and shares its Lease
``karmada-descheduler`` on purpose: while Karmada's holds it, ours must wait.
Karmada's processes are played by a Lease held by a foreign identity; ours are real subprocesses.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from benchmarks.support import free_port, stop_process
from devplane.apiserver.server import ApiServer
from devplane.kubeconfig import write_kubeconfig
from tests.conftest import eventually
from tests.controllers.test_controller_manager_process import FAST_ELECTION, LEASE, Process, karmada_system

LEASES = "/apis/coordination.k8s.io/v1/namespaces/karmada-system/leases"
KARMADA_HOLDER = "karmada-controller-manager-5d8f7c9b6-x2x4q_6f1c2a8e-1d7b-4e8c-9a55-3b1f0e2d4c6a"


@pytest.fixture
async def start(tmp_path: Path, server: ApiServer) -> AsyncIterator[Any]:
    """Start ``python -m <module>`` (controller_manager or descheduler) against the dev API server."""
    started: list[Process] = []
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, {"karmada-apiserver": server.url}, "karmada-apiserver")

    async def launch(module: str, *extra: str) -> Process:
        metrics = free_port()
        log = tmp_path / f"{module}-{len(started)}.log"
        with log.open("wb") as out:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", module, "--kubeconfig", str(kubeconfig), *FAST_ELECTION,
                "--metrics-bind-address", f"127.0.0.1:{metrics}", "--health-probe-bind-address", "0", *extra,
                stdout=out, stderr=out, env=dict(os.environ))
        process = Process(proc, metrics, log)
        started.append(process)
        return process

    yield launch
    for process in started:
        await stop_process(process.proc, grace=10)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def hold(http: aiohttp.ClientSession, name: str, holder: str) -> dict[str, Any]:
    """A Lease held by one of Karmada's processes, valid for an hour (it keeps renewing it)."""
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name},
             "spec": {"holderIdentity": holder, "leaseDurationSeconds": 3600, "acquireTime": now(),
                      "renewTime": now(), "leaseTransitions": 0}}
    async with http.post(LEASES, json=lease) as r:
        assert r.status == 201, await r.text()
        created: dict[str, Any] = await r.json()
        return created


async def get_lease(http: aiohttp.ClientSession, name: str) -> dict[str, Any]:
    async with http.get(f"{LEASES}/{name}") as r:
        assert r.status == 200, await r.text()
        lease: dict[str, Any] = await r.json()
        return lease


async def test_controller_manager_leads_while_karmadas_holds_its_own_lease(
        http: aiohttp.ClientSession, start: Any) -> None:
    await karmada_system(http)
    karmadas = await hold(http, "karmada-controller-manager", KARMADA_HOLDER)
    ours = await start("controller_manager")
    await eventually(ours.leads, timeout=20)
    assert (await get_lease(http, LEASE))["spec"]["holderIdentity"] not in ("", KARMADA_HOLDER)
    # Karmada's Lease was never touched: its controller-manager keeps running everything else.
    assert await get_lease(http, "karmada-controller-manager") == karmadas


@pytest.mark.slow
async def test_descheduler_waits_while_karmadas_descheduler_holds_the_shared_lease(
        http: aiohttp.ClientSession, start: Any) -> None:
    await karmada_system(http)
    karmadas = await hold(http, "karmada-descheduler", "karmada-descheduler-6b7c8d9f5-q8w2e_0b9e")
    ours = await start("descheduler", "--v=4")

    def rounds_waited() -> int:
        return ours.log.read_text().count("lease is held by another and has not yet expired")

    await eventually(lambda: rounds_waited() >= 3, timeout=20)
    assert await ours.metric("leader_election_master_status", name="karmada-descheduler") == 0
    assert await get_lease(http, "karmada-descheduler") == karmadas

    # Karmada's descheduler scaled to 0: it releases the Lease on its way out, and ours takes over.
    released = dict(karmadas, spec={**karmadas["spec"], "holderIdentity": "", "leaseDurationSeconds": 1})
    async with http.put(f"{LEASES}/karmada-descheduler", json=released) as r:
        assert r.status == 200, await r.text()

    async def leads() -> bool:
        return await ours.metric("leader_election_master_status", name="karmada-descheduler") == 1

    await eventually(leads, timeout=20)
    assert (await get_lease(http, "karmada-descheduler"))["spec"]["holderIdentity"]
