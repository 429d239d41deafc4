"""One dev API server: store + HTTP surface + the controllers kube-controller-manager would run.

Use it as an async context manager; it binds to 127.0.0.1 (port 0 = any free port) and owns
every task it starts, so leaving the ``async with`` stops everything::

    async with ApiServer() as server:
        print(server.url)

Authentication and authorization (off by default) are kube-apiserver's ``--token-auth-file`` and
``--authorization-mode AlwaysAllow|RBAC``; see :class:`ApiServerConfig` and ``docs/apiserver.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import structlog
from aiohttp import web

from controller_manager import objects

from . import kinds
from .auth import AuthorizationDecision, RequestGuard, validate_authorization_mode
from .authn import TokenAuthenticator, UserInfo, load_token_file
from .bodies import MAX_BODY
from .crds import packaged_crds
from .handlers import Api, Fault, ServerOptions
from .kcm import GarbageCollector, NamespaceController
from .rbac import RBAC_GROUP, RBACAuthorizer, bootstrap_cluster_role_bindings, bootstrap_cluster_roles
from .resources import builtin_registry
from .startup import StartupWindows
from .store import Store
from .tls import ServingCert, self_signed

log = structlog.get_logger(__name__)

DEFAULT_WATCH_HISTORY = 10_000
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class ApiServerConfig:
    """How one API server runs. Security fields (kube's flags):

    * ``token_auth_file``: kube's ``--token-auth-file`` CSV. With it (or ``extra_tokens``) every
      request needs a known ``Authorization: Bearer`` token, else 401 (anonymous auth is off).
      Without any token every request is ``system:anonymous`` (group ``system:unauthenticated``).
    * ``extra_tokens``: token → user served in addition to the file (the dev plane's admin token).
    * ``authorization_mode``: ``AlwaysAllow`` (default) or ``RBAC`` (stored Roles/Bindings, with
      kube's bootstrap ClusterRoles seeded; group ``system:masters`` bypasses).
    * ``record_authorization``: keep every decision in ``ApiServer.authorization_decisions``.
    * ``tls``: serve HTTPS with a fresh self-signed certificate (``ApiServer.ca_pem``/``ca_file``); kubectl
      sends kubeconfig credentials only over TLS, so the CLI turns this on whenever it authenticates.

    Restart behaviour (seconds, 0 = off): when started on a ``data_dir`` that already holds data, answer
    like a restarting kube-apiserver first — ``starting_window`` of 503 "server is starting", then
    ``crd_unserved_window`` of text/plain 404 on custom-resource paths (``startup.py``).
    """

    host: str = "127.0.0.1"
    port: int = 0
    data_dir: Path | None = None  # None: in memory only
    watch_history: int = DEFAULT_WATCH_HISTORY  # events kept per resource type for watches
    bookmark_interval: float = 60.0
    karmada: bool = True  # install Karmada's CRDs and serve Cluster (the host); False for members
    extra_namespaces: tuple[str, ...] = ()
    run_controllers: bool = True  # garbage collector and namespace controller
    token_auth_file: Path | None = None
    extra_tokens: dict[str, UserInfo] = field(default_factory=dict)
    authorization_mode: str = "AlwaysAllow"
    record_authorization: bool = False
    tls: bool = False
    starting_window: float = 0.0
    crd_unserved_window: float = 0.0

    @property
    def authentication(self) -> bool:
        """Whether requests must carry a known token."""
        return self.token_auth_file is not None or bool(self.extra_tokens)


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
        validate_authorization_mode(self.config.authorization_mode)
        self.store = Store(builtin_registry(), data_dir=self.config.data_dir,
                           history_size=self.config.watch_history)
        self._runner: web.AppRunner | None = None
        self.api: Api
        self._stack: contextlib.AsyncExitStack | None = None
        self.port = 0
        self._guard: RequestGuard | None = None
        self._cert: ServingCert | None = None

    @property
    def authorization_decisions(self) -> list[AuthorizationDecision]:
        """Every authorization decision since start, oldest first, when the server was configured with
        ``record_authorization=True`` (else empty). Each is an :class:`AuthorizationDecision`:
        (user, groups, verb, api_group, resource, subresource, namespace, name, path, allowed) — e.g.
        ``{(d.api_group, d.resource, d.verb) for d in server.authorization_decisions if d.resource}``
        is the API surface the clients used. Clear it with ``.clear()``."""
        return self._guard.decisions if self._guard is not None else []

    def inject_fault(self, method: str, path_contains: str, *, code: int = 500, reason: str = "InternalError",
                     times: int = 1, page_not_found: bool = False, retry_after: int = 0,
                     after_dispatch: bool = False) -> Fault:
        """Make the next ``times`` matching requests fail (for tests of retry paths). Returns the fault;
        set its ``times`` to 0 to lift it. ``page_not_found``: answer kube's text/plain ``404 page not found``
        (what a path that is not served gets, as during a restart) instead of a Status with ``code``.
        ``retry_after``: the Status asks for that many seconds' pause (``retryAfterSeconds`` and the
        ``Retry-After`` header, as a throttling or starting kube-apiserver does). ``after_dispatch``: the
        request is served (a create stored) before the failure is answered, as when a 504 timeout or a
        dropped connection loses the answer to a write that landed."""
        fault = Fault(method, path_contains, code, reason, times=times, page_not_found=page_not_found,
                      retry_after=retry_after, after_dispatch=after_dispatch)
        self.api.faults.append(fault)
        return fault

    def slow_down(self, method: str, path_contains: str, seconds: float, *, times: int = 1) -> Fault:
        """Serve the next ``times`` matching requests only after ``seconds`` (a large LIST, a loaded server), as
        they would be served otherwise. Returns the fault; set its ``times`` to 0 to lift it."""
        fault = Fault(method, path_contains, code=0, times=times, delay=seconds)
        self.api.faults.append(fault)
        return fault

    def simulate_restart(self, starting: float, crd_unserved: float) -> None:
        """Answer from now on as a kube-apiserver just restarted (for tests of clients riding it out):
        ``starting`` seconds of 503 "server is starting", then ``crd_unserved`` seconds of text/plain 404 on
        custom-resource paths. Open watches end, as the restart would drop their connections. Data is kept."""
        self._open_startup_windows(starting, crd_unserved)
        self.store.close_watchers()

    def _open_startup_windows(self, starting: float, crd_unserved: float) -> None:
        """Both windows from now; both 0 means serving normally at once (and ends any open windows)."""
        windows = StartupWindows(starting, crd_unserved)  # validates: ValueError if negative
        self.api.startup = windows if starting > 0 or crd_unserved > 0 else None
        if self.api.startup is not None:
            log.info("api server answering as starting", starting_s=starting, crd_unserved_s=crd_unserved)

    @property
    def url(self) -> str:
        return f"{'https' if self.config.tls else 'http'}://{self.config.host}:{self.port}"

    @property
    def ca_pem(self) -> bytes:
        """The PEM certificate HTTPS clients should trust (b"" when serving plain HTTP)."""
        return self._cert.ca_pem if self._cert is not None else b""

    @property
    def ca_file(self) -> Path | None:
        """``ca_pem`` as a file, while the server runs (None when serving plain HTTP)."""
        return self._cert.ca_file if self._cert is not None else None

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
            resumed = store.rv > 0  # the data directory held data: this start is a restart
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
            guard = await self._make_guard()
            await store.wait_durable(store.rv)
            api = Api(store, ServerOptions(bookmark_interval=self.config.bookmark_interval))
            api.guard = self._guard = guard
            self.api = api
            app = web.Application(client_max_size=MAX_BODY * 2)
            app.router.add_route("*", "/{tail:.*}", api.handle)
            runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0, handle_signals=False)
            await runner.setup()
            stack.push_async_callback(self._stop_http, runner)
            ssl_context = None
            if self.config.tls:
                cert = self._cert = await self_signed(self.config.host)
                stack.callback(cert.cleanup)
                ssl_context = cert.context
            site = web.TCPSite(runner, self.config.host, self.config.port, reuse_address=True,
                               ssl_context=ssl_context)
            if resumed:  # the windows run from when the port opens, as kube's do
                self._open_startup_windows(self.config.starting_window, self.config.crd_unserved_window)
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

    async def _make_guard(self) -> RequestGuard | None:
        """The request filters, or None for the default open server (no per-request cost)."""
        config = self.config
        rbac = config.authorization_mode == "RBAC"
        if not (config.authentication or rbac or config.record_authorization):
            return None
        authenticator = None
        if config.authentication:
            tables = [config.extra_tokens]
            if config.token_auth_file is not None:  # the file first: extra_tokens win on a clash
                tables.insert(0, await asyncio.to_thread(load_token_file, config.token_auth_file))
            authenticator = TokenAuthenticator(tables)
        authorizer = None
        if rbac:
            self._seed_rbac_policy()
            authorizer = RBACAuthorizer(self.store)
        log.info("api server security", authentication="token" if authenticator else "none",
                 authorization=config.authorization_mode)
        return RequestGuard(authenticator, authorizer, record=config.record_authorization)

    def _seed_rbac_policy(self) -> None:
        """kube's bootstrap ClusterRoles and bindings (discovery, health, cluster-admin), when missing."""
        store = self.store
        for plural, seeds in (("clusterroles", bootstrap_cluster_roles()),
                              ("clusterrolebindings", bootstrap_cluster_role_bindings())):
            rtype = store.registry.get(RBAC_GROUP, "v1", plural)
            assert rtype is not None
            for obj in seeds:
                if store.lookup(rtype, "", objects.name(obj)) is None:
                    store.create(rtype, "", obj)

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
            if store.lookup(crd_type, "", objects.name(crd)) is None:
                store.create(crd_type, "", crd)
