"""The registry of member clusters: one :class:`~clusteraccess.cluster.MemberCluster` per Cluster.

:class:`MemberRegistry` follows the Clusters informer: a Cluster added starts a member; a change
of endpoint, secret reference, TLS or proxy settings (or of the Secret's token/CA, checked
periodically) replaces it with a fresh one; a deletion closes it (informers stopped, client
closed). Members are keyed by cluster UID as well as name, so a Cluster re-created under the
same name never inherits the old caches (Karmada #7152). It satisfies
:class:`estimator.client.Members`, and the dev plane's simulated Karmada controllers reach their
members through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence

import aiohttp
import structlog
from prometheus_client import Gauge

from clusteraccess.cluster import MemberCluster
from clusteraccess.config import MemberConfigError, MemberSettings, read_credentials
from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.informer import FuncHandler, SharedInformer
from controller_manager.objects import Obj
from controller_manager.resource import Resource

log = structlog.get_logger(__name__)

DEFAULT_SECRET_CHECK_INTERVAL = 60.0

MEMBER_REACHABLE = Gauge("estimator_member_reachable",
                         "1 when the member cluster's informers synced and their last list/watch succeeded, else 0.",
                         ["cluster"])


class MemberRegistry:
    """Member clusters kept in step with the Clusters informer; owned by one ``await run()`` task.

    The informer handler only marks names dirty (handlers must not block); ``run`` reconciles them:
    start, replace (new UID, endpoint, secret reference, TLS or proxy settings, rotated Secret
    values) or close members. Cancelling ``run`` closes every member.
    """

    def __init__(self, host: KubeClient, clusters: SharedInformer, *, sync_timeout: float = 10.0,
                 client_timeout: float = 5.0, secret_check_interval: float = DEFAULT_SECRET_CHECK_INTERVAL,
                 workloads: Sequence[Resource] = (), slim: bool = False) -> None:
        self.host = host
        self.workloads = tuple(workloads)  # operator-declared kinds every member caches too
        self.slim = slim  # members caching only what unschedulable-replica estimates read (MemberCluster.slim)
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
        name = objects.name(cluster)
        if name:
            self._dirty.add(name)
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
                               client_timeout=self.client_timeout, workloads=self.workloads, slim=self.slim)
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


__all__ = ["MEMBER_REACHABLE", "MemberRegistry"]
