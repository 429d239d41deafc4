"""The NoExecute taint manager (Karmada's ``pkg/controllers/cluster/taint_manager.go``).

Three controllers on our framework, as Karmada has one controller and two eviction workers:

* ``taint-manager`` reconciles Clusters. For a cluster with NoExecute taints it looks up every
  ResourceBinding and ClusterResourceBinding scheduled to it (an index on ``spec.clusters``),
  decides per binding whether to queue it for eviction now, later (when its toleration runs
  out) or never (tolerated forever), and looks again every 10 s while the taints stay.
* ``binding-eviction`` and ``cluster-binding-eviction`` (3 workers each) take keys
  (binding + cluster), re-read the binding, and if the cluster's NoExecute taints are no longer
  tolerated, move the cluster from ``spec.clusters`` into a ``TaintUntolerated`` graceful
  eviction task with an UPDATE (optimistic lock, retried on conflict). Each worker paces
  itself after every item by the ``--resource-eviction-rate`` limiter combined with the normal
  controller limiter (Karmada's ``evictionWorker``): 0.5/s means a 2 s pause; 0 means 1800 s.

The rules are pure functions (:func:`need_eviction_with_current_time`, :func:`enqueue_delay`,
:func:`get_purge_mode`, :func:`decide_binding_eviction`) so that unit tests check them directly.
Karmada's health-based downgrade of the eviction rate (secondary rate, unhealthy-cluster
threshold) is not simulated: the rate is the flag's.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import WARNING, EventRecorder
from controller_manager.manager import Manager
from controller_manager.objects import MutableObj, Obj
from controller_manager.ratelimiter import MaxOfRateLimiter, RateLimiterOptions, default_controller_rate_limiter
from controller_manager.reconcile import Request, Result
from controller_manager.resource import Resource
from karmada_api.bindings import PURGE_MODE_DIRECTLY, PURGE_MODE_GRACEFULLY, binding_cluster_names
from karmada_api.placement import PlacementError, get_applied_placement, target_contains
from karmada_api.resources import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, RESOURCE_BINDINGS
from karmada_api.shapes import binding_spec, cluster_spec
from karmada_api.taints import (
    EVICTION_PRODUCER_TAINT_MANAGER,
    EVICTION_REASON_TAINT_UNTOLERATED,
    get_min_toleration_time,
    graceful_evict_cluster,
    no_execute_taints,
)
from kube_api.shapes import Taint
from kube_api.tolerations import get_matching_tolerations

from .events import record_eviction_event

log = structlog.get_logger(__name__)

TAINT_MANAGER_NAME = "taint-manager"
RB_EVICTION_NAME = "binding-eviction"
CRB_EVICTION_NAME = "cluster-binding-eviction"
EVICTION_WORKERS = 3
CLUSTER_WORKERS = 5  # --concurrent-cluster-syncs: Karmada sets concurrency per watched kind
CLUSTER_TAINT_EVICTION_RETRY_FREQUENCY = 10.0
MAX_EVICTION_DELAY = 1800.0
"""The pause after each eviction item when ``--resource-eviction-rate`` is 0."""

RB_INDEX_BY_CLUSTER = "ResourceBindingIndexByFieldCluster"
CRB_INDEX_BY_CLUSTER = "ClusterResourceBindingIndexByFieldCluster"

EVICT_WORKLOAD_FROM_CLUSTER_FAILED = "EvictWorkloadFromClusterFailed"

_PACE_SLICE = 0.1  # how often a pacing pause checks for shutdown


# ----------------------------------------------------------------------------- pure rules


def need_eviction_with_current_time(cluster: Obj | None, annotations: Mapping[str, str] | None, now: datetime, *,
                                    enabled: bool = True) -> tuple[bool, float]:
    """``needEvictionWithCurrentTime``: (evict now?, seconds to wait; -1 = tolerated forever).

    The placement is checked first: missing, empty or invalid → :class:`PlacementError`.
    Then: cluster gone, eviction disabled or no NoExecute taint → (False, -1); a taint not
    tolerated → (True, 0); else the earliest toleration expiry: reached → (True, 0), else (False, t).
    """
    placement = get_applied_placement(annotations)  # PlacementError when malformed
    if placement is None:
        raise PlacementError("the applied placement for ResourceBining can not be empty")
    if cluster is None:
        return False, -1.0
    taints = no_execute_taints(cluster_spec(cluster).get("taints"))
    if not enabled or not taints:
        return False, -1.0
    all_tolerated, used = get_matching_tolerations(taints, placement.get("clusterTolerations") or [])
    if not all_tolerated:
        return True, 0.0
    wait = get_min_toleration_time(taints, used, now)
    if wait == 0:
        return True, 0.0
    return False, wait


def enqueue_delay(taints: Sequence[Taint] | None, annotations: Mapping[str, str] | None,
                  now: datetime) -> float | None:
    """``enqueueBinding``'s decision for a binding on a tainted cluster: None skip, 0 now, > 0 after that long.

    ``taints`` are the cluster's NoExecute taints. A missing or invalid placement is queued at
    once (fail-safe: the eviction worker reports the error).
    """
    if not taints:
        return None
    try:
        placement = get_applied_placement(annotations)
    except PlacementError:
        return 0.0
    if placement is None:
        return 0.0
    all_tolerated, used = get_matching_tolerations(taints, placement.get("clusterTolerations") or [])
    if not all_tolerated:
        return 0.0
    wait = get_min_toleration_time(taints, used, now)
    if wait < 0:
        return None
    return wait


def get_purge_mode(failover: Obj | None, global_mode: str) -> str:
    """``getPurgeMode``: the binding's ``failover.cluster.purgeMode`` (empty → Gracefully), else the flag."""
    if failover is not None and failover.get("cluster") is not None:
        return str((failover.get("cluster") or {}).get("purgeMode") or PURGE_MODE_GRACEFULLY)
    return PURGE_MODE_DIRECTLY if global_mode == PURGE_MODE_DIRECTLY else PURGE_MODE_GRACEFULLY


@dataclass(frozen=True)
class EvictionDecision:
    """What the eviction worker does with one (binding, cluster): write ``binding``, or look again after ``wait``."""

    binding: dict[str, Any] | None = None
    wait: float = 0.0


def decide_binding_eviction(binding: Obj | None, cluster_name: str, cluster: Obj | None, *, now: datetime,
                            enabled: bool = True, purge_mode: str = PURGE_MODE_GRACEFULLY) -> EvictionDecision:
    """``syncBindingEviction`` without the I/O: the evicted binding to UPDATE, a wait, or nothing.

    Nothing when the binding is gone, being deleted or not scheduled to the cluster. Raises
    :class:`PlacementError` as :func:`need_eviction_with_current_time` does.
    """
    if binding is None:
        return EvictionDecision()
    spec = binding_spec(binding)
    if objects.is_deleting(binding) or not target_contains(spec, cluster_name):
        return EvictionDecision()
    need, wait = need_eviction_with_current_time(cluster, objects.annotations(binding), now, enabled=enabled)
    if not need:
        return EvictionDecision(wait=wait if wait > 0 else 0.0)
    evicted = objects.deep_copy(binding)
    graceful_evict_cluster(evicted.setdefault("spec", {}), cluster_name,
                           purge_mode=get_purge_mode(spec.get("failover"), purge_mode),
                           producer=EVICTION_PRODUCER_TAINT_MANAGER, reason=EVICTION_REASON_TAINT_UNTOLERATED)
    return EvictionDecision(binding=evicted)


def bindings_by_cluster(binding: Obj) -> list[str]:
    """Index function: the clusters a binding is scheduled to."""
    return binding_cluster_names(binding_spec(binding))


# ----------------------------------------------------------------------------- queue keys and pacing


@dataclass(frozen=True, slots=True, order=True)
class EvictionKey(Request):
    """Karmada's ``FederatedKey``: a binding (namespace "" for a CRB) and the cluster to evict it from."""

    cluster: str

    def __str__(self) -> str:
        binding = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"cluster={self.cluster}, binding={binding}"


class EvictionRateLimiter:
    """Karmada's ``DynamicRateLimiter`` at its healthy rate: ``1/rate`` seconds per item, 1800 s when 0."""

    def __init__(self, rate: float) -> None:
        if rate < 0:
            raise ValueError(f"resource eviction rate must be >= 0, got {rate}")
        self.rate = rate

    def when(self, item: object) -> float:
        return MAX_EVICTION_DELAY if self.rate == 0 else 1.0 / self.rate

    def forget(self, item: object) -> None:
        return None

    def num_requeues(self, item: object) -> int:
        return 0


def eviction_rate_limiter(rate: float, options: RateLimiterOptions | None = None) -> MaxOfRateLimiter[Request]:
    """``NewGracefulEvictionRateLimiter``: max of the eviction rate and the normal controller limiter."""
    return MaxOfRateLimiter(EvictionRateLimiter(rate), default_controller_rate_limiter(options or RateLimiterOptions()))


_PACER_KEY = Request("", "\x00pacer")  # the sentinel key the pacer is asked about, never a real binding


# ----------------------------------------------------------------------------- reconcilers


class ClusterTaintReconciler:
    """``taint-manager``: queue the bindings on a NoExecute-tainted cluster, and look again every 10 s."""

    def __init__(self, clusters: Indexer, rb_store: Indexer, crb_store: Indexer, rb_worker: Controller,
                 crb_worker: Controller, *, enabled: bool) -> None:
        self.clusters = clusters
        self.targets = ((rb_store, RB_INDEX_BY_CLUSTER, rb_worker), (crb_store, CRB_INDEX_BY_CLUSTER, crb_worker))
        self.enabled = enabled

    async def reconcile(self, request: Request) -> Result:
        cluster = self.clusters.get(request.name)
        if cluster is None:
            return Result()
        taints = no_execute_taints(cluster_spec(cluster).get("taints"))
        if not self.enabled or not taints:
            return Result()
        now = datetime.now(UTC)
        for store, index, worker in self.targets:
            for binding in store.by_index(index, request.name):
                delay = enqueue_delay(taints, objects.annotations(binding), now)
                if delay is None:
                    continue
                key = EvictionKey(objects.namespace(binding), objects.name(binding), request.name)
                if delay > 0:
                    worker.queue.add_after(key, delay)
                else:
                    worker.enqueue(key)
        return Result(requeue_after=CLUSTER_TAINT_EVICTION_RETRY_FREQUENCY)


class BindingEvictionReconciler:
    """An eviction worker: evict one binding from one cluster when its taints are no longer tolerated."""

    def __init__(self, client: KubeClient, resource: Resource, clusters: Indexer, events: EventRecorder, *,
                 enabled: bool, purge_mode: str, pacer: MaxOfRateLimiter[Request],
                 stopping: Callable[[], bool] = lambda: False) -> None:
        self.client = client
        self.resource = resource
        self.clusters = clusters
        self.events = events
        self.enabled = enabled
        self.purge_mode = purge_mode
        self.pacer = pacer
        self.stopping = stopping
        self.controller: Controller | None = None  # set by the setup: where "look again later" goes

    async def reconcile(self, request: Request) -> Result:
        if not isinstance(request, EvictionKey):
            log.error("invalid eviction key", key=str(request))
            return Result()
        wait = await self.sync(request)
        if wait > 0 and self.controller is not None:
            self.controller.queue.add_after(request, wait)
        await self._pace()
        return Result()

    async def sync(self, key: EvictionKey) -> float:
        """Evict if needed; the seconds after which to look again (0: not needed)."""
        failed: MutableObj | None = None

        async def attempt() -> float:
            nonlocal failed
            binding = await self.client.get_or_none(self.resource, key.name, key.namespace)
            if binding is None:
                return 0.0
            decision = decide_binding_eviction(binding, key.cluster, self.clusters.get(key.cluster),
                                               now=datetime.now(UTC), enabled=self.enabled,
                                               purge_mode=self.purge_mode)
            if decision.binding is None:
                return decision.wait
            failed = decision.binding
            await self.client.update(self.resource, decision.binding)
            failed = None
            log.info("evicted cluster from binding", cluster=key.cluster, binding=str(Request(key.namespace, key.name)),
                     kind=self.resource.kind)
            return 0.0

        try:
            return await retry_on_conflict(attempt)
        except ApiError as exc:
            if exc.is_not_found:
                return 0.0  # deleted between the read and the write
            if failed is not None:
                record_eviction_event(self.events, failed, self.resource, key.cluster, event_type=WARNING,
                                      reason=EVICT_WORKLOAD_FROM_CLUSTER_FAILED, outcome="failed")
            raise

    async def _pace(self) -> None:
        """Hold this worker for the pacer's delay (Karmada sleeps in the worker), ending early on shutdown."""
        delay = self.pacer.when(_PACER_KEY)
        try:
            deadline = time.monotonic() + delay
            while not self.stopping():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                await asyncio.sleep(min(left, _PACE_SLICE))
        finally:
            self.pacer.forget(_PACER_KEY)


# ----------------------------------------------------------------------------- wiring


def setup_taint_manager(manager: Manager, *, enable_no_execute_taint_eviction: bool = True,
                        purge_mode: str = "Gracefully", resource_eviction_rate: float = 0.5) -> list[Controller]:
    """Register ``taint-manager`` and its two eviction queues (``binding-eviction``, ``cluster-binding-eviction``).

    ``purge_mode`` is ``--no-execute-taint-eviction-purge-mode``; ``resource_eviction_rate`` is
    ``--resource-eviction-rate`` (items per second per worker, >= 0).
    """
    if resource_eviction_rate < 0:
        raise ValueError(f"--resource-eviction-rate must be >= 0, got {resource_eviction_rate}")
    if enable_no_execute_taint_eviction and purge_mode not in (PURGE_MODE_GRACEFULLY, PURGE_MODE_DIRECTLY):
        raise ValueError(f"--no-execute-taint-eviction-purge-mode must be Gracefully or Directly, got {purge_mode!r}")
    clusters = manager.informer(CLUSTERS)
    rbs = manager.informer(RESOURCE_BINDINGS)
    crbs = manager.informer(CLUSTER_RESOURCE_BINDINGS)
    rbs.ensure_indexer(RB_INDEX_BY_CLUSTER, bindings_by_cluster)
    crbs.ensure_indexer(CRB_INDEX_BY_CLUSTER, bindings_by_cluster)
    events = manager.event_recorder(TAINT_MANAGER_NAME)

    def stopping() -> bool:
        return manager.shutdown_requested

    queues: list[Controller] = []
    for name, resource, informer in ((RB_EVICTION_NAME, RESOURCE_BINDINGS, rbs),
                                     (CRB_EVICTION_NAME, CLUSTER_RESOURCE_BINDINGS, crbs)):
        limiter = eviction_rate_limiter(resource_eviction_rate)
        reconciler = BindingEvictionReconciler(manager.client, resource, clusters.store, events,
                                               enabled=enable_no_execute_taint_eviction, purge_mode=purge_mode,
                                               pacer=limiter, stopping=stopping)
        queue = Controller(name, reconciler, workers=EVICTION_WORKERS, rate_limiter=limiter)
        reconciler.controller = queue
        queue.wait_for_caches(informer, clusters)  # start once the caches it reads have synced
        queues.append(queue)
    taint_manager = Controller(TAINT_MANAGER_NAME,
                               ClusterTaintReconciler(clusters.store, rbs.store, crbs.store, queues[0], queues[1],
                                                      enabled=enable_no_execute_taint_eviction),
                               workers=CLUSTER_WORKERS)
    taint_manager.watches(clusters)
    taint_manager.wait_for_caches(rbs, crbs)
    controllers = [taint_manager, *queues]
    for controller in controllers:
        manager.add_controller(controller)
    return controllers
