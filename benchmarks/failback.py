"""Progressive fail-back of many workloads: time, the controller-manager's CPU and requests, and the budget kept.

A fresh dev API server (``python -m devplane apiserver --port 0``, in-memory storage) in a child process gets
``--workloads`` N (default 2,000) Deployment templates reporting their replica ready and N ResourceBindings on
member2 whose record says they were evicted from member1 (``failback.karmada-rebalance.io/evicted-from``, what
``failback-recorder`` writes during an eviction), and a Ready, untainted Cluster member1. Then
``python -m controller_manager --controllers=clusterFailback --failback-max-concurrent=M`` (default 50) with a
1 s window in a child process. This process plays Karmada: for each workload a fail-back WorkloadRebalancer
lists, ``--heal-delay`` seconds later (default 0.5: its new replicas starting) it writes what Karmada's
rebalancer, scheduler and members would: the binding's ``rescheduleTriggeredAt`` (the rebalancer's
creationTimestamp) and ``spec.clusters`` {member1, member2}, then its status (scheduled, both targets applied
and ready).

Timed: from the controller-manager's start until every record is gone. Reported: seconds, workloads per
second, batches (rebalancers), the most bindings in flight at once (``failback.karmada-rebalance.io/failing-back``
seen on a watch: must not exceed M), workloads listed twice or never (must be 0), the controller-manager's CPU
seconds and its requests by verb (``rest_client_requests_total``). Health is read from informer caches: the
GETs are the fresh reads before each conditional binding patch, not LISTs per batch. Exit 1 when a "must"
fails.

    .venv/bin/python benchmarks/failback.py                                   # 2,000 workloads, 50 at a time
    .venv/bin/python benchmarks/failback.py --workloads 500 --max-concurrent 20
    .venv/bin/python benchmarks/failback.py --cprofile DIR                    # cProfile the controller-manager
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: make the repository importable without installing
    sys.path.insert(0, str(REPO))

from benchmarks import rebalancer  # noqa: E402
from benchmarks.support import BenchError, cpu_seconds, expect, pool_all, run_in_tmp, run_server  # noqa: E402
from controllers.failback.progress import FAILING_BACK_ANNOTATION  # noqa: E402
from controllers.failback.recovery import EVICTED_FROM_ANNOTATION  # noqa: E402
from devplane.kubeconfig import write_kubeconfig  # noqa: E402

NS = "bench"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
RB = f"/apis/work.karmada.io/v1alpha2/namespaces/{NS}/resourcebindings"
DEPLOY = f"/apis/apps/v1/namespaces/{NS}/deployments"
WR = "/apis/apps.karmada.io/v1alpha1/workloadrebalancers"
MERGE = {"Content-Type": "application/merge-patch+json"}


def name_of(i: int) -> str:
    return f"w{i:05d}"


async def send(http: aiohttp.ClientSession, method: str, path: str, body: Any, *statuses: int) -> Any:
    headers = MERGE if method == "PATCH" else None
    async with http.request(method, path, json=body, headers=headers) as resp:
        return json.loads(await expect(resp, *(statuses or (200, 201))))


async def populate(http: aiohttp.ClientSession, n: int, concurrency: int, time_limit: float) -> None:
    await send(http, "POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    await send(http, "POST", CLUSTERS, {"metadata": {"name": "member1"}, "spec": {"syncMode": "Push"}})
    await send(http, "PATCH", f"{CLUSTERS}/member1/status", {"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})

    async def one(i: int) -> None:
        name, labels = name_of(i), {"app": name_of(i)}
        await send(http, "POST", DEPLOY, {"metadata": {"name": name}, "spec": {
            "replicas": 1, "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
        await send(http, "PATCH", f"{DEPLOY}/{name}/status",
                   {"status": {"replicas": 1, "readyReplicas": 1, "observedGeneration": 1}})
        await send(http, "POST", RB, {
            "metadata": {"name": f"{name}-deployment", "annotations": {EVICTED_FROM_ANNOTATION: "member1"}},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NS, "name": name},
                     "replicas": 1, "clusters": [{"name": "member2", "replicas": 1}]}})

    await pool_all("objects", n, concurrency, time_limit, one)


@dataclass
class Karmada:
    """What Karmada would do after each fail-back rebalancer, ``delay`` seconds later per workload."""

    http: aiohttp.ClientSession
    delay: float
    retry_until: float = 0.0
    """Monotonic time until which a failed write (the server restarting) is tried again; 0: never."""
    listed: Counter[str] = field(default_factory=Counter)
    seen: set[str] = field(default_factory=set)
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    def rebalancer(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        if name in self.seen:
            return
        self.seen.add(name)
        created = obj["metadata"]["creationTimestamp"]
        for workload in obj["spec"]["workloads"]:
            self.listed[workload["name"]] += 1
            task = asyncio.create_task(self.heal(workload["name"], created))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def heal(self, name: str, trigger: str) -> None:
        await asyncio.sleep(self.delay)
        while True:
            try:
                await self._heal(name, trigger)
                return
            except (BenchError, aiohttp.ClientError, OSError, TimeoutError) as exc:
                if time.monotonic() >= self.retry_until:
                    self.errors.append(f"{name}: {exc}")
                    return
            await asyncio.sleep(0.2)

    async def _heal(self, name: str, trigger: str) -> None:
        spec = {"rescheduleTriggeredAt": trigger,
                "clusters": [{"name": "member1", "replicas": 1}, {"name": "member2", "replicas": 0}]}
        binding = await send(self.http, "PATCH", f"{RB}/{name}-deployment", {"spec": spec})
        items = [{"clusterName": "member1", "applied": True, "status": {"replicas": 1, "readyReplicas": 1}}]
        await send(self.http, "PATCH", f"{RB}/{name}-deployment/status", {"status": {
            "schedulerObservedGeneration": binding["metadata"]["generation"], "lastScheduledTime": trigger,
            "aggregatedStatus": items}})


async def watch(http: aiohttp.ClientSession, path: str, handle: Any) -> None:
    """Every object of ``path`` (a list, then its watch), each passed to ``handle``; until cancelled."""
    listing = await send(http, "GET", path, None)
    for item in listing["items"]:
        handle("ADDED", item)
    rv = listing["metadata"]["resourceVersion"]
    while True:
        async with http.get(path, params={"watch": "1", "resourceVersion": rv, "allowWatchBookmarks": "false"},
                            timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as resp:
            async for line in resp.content:
                event = json.loads(line)
                if event["type"] == "ERROR":
                    raise BenchError(f"watch {path}: {event['object']}")
                rv = event["object"]["metadata"]["resourceVersion"]
                handle(event["type"], event["object"])


@dataclass
class Flights:
    """Bindings in flight (the controller's mark) and records left, as a watch on the bindings sees them."""

    in_flight: set[str] = field(default_factory=set)
    recorded: set[str] = field(default_factory=set)
    most: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def binding(self, kind: str, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        annotations = obj["metadata"].get("annotations") or {}
        flying = kind != "DELETED" and "member1" in json.loads(annotations.get(FAILING_BACK_ANNOTATION) or "{}")
        (self.in_flight.add if flying else self.in_flight.discard)(name)
        recorded = kind != "DELETED" and "member1" in (annotations.get(EVICTED_FROM_ANNOTATION) or "")
        (self.recorded.add if recorded else self.recorded.discard)(name)
        self.most = max(self.most, len(self.in_flight))
        if not self.recorded:
            self.done.set()


async def run(args: argparse.Namespace, tmp: Path) -> bool:
    async with (run_server(tmp / "server.log") as server, rebalancer.session(server.url, args.concurrency) as http):
        t_setup = time.monotonic()
        await populate(http, args.workloads, args.concurrency, args.time_limit)
        print(f"  {args.workloads:,} templates and bindings in {time.monotonic() - t_setup:.1f} s", flush=True)
        kubeconfig = tmp / "kubeconfig"
        write_kubeconfig(kubeconfig, {"karmada-apiserver": server.url}, "karmada-apiserver")
        flights, karmada = Flights(), Karmada(http, args.heal_delay)
        watches = [asyncio.create_task(watch(http, RB, flights.binding)),
                   asyncio.create_task(watch(http, WR, lambda _kind, obj: karmada.rebalancer(obj)))]
        flags = ["--controllers=clusterFailback", "--failback-stabilization-window=1s",
                 f"--failback-max-concurrent={args.max_concurrent}", "--failback-rebalancer-ttl=0s",
                 "--failback-progress-deadline=10m"]
        try:
            t0 = time.monotonic()
            program: list[str] = []
            if args.cprofile is not None:
                program = ["-m", "cProfile", "-o", str(args.cprofile / "controller-manager.prof"),
                           "-m", "controller_manager"]
            async with rebalancer.run_controller_manager(kubeconfig, tmp / "controller-manager.log", flags,
                                                         None, program=program) as cm:
                cpu0 = cpu_seconds(cm.proc.pid)
                await asyncio.wait_for(flights.done.wait(), args.time_limit)
                seconds = time.monotonic() - t0
                cpu = cpu_seconds(cm.proc.pid) - cpu0
                requests = rebalancer.counted_by(await rebalancer.scrape(http, cm.metrics),
                                                 "rest_client_requests_total", "method")
        except TimeoutError:
            raise BenchError(f"{len(flights.recorded):,} records left after {args.time_limit:.0f}s") from None
        finally:
            for task in watches:
                task.cancel()
            await asyncio.gather(*watches, return_exceptions=True)
    twice = sorted(n for n, count in karmada.listed.items() if count > 1)
    never = args.workloads - len(karmada.listed)
    print(f"  {seconds:.1f} s for {args.workloads:,} workloads ({args.workloads / seconds:.0f}/s), "
          f"{len(karmada.seen):,} batches; at most {flights.most} in flight (budget {args.max_concurrent})")
    print(f"  controller-manager: {cpu:.1f} s CPU ({1000 * cpu / args.workloads:.2f} ms per workload); requests "
          + ", ".join(f"{method} {count:,.0f} ({count / args.workloads:.2f}/workload)"
                      for method, count in sorted(requests.items())))
    print(f"  listed twice: {len(twice)} (must be 0), never listed: {never} (must be 0), Karmada-side errors: "
          f"{len(karmada.errors)}")
    return flights.most <= args.max_concurrent and not twice and never == 0 and not karmada.errors


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--max-concurrent", type=int, default=50)
    parser.add_argument("--heal-delay", type=float, default=0.5, help="seconds until a moved workload is ready")
    parser.add_argument("--concurrency", type=int, default=16, help="connections of this process")
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--keep-logs", type=Path, default=None)
    parser.add_argument("--cprofile", type=Path, default=None, help="cProfile the controller-manager into DIR")
    args = parser.parse_args()
    for flag in ("workloads", "max_concurrent", "concurrency"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.heal_delay < 0 or args.time_limit <= 0:
        parser.error("--heal-delay must not be negative, --time-limit must be positive")
    return args


def main() -> int:
    args = parse_args()
    if args.cprofile is not None:
        args.cprofile = args.cprofile.resolve()
        args.cprofile.mkdir(parents=True, exist_ok=True)
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs; dev API server in a child process, in-memory "
          f"storage; {args.workloads:,} workloads, --failback-max-concurrent {args.max_concurrent}, heal delay "
          f"{args.heal_delay:g} s")
    ok = True

    async def bench(tmp: Path) -> None:
        nonlocal ok
        ok = await run(args, tmp)

    code = run_in_tmp(bench, "failback-bench-", args.keep_logs)
    return code or (0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main())
