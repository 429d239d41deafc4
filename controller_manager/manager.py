"""The manager: runs informers, controllers and other runnables, with leader election.

Order of things, as controller-runtime's manager: serve ``/metrics`` and the probes first
(standbys are scraped and probed too), start the informers in every replica (a standby
keeps a warm cache), then run the controllers and leader-only runnables only while
leading. ``/readyz`` turns ready once the caches synced, whether or not this replica leads,
unless no replica can lead at all: while the Lease's namespace does not exist, its
``leader-election`` check fails and says so (a configuration error an operator must fix).
A controller whose informers cannot sync (for example its CRD is missing) is reported by
name and started later if its kind appears; the other controllers run meanwhile.
Shutdown (``request_shutdown``, on SIGTERM): stop taking work, let reconciles in flight
finish (bounded), release the lease, stop the informers. Losing the lease raises
:class:`~controller_manager.leaderelection.LeaderElectionLost`: the process must exit non-zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import prometheus_client
import structlog
from aiohttp import web

from .client import KubeClient
from .controller import Controller
from .events import EventRecorder
from .informer import InformerFactory, SharedInformer, SyncTimeout
from .leaderelection import LeaderElectionConfig, LeaderElectionLost, LeaderElector
from .metrics import REGISTRY
from .resource import Resource

log = structlog.get_logger(__name__)

Runnable = Callable[[], Coroutine[Any, Any, None]]
Check = Callable[[], str | None]  # None = healthy, else the reason (logged; shown only if the check is public)


class ComponentFailed(Exception):
    """A controller or runnable stopped on its own: the process must exit non-zero."""


def split_bind_address(address: str) -> tuple[str, int] | None:
    """(host, port) to listen on, or None when disabled; ``:8080`` listens on every interface."""
    if address in ("0", ""):
        return None
    host, _, port = address.rpartition(":")
    return (host.strip("[]") or "0.0.0.0"), int(port)


@dataclass
class ManagerOptions:
    """A bind address is ``HOST:PORT``, ``:PORT`` (every interface), ``[IPv6]:PORT``, or ``0``/empty (off)."""

    name: str
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ""
    leader_election: LeaderElectionConfig | None = None
    cache_sync_timeout: float = 120.0
    graceful_shutdown_timeout: float = 30.0
    compact_caches: bool = True
    """Informers keep objects packed (deflated JSON, see Indexer and jsonpack) unless they ask otherwise:
    about 0.2x the JSON size instead of 3.6-4.7x as dicts (docs/benchmarks.md, Memory)."""


@dataclass
class _Runnable:
    name: str
    run: Runnable
    needs_leader: bool


@dataclass
class _Checks:
    healthz: dict[str, Check] = field(default_factory=dict)
    readyz: dict[str, Check] = field(default_factory=dict)
    public: set[str] = field(default_factory=set)  # checks whose reason the probe body shows


class Manager:
    """Owns every task of a component; ``await manager.run()`` until shutdown."""

    def __init__(self, client: KubeClient, options: ManagerOptions) -> None:
        self.client = client
        self.options = options
        self.informers = InformerFactory(client, compact=options.compact_caches)
        self.controllers: list[Controller] = []
        self._runnables: list[_Runnable] = []
        self._recorders: list[EventRecorder] = []
        self._checks = _Checks(healthz={"ping": lambda: None}, readyz={"informer-sync": self._informers_synced})
        if options.leader_election is not None:
            self.add_readyz_check("leader-election", self._election_problem, public=True)
        self._stop = asyncio.Event()
        self._http: list[web.AppRunner] = []
        self.bound: dict[str, tuple[str, int]] = {}  # "metrics"/"health" → actual (host, port)
        self.elector: LeaderElector | None = None
        self._failure: str = ""

    # ----------------------------------------------------------------- building

    def informer(self, resource: Resource, namespace: str = "", *, compact: bool | None = None,
                 field_selector: str = "") -> SharedInformer:
        """The process-wide shared informer of a resource (``compact``: see Indexer; None: the manager's
        ``compact_caches``; ``field_selector``: only the objects it selects)."""
        return self.informers.informer(resource, namespace, compact=compact, field_selector=field_selector)

    def add_controller(self, controller: Controller) -> None:
        if any(c.name == controller.name for c in self.controllers):
            raise ValueError(f"controller name {controller.name!r} is already used (names are metric labels)")
        self.controllers.append(controller)

    def add_runnable(self, name: str, run: Runnable, *, needs_leader: bool = True) -> None:
        self._runnables.append(_Runnable(name, run, needs_leader))

    def event_recorder(self, component: str) -> EventRecorder:
        recorder = EventRecorder(self.client, component, host=self.identity)
        self._recorders.append(recorder)
        return recorder

    async def flush_events(self, timeout: float = 5.0) -> None:
        """Write the events recorded so far (tests, and anything that must see them now)."""
        for recorder in self._recorders:
            await recorder.flush(timeout)

    def add_readyz_check(self, name: str, check: Check, *, public: bool = False) -> None:
        """``public``: the probe body shows the reason (only for reasons that reveal nothing internal)."""
        self._checks.readyz[name] = check
        if public:
            self._checks.public.add(name)

    def add_healthz_check(self, name: str, check: Check, *, public: bool = False) -> None:
        self._checks.healthz[name] = check
        if public:
            self._checks.public.add(name)

    @property
    def identity(self) -> str:
        return self.options.leader_election.identity if self.options.leader_election else ""

    def request_shutdown(self) -> None:
        """Begin a graceful shutdown (what SIGTERM does)."""
        self._stop.set()

    @property
    def shutdown_requested(self) -> bool:
        return self._stop.is_set()

    @property
    def is_leader(self) -> bool:
        return self.elector.is_leader if self.elector is not None else True

    # ----------------------------------------------------------------- running

    async def run(self) -> None:
        async with contextlib.AsyncExitStack() as stack:
            await self._serve_http(stack)
            background: list[asyncio.Task[None]] = []
            stack.push_async_callback(_cancel_all, background)
            for recorder in self._recorders:
                writer = asyncio.create_task(recorder.run(), name=f"events {recorder.component}")
                stack.push_async_callback(_stop_recorder, recorder, writer)
            for runnable in self._runnables:
                if not runnable.needs_leader:
                    background.append(self._supervised(runnable.run(), runnable.name))
            self.informers.start()
            stack.push_async_callback(self.informers.stop)
            background.append(asyncio.create_task(self._report_sync(), name="cache sync report"))
            if self.options.leader_election is None:
                await self._lead()
            else:
                self.elector = LeaderElector(self.client.api_client, self.options.leader_election)
                await self._elect(self.elector)
        if self._failure:
            raise ComponentFailed(self._failure)

    def _supervised(self, coro: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """A task whose unexpected end (error or return before shutdown) shuts the component down."""
        task = asyncio.create_task(coro, name=name)

        def check(done: asyncio.Task[None]) -> None:
            if done.cancelled() or self._stop.is_set():
                return
            error = done.exception()
            self._failure = f"{name} stopped unexpectedly: {error!r}" if error else f"{name} stopped unexpectedly"
            log.error("shutting down", reason=self._failure)
            self._stop.set()

        task.add_done_callback(check)
        return task

    async def _elect(self, elector: LeaderElector) -> None:
        election = asyncio.create_task(elector.run(self._lead), name="leader election")
        stopping = asyncio.create_task(self._stop.wait(), name="shutdown signal")
        done, _ = await asyncio.wait({election, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if election in done:
            stopping.cancel()
            election.result()  # LeaderElectionLost propagates: the caller exits non-zero
            return
        if not elector.is_leader:
            election.cancel()
        # As leader, _lead sees the stop signal, drains, returns; the elector then releases the lease.
        [outcome] = await asyncio.gather(election, return_exceptions=True)
        if isinstance(outcome, LeaderElectionLost):
            raise outcome  # lost during the drain: still a lost lease

    async def _lead(self) -> None:
        """Everything that runs only while leading; returns after a graceful drain on shutdown."""
        log.info("leading: starting", component=self.options.name, controllers=[c.name for c in self.controllers],
                 runnables=[r.name for r in self._runnables if r.needs_leader])
        tasks = [self._supervised(self._run_controller(c), f"controller {c.name}") for c in self.controllers]
        tasks += [self._supervised(r.run(), r.name) for r in self._runnables if r.needs_leader]
        try:
            await self._stop.wait()
            log.info("shutting down: draining controllers", timeout=self.options.graceful_shutdown_timeout)
            await asyncio.gather(*(c.drain(self.options.graceful_shutdown_timeout) for c in self.controllers))
        finally:
            await _cancel_all(tasks)

    async def _run_controller(self, controller: Controller) -> None:
        try:
            await self.informers.wait_for_sync(controller.informers, timeout=self.options.cache_sync_timeout)
        except SyncTimeout as exc:
            log.error("controller not started: caches did not sync", controller=controller.name, error=str(exc))
            await self.informers.wait_for_sync(controller.informers, timeout=float("inf"))
            log.info("caches synced late, starting controller", controller=controller.name)
        await controller.run()

    async def _report_sync(self) -> None:
        """Name, once, every kind that has not synced within the cache sync timeout."""
        try:
            await self.informers.wait_for_sync(timeout=self.options.cache_sync_timeout)
            log.info("caches synced", kinds=[i.name for i in self.informers.informers()])
        except SyncTimeout as exc:
            log.error("caches not synced", error=str(exc))

    def _election_problem(self) -> str | None:
        """Why no replica can lead (the Lease's namespace is missing): the operator must act."""
        return self.elector.problem if self.elector is not None else None

    def _informers_synced(self) -> str | None:
        """Ready only once every cache synced (a missing CRD keeps it unready; the log names the kind)."""
        pending = [i for i in self.informers.informers() if not i.has_synced()]
        return f"not synced: {', '.join(i.name for i in pending)}" if pending else None

    # ----------------------------------------------------------------- HTTP endpoints

    async def _serve_http(self, stack: contextlib.AsyncExitStack) -> None:
        endpoints: dict[tuple[str, int], web.Application] = {}
        metrics = split_bind_address(self.options.metrics_bind_address)
        health = split_bind_address(self.options.health_probe_bind_address)
        if metrics is not None:
            endpoints.setdefault(metrics, web.Application()).router.add_get("/metrics", _metrics_handler)
        if health is not None:
            app = endpoints.setdefault(health, web.Application())
            app.router.add_get("/healthz", self._probe(self._checks.healthz, "healthz", self._checks.public))
            app.router.add_get("/readyz", self._probe(self._checks.readyz, "readyz", self._checks.public))
        for address, app in endpoints.items():
            runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
            await runner.setup()
            stack.push_async_callback(runner.cleanup)
            site = web.TCPSite(runner, address[0], address[1], reuse_address=True)
            try:
                await site.start()
            except OSError as exc:  # in use, or not an address of this host: one clear line, not a traceback
                flags = [flag for flag, bind in (("--metrics-bind-address", metrics), ("--health-probe-bind-address",
                                                                                        health)) if bind == address]
                raise ComponentFailed(f"cannot listen on {address[0] or '0.0.0.0'}:{address[1]} "
                                      f"({', '.join(flags)}): {os.strerror(exc.errno) if exc.errno else exc}"
                                      ) from None
            server = site._server
            sockets = getattr(server, "sockets", None) or []
            bound = sockets[0].getsockname()[:2] if sockets else address
            if address == metrics:
                self.bound["metrics"] = bound
            if address == health:
                self.bound["health"] = bound
            log.info("serving", address=f"{bound[0]}:{bound[1]}",
                     endpoints=sorted({r.resource.canonical for r in app.router.routes() if r.resource is not None}))

    @staticmethod
    def _probe(checks: dict[str, Check], kind: str, public: set[str],
               ) -> Callable[[web.Request], Awaitable[web.Response]]:
        """controller-runtime's healthz handler: ``ok``, or ``[-]name failed: reason withheld`` lines.

        A public check shows its reason instead (``[-]leader-election failed: namespace ... not found``):
        an operator reading ``/readyz`` or ``kubectl describe pod`` learns what to fix.
        """

        async def handler(request: web.Request) -> web.Response:
            verbose = "verbose" in request.query
            excluded = set(request.query.getall("exclude", []))
            lines, failed = [], False
            for name, check in checks.items():
                if name in excluded:
                    continue
                reason = check()
                if reason is None:
                    lines.append(f"[+]{name} ok")
                else:
                    failed = True
                    lines.append(f"[-]{name} failed: {reason if name in public else 'reason withheld'}")
                    log.debug("probe check failed", probe=kind, check=name, reason=reason)
            if failed:
                return web.Response(status=500, text="\n".join([*lines, f"{kind} check failed"]) + "\n")
            if verbose:
                return web.Response(text="\n".join([*lines, f"{kind} check passed"]) + "\n")
            return web.Response(text="ok")

        return handler


async def _metrics_handler(_request: web.Request) -> web.Response:
    body = prometheus_client.generate_latest(REGISTRY)
    return web.Response(body=body, headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST})


async def _stop_recorder(recorder: EventRecorder, writer: asyncio.Task[None]) -> None:
    """Stop the background writer, then write what is still queued (bounded)."""
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)
    await recorder.flush()


async def _cancel_all(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for task, result in zip(tasks, results, strict=True):
        if isinstance(result, Exception):
            log.error("task failed", task=task.get_name(), error=repr(result))
