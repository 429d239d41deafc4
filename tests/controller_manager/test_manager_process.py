"""Two replicas of a real component process (examples/configmap_stamper.py) with leader election.

These run the example controller as separate processes against the dev API server, so
signals, exit codes and the lease hand-over are the real ones.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.support import free_port
from devplane.apiserver.server import ApiServer
from devplane.kubeconfig import write_kubeconfig
from tests.conftest import eventually

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "configmap_stamper.py"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/karmada-system/leases/configmap-stamper"


@dataclass
class Replica:
    process: asyncio.subprocess.Process
    metrics_port: int
    health_port: int

    async def is_leader(self) -> bool:
        try:
            async with aiohttp.ClientSession() as h, h.get(f"http://127.0.0.1:{self.metrics_port}/metrics") as r:
                body = await r.text()
        except aiohttp.ClientError:
            return False
        for family in text_string_to_metric_families(body):
            for sample in family.samples:
                if sample.name == "leader_election_master_status" and sample.labels.get("name") == \
                        "configmap-stamper":
                    return sample.value == 1
        return False


@pytest.fixture
async def kubeconfig(server: ApiServer, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, {"dev": server.url}, "dev")
    async with aiohttp.ClientSession(base_url=server.url) as h, \
            h.post("/api/v1/namespaces", json={"metadata": {"name": "karmada-system"}}) as r:
        assert r.status in (201, 409)
    return path


@pytest.fixture
async def replicas() -> AsyncIterator[list[Replica]]:
    """The processes a test launched; whatever is still running at the end is killed."""
    started: list[Replica] = []
    yield started
    for replica in started:
        if replica.process.returncode is None:
            replica.process.kill()
            await replica.process.wait()


async def launch(replicas: list[Replica], kubeconfig: Path, *extra: str, stderr: int = asyncio.subprocess.DEVNULL
                 ) -> Replica:
    metrics, health = free_port(), free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE), "--kubeconfig", str(kubeconfig),
        "--metrics-bind-address", f"127.0.0.1:{metrics}", "--health-probe-bind-address", f"127.0.0.1:{health}",
        *extra, stdout=asyncio.subprocess.DEVNULL, stderr=stderr,
        env={**os.environ, "PYTHONPATH": str(EXAMPLE.parents[1])})
    replica = Replica(process, metrics, health)
    replicas.append(replica)
    return replica


async def leaders(replicas: list[Replica]) -> list[Replica]:
    return [r for r in replicas if r.process.returncode is None and await r.is_leader()]


async def lease(http: aiohttp.ClientSession) -> dict[str, Any]:
    async with http.get(LEASE) as r:
        assert r.status == 200
        result: dict[str, Any] = await r.json()
        return result


@pytest.mark.slow
async def test_exactly_one_leader_and_sigterm_hands_over_within_3s(
        replicas: list[Replica], kubeconfig: Path, http: aiohttp.ClientSession) -> None:
    first = await launch(replicas, kubeconfig)  # default timings: 15s / 10s / 2s
    await eventually(lambda: _one_leader(replicas), timeout=20)
    second = await launch(replicas, kubeconfig)
    await eventually(lambda: _ready(second), timeout=20)
    # the standby stays a standby: sampled until the leader has renewed once more (a retry period, in which
    # the standby polled the Lease too)
    renewed_before = (await lease(http))["spec"]["renewTime"]
    seen: list[list[int]] = []

    async def leader_renewed() -> bool:
        seen.append([r.process.pid for r in await leaders(replicas)])
        return bool((await lease(http))["spec"]["renewTime"] != renewed_before)

    await eventually(leader_renewed, timeout=10, interval=0.2)
    assert all(pids == [first.process.pid] for pids in seen), seen

    # only the leader does the work
    async with http.post("/api/v1/namespaces/default/configmaps",
                         json={"metadata": {"name": "one"}, "data": {"a": "1", "b": "2"}}) as r:
        assert r.status == 201
    await eventually(lambda: _stamped(http, "one", "2"), timeout=10)

    first.process.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    assert await asyncio.wait_for(first.process.wait(), 10) == 0  # graceful: exit 0
    released = await lease(http)
    await eventually(lambda: _leads(second), timeout=10)
    handover = time.monotonic() - sent
    assert handover < 3.0, f"hand-over took {handover:.2f}s"
    assert (await lease(http))["spec"]["leaseTransitions"] >= released["spec"].get("leaseTransitions", 0)

    async with http.post("/api/v1/namespaces/default/configmaps",
                         json={"metadata": {"name": "two"}, "data": {"a": "1"}}) as r:
        assert r.status == 201
    await eventually(lambda: _stamped(http, "two", "1"), timeout=10)


async def test_sigterm_stops_a_component_whose_stderr_reader_went_away(
        replicas: list[Replica], kubeconfig: Path) -> None:
    """``... 2>&1 | head`` or a log collector that died: every log line now fails (a broken pipe). The signal
    handler's own line must not stop the shutdown it announces: exit 0, as with a working stderr."""
    replica = await launch(replicas, kubeconfig, stderr=asyncio.subprocess.PIPE)
    await eventually(lambda: _ready(replica), timeout=20)
    assert replica.process.stderr is not None
    replica.process._transport.get_pipe_transport(2).close()  # type: ignore[attr-defined]  # the reader goes
    replica.process.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(replica.process.wait(), 15) == 0


@pytest.mark.slow
async def test_killed_leader_is_replaced_within_lease_duration_plus_retry_period(
        replicas: list[Replica], kubeconfig: Path, http: aiohttp.ClientSession) -> None:
    timings = ("--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s",
               "--leader-elect-retry-period=500ms")
    first = await launch(replicas, kubeconfig, *timings)
    await eventually(lambda: _one_leader(replicas), timeout=20)
    second = await launch(replicas, kubeconfig, *timings)
    await eventually(lambda: _ready(second), timeout=20)
    before = (await lease(http))["spec"].get("leaseTransitions", 0)
    first.process.kill()  # no chance to release
    killed = time.monotonic()
    await first.process.wait()
    await eventually(lambda: _leads(second), timeout=15)
    took = time.monotonic() - killed
    assert took <= 3.0 + 0.5 + 0.5, f"take-over took {took:.2f}s"  # lease + retry period (+ scheduling slack)
    assert (await lease(http))["spec"]["leaseTransitions"] == before + 1


@pytest.mark.slow
async def test_lost_lease_exits_non_zero(replicas: list[Replica], kubeconfig: Path,
                                         http: aiohttp.ClientSession) -> None:
    leader = await launch(replicas, kubeconfig, "--leader-elect-lease-duration=3s",
                          "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms")
    await eventually(lambda: _one_leader(replicas), timeout=20)
    current = await lease(http)
    current["spec"]["holderIdentity"] = "someone-else"
    current["spec"]["leaseDurationSeconds"] = 60
    async with http.put(LEASE, json=current) as r:
        assert r.status == 200
    assert await asyncio.wait_for(leader.process.wait(), 15) == 1


async def test_bad_flag_value_exits_2_before_starting(kubeconfig: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE), "--kubeconfig", str(kubeconfig), "--rate-limiter-base-delay", "soon",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(EXAMPLE.parents[1])})
    _, err = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 2
    assert b'invalid duration "soon"' in err


async def test_a_metrics_port_in_use_exits_1_with_one_line_naming_the_flag(kubeconfig: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = await asyncio.create_subprocess_exec(
            sys.executable, str(EXAMPLE), "--kubeconfig", str(kubeconfig), "--metrics-bind-address",
            f"127.0.0.1:{port}", "--health-probe-bind-address", "0",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(EXAMPLE.parents[1])})
        out, err = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 1
    logs = (out + err).decode()
    assert f"cannot listen on 127.0.0.1:{port} (--metrics-bind-address): address already in use" in logs.lower()
    assert "Traceback" not in logs


async def _one_leader(replicas: list[Replica]) -> bool:
    return len(await leaders(replicas)) == 1


async def _leads(replica: Replica) -> bool:
    return await replica.is_leader()


async def _ready(replica: Replica) -> bool:
    try:
        async with aiohttp.ClientSession() as h, h.get(f"http://127.0.0.1:{replica.health_port}/readyz") as r:
            return r.status == 200
    except aiohttp.ClientError:
        return False


async def _stamped(http: aiohttp.ClientSession, name: str, keys: str) -> bool:
    async with http.get(f"/api/v1/namespaces/default/configmaps/{name}") as r:
        obj = await r.json()
    return bool((obj["metadata"].get("annotations") or {}).get("example.io/keys") == keys)
