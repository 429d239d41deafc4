"""One member cluster: its client, the informers on what the estimator reads, and their readiness.

Per member, shared informers on Nodes, Pods, ReplicaSets, Deployments and StatefulSets (plus one
per operator-declared workload kind, :mod:`estimator.podselectors`) keep the caches the
estimator answers from (:class:`MemberCluster` satisfies :class:`estimator.caches.MemberView`), with
an incrementally maintained :class:`~estimator.accurate.NodeUsage`; the dev plane's Karmada
simulation shares the member's client and, through :meth:`MemberCluster.informer`, its informers.
A ``slim`` member (the controller-manager's and the descheduler's, which only count unschedulable
replicas) caches each object as :mod:`estimator.slim` cuts it down and keeps no ``NodeUsage``.
Karmada's counterpart is a ``pkg/util/fedinformer`` informer manager per member cluster (Karmada
commit f8fdd02).

Failure isolation, from the user-reported bugs: a member that cannot be reached (connection
refused, 401, TLS error, missing Secret) is "unknown" for itself only and never delays the
others; its informers keep retrying with their own backoff. Readiness is judged per need
(Nodes + Pods for max-available, the workload kind's caches for unschedulable replicas),
so one resource failing to sync does not take the other estimate down (#6683), and caches are
used only once synced (#4065). A member that was never reachable does not make every caller
wait: after ``sync_timeout`` it counts as failed until it syncs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Sequence
from typing import Any

import aiohttp
import structlog

from clusteraccess.client import new_member_client
from clusteraccess.config import MemberConfigError, MemberSettings, read_credentials
from controller_manager.apierrors import ApiError
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.informer import Backoff, FuncHandler, SharedInformer, Transform, strip_managed_fields
from controller_manager.rbac import PolicyRule, informer_rules
from controller_manager.resource import Resource
from estimator.accurate import NodeUsage
from estimator.caches import CONTROLLER_INDEX
from estimator.slim import transform_for
from kube_api.ownerrefs import controller_uid_index
from kube_api.resources import DEPLOYMENTS, NODES, PODS, REPLICA_SETS, STATEFUL_SETS

log = structlog.get_logger(__name__)

_RESOURCES: dict[str, Resource] = {"nodes": NODES, "pods": PODS, "replicasets": REPLICA_SETS,
                                   "deployments": DEPLOYMENTS, "statefulsets": STATEFUL_SETS}

_CORE = ("nodes", "pods", "replicasets", "deployments")
"""What makes a member synced and reachable (the gauge). The informers of further workload kinds
(StatefulSets, declared kinds) only decide the estimates of their kind, so a member token without
``statefulsets`` (granted before they were read) or a member without a declared kind's CRD leaves
the member and its Deployments' estimates as they were."""

MEMBER_RBAC_RULES: list[PolicyRule] = informer_rules(*_RESOURCES.values())
"""In each member cluster, for the identity of the Cluster's Secret token: the five informers of
``MemberCluster._start_informers``. Karmada's push-mode Cluster tokens already have far more. The
informers on operator-declared kinds need list/watch on those too, which the operator grants
(the kinds are only known at run time, from the file)."""

_EMPTY = Indexer()


class MemberCluster:
    """One member cluster's client, informers and caches; replaced as a whole when its Cluster changes."""

    def __init__(self, name: str, settings: MemberSettings, host: KubeClient, *, sync_timeout: float,
                 client_timeout: float, workloads: Sequence[Resource] = (), slim: bool = False) -> None:
        self.name = name
        self.workloads = tuple(workloads)  # declared kinds, cached under their ``plural.group``
        self.slim = slim
        """Cache only what the unschedulable-replica estimates read (:mod:`estimator.slim`); no :attr:`usage`."""
        self.settings = settings
        self.uid = settings.uid
        self.endpoint = settings.api_endpoint
        self._usage = None if slim else NodeUsage()
        self.client: KubeClient | None = None
        self.credentials_digest = ""
        self.error = ""  # why no client could be built (the informers keep their own last_error)
        self.error_permanent = False
        self.closed = False
        self._informers: dict[str, SharedInformer] = {}
        self._host = host
        self._sync_timeout = sync_timeout
        self._client_timeout = client_timeout
        self._created = time.monotonic()
        self._started = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._informer_tasks: list[asyncio.Task[None]] = []

    def __repr__(self) -> str:
        return f"MemberCluster(name={self.name!r}, uid={self.uid!r}, endpoint={self.endpoint!r})"

    # ---- caches ----------------------------------------------------------------------------------

    @property
    def usage(self) -> NodeUsage:
        """The accurate estimator's snapshot of the member's Nodes and Pods; a slim member has none (its Pods
        carry no requests): asking raises, and the estimator client leaves the member unknown."""
        if self._usage is None:
            raise LookupError(f"cluster {self.name}: the member caches are slim (unschedulable replicas only), "
                              "they cannot estimate available replicas")
        return self._usage

    def cache(self, resource: str) -> Indexer:
        """The cache of ``resource`` (``nodes``, ``pods``, ``replicasets``, ``deployments``, ``statefulsets``,
        a declared kind's ``plural.group``); empty until the informers start. Check :meth:`state` or
        :meth:`has_synced` before trusting it."""
        informer = self._informers.get(resource)
        return informer.store if informer is not None else _EMPTY

    def informer(self, resource: Resource) -> SharedInformer | None:
        """The member's own informer on ``resource`` once started (None before, or for another resource),
        for a caller that would rather share it than list and watch the resource a second time."""
        return next((i for i in self._informers.values() if i.resource == resource), None)

    # ---- state -----------------------------------------------------------------------------------

    def has_synced(self, need: Iterable[str]) -> bool:
        """The ``need`` caches have listed once (they may be stale if a watch failed since)."""
        return all(key in self._informers and self._informers[key].has_synced() for key in need)

    @property
    def synced(self) -> bool:
        """The core informers (:data:`_CORE`) have listed once (their caches may be stale if a watch failed since)."""
        return self.has_synced(_CORE)

    @property
    def reachable(self) -> bool:
        """Synced, and the last list/watch of every core informer succeeded (what the gauge reports).

        A StatefulSet or declared kind's informer failing (its CRD not installed in this member, say)
        only makes that kind unknown there, as :meth:`state` judges it; :meth:`errors` names it.
        """
        return (not self.closed and not self.error and self.synced
                and not any(self._informers[key].last_error for key in _CORE if key in self._informers))

    @property
    def running(self) -> bool:
        """Some of its tasks (client set-up or informers) are still alive."""
        tasks = [*self._informer_tasks, *([self._task] if self._task else [])]
        return any(not task.done() for task in tasks)

    def errors(self) -> dict[str, str]:
        """Why the member (or each of its resources) is not usable right now; empty when reachable."""
        if self.error:
            return {"client": self.error}
        return {key: informer.last_error for key, informer in self._informers.items() if informer.last_error}

    def state(self, need: Iterable[str] = tuple(_RESOURCES)) -> str:
        """``ready``, ``failed`` (answer "unknown" now) or ``pending`` (still starting: worth a wait).

        A member still unsynced ``sync_timeout`` after its start counts as failed, so that a
        member that never answers costs callers nothing once it is known to be silent.
        """
        progress = self._progress(need)
        if progress == "listing":
            return "failed" if self._overdue() else "pending"
        return progress

    def starting(self, need: Iterable[str] = tuple(_RESOURCES)) -> bool:
        """The ``need`` caches are still on their first list and nothing has failed yet: an answer is coming.

        Unlike :meth:`state`, not limited by ``sync_timeout``: the first list of a large member can take minutes,
        page by page, each page within the client timeout. A retry bound (preserve mode's) does not run out on
        such a member; one that fails (an error, a page timing out) stops being "starting" at once.
        """
        if self._progress(need) != "listing":
            return False
        # before its informers start, its client is being built (a failure sets the error), unless that task died
        return self._started.is_set() or (self._task is not None and not self._task.done())

    def _progress(self, need: Iterable[str]) -> str:
        """``ready``, ``failed`` or ``listing`` (client or first lists under way, nothing failed) for ``need``."""
        if self.closed or self.error:
            return "failed"
        if not self._started.is_set():
            return "listing"
        need = tuple(need)
        if any(key not in self._informers for key in need):
            return "failed"  # a kind this member was not started with: never answerable
        informers = [self._informers[key] for key in need]
        if any(informer.last_error for informer in informers):
            return "failed"
        return "ready" if all(informer.has_synced() for informer in informers) else "listing"

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
                waits = [asyncio.ensure_future(self._informers[key].wait_for_sync()) for key in need]
            try:
                await asyncio.wait(waits, timeout=min(poll, remaining))
            finally:
                for wait in waits:
                    wait.cancel()

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
        informers = list(self._informers.values())
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
        def informer(resource: Resource, **options: Any) -> SharedInformer:
            transform: Transform = transform_for(resource) if self.slim else strip_managed_fields
            return SharedInformer(client, resource, transform=transform, **options)

        nodes = informer(NODES)
        pods = informer(PODS, indexers={CONTROLLER_INDEX: controller_uid_index})
        if (usage := self._usage) is not None:
            nodes.add_event_handler(FuncHandler(add=lambda obj, _initial: usage.add_node(obj),
                                                update=lambda _old, new: usage.update_node(new),
                                                delete=usage.remove_node))
            pods.add_event_handler(FuncHandler(add=lambda obj, _initial: usage.add_pod(obj),
                                               update=usage.update_pod, delete=usage.remove_pod))
        replica_sets = informer(REPLICA_SETS, indexers={CONTROLLER_INDEX: controller_uid_index})
        self._informers = {"nodes": nodes, "pods": pods, "replicasets": replica_sets,
                           "deployments": informer(DEPLOYMENTS), "statefulsets": informer(STATEFUL_SETS)}
        for workload in self.workloads:
            self._informers.setdefault(workload.key, informer(workload))
        self._informer_tasks = [asyncio.create_task(informer.run(), name=f"member {self.name} {informer.name}")
                                for informer in self._informers.values()]
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


__all__ = ["MEMBER_RBAC_RULES", "MemberCluster"]
