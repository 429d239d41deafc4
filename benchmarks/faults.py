"""Fault runs: what goes *wrong* when the API server or a component fails mid-run, not only how long it takes.

Each run creates ``--rebalancers`` WorkloadRebalancers (default 300) of ``--workloads`` workloads (default 10)
over existing ResourceBindings, at an even pace over ``--create-seconds``, with the real
``karmada-controller-manager`` (a child process) doing the work. Once a third of the rebalancers exist,
one fault is injected:

a  restart     the dev API server is SIGKILLed and started again ``--restart-after`` seconds later on its
               data (``--data-dir``), answering first ``503 server is starting`` and then ``404 page not
               found`` on custom resources, as kube-apiserver does (its ``--starting-window`` and
               ``--crd-unserved-window``). With ``--kubeconfig`` the proxy below plays the same answers.
b  expiry      every informer's watch expires: the server keeps a small watch history
               (``--watch-history``); every open watch is ended and held back while a burst of writes to
               each watched kind moves past that history, so each informer resumes from a
               resourceVersion that is too old (410) and relists.
c  errors      for ``--error-seconds`` (20 s), ``--error-rate`` (5 %) of the requests get 500, 503 with
               Retry-After, 429 with Retry-After, 504 Timeout, or lose their answer after the server acted.
d  leader      two controller-manager replicas with leader election; the leader is SIGKILLed.
e  member      (the descheduler) a member cluster's API server is restarted while the descheduler and
               its estimator run every second; see ``member_fault``.
f  failback    a progressive fail-back (``--failback-workloads``, 20 at a time) loses the answer of a
               rebalancer create, then the API server restarts as in (a); see ``failback_fault``: no
               workload failed back twice, none forgotten.

Faults b and c (and a, with ``--kubeconfig``) put ``benchmarks/faultproxy.py`` between the
controller-manager and the server. The benchmark's own requests never go through it.

For each run it prints the rebalancers finished, the workloads wrongly ``Failed`` (every binding exists:
must be 0), the bindings missing their trigger (must be 0), duplicate Events (the same Event written
twice), and the seconds from the end of the fault until all work was done. Fault (e) prints the
replicas descheduled on stale or partial data (must be 0). The exit status is 1 when any "must be 0"
figure is not, or a run did not finish.

    .venv/bin/python benchmarks/faults.py                       # all six faults (~4 min)
    .venv/bin/python benchmarks/faults.py --faults a,c          # some of them
    .venv/bin/python benchmarks/faults.py --kubeconfig ~/.kube/karmada.config --faults b,c,d

With ``--kubeconfig`` (a real Karmada API server), its own ``workloadRebalancer`` controller must be off
(``--controllers=*,-workloadRebalancer``), or it will race ours; objects are made under a random prefix
and deleted afterwards. Every phase is bounded in time; children are stopped (and die with us).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import re
import secrets
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

SCRIPT = Path(__file__).resolve()
REPO = SCRIPT.parent.parent
if str(REPO) not in sys.path:  # run as a script: make the repository importable without installing
    sys.path.insert(0, str(REPO))

from benchmarks.faultproxy import FaultProxy, Upstream  # noqa: E402
from benchmarks.faults_failback import MAX_CONCURRENT, failback_fault  # noqa: E402
from benchmarks.faults_member import member_fault  # noqa: E402
from benchmarks.rebalancer import (  # noqa: E402
    RB_GROUP,
    WR_PATH,
    ControllerProcess,
    Layout,
    list_items,
    populate,
    run_controller_manager,
    scrape,
    wait_until_idle,
)
from benchmarks.support import BenchError, ServerProcess, free_port, log_tail, run_server  # noqa: E402
from devplane.kubeconfig import write_kubeconfig  # noqa: E402

FAULTS = {"a": "API server restart", "b": "watch expiry (410)", "c": "injected errors",
          "d": "leader killed", "e": "member restart (descheduler)", "f": "fail-back: lost create, restart"}
POLL = 0.5
RETRYABLE = (aiohttp.ClientError, OSError, TimeoutError)
CLUSTER_BINDINGS = f"{RB_GROUP}/clusterresourcebindings"
WORKS_V1ALPHA1 = "/apis/work.karmada.io/v1alpha1"


@dataclass
class Figures:
    """What one fault run found. ``None``: does not apply to this fault."""

    fault: str
    rebalancers: int = 0
    finished: int = 0
    wrongly_failed: int = 0
    missing_trigger: int = 0
    duplicate_events: int = 0
    recovery_seconds: float | None = None
    stale_descheduled: int | None = None
    notes: list[str] = field(default_factory=list)
    error: str = ""

    def problems(self) -> list[str]:
        """Every "must be 0" figure that is not, and a run that did not finish."""
        found = []
        if self.error:
            found.append(self.error)
        if self.finished < self.rebalancers:
            found.append(f"only {self.finished}/{self.rebalancers} rebalancers finished")
        if self.wrongly_failed:
            found.append(f"{self.wrongly_failed} workloads wrongly Failed")
        if self.missing_trigger:
            found.append(f"{self.missing_trigger} bindings missing their trigger")
        if self.stale_descheduled:
            found.append(f"{self.stale_descheduled} replicas descheduled on stale or partial data")
        return found


# ------------------------------------------------------------------------------------------ the API server


class Target:
    """The API server under test: a dev API server this benchmark runs (and can kill), or a kubeconfig's."""

    def __init__(self, upstream: Upstream, kubeconfig: Path, context: str | None) -> None:
        self.upstream = upstream
        self.kubeconfig = kubeconfig
        self.context = context

    @property
    def restartable(self) -> bool:
        return False

    async def restart(self, down: float, starting: float, crd_unserved: float) -> None:
        raise NotImplementedError


class DevTarget(Target):
    """``karmada-devplane apiserver`` on a fixed port and data folder, so that it can be killed and restarted."""

    def __init__(self, stack: contextlib.AsyncExitStack, tmp: Path, extra: list[str]) -> None:
        self._stack, self._tmp, self._extra = stack, tmp, extra
        self._port = free_port()
        self._data = tmp / "data"
        self._starts = 0
        self.server: ServerProcess | None = None
        url = f"http://127.0.0.1:{self._port}"
        kubeconfig = tmp / "kubeconfig"
        write_kubeconfig(kubeconfig, {"karmada-apiserver": url}, "karmada-apiserver")
        super().__init__(Upstream(url), kubeconfig, None)

    @property
    def restartable(self) -> bool:
        return True

    async def start(self, *extra: str) -> None:
        self._starts += 1
        log = self._tmp / f"apiserver-{self._starts}.log"
        self.server = await self._stack.enter_async_context(
            run_server(log, "--port", str(self._port), "--data-dir", str(self._data), *self._extra, *extra))

    async def restart(self, down: float, starting: float, crd_unserved: float) -> None:
        """SIGKILL, ``down`` seconds of nothing listening, then the same command on the same data, with
        kube-apiserver's restart answers (503 server is starting, then 404 page not found on CRs)."""
        assert self.server is not None
        self.server.proc.send_signal(signal.SIGKILL)
        await self.server.proc.wait()
        await asyncio.sleep(down)
        await self.start("--starting-window", f"{starting * 1000:.0f}ms",
                         "--crd-unserved-window", f"{crd_unserved * 1000:.0f}ms")


@contextlib.asynccontextmanager
async def open_target(args: argparse.Namespace, tmp: Path, extra: list[str]) -> AsyncIterator[Target]:
    async with contextlib.AsyncExitStack() as stack:
        if args.kubeconfig:
            upstream = await Upstream.from_kubeconfig(str(args.kubeconfig), args.context)
            yield Target(upstream, args.kubeconfig, args.context)
        else:
            target = DevTarget(stack, tmp, extra)
            await target.start()
            yield target


# ------------------------------------------------------------------------------------------ requests


async def until_done(what: str, deadline: float, action: Callable[[], Awaitable[Any]]) -> Any:
    """``action`` again and again while the server cannot answer (killed, starting, faulted) until ``deadline``."""
    last = ""
    while time.monotonic() < deadline:
        try:
            return await action()
        except RETRYABLE as exc:
            last = f"{type(exc).__name__}: {exc}"
        except BenchError as exc:
            if not re.search(r"HTTP (404|429|5\d\d)", str(exc)):
                raise
            last = str(exc)
        await asyncio.sleep(0.2)
    raise BenchError(f"{what}: no answer before the deadline ({last})")


async def request(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
                  ok: tuple[int, ...] = (200, 201)) -> dict[str, Any]:
    headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else None
    async with http.request(method, path, json=body, headers=headers) as resp:
        raw = await resp.read()
        if resp.status not in ok:
            raise BenchError(f"{method} {path}: HTTP {resp.status}: {raw[:300]!r}")
    result: dict[str, Any] = json.loads(raw) if raw else {}
    return result


async def create_paced(http: aiohttp.ClientSession, layout: Layout, seconds: float, deadline: float,
                       created: list[float]) -> None:
    """Create the rebalancers at an even pace over ``seconds``, each retried until it exists (a lost answer
    meets AlreadyExists); ``created`` gets the time of each creation."""
    start = time.monotonic()
    for i in range(layout.rebalancers):
        delay = start + i * seconds / layout.rebalancers - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await until_done(f"create {layout.rebalancer_name(i)}", deadline,
                         functools.partial(request, http, "POST", WR_PATH, layout.rebalancer(i), ok=(201, 409)))
        created.append(time.monotonic())


async def finished_count(http: aiohttp.ClientSession, layout: Layout) -> int:
    items = await list_items(http, WR_PATH)
    return sum(1 for wr in items if layout.owns(wr) and (wr.get("status") or {}).get("finishTime"))


async def wait_all_finished(http: aiohttp.ClientSession, layout: Layout, deadline: float) -> float:
    """Poll until every rebalancer of ``layout`` has a finishTime (through restarts); the time it was seen."""
    while time.monotonic() < deadline:
        with contextlib.suppress(*RETRYABLE, BenchError):
            if await finished_count(http, layout) >= layout.rebalancers:
                return time.monotonic()
        await asyncio.sleep(POLL)
    raise BenchError("not every rebalancer finished before the deadline")


# ------------------------------------------------------------------------------------------ checks


async def rebalancer_events(http: aiohttp.ClientSession, layout: Layout) -> list[dict[str, Any]]:
    """The Events about this layout's rebalancers (cluster-scoped objects: their Events are in ``default``)."""
    events = await list_items(http, "/api/v1/namespaces/default/events")
    return [e for e in events if (e.get("involvedObject") or {}).get("kind") == "WorkloadRebalancer"
            and str((e.get("involvedObject") or {}).get("name", "")).startswith(f"{layout.prefix}-")]


async def settle_events(http: aiohttp.ClientSession, layout: Layout, deadline: float) -> list[dict[str, Any]]:
    """The Events once their writer is done: as many as workloads, or unchanged for three polls."""
    last, quiet = -1, 0
    events: list[dict[str, Any]] = []
    while time.monotonic() < deadline and quiet < 3:
        events = await until_done("list events", deadline, lambda: rebalancer_events(http, layout))
        total = sum(int(e.get("count") or 1) for e in events)
        if total >= layout.bindings and total == last:
            break
        quiet = quiet + 1 if total == last else 0
        last = total
        await asyncio.sleep(POLL)
    return events


def duplicates(events: list[dict[str, Any]]) -> int:
    """Writes of an Event beyond the first: one (object, reason, message) seen more than once."""
    seen: Counter[tuple[str, str, str]] = Counter()
    for event in events:
        involved = event.get("involvedObject") or {}
        key = (str(involved.get("uid")), str(event.get("reason")), str(event.get("message")))
        seen[key] += int(event.get("count") or 1)
    return sum(n - 1 for n in seen.values())


async def check(http: aiohttp.ClientSession, layout: Layout, figures: Figures, deadline: float) -> None:
    """Count finished rebalancers, wrongly Failed workloads and bindings without the expected trigger."""
    rebalancers = [wr for wr in await list_items(http, WR_PATH) if layout.owns(wr)]
    trigger_of: dict[str, str] = {}
    for wr in rebalancers:
        status = wr.get("status") or {}
        figures.finished += bool(status.get("finishTime"))
        figures.wrongly_failed += sum(1 for item in status.get("observedWorkloads") or []
                                      if item.get("result") == "Failed")
        for ref in wr["spec"]["workloads"]:
            trigger_of[f"{ref['namespace']}/{ref['name']}-deployment"] = wr["metadata"]["creationTimestamp"]
    bindings = [b for b in await list_items(http, f"{RB_GROUP}/resourcebindings") if layout.owns(b)]
    figures.missing_trigger = sum(
        1 for b in bindings
        if b["spec"].get("rescheduleTriggeredAt") != trigger_of.get(f"{b['metadata']['namespace']}/"
                                                                      f"{b['metadata']['name']}"))
    figures.missing_trigger += layout.bindings - len(bindings)
    figures.duplicate_events = duplicates(await settle_events(http, layout, deadline))


# ------------------------------------------------------------------------------------------ faults


async def burst_past_history(http: aiohttp.ClientSession, layout: Layout, writes: int, deadline: float) -> None:
    """``writes`` changes to each kind the controller-manager watches, so that its watches' resourceVersions
    fall out of a watch history of fewer events. Only annotations change: no controller acts on them."""
    crb = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding",
           "metadata": {"name": f"{layout.prefix}-burst"},
           "spec": {"resource": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                 "name": f"{layout.prefix}-burst"}}}
    work_ns = f"karmada-es-{layout.prefix}-burst"
    work = {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": f"{layout.prefix}-burst", "namespace": work_ns}, "spec": {}}
    await request(http, "POST", "/api/v1/namespaces",
                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": work_ns}}, ok=(201, 409))
    await request(http, "POST", CLUSTER_BINDINGS, crb, ok=(201, 409))
    await request(http, "POST", f"{WORKS_V1ALPHA1}/namespaces/{work_ns}/works", work, ok=(201, 409))
    paths = [f"{WR_PATH}/{layout.rebalancer_name(0)}", layout.binding_path(0),
             f"{CLUSTER_BINDINGS}/{layout.prefix}-burst",
             f"{WORKS_V1ALPHA1}/namespaces/{work_ns}/works/{layout.prefix}-burst"]
    for path in paths:
        for n in range(writes):
            patch = {"metadata": {"annotations": {"faults.benchmark/burst": str(n)}}}
            write = functools.partial(request, http, "PATCH", path, patch, ok=(200,))
            await until_done(f"burst {path}", deadline, write)


async def leader_of(probes: aiohttp.ClientSession, managers: list[ControllerProcess],
                    deadline: float) -> ControllerProcess:
    """The replica whose ``leader_election_master_status`` is 1."""
    while time.monotonic() < deadline:
        for cm in managers:
            with contextlib.suppress(*RETRYABLE, BenchError):
                metrics = await scrape(probes, cm.metrics)
                if any(name == "leader_election_master_status" and value == 1 for name, _, value in metrics):
                    return cm
        await asyncio.sleep(POLL)
    raise BenchError("no replica became leader")


async def rebalancer_fault(fault: str, args: argparse.Namespace, tmp: Path) -> Figures:
    """One run of fault a, b, c or d (see the module docstring)."""
    prefix = f"faults-{fault}" if not args.kubeconfig else f"faults-{fault}-{secrets.token_hex(3)}"
    layout = Layout(args.rebalancers, args.workloads, args.namespaces, prefix)
    figures = Figures(fault, rebalancers=layout.rebalancers)
    deadline = time.monotonic() + args.run_time
    server_flags = ["--watch-history", str(args.watch_history)] if fault == "b" else []
    async with contextlib.AsyncExitStack() as stack:
        target = await stack.enter_async_context(open_target(args, tmp, server_flags))
        http = await stack.enter_async_context(target.upstream.session(connections=args.concurrency))
        probes = await stack.enter_async_context(aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)))
        await populate(http, layout, args.concurrency, args.run_time)
        proxy: FaultProxy | None = None
        kubeconfig, context = target.kubeconfig, target.context
        if fault in "bc" or (fault == "a" and not target.restartable):
            proxy = await stack.enter_async_context(FaultProxy(target.upstream, seed=args.seed).running())
            kubeconfig, context = tmp / "kubeconfig-proxy", None
            write_kubeconfig(kubeconfig, {"karmada-apiserver": proxy.url}, "karmada-apiserver")
        extra = [f"--kube-api-qps={args.kube_api_qps}", f"--kube-api-burst={args.kube_api_burst}"]
        extra += [f"--context={context}"] if context else []
        if fault == "d":
            await request(http, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                                "metadata": {"name": "karmada-system"}}, ok=(201, 409))
            extra += ["--leader-elect=true"]
        replicas = 2 if fault == "d" else 1
        managers = [await stack.enter_async_context(run_controller_manager(
            kubeconfig, tmp / f"controller-manager-{replica}.log", extra, None)) for replica in range(replicas)]
        leader = await leader_of(probes, managers, deadline) if fault == "d" else None
        # a replica that does not lead never drains its work queues: only the leader's start-up is waited for
        await wait_until_idle(probes, leader or managers[0], args.run_time)

        created: list[float] = []
        creating = asyncio.create_task(create_paced(http, layout, args.create_seconds, deadline, created))
        try:
            while len(created) < layout.rebalancers // 3 and not creating.done():
                await asyncio.sleep(0.05)
            fault_end = await inject(fault, args, Run(target, proxy, http, layout, leader, deadline))
            await creating
        finally:
            creating.cancel()
            await asyncio.gather(creating, return_exceptions=True)
        done = await wait_all_finished(http, layout, deadline)
        figures.recovery_seconds = max(0.0, done - fault_end)
        await check(http, layout, figures, deadline)
        if proxy is not None:
            figures.notes.append("injected: " + (", ".join(f"{k} x{n}" for k, n in sorted(proxy.injected.items()))
                                                 or "none"))
        if fault == "b":
            relists = sum(cm.log_path.read_text(errors="replace").count("watch expired, relisting") for cm in managers)
            figures.notes.append(f"watches expired and relisted: {relists}")
            if relists == 0 and target.restartable:
                figures.error = "the fault did not take: no watch expired"
        if args.kubeconfig:
            await clean_up(http, layout)
    return figures


@dataclass
class Run:
    """What a fault acts on."""

    target: Target
    proxy: FaultProxy | None
    http: aiohttp.ClientSession
    layout: Layout
    leader: ControllerProcess | None
    deadline: float


async def inject(fault: str, args: argparse.Namespace, run: Run) -> float:
    """Inject ``fault``; the monotonic time at which it ended."""
    target, proxy, leader = run.target, run.proxy, run.leader
    if fault == "a":
        if target.restartable:
            await target.restart(args.restart_after, args.starting_window, args.crd_unserved_window)
        else:
            assert proxy is not None
            await proxy.play_restart(args.restart_after, args.starting_window, args.crd_unserved_window)
        await asyncio.sleep(args.starting_window + args.crd_unserved_window)
        return time.monotonic()
    if fault == "b":
        assert proxy is not None
        # Disconnected while the burst moves the history past them, the informers come back with
        # resourceVersions that are too old, as after a network partition.
        async with proxy.watches_held():
            proxy.end_watches()
            await burst_past_history(run.http, run.layout, args.watch_history + 20, run.deadline)
        return time.monotonic()
    if fault == "c":
        assert proxy is not None
        proxy.inject_errors(args.error_rate, args.error_seconds)
        await asyncio.sleep(args.error_seconds)
        return time.monotonic()
    if fault == "d":
        assert leader is not None
        leader.proc.send_signal(signal.SIGKILL)
        await leader.proc.wait()
        return time.monotonic()
    raise ValueError(fault)


async def clean_up(http: aiohttp.ClientSession, layout: Layout) -> None:
    """Delete what a run made on a server the benchmark does not own (best effort)."""
    for i in range(layout.rebalancers):
        with contextlib.suppress(*RETRYABLE, BenchError):
            await request(http, "DELETE", f"{WR_PATH}/{layout.rebalancer_name(i)}", ok=(200, 202, 404))
    for n in range(layout.namespaces):
        with contextlib.suppress(*RETRYABLE, BenchError):
            await request(http, "DELETE", f"/api/v1/namespaces/{layout.namespace(n)}", ok=(200, 202, 404))


# ------------------------------------------------------------------------------------------ report


def report(results: list[Figures]) -> None:
    def show(value: float | int | None, fmt: str = "{}") -> str:
        return "-" if value is None else fmt.format(value)

    print(f"{'fault':<30} {'finished':>9} {'wrongly Failed':>15} {'missing trigger':>16} {'dup. Events':>12} "
          f"{'stale desched.':>15} {'recovery s':>11}")
    for f in results:
        print(f"{f.fault + ' ' + FAULTS[f.fault]:<30} {f'{f.finished}/{f.rebalancers}':>9} "
              f"{f.wrongly_failed:>15} {f.missing_trigger:>16} {f.duplicate_events:>12} "
              f"{show(f.stale_descheduled):>15} {show(f.recovery_seconds, '{:.1f}'):>11}")
        for note in f.notes:
            print(f"    {note}")
        for problem in f.problems():
            print(f"    PROBLEM: {problem}")


async def run_all(args: argparse.Namespace, tmp: Path) -> list[Figures]:
    results = []
    for fault in args.faults:
        folder = tmp / fault
        folder.mkdir()
        print(f"== fault {fault}: {FAULTS[fault]}", flush=True)
        try:
            if fault == "e":
                member = await member_fault(args, folder)
                figures = Figures(fault, stale_descheduled=member.stale_descheduled,
                                  recovery_seconds=member.recovery_seconds, notes=member.notes)
            elif fault == "f":
                back = await failback_fault(args, folder)
                figures = Figures(fault, recovery_seconds=back.recovery_seconds, error="; ".join(back.problems()),
                                  # every workload failed back: failback_fault raises otherwise
                                  notes=[f"{back.workloads}/{back.workloads} failed back; "
                                         f"listed twice {back.listed_twice}, "
                                         f"forgotten {back.forgotten} (both must be 0); at most "
                                         f"{back.most_in_flight} in flight (budget {MAX_CONCURRENT})",
                                         *back.notes])
            else:
                figures = await rebalancer_fault(fault, args, folder)
        except BenchError as exc:
            figures = Figures(fault, rebalancers=args.rebalancers if fault not in "ef" else 0, error=str(exc))
            for log in sorted(folder.glob("*.log")):
                print(f"--- {log.name}\n{log_tail(log, 15)}", file=sys.stderr)
        results.append(figures)
        if args.keep_logs:
            shutil.copytree(folder, args.keep_logs / fault, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("data", "*.db*"))
    return results


def fault_list(text: str) -> list[str]:
    faults = [f.strip() for f in text.split(",") if f.strip()]
    unknown = [f for f in faults if f not in FAULTS]
    if unknown or not faults:
        raise argparse.ArgumentTypeError(f"faults are letters among {','.join(FAULTS)}; got {text!r}")
    return faults


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "",
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--faults", type=fault_list, default=list(FAULTS), help="which faults, e.g. a,c (default all)")
    p.add_argument("--kubeconfig", type=Path, default=None,
                   help="run against this kubeconfig's API server instead of a dev API server (faults a-d)")
    p.add_argument("--context", default=None, help="the kubeconfig context (default: its current one)")
    p.add_argument("--rebalancers", type=int, default=300)
    p.add_argument("--workloads", type=int, default=10, help="workloads (bindings) per rebalancer")
    p.add_argument("--namespaces", type=int, default=10, help="namespaces the bindings are spread over")
    p.add_argument("--concurrency", type=int, default=16, help="connections of this process")
    p.add_argument("--kube-api-qps", type=float, default=300.0,
                   help="the controller-manager's --kube-api-qps: client-side throttling keeps work in flight "
                        "when the fault comes (Karmada's default, 40, makes a run of 300 x 10 last 5 minutes)")
    p.add_argument("--kube-api-burst", type=int, default=450, help="the controller-manager's --kube-api-burst")
    p.add_argument("--create-seconds", type=float, default=10.0, help="rebalancers are created over this time")
    p.add_argument("--restart-after", type=float, default=6.0, help="(a) seconds between the kill and the restart")
    p.add_argument("--starting-window", type=float, default=0.3,
                   help="(a) seconds of 503 'server is starting' after the restart (kube: 0.1-0.3)")
    p.add_argument("--crd-unserved-window", type=float, default=0.3,
                   help="(a) then seconds of text/plain 404 on custom resources (kube: about 0.2)")
    p.add_argument("--watch-history", type=int, default=200, help="(b) the server's watch history")
    p.add_argument("--error-rate", type=float, default=0.05, help="(c) share of requests that fail")
    p.add_argument("--error-seconds", type=float, default=20.0, help="(c) how long requests fail")
    p.add_argument("--member-workloads", type=int, default=30, help="(e) workloads over the members")
    p.add_argument("--failback-workloads", type=int, default=300, help="(f) workloads evicted from member1")
    p.add_argument("--run-time", type=float, default=240.0, help="time limit of each run, seconds")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep-logs", type=Path, default=None, metavar="DIR", help="copy the children's logs here")
    args = p.parse_args(argv)
    if args.kubeconfig and ("e" in args.faults or "f" in args.faults):
        p.error("faults e and f need API servers they can restart: run them without --kubeconfig")
    if args.rebalancers < 3 or args.workloads < 1:
        p.error("--rebalancers must be at least 3 and --workloads at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="faults-"))
    try:
        results = asyncio.run(run_all(args, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(results)
    failed = [f.fault for f in results if f.problems()]
    print("FAILED: " + ", ".join(failed) if failed else "OK: every must-be-0 figure is 0")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
