"""Throughput and memory of the controller framework (``controller_manager``) against the dev API server.

Starts ``python -m devplane apiserver --port 0 --no-karmada`` in a child process (in-memory storage
unless ``--data-dir``), has a *writer* child process (its own aiohttp connection pool) create
``--objects`` ConfigMaps in namespace ``bench`` and ``--controller-objects`` in ``bench-ctl``, then
measures in this process:

1. informer ingest  ``InformerFactory`` + ``KubeClient`` (qps unlimited) → ``SharedInformer`` of the
                    ``bench`` ConfigMaps: objects / time from ``start()`` to ``has_synced()`` (``--ingest-runs``
                    runs, each with a fresh client and informer); then live watch ingest: the writer child
                    updates ``--watch-updates`` distinct ConfigMaps (unconditional PUT, or ``--writer-verb
                    patch``) and we time from its first write until the informer's cache holds every new value;
2. memory           in a fresh child process: RSS delta and tracemalloc-retained bytes of an informer
                    holding the ``bench`` ConfigMaps, per object, against the objects' compact JSON size; the
                    same objects fed as watch events through ``SharedInformer._handle``; both without
                    ``share_strings`` for comparison; a breakdown by Python object type (``sys.getsizeof``);
3. workqueue        add + get + done cycles/s of a ``RateLimitingQueue`` with metrics on (as
                    ``Controller`` builds it) and, for comparison, off;
4. controller       a ``Manager`` (metrics/health on 127.0.0.1:0, no leader election) with one no-op
                    ``Controller`` watching the ``bench-ctl`` ConfigMaps: time from ``run()`` until
                    every initial reconcile completed, for each ``--workers`` count.

Every phase is bounded in count and time; the children are always stopped (and die with us).

    .venv/bin/python benchmarks/framework.py                  # in-memory API server (the default)
    .venv/bin/python benchmarks/framework.py --data-dir DIR   # SQLite API server in DIR (must be empty)
    .venv/bin/python benchmarks/framework.py --cprofile DIR   # also dump cProfile stats of each phase
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import json
import logging
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import structlog

SCRIPT = Path(__file__).resolve()
REPO = SCRIPT.parent.parent
if str(REPO) not in sys.path:  # run as a script: make controller_manager importable without installing
    sys.path.insert(0, str(REPO))

from kubernetes_asyncio import client as k8s  # noqa: E402

from benchmarks.support import (  # noqa: E402
    REQUEST_TIMEOUT,
    STARTUP_TIMEOUT,
    BenchError,
    ServerProcess,
    child_env,
    die_with_parent,
    expect,
    pool,
    require_at_least_one,
    run_server,
    status_kib,
    stop_process,
)
from controller_manager.cache import Indexer, share_item_strings  # noqa: E402
from controller_manager.client import KubeClient  # noqa: E402
from controller_manager.controller import Controller  # noqa: E402
from controller_manager.informer import FuncHandler, InformerFactory, SharedInformer  # noqa: E402
from controller_manager.manager import Manager, ManagerOptions  # noqa: E402
from controller_manager.objects import MutableObj, Obj  # noqa: E402
from controller_manager.ratelimiter import default_controller_rate_limiter  # noqa: E402
from controller_manager.reconcile import Request, Result  # noqa: E402
from controller_manager.workqueue import RateLimitingQueue  # noqa: E402
from kube_api.resources import CONFIGMAPS  # noqa: E402

NAMESPACE = "bench"
CTL_NAMESPACE = "bench-ctl"
WRITER_CONCURRENCY = 32


def configmap(namespace: str, i: int) -> dict[str, Any]:
    """A ConfigMap of realistic shape: four labels, three data keys (one a small config file)."""
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": f"cm-{i:06d}", "namespace": namespace,
            "labels": {"app.kubernetes.io/name": f"svc-{i % 50:02d}", "app.kubernetes.io/part-of": "bench",
                       "tier": ("frontend", "backend", "cache")[i % 3], "shard": str(i % 16)},
        },
        "data": {
            "LOG_LEVEL": ("info", "debug", "warn")[i % 3],
            "MAX_CONNECTIONS": str(100 + i % 400),
            "settings.yaml": (f"listen: 0.0.0.0:{8000 + i % 1000}\nupstream: svc-{i % 50:02d}.{namespace}.svc\n"
                              f"timeout: {5 + i % 25}s\nretries: {i % 5}\nid: {i}\n"),
        },
    }


# ------------------------------------------------------------------------------------------ processes


class Child:
    """This script in another process (``--child ROLE``), talking JSON lines over stdin/stdout."""

    def __init__(self, proc: asyncio.subprocess.Process, role: str) -> None:
        self.proc = proc
        self.role = role

    @classmethod
    @contextlib.asynccontextmanager
    async def run(cls, role: str, *args: str, stderr_path: Path) -> AsyncIterator[Child]:
        cmd = [sys.executable, str(SCRIPT), "--child", role, *args]
        with stderr_path.open("ab") as err:
            proc = await asyncio.create_subprocess_exec(*cmd, stdin=asyncio.subprocess.PIPE,
                                                        stdout=asyncio.subprocess.PIPE, stderr=err, cwd=REPO,
                                                        env=child_env(), preexec_fn=die_with_parent)
        try:
            yield cls(proc, role)
        finally:
            await stop_process(proc)

    async def read(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        except TimeoutError:
            raise BenchError(f"{self.role} child: no answer within {timeout:.0f}s") from None
        if not line:
            raise BenchError(f"{self.role} child exited (code {await self.proc.wait()}) without an answer")
        message: dict[str, Any] = json.loads(line)
        if "error" in message:
            raise BenchError(f"{self.role} child failed: {message['error']}")
        return message

    async def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        await self.proc.stdin.drain()


# ------------------------------------------------------------------------------------------ child roles


def _emit(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def child_create(url: str, namespace: str, count: int, time_limit: float) -> None:
    """Create the namespace and ``count`` ConfigMaps in it."""
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    connector = aiohttp.TCPConnector(limit=WRITER_CONCURRENCY)
    async with aiohttp.ClientSession(url, timeout=timeout, connector=connector) as http:
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        async with http.post("/api/v1/namespaces", json=ns) as resp:
            await expect(resp, 201, 409)
        path = f"/api/v1/namespaces/{namespace}/configmaps"

        async def create(i: int) -> None:
            async with http.post(path, json=configmap(namespace, i)) as resp:
                await expect(resp, 201)

        t0 = time.perf_counter()
        done = await pool(count, WRITER_CONCURRENCY, time_limit, create)
        _emit({"done": done, "seconds": time.perf_counter() - t0})


async def child_update(url: str, namespace: str, *, count: int, tag: str, verb: str, time_limit: float) -> None:
    """Say ready, wait for ``go`` on stdin, then set ``data.rev=tag`` on cm-0..count-1.

    ``put``: an unconditional PUT of the whole object (no resourceVersion: allowed for built-in kinds);
    ``patch``: a JSON merge patch of that one key.
    """
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    connector = aiohttp.TCPConnector(limit=WRITER_CONCURRENCY)
    async with aiohttp.ClientSession(url, timeout=timeout, connector=connector) as http:
        path = f"/api/v1/namespaces/{namespace}/configmaps"
        async with http.get(path, params={"limit": "1"}) as resp:  # warm the pool
            await expect(resp, 200)
        _emit({"ready": True})
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        if line.strip() != "go":
            return
        patch_body = json.dumps({"data": {"rev": tag}}).encode()
        headers = {"Content-Type": "application/merge-patch+json"}

        async def update(i: int) -> None:
            if verb == "patch":
                async with http.patch(f"{path}/cm-{i:06d}", data=patch_body, headers=headers) as resp:
                    await expect(resp, 200)
                return
            obj = configmap(namespace, i)
            obj["data"]["rev"] = tag
            async with http.put(f"{path}/cm-{i:06d}", json=obj) as resp:
                await expect(resp, 200)

        cpu0, t0 = time.process_time(), time.perf_counter()
        done = await pool(count, WRITER_CONCURRENCY, time_limit, update)
        _emit({"done": done, "seconds": time.perf_counter() - t0, "cpu": time.process_time() - cpu0})


def kube_client(url: str) -> KubeClient:
    return KubeClient(k8s.ApiClient(k8s.Configuration(host=url)), qps=0)


async def synced_informer(url: str, namespace: str, timeout: float) -> tuple[SharedInformer, float]:
    """An informer of ``namespace``'s ConfigMaps, synced, then stopped (its store kept); and the sync time."""
    kube = kube_client(url)
    factory = InformerFactory(kube)
    informer = factory.informer(CONFIGMAPS, namespace)
    try:
        t0 = time.perf_counter()
        factory.start()
        await factory.wait_for_sync(timeout=timeout)
        return informer, time.perf_counter() - t0
    finally:
        await factory.stop()
        await kube.close()


def rss_bytes() -> int:
    return status_kib("VmRSS") * 1024


def json_size(obj: Obj) -> int:
    """Bytes of the object as the API server sends it (compact JSON, UTF-8)."""
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())


@dataclass
class Footprint:
    """Bytes reachable from some objects, by kind, each Python object counted once (``sys.getsizeof``)."""

    bytes_by_kind: Counter[str] = field(default_factory=Counter)
    count_by_kind: Counter[str] = field(default_factory=Counter)
    # str value -> bytes of each distinct object holding it, to see what interning would save
    copies: dict[str, dict[str, list[int]]] = field(default_factory=lambda: {"key": {}, "value": {}})

    @property
    def total(self) -> int:
        return sum(self.bytes_by_kind.values())

    def duplicate_bytes(self, role: str) -> int:
        """Bytes held by second and later copies of equal strings in that role (what interning frees)."""
        return sum(sum(sizes) - sizes[0] for sizes in self.copies[role].values())


def footprint(objects: list[Obj]) -> Footprint:
    fp = Footprint()
    seen: set[int] = set()

    def walk(x: object, role: str, depth: int) -> None:
        if id(x) in seen:
            return
        seen.add(id(x))
        size = sys.getsizeof(x)
        if isinstance(x, str):
            kind = f"str ({role}s)"
            fp.copies[role].setdefault(x, []).append(size)
        elif isinstance(x, dict):
            kind = "dict (object)" if depth == 0 else "dict (nested)"
            for k, v in x.items():
                walk(k, "key", depth + 1)
                walk(v, "value", depth + 1)
        elif isinstance(x, list):
            kind = "list"
            for v in x:
                walk(v, "value", depth + 1)
        else:
            kind = type(x).__name__
        fp.bytes_by_kind[kind] += size
        fp.count_by_kind[kind] += 1

    for obj in objects:
        walk(obj, "value", 0)
    return fp


def store_overhead(store: Indexer) -> int:
    """Bytes of the store's own structures: the key → object dict, its key strings, the index sets."""
    items: dict[str, MutableObj] = store._items
    total = sys.getsizeof(items) + sum(sys.getsizeof(k) for k in items)
    for index in store._indices.values():
        total += sys.getsizeof(index)
        for value, keys in index.items():
            total += sys.getsizeof(value) + sys.getsizeof(keys)
    return total


def label_values_shared(obj: MutableObj, table: dict[str, str]) -> None:
    """What-if on top of ``share_strings``: also one copy of each label value (in place)."""
    labels = (obj.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        for k, v in labels.items():
            if isinstance(v, str):
                labels[k] = table.setdefault(v, v)


def list_pages(objects: list[Obj], page_size: int = 500) -> list[bytes]:
    """The objects as LIST pages, encoded like the API server's (compact JSON)."""
    return [json.dumps({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {},
                        "items": objects[i:i + page_size]}, separators=(",", ":")).encode()
            for i in range(0, len(objects), page_size)]


def watch_lines(objects: list[Obj]) -> list[bytes]:
    """The objects as watch-event lines, as the API server streams them (one JSON document each)."""
    return [json.dumps({"type": "MODIFIED", "object": o}, separators=(",", ":")).encode() for o in objects]


Fill = Callable[[], Indexer]


def fill_list(pages: list[bytes], shared: bool) -> Fill:
    """A store filled from LIST pages as ``SharedInformer._list`` does (json.loads per page, then
    ``Indexer.replace``), with ``share_item_strings`` on every item or, for comparison, without."""
    def fill() -> Indexer:
        items: list[MutableObj] = []
        for page in pages:
            page_items = json.loads(page)["items"]
            if shared:
                for item in page_items:
                    share_item_strings(item)
            items.extend(page_items)
        store = Indexer()
        store.replace(items)
        return store
    return fill


def fill_watch(lines: list[bytes], kube: KubeClient, mode: str) -> Fill:
    """A store filled from watch lines: ``informer`` through ``SharedInformer._handle`` (json.loads per line,
    as ``KubeClient.watch`` does); ``plain`` straight into ``Indexer.upsert`` (no shared strings);
    ``labels`` the informer path plus shared label values."""
    def fill() -> Indexer:
        if mode == "plain":
            store = Indexer()
            for line in lines:
                store.upsert(json.loads(line)["object"])
            return store
        informer = SharedInformer(kube, CONFIGMAPS, namespace=NAMESPACE)
        if mode == "labels":
            table: dict[str, str] = {}
            informer.add_event_handler(FuncHandler(
                add=lambda o, _initial: label_values_shared(o, table),
                update=lambda _old, new: label_values_shared(new, table)))
        for line in lines:
            informer._handle(json.loads(line))
        return informer.store
    return fill


def traced(fill: Fill) -> tuple[Indexer, int]:
    """A filled store and the bytes it retains (tracemalloc must be running)."""
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    store = fill()
    gc.collect()
    return store, tracemalloc.get_traced_memory()[0] - base


def seconds_per_object(fill: Fill, n: int, runs: int = 3) -> float:
    """Best-of-``runs`` seconds per object to fill a fresh store."""
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        store = fill()
        best = min(best, (time.perf_counter() - t0) / n)
        del store
    return best


def _breakdown(fp: Footprint, n: int) -> dict[str, Any]:
    return {"per_object": round(fp.total / n, 1),
            "by_kind": {k: [round(v / n, 1), round(fp.count_by_kind[k] / n, 2)]
                        for k, v in fp.bytes_by_kind.most_common()},
            "dup_key_bytes": round(fp.duplicate_bytes("key") / n, 1),
            "dup_value_bytes": round(fp.duplicate_bytes("value") / n, 1)}


async def child_memory(url: str, namespace: str, timeout: float) -> None:
    """Memory of an informer store of ``namespace``'s ConfigMaps (see the module docstring)."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    gc.collect()
    rss0 = rss_bytes()
    informer_a, _ = await synced_informer(url, namespace, timeout)
    gc.collect()
    rss_delta = rss_bytes() - rss0
    objects = informer_a.store.list()
    n = len(objects)
    if n == 0:
        raise BenchError("memory: the informer is empty")
    sizes = [json_size(o) for o in objects]
    overhead = store_overhead(informer_a.store)

    tracemalloc.start()
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    informer_b, _ = await synced_informer(url, namespace, timeout)
    gc.collect()
    traced_list = tracemalloc.get_traced_memory()[0] - base
    if len(informer_b.store) != n:
        raise BenchError(f"memory: second informer has {len(informer_b.store)} objects, wanted {n}")
    list_fp = footprint(informer_b.store.list())
    del informer_b

    pages, lines = list_pages(objects), watch_lines(objects)
    kube = kube_client(url)  # never used for requests: SharedInformer wants one
    try:
        fills = {"list": fill_list(pages, True), "list_plain": fill_list(pages, False),
                 "watch": fill_watch(lines, kube, "informer"),
                 "watch_plain": fill_watch(lines, kube, "plain"), "watch_labels": fill_watch(lines, kube, "labels")}
        retained: dict[str, int] = {}
        breakdowns: dict[str, dict[str, Any]] = {"list": _breakdown(list_fp, n)}
        for name, fill in fills.items():
            store, retained[name] = traced(fill)
            if len(store) != n:
                raise BenchError(f"memory: {name} store has {len(store)} objects, wanted {n}")
            if name in ("watch", "watch_plain"):
                breakdowns[name] = _breakdown(footprint(store.list()), n)
            del store
        tracemalloc.stop()
        timing = {name: seconds_per_object(fill, n) * 1e6 for name, fill in fills.items()}
    finally:
        await kube.close()
    _emit({
        "objects": n, "json_avg": sum(sizes) / n, "json_min": min(sizes), "json_max": max(sizes),
        "rss_delta": rss_delta, "traced_list": traced_list, "retained": retained, "store_overhead": overhead,
        "breakdowns": breakdowns, "decode_us": timing,
    })


def child_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="framework.py --child")
    p.add_argument("--child", required=True, choices=("create", "update", "memory"))
    p.add_argument("--url", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--tag", default="")
    p.add_argument("--verb", choices=("put", "patch"), default="put")
    p.add_argument("--time-limit", type=float, default=30.0)
    a = p.parse_args(argv)
    try:
        if a.child == "create":
            asyncio.run(child_create(a.url, a.namespace, a.count, a.time_limit))
        elif a.child == "update":
            asyncio.run(child_update(a.url, a.namespace, count=a.count, tag=a.tag, verb=a.verb,
                                     time_limit=a.time_limit))
        else:
            asyncio.run(child_memory(a.url, a.namespace, a.time_limit))
    except (BenchError, aiohttp.ClientError, TimeoutError, OSError) as exc:
        _emit({"error": f"{type(exc).__name__}: {exc}"})
        return 1
    return 0


# ------------------------------------------------------------------------------------------ phases


@contextlib.contextmanager
def profiled(args: argparse.Namespace, name: str) -> Iterator[None]:
    """With --cprofile DIR: cProfile this process during the phase, stats in DIR/<name>.pstats."""
    if args.cprofile is None:
        yield
        return
    prof = cProfile.Profile()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        prof.dump_stats(str(args.cprofile / f"{name}.pstats"))


@dataclass
class Ingest:
    seconds: list[float]
    client_cpu: list[float]
    server_cpu: list[float]
    objects: int


async def phase_ingest(args: argparse.Namespace, server: ServerProcess) -> tuple[Ingest, SharedInformer,
                                                                                 InformerFactory, KubeClient]:
    """Timed LIST into a fresh informer, ``--ingest-runs`` times; the last one is left running."""
    result = Ingest([], [], [], args.objects)
    for run in range(args.ingest_runs):
        gc.collect()
        kube = kube_client(server.url)
        factory = InformerFactory(kube)
        informer = factory.informer(CONFIGMAPS, NAMESPACE)
        with profiled(args, f"ingest{run + 1}"):
            cpu0, scpu0, t0 = time.process_time(), server.cpu_seconds(), time.perf_counter()
            factory.start()
            await factory.wait_for_sync(timeout=args.phase_time)
            seconds = time.perf_counter() - t0
            result.client_cpu.append(time.process_time() - cpu0)
            result.server_cpu.append(server.cpu_seconds() - scpu0)
        result.seconds.append(seconds)
        if len(informer.store) != args.objects:
            raise BenchError(f"ingest: informer holds {len(informer.store)} objects, wanted {args.objects}")
        if run == args.ingest_runs - 1:
            return result, informer, factory, kube
        await factory.stop()
        await kube.close()
        del informer, factory, kube
    raise AssertionError("unreachable")


@dataclass
class WatchIngest:
    updates: int
    seconds: float  # "go" → cache reflects every update
    writer_seconds: float  # the writer's own time for its writes
    lag: float  # writer done → cache reflects every update
    writer_cpu: float
    client_cpu: float
    server_cpu: float
    replay_seconds: float = 0.0  # the same events replayed from the server's watch history
    replay_cpu: float = 0.0


async def phase_watch(args: argparse.Namespace, server: ServerProcess, informer: SharedInformer,
                      tmp: Path) -> WatchIngest:
    n = args.watch_updates
    tag = f"w{time.time_ns()}"
    seen: set[str] = set()
    all_seen = asyncio.Event()

    def on_update(old: MutableObj, new: MutableObj) -> None:
        if (new.get("data") or {}).get("rev") == tag:
            seen.add(new["metadata"]["name"])
            if len(seen) >= n:
                all_seen.set()

    informer.add_event_handler(FuncHandler(update=on_update))
    rv_before = informer.last_sync_resource_version
    async with Child.run("update", "--url", server.url, "--namespace", NAMESPACE, "--count", str(n),
                         "--tag", tag, "--verb", args.writer_verb, "--time-limit", str(args.phase_time),
                         stderr_path=tmp / "writer.log") as writer:
        await writer.read(STARTUP_TIMEOUT)
        with profiled(args, "watch"):
            cpu0, scpu0, t0 = time.process_time(), server.cpu_seconds(), time.perf_counter()
            await writer.send("go")
            answer = await writer.read(args.phase_time + REQUEST_TIMEOUT)
            writer_done = time.perf_counter()
            if answer["done"] != n:
                raise BenchError(f"watch: the writer made {answer['done']}/{n} updates in {args.phase_time}s")
            try:
                await asyncio.wait_for(all_seen.wait(), args.phase_time)
            except TimeoutError:
                raise BenchError(f"watch: the cache reflects {len(seen)}/{n} updates {args.phase_time}s "
                                 "after the writes") from None
            t1 = time.perf_counter()
            client_cpu, server_cpu = time.process_time() - cpu0, server.cpu_seconds() - scpu0
    stale = [i for i in range(n)
             if ((informer.store.get(f"{NAMESPACE}/cm-{i:06d}") or {}).get("data") or {}).get("rev") != tag]
    if stale:
        raise BenchError(f"watch: {len(stale)} of the {n} updated objects are stale in the cache")
    result = WatchIngest(n, t1 - t0, float(answer["seconds"]), t1 - writer_done, float(answer["cpu"]), client_cpu,
                         server_cpu)
    result.replay_seconds, result.replay_cpu = await replay_watch(args, server, rv_before, n)
    return result


async def replay_watch(args: argparse.Namespace, server: ServerProcess, rv: str, n: int) -> tuple[float, float]:
    """The informer's watch loop body at full speed: the ``n`` events after ``rv``, replayed from the server's
    watch history, through ``KubeClient.watch`` into a fresh ``SharedInformer._handle`` (as
    ``_watch_until_failure`` does), with no writer holding it back. Returns (seconds, CPU seconds)."""
    kube = kube_client(server.url)
    informer = SharedInformer(kube, CONFIGMAPS, namespace=NAMESPACE)
    events = 0
    try:
        with profiled(args, "watch-replay"):
            cpu0, t0 = time.process_time(), time.perf_counter()
            async with asyncio.timeout(args.phase_time):
                async for event in kube.watch(CONFIGMAPS, NAMESPACE, resource_version=rv,
                                              timeout_seconds=int(args.phase_time) + 30):
                    informer._handle(event)
                    if event.get("type") != "BOOKMARK":
                        events += 1
                        if events >= n:
                            break
            seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    except TimeoutError:
        raise BenchError(f"watch replay: {events}/{n} events within {args.phase_time}s") from None
    finally:
        await kube.close()
    if events < n or len(informer.store) != n:
        raise BenchError(f"watch replay: {events} events, {len(informer.store)} objects cached, wanted {n}")
    return seconds, cpu


@dataclass
class QueueFigure:
    label: str
    cycles: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.cycles / self.seconds


async def phase_workqueue(args: argparse.Namespace) -> list[QueueFigure]:
    """add + get + done per item, on distinct ``Request`` items, like the informer → worker path."""
    items = [Request(NAMESPACE, f"cm-{i:06d}") for i in range(args.queue_items)]
    figures: list[QueueFigure] = []
    for metrics in (True, False):
        for pattern in ("burst", "steady"):
            name = f"bench-wq-{pattern}" if metrics else ""
            queue: RateLimitingQueue[Request] = RateLimitingQueue(default_controller_rate_limiter(), name=name,
                                                                  controller=name or None)
            best = float("inf")
            for _ in range(args.queue_runs):
                t0 = time.perf_counter()
                if pattern == "burst":  # the initial list: every key queued, then the workers drain it
                    for item in items:
                        queue.add(item)
                    for _ in range(len(items)):
                        got = await queue.get()
                        queue.done(got)
                else:  # steady state: one key at a time through the queue
                    for item in items:
                        queue.add(item)
                        got = await queue.get()
                        queue.done(got)
                best = min(best, time.perf_counter() - t0)
                if len(queue) or queue.processing():
                    raise BenchError("workqueue: not empty after a run")
                if time.perf_counter() - t0 > args.phase_time:
                    break
            label = f"{pattern}, metrics {'on' if metrics else 'off'}"
            figures.append(QueueFigure(label, len(items), best))
    return figures


@dataclass
class ControllerFigure:
    workers: int
    objects: int
    seconds: float  # run() → last initial reconcile done
    synced_after: float  # run() → informer synced
    client_cpu: float
    busiest_worker: int  # reconciles done by the worker that did the most


async def phase_controller(args: argparse.Namespace, server: ServerProcess, workers: int) -> ControllerFigure:
    n = args.controller_objects
    kube = kube_client(server.url)
    manager = Manager(kube, ManagerOptions(name="framework-bench", metrics_bind_address="127.0.0.1:0",
                                           health_probe_bind_address="127.0.0.1:0", leader_election=None))
    reconciled: set[Request] = set()
    by_worker: Counter[str] = Counter()
    all_done = asyncio.Event()

    async def reconcile(request: Request) -> Result | None:
        reconciled.add(request)
        task = asyncio.current_task()
        by_worker[task.get_name() if task is not None else ""] += 1
        if len(reconciled) >= n:
            all_done.set()
        return None

    controller = Controller(f"noop-{workers}w", reconcile, workers=workers)
    informer = manager.informer(CONFIGMAPS, CTL_NAMESPACE)
    controller.watches(informer)
    manager.add_controller(controller)
    synced_at = 0.0

    async def note_sync() -> None:
        nonlocal synced_at
        await informer.wait_for_sync()
        synced_at = time.perf_counter()

    gc.collect()
    try:
        with profiled(args, f"controller-{workers}w"):
            cpu0, t0 = time.process_time(), time.perf_counter()
            run = asyncio.create_task(manager.run(), name="manager")
            sync = asyncio.create_task(note_sync())
            try:
                await asyncio.wait_for(all_done.wait(), args.phase_time)
            except TimeoutError:
                raise BenchError(f"controller ({workers} workers): {len(reconciled)}/{n} reconciled "
                                 f"within {args.phase_time}s") from None
            finally:
                seconds = time.perf_counter() - t0
                client_cpu = time.process_time() - cpu0
                sync.cancel()
                manager.request_shutdown()
                try:
                    await asyncio.wait_for(run, 15.0)
                except TimeoutError:
                    raise BenchError("controller: the manager did not stop within 15s") from None
    finally:
        await kube.close()
    if "metrics" not in manager.bound:
        raise BenchError("controller: the manager did not serve metrics")
    return ControllerFigure(workers, len(reconciled), seconds, synced_at - t0, client_cpu,
                            max(by_worker.values(), default=0))


# ------------------------------------------------------------------------------------------ main


def _median(values: list[float]) -> float:
    return statistics.median(values)


async def bench(args: argparse.Namespace, tmp: Path) -> None:
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    storage = f"SQLite in {args.data_dir}" if args.data_dir else "in-memory storage"
    print(f"framework benchmark: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}, API server: child process, {storage}", flush=True)
    data = ["--data-dir", str(args.data_dir)] if args.data_dir is not None else []
    async with run_server(tmp / "server.log", "--no-karmada", *data) as server:
        print(f"server pid {server.proc.pid} at {server.url}", flush=True)

        # -- preload, untimed, from the writer child
        for namespace, count in ((NAMESPACE, args.objects), (CTL_NAMESPACE, args.controller_objects)):
            t0 = time.perf_counter()
            async with Child.run("create", "--url", server.url, "--namespace", namespace, "--count", str(count),
                                 "--time-limit", str(args.phase_time), stderr_path=tmp / "writer.log") as writer:
                answer = await writer.read(args.phase_time + REQUEST_TIMEOUT)
            if answer["done"] != count:
                raise BenchError(f"preload: {answer['done']}/{count} ConfigMaps created in {args.phase_time}s")
            print(f"preloaded {count:,} ConfigMaps into {namespace} in {time.perf_counter() - t0:.1f}s "
                  f"({count / answer['seconds']:,.0f} creates/s)", flush=True)

        # -- 2. memory, in a fresh process (first, so the objects are exactly as created)
        async with Child.run("memory", "--url", server.url, "--namespace", NAMESPACE,
                             "--time-limit", str(args.phase_time), stderr_path=tmp / "memory.log") as child:
            mem = await child.read(args.phase_time * 3 + REQUEST_TIMEOUT)

        # -- 1. informer ingest (LIST), then live watch ingest
        ingest, informer, factory, kube = await phase_ingest(args, server)
        try:
            sizes = [json_size(o) for o in informer.store.list()]
            json_avg = sum(sizes) / len(sizes)
            med = _median(ingest.seconds)
            print(f"\n1. informer ingest, {ingest.objects:,} ConfigMaps (avg {json_avg:.0f} bytes of JSON each, "
                  f"{min(sizes)}-{max(sizes)}), LIST pages of 500, {args.ingest_runs} run(s):")
            print(f"   start → has_synced: median {med * 1000:.0f} ms = {ingest.objects / med:,.0f} objects/s "
                  f"(runs: {', '.join(f'{s * 1000:.0f}' for s in ingest.seconds)} ms)")
            print(f"   CPU per object: informer process {_median(ingest.client_cpu) / ingest.objects * 1e6:.1f} us, "
                  f"API server {_median(ingest.server_cpu) / ingest.objects * 1e6:.1f} us")
            watch = await phase_watch(args, server, informer, tmp)
        finally:
            await factory.stop()
            await kube.close()
        verb = {"put": "PUTs", "patch": "merge PATCHes"}[args.writer_verb]
        print(f"   live watch: {watch.updates:,} {verb} by a writer process (32 in flight) → cache "
              f"reflects all in {watch.seconds:.2f}s = {watch.updates / watch.seconds:,.0f} updates/s")
        print(f"     writer's own time {watch.writer_seconds:.2f}s ({watch.updates / watch.writer_seconds:,.0f} "
              f"writes/s); cache caught up {watch.lag * 1000:.0f} ms after the last write")
        print(f"     CPU per update: informer process {watch.client_cpu / watch.updates * 1e6:.1f} us, "
              f"API server {watch.server_cpu / watch.updates * 1e6:.1f} us (write + watch event; "
              f"{watch.server_cpu / watch.seconds:.0%} of a core), writer {watch.writer_cpu / watch.updates * 1e6:.1f}"
              f" us")
        print(f"   watch replay: the same {watch.updates:,} events from the server's watch history through "
              f"KubeClient.watch → SharedInformer._handle: {watch.replay_seconds:.2f}s = "
              f"{watch.updates / watch.replay_seconds:,.0f} events/s, {watch.replay_cpu / watch.updates * 1e6:.1f} us "
              "CPU per event in the informer process", flush=True)

        report_memory(mem)

        # -- 3. workqueue
        figures = await phase_workqueue(args)
        print(f"\n3. workqueue (RateLimitingQueue of Request keys, {args.queue_items:,} distinct items, "
              f"best of {args.queue_runs}): add + get + done cycles/s (ops/s = 3 x cycles)")
        for f in figures:
            print(f"   {f.label:<22} {f.rate:>10,.0f} cycles/s {3 * f.rate:>10,.0f} ops/s "
                  f"{f.seconds / f.cycles * 1e6:>6.2f} us/cycle")

        # -- 4. controller
        print(f"\n4. no-op controller over {args.controller_objects:,} ConfigMaps (Manager.run() → all initial "
              "reconciles done):")
        for workers in args.workers:
            c = await phase_controller(args, server, workers)
            after_sync = c.seconds - c.synced_after
            print(f"   {workers} worker(s): {c.seconds * 1000:.0f} ms = {c.objects / c.seconds:,.0f} reconciles/s "
                  f"(informer synced after {c.synced_after * 1000:.0f} ms; reconciling alone "
                  f"{c.objects / after_sync:,.0f}/s; {c.client_cpu / c.objects * 1e6:.0f} us CPU per object; "
                  f"busiest worker did {c.busiest_worker:,})", flush=True)
        print(f"\nserver peak RSS (VmHWM) {status_kib('VmHWM', server.proc.pid) / 1024:.0f} MiB; "
              f"this process {status_kib('VmHWM') / 1024:.0f} MiB")


def report_memory(m: dict[str, Any]) -> None:
    n = m["objects"]
    avg = m["json_avg"]
    r = m["retained"]
    us = m["decode_us"]

    def line(label: str, total: float, cost: str = "") -> None:
        print(f"   {label:<70} {total / n:>6,.0f} B/object {total / n / avg:>5.2f}x JSON  {cost}")

    print(f"\n2. memory of an informer holding {n:,} ConfigMaps (fresh process; avg JSON {avg:.0f} bytes, "
          f"{m['json_min']}-{m['json_max']}):")
    line("RSS delta, informer start → has_synced (after gc)", m["rss_delta"])
    line("tracemalloc: retained by the informer filled by LIST", m["traced_list"])
    line("  same from the pages offline (json.loads + share_item_strings + replace)", r["list"],
         f"decode+fill {us['list']:.1f} us/object")
    line("  same without shared strings (json.loads + replace)", r["list_plain"],
         f"decode+fill {us['list_plain']:.1f} us/object")
    line("tracemalloc: store filled by watch events, via SharedInformer._handle", r["watch"],
         f"decode+fill {us['watch']:.1f} us/event")
    line("  same without shared strings (json.loads + Indexer.upsert)", r["watch_plain"],
         f"decode+fill {us['watch_plain']:.1f} us/event")
    line("  same with label values shared too (what-if)", r["watch_labels"],
         f"decode+fill {us['watch_labels']:.1f} us/event")
    print(f"   of which the Indexer's own structures (key dict, key strings, namespace index): "
          f"{m['store_overhead'] / n:,.0f} B/object")
    titles = {"list": "filled by LIST", "watch": "filled by watch", "watch_plain": "watch, no shared strings"}
    for key, title in titles.items():
        b = m["breakdowns"][key]
        parts = ", ".join(f"{k} {v[0]:.0f} ({v[1]:g})" for k, v in b["by_kind"].items())
        print(f"   objects {title}: {b['per_object']:.0f} B/object by getsizeof [bytes (count) per object]: "
              f"{parts}; duplicate key strings {b['dup_key_bytes']:.0f} B, duplicate value strings "
              f"{b['dup_value_bytes']:.0f} B", flush=True)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--data-dir", type=Path, metavar="DIR", help="SQLite storage in DIR (default: in memory)")
    p.add_argument("--objects", type=int, default=20_000, help="ConfigMaps for the informer and memory phases")
    p.add_argument("--ingest-runs", type=int, default=5, help="timed LIST ingests (median reported)")
    p.add_argument("--watch-updates", type=int, default=10_000, help="updates in the live watch phase")
    p.add_argument("--writer-verb", choices=("put", "patch"), default="put",
                   help="how the writer updates in the watch phase: unconditional PUT, or merge PATCH")
    p.add_argument("--queue-items", type=int, default=50_000, help="distinct items per workqueue run")
    p.add_argument("--queue-runs", type=int, default=3, help="workqueue runs per variant (best reported)")
    p.add_argument("--controller-objects", type=int, default=10_000, help="ConfigMaps the controller watches")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 4], help="controller worker counts to run")
    p.add_argument("--phase-time", type=float, default=30.0, help="time limit of each phase, seconds")
    p.add_argument("--time-limit", type=float, default=120.0, help="time limit of the whole benchmark, seconds")
    p.add_argument("--cprofile", type=Path, metavar="DIR", help="dump cProfile stats of each timed phase here")
    args = p.parse_args()
    require_at_least_one(p, args, "objects", "ingest_runs", "watch_updates", "queue_items", "queue_runs",
                         "controller_objects")
    if args.watch_updates > args.objects:
        p.error("--watch-updates must not exceed --objects (one update per object)")
    if any(w < 1 for w in args.workers):
        p.error("--workers must be at least 1")
    return args


def main() -> int:
    if "--child" in sys.argv[1:]:
        return child_main(sys.argv[1:])
    args = parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if args.data_dir is not None and args.data_dir.exists() and any(args.data_dir.iterdir()):
        print(f"--data-dir {args.data_dir} is not empty", file=sys.stderr)
        return 2
    if args.cprofile is not None:
        args.cprofile.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    async def bounded() -> None:
        try:
            async with asyncio.timeout(args.time_limit):
                await bench(args, tmp)
        except TimeoutError:
            raise BenchError(f"the benchmark passed --time-limit {args.time_limit:.0f}s") from None

    with tempfile.TemporaryDirectory(prefix="framework-bench-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            asyncio.run(bounded())
        except BenchError as exc:
            print(f"benchmark failed: {exc}", file=sys.stderr)
            for log_name in ("server.log", "writer.log", "memory.log"):
                with contextlib.suppress(OSError):
                    tail = (tmp / log_name).read_text(errors="replace").splitlines()[-10:]
                    if tail:
                        print(f"--- {log_name} (tail)\n" + "\n".join(tail), file=sys.stderr)
            return 1
        except (KeyboardInterrupt, asyncio.CancelledError):
            print("interrupted", file=sys.stderr)
            return 130
    print(f"total {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
