"""Member-cluster access for the gRPC-free estimator: one client and four informers per Cluster.

Karmada runs one ``karmada-scheduler-estimator`` per member cluster and reaches it over gRPC.
We read each member directly instead, the way Karmada's push mode builds a member client
(``pkg/util/membercluster_client.go`` ``BuildClusterConfig``): ``spec.apiEndpoint``, the bearer
token and CA bundle of the Secret ``spec.secretRef`` (keys ``token`` and ``caBundle``),
``spec.insecureSkipTLSVerification`` (then the CA bundle is not used) and ``spec.proxyURL`` /
``spec.proxyHeader``. Per member, shared informers on Nodes, Pods, ReplicaSets and Deployments
keep the caches the estimator answers from (:class:`MemberCluster`), with an incrementally
maintained :class:`~estimator.accurate.NodeUsage`.

:class:`MemberRegistry` follows the Clusters informer: a Cluster added starts a member; a change
of endpoint, secret reference, TLS or proxy settings (or of the Secret's token/CA, checked
periodically) replaces it with a fresh one; a deletion closes it (informers stopped, client
closed). Members are keyed by cluster UID as well as name, so a Cluster re-created under the
same name never inherits the old caches (Karmada #7152).

Failure isolation, from the user-reported bugs: a member that cannot be reached (connection
refused, 401, TLS error, missing Secret) is "unknown" for itself only and never delays the
others; its informers keep retrying with their own backoff. Readiness is judged per need
(Nodes + Pods for max-available, Deployments + ReplicaSets + Pods for unschedulable replicas),
so one resource failing to sync does not take the other estimate down (#6683), and caches are
used only once synced (#4065). A member that was never reachable does not make every caller
wait: after ``sync_timeout`` it counts as failed until it syncs.

Token values are never logged: log lines name the cluster, endpoint and error only, and the
CA bundle lives in a private temporary file for the instant the TLS context loads it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import os
import ssl
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import structlog
from kubernetes_asyncio import client as k8s
from prometheus_client import Gauge

from controller_manager.cache import Indexer, Obj
from controller_manager.client import ApiError, KubeClient, Resource
from controller_manager.informer import Backoff, FuncHandler, SharedInformer
from controller_manager.rbac import PolicyRule, for_resources, informer_rules
from estimator.accurate import NodeUsage
from estimator.unschedulable import DEPLOYMENT_KIND, get_unschedulable_replicas
from kube_api.resources import DEPLOYMENTS, NODES, PODS, REPLICA_SETS, SECRETS

log = structlog.get_logger(__name__)


HOST_RBAC_RULES: list[PolicyRule] = for_resources((SECRETS,), "get")
"""On the Karmada API server: GET of each Cluster's ``spec.secretRef`` Secret (read_credentials), never
a list or watch, so no other Secret is readable in bulk. Cluster-wide, because a Cluster may name a
Secret in any namespace (``karmada-cluster`` by convention). The Clusters informer is the caller's."""

MEMBER_RBAC_RULES: list[PolicyRule] = informer_rules(NODES, PODS, REPLICA_SETS, DEPLOYMENTS)
"""In each member cluster, for the identity of the Cluster's Secret token: the four informers of
``MemberCluster._start_informers``. Karmada's push-mode Cluster tokens already have far more."""

SECRET_TOKEN_KEY = "token"  # clusterv1alpha1.SecretTokenKey
SECRET_CA_KEY = "caBundle"  # clusterv1alpha1.SecretCADataKey
CONTROLLER_INDEX = "controller-uid"
SUPPORTED_PROXY_SCHEMES = ("http", "https")
DEFAULT_SECRET_CHECK_INTERVAL = 60.0

# What each estimate reads: readiness is judged on these only, so a failing resource only takes
# down the estimates that need it.
NEED_CAPACITY = ("nodes", "pods")
NEED_WORKLOADS = ("deployments", "replicasets", "pods")
_RESOURCES: dict[str, Resource] = {"nodes": NODES, "pods": PODS, "replicasets": REPLICA_SETS,
                                   "deployments": DEPLOYMENTS}

MEMBER_REACHABLE = Gauge("estimator_member_reachable",
                         "1 when the member cluster's informers synced and their last list/watch succeeded, else 0.",
                         ["cluster"])


class MemberConfigError(Exception):
    """The Cluster or its Secret does not describe a usable member client.

    ``permanent`` errors come from the Cluster spec itself (no apiEndpoint, no secretRef, a bad
    proxy URL): retrying cannot help until the Cluster changes, which replaces the member anyway.
    The others (Secret missing or incomplete) are retried with backoff.
    """

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


# ---------------------------------------------------------------------------------- client config


@dataclass(frozen=True, slots=True)
class MemberSettings:
    """The Cluster fields a member client depends on; a change of any of them replaces the member."""

    uid: str
    api_endpoint: str
    secret_namespace: str
    secret_name: str
    insecure_skip_tls_verification: bool
    proxy_url: str
    proxy_header: tuple[tuple[str, str], ...]

    @classmethod
    def from_cluster(cls, cluster: Mapping[str, Any]) -> MemberSettings:
        meta = cluster.get("metadata") or {}
        spec = cluster.get("spec") or {}
        ref = spec.get("secretRef") or {}
        headers = spec.get("proxyHeader") or {}
        return cls(uid=str(meta.get("uid") or ""), api_endpoint=str(spec.get("apiEndpoint") or ""),
                   secret_namespace=str(ref.get("namespace") or ""), secret_name=str(ref.get("name") or ""),
                   insecure_skip_tls_verification=bool(spec.get("insecureSkipTLSVerification")),
                   proxy_url=str(spec.get("proxyURL") or ""),
                   proxy_header=tuple(sorted((str(k), str(v)) for k, v in headers.items())))


@dataclass(frozen=True, slots=True)
class MemberCredentials:
    """The decoded Secret values. ``repr`` hides them so they never reach a log line."""

    token: str
    ca_bundle: bytes

    def __repr__(self) -> str:
        return f"MemberCredentials(token=<{len(self.token)} chars>, ca_bundle=<{len(self.ca_bundle)} bytes>)"

    @property
    def digest(self) -> str:
        """A fingerprint of the values (to notice a rotated token or CA without keeping a copy around)."""
        return hashlib.sha256(self.token.encode() + b"\0" + self.ca_bundle).hexdigest()


def _decode(data: Mapping[str, Any], key: str) -> bytes:
    value = data.get(key)
    if not value:
        return b""
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise MemberConfigError(f"secret key {key!r} is not valid base64") from None


def credentials_from_secret(cluster_name: str, secret: Mapping[str, Any]) -> MemberCredentials:
    """``token`` (required, non-empty) and ``caBundle`` from a Secret's ``data`` (base64, as stored)."""
    data = secret.get("data") or {}
    token = _decode(data, SECRET_TOKEN_KEY).decode("utf-8", "replace").strip()
    if not token:
        raise MemberConfigError(f"the secret for cluster {cluster_name} is missing a non-empty value for "
                                f"{SECRET_TOKEN_KEY!r}")
    return MemberCredentials(token=token, ca_bundle=_decode(data, SECRET_CA_KEY))


async def read_credentials(host: KubeClient, cluster_name: str, settings: MemberSettings) -> MemberCredentials:
    """The member's credentials from the host (Karmada) API server's Secret ``spec.secretRef``."""
    if not settings.secret_namespace or not settings.secret_name:
        raise MemberConfigError(f"cluster {cluster_name} does not have a secret", permanent=True)
    try:
        secret = await host.get(SECRETS, settings.secret_name, settings.secret_namespace)
    except ApiError as exc:
        if exc.is_not_found:
            raise MemberConfigError(f"secret {settings.secret_namespace}/{settings.secret_name} of cluster "
                                    f"{cluster_name} not found") from None
        raise
    return credentials_from_secret(cluster_name, secret)


def server_url(api_endpoint: str, *, tls_configured: bool) -> str:
    """client-go's ``DefaultServerURL``: an endpoint without a scheme gets ``https://`` when a CA or
    insecure mode is configured, else ``http://``; a path is kept as a prefix. User info, query and
    fragment are refused, as Karmada's Cluster validation does."""
    endpoint = api_endpoint.strip()
    parsed = urlsplit(endpoint)
    if not parsed.scheme or not parsed.netloc:
        endpoint = ("https://" if tls_configured else "http://") + endpoint
        parsed = urlsplit(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise MemberConfigError(f"invalid apiEndpoint {api_endpoint!r}", permanent=True)
    if parsed.username is not None or parsed.password is not None or parsed.query or parsed.fragment:
        # Karmada's validation forbids them; refusing here also keeps credentials out of logged endpoints
        raise MemberConfigError("apiEndpoint must not carry user info, a query or a fragment", permanent=True)
    return endpoint.rstrip("/")


def member_configuration(cluster_name: str, settings: MemberSettings,
                         credentials: MemberCredentials) -> k8s.Configuration:
    """The kubernetes_asyncio configuration of push mode: bearer token, TLS, proxy (no CA file yet)."""
    if not settings.api_endpoint:
        raise MemberConfigError(f"the api endpoint of cluster {cluster_name} is empty", permanent=True)
    insecure = settings.insecure_skip_tls_verification
    configuration = k8s.Configuration()
    configuration.host = server_url(settings.api_endpoint, tls_configured=insecure or bool(credentials.ca_bundle))
    configuration.api_key = {"BearerToken": credentials.token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    configuration.verify_ssl = not insecure  # insecure: the CA bundle is not used at all, as in Karmada
    if settings.proxy_url:
        proxy = urlsplit(settings.proxy_url)
        if proxy.scheme not in SUPPORTED_PROXY_SCHEMES or not proxy.hostname:
            raise MemberConfigError(f"proxyURL of cluster {cluster_name}: unsupported proxy scheme "
                                    f"{proxy.scheme!r} (supported: {', '.join(SUPPORTED_PROXY_SCHEMES)})",
                                    permanent=True)
        configuration.proxy = settings.proxy_url
        if settings.proxy_header:
            configuration.proxy_headers = dict(settings.proxy_header)
    return configuration


def new_member_client(cluster_name: str, settings: MemberSettings, credentials: MemberCredentials, *,
                      timeout: float, qps: float = 40.0, burst: int = 60) -> KubeClient:
    """A :class:`KubeClient` for the member. Call from the event loop (it opens an aiohttp session).

    kubernetes_asyncio only takes a CA as a file: the bundle goes to a private (0600) temporary file
    that is removed as soon as the TLS context has loaded it. Only that CA is trusted (Go's
    ``RootCAs``); without one, the system roots are.
    """
    configuration = member_configuration(cluster_name, settings, credentials)
    ca_path = ""
    if credentials.ca_bundle and not settings.insecure_skip_tls_verification:
        fd, ca_path = tempfile.mkstemp(prefix="member-ca-", suffix=".pem")
        with os.fdopen(fd, "wb") as handle:
            handle.write(credentials.ca_bundle)
        configuration.ssl_ca_cert = ca_path
    try:
        api_client = k8s.ApiClient(configuration)
    except (ssl.SSLError, ValueError) as exc:
        raise MemberConfigError(f"the caBundle of cluster {cluster_name} cannot be loaded: {exc}") from None
    finally:
        if ca_path:
            with contextlib.suppress(OSError):
                os.unlink(ca_path)
    return KubeClient(api_client, qps=qps, burst=burst, timeout=timeout)


# ---------------------------------------------------------------------------------- one member


def _controller_uid(obj: Obj) -> list[str]:
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("controller") and reference.get("uid"):
            return [str(reference["uid"])]
    return []


_EMPTY = Indexer()


class MemberCluster:
    """One member cluster's client, informers and caches; replaced as a whole when its Cluster changes."""

    def __init__(self, name: str, settings: MemberSettings, host: KubeClient, *, sync_timeout: float,
                 client_timeout: float) -> None:
        self.name = name
        self.settings = settings
        self.usage = NodeUsage()
        self.client: KubeClient | None = None
        self.credentials_digest = ""
        self.error = ""  # why no client could be built (the informers keep their own last_error)
        self.error_permanent = False
        self.closed = False
        self.informers: dict[str, SharedInformer] = {}
        self._host = host
        self._sync_timeout = sync_timeout
        self._client_timeout = client_timeout
        self._created = time.monotonic()
        self._started = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._informer_tasks: list[asyncio.Task[None]] = []

    def __repr__(self) -> str:
        return f"MemberCluster(name={self.name!r}, uid={self.uid!r}, endpoint={self.endpoint!r})"

    @property
    def uid(self) -> str:
        return self.settings.uid

    @property
    def endpoint(self) -> str:
        return self.settings.api_endpoint

    # ---- caches ----------------------------------------------------------------------------------

    def _store(self, key: str) -> Indexer:
        informer = self.informers.get(key)
        return informer.store if informer is not None else _EMPTY

    @property
    def nodes(self) -> Indexer:
        return self._store("nodes")

    @property
    def pods(self) -> Indexer:
        return self._store("pods")

    @property
    def replica_sets(self) -> Indexer:
        return self._store("replicasets")

    @property
    def deployments(self) -> Indexer:
        return self._store("deployments")

    # ---- state -----------------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        """All four informers have listed once (their caches may be stale if a watch failed since)."""
        return len(self.informers) == len(_RESOURCES) and all(i.has_synced() for i in self.informers.values())

    @property
    def reachable(self) -> bool:
        """Synced, and the last list/watch of every informer succeeded (what the gauge reports)."""
        return (not self.closed and not self.error and self.synced
                and not any(i.last_error for i in self.informers.values()))

    @property
    def running(self) -> bool:
        """Some of its tasks (client set-up or informers) are still alive."""
        tasks = [*self._informer_tasks, *([self._task] if self._task else [])]
        return any(not task.done() for task in tasks)

    def errors(self) -> dict[str, str]:
        """Why the member (or each of its resources) is not usable right now; empty when reachable."""
        if self.error:
            return {"client": self.error}
        return {key: informer.last_error for key, informer in self.informers.items() if informer.last_error}

    def state(self, need: Iterable[str] = tuple(_RESOURCES)) -> str:
        """``ready``, ``failed`` (answer "unknown" now) or ``pending`` (still starting: worth a wait).

        A member still unsynced ``sync_timeout`` after its start counts as failed, so that a
        member that never answers costs callers nothing once it is known to be silent.
        """
        if self.closed or self.error:
            return "failed"
        if not self._started.is_set():
            return "failed" if self._overdue() else "pending"
        informers = [self.informers[key] for key in need]
        if any(informer.last_error for informer in informers):
            return "failed"
        if all(informer.has_synced() for informer in informers):
            return "ready"
        return "failed" if self._overdue() else "pending"

    def _overdue(self) -> bool:
        return time.monotonic() - self._created > self._sync_timeout

    async def wait_ready(self, need: Iterable[str], timeout: float, *, poll: float = 0.05) -> bool:
        """Wait up to ``timeout`` for the needed caches to sync; False at once when the member fails.

        Syncs are awaited as events; errors are noticed by a short poll since informers report
        them only as state.
        """
        need = tuple(need)
        deadline = time.monotonic() + timeout
        while True:
            state = self.state(need)
            if state != "pending":
                return state == "ready"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            waits: list[asyncio.Future[Any]]
            if not self._started.is_set():
                waits = [asyncio.ensure_future(self._started.wait())]
            else:
                waits = [asyncio.ensure_future(self.informers[key].wait_for_sync()) for key in need]
            try:
                await asyncio.wait(waits, timeout=min(poll, remaining))
            finally:
                for wait in waits:
                    wait.cancel()

    # ---- estimates (synchronous: callers check readiness first) ----------------------------------

    def max_available_replicas(self, requirements: Mapping[str, Any] | None) -> int:
        """The accurate estimator over this member's Nodes and Pods."""
        return self.usage.max_available_replicas(requirements)

    def unschedulable_replicas(self, namespace: str, name: str, threshold: timedelta,
                               now: datetime | None = None) -> int:
        """Unschedulable pods of Deployment ``namespace/name`` (newest ReplicaSet only), from the caches.

        ReplicaSets and Pods are looked up by their controller's UID (an index), so the cost does not
        grow with the namespace; ``get_unschedulable_replicas`` applies Karmada's selector and owner
        checks on top. LookupError when the Deployment is not in this member.
        """
        deployment = self.deployments.get(f"{namespace}/{name}" if namespace else name)
        if deployment is None:
            raise LookupError(f"deployments.apps {name!r} not found in namespace {namespace!r} of cluster {self.name}")
        if deployment.get("kind") != DEPLOYMENT_KIND:  # LIST items carry no kind
            deployment = {**deployment, "kind": DEPLOYMENT_KIND}
        uid = str((deployment.get("metadata") or {}).get("uid") or "")
        replica_sets = self.replica_sets.by_index(CONTROLLER_INDEX, uid) if uid else []
        pods: list[Obj] = []
        for rs in replica_sets:
            rs_uid = (rs.get("metadata") or {}).get("uid")
            if rs_uid:
                pods.extend(self.pods.by_index(CONTROLLER_INDEX, str(rs_uid)))
        return get_unschedulable_replicas(deployment, replica_sets, pods, threshold, now)

    # ---- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Build the client (reading the Secret, retried with backoff) and start the informers, in the background."""
        if self._task is None and not self.closed:
            self._task = asyncio.create_task(self._run(), name=f"member {self.name}")

    async def _run(self) -> None:
        backoff = Backoff()
        while True:
            try:
                credentials = await read_credentials(self._host, self.name, self.settings)
                self.client = new_member_client(self.name, self.settings, credentials, timeout=self._client_timeout)
                self.credentials_digest = credentials.digest
                break
            except MemberConfigError as exc:
                self._set_error(str(exc), permanent=exc.permanent)
                if exc.permanent:
                    return  # only a change of the Cluster can fix it; that replaces this member
            except ApiError as exc:
                self._set_error(f"reading the secret of cluster {self.name}: {exc.status} {exc.reason}: {exc.message}")
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                self._set_error(f"reading the secret of cluster {self.name}: {type(exc).__name__}: {exc}")
            await asyncio.sleep(backoff.next())
        self.error = ""
        self._start_informers(self.client)
        log.info("member cluster client started", cluster=self.name, uid=self.uid, endpoint=self.client.host)
        informers = list(self.informers.values())
        waits = [asyncio.ensure_future(i.wait_for_sync()) for i in informers]
        try:
            await asyncio.wait(waits, timeout=self._sync_timeout)
        finally:
            for wait in waits:
                wait.cancel()
        if not self.synced:
            reasons = "; ".join(f"{i.name}: {i.last_error or 'no answer yet'}" for i in informers if not i.has_synced())
            log.warning("member cluster caches not synced yet; its estimates are unknown until they are",
                        cluster=self.name, timeout=self._sync_timeout, reasons=reasons)

    def _set_error(self, text: str, *, permanent: bool = False) -> None:
        if text != self.error:
            log.warning("member cluster client unavailable", cluster=self.name, error=text)
        self.error = text
        self.error_permanent = permanent

    def _start_informers(self, client: KubeClient) -> None:
        usage = self.usage
        nodes = SharedInformer(client, NODES)
        nodes.add_event_handler(FuncHandler(add=lambda obj, _initial: usage.add_node(obj),
                                            update=lambda _old, new: usage.update_node(new),
                                            delete=usage.remove_node))
        pods = SharedInformer(client, PODS, indexers={CONTROLLER_INDEX: _controller_uid})
        pods.add_event_handler(FuncHandler(add=lambda obj, _initial: usage.add_pod(obj),
                                           update=usage.update_pod, delete=usage.remove_pod))
        replica_sets = SharedInformer(client, REPLICA_SETS, indexers={CONTROLLER_INDEX: _controller_uid})
        deployments = SharedInformer(client, DEPLOYMENTS)
        self.informers = {"nodes": nodes, "pods": pods, "replicasets": replica_sets, "deployments": deployments}
        self._informer_tasks = [asyncio.create_task(informer.run(), name=f"member {self.name} {informer.name}")
                                for informer in self.informers.values()]
        self._started.set()

    async def close(self) -> None:
        """Stop the informers and close the client; the member answers "unknown" from now on."""
        if self.closed:
            return
        self.closed = True
        tasks = [*self._informer_tasks, *([self._task] if self._task else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        log.info("member cluster client closed", cluster=self.name, uid=self.uid)


# ---------------------------------------------------------------------------------- the registry


class MemberRegistry:
    """Member clusters kept in step with the Clusters informer; owned by one ``await run()`` task.

    The informer handler only marks names dirty (handlers must not block); ``run`` reconciles them:
    start, replace (new UID, endpoint, secret reference, TLS or proxy settings, rotated Secret
    values) or close members. Cancelling ``run`` closes every member.
    """

    def __init__(self, host: KubeClient, clusters: SharedInformer, *, sync_timeout: float = 10.0,
                 client_timeout: float = 5.0, secret_check_interval: float = DEFAULT_SECRET_CHECK_INTERVAL) -> None:
        self.host = host
        self.clusters = clusters
        self.sync_timeout = sync_timeout
        self.client_timeout = client_timeout
        self.secret_check_interval = secret_check_interval
        self._members: dict[str, MemberCluster] = {}
        self._by_uid: dict[str, MemberCluster] = {}
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()
        self._changed: list[Callable[[str], None]] = []
        clusters.add_event_handler(FuncHandler(add=lambda obj, _initial: self._mark(obj),
                                               update=lambda _old, new: self._mark(new), delete=self._mark))

    # ---- lookups ---------------------------------------------------------------------------------

    def get(self, name: str) -> MemberCluster | None:
        """The current member for a cluster name (None when unknown or deleted)."""
        return self._members.get(name)

    def get_by_uid(self, uid: str) -> MemberCluster | None:
        return self._by_uid.get(uid)

    def members(self) -> list[MemberCluster]:
        return list(self._members.values())

    def names(self) -> list[str]:
        return sorted(self._members)

    def on_change(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(cluster_name)`` after a member was started, replaced or closed."""
        self._changed.append(callback)

    # ---- reconciliation --------------------------------------------------------------------------

    def _mark(self, cluster: Obj) -> None:
        name = (cluster.get("metadata") or {}).get("name")
        if name:
            self._dirty.add(str(name))
            self._wake.set()

    async def run(self) -> None:
        """Reconcile members as Clusters change, and re-check member Secrets periodically, until cancelled."""
        next_secret_check = time.monotonic() + self.secret_check_interval
        try:
            while True:
                delay = max(next_secret_check - time.monotonic(), 0.0)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=delay)
                self._wake.clear()
                dirty, self._dirty = self._dirty, set()
                for name in sorted(dirty):
                    await self._reconcile(name)
                if time.monotonic() >= next_secret_check:
                    await self._check_credentials()
                    next_secret_check = time.monotonic() + self.secret_check_interval
        finally:
            await self._close_all()

    async def _reconcile(self, name: str, *, force: bool = False) -> None:
        cluster = self.clusters.store.get(name)
        current = self._members.get(name)
        if cluster is None:
            if current is not None:
                self._forget(current)
                with contextlib.suppress(KeyError):
                    MEMBER_REACHABLE.remove(name)
                await current.close()
                self._notify(name)
            return
        settings = MemberSettings.from_cluster(cluster)
        if current is not None and current.settings == settings and not force:
            return
        member = MemberCluster(name, settings, self.host, sync_timeout=self.sync_timeout,
                               client_timeout=self.client_timeout)
        if current is not None:
            self._forget(current)
            log.info("member cluster changed, replacing its client and caches", cluster=name,
                     old_uid=current.uid, uid=member.uid, endpoint=settings.api_endpoint)
        self._members[name] = member
        if member.uid:
            self._by_uid[member.uid] = member
        MEMBER_REACHABLE.labels(name).set_function(lambda: 1.0 if member.reachable else 0.0)
        member.start()
        if current is not None:
            await current.close()
        self._notify(name)

    def _forget(self, member: MemberCluster) -> None:
        if self._members.get(member.name) is member:
            del self._members[member.name]
        if self._by_uid.get(member.uid) is member:
            del self._by_uid[member.uid]

    def _notify(self, name: str) -> None:
        for callback in self._changed:
            try:
                callback(name)
            except Exception:
                log.exception("member change callback failed", cluster=name)

    async def _check_credentials(self) -> None:
        """Replace members whose Secret now holds a different token or CA (rotation)."""
        async def changed(member: MemberCluster) -> bool:
            if not member.credentials_digest:
                return False  # still retrying on its own
            try:
                credentials = await read_credentials(self.host, member.name, member.settings)
            except (MemberConfigError, ApiError, aiohttp.ClientError, TimeoutError, OSError):
                return False  # keep the working client; Karmada too keeps its connection
            return credentials.digest != member.credentials_digest

        members = self.members()
        results = await asyncio.gather(*(changed(m) for m in members), return_exceptions=True)
        for member, result in zip(members, results, strict=True):
            if result is True and self._members.get(member.name) is member:
                log.info("member cluster secret changed, replacing its client", cluster=member.name)
                await self._reconcile(member.name, force=True)

    async def _close_all(self) -> None:
        members = list(self._members.values())
        self._members.clear()
        self._by_uid.clear()
        for member in members:
            with contextlib.suppress(KeyError):
                MEMBER_REACHABLE.remove(member.name)
        await asyncio.gather(*(m.close() for m in members), return_exceptions=True)


__all__ = [
    "MEMBER_REACHABLE",
    "NEED_CAPACITY",
    "NEED_WORKLOADS",
    "MemberCluster",
    "MemberConfigError",
    "MemberCredentials",
    "MemberRegistry",
    "MemberSettings",
    "credentials_from_secret",
    "member_configuration",
    "new_member_client",
    "read_credentials",
    "server_url",
]
