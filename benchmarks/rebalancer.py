"""WorkloadRebalancer throughput: the controller-manager against the same API writes issued directly.

For each ``--sizes`` N (default 100 and 1,000 rebalancers of ``--workloads`` = 10 workloads each):

1. controller   a fresh dev API server (``python -m devplane apiserver --port 0``, in-memory storage) in a
                child process; N x 10 ResourceBindings created in ``--namespaces`` namespaces (POST, then a
                status PATCH: ``lastScheduledTime`` an hour ago and the ``FullyApplied`` condition that the
                binding-status controller would write, so its start-up writes nothing); then
                ``python -m controller_manager --kubeconfig F --leader-elect=false --kube-api-qps=-1`` (all
                default controllers, metrics and probes on free 127.0.0.1 ports) in a child process, waited
                for until ``/readyz`` answers 200 and its work queues are idle. Timed: from the first POST of
                the N rebalancers (16 connections) until a watch on rebalancers has seen ``status.finishTime``
                on every one. Then checked (untimed): every binding carries the rebalancer's
                ``creationTimestamp`` as ``spec.rescheduleTriggeredAt``, every item is ``Successful``.
                Also: the controller-manager's peak RSS (``VmHWM``) and CPU time, the server's CPU time.
2. ceiling      another fresh server with the same bindings; no controller. Timed: the same writes as in the
                controller run, issued by this process over 16 connections. For each rebalancer: its POST, one PUT
                per binding setting ``spec.rescheduleTriggeredAt`` (with the binding's current resourceVersion),
                the controller-manager's Event POSTs (as many as it made in its timed window, spread evenly over
                the bindings), then one status merge PATCH (all items ``Successful``, ``finishTime``), until, as
                in the controller run, a watch has seen every ``finishTime``. Even rounds run it before the
                controller run (with the previous controller run's Event count).
3. minimal      (skipped with ``--no-minimal``) a stricter ceiling on a third fresh server: the rebalancers are
                created before the timing, and only the binding PUTs and the status PATCHes are timed.

Before the timing, each run also finishes ``--warm-up`` rebalancers (default 10) on bindings of their own
(namespace ``warm-up-0``): the controller-manager through its controllers, the ceiling with the same writes.
The timed window then measures the steady state, not the opening of connections or first calls.

The ratio controller/ceiling says how far the controller is from being limited by the API server
alone (the goal, issue 19: within 1.1x, ``AIM``). What the controller run has beyond the ceiling is
the controller-manager itself: its CPU next to the server's, and its informers' watches. Every phase is
bounded in count and time, the whole benchmark by ``--time-limit``; the children are always stopped (and
die with us), the temp dir is removed.

    .venv/bin/python benchmarks/rebalancer.py                      # 100 and 1,000 rebalancers, 3 rounds (~2 min)
    .venv/bin/python benchmarks/rebalancer.py --no-minimal         # without the third run
    .venv/bin/python benchmarks/rebalancer.py --sizes 1000 --profile DIR   # py-spy the controller-manager
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

SCRIPT = Path(__file__).resolve()
REPO = SCRIPT.parent.parent
if str(REPO) not in sys.path:  # run as a script: make devplane importable without installing
    sys.path.insert(0, str(REPO))

from benchmarks.support import (  # noqa: E402
    REQUEST_TIMEOUT,
    BenchError,
    child_env,
    connector,
    cpu_seconds,
    die_with_parent,
    expect,
    free_port,
    log_tail,
    pool,
    positive_counts,
    preemptions,
    prepare_profile_dir,
    py_spy_recording,
    require_at_least_one,
    run_in_tmp,
    run_server,
    status_kib,
    stop_process,
    watch_until_all,
)
from controllers.bindingstatus import fully_applied_condition  # noqa: E402
from devplane.kubeconfig import write_kubeconfig  # noqa: E402
from karmada_api.rebalancers import rebalancer_body  # noqa: E402
from karmada_api.shapes import BindingSpec, Workload  # noqa: E402
from kube_api.timeutil import format_time  # noqa: E402

RB_GROUP = "/apis/work.karmada.io/v1alpha2"
WR_PATH = "/apis/apps.karmada.io/v1alpha1/workloadrebalancers"
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}
AIM = 1.1  # controller / ceiling, issue 19 (was 1.3)
# The controller-manager's main() with every informer of its manager parsed (ManagerOptions.compact_caches).
PARSED_PROGRAM = ("-c", "import dataclasses, sys; import controller_manager.manager as m; init = m.Manager.__init__; "
                  "m.Manager.__init__ = lambda self, client, options: init(self, client, "
                  "dataclasses.replace(options, compact_caches=False)); "
                  "import controllers.app as app; sys.exit(app.main(sys.argv[1:]))")
WORKERS_PATCH = ("import sys; import controllers.app as app; app.REBALANCER_WORKERS = int(sys.argv[1]); "
                 "sys.exit(app.main(sys.argv[2:]))")


# ------------------------------------------------------------------------------------------ processes


@dataclass
class ControllerProcess:
    proc: asyncio.subprocess.Process
    health: str
    metrics: str
    log_path: Path


@contextlib.asynccontextmanager
async def run_controller_manager(kubeconfig: Path, log_path: Path, extra: list[str], workers: int | None, *,
                                 program: Sequence[str] = ()) -> AsyncIterator[ControllerProcess]:
    """The controller-manager; ``program``: Python's arguments before its flags (e.g. under ``-m cProfile``)."""
    health, metrics = free_port(), free_port()
    # python -m controller_manager; with --workers, the same main() with REBALANCER_WORKERS patched
    if not program:
        program = ("-m", "controller_manager") if workers is None else ("-c", WORKERS_PATCH, str(workers))
    cmd = [sys.executable, *program, "--kubeconfig", str(kubeconfig), "--leader-elect=false",
           "--kube-api-qps=-1", f"--metrics-bind-address=127.0.0.1:{metrics}",
           f"--health-probe-bind-address=127.0.0.1:{health}", *extra]
    with log_path.open("wb") as log_file:
        proc = await asyncio.create_subprocess_exec(*cmd, stdout=log_file, stderr=log_file,
                                                    stdin=asyncio.subprocess.DEVNULL, cwd=REPO, env=child_env(),
                                                    preexec_fn=die_with_parent)
    try:
        yield ControllerProcess(proc, f"http://127.0.0.1:{health}", f"http://127.0.0.1:{metrics}", log_path)
    finally:
        await stop_process(proc, grace=10.0)


def profiled(directory: Path | None, pids: dict[str, int]) -> contextlib.AbstractAsyncContextManager[None]:
    """With --profile DIR: py-spy samples each process (GIL holder only), collapsed stacks in DIR/<name>.txt."""
    outputs = {directory / f"{name}.txt": pid for name, pid in pids.items()} if directory else {}
    return py_spy_recording(outputs, rate=250, flags=("--gil", "--nonblocking"))


# ------------------------------------------------------------------------------------------ HTTP helpers


def session(url: str, connections: int) -> aiohttp.ClientSession:
    return aiohttp.ClientSession(url, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT),
                                 connector=connector(connections))


# ------------------------------------------------------------------------------------------ the data


@dataclass(frozen=True)
class Layout:
    """N rebalancers of ``workloads`` Deployments each; Deployment k lives in namespace k % namespaces.

    Names start with ``prefix``: its namespaces are ``<prefix>-<n>`` and its rebalancers ``<prefix>-<i>``,
    so that the warm-up's objects and the timed ones never mix.
    """

    rebalancers: int
    workloads: int
    namespaces: int
    prefix: str = "bench"

    @property
    def bindings(self) -> int:
        return self.rebalancers * self.workloads

    def namespace(self, k: int) -> str:
        return f"{self.prefix}-{k % self.namespaces}"

    def owns(self, obj: dict[str, Any]) -> bool:
        """A rebalancer or binding of this layout."""
        meta = obj.get("metadata") or {}
        return str(meta.get("namespace") or meta.get("name", "")).startswith(f"{self.prefix}-")

    def warm_up(self, rebalancers: int) -> Layout:
        """A smaller layout of its own, in its own namespace, for the untimed warm-up."""
        return Layout(rebalancers, self.workloads, 1, "warm-up")

    @staticmethod
    def deployment(k: int) -> str:
        return f"app-{k:06d}"

    def binding_path(self, k: int) -> str:
        return f"{RB_GROUP}/namespaces/{self.namespace(k)}/resourcebindings/{self.deployment(k)}-deployment"

    def rebalancer_name(self, i: int) -> str:
        return f"{self.prefix}-{i:05d}"

    def workload_refs(self, i: int) -> list[Workload]:
        return [{"apiVersion": "apps/v1", "kind": "Deployment", "name": self.deployment(k),
                 "namespace": self.namespace(k)} for k in range(i * self.workloads, (i + 1) * self.workloads)]

    def rebalancer(self, i: int) -> dict[str, Any]:
        return rebalancer_body({"name": self.rebalancer_name(i)}, self.workload_refs(i), None)


async def populate(http: aiohttp.ClientSession, layout: Layout, concurrency: int,
                   time_limit: float) -> list[dict[str, Any]]:
    """The namespaces and bindings (POST, then a status PATCH); the bindings as the server returned them.

    The status is the steady state the controller-manager's binding-status controller leaves behind
    (``lastScheduledTime`` an hour ago and its ``FullyApplied`` condition), so that its start-up writes
    nothing and both runs PUT the very same objects.
    """
    for n in range(layout.namespaces):
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": layout.namespace(n)}}
        async with http.post("/api/v1/namespaces", json=ns) as resp:
            await expect(resp, 201)
    hour_ago = format_time(datetime.now(UTC) - timedelta(hours=1))
    spec = BindingSpec(replicas=2)
    condition = {**fully_applied_condition(spec, []), "lastTransitionTime": hour_ago}
    status_patch = json.dumps({"status": {"lastScheduledTime": hour_ago, "conditions": [condition]}}).encode()
    bindings: list[dict[str, Any]] = [{} for _ in range(layout.bindings)]

    async def create(k: int) -> None:
        name, namespace = layout.deployment(k), layout.namespace(k)
        body = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                "metadata": {"name": f"{name}-deployment", "namespace": namespace},
                "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                      "namespace": namespace},
                         **spec}}
        async with http.post(f"{RB_GROUP}/namespaces/{namespace}/resourcebindings", json=body) as resp:
            await expect(resp, 201)
        async with http.patch(f"{layout.binding_path(k)}/status", data=status_patch, headers=MERGE_PATCH) as resp:
            bindings[k] = json.loads(await expect(resp, 200))

    done = await pool(layout.bindings, concurrency, time_limit, create)
    if done < layout.bindings:
        raise BenchError(f"populate: only {done}/{layout.bindings} bindings within {time_limit:.0f}s")
    return bindings


async def create_rebalancers(http: aiohttp.ClientSession, layout: Layout, concurrency: int,
                             time_limit: float) -> list[dict[str, Any]]:
    created: list[dict[str, Any]] = [{} for _ in range(layout.rebalancers)]

    async def create(i: int) -> None:
        async with http.post(WR_PATH, json=layout.rebalancer(i)) as resp:
            created[i] = json.loads(await expect(resp, 201))

    done = await pool(layout.rebalancers, concurrency, time_limit, create)
    if done < layout.rebalancers:
        raise BenchError(f"only {done}/{layout.rebalancers} rebalancers created within {time_limit:.0f}s")
    return created


async def list_items(http: aiohttp.ClientSession, path: str) -> list[dict[str, Any]]:
    async with http.get(path) as resp:
        items: list[dict[str, Any]] = json.loads(await expect(resp, 200))["items"]
    return items


async def check_results(http: aiohttp.ClientSession, layout: Layout) -> None:
    """Every rebalancer finished with every item Successful; every binding triggered at its creationTimestamp."""
    rebalancers = [wr for wr in await list_items(http, WR_PATH) if layout.owns(wr)]
    created: dict[str, str] = {}
    for wr in rebalancers:
        items = (wr.get("status") or {}).get("observedWorkloads") or []
        if len(items) != layout.workloads or any(item.get("result") != "Successful" for item in items):
            raise BenchError(f"rebalancer {wr['metadata']['name']}: status {wr.get('status')}")
        for ref in wr["spec"]["workloads"]:
            created[f"{ref['namespace']}/{ref['name']}-deployment"] = wr["metadata"]["creationTimestamp"]
    if len(rebalancers) != layout.rebalancers:
        raise BenchError(f"{len(rebalancers)} rebalancers, wanted {layout.rebalancers}")
    bindings = [b for b in await list_items(http, f"{RB_GROUP}/resourcebindings") if layout.owns(b)]
    wrong = [b["metadata"]["name"] for b in bindings
             if b["spec"].get("rescheduleTriggeredAt") != created.get(f"{b['metadata']['namespace']}/"
                                                                       f"{b['metadata']['name']}")]
    if len(bindings) != layout.bindings or wrong:
        raise BenchError(f"{len(bindings)} bindings, {len(wrong)} without the expected trigger: {wrong[:5]}")


# ------------------------------------------------------------------------------------------ phases


@dataclass
class ControllerRun:
    seconds: float
    create_seconds: float
    startup_seconds: float
    peak_rss_kib: int
    controller_cpu: float
    server_cpu: float
    requests: dict[str, float] = field(default_factory=dict)
    collections: dict[str, float] = field(default_factory=dict)
    """The controller-manager's garbage collections in the timed window, by generation."""
    server_preemptions: int = 0


@dataclass
class CeilingRun:
    seconds: float
    server_cpu: float
    client_cpu: float
    requests: dict[str, int]
    server_preemptions: int = 0


_METRIC = re.compile(r'^(\w+)\{([^}]*)\} (\S+)$')


Samples = list[tuple[str, str, float]]
"""A scrape: (metric name, its labels as written, value) per line."""


async def scrape(http: aiohttp.ClientSession, url: str) -> Samples:
    async with http.get(url + "/metrics") as resp:
        text = (await expect(resp, 200)).decode()
    out = []
    for line in text.splitlines():
        match = _METRIC.match(line)
        if match:
            out.append((match.group(1), match.group(2), float(match.group(3))))
    return out


def counted_by(samples: Sequence[tuple[str, str, float]], name: str, label: str,
               before: Sequence[tuple[str, str, float]] = ()) -> dict[str, float]:
    """The counter ``name`` of a scrape summed by the value of its label ``label`` ("?" where it has none), less
    what an earlier scrape ``before`` counted: the requests by method, reconciles by controller..."""
    earlier = {labels: value for metric, labels, value in before if metric == name}
    pattern = re.compile(rf'(?:^|,){re.escape(label)}="([^"]*)"')
    counts: dict[str, float] = {}
    for metric, labels, value in samples:
        if metric == name:
            found = pattern.search(labels)
            key = found.group(1) if found else "?"
            counts[key] = counts.get(key, 0.0) + value - earlier.get(labels, 0.0)
    return counts


async def wait_until_idle(http: aiohttp.ClientSession, cm: ControllerProcess, time_limit: float, *,
                          probe: str = "/readyz") -> float:
    """Wait for ``probe`` to answer 200 (/readyz; Karmada's Go controller-manager serves /healthz only), then until
    the start-up work is over: work queues empty, no active worker and no
    request made (events still being written count) over three polls 0.2 s apart. Returns the seconds waited."""
    t0 = time.monotonic()
    deadline = t0 + time_limit
    quiet = 0
    last_requests = -1.0
    for _ in range(int(time_limit / 0.2) + 1):
        if cm.proc.returncode is not None:
            raise BenchError(f"controller-manager exited ({cm.proc.returncode}):\n{log_tail(cm.log_path)}")
        if time.monotonic() > deadline:
            raise BenchError(f"controller-manager not ready and idle within {time_limit:.0f}s:\n"
                             f"{log_tail(cm.log_path)}")
        idle = False
        try:
            async with http.get(cm.health + probe) as resp:
                await resp.read()
            if resp.status == 200:
                metrics = await scrape(http, cm.metrics)
                requests = sum(v for n, _, v in metrics if n == "rest_client_requests_total")
                busy = any(v > 0 for n, _, v in metrics
                           if n in ("workqueue_depth", "controller_runtime_active_workers"))
                idle = not busy and requests == last_requests
                last_requests = requests
        except aiohttp.ClientError:
            pass
        quiet = quiet + 1 if idle else 0
        if quiet >= 3:
            return time.monotonic() - t0
        await asyncio.sleep(0.2)
    raise BenchError("controller-manager never became idle")


async def watch_finished(url: str, resource_version: str, layout: Layout, started: asyncio.Event,
                         time_limit: float) -> float:
    """Watch rebalancers from ``resource_version``; the monotonic time when all of ``layout``'s have a finishTime."""

    def finished(obj: dict[str, Any]) -> bool:
        return layout.owns(obj) and bool((obj.get("status") or {}).get("finishTime"))

    return await watch_until_all(url, WR_PATH, resource_version, want=layout.rebalancers, done=finished,
                                 started=started, time_limit=time_limit)


async def current_resource_version(http: aiohttp.ClientSession) -> str:
    async with http.get(WR_PATH, params={"limit": "1"}) as resp:
        rv: str = json.loads(await expect(resp, 200))["metadata"]["resourceVersion"]
    return rv


@contextlib.asynccontextmanager
async def finishes_seen(http: aiohttp.ClientSession, url: str, layout: Layout,
                        time_limit: float) -> AsyncIterator[asyncio.Task[float]]:
    """A watch on rebalancers, open from now on when the block starts. The block awaits the task it gets:
    the monotonic time when every one of ``layout``'s rebalancers had a finishTime."""
    watching = asyncio.Event()
    watcher = asyncio.create_task(watch_finished(url, await current_resource_version(http), layout, watching,
                                                 time_limit))
    try:
        await asyncio.wait_for(watching.wait(), REQUEST_TIMEOUT)
        yield watcher
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)


async def controller_phase(args: argparse.Namespace, layout: Layout, tmp: Path, tag: str) -> ControllerRun:
    warm_up = layout.warm_up(args.warm_up)
    async with run_server(tmp / f"server-{tag}.log") as server, session(server.url, args.concurrency) as http:
        await populate(http, layout, args.concurrency, args.phase_time)
        if warm_up.rebalancers:
            await populate(http, warm_up, args.concurrency, args.phase_time)
        kubeconfig = tmp / f"kubeconfig-{tag}"
        write_kubeconfig(kubeconfig, {"karmada-apiserver": server.url}, "karmada-apiserver")
        extra = [f"--controllers={args.controllers}"] if args.controllers else []
        async with run_controller_manager(kubeconfig, tmp / f"controller-manager-{tag}.log", extra,
                                          args.workers, program=PARSED_PROGRAM if args.store == "parsed" else ()) as cm:
            startup = await wait_until_idle(http, cm, args.phase_time)
            if warm_up.rebalancers:  # untimed: created together, waited for until all finished
                async with finishes_seen(http, server.url, warm_up, args.phase_time) as warmed:
                    await create_rebalancers(http, warm_up, args.concurrency, args.phase_time)
                    await asyncio.wait_for(warmed, args.phase_time)
                await wait_until_idle(http, cm, args.phase_time)
            before = await scrape(http, cm.metrics)
            async with (finishes_seen(http, server.url, layout, args.phase_time) as watcher,
                        profiled(args.profile, {f"controller-manager-{tag}": cm.proc.pid,
                                                f"server-{tag}": server.proc.pid})):
                cm_cpu0, server_cpu0 = cpu_seconds(cm.proc.pid), cpu_seconds(server.proc.pid)
                preempted0 = preemptions(server.proc.pid)
                t0 = time.monotonic()
                await create_rebalancers(http, layout, args.concurrency, args.phase_time)
                created = time.monotonic()
                finished = await asyncio.wait_for(watcher, args.phase_time)
                cm_cpu, server_cpu = cpu_seconds(cm.proc.pid) - cm_cpu0, cpu_seconds(server.proc.pid) - server_cpu0
                preempted = preemptions(server.proc.pid) - preempted0
            peak = status_kib("VmHWM", cm.proc.pid)
            after = await scrape(http, cm.metrics)
            requests = counted_by(after, "rest_client_requests_total", "method", before)
            collections = counted_by(after, "python_gc_collections_total", "generation", before)
        await check_results(http, layout)
        if warm_up.rebalancers:
            await check_results(http, warm_up)
    return ControllerRun(finished - t0, created - t0, startup, peak, cm_cpu, server_cpu, requests, collections,
                         preempted)


def event_for(layout: Layout, i: int, k: int) -> dict[str, Any]:
    """An Event like the rebalancer's recorder writes for workload ``k`` of rebalancer ``i``."""
    now = format_time(datetime.now(UTC))
    ref = {"kind": "WorkloadRebalancer", "name": layout.rebalancer_name(i), "apiVersion": "apps.karmada.io/v1alpha1"}
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{layout.rebalancer_name(i)}.{time.time_ns():x}", "namespace": "default"},
            "involvedObject": ref, "reason": "RescheduleTriggered", "type": "Normal",
            "message": f"apps/v1 Deployment {layout.namespace(k)}/{layout.deployment(k)}: rescheduling triggered",
            "source": {"component": "workload-rebalancer"}, "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "reportingComponent": "workload-rebalancer", "reportingInstance": ""}


async def direct_writes(http: aiohttp.ClientSession, layout: Layout, args: argparse.Namespace, *,
                        events: int | None, counts: dict[str, int]) -> Callable[[int], Awaitable[None]]:
    """``layout``'s bindings (and with ``events`` None, its rebalancers) created; then what the controller-manager
    writes for rebalancer ``i``, as one function (see ceiling_phase)."""
    bindings = await populate(http, layout, args.concurrency, args.phase_time)
    rebalancers: list[dict[str, Any]] = [{} for _ in range(layout.rebalancers)]
    if events is None:
        rebalancers = await create_rebalancers(http, layout, args.concurrency, args.phase_time)

    async def rebalance(i: int) -> None:
        if events is not None:
            async with http.post(WR_PATH, json=layout.rebalancer(i)) as resp:
                rebalancers[i] = json.loads(await expect(resp, 201))
            counts["POST"] += 1
        trigger = rebalancers[i]["metadata"]["creationTimestamp"]
        for k in range(i * layout.workloads, (i + 1) * layout.workloads):
            binding = bindings[k]  # as the server last returned it: its resourceVersion is current
            updated = {**binding, "spec": {**binding["spec"], "rescheduleTriggeredAt": trigger}}
            async with http.put(layout.binding_path(k), json=updated) as resp:
                await expect(resp, 200)
            counts["PUT"] += 1
            if events and (k + 1) * events // layout.bindings > k * events // layout.bindings:
                async with http.post("/api/v1/namespaces/default/events", json=event_for(layout, i, k)) as resp:
                    await expect(resp, 201)
                counts["POST"] += 1
        observed = [{"workload": ref, "result": "Successful"}
                    for ref in sorted(layout.workload_refs(i), key=lambda r: (r["namespace"], r["name"]))]
        status = {"status": {"observedWorkloads": observed, "observedGeneration": 1,
                             "finishTime": format_time(datetime.now(UTC))}}
        async with http.patch(f"{WR_PATH}/{layout.rebalancer_name(i)}/status", data=json.dumps(status),
                              headers=MERGE_PATCH) as resp:
            await expect(resp, 200)
        counts["PATCH"] += 1

    return rebalance


async def ceiling_phase(args: argparse.Namespace, layout: Layout, tmp: Path, tag: str,
                        events: int | None) -> CeilingRun:
    """The controller run's writes, issued by this process on a fresh server.

    With ``events`` (the Event POSTs the controller-manager made in its timed window), the same writes as
    the controller run: each rebalancer's create inside the timing, just before its binding PUTs, that many
    Events spread evenly over the bindings, then its status PATCH. With ``None``, the minimal ceiling: the
    rebalancers are created before the timing, and only the PUTs and the PATCHes are timed. The warm-up's
    writes, the same kinds in proportion, come first and untimed, as in the controller run.
    """
    warm_up = layout.warm_up(args.warm_up)
    async with run_server(tmp / f"server-{tag}.log") as server, session(server.url, args.concurrency) as http:
        counts = {"POST": 0, "PUT": 0, "PATCH": 0}
        rebalance = await direct_writes(http, layout, args, events=events, counts=counts)
        if warm_up.rebalancers:
            warm_events = None if events is None else events * warm_up.bindings // layout.bindings
            writes = await direct_writes(http, warm_up, args, events=warm_events,
                                         counts={"POST": 0, "PUT": 0, "PATCH": 0})
            if await pool(warm_up.rebalancers, args.concurrency, args.phase_time, writes) < warm_up.rebalancers:
                raise BenchError(f"{tag}: the warm-up did not finish within {args.phase_time:.0f}s")
        # The end is seen as in the controller run: by a watch on rebalancers, which costs the server alike.
        async with (finishes_seen(http, server.url, layout, args.phase_time) as watcher,
                    profiled(args.profile, {f"server-{tag}": server.proc.pid})):
            server_cpu0, client_cpu0 = cpu_seconds(server.proc.pid), time.process_time()
            preempted0 = preemptions(server.proc.pid)
            t0 = time.monotonic()
            done = await pool(layout.rebalancers, args.concurrency, args.phase_time, rebalance)
            finished = await asyncio.wait_for(watcher, args.phase_time) if done == layout.rebalancers else 0.0
            seconds = finished - t0
            server_cpu = cpu_seconds(server.proc.pid) - server_cpu0
            client_cpu = time.process_time() - client_cpu0
            preempted = preemptions(server.proc.pid) - preempted0
        if done < layout.rebalancers:
            raise BenchError(f"{tag}: only {done}/{layout.rebalancers} rebalancers within {args.phase_time:.0f}s")
        await check_results(http, layout)
    return CeilingRun(seconds, server_cpu, client_cpu, counts, preempted)


# ------------------------------------------------------------------------------------------ report


def describe(requests: dict[str, int] | dict[str, float]) -> str:
    return ", ".join(f"{count:,.0f} {method}" for method, count in sorted(requests.items()) if count)


@dataclass
class Round:
    controller: ControllerRun
    ceiling: CeilingRun
    minimal: CeilingRun | None

    @property
    def ratio(self) -> float:
        return self.controller.seconds / self.ceiling.seconds


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    """The median, and the range in brackets when there is more than one value."""
    middle = fmt.format(statistics.median(values))
    return middle if len(values) == 1 else f"{middle} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def report_round(index: int, result: Round) -> None:
    ctl, ceiling, minimal = result.controller, result.ceiling, result.minimal
    first = " (ceiling run first)" if index % 2 == 0 else ""
    print(f"  round {index}{first}: controller {ctl.seconds:.2f} s, ceiling {ceiling.seconds:.2f} s"
          + (f", minimal {minimal.seconds:.2f} s" if minimal else "")
          + f"; controller / ceiling {result.ratio:.2f}x; CPU controller-manager {ctl.controller_cpu:.2f} s, "
          f"server {ctl.server_cpu:.2f} s (ceiling: server {ceiling.server_cpu:.2f} s, client "
          f"{ceiling.client_cpu:.2f} s); server preempted {ctl.server_preemptions} times (ceiling: "
          f"{ceiling.server_preemptions})", flush=True)


def report(layout: Layout, rounds: list[Round]) -> None:
    """Medians over the rounds (ranges in brackets)."""
    n, b = layout.rebalancers, layout.bindings
    ctl = [r.controller for r in rounds]
    ceilings = [r.ceiling for r in rounds]
    minimals = [r.minimal for r in rounds if r.minimal is not None]
    ratio = statistics.median(r.ratio for r in rounds)
    what = "median of " + (f"{len(rounds)} rounds, range in brackets" if len(rounds) > 1 else "1 round")
    print(f"\n{n:,} rebalancers x {layout.workloads} workloads ({b:,} ResourceBindings in "
          f"{layout.namespaces} namespaces), {what}:")
    print(f"  controller  all finished in {spread([c.seconds for c in ctl])} s "
          f"(its {n:,} POSTs took {spread([c.create_seconds for c in ctl])} s)")
    print(f"              controller-manager CPU {spread([c.controller_cpu for c in ctl])} s "
          f"({spread([c.controller_cpu / b * 1e6 for c in ctl], '{:.0f}')} µs per binding), "
          f"server CPU {spread([c.server_cpu for c in ctl])} s")
    print(f"              controller-manager peak RSS (VmHWM) {spread([c.peak_rss_kib / 1024 for c in ctl], '{:.0f}')} "
          f"MiB; start-up (ready, then idle) {spread([c.startup_seconds for c in ctl], '{:.1f}')} s")
    print(f"              requests of the controller-manager (last round): {describe(ctl[-1].requests)}")
    generations = ", ".join(f"{spread([c.collections.get(g, 0.0) for c in ctl], '{:.0f}')} of generation {g}"
                            for g in ("0", "1", "2"))
    print(f"              its garbage collections in the timed window: {generations}")
    preempted = spread([c.server_preemptions for c in ctl], "{:.0f}")
    print(f"              the server lost its CPU while runnable {preempted} times (ceiling: "
          f"{spread([c.server_preemptions for c in ceilings], '{:.0f}')})")
    # Near 100%: the API server is the bottleneck, and the controller-manager keeps it busy.
    busy = spread([100 * c.server_cpu / c.seconds for c in ctl], "{:.0f}")
    print(f"              the server was busy {busy}% of the timed window (ceiling: "
          f"{spread([100 * c.server_cpu / c.seconds for c in ceilings], '{:.0f}')}%)")
    print(f"  ceiling     the same writes in {spread([c.seconds for c in ceilings])} s; server CPU "
          f"{spread([c.server_cpu for c in ceilings])} s, client CPU {spread([c.client_cpu for c in ceilings])} s; "
          f"last round: {describe(ceilings[-1].requests)}")
    if minimals:
        print(f"  minimal     {describe(minimals[-1].requests)} (rebalancers created beforehand, no Events) in "
              f"{spread([m.seconds for m in minimals])} s; server CPU {spread([m.server_cpu for m in minimals])} s")
    to_minimal = [r.controller.seconds / r.minimal.seconds for r in rounds if r.minimal is not None]
    print(f"  ratio       controller / ceiling = {spread([r.ratio for r in rounds])}x  "
          f"({'within' if ratio <= AIM else 'MISSES'} {AIM}x)"
          + (f"; controller / minimal = {spread(to_minimal)}x" if to_minimal else ""), flush=True)


async def bench_all(args: argparse.Namespace, tmp: Path) -> None:
    try:
        async with asyncio.timeout(args.time_limit):
            for size in args.sizes:
                layout = Layout(size, args.workloads, args.namespaces)
                print(f"--- {size:,} rebalancers, load average {os.getloadavg()[0]:.2f}", flush=True)
                rounds: list[Round] = []
                for index in range(1, args.rounds + 1):
                    tag = f"{size}-r{index}"
                    if rounds and index % 2 == 0:
                        # Every other round runs the ceiling first, so that neither run always comes first
                        # (this VM's speed drifts); its Events are as many as the previous controller run's.
                        ceiling = await ceiling_phase(args, layout, tmp, f"{tag}-ceiling",
                                                      int(rounds[-1].controller.requests.get("POST", 0)))
                        ctl = await controller_phase(args, layout, tmp, tag)
                    else:
                        ctl = await controller_phase(args, layout, tmp, tag)
                        ceiling = await ceiling_phase(args, layout, tmp, f"{tag}-ceiling",
                                                      int(ctl.requests.get("POST", 0)))
                    minimal = await ceiling_phase(args, layout, tmp, f"{tag}-minimal", None) if args.minimal else None
                    rounds.append(Round(ctl, ceiling, minimal))
                    report_round(index, rounds[-1])
                report(layout, rounds)
    except TimeoutError:
        raise BenchError(f"the benchmark passed --time-limit {args.time_limit:.0f}s") from None


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--sizes", default="100,1000", help="rebalancer counts, comma-separated (default 100,1000)")
    p.add_argument("--workloads", type=int, default=10, help="workloads (bindings) per rebalancer")
    p.add_argument("--namespaces", type=int, default=4, help="namespaces the bindings are spread over")
    p.add_argument("--concurrency", type=int, default=16, help="connections of this process (setup and ceiling)")
    p.add_argument("--controllers", default="", help="--controllers of the controller-manager (default: its own)")
    p.add_argument("--no-minimal", dest="minimal", action="store_false",
                   help="skip the third run: the minimal ceiling (rebalancers created beforehand; only the binding "
                        "PUTs and the status PATCHes timed)")
    p.add_argument("--workers", type=int, default=None,
                   help="an experiment: run the controller-manager's main() with REBALANCER_WORKERS set to this "
                        "(default: python -m controller_manager as it is)")
    p.add_argument("--store", choices=("compact", "parsed"), default="compact",
                   help="the controller-manager's caches: compact (its default) or parsed dicts (for comparison)")
    p.add_argument("--warm-up", type=int, default=10, metavar="N",
                   help="rebalancers (on bindings of their own) run before each timed run, untimed, so that "
                        "connections and code paths are warm in both runs (default 10; 0: none)")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds of (controller, ceiling, minimal) for each size; the report gives medians (default 3)")
    p.add_argument("--phase-time", type=float, default=60.0, help="time limit of each phase, seconds")
    p.add_argument("--time-limit", type=float, default=600.0, help="time limit of the whole benchmark, seconds")
    p.add_argument("--profile", type=Path, default=None, metavar="DIR",
                   help="sample the controller-manager with py-spy (GIL holder) during each timed controller "
                        "phase, and the server in every timed phase: collapsed stacks in "
                        "DIR/controller-manager-<N>.txt and DIR/server-<N>[-ceiling|-minimal].txt (slows the figures)")
    p.add_argument("--keep-logs", type=Path, default=None, metavar="DIR", help="copy the children's logs here")
    args = p.parse_args()
    args.sizes = positive_counts(p, args.sizes, "--sizes")
    require_at_least_one(p, args, "workloads", "namespaces", "concurrency", "rounds")
    return args


def main() -> int:
    args = parse_args()
    error = prepare_profile_dir(args.profile)
    if error:
        print(error, file=sys.stderr)
        return 2
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs, aiohttp {aiohttp.__version__}; "
          f"dev API server in a child process, in-memory storage; controller-manager caches: {args.store}")
    return run_in_tmp(lambda tmp: bench_all(args, tmp), "rebalancer-bench-", args.keep_logs)

if __name__ == "__main__":
    sys.exit(main())
