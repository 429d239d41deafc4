"""One dev API server: store + HTTP surface + the controllers kube-controller-manager would run.

Use it as an async context manager; it binds to 127.0.0.1 (port 0 = any free port) and owns
every task it starts, so leaving the ``async with`` stops everything::

    async with ApiServer() as server:
        print(server.url)
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import structlog
from aiohttp import web

from . import kinds
from .crds import packaged_crds
from .handlers import MAX_BODY, Api, Fault, ServerOptions
from .kcm import GarbageCollector, NamespaceController
from .resources import builtin_registry
from .store import Store

log = structlog.get_logger(__name__)

DEFAULT_WATCH_HISTORY = 10_000
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class ApiServerConfig:
    host: str = "127.0.0.1"
    port: int = 0
    data_dir: Path | None = None  # None: in memory only
    watch_history: int = DEFAULT_WATCH_HISTORY  # events kept per resource type for watches
    bookmark_interval: float = 60.0
    karmada: bool = True  # install Karmada's CRDs and serve Cluster (the host); False for members
    extra_namespaces: tuple[str, ...] = ()
    run_controllers: bool = True  # garbage collector and namespace controller


def _report_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task failed", task=task.get_name(), error=repr(task.exception()))


async def _cancel_tasks(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class ApiServer:
    """A Kubernetes-compatible API server on aiohttp, storing in SQLite or memory."""

    def __init__(self, config: ApiServerConfig | None = None, **overrides: Any) -> None:
        self.config = config or ApiServerConfig()
        for key, value in overrides.items():
            setattr(self.config, key, value)
        self.store = Store(builtin_registry(), data_dir=self.config.data_dir,
                           history_size=self.config.watch_history)
        self._runner: web.AppRunner | None = None
        self.api: Api
        self._stack: contextlib.AsyncExitStack | None = None
        self.port = 0

    def inject_fault(self, method: str, path_contains: str, *, code: int = 500, reason: str = "InternalError",
                     times: int = 1) -> Fault:
        """Make the next ``times`` matching requests fail (for tests of retry paths). Returns the fault;
        set its ``times`` to 0 to lift it."""
        fault = Fault(method, path_contains, code, reason, times=times)
        self.api.faults.append(fault)
        return fault

    @property
    def url(self) -> str:
        return f"http://{self.config.host}:{self.port}"

    async def __aenter__(self) -> ApiServer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    async def start(self) -> None:
        stack = contextlib.AsyncExitStack()
        await stack.__aenter__()
        self._stack = stack
        try:
            store = self.store
            if self.config.karmada:
                kinds.install(store)
            else:
                kinds.install_core(store)
            await store.open()
            stack.push_async_callback(store.close)
            # Plain tasks, not an anyio task group: start() and stop() may run in different tasks
            # (e.g. a pytest-asyncio fixture's setup and teardown), which a cancel scope forbids.
            tasks: list[asyncio.Task[None]] = []
            stack.push_async_callback(_cancel_tasks, tasks)
            tasks.append(asyncio.create_task(store.run_writer(), name="journal writer"))
            if self.config.run_controllers:
                tasks.append(asyncio.create_task(GarbageCollector(store).run(), name="garbage collector"))
                tasks.append(asyncio.create_task(NamespaceController(store).run(), name="namespace controller"))
            for task in tasks:
                task.add_done_callback(_report_crash)
            self._bootstrap()
            await store.wait_durable(store.rv)
            api = Api(store, ServerOptions(bookmark_interval=self.config.bookmark_interval))
            self.api = api
            app = web.Application(client_max_size=MAX_BODY * 2)
            app.router.add_route("*", "/{tail:.*}", api.handle)
            runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0, handle_signals=False)
            await runner.setup()
            stack.push_async_callback(self._stop_http, runner)
            site = web.TCPSite(runner, self.config.host, self.config.port, reuse_address=True)
            await site.start()
            self._runner = runner
            server = site._server
            assert server is not None
            sockets = getattr(server, "sockets", None) or []
            self.port = sockets[0].getsockname()[1] if sockets else self.config.port
            log.info("api server ready", url=self.url, data_dir=str(self.config.data_dir or ":memory:"))
        except BaseException:
            await self.stop()
            raise

    async def _stop_http(self, runner: web.AppRunner) -> None:
        self.store.close_watchers()
        await runner.cleanup()

    async def stop(self) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    def _bootstrap(self) -> None:
        """System namespaces and (on the host) Karmada's CRDs, created when missing."""
        store = self.store
        ns_type = store.registry.get("", "v1", "namespaces")
        assert ns_type is not None
        for ns in (*SYSTEM_NAMESPACES, *self.config.extra_namespaces):
            if store.lookup(ns_type, "", ns) is None:
                store.create(ns_type, "", {"metadata": {"name": ns}})
        if not self.config.karmada:
            return
        crd_type = store.registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert crd_type is not None
        for crd in packaged_crds():
            if store.lookup(crd_type, "", crd["metadata"]["name"]) is None:
                store.create(crd_type, "", crd)
