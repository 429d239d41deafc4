"""Karmada's Go controllers and ours, one after the other, doing the same work on the reference plane.

The reference plane (``../shared/refplane``, API only: kube-apiserver v1.20.2 on etcd, Karmada's CRDs, and
kube-controller-manager for namespace deletion) runs once for the whole benchmark. For each work, size and
round, three runs in a rotating order, each alone on the plane:

- ``ceiling``  the writes the controller must make, issued directly by this process over ``--concurrency``
               connections: per rebalancer its create (the benchmark's, in every run), its binding PUTs and
               its status PATCH (no Events: Karmada's rebalancer writes none); per binding its two Work
               status writes, then one binding status PUT, one template status PUT and two Events (one
               write each, as Karmada makes them);
- ``karmada``  Karmada's ``karmada-controller-manager`` (the kit's binary, commit f8fdd02) with only the
               controller under test (``--controllers=workloadRebalancer`` or ``bindingStatus``);
- ``ours``     ``python -m controller_manager`` with the same ``--controllers``.

Both controller-managers run with ``--kube-api-qps=10000 --kube-api-burst=10000`` and leader election off,
are waited for until idle after their start-up, and are stopped after the run. The work:

- rebalancer     N bindings (settled status), then N/10 WorkloadRebalancers of 10 workloads each created from
                 16 connections; timed until a watch has seen every rebalancer finished;
- bindingStatus  N Deployments, their bindings and two Works each (statuses already what a controller makes of
                 Works without status, so start-up writes nothing); timed from the first Work status write
                 (each binding's two Works one right after the other, 16 connections) until watches have seen
                 every binding FullyApplied with both clusters and every template's summed status.

- memory         N bindings (settled status) created once; each controller-manager in turn started on them with
                 the controllers ours hosts by default (Karmada: ``workloadRebalancer,bindingStatus``; ours:
                 ``*``), and its RSS read once it is idle after its start-up (no ceiling).

Per run: wall time, ratio to the ceiling and to Karmada, the controller's CPU in the timed phase only, its peak
RSS (VmHWM), and the API requests by resource and verb: the difference of kube-apiserver's
``apiserver_request_total`` from before the controller started until it was idle after the timed phase (the
benchmark's own Work writes or rebalancer creates included, the same in every run). Each run starts once the
previous run's namespaces (and so its objects) are gone.

    .venv/bin/python benchmarks/side_by_side.py                                   # both works, small sizes
    .venv/bin/python benchmarks/side_by_side.py --work bindingStatus --bindings 500,2000 --rounds 3
    .venv/bin/python benchmarks/side_by_side.py --work rebalancer --rebalancers 100,1000 --rounds 3
    .venv/bin/python benchmarks/side_by_side.py --work memory --bindings 10000 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # as a script: the repository importable without installing it
    sys.path.insert(0, str(REPO))

from benchmarks import bindingstatus, rebalancer  # noqa: E402
from benchmarks.rebalancer import spread  # noqa: E402
from benchmarks.refplane import KARMADA_API, RefPlane, missing, started  # noqa: E402
from benchmarks.support import (  # noqa: E402
    BenchError,
    child_env,
    cpu_seconds,
    die_with_parent,
    expect,
    free_port,
    pool_all,
    positive_counts,
    require_at_least_one,
    rotated,
    run_in_tmp,
    status_kib,
    stop_process,
    use_tls,
)
from karmada_api.names import EXECUTION_SPACE_PREFIX  # noqa: E402

SYSTEMS = ("ceiling", "karmada", "ours")
WORKS = {"rebalancer": "workloadRebalancer", "bindingStatus": "bindingStatus",
         "memory": "workloadRebalancer,bindingStatus"}
"""Each work's ``--controllers``: the memory work runs the controllers ours hosts by default (Karmada's
workloadRebalancer also does the TTL clean-up that ours runs as ttlCleaner)."""
OURS_CONTROLLERS = {"memory": "*"}
QPS = ("--kube-api-qps=10000", "--kube-api-burst=10000")
COUNTED = {"resourcebindings", "deployments", "works", "events", "workloadrebalancers"}
_LABEL = re.compile(r'(\w+)="([^"]*)"')


# ------------------------------------------------------------------------------------------ one run


@dataclass
class Run:
    seconds: float
    cpu: float = 0.0
    peak_rss_mib: float = 0.0
    requests: dict[str, float] = field(default_factory=dict)
    """``resource[/subresource] VERB`` (and the code, when not 2xx) → requests kube-apiserver counted."""


async def api_requests(http: aiohttp.ClientSession) -> dict[str, float]:
    """kube-apiserver's ``apiserver_request_total`` for the counted resources, by resource, subresource and verb;
    answers other than 2xx (a 409 Conflict, a 404) apart."""
    totals: dict[str, float] = {}
    for name, label_text, value in await rebalancer.scrape(http, ""):  # "": the session's server
        labels = dict(_LABEL.findall(label_text))
        if name != "apiserver_request_total" or labels.get("resource") not in COUNTED:
            continue
        resource = labels["resource"] + (f"/{labels['subresource']}" if labels.get("subresource") else "")
        code = labels.get("code", "")
        # long-running requests (WATCH) are counted with code 0
        key = f"{resource} {labels.get('verb', '?')}" + ("" if code.startswith("2") or code == "0" else f" {code}")
        totals[key] = totals.get(key, 0.0) + value
    return totals


def difference(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {key: value - before.get(key, 0.0) for key, value in after.items() if value - before.get(key, 0.0) > 0}


@contextlib.asynccontextmanager
async def controller(system: str, *, plane: RefPlane, work: str, tmp: Path, tag: str,
                     http: aiohttp.ClientSession, time_limit: float) -> AsyncIterator[rebalancer.ControllerProcess]:
    """Karmada's controller-manager or ours with only ``work``'s controller, idle after its start-up."""
    health, metrics = free_port(), free_port()
    controllers = OURS_CONTROLLERS.get(work, WORKS[work]) if system == "ours" else WORKS[work]
    flags = [f"--kubeconfig={plane.karmada_kubeconfig}", f"--controllers={controllers}", *QPS,
             "--leader-elect=false", f"--metrics-bind-address=127.0.0.1:{metrics}",
             f"--health-probe-bind-address=127.0.0.1:{health}"]
    program = [str(await asyncio.to_thread(plane.binary, "karmada-controller-manager"))] if system == "karmada" else [
        sys.executable, "-m", "controller_manager"]
    log_path = tmp / f"{system}-{tag}.log"
    with log_path.open("wb") as log_file:
        proc = await asyncio.create_subprocess_exec(*program, *flags, stdout=log_file, stderr=log_file,
                                                    stdin=asyncio.subprocess.DEVNULL, cwd=REPO, env=child_env(),
                                                    preexec_fn=die_with_parent)
    process = rebalancer.ControllerProcess(proc, f"http://127.0.0.1:{health}", f"http://127.0.0.1:{metrics}",
                                           log_path)
    try:
        await rebalancer.wait_until_idle(http, process, time_limit, probe="/healthz")
        yield process
    finally:
        await stop_process(proc, grace=10.0)


async def timed(process: rebalancer.ControllerProcess | None, body: Callable[[], Awaitable[float]], *,
                profile: Path | None, name: str) -> tuple[float, float]:
    """``body()`` returns the monotonic end; (seconds, the controller's CPU seconds in that window). With
    ``profile``, py-spy samples the controller over the window into ``profile/<name>.txt``."""
    pids = {name: process.proc.pid} if process is not None and profile is not None else {}
    async with rebalancer.profiled(profile, pids):
        cpu0 = cpu_seconds(process.proc.pid) if process else 0.0
        t0 = time.monotonic()
        end = await body()
        return end - t0, (cpu_seconds(process.proc.pid) - cpu0 if process else 0.0)


async def run_once(system: str, work: str, size: int, args: argparse.Namespace, *, plane: RefPlane,
                   http: aiohttp.ClientSession, tmp: Path, tag: str) -> Run:
    """One run of ``system`` on ``work`` of ``size`` (rebalancers or bindings), in namespaces named ``tag``."""
    before = await api_requests(http)
    async with contextlib.AsyncExitStack() as stack:

        async def start() -> rebalancer.ControllerProcess | None:
            """The controller (none for the ceiling), once the objects exist: its start-up has nothing to write."""
            if system == "ceiling":
                return None
            return await stack.enter_async_context(controller(system, plane=plane, work=work, tmp=tmp, tag=tag,
                                                              http=http, time_limit=args.phase_time))

        profile = args.profile if system == "ours" else None
        if work == "rebalancer":
            layout = rebalancer.Layout(size, args.workloads, args.namespaces, prefix=tag)
            if system == "ceiling":
                counts = {"POST": 0, "PUT": 0, "PATCH": 0}
                # events=0: each rebalancer's create inside the timing, as in the controllers' runs; no Events
                writes = await rebalancer.direct_writes(http, layout, args, events=0, counts=counts)
            else:
                await rebalancer.populate(http, layout, args.concurrency, args.phase_time)
            process = await start()
            async with rebalancer.finishes_seen(http, KARMADA_API, layout, args.phase_time) as watcher:

                async def rebalance() -> float:
                    if system == "ceiling":
                        await pool_all("direct writes", size, args.concurrency, args.phase_time, writes)
                    else:
                        await rebalancer.create_rebalancers(http, layout, args.concurrency, args.phase_time)
                    return await asyncio.wait_for(watcher, args.phase_time)

                seconds, cpu = await timed(process, rebalance, profile=profile, name=f"{system}-{tag}")
            await rebalancer.check_results(http, layout)
        else:
            layout_b = bindingstatus.Layout(size, args.namespaces, prefix=tag)
            objs = await bindingstatus.populate(http, layout_b, args.concurrency, args.phase_time)
            process = await start()
            async with bindingstatus.all_seen(http, KARMADA_API, layout_b, args.phase_time) as finished:
                member = bindingstatus.member_writes(http, layout_b, objs, {"PATCH": 0, "PUT": 0, "POST": 0},
                                                     direct=system == "ceiling", events=2 * size)

                async def aggregate() -> float:
                    await pool_all("Work writes", size, args.concurrency, args.phase_time, member)
                    return await finished()

                seconds, cpu = await timed(process, aggregate, profile=profile, name=f"{system}-{tag}")
        peak = 0.0
        if process is not None:
            await rebalancer.wait_until_idle(http, process, args.phase_time, probe="/healthz")
            peak = status_kib("VmHWM", process.proc.pid) / 1024
    return Run(seconds, cpu, peak, difference(await api_requests(http), before))


@dataclass
class Memory:
    rss_mib: float
    peak_mib: float


async def memory_once(system: str, args: argparse.Namespace, *, plane: RefPlane,
                      http: aiohttp.ClientSession, tmp: Path, tag: str) -> Memory:
    """The controller-manager's RSS, idle after its start-up, with the bindings created beforehand cached."""
    async with controller(system, plane=plane, work="memory", tmp=tmp, tag=tag, http=http,
                          time_limit=args.phase_time) as process:
        return Memory(status_kib("VmRSS", process.proc.pid) / 1024,
                      status_kib("VmHWM", process.proc.pid) / 1024)


async def bench_memory(args: argparse.Namespace, plane: RefPlane, http: aiohttp.ClientSession, tmp: Path) -> None:
    """Per size: the bindings created once, then each controller-manager started on them in turn, per round."""
    for size in args.bindings:
        tag = f"sbs{os.getpid()}m{size}"
        layout = rebalancer.Layout(size, 1, args.namespaces, prefix=tag)
        await rebalancer.populate(http, layout, args.concurrency, args.phase_time)
        found: dict[str, list[Memory]] = {"karmada": [], "ours": []}
        for round_index in range(args.rounds):
            for system in ("karmada", "ours") if round_index % 2 == 0 else ("ours", "karmada"):
                found[system].append(await memory_once(system, args, plane=plane, http=http, tmp=tmp,
                                                       tag=f"{tag}r{round_index}"))
                print(f"  memory {size:,} round {round_index + 1} {system}: RSS {found[system][-1].rss_mib:.0f} MiB",
                      flush=True)
        print(f"\nmemory: {size:,} ResourceBindings cached, idle after start-up, median of {args.rounds} round(s)")
        print(f"  {'':9} {'RSS MiB':>16} {'peak (VmHWM) MiB':>18}   --controllers")
        for system, runs in found.items():
            controllers = OURS_CONTROLLERS["memory"] if system == "ours" else WORKS["memory"]
            print(f"  {system:9} {spread([m.rss_mib for m in runs], '{:.0f}'):>16} "
                  f"{spread([m.peak_mib for m in runs], '{:.0f}'):>18}   {controllers}", flush=True)
        await clean(http, tag, args)


async def clean(http: aiohttp.ClientSession, tag: str, args: argparse.Namespace) -> None:
    """Delete what a run made and wait until it is gone: its namespaces (kube-controller-manager deletes what they
    hold), and by name its Works and WorkloadRebalancers, which live elsewhere. Nothing else on the plane is
    touched (``REFPLANE_RUNNING`` may name a plane that holds more)."""
    names = [f"{tag}-{n}" for n in range(args.namespaces)]
    for name in names:
        async with http.delete(f"/api/v1/namespaces/{name}") as resp:
            await expect(resp, 200, 202, 404)
    # A Work is named <namespace>-<deployment> (bindingstatus.Layout), a rebalancer <tag>-<i> (rebalancer.Layout)
    works = [bindingstatus.WORK_PATH.format(ns=EXECUTION_SPACE_PREFIX + cluster) for cluster in ("member1", "member2")]
    paths = [f"{collection}/{item['metadata']['name']}" for collection in (*works, rebalancer.WR_PATH)
             for item in await rebalancer.list_items(http, collection)
             if str(item["metadata"]["name"]).startswith(f"{tag}-")]

    async def delete(k: int) -> None:
        async with http.delete(paths[k]) as resp:
            await expect(resp, 200, 202, 404)

    await pool_all(f"deleting the objects of {tag}", len(paths), args.concurrency, args.phase_time, delete)
    deadline = time.monotonic() + args.phase_time
    while time.monotonic() < deadline:
        async with http.get("/api/v1/namespaces") as resp:
            present = {ns["metadata"]["name"] for ns in json.loads(await expect(resp, 200))["items"]}
        if not present & set(names):
            return
        await asyncio.sleep(0.5)
    raise BenchError(f"the namespaces of {tag} were not deleted within {args.phase_time:.0f}s")


# ------------------------------------------------------------------------------------------ report


def report(work: str, size: int, runs: dict[str, list[Run]], args: argparse.Namespace) -> None:
    what = (f"{size:,} WorkloadRebalancers x {args.workloads} workloads" if work == "rebalancer"
            else f"{size:,} bindings x 2 Works")
    rounds = len(runs["ceiling"])
    print(f"\n{work}: {what}, median of {rounds} round(s), range in brackets", flush=True)
    print(f"  {'':9} {'seconds':>22} {'/ceiling':>18} {'/karmada':>18} {'CPU s (timed)':>20} {'peak RSS MiB':>16}")
    ceiling = [r.seconds for r in runs["ceiling"]]
    karmada = [r.seconds for r in runs["karmada"]]
    for system in SYSTEMS:
        mine = runs[system]
        seconds = [r.seconds for r in mine]
        to_ceiling = spread([s / c for s, c in zip(seconds, ceiling, strict=True)])
        to_karmada = spread([s / k for s, k in zip(seconds, karmada, strict=True)])
        cpu = spread([r.cpu for r in mine]) if system != "ceiling" else "-"
        rss = spread([r.peak_rss_mib for r in mine], "{:.0f}") if system != "ceiling" else "-"
        print(f"  {system:9} {spread(seconds):>22} {to_ceiling:>18} {to_karmada:>18} {cpu:>20} {rss:>16}")
    keys = sorted({key for system in SYSTEMS for run in runs[system] for key in run.requests})
    print("  kube-apiserver requests (apiserver_request_total), median per run:")
    print(f"  {'':38} " + " ".join(f"{system:>10}" for system in SYSTEMS))
    for key in keys:
        medians = [statistics.median(run.requests.get(key, 0.0) for run in runs[system]) for system in SYSTEMS]
        print(f"  {key:38} " + " ".join(f"{value:>10,.0f}" for value in medians))


# ------------------------------------------------------------------------------------------ main


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--work", default="rebalancer,bindingStatus",
                   help="comma-separated: rebalancer, bindingStatus, memory (default: the first two)")
    p.add_argument("--rebalancers", default="100", help="WorkloadRebalancer counts, comma-separated (default 100)")
    p.add_argument("--workloads", type=int, default=10, help="workloads per rebalancer (default 10)")
    p.add_argument("--bindings", default="500",
                   help="binding counts, comma-separated (default 500; for --work memory, say 10000)")
    p.add_argument("--rounds", type=int, default=3, help="rounds per size (default 3); medians printed")
    p.add_argument("--namespaces", type=int, default=4, help="namespaces the objects are spread over")
    p.add_argument("--concurrency", type=int, default=16, help="connections of this process")
    p.add_argument("--phase-time", type=float, default=300.0, help="time limit of each phase, seconds")
    p.add_argument("--keep-logs", type=Path, default=None, metavar="DIR", help="copy the controllers' logs here")
    p.add_argument("--profile", type=Path, default=None, metavar="DIR",
                   help="sample our controller-manager with py-spy in its timed window: DIR/ours-<run>.txt")
    args = p.parse_args()
    args.work = [w.strip() for w in args.work.split(",") if w.strip()]
    unknown = [w for w in args.work if w not in WORKS]
    if unknown or not args.work:
        p.error(f"--work: {', '.join(unknown) or 'nothing'}; choose from {', '.join(WORKS)}")
    args.rebalancers = positive_counts(p, args.rebalancers, "--rebalancers")
    args.bindings = positive_counts(p, args.bindings, "--bindings")
    require_at_least_one(p, args, "workloads", "rounds", "namespaces", "concurrency")
    if args.profile is not None:
        args.profile = args.profile.resolve()
        args.profile.mkdir(parents=True, exist_ok=True)
    return args


async def bench_all(args: argparse.Namespace, plane: RefPlane, tmp: Path) -> None:
    use_tls(plane.client_tls())
    async with rebalancer.session(KARMADA_API, args.concurrency) as http:
        run_index = 0
        for work in args.work:
            if work == "memory":
                await bench_memory(args, plane, http, tmp)
                continue
            for size in args.rebalancers if work == "rebalancer" else args.bindings:
                runs: dict[str, list[Run]] = {system: [] for system in SYSTEMS}
                for round_index in range(args.rounds):
                    for system in rotated(SYSTEMS, round_index):
                        run_index += 1
                        tag = f"sbs{os.getpid()}r{run_index}"  # another invocation's may still be going away
                        run = await run_once(system, work, size, args, plane=plane, http=http, tmp=tmp, tag=tag)
                        runs[system].append(run)
                        print(f"  {work} {size:,} round {round_index + 1} {system}: {run.seconds:.2f} s, "
                              f"CPU {run.cpu:.2f} s, load {os.getloadavg()[0]:.2f}", flush=True)
                        await clean(http, tag, args)
                report(work, size, runs, args)


def main() -> int:
    args = parse_args()
    reason = missing()
    if reason:
        print(f"side_by_side: {reason}", file=sys.stderr)
        return 2
    running = os.environ.get("REFPLANE_RUNNING")

    async def bench(tmp: Path) -> None:
        plane = RefPlane(Path(running) if running else tmp / "refplane",
                         {"API_ONLY": "1", "START_KUBE_CONTROLLER_MANAGER": "1"})
        async with contextlib.nullcontext(plane) if running else started(plane):
            await bench_all(args, plane, tmp)

    print(f"{os.cpu_count()} CPUs; reference plane: kube-apiserver v1.20.2 + etcd, Karmada f8fdd02", flush=True)
    return run_in_tmp(bench, "side-by-side-", args.keep_logs)


if __name__ == "__main__":
    sys.exit(main())
