"""Fault (f) of ``benchmarks/faults.py``: a progressive fail-back through a lost create and an API-server restart.

A dev API server on its own ``--data-dir`` (so that it can be SIGKILLed and started again on its data) gets
``--failback-workloads`` (300) workloads evicted from member1 (``benchmarks/failback.py``'s objects: templates
ready, bindings on member2 with the record). The real ``karmada-controller-manager --controllers=clusterFailback
--failback-max-concurrent=20`` talks to it through ``benchmarks/faultproxy.py``, which loses the answer of the
second WorkloadRebalancer create (stored by the server, never heard of by the controller). This process plays
Karmada (each listed workload healthy 0.3 s later, retried while the server is down) and polls what is in
flight. Once a third of the workloads are done, the server is SIGKILLed, down ``--restart-after`` seconds, and
started again on its data with kube-apiserver's restart answers.

Printed: workloads failed back, those listed by two rebalancers (must be 0: a batch repeated), those never
listed or with a record left (must be 0: a batch forgotten), the most in flight (must not exceed the budget),
and the seconds from the restart until all were done.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks import failback, rebalancer
from benchmarks.faultproxy import FaultProxy, Upstream
from benchmarks.support import BenchError, ServerProcess, free_port, run_server
from devplane.kubeconfig import write_kubeconfig

MAX_CONCURRENT = 20
HEAL_DELAY = 0.3
POLL = 0.2
RETRYABLE = (BenchError, aiohttp.ClientError, OSError, TimeoutError)


@dataclass
class FailbackFigures:
    """What fault (f) found: how many workloads were failed back, repeated, forgotten, and the budget kept."""

    workloads: int
    listed_twice: int = 0
    forgotten: int = 0
    most_in_flight: int = 0
    recovery_seconds: float | None = None
    notes: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Every "must" that failed."""
        checks = ((self.listed_twice > 0, f"{self.listed_twice} workloads failed back twice"),
                  (self.forgotten > 0, f"{self.forgotten} workloads forgotten"),
                  (self.most_in_flight > MAX_CONCURRENT,
                   f"{self.most_in_flight} in flight, more than --failback-max-concurrent {MAX_CONCURRENT}"))
        return [message for failed, message in checks if failed]


@dataclass
class Observer:
    """Polls the rebalancers (handing new ones to ``karmada``) and the bindings, riding out the restart."""

    http: aiohttp.ClientSession
    karmada: failback.Karmada
    in_flight: int = 0
    most: int = 0
    recorded: int = -1

    async def poll(self) -> None:
        try:
            for item in (await failback.send(self.http, "GET", failback.WR, None))["items"]:
                self.karmada.rebalancer(item)
            flights = failback.Flights()
            for item in (await failback.send(self.http, "GET", failback.RB, None))["items"]:
                flights.binding("ADDED", item)
        except RETRYABLE:
            return
        self.in_flight, self.recorded = len(flights.in_flight), len(flights.recorded)
        self.most = max(self.most, self.in_flight)

    async def until(self, done: Any, deadline: float, what: str) -> None:
        while not done():
            if time.monotonic() > deadline:
                raise BenchError(f"fail-back: {what} not within the run time ({self.recorded} records left)")
            await self.poll()
            await asyncio.sleep(POLL)


async def failback_fault(args: argparse.Namespace, tmp: Path) -> FailbackFigures:
    n = args.failback_workloads
    figures = FailbackFigures(n)
    port, data = free_port(), tmp / "data"
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + args.run_time

    async def start(number: int, *extra: str) -> ServerProcess:
        return await stack.enter_async_context(run_server(tmp / f"apiserver-{number}.log", "--port", str(port),
                                                          "--data-dir", str(data), *extra))

    async with contextlib.AsyncExitStack() as stack:
        server = await start(1)
        http = await stack.enter_async_context(rebalancer.session(url, args.concurrency))
        await failback.populate(http, n, args.concurrency, args.run_time)
        proxy = await stack.enter_async_context(FaultProxy(Upstream(url)).running())
        proxy.lose_answer("POST", "/workloadrebalancers", after=1)
        kubeconfig = tmp / "kubeconfig"
        write_kubeconfig(kubeconfig, {"karmada-apiserver": proxy.url}, "karmada-apiserver")
        karmada = failback.Karmada(http, HEAL_DELAY, retry_until=deadline)
        observer = Observer(http, karmada)
        flags = ["--controllers=clusterFailback", "--failback-stabilization-window=1s",
                 f"--failback-max-concurrent={MAX_CONCURRENT}", "--failback-rebalancer-ttl=0s"]
        await stack.enter_async_context(rebalancer.run_controller_manager(kubeconfig, tmp / "controller-manager.log",
                                                                          flags, None))
        await observer.until(lambda: 0 <= observer.recorded <= n - n // 3, deadline, "a third done")
        server.proc.send_signal(signal.SIGKILL)
        await server.proc.wait()
        await asyncio.sleep(args.restart_after)
        await start(2, "--starting-window", f"{args.starting_window * 1000:.0f}ms",
                    "--crd-unserved-window", f"{args.crd_unserved_window * 1000:.0f}ms")
        restarted = time.monotonic()
        figures.notes.append(f"restart with {observer.recorded} of {n} records left; the lost create: "
                             f"{proxy.injected['lost']} answer lost")
        await observer.until(lambda: observer.recorded == 0, deadline, "every workload failed back")
        figures.recovery_seconds = time.monotonic() - restarted
        listed: Counter[str] = Counter()
        batches: dict[str, list[str]] = {}
        for item in (await failback.send(http, "GET", failback.WR, None))["items"]:
            names = [w["name"] for w in item["spec"]["workloads"]]
            listed.update(names)
            batches[f"{item['metadata']['name']} ({item['metadata']['creationTimestamp']})"] = names
        twice = sorted(name for name, count in listed.items() if count > 1)
        figures.listed_twice = len(twice)
        for name in twice[:3]:  # which batches repeated it: the first thing to know when diagnosing
            figures.notes.append(f"{name} listed by " + ", ".join(b for b, names in batches.items() if name in names))
        figures.forgotten = n - len(listed)
        figures.most_in_flight = observer.most
        if karmada.errors:
            figures.notes.append(f"Karmada-side writes given up: {karmada.errors[:3]}")
    return figures
