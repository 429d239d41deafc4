"""The whole dev plane in one object: API servers, cluster registration and the simulations.

:class:`DevPlane` starts a host API server (context ``karmada-apiserver``) and one API server
per member, registers each member on the host the way ``karmadactl join`` does in push mode
(a token Secret in ``karmada-cluster`` and a Cluster with ``apiEndpoint`` + ``secretRef``),
creates each member's Nodes from its shape, then runs:

* on the host, one Manager with the Karmada simulation (detector, scheduler, binding,
  execution, work status, cluster and cluster status, taint manager, graceful eviction);
  members are reached through :class:`clusteraccess.registry.MemberRegistry`, exactly as the
  product's estimator reaches them;
* per member, one Manager with the member simulation (deployments, replica sets, pod
  scheduler, kubelet).

The product components (``karmada-controller-manager``, ``karmada-descheduler``) are not part
of it: they run as their own processes against the host, as they would in production.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import structlog
from kubernetes_asyncio import client as k8s

from clusteraccess.registry import MemberRegistry
from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.client import KubeClient
from controller_manager.manager import Manager, ManagerOptions
from estimator.client import EstimatorClient
from karmada_api.clusters import CLUSTER_CONTROLLER_TAINT_KEYS, is_ready
from karmada_api.resources import CLUSTERS
from kube_api.resources import NODES, SECRETS

from .apiserver.authn import MASTERS, UserInfo
from .apiserver.server import DEFAULT_WATCH_HISTORY, ApiServer, ApiServerConfig
from .config import DEFAULT_MEMBERS, MemberShape
from .karmada.binding import setup_binding_controllers
from .karmada.cluster import setup_cluster_controller
from .karmada.clusterstatus import setup_cluster_status
from .karmada.detector import setup_detector
from .karmada.execution import setup_execution
from .karmada.gracefuleviction import setup_graceful_eviction
from .karmada.scheduler import setup_scheduler
from .karmada.scheduler.assumptions import AssumedWorkload
from .karmada.scheduler.overcommit import plane_available_replicas
from .karmada.taintmanager import setup_taint_manager
from .karmada.workstatus import setup_work_status
from .kubeconfig import write_kubeconfig
from .members.setup import setup_member_simulation

log = structlog.get_logger(__name__)

HOST_CONTEXT = "karmada-apiserver"
CLUSTER_SECRET_NAMESPACE = "karmada-cluster"
ADMIN_USER = UserInfo("karmada-admin", "karmada-admin", (MASTERS,))


def secured(token_auth_file: Path | None, authorization_mode: str) -> bool:
    """Whether a server authenticates or authorizes requests: it then serves HTTPS and an admin token."""
    return token_auth_file is not None or authorization_mode != "AlwaysAllow"


def new_admin_token() -> dict[str, UserInfo]:
    """A fresh token for the plane's own admin (group system:masters), never written to the user's token file."""
    return {secrets.token_urlsafe(32): ADMIN_USER}


@dataclass
class PlaneOptions:
    """What ``karmada-devplane up`` takes; timings default to Karmada's."""

    members: tuple[MemberShape, ...] = DEFAULT_MEMBERS
    data_dir: Path | None = None
    watch_history: int = DEFAULT_WATCH_HISTORY
    enable_scheduler_estimator: bool = False
    scheduler_estimator_timeout: float = 3.0
    cluster_status_update_frequency: float = 10.0
    cluster_failure_threshold: float = 30.0
    graceful_eviction_timeout: float = 600.0
    enable_no_execute_taint_eviction: bool = True
    no_execute_taint_eviction_purge_mode: str = "Gracefully"
    resource_eviction_rate: float = 0.5
    host_port: int = 0
    token_auth_file: Path | None = None  # the host's --token-auth-file (members have no authentication)
    authorization_mode: str = "AlwaysAllow"  # the host's --authorization-mode
    record_authorization: bool = False  # keep the host's decisions (ApiServer.authorization_decisions), for tests
    scheduling_overcommit_protection: bool = False  # karmada-scheduler's alpha feature gate (Karmada's default: off)

    @property
    def host_security(self) -> bool:
        return secured(self.token_auth_file, self.authorization_mode)


def _client(url: str, token: str = "", ca_file: Path | None = None) -> KubeClient:
    """An unthrottled client: the simulation stands for many components, each with its own quota."""
    configuration = k8s.Configuration(host=url)
    if token:
        configuration.api_key = {"BearerToken": f"Bearer {token}"}
    if ca_file is not None:
        configuration.ssl_ca_cert = str(ca_file)
    return KubeClient(k8s.ApiClient(configuration), qps=0)


class DevPlane:
    """Host + members + simulations; ``async with DevPlane(options) as plane:`` or start()/stop()."""

    def __init__(self, options: PlaneOptions | None = None) -> None:
        self.options = options or PlaneOptions()

        def data(name: str) -> Path | None:
            return self.options.data_dir / name if self.options.data_dir else None

        # With host security on, the host serves HTTPS (kubectl sends credentials only over TLS) and
        # one more token (user karmada-admin, group system:masters) for the simulation and the
        # kubeconfig it writes; the user's token file is left alone.
        admin = new_admin_token() if self.options.host_security else {}
        self.admin_token = next(iter(admin), "")
        self.host = ApiServer(ApiServerConfig(
            port=self.options.host_port, data_dir=data("host"), watch_history=self.options.watch_history,
            extra_namespaces=("karmada-system", CLUSTER_SECRET_NAMESPACE),
            token_auth_file=self.options.token_auth_file, extra_tokens=admin,
            authorization_mode=self.options.authorization_mode, tls=self.options.host_security,
            record_authorization=self.options.record_authorization))
        self.members: dict[str, ApiServer] = {
            shape.name: ApiServer(ApiServerConfig(data_dir=data(shape.name), watch_history=self.options.watch_history,
                                                  karmada=False))
            for shape in self.options.members}
        self.managers: list[Manager] = []
        self.registry: MemberRegistry | None = None
        self._clients: list[KubeClient] = []
        self.client: KubeClient | None = None  # the host client, once started
        self._tasks: list[asyncio.Task[None]] = []
        self._started_servers: list[ApiServer] = []

    # ------------------------------------------------------------------ addresses

    @property
    def member_urls(self) -> dict[str, str]:
        return {name: server.url for name, server in self.members.items()}

    def write_kubeconfigs(self, directory: Path) -> tuple[Path, Path]:
        """``karmada.config`` (context karmada-apiserver, with the admin token and the CA when the host
        authenticates) and ``members.config`` (member1..N)."""
        host_path, members_path = directory / "karmada.config", directory / "members.config"
        write_kubeconfig(host_path, {HOST_CONTEXT: self.host.url}, HOST_CONTEXT, {HOST_CONTEXT: self.admin_token},
                         {HOST_CONTEXT: self.host.ca_pem})
        urls = self.member_urls
        write_kubeconfig(members_path, urls, next(iter(urls)) if urls else HOST_CONTEXT)
        return host_path, members_path

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> DevPlane:
        await self.start()
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        try:
            await self.host.start()
            self._started_servers.append(self.host)
            for server in self.members.values():
                await server.start()
                self._started_servers.append(server)
            host = self.client = self._new_client(self.host.url, self.admin_token, self.host.ca_file)
            for shape in self.options.members:
                member = self._new_client(self.members[shape.name].url)
                await _ensure_nodes(member, shape)
                await register_member(host, shape.name, self.members[shape.name].url)
                self._start(self._member_manager(shape.name, member))
            self._start(self._host_manager(host))
        except BaseException:
            await self.stop()
            raise
        log.info("dev plane started", host=self.host.url, members=self.member_urls)

    async def stop(self) -> None:
        """Stop managers, clients and servers; shielded, so it completes even when its caller is cancelled."""
        with anyio.CancelScope(shield=True):
            await self._stop()

    async def _stop(self) -> None:
        for manager in self.managers:
            manager.request_shutdown()
        tasks, self._tasks = self._tasks, []
        if tasks:
            _done, pending = await asyncio.wait(tasks, timeout=10.0)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self.managers.clear()
        clients, self._clients = self._clients, []
        for kube in clients:
            with contextlib.suppress(Exception):
                await kube.close()
        servers, self._started_servers = self._started_servers, []
        for server in reversed(servers):
            await server.stop()

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Until every member's Cluster is Ready and untainted by its condition (schedulable)."""
        host = self.client
        if host is None:
            raise RuntimeError("the dev plane is not started")
        names = set(self.members)

        async def ready() -> bool:
            listed = await host.list(CLUSTERS)
            done = set()
            for cluster in listed.get("items") or []:
                taints = objects.spec(cluster).get("taints") or []
                if is_ready(cluster) and not any(t.get("key") in CLUSTER_CONTROLLER_TAINT_KEYS for t in taints):
                    done.add(objects.name(cluster))
            return names <= done

        async with asyncio.timeout(timeout):
            while not await ready():
                await asyncio.sleep(0.1)

    # ------------------------------------------------------------------ building

    def _new_client(self, url: str, token: str = "", ca_file: Path | None = None) -> KubeClient:
        kube = _client(url, token, ca_file)
        self._clients.append(kube)
        return kube

    def _start(self, manager: Manager) -> None:
        self.managers.append(manager)
        task = asyncio.create_task(manager.run(), name=f"manager {manager.options.name}")
        task.add_done_callback(_report_exit)
        self._tasks.append(task)

    def _host_manager(self, host: KubeClient) -> Manager:
        options = self.options
        # Parsed caches: the simulation lists whole caches often, and the memory aim is the products'.
        manager = Manager(host, ManagerOptions(name="karmada-simulation", metrics_bind_address="0",
                                                  compact_caches=False))
        registry = MemberRegistry(host, manager.informer(CLUSTERS), sync_timeout=options.scheduler_estimator_timeout)
        self.registry = registry
        manager.add_runnable("member-registry", registry.run, needs_leader=False)
        estimator = EstimatorClient(registry, timeout=options.scheduler_estimator_timeout)

        async def available(clusters: list[dict[str, Any]], requirements: dict[str, Any] | None, replicas: int,
                            assumed: Mapping[str, Sequence[AssumedWorkload]] | None = None) -> dict[str, int]:
            return await plane_available_replicas(estimator, clusters, requirements, replicas, assumed or {},
                                                  accurate=options.enable_scheduler_estimator)

        setup_cluster_controller(manager)
        setup_cluster_status(manager, registry, period=options.cluster_status_update_frequency,
                             failure_threshold=options.cluster_failure_threshold)
        setup_detector(manager)
        setup_scheduler(manager, available_replicas=available,
                        overcommit_protection=options.scheduling_overcommit_protection)
        setup_binding_controllers(manager)
        setup_execution(manager, registry)
        setup_work_status(manager, registry)
        setup_taint_manager(manager, enable_no_execute_taint_eviction=options.enable_no_execute_taint_eviction,
                            purge_mode=options.no_execute_taint_eviction_purge_mode,
                            resource_eviction_rate=options.resource_eviction_rate)
        setup_graceful_eviction(manager, timeout=options.graceful_eviction_timeout)
        return manager

    @staticmethod
    def _member_manager(name: str, member: KubeClient) -> Manager:
        manager = Manager(member, ManagerOptions(name=f"{name}-simulation", metrics_bind_address="0",
                                                    compact_caches=False))
        setup_member_simulation(manager, cluster_name=name)
        return manager


def _report_exit(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("simulation stopped with an error", task=task.get_name(), error=repr(task.exception()))


async def _ensure_nodes(member: KubeClient, shape: MemberShape) -> None:
    """Register the member's Nodes (kept as they are when they exist: a restarted plane keeps cordons)."""
    for node in shape.nodes:
        obj = node.node_object()
        try:
            await member.create(NODES, {k: v for k, v in obj.items() if k != "status"})
        except ApiError as exc:
            if not exc.is_already_exists:
                raise
            continue
        await member.patch_status(NODES, node.name, {"status": obj["status"]})


async def register_member(host: KubeClient, name: str, endpoint: str) -> None:
    """``karmadactl join`` in push mode: the member's token Secret and a Cluster pointing at it.

    The endpoint is refreshed on a restarted plane (members get new ports); the token is kept.
    """
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": name, "namespace": CLUSTER_SECRET_NAMESPACE},
              "data": {"token": base64.b64encode(secrets.token_hex(24).encode()).decode()}}
    try:
        await host.create(SECRETS, secret, CLUSTER_SECRET_NAMESPACE)
    except ApiError as exc:
        if not exc.is_already_exists:
            raise
    spec = {"syncMode": "Push", "apiEndpoint": endpoint,
            "secretRef": {"namespace": CLUSTER_SECRET_NAMESPACE, "name": name}}
    try:
        await host.create(CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                     "metadata": {"name": name}, "spec": spec})
        return
    except ApiError as exc:
        if not exc.is_already_exists:
            raise

    async def refresh() -> None:
        cluster = await host.get(CLUSTERS, name)
        if objects.spec(cluster).get("apiEndpoint") != endpoint:
            cluster["spec"] = {**objects.spec(cluster), **spec}
            await host.update(CLUSTERS, cluster)

    await retry_on_conflict(refresh)
