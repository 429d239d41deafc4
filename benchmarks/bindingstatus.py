"""Binding status throughput: the controller-manager's bindingStatus against the same writes issued directly.

For each ``--bindings`` N (default 500), ``--runs`` rounds (default 3) of two phases, each on a fresh dev API
server (``python -m devplane apiserver --port 0``, in-memory storage) in a child process:

1. controller   N Deployment templates in ``--namespaces`` namespaces, one ResourceBinding each (scheduled to
                member1 and member2) and its two Works in ``karmada-es-member1|2`` (the permanent-id label and
                the binding annotations of Karmada's binding controller); the binding and template statuses
                already what the binding-status controller makes of Works without status, so its start-up
                writes nothing. Then ``python -m controller_manager --controllers=bindingStatus
                --kube-api-qps=-1`` in a child process, waited for until ``/readyz`` answers and its queues
                are idle. Timed: from the first Work status write (two per binding: Applied, and a
                manifestStatus of the Deployment, 16 connections) until watches on bindings and Deployments
                have seen every binding FullyApplied with both clusters' status and every template's summed
                status. Also: the controller-manager's requests by verb (``rest_client_requests_total``) per
                reconcile (``controller_runtime_reconcile_total``), its CPU time per binding and peak RSS
                (``VmHWM``), and the Events it wrote (counted on the server afterwards, untimed).
2. ceiling      the same objects, no controller. Timed: the same Work status writes, and after each binding's
                two, what the controller writes for it, issued by this process: the binding status PUT and
                the template status PUT (computed with the controller's own pure rules from the Works as the
                server returned them, with the resourceVersions this process holds), and as many Event POSTs
                as the controller wrote, spread over the bindings. Every other round runs it first.

Before the timing, each phase finishes ``--warm-up`` bindings of their own (namespace ``warm-up-0``) the same
way, untimed. The ratio controller/ceiling says what the controller costs beyond the API writes (target: 1.3x).

    .venv/bin/python benchmarks/bindingstatus.py                        # 500 bindings, 3 rounds (~1 min)
    .venv/bin/python benchmarks/bindingstatus.py --bindings 500,2000    # both sizes of docs/benchmarks.md
    .venv/bin/python benchmarks/bindingstatus.py --runs 1 --cprofile DIR   # cProfile the controller-manager
    .venv/bin/python benchmarks/bindingstatus.py --runs 1 --profile DIR    # py-spy: controller-manager and server
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp

from kube_api.conditions import find_condition

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # as a script: the repository importable without installing it
    sys.path.insert(0, str(REPO))

from benchmarks import rebalancer  # noqa: E402  (its controller-manager process, metrics and report helpers)
from benchmarks.support import (  # noqa: E402
    REQUEST_TIMEOUT,
    BenchError,
    cpu_seconds,
    expect,
    pool,
    pool_all,
    positive_counts,
    require_at_least_one,
    run_in_tmp,
    run_server,
    status_kib,
    watch_until_all,
)
from controllers.bindingstatus import (  # noqa: E402
    AGGREGATE_STATUS_SUCCEED,
    assemble_work_status,
    binding_status_with,
)
from devplane.kubeconfig import write_kubeconfig  # noqa: E402
from interpreter.aggregatestatus import aggregate_status  # noqa: E402
from karmada_api.bindings import RB_KIND  # noqa: E402
from karmada_api.names import EXECUTION_SPACE_PREFIX  # noqa: E402
from kube_api.timeutil import format_time  # noqa: E402

RB_PATH = "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings"
WORK_PATH = "/apis/work.karmada.io/v1alpha1/namespaces/{ns}/works"
DEPLOY_PATH = "/apis/apps/v1/namespaces/{ns}/deployments"
EVENTS_PATH = "/api/v1/events"
MEMBERS = {"member1": 2, "member2": 1}  # cluster → replicas the member reports
TOTAL_REPLICAS = sum(MEMBERS.values())
CONTROLLER = RB_KIND.status_controller
AIM = 1.3  # the target: the controller run takes at most this much longer than its ceiling


# ------------------------------------------------------------------------------------------ the data


@dataclass(frozen=True)
class Layout:
    """N Deployments, binding k in namespace ``<prefix>-<k % namespaces>``; each with one Work per member."""

    bindings: int
    namespaces: int
    prefix: str = "bench"

    def namespace(self, k: int) -> str:
        return f"{self.prefix}-{k % self.namespaces}"

    def owns(self, obj: dict[str, Any]) -> bool:
        return str((obj.get("metadata") or {}).get("namespace") or "").startswith(f"{self.prefix}-")

    def warm_up(self, bindings: int) -> Layout:
        return Layout(bindings, 1, "warm-up")

    @staticmethod
    def deployment(k: int) -> str:
        return f"app-{k:06d}"

    def ref(self, k: int) -> dict[str, str]:
        return {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": self.namespace(k),
                "name": self.deployment(k)}

    def binding_path(self, k: int) -> str:
        return f"{RB_PATH.format(ns=self.namespace(k))}/{self.deployment(k)}-deployment"

    def template_path(self, k: int) -> str:
        return f"{DEPLOY_PATH.format(ns=self.namespace(k))}/{self.deployment(k)}"

    def work_path(self, k: int, cluster: str) -> str:
        return f"{WORK_PATH.format(ns=EXECUTION_SPACE_PREFIX + cluster)}/{self.namespace(k)}-{self.deployment(k)}"


@dataclass
class Objects:
    """The objects as the server last returned them (their resourceVersions are current for a direct writer)."""

    bindings: list[dict[str, Any]]
    templates: list[dict[str, Any]]
    works: list[list[dict[str, Any]]]


def deployment(layout: Layout, k: int) -> dict[str, Any]:
    labels = {"app": layout.deployment(k)}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": layout.deployment(k), "namespace": layout.namespace(k)},
            "spec": {"replicas": TOTAL_REPLICAS, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}


def binding(layout: Layout, k: int) -> dict[str, Any]:
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": f"{layout.deployment(k)}-deployment", "namespace": layout.namespace(k),
                         "labels": {RB_KIND.id_label: f"{layout.prefix}-{k:06d}"}},
            "spec": {"resource": layout.ref(k), "replicas": TOTAL_REPLICAS,
                     "clusters": [{"name": c, "replicas": r} for c, r in MEMBERS.items()]}}


def work(layout: Layout, k: int, cluster: str, owner: dict[str, Any]) -> dict[str, Any]:
    """The Work Karmada's binding controller renders for ``owner`` on ``cluster``."""
    ref = layout.ref(k)
    manifest = {"apiVersion": ref["apiVersion"], "kind": ref["kind"],
                "metadata": {"name": ref["name"], "namespace": ref["namespace"]}}
    return {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": layout.work_path(k, cluster).rsplit("/", 1)[1],
                         "namespace": EXECUTION_SPACE_PREFIX + cluster,
                         "labels": {RB_KIND.id_label: owner["metadata"]["labels"][RB_KIND.id_label]},
                         "annotations": RB_KIND.work_annotations(owner)},
            "spec": {"workload": {"manifests": [manifest]}}}


def work_status(layout: Layout, k: int, cluster: str) -> bytes:
    """The merge patch a member's work-status controller makes: Applied, and the Deployment's status."""
    ref = layout.ref(k)
    replicas = MEMBERS[cluster]
    member = {"generation": 1, "observedGeneration": 1, "resourceTemplateGeneration": 1, "replicas": replicas,
              "readyReplicas": replicas, "updatedReplicas": replicas, "availableReplicas": replicas}
    identifier = {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment", "resource": "deployments",
                  "namespace": ref["namespace"], "name": ref["name"]}
    applied = {"type": "Applied", "status": "True", "reason": "AppliedSuccessful",
               "message": "Manifest has been successfully applied",
               "lastTransitionTime": format_time(datetime.now(UTC))}
    status = {"conditions": [applied],
              "manifestStatuses": [{"identifier": identifier, "status": member, "health": "Healthy"}]}
    return json.dumps({"status": status}).encode()


def binding_done(obj: dict[str, Any]) -> bool:
    status = obj.get("status") or {}
    items = status.get("aggregatedStatus") or []
    fully_applied = find_condition(status.get("conditions"), "FullyApplied")
    fully = fully_applied is not None and fully_applied.get("status") == "True"
    return fully and len(items) == len(MEMBERS) and all(item.get("status") for item in items)


def template_done(obj: dict[str, Any]) -> bool:
    return bool((obj.get("status") or {}).get("readyReplicas") == TOTAL_REPLICAS)


async def write_statuses(http: aiohttp.ClientSession, layout: Layout, k: int, objs: Objects,
                         counts: dict[str, int]) -> None:
    """What the binding-status controller writes for binding ``k``, computed by its own rules from the Works as
    last returned: the binding status and the template status, each PUT only when it changes."""
    current = objs.bindings[k]
    items = assemble_work_status(objs.works[k], current["spec"]["resource"])
    status = binding_status_with(current, items)
    if status != current.get("status"):
        async with http.put(f"{layout.binding_path(k)}/status", json={**current, "status": status}) as resp:
            objs.bindings[k] = json.loads(await expect(resp, 200))
        counts["PUT"] += 1
    template = objs.templates[k]
    folded = aggregate_status(template, items)
    if folded is not None and folded != template.get("status"):
        async with http.put(f"{layout.template_path(k)}/status", json={**template, "status": folded}) as resp:
            objs.templates[k] = json.loads(await expect(resp, 200))
        counts["PUT"] += 1


async def populate(http: aiohttp.ClientSession, layout: Layout, concurrency: int, time_limit: float) -> Objects:
    """Namespaces, templates, bindings (scheduled an hour ago) and Works, settled: statuses already as the
    controller would write them for Works without status."""
    for name in [layout.namespace(n) for n in range(layout.namespaces)] + [EXECUTION_SPACE_PREFIX + c
                                                                          for c in MEMBERS]:
        async with http.post("/api/v1/namespaces", json={"metadata": {"name": name}}) as resp:
            await expect(resp, 201, 409)
    objs = Objects([{}] * layout.bindings, [{}] * layout.bindings, [[] for _ in range(layout.bindings)])
    scheduled = json.dumps({"status": {"lastScheduledTime": format_time(datetime.now(UTC) - timedelta(hours=1))}})

    async def create(k: int) -> None:
        async with http.post(DEPLOY_PATH.format(ns=layout.namespace(k)), json=deployment(layout, k)) as resp:
            objs.templates[k] = json.loads(await expect(resp, 201))
        async with http.post(RB_PATH.format(ns=layout.namespace(k)), json=binding(layout, k)) as resp:
            await expect(resp, 201)
        async with http.patch(f"{layout.binding_path(k)}/status", data=scheduled,
                              headers=rebalancer.MERGE_PATCH) as resp:
            objs.bindings[k] = json.loads(await expect(resp, 200))
        for cluster in MEMBERS:
            body = work(layout, k, cluster, objs.bindings[k])
            async with http.post(WORK_PATH.format(ns=body["metadata"]["namespace"]), json=body) as resp:
                objs.works[k].append(json.loads(await expect(resp, 201)))
        await write_statuses(http, layout, k, objs, {"PUT": 0})

    if await pool(layout.bindings, concurrency, time_limit, create) < layout.bindings:
        raise BenchError(f"populate: not all {layout.bindings} bindings within {time_limit:.0f}s")
    return objs


def event_for(layout: Layout, k: int, objs: Objects) -> dict[str, Any]:
    """An Event like the controller's recorder writes about binding ``k``."""
    now = format_time(datetime.now(UTC))
    meta = objs.bindings[k]["metadata"]
    ref = {"kind": "ResourceBinding", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"],
           "apiVersion": "work.karmada.io/v1alpha2", "resourceVersion": meta["resourceVersion"]}
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": meta["namespace"]},
            "involvedObject": ref, "reason": AGGREGATE_STATUS_SUCCEED, "type": "Normal",
            "message": f"Update {RB_KIND.describe(objs.bindings[k])} with AggregatedStatus successfully.",
            "source": {"component": CONTROLLER}, "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "reportingComponent": CONTROLLER, "reportingInstance": ""}


def member_writes(http: aiohttp.ClientSession, layout: Layout, objs: Objects, counts: dict[str, int], *,
                  direct: bool, events: int = 0) -> Callable[[int], Awaitable[None]]:
    """Binding ``k``'s two Work status writes; ``direct``: then what the controller writes for it."""

    async def job(k: int) -> None:
        for index, cluster in enumerate(MEMBERS):
            async with http.patch(f"{layout.work_path(k, cluster)}/status", data=work_status(layout, k, cluster),
                                  headers=rebalancer.MERGE_PATCH) as resp:
                objs.works[k][index] = json.loads(await expect(resp, 200))
            counts["PATCH"] += 1
        if not direct:
            return
        await write_statuses(http, layout, k, objs, counts)
        for _ in range((k + 1) * events // layout.bindings - k * events // layout.bindings):
            async with http.post(f"/api/v1/namespaces/{layout.namespace(k)}/events",
                                 json=event_for(layout, k, objs)) as resp:
                await expect(resp, 201)
            counts["POST"] += 1

    return job


# ------------------------------------------------------------------------------------------ the end, seen


def owned_and(layout: Layout, done: Callable[[dict[str, Any]], bool]) -> Callable[[dict[str, Any]], bool]:
    return lambda obj: layout.owns(obj) and done(obj)


@contextlib.asynccontextmanager
async def all_seen(http: aiohttp.ClientSession, url: str, layout: Layout,
                   time_limit: float) -> AsyncIterator[Callable[[], Awaitable[float]]]:
    """Watches on bindings and Deployments, open when the block starts; the block awaits the function it gets:
    the monotonic time when every binding and every template had been seen aggregated."""
    watches: list[asyncio.Task[float]] = []
    try:
        for path, done in (("/apis/work.karmada.io/v1alpha2/resourcebindings", binding_done),
                           ("/apis/apps/v1/deployments", template_done)):
            async with http.get(path, params={"limit": "1"}) as resp:
                rv = json.loads(await expect(resp, 200))["metadata"]["resourceVersion"]
            started = asyncio.Event()
            watches.append(asyncio.create_task(watch_until_all(
                url, path, rv, want=layout.bindings, done=owned_and(layout, done),
                started=started, time_limit=time_limit)))
            await asyncio.wait_for(started.wait(), REQUEST_TIMEOUT)

        async def finished() -> float:
            return max(await asyncio.wait_for(asyncio.gather(*watches), time_limit))

        yield finished
    finally:
        for task in watches:
            task.cancel()
        await asyncio.gather(*watches, return_exceptions=True)


async def events_written(http: aiohttp.ClientSession, layout: Layout) -> tuple[int, int]:
    """The binding-status Events about ``layout``'s objects: (Event objects, their summed ``count``)."""
    async with http.get(EVENTS_PATH) as resp:
        items = json.loads(await expect(resp, 200))["items"]
    ours = [e for e in items if (e.get("source") or {}).get("component") == CONTROLLER
            and str((e.get("involvedObject") or {}).get("namespace") or "").startswith(f"{layout.prefix}-")]
    return len(ours), sum(int(e.get("count") or 1) for e in ours)


# ------------------------------------------------------------------------------------------ phases


@dataclass
class ControllerRun:
    seconds: float
    cpu: float
    peak_rss_kib: int
    reconciles: float
    events: tuple[int, int]
    requests: dict[str, float] = field(default_factory=dict)
    server_cpu: float = 0.0
    bench_cpu: float = 0.0
    work_writes_seconds: float = 0.0


@dataclass
class CeilingRun:
    seconds: float
    requests: dict[str, int]
    server_cpu: float = 0.0
    bench_cpu: float = 0.0


async def controller_phase(args: argparse.Namespace, layout: Layout, tmp: Path, tag: str) -> ControllerRun:
    warm_up = layout.warm_up(args.warm_up)
    async with (run_server(tmp / f"server-{tag}.log") as server,
                rebalancer.session(server.url, args.concurrency) as http):
        objs = await populate(http, layout, args.concurrency, args.phase_time)
        warm_objs = await populate(http, warm_up, args.concurrency, args.phase_time) if warm_up.bindings else None
        kubeconfig = tmp / f"kubeconfig-{tag}"
        write_kubeconfig(kubeconfig, {"karmada-apiserver": server.url}, "karmada-apiserver")
        program: list[str] = []
        if args.cprofile is not None:
            program = ["-m", "cProfile", "-o", str(args.cprofile / f"controller-manager-{tag}.prof"),
                       "-m", "controller_manager"]
        async with rebalancer.run_controller_manager(kubeconfig, tmp / f"controller-manager-{tag}.log",
                                          ["--controllers=bindingStatus"], None, program=program) as cm:
            await rebalancer.wait_until_idle(http, cm, args.phase_time)
            if warm_objs is not None:
                async with all_seen(http, server.url, warm_up, args.phase_time) as warmed:
                    await pool_all(f"{tag} warm-up Work writes", warm_up.bindings, args.concurrency, args.phase_time,
                                   member_writes(http, warm_up, warm_objs, {"PATCH": 0}, direct=False))
                    await warmed()
                await rebalancer.wait_until_idle(http, cm, args.phase_time)
            before = await rebalancer.scrape(http, cm.metrics)
            async with (all_seen(http, server.url, layout, args.phase_time) as finished,
                        rebalancer.profiled(args.profile, {f"controller-manager-{tag}": cm.proc.pid,
                                                           f"server-{tag}": server.proc.pid})):
                cpu0, server_cpu0 = cpu_seconds(cm.proc.pid), cpu_seconds(server.proc.pid)
                bench_cpu0 = time.process_time()
                t0 = time.monotonic()
                await pool_all(f"{tag} Work writes", layout.bindings, args.concurrency, args.phase_time,
                               member_writes(http, layout, objs, {"PATCH": 0}, direct=False))
                work_writes_seconds = time.monotonic() - t0
                seconds = await finished() - t0
                cpu = cpu_seconds(cm.proc.pid) - cpu0
                server_cpu = cpu_seconds(server.proc.pid) - server_cpu0
                bench_cpu = time.process_time() - bench_cpu0
            await rebalancer.wait_until_idle(http, cm, args.phase_time)  # recorded Events written too
            peak = status_kib("VmHWM", cm.proc.pid)
            after = await rebalancer.scrape(http, cm.metrics)
            requests = rebalancer.counted_by(after, "rest_client_requests_total", "method", before)
            reconciles = rebalancer.counted_by(after, "controller_runtime_reconcile_total", "controller",
                                               before).get(CONTROLLER, 0.0)
        events = await events_written(http, layout)
    return ControllerRun(seconds, cpu, peak, reconciles, events, requests, server_cpu, bench_cpu, work_writes_seconds)


async def ceiling_phase(args: argparse.Namespace, layout: Layout, tmp: Path, tag: str, events: int) -> CeilingRun:
    warm_up = layout.warm_up(args.warm_up)
    async with (run_server(tmp / f"server-{tag}.log") as server,
                rebalancer.session(server.url, args.concurrency) as http):
        objs = await populate(http, layout, args.concurrency, args.phase_time)
        if warm_up.bindings:
            warm_objs = await populate(http, warm_up, args.concurrency, args.phase_time)
            warm_events = events * warm_up.bindings // layout.bindings
            await pool_all(f"{tag} warm-up writes", warm_up.bindings, args.concurrency, args.phase_time,
                           member_writes(http, warm_up, warm_objs, {"PATCH": 0, "PUT": 0, "POST": 0}, direct=True,
                                         events=warm_events))
        counts = {"PATCH": 0, "PUT": 0, "POST": 0}
        async with all_seen(http, server.url, layout, args.phase_time) as finished:
            server_cpu0, bench_cpu0 = cpu_seconds(server.proc.pid), time.process_time()
            t0 = time.monotonic()
            await pool_all(f"{tag} writes", layout.bindings, args.concurrency, args.phase_time,
                           member_writes(http, layout, objs, counts, direct=True, events=events))
            seconds = await finished() - t0
            server_cpu, bench_cpu = cpu_seconds(server.proc.pid) - server_cpu0, time.process_time() - bench_cpu0
    return CeilingRun(seconds, counts, server_cpu, bench_cpu)


# ------------------------------------------------------------------------------------------ report


@dataclass
class Round:
    controller: ControllerRun
    ceiling: CeilingRun

    @property
    def ratio(self) -> float:
        return self.controller.seconds / self.ceiling.seconds


def report(layout: Layout, rounds: list[Round]) -> None:
    """Medians over the rounds (ranges in brackets)."""
    n = layout.bindings
    ctl = [r.controller for r in rounds]
    last = ctl[-1]
    per_reconcile = ", ".join(f"{count / last.reconciles:.2f} {verb}" for verb, count in sorted(last.requests.items())
                              if count) if last.reconciles else "-"
    ratio = statistics.median(r.ratio for r in rounds)
    print(f"\n{n:,} ResourceBindings x {len(MEMBERS)} Works, median of {len(rounds)} round(s), range in brackets:")
    print(f"  controller  every binding and template aggregated in {rebalancer.spread([c.seconds for c in ctl])} s")
    print(f"              controller-manager CPU {rebalancer.spread([c.cpu for c in ctl])} s "
          f"({rebalancer.spread([c.cpu / n * 1e3 for c in ctl])} ms per binding), "
          f"peak RSS (VmHWM) {rebalancer.spread([c.peak_rss_kib / 1024 for c in ctl], '{:.0f}')} MiB")
    print(f"              last round: {last.reconciles:,.0f} reconciles ({last.reconciles / n:.2f} per binding); "
          f"requests {rebalancer.describe(last.requests)}; per reconcile: {per_reconcile}")
    print(f"              Events written: {rebalancer.spread([c.events[0] for c in ctl], '{:.0f}')} "
          f"(counts summed: {rebalancer.spread([c.events[1] for c in ctl], '{:.0f}')})")
    print(f"              the Work writes were done after {rebalancer.spread([c.work_writes_seconds for c in ctl])} s; "
          f"server CPU {rebalancer.spread([c.server_cpu for c in ctl])} s, this benchmark's CPU "
          f"{rebalancer.spread([c.bench_cpu for c in ctl])} s (its Work writes and watches)")
    print(f"  ceiling     the same writes in {rebalancer.spread([r.ceiling.seconds for r in rounds])} s; "
          f"last round: {rebalancer.describe(rounds[-1].ceiling.requests)}")
    print(f"              server CPU {rebalancer.spread([r.ceiling.server_cpu for r in rounds])} s, this benchmark's "
          f"CPU {rebalancer.spread([r.ceiling.bench_cpu for r in rounds])} s (Work and status writes, watches)")
    print(f"  ratio       controller / ceiling = {rebalancer.spread([r.ratio for r in rounds])}x  "
          f"({'within' if ratio <= AIM else 'MISSES'} {AIM}x)", flush=True)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--bindings", default="500", help="ResourceBinding counts, comma-separated (default 500)")
    p.add_argument("--namespaces", type=int, default=4, help="namespaces the templates and bindings are spread over")
    p.add_argument("--concurrency", type=int, default=16, help="connections of this process (Work and direct writes)")
    p.add_argument("--warm-up", type=int, default=20, metavar="N",
                   help="bindings of their own aggregated before each timed phase, untimed (default 20; 0: none)")
    p.add_argument("--runs", type=int, default=3, help="rounds of (controller, ceiling) per size; medians printed")
    p.add_argument("--phase-time", type=float, default=120.0, help="time limit of each phase, seconds")
    p.add_argument("--time-limit", type=float, default=1200.0, help="time limit of the whole benchmark, seconds")
    p.add_argument("--cprofile", type=Path, default=None, metavar="DIR",
                   help="run the controller-manager under cProfile: DIR/controller-manager-<N>-r<i>.prof (slower)")
    p.add_argument("--profile", type=Path, default=None, metavar="DIR",
                   help="sample the controller-manager and the server with py-spy in each timed window: DIR/<name>.txt")
    p.add_argument("--keep-logs", type=Path, default=None, metavar="DIR", help="copy the children's logs here")
    args = p.parse_args()
    args.bindings = positive_counts(p, args.bindings, "--bindings")
    require_at_least_one(p, args, "namespaces", "concurrency", "runs")
    if args.warm_up < 0:
        p.error("--warm-up must not be negative")
    return args


async def bench_all(args: argparse.Namespace, tmp: Path) -> None:
    try:
        async with asyncio.timeout(args.time_limit):
            for size in args.bindings:
                layout = Layout(size, args.namespaces)
                print(f"--- {size:,} bindings, load average {os.getloadavg()[0]:.2f}", flush=True)
                rounds: list[Round] = []
                for index in range(1, args.runs + 1):
                    tag = f"{size}-r{index}"
                    if rounds and index % 2 == 0:  # alternate which runs first: this VM's speed drifts
                        events = rounds[-1].controller.events[0]
                        ceiling = await ceiling_phase(args, layout, tmp, f"{tag}-ceiling", events)
                        ctl = await controller_phase(args, layout, tmp, tag)
                    else:
                        ctl = await controller_phase(args, layout, tmp, tag)
                        ceiling = await ceiling_phase(args, layout, tmp, f"{tag}-ceiling", ctl.events[0])
                    rounds.append(Round(ctl, ceiling))
                    first = " (ceiling first)" if index % 2 == 0 else ""
                    print(f"  round {index}{first}: controller {ctl.seconds:.2f} s, ceiling {ceiling.seconds:.2f} s, "
                          f"ratio {rounds[-1].ratio:.2f}x; controller-manager CPU {ctl.cpu:.2f} s", flush=True)
                report(layout, rounds)
    except TimeoutError:
        raise BenchError(f"the benchmark passed --time-limit {args.time_limit:.0f}s") from None


def main() -> int:
    args = parse_args()
    if args.cprofile is not None:
        args.cprofile = args.cprofile.resolve()
        args.cprofile.mkdir(parents=True, exist_ok=True)
    if args.profile is not None:
        args.profile = args.profile.resolve()
        args.profile.mkdir(parents=True, exist_ok=True)
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs, aiohttp {aiohttp.__version__}; "
          "dev API server in a child process, in-memory storage")
    return run_in_tmp(lambda tmp: bench_all(args, tmp), "bindingstatus-bench-", args.keep_logs)

if __name__ == "__main__":
    sys.exit(main())
