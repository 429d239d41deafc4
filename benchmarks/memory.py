"""The controller-manager's memory with N ResourceBindings cached: RSS per binding against the bindings' JSON.

Two dev API servers run as child processes (``python -m devplane apiserver --port 0``, in-memory storage): an
empty one, and one holding ``--bindings`` (default 10,000) ResourceBindings laid out as in
``benchmarks/rebalancer.py`` (4 namespaces, ``spec.resource`` a Deployment, the status the binding-status
controller leaves behind). For each store in ``--stores`` (``compact``: the default, objects kept as JSON
bytes; ``parsed``: ``ManagerOptions(compact_caches=False)``, objects kept as dicts), each round:

1. empty    ``python -m controller_manager --leader-elect=false --kube-api-qps=-1`` on the empty server,
            waited for until ready and idle: its ``VmRSS`` is the baseline (interpreter, libraries, no cache).
2. listed   a fresh controller-manager on the full server, ready and idle: ``VmRSS`` and ``VmHWM``, the cache
            filled by its LIST.
3. watched  this process then PUTs every binding once (a new ``spec.rescheduleTriggeredAt``, as a rebalancer
            does) and waits until the controller-manager is idle again: ``VmRSS`` and ``VmHWM`` with the
            cache refilled by watch events.

Printed per store (medians of ``--rounds``, ranges in brackets): the RSS of each phase, the increment over
the baseline per cached binding, and its ratio to the JSON size of the bindings (compact JSON, UTF-8, as
the server sends them, from a LIST right after each phase: what the cache holds). The aim: at most 1.2x.
Memory figures do not depend on the machine's load. Rounds alternate the order of the stores.

    .venv/bin/python benchmarks/memory.py                        # 10,000 bindings, both stores, 3 rounds (~3 min)
    .venv/bin/python benchmarks/memory.py --stores compact --rounds 1
    .venv/bin/python benchmarks/memory.py --controllers workloadRebalancer   # without binding-status's start-up work
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repository importable

from benchmarks.framework import json_size
from benchmarks.rebalancer import (
    PARSED_PROGRAM,
    RB_GROUP,
    Layout,
    list_items,
    populate,
    run_controller_manager,
    session,
    spread,
    wait_until_idle,
)
from benchmarks.support import BenchError, expect, pool, require_at_least_one, run_in_tmp, run_server, status_kib
from devplane.kubeconfig import write_kubeconfig

AIM = 1.2
PROGRAMS: dict[str, tuple[str, ...]] = {"compact": (), "parsed": PARSED_PROGRAM}


@dataclass
class Reading:
    """One phase of one round: the controller-manager's VmRSS and VmHWM (KiB), the bindings' JSON bytes."""

    rss_kib: int
    peak_kib: int
    json_bytes: int = 0


@dataclass
class StoreRound:
    empty: Reading
    listed: Reading
    watched: Reading


async def bindings_json(http: aiohttp.ClientSession, layout: Layout) -> tuple[int, list[dict[str, Any]]]:
    """The JSON bytes of the layout's bindings as the server has them now, and the bindings."""
    items = [b for b in await list_items(http, f"{RB_GROUP}/resourcebindings") if layout.owns(b)]
    if len(items) != layout.bindings:
        raise BenchError(f"{len(items)} bindings on the server, wanted {layout.bindings}")
    return sum(json_size(b) for b in items), items


async def rewrite_all(http: aiohttp.ClientSession, layout: Layout, bindings: list[dict[str, Any]],
                      args: argparse.Namespace) -> None:
    """PUT every binding once with a new ``spec.rescheduleTriggeredAt`` (its current resourceVersion)."""
    trigger = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    async def put(k: int) -> None:
        binding = bindings[k]
        meta = binding["metadata"]
        updated = {**binding, "spec": {**binding["spec"], "rescheduleTriggeredAt": trigger}}
        path = f"{RB_GROUP}/namespaces/{meta['namespace']}/resourcebindings/{meta['name']}"
        async with http.put(path, json=updated) as resp:
            await expect(resp, 200)

    if await pool(len(bindings), args.concurrency, args.phase_time, put) < len(bindings):
        raise BenchError(f"not every binding was rewritten within {args.phase_time:.0f}s")


async def store_round(args: argparse.Namespace, store: str, layout: Layout, *, servers: dict[str, str],
                      https: dict[str, aiohttp.ClientSession], tmp: Path, tag: str) -> StoreRound:
    program = PROGRAMS[store]
    extra = [f"--controllers={args.controllers}"] if args.controllers else []
    async with run_controller_manager(Path(servers["empty"]), tmp / f"cm-{tag}-empty.log", extra, None,
                                      program=program) as cm:
        await wait_until_idle(https["empty"], cm, args.phase_time)
        empty = Reading(status_kib("VmRSS", cm.proc.pid), status_kib("VmHWM", cm.proc.pid))
    http = https["full"]
    async with run_controller_manager(Path(servers["full"]), tmp / f"cm-{tag}-full.log", extra, None,
                                      program=program) as cm:
        await wait_until_idle(http, cm, args.phase_time)
        listed = Reading(status_kib("VmRSS", cm.proc.pid), status_kib("VmHWM", cm.proc.pid))
        listed.json_bytes, bindings = await bindings_json(http, layout)
        await rewrite_all(http, layout, bindings, args)
        await wait_until_idle(http, cm, args.phase_time)
        watched = Reading(status_kib("VmRSS", cm.proc.pid), status_kib("VmHWM", cm.proc.pid))
        watched.json_bytes, _ = await bindings_json(http, layout)
    return StoreRound(empty, listed, watched)


def report(store: str, layout: Layout, rounds: list[StoreRound]) -> None:
    n = layout.bindings
    mib = "{:.1f}"
    print(f"\n{store} store, {n:,} ResourceBindings, median of {len(rounds)} round(s), range in brackets:")
    print(f"  empty cache      RSS {spread([r.empty.rss_kib / 1024 for r in rounds], mib)} MiB "
          f"(peak {spread([r.empty.peak_kib / 1024 for r in rounds], mib)} MiB)")
    for phase in ("listed", "watched"):
        readings = [getattr(r, phase) for r in rounds]
        per_binding = [(x.rss_kib - r.empty.rss_kib) * 1024 / n for x, r in zip(readings, rounds, strict=True)]
        json_per = [x.json_bytes / n for x in readings]
        ratios = [p / j for p, j in zip(per_binding, json_per, strict=True)]
        peak_ratios = [(x.peak_kib - r.empty.rss_kib) * 1024 / x.json_bytes
                       for x, r in zip(readings, rounds, strict=True)]
        verdict = "within" if statistics.median(ratios) <= AIM else "MISSES"
        print(f"  {phase:8s} cache  RSS {spread([x.rss_kib / 1024 for x in readings], mib)} MiB, peak "
              f"{spread([x.peak_kib / 1024 for x in readings], mib)} MiB; "
              f"{spread(per_binding, '{:,.0f}')} B per cached binding over the empty cache, JSON "
              f"{spread(json_per, '{:,.0f}')} B per binding")
        print(f"                   RSS increment / JSON = {spread(ratios)}x ({verdict} {AIM}x); "
              f"peak increment / JSON = {spread(peak_ratios)}x", flush=True)


async def bench(args: argparse.Namespace, tmp: Path) -> None:
    layout = Layout(args.bindings // 10, 10, 4)
    async with asyncio.timeout(args.time_limit), \
            run_server(tmp / "server-empty.log") as empty, run_server(tmp / "server-full.log") as full, \
            session(empty.url, 4) as empty_http, session(full.url, args.concurrency) as full_http:
        servers = {}
        for name, server in (("empty", empty), ("full", full)):
            path = tmp / f"kubeconfig-{name}"
            write_kubeconfig(path, {"karmada-apiserver": server.url}, "karmada-apiserver")
            servers[name] = str(path)
        started = time.monotonic()
        await populate(full_http, layout, args.concurrency, args.phase_time)
        print(f"{layout.bindings:,} bindings created in {time.monotonic() - started:.1f} s", flush=True)
        https = {"empty": empty_http, "full": full_http}
        results: dict[str, list[StoreRound]] = {store: [] for store in args.stores}
        for index in range(args.rounds):
            order = args.stores if index % 2 == 0 else list(reversed(args.stores))
            for store in order:
                result = await store_round(args, store, layout, servers=servers, https=https, tmp=tmp,
                                           tag=f"{store}-{index}")
                results[store].append(result)
                print(f"  round {index + 1} {store}: RSS empty {result.empty.rss_kib / 1024:.1f} MiB, listed "
                      f"{result.listed.rss_kib / 1024:.1f} MiB, watched {result.watched.rss_kib / 1024:.1f} MiB",
                      flush=True)
        for store in args.stores:
            report(store, layout, results[store])


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--bindings", type=int, default=10_000, help="ResourceBindings (a multiple of 10; default 10,000)")
    p.add_argument("--stores", default="compact,parsed", help="compact and/or parsed, comma-separated")
    p.add_argument("--controllers", default="",
                   help="--controllers of the controller-manager (default: its own, i.e. every default controller)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per store; the report gives medians (default 3)")
    p.add_argument("--concurrency", type=int, default=16, help="connections of this process")
    p.add_argument("--phase-time", type=float, default=90.0, help="time limit of each phase, seconds")
    p.add_argument("--time-limit", type=float, default=900.0, help="time limit of the whole benchmark, seconds")
    args = p.parse_args()
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if not args.stores or any(s not in PROGRAMS for s in args.stores):
        p.error(f"--stores takes {' and/or '.join(PROGRAMS)}, comma-separated")
    if args.bindings < 10 or args.bindings % 10:
        p.error("--bindings must be a positive multiple of 10")
    require_at_least_one(p, args, "rounds", "concurrency")
    return args


def main() -> int:
    args = parse_args()
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs; dev API servers in child processes, "
          f"in-memory storage; load average {os.getloadavg()[0]:.2f}")
    return run_in_tmp(lambda tmp: bench(args, tmp), "memory-bench-", None)


if __name__ == "__main__":
    sys.exit(main())
