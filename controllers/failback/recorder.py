"""``failback-recorder``: records, on each binding, the clusters a graceful eviction took it from.

The record is :data:`~.recovery.EVICTED_FROM_ANNOTATION` on the binding, so that it survives a restart and
users can see it; :func:`rewrite` is also how ``cluster-failback`` writes the record and its in-flight marks.

Evictions are seen on the bindings as they happen. One that began and ended while no recorder ran (a
restart, a leader hand-over: Karmada's graceful eviction can be over in seconds) left no trace on its
binding, but an Event: Karmada's graceful-eviction controller records ``EvictWorkloadFromClusterSucceed``
("Evict from cluster <name> succeed.") on the binding when it removes the task. The recorder also reads
those Events (kept by the API server for its ``--event-ttl``, 1h by default) and records what one tells of,
unless the binding shows it is over (:func:`.recovery.evicted_by_event`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

import structlog

from controller_manager import objects
from controller_manager.apierrors import retry_on_conflict_unless_gone
from controller_manager.cache import Indexer
from controller_manager.client import MERGE_PATCH, KubeClient
from controller_manager.controller import Controller
from controller_manager.objects import MutableObj, Obj
from controller_manager.reconcile import Request, Result
from karmada_api.bindings import CRB_KIND, RB_KIND, BindingKind, binding_cluster_names
from karmada_api.shapes import binding_spec
from kube_api.timeutil import now

from . import progress, recovery

log = structlog.get_logger(__name__)


def _kind(request: Request) -> BindingKind:
    return RB_KIND if request.namespace else CRB_KIND


class DecisionOutdated(Exception):
    """The binding read afresh no longer supports the decision a change carries out (made on a cache copy that was
    behind): nothing is written, and the reconcile is retried to decide again."""


async def rewrite(client: KubeClient, kind: BindingKind, namespace: str, name: str, change: progress.Change, *,
                  unless_deleting: bool = False, cached: Obj | None = None,
                  only_if: Callable[[Obj], bool] | None = None) -> Obj | None:
    """Merge-patch the binding's fail-back annotations (record, in-flight marks, eviction times) to
    ``change(progress)``; the binding as written (or as read, when nothing changed), None when it is gone (or
    being deleted and ``unless_deleting``).

    Conditional on the resourceVersion it was read at, so that concurrent writers (the other controller,
    another cluster's fail-back, Karmada's status writes) never lose each other's change: the first attempt
    starts from ``cached`` when given (a cache copy, which saves a GET), any 409 from a fresh GET. ``only_if``
    says whether the binding (as each attempt reads it) still supports the change; if not, :class:`DecisionOutdated`.
    """
    start = cached

    async def attempt() -> Obj | None:
        nonlocal start
        binding = start if start is not None else await client.get_or_none(kind.resource, name, namespace)
        start = None
        if binding is None or (unless_deleting and objects.is_deleting(binding)):
            return None
        current = progress.current(binding)
        wanted = change(current)
        if wanted == current:
            return binding
        if only_if is not None and not only_if(binding):
            raise DecisionOutdated(f"{kind.resource.key} {objects.join_key(namespace, name)} changed since the "
                                   "decision: decided again")
        written: Obj = await client.patch(kind.resource, name, progress.progress_patch(binding, wanted),
                                          namespace=namespace, content_type=MERGE_PATCH)
        return written

    return await retry_on_conflict_unless_gone(attempt)


class EvictionRecorder:
    """Turns binding events into pending records (``pending``), then writes them (``reconcile``)."""

    def __init__(self, client: KubeClient, clusters: Indexer, bindings: Mapping[BindingKind, Indexer]) -> None:
        self.client = client
        self.clusters = clusters
        self.bindings = bindings
        """The binding caches, by kind (:func:`_kind` of a request)."""
        self.told: dict[Request, set[recovery.EvictionEvent]] = {}
        """Evictions Events tell of, to be judged against the binding by the reconcile."""
        self.pending: dict[Request, dict[str, progress.Eviction]] = {}
        """Evictions to record: per binding, each cluster and the eviction seen from it."""
        self.unverified: dict[Request, dict[str, progress.Eviction]] = {}
        """Clusters dropped from a binding while the Clusters cache did not know them (still filling, at
        start-up): whether they were unhealthy is checked by the reconcile, once it has synced."""
        self.controller: Controller | None = None

    def observe(self, old: MutableObj | None, new: MutableObj) -> None:
        """Informer handler: note what ``new`` lost through eviction and queue the binding."""
        unknown: set[str] = set()
        # An eviction from a cluster the binding is being failed back to (in flight, or already recorded: a batch
        # that lists it, its marks not written yet) undoes that fail-back: it is pending again. On the initial list
        # a task from a recorded cluster may be the eviction that started it all, still going on; from a cluster in
        # flight it is one that began after the move (no fail-back starts while a task names its cluster): it came
        # while no recorder ran.
        flying = progress.failing_back(new)
        if old is not None:
            again: Collection[str] = {*flying, *recovery.recorded_clusters(new)}
        else:
            again = {c for c, started in flying.items() if recovery.evicting_since(new, c, started)}
        evicted = recovery.evicted_clusters(old, new, self.clusters.get, unknown, again=again)
        if not (evicted or unknown) or self.controller is None:
            return
        request = Request.for_object(new)
        seen = now()
        for cluster in evicted:
            # on the initial list the task may be older than this process: the eviction is when it began, and its
            # fail-back may have been skipped since (the task outliving the decision)
            began = recovery.task_created(new, cluster) if old is None else None
            if old is None and progress.decided_already(new, cluster, began):
                continue
            self._note(self.pending, request, cluster,
                       progress.Eviction(began or seen, recovery.undoes_a_move(new, cluster, again)))
        for cluster in unknown:
            self._note(self.unverified, request, cluster,
                       progress.Eviction(seen, recovery.undoes_a_move(new, cluster, again)))
        self.controller.enqueue(request)

    @staticmethod
    def _note(notes: dict[Request, dict[str, progress.Eviction]], request: Request, cluster: str,
              eviction: progress.Eviction) -> None:
        """Note an eviction of the binding from the cluster (merged with one noted already)."""
        clusters = notes.setdefault(request, {})
        noted = clusters.get(cluster)
        clusters[cluster] = eviction if noted is None else noted.merged(eviction)

    def observe_event(self, event: MutableObj) -> None:
        """Informer handler of the ``EvictWorkloadFromClusterSucceed`` Events: queue the binding it names, to be
        judged by the reconcile (:func:`.recovery.evicted_by_event`), once the binding caches have synced."""
        told = recovery.eviction_event(event)
        if told is None or self.controller is None:
            return
        self.told.setdefault(told.request, set()).add(told)
        self.controller.enqueue(told.request)

    def _judge_events(self, request: Request) -> None:
        """Move the evictions the binding's Events tell of, and it does not show as over, to pending."""
        told = self.told.pop(request, set())
        binding = self.bindings[_kind(request)].get(objects.join_key(request.namespace, request.name)) if told else None
        if binding is None:
            return
        in_flight = progress.failing_back(binding)
        for event in told:
            if (recovery.evicted_by_event(binding, event, in_flight)
                    and not progress.decided_already(binding, event.cluster, event.at, recovery.EVENT_CLOCK_MARGIN)):
                undoes = recovery.undoes_a_move(binding, event.cluster, in_flight)
                log.info("eviction found in an Event, not seen on the binding", binding=str(request),
                         cluster=event.cluster, at=event.at.isoformat(), undoes_a_move=undoes)
                self._note(self.pending, request, event.cluster, progress.Eviction(event.at, undoes=undoes))

    def verify(self, request: Request) -> None:
        """Move the binding's unverified drops that were evictions (the cluster is known, and unhealthy) to pending."""
        for name, eviction in self.unverified.pop(request, {}).items():
            cluster = self.clusters.get(name)
            if cluster is not None and recovery.is_unhealthy(cluster):
                self._note(self.pending, request, name, eviction)

    def _drop_placed_back(self, request: Request) -> None:
        """Forget the notes of clusters the binding is on again (as cached): a standby notes evictions it cannot
        write, and writes them once it leads, maybe much later; one placed back since is no eviction to fail back."""
        notes = self.pending.get(request)
        if not notes:
            return
        binding = self.bindings[_kind(request)].get(objects.join_key(request.namespace, request.name))
        if binding is None:
            return
        for cluster in set(notes) & set(binding_cluster_names(binding_spec(binding))):
            del notes[cluster]
        if not notes:
            del self.pending[request]

    async def reconcile(self, request: Request) -> Result:
        self.verify(request)
        self._judge_events(request)
        self._drop_placed_back(request)
        pending = dict(self.pending.get(request, {}))
        if not pending:
            return Result()

        written = await rewrite(self.client, _kind(request), request.namespace, request.name,
                                progress.evicted_change(pending), unless_deleting=True)
        if written is not None:
            log.info("eviction recorded", binding=str(request), clusters=sorted(pending))
        # noted meanwhile (another cluster, or more of the same eviction): the next reconcile writes them
        left = {c: e for c, e in self.pending.get(request, {}).items() if pending.get(c) != e}
        if left:
            self.pending[request] = left
        else:
            self.pending.pop(request, None)
        return Result()
