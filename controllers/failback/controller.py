"""clusterFailback: put replicas back on a member cluster once it has stayed recovered for a window.

Two controllers share one setup (docs/failback.md):

* ``failback-recorder`` watches both binding kinds and records, in the annotation
  :data:`~.recovery.EVICTED_FROM_ANNOTATION`, each cluster a binding lost through eviction. The record
  lives on the binding so that it survives a restart and users can see it.
* ``cluster-failback`` watches the Clusters (and the records). Once a cluster named by records has stayed
  recovered for ``--failback-stabilization-window``, it creates WorkloadRebalancers for the recorded
  workloads whose placement still allows the cluster, then removes the cluster from the records.

It only *creates* WorkloadRebalancers: Karmada's scheduler does the rest, with this project's
rebalancer controller or Karmada's own.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import structlog
from prometheus_client import Counter

from controller_manager import objects
from controller_manager.cache import Indexer
from controller_manager.client import MERGE_PATCH, ApiError, KubeClient, retry_on_conflict
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.events import RBAC_RULES as EVENT_RULES
from controller_manager.informer import FuncHandler, SharedInformer
from controller_manager.manager import Manager
from controller_manager.objects import MutableObj, Obj
from controller_manager.predicate import AnnotationChangedPredicate
from controller_manager.rbac import PolicyRule, for_resources, informer_rules
from controller_manager.reconcile import Request, Result
from karmada_api.bindings import CRB_KIND, RB_KIND, BindingKind, workload_reference
from karmada_api.rebalancers import workload_key
from karmada_api.resources import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from sharedcli.flagtypes import duration, format_duration, positive_int

from . import recovery

log = structlog.get_logger(__name__)

RECORDER_NAME = "failback-recorder"
FAILBACK_NAME = "cluster-failback"
EVENT_SCHEDULED = "FailbackScheduled"
EVENT_TRIGGERED = "FailbackTriggered"
EVENT_SKIPPED = "FailbackSkipped"
RECORD_INDEX = "failback.evictedFrom"
"""Binding informer index: the clusters a binding's record names."""

REBALANCERS_CREATED = Counter("failback_rebalancers_created_total",
                              "WorkloadRebalancers created by the cluster-failback controller, by cluster.",
                              ["cluster"])
WORKLOADS_FAILED_BACK = Counter("failback_workloads_total",
                                "Workloads listed in fail-back WorkloadRebalancers, by cluster.", ["cluster"])


@dataclass(frozen=True)
class FailbackOptions:
    """The ``--failback-*`` flags."""

    stabilization_window: float = 300.0
    max_workloads: int = 100
    rebalancer_ttl: float = 3600.0


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The ``--failback-*`` flags of karmada-controller-manager (used only with ``clusterFailback`` on)."""
    defaults = FailbackOptions()
    add = parser.add_argument
    add("--failback-stabilization-window", type=duration, default=defaults.stabilization_window, metavar="DURATION",
        help="How long a recovered cluster must stay Ready and untainted before workloads evicted from it are "
             "rebalanced back (clusterFailback controller). "
             f"(default {format_duration(defaults.stabilization_window)})")
    add("--failback-max-workloads", type=positive_int, default=defaults.max_workloads,
        help="The most workloads one fail-back WorkloadRebalancer lists; more make several. "
             f"(default {defaults.max_workloads})")
    add("--failback-rebalancer-ttl", type=duration, default=defaults.rebalancer_ttl, metavar="DURATION",
        help="ttlSecondsAfterFinished of the fail-back WorkloadRebalancers; 0 keeps them. "
             f"(default {format_duration(defaults.rebalancer_ttl)})")


def options_from_args(args: argparse.Namespace) -> FailbackOptions:
    return FailbackOptions(stabilization_window=args.failback_stabilization_window,
                           max_workloads=args.failback_max_workloads, rebalancer_ttl=args.failback_rebalancer_ttl)


def _kind(request: Request) -> BindingKind:
    return RB_KIND if request.namespace else CRB_KIND


async def _rewrite_record(client: KubeClient, kind: BindingKind, namespace: str, name: str,
                          change: Callable[[set[str], Obj], set[str]]) -> bool:
    """Re-read the binding and merge-patch its record to ``change(recorded)``; False when it is gone.

    Conditional on the resourceVersion just read (409 → read again), so that concurrent writers of
    the record (the other controller, another cluster's fail-back) never lose each other's change.
    """
    async def attempt() -> bool:
        binding = await client.get_or_none(kind.resource, name, namespace)
        if binding is None:
            return False
        recorded = set(recovery.recorded_clusters(binding))
        wanted = set(change(recorded, binding))
        if wanted != recorded:
            await client.patch(kind.resource, name, recovery.record_patch(binding, wanted), namespace=namespace,
                               content_type=MERGE_PATCH)
        return True

    try:
        return await retry_on_conflict(attempt)
    except ApiError as exc:
        if exc.is_not_found:
            return False
        raise


class EvictionRecorder:
    """Turns binding events into pending records (``pending``), then writes them (``reconcile``)."""

    def __init__(self, client: KubeClient, clusters: Indexer) -> None:
        self.client = client
        self.clusters = clusters
        self.pending: dict[Request, set[str]] = {}
        self.unverified: dict[Request, set[str]] = {}
        """Clusters dropped from a binding while the Clusters cache did not know them (still filling, at
        start-up): whether they were unhealthy is checked by the reconcile, which runs once it has synced."""
        self.controller: Controller | None = None

    def observe(self, old: MutableObj | None, new: MutableObj) -> None:
        """Informer handler: note what ``new`` lost through eviction and queue the binding."""
        unknown: set[str] = set()
        evicted = recovery.evicted_clusters(old, new, self.clusters.get, unknown)
        if not (evicted or unknown) or self.controller is None:
            return
        request = Request.for_object(new)
        if evicted:
            self.pending.setdefault(request, set()).update(evicted)
        if unknown:
            self.unverified.setdefault(request, set()).update(unknown)
        self.controller.enqueue(request)

    def verify(self, request: Request) -> None:
        """Move the binding's unverified drops that were evictions (the cluster is known, and unhealthy) to pending."""
        for name in self.unverified.pop(request, ()):
            cluster = self.clusters.get(name)
            if cluster is not None and recovery.is_unhealthy(cluster):
                self.pending.setdefault(request, set()).add(name)

    async def reconcile(self, request: Request) -> Result:
        self.verify(request)
        pending = set(self.pending.get(request, ()))
        if not pending:
            return Result()

        def add(recorded: set[str], binding: Obj) -> set[str]:
            return recorded if objects.is_deleting(binding) else recorded | pending

        written = await _rewrite_record(self.client, _kind(request), request.namespace, request.name, add)
        if written:
            log.info("eviction recorded", binding=str(request), clusters=sorted(pending))
        left = self.pending.get(request, set()) - pending  # noted meanwhile: the next reconcile writes them
        if left:
            self.pending[request] = left
        else:
            self.pending.pop(request, None)
        return Result()


class ClusterFailback:
    """One Cluster per reconcile: track its recovery window, then fail its recorded bindings back."""

    def __init__(self, client: KubeClient, clusters: Indexer, bindings: Indexer, cluster_bindings: Indexer, *,
                 events: EventRecorder, options: FailbackOptions) -> None:
        self.client = client
        self.clusters = clusters
        self.binding_stores = ((RB_KIND, bindings), (CRB_KIND, cluster_bindings))
        self.events = events
        self.options = options
        self.windows = recovery.RecoveryWindows(options.stabilization_window)
        self._cleared: dict[tuple[str, str], str] = {}
        """(binding resource, cache key) → the resourceVersion the binding had when this process cleared a
        record on it: until the cache shows a newer version, that cached record is already handled (a
        cluster heartbeat arriving before the binding's watch event must not start a new window)."""

    def _forget_caught_up(self) -> None:
        """Drop the entries the cache has caught up with (a newer copy, or the binding gone)."""
        stores = {kind.resource.key: store for kind, store in self.binding_stores}
        for (resource, key), version in list(self._cleared.items()):
            cached = stores[resource].get(key)
            if cached is None or objects.resource_version(cached) != version:
                del self._cleared[(resource, key)]

    def _recorded(self, cluster: str) -> list[tuple[BindingKind, Obj]]:
        self._forget_caught_up()
        found: list[tuple[BindingKind, Obj]] = []
        for kind, store in self.binding_stores:
            for binding in store.by_index(RECORD_INDEX, cluster):
                if (kind.resource.key, objects.key(binding)) not in self._cleared:
                    found.append((kind, binding))
        return found

    async def reconcile(self, request: Request) -> Result:
        name = request.name
        cluster = self.clusters.get(name)
        records = self._recorded(name)
        if cluster is None or not records:
            self.windows.forget(name)
            return Result()
        recovered = recovery.is_recovered(cluster)
        started, left = self.windows.observe(name, recovered, time.monotonic())
        if started:
            self.events.event(cluster, NORMAL, EVENT_SCHEDULED,
                              f"cluster {name} has recovered; {len(records)} evicted workload(s) fail back if it "
                              f"stays recovered for {format_duration(self.options.stabilization_window)}")
            log.info("fail-back scheduled", cluster=name, bindings=len(records))
        if not recovered:
            return Result()  # a relapse: the window was reset; the Cluster's next change brings it back
        if left > 0:
            return Result(requeue_after=left)
        await self._fail_back(cluster, records)
        self.windows.forget(name)
        return Result()

    async def _fail_back(self, cluster: Obj, records: list[tuple[BindingKind, Obj]]) -> None:
        """Each rebalancer first, then the records of its workloads: a failure in between never loses a
        fail-back, and the retry finds the rebalancers already made (:meth:`_create_once`) instead of
        making them again (unless the process restarted in between: a new window, a new batch)."""
        name = objects.name(cluster)
        allowed: dict[tuple[str, ...], list[tuple[BindingKind, Obj]]] = {}
        skipped: list[tuple[BindingKind, Obj, str]] = []
        for kind, binding in records:
            reason = recovery.skip_reason(binding, cluster)
            if reason is None:
                allowed.setdefault(workload_key(workload_reference(binding)), []).append((kind, binding))
            else:
                skipped.append((kind, binding, reason))
        bodies = recovery.rebalancers_for(name, (workload_reference(b) for group in allowed.values()
                                                 for _, b in group),
                                          max_workloads=self.options.max_workloads,
                                          ttl_seconds=int(self.options.rebalancer_ttl))
        created, workloads = [], 0
        window = repr(self.windows.started.get(name))
        for body in bodies:
            rebalancer = await self._create_once(body, recovery.batch_id(name, window, body["spec"]["workloads"]))
            created.append(objects.name(rebalancer))
            listed = body["spec"]["workloads"]
            workloads += len(listed)
            REBALANCERS_CREATED.labels(name).inc()
            WORKLOADS_FAILED_BACK.labels(name).inc(len(listed))
            await self._clear(name, [kb for w in listed for kb in allowed[workload_key(w)]])
        await self._clear(name, [(kind, b) for kind, b, _ in skipped])
        for _, binding, reason in skipped:
            self.events.event(binding, WARNING, EVENT_SKIPPED, f"not failed back to cluster {name}: {reason}")
        if created:
            self.events.event(cluster, NORMAL, EVENT_TRIGGERED,
                              f"created WorkloadRebalancer(s) {', '.join(created)} for {workloads} workload(s) "
                              f"evicted from cluster {name}")
        log.info("failed back", cluster=name, rebalancers=created, skipped=len(skipped))

    async def _create_once(self, body: dict[str, Any], batch: str) -> Obj:
        """Create the rebalancer unless an earlier attempt of this fail-back did: a create that timed out or
        answered 5xx may have been stored, and the records it would have cleared are still there."""
        selector = f"{recovery.BATCH_LABEL}={batch}"
        existing = (await self.client.list(WORKLOAD_REBALANCERS, label_selector=selector)).get("items") or []
        if existing:
            found: Obj = existing[0]
            return found
        labelled = {**body, "metadata": {**body["metadata"], "labels": {recovery.BATCH_LABEL: batch}}}
        created: Obj = await self.client.create(WORKLOAD_REBALANCERS, labelled)
        return created

    async def _clear(self, cluster: str, records: Iterable[tuple[BindingKind, Obj]]) -> None:
        for kind, binding in records:
            def remove(recorded: set[str], _binding: Obj) -> set[str]:
                return recorded - {cluster}

            await _rewrite_record(self.client, kind, objects.namespace(binding), objects.name(binding), remove)
            self._cleared[(kind.resource.key, objects.key(binding))] = objects.resource_version(binding)


def _clusters_of_record(binding: MutableObj) -> list[Request]:
    return [Request("", cluster) for cluster in recovery.recorded_clusters(binding)]


RBAC_RULES: list[PolicyRule] = [
    # setup(): informers on the Clusters and both binding kinds
    *informer_rules(CLUSTERS, RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS),
    # _rewrite_record(): a fresh GET, then a merge patch of the record annotation
    *for_resources((RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS), ("get", "patch")),
    # _fail_back(): the WorkloadRebalancers
    *for_resources((WORKLOAD_REBALANCERS,), ("create", "list")),  # list: _create_once's look for an earlier try
    *EVENT_RULES,  # FailbackScheduled, FailbackTriggered, FailbackSkipped
]
"""The permissions this controller needs on the Karmada API server (see controller_manager.rbac)."""


def _record_handler(recorder: EvictionRecorder) -> FuncHandler:
    return FuncHandler(add=lambda obj, _initial: recorder.observe(None, obj),
                       update=recorder.observe)


def setup(manager: Manager, options: FailbackOptions, **controller_options: Any) -> list[Controller]:
    """Register ``failback-recorder`` and ``cluster-failback`` on shared informers."""
    clusters = manager.informer(CLUSTERS)
    binding_informers: list[SharedInformer] = [manager.informer(RESOURCE_BINDINGS),
                                               manager.informer(CLUSTER_RESOURCE_BINDINGS)]
    recorder = EvictionRecorder(manager.client, clusters.store)
    record_controller = Controller(RECORDER_NAME, recorder, workers=2, **controller_options)
    recorder.controller = record_controller
    record_controller.wait_for_caches(clusters, *binding_informers)
    failback = ClusterFailback(manager.client, clusters.store, binding_informers[0].store,
                               binding_informers[1].store, events=manager.event_recorder(FAILBACK_NAME),
                               options=options)
    failback_controller = Controller(FAILBACK_NAME, failback, workers=1, **controller_options)
    failback_controller.watches(clusters)
    for informer in binding_informers:
        informer.ensure_indexer(RECORD_INDEX, recovery.recorded_clusters)
        informer.add_event_handler(_record_handler(recorder))
        failback_controller.watches(informer, map_func=_clusters_of_record, predicates=[AnnotationChangedPredicate()])
    manager.add_controller(record_controller)
    manager.add_controller(failback_controller)
    return [record_controller, failback_controller]
