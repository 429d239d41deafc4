"""Throughput of the dev API server, driven over HTTP from a separate process.

Starts ``python -m devplane apiserver --port 0`` in a child process (so the client load does
not share the server's core), then measures over 127.0.0.1 with aiohttp:

1. creates/s   POST of ConfigMaps, ``--concurrency`` requests in flight;
2. updates/s   PUT with the current resourceVersion on those ConfigMaps;
3. list time   one unpaginated LIST of ``--list-objects`` ConfigMaps, and the same read in pages
               of ``--page-limit`` (median of ``--list-runs`` runs);
4. watch       ``--watchers`` raw streaming watches from the current resourceVersion, then
               ``--watch-writes`` updates: delivered events / time until every watcher has all.

Also prints the server's CPU time per phase (utime+stime from /proc) and its peak RSS (VmHWM).
Every phase is bounded in count and in time; the server is always killed and the temp dir removed.

    .venv/bin/python benchmarks/apiserver.py                 # SQLite in a temp dir (the default)
    .venv/bin/python benchmarks/apiserver.py --memory        # in-memory storage
    .venv/bin/python benchmarks/apiserver.py --data-dir DIR  # SQLite in DIR/run<N>, kept (DIR must be empty or absent)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root, for benchmarks.support

from benchmarks.support import (
    REQUEST_TIMEOUT,
    BenchError,
    ServerProcess,
    expect,
    prepare_profile_dir,
    py_spy_recording,
    require_at_least_one,
    run_in_tmp,
    run_server,
)

NAMESPACE = "bench"
CM_PATH = f"/api/v1/namespaces/{NAMESPACE}/configmaps"


# ------------------------------------------------------------------------------------------ client helpers


@dataclass
class Phase:
    name: str
    count: int
    seconds: float
    server_cpu: float
    client_cpu: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else float("nan")


async def run_pool(jobs: list[Callable[[], Awaitable[None]]], concurrency: int, time_limit: float) -> int:
    """Run jobs with ``concurrency`` workers; stop taking new ones after ``time_limit``. Returns jobs done."""
    pending = iter(jobs)
    done = 0
    deadline = time.monotonic() + time_limit

    async def worker() -> None:
        nonlocal done
        for job in pending:
            if time.monotonic() > deadline:
                return
            await job()
            done += 1

    async with asyncio.timeout(time_limit + REQUEST_TIMEOUT):
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


def list_metadata(body: bytes) -> dict[str, Any]:
    """The ``metadata`` of a list response, decoded without the items (the server writes it first)."""
    head, found, _ = body.partition(b',"items":[')
    if not found:
        return dict(json.loads(body)["metadata"])
    return dict(json.loads(head + b"}")["metadata"])


def configmap(name: str, value: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "bench"}},
            "data": {"key": value, "payload": "x" * 64}}


class Bench:
    def __init__(self, server: ServerProcess, session: aiohttp.ClientSession, args: argparse.Namespace) -> None:
        self.server = server
        self.session = session
        self.args = args
        self.url = server.url
        self.rvs: dict[str, str] = {}  # name -> current resourceVersion
        self.phases: list[Phase] = []

    async def timed(self, name: str, body: Callable[[], Awaitable[int]], **extra: Any) -> Phase:
        async with self.profiled(name):
            cpu0, client0, t0 = self.server.cpu_seconds(), time.process_time(), time.perf_counter()
            count = await body()
            seconds = time.perf_counter() - t0
        phase = Phase(name, count, seconds, self.server.cpu_seconds() - cpu0, time.process_time() - client0, extra)
        self.phases.append(phase)
        return phase

    def profiled(self, name: str) -> contextlib.AbstractAsyncContextManager[None]:
        """With --profile DIR: py-spy samples the server during the phase (DIR/<phase>.txt, collapsed stacks)."""
        outputs = ({self.args.profile / (name.replace(" ", "-").replace("=", "") + ".txt"): self.server.pid}
                   if self.args.profile is not None else {})
        return py_spy_recording(outputs, rate=1000, flags=("--threads", "--gil", "--nonblocking"))

    async def setup(self) -> None:
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        async with self.session.post(self.url + "/api/v1/namespaces", json=ns) as resp:
            await expect(resp, 201)

    def create_jobs(self, start: int, stop: int) -> list[Callable[[], Awaitable[None]]]:
        async def create(i: int) -> None:
            name = f"cm-{i:06d}"
            async with self.session.post(self.url + CM_PATH, json=configmap(name, "v0")) as resp:
                body = await expect(resp, 201)
            self.rvs[name] = json.loads(body)["metadata"]["resourceVersion"]

        return [functools.partial(create, i) for i in range(start, stop)]

    def update_jobs(self, count: int, tag: str) -> list[Callable[[], Awaitable[None]]]:
        names = sorted(self.rvs)

        async def update(i: int) -> None:
            name = names[i % len(names)]
            obj = configmap(name, f"{tag}-{i}")
            obj["metadata"]["resourceVersion"] = self.rvs[name]
            async with self.session.put(f"{self.url}{CM_PATH}/{name}", json=obj) as resp:
                body = await expect(resp, 200)
            self.rvs[name] = json.loads(body)["metadata"]["resourceVersion"]

        # parse_args keeps count <= len(names): each name is updated at most once per phase, so the
        # resourceVersion sent is always the current one (no 409s).
        return [functools.partial(update, i) for i in range(count)]

    async def creates(self) -> Phase:
        a = self.args
        jobs = self.create_jobs(0, a.objects)
        return await self.timed("create", lambda: run_pool(jobs, a.concurrency, a.phase_time))

    async def fill(self) -> None:
        """Top up to --list-objects ConfigMaps (untimed) so the list phase has its size."""
        a = self.args
        if a.list_objects > len(self.rvs):
            jobs = self.create_jobs(len(self.rvs), a.list_objects)
            done = await run_pool(jobs, a.concurrency, a.phase_time)
            if done < len(jobs):
                raise BenchError(f"fill: only {done}/{len(jobs)} creates within {a.phase_time}s")

    async def updates(self) -> Phase:
        a = self.args
        jobs = self.update_jobs(a.updates, "u")
        return await self.timed("update", lambda: run_pool(jobs, a.concurrency, a.phase_time))

    async def list_all(self, limit: int) -> list[bytes]:
        """The bodies of one complete LIST, paged when ``limit`` > 0.

        Only each page's ``metadata`` (for the continue token) is decoded here, so the time measured is
        the server's plus the transfer, not the client's JSON decoding of the items.
        """
        bodies: list[bytes] = []
        token = ""
        for _ in range(10_000):
            params = {}
            if limit:
                params["limit"] = str(limit)
            if token:
                params["continue"] = token
            async with self.session.get(self.url + CM_PATH, params=params) as resp:
                body = await expect(resp, 200)
            bodies.append(body)
            token = list_metadata(body).get("continue") or ""
            if not token:
                break
        return bodies

    async def lists(self) -> None:
        a = self.args
        want = len(self.rvs)
        for label, limit in (("list", 0), (f"list limit={a.page_limit}", a.page_limit)):
            times: list[float] = []
            cpu: list[float] = []
            await self.list_all(limit)  # warm-up: builds the sorted index once
            async with self.profiled(label):
                for _ in range(a.list_runs):
                    cpu0, t0 = self.server.cpu_seconds(), time.perf_counter()
                    bodies = await asyncio.wait_for(self.list_all(limit), a.phase_time)
                    times.append(time.perf_counter() - t0)
                    cpu.append(self.server.cpu_seconds() - cpu0)
                    names = [i["metadata"]["name"] for b in bodies for i in json.loads(b)["items"]]
                    if len(names) != want or len(set(names)) != want:
                        raise BenchError(f"{label}: {len(names)} items ({len(set(names))} distinct), wanted {want}")
            self.phases.append(Phase(label, want, statistics.median(times), statistics.median(cpu), 0.0,
                                     {"requests": len(bodies), "runs": [round(t * 1000, 1) for t in times]}))

    async def watches(self) -> Phase:
        a = self.args
        async with self.session.get(self.url + CM_PATH, params={"limit": "1"}) as resp:
            rv = json.loads(await expect(resp, 200))["metadata"]["resourceVersion"]
        expected = a.watch_writes
        received = [0] * a.watchers
        last_lines: list[bytes] = [b""] * a.watchers
        all_done = asyncio.Event()
        finished = 0
        timeout = aiohttp.ClientTimeout(total=None, sock_read=a.phase_time)
        # Its own connector: the watches must not take the writers' connection slots.
        async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as wsession:
            responses = []
            for _ in range(a.watchers):
                resp = await wsession.get(self.url + CM_PATH, params={
                    "watch": "true", "resourceVersion": rv, "timeoutSeconds": str(int(a.phase_time) + 30)})
                if resp.status != 200:
                    raise BenchError(f"watch: HTTP {resp.status}: {(await resp.read())[:300]!r}")
                responses.append(resp)  # 200 is sent after the watcher is attached: it sees every later write

            async def consume(i: int, resp: aiohttp.ClientResponse) -> None:
                nonlocal finished
                tail = b""
                async for chunk in resp.content.iter_any():
                    received[i] += chunk.count(b"\n")  # one event per line; JSON escapes newlines in strings
                    tail = (tail + chunk)[-4096:]
                    if received[i] >= expected:
                        break
                last_lines[i] = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
                finished += 1
                if finished == a.watchers:
                    all_done.set()

            readers = [asyncio.create_task(consume(i, r)) for i, r in enumerate(responses)]
            try:
                jobs = self.update_jobs(expected, "w")

                async def body() -> int:
                    done = await run_pool(jobs, a.concurrency, a.phase_time)
                    if done < expected:
                        raise BenchError(f"watch writes: only {done}/{expected} within {a.phase_time}s")
                    try:
                        await asyncio.wait_for(all_done.wait(), a.phase_time)
                    except TimeoutError:
                        raise BenchError(f"watch: watchers received {received} of {expected} events each "
                                         f"within {a.phase_time}s after the writes") from None
                    return sum(received)

                phase = await self.timed("watch events", body, watchers=a.watchers, writes=expected)
            finally:
                for task in readers:
                    task.cancel()
                await asyncio.gather(*readers, return_exceptions=True)
                for resp in responses:
                    resp.close()
        last_rvs = {json.loads(line)["object"]["metadata"]["resourceVersion"] for line in last_lines}
        want_rv = max(int(v) for v in self.rvs.values())
        if last_rvs != {str(want_rv)}:
            raise BenchError(f"watch: last events carry resourceVersions {last_rvs}, wanted {want_rv}")
        phase.extra["write_rate"] = round(expected / phase.seconds)
        return phase


# ------------------------------------------------------------------------------------------ main


@dataclass
class Run:
    storage: str
    phases: list[Phase]
    peak_rss_kib: int | None


def _fmt_phase(p: Phase) -> str:
    if p.name.startswith("list"):
        rate = "-"
        cpu_per = f"{p.server_cpu * 1000:.0f} ms/list"
        notes = f"{p.extra['requests']} request(s); runs ms {p.extra['runs']}"
    else:
        rate = f"{p.rate:,.0f}"
        cpu_per = f"{p.server_cpu / p.count * 1e6:.0f} us/op"
        notes = ", ".join(f"{k}={v}" for k, v in p.extra.items())
    client = f"{p.client_cpu / p.seconds:.0%}" if p.client_cpu else "-"
    return (f"{p.name:<18}{p.count:>7}{p.seconds:>9.3f}{rate:>9}{p.server_cpu / p.seconds:>8.0%}"
            f"{cpu_per:>14}{client:>8}  {notes}")


HEADER = f"{'phase':<18}{'count':>7}{'seconds':>9}{'rate/s':>9}{'server':>8}{'server CPU':>14}{'client':>8}  notes"


def report_run(run: Run) -> None:
    print(HEADER)
    for p in run.phases:
        print(_fmt_phase(p))
    rss = f"{run.peak_rss_kib / 1024:.1f} MiB" if run.peak_rss_kib else "unavailable"
    print(f"server peak RSS (VmHWM): {rss}", flush=True)


def report_summary(runs: list[Run], args: argparse.Namespace) -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n=== Dev API server, {runs[0].storage}: median of {len(runs)} run(s) "
          f"(concurrency {args.concurrency}; Python {platform.python_version()}; {os.cpu_count()} CPUs; "
          f"load average now {load})")
    print(f"{'figure':<34}{'median':>12}{'min':>12}{'max':>12}")

    def line(label: str, values: list[float], fmt: str) -> None:
        print(f"{label:<34}{format(statistics.median(values), fmt):>12}{format(min(values), fmt):>12}"
              f"{format(max(values), fmt):>12}")

    for name in [p.name for p in runs[0].phases]:
        phases = [p for r in runs for p in r.phases if p.name == name]
        if name.startswith("list"):
            line(f"{name} ({phases[0].count} objects), ms", [p.seconds * 1000 for p in phases], ",.1f")
        else:
            label = {"create": "creates/s", "update": "updates/s"}.get(name, f"{name}/s")
            line(label, [p.rate for p in phases], ",.0f")
            line("  server CPU per op, us", [p.server_cpu / p.count * 1e6 for p in phases], ",.0f")
    rss = [r.peak_rss_kib / 1024 for r in runs if r.peak_rss_kib]
    if rss:
        line("server peak RSS (VmHWM), MiB", rss, ",.1f")


async def bench(args: argparse.Namespace, data_dir: Path | None, log_path: Path, storage: str) -> Run:
    server_args = [*(["--data-dir", str(data_dir)] if data_dir is not None else []),
                   *([] if not args.no_karmada else ["--no-karmada"])]
    async with run_server(log_path, *server_args) as server:
        print(f"server pid {server.pid} at {server.url} ({storage})", flush=True)
        timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
        connector = aiohttp.TCPConnector(limit=args.concurrency)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
            b = Bench(server, session, args)
            await b.setup()
            steps: list[Callable[[], Awaitable[Any]]] = [b.creates, b.fill, b.updates, b.lists, b.watches]
            for step in steps:
                await step()
            return Run(storage, b.phases, server.status_kib("VmHWM"))


async def bench_all(args: argparse.Namespace, tmp: Path) -> list[Run]:
    started = time.monotonic()
    runs: list[Run] = []
    for i in range(args.repeat):
        elapsed = time.monotonic() - started
        if runs and elapsed / len(runs) * (len(runs) + 1) > args.time_limit:
            print(f"stopping after {len(runs)} run(s): another would pass --time-limit {args.time_limit:.0f}s")
            break
        if args.memory:
            data_dir, storage = None, "memory"
        elif args.data_dir is not None:
            data_dir, storage = args.data_dir / f"run{i + 1}", f"SQLite in {args.data_dir}"
        else:
            data_dir, storage = tmp / f"data{i + 1}", "SQLite (temp dir)"
        print(f"\n--- run {i + 1}/{args.repeat}, load average {os.getloadavg()[0]:.2f}: ", end="")
        try:
            async with asyncio.timeout(max(args.time_limit - elapsed, 1.0)):
                run = await bench(args, data_dir, tmp / f"server{i + 1}.log", storage)
        except TimeoutError:
            raise BenchError(f"run {i + 1} passed --time-limit {args.time_limit:.0f}s") from None
        report_run(run)
        runs.append(run)
    return runs


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    where = p.add_mutually_exclusive_group()
    where.add_argument("--data-dir", type=Path, metavar="DIR",
                       help="SQLite storage in DIR/run<N>, kept (DIR must be empty); default: a temp dir, removed")
    where.add_argument("--memory", action="store_true", help="in-memory storage instead of SQLite")
    p.add_argument("--objects", type=int, default=5000, help="ConfigMaps created in the timed create phase")
    p.add_argument("--updates", type=int, default=5000, help="PUTs in the update phase")
    p.add_argument("--concurrency", type=int, default=32, help="requests in flight")
    p.add_argument("--list-objects", type=int, default=10_000, help="ConfigMaps present for the list phase")
    p.add_argument("--list-runs", type=int, default=5, help="runs per list variant (median reported)")
    p.add_argument("--page-limit", type=int, default=500, help="limit= of the paged list")
    p.add_argument("--watchers", type=int, default=10)
    p.add_argument("--watch-writes", type=int, default=2000, help="updates made while the watchers listen")
    p.add_argument("--repeat", type=int, default=3, help="full runs, each on a fresh server (medians reported)")
    p.add_argument("--phase-time", type=float, default=25.0, help="time limit of each phase, seconds")
    p.add_argument("--time-limit", type=float, default=100.0, help="time limit of the whole benchmark, seconds")
    p.add_argument("--profile", type=Path, default=None, metavar="DIR",
                   help="sample the server with py-spy (GIL holder only) in each phase: collapsed stacks in "
                        "DIR/<phase>.txt (overwritten by each --repeat run; the sampling slows the figures)")
    p.add_argument("--no-karmada", action="store_true", help="serve without Karmada's CRDs (a member server)")
    args = p.parse_args()
    require_at_least_one(p, args, "objects", "updates", "concurrency", "list_runs", "watchers", "watch_writes",
                         "repeat")
    for name in ("updates", "watch_writes"):
        if getattr(args, name) > max(args.objects, args.list_objects):
            p.error(f"--{name.replace('_', '-')} must not exceed the number of objects (one update per object)")
    return args


def main() -> int:
    args = parse_args()
    error = prepare_profile_dir(args.profile)
    if error:
        print(error, file=sys.stderr)
        return 2
    if args.data_dir is not None and args.data_dir.exists() and any(args.data_dir.iterdir()):
        print(f"--data-dir {args.data_dir} is not empty", file=sys.stderr)
        return 2

    async def bench_and_report(tmp: Path) -> None:
        report_summary(await bench_all(args, tmp), args)

    return run_in_tmp(bench_and_report, "devplane-bench-", None)

if __name__ == "__main__":
    sys.exit(main())
