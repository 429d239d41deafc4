"""clusterFailback: put replicas back on a member cluster once it has stayed recovered for a window.

Two controllers share one setup (:mod:`.wiring`; docs/failback.md):

* ``failback-recorder`` (:mod:`.recorder`) watches both binding kinds and records, in the annotation
  :data:`~.recovery.EVICTED_FROM_ANNOTATION`, each cluster a binding lost through eviction.
* ``cluster-failback`` watches the Clusters (and the records). Once a cluster named by records has stayed
  recovered for ``--failback-stabilization-window``, it fails the recorded workloads whose placement still
  allows the cluster back in batches: at most ``--failback-max-concurrent`` in flight, each next one when
  those are healthy again (:mod:`.progress` decides, :mod:`.caches` reads), pausing on a workload not healthy
  within ``--failback-progress-deadline``. Its state is in the API, never only here.

It only *creates* WorkloadRebalancers: Karmada's scheduler does the rest, with this project's
rebalancer controller or Karmada's own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Iterable
from datetime import datetime
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.cache import Indexer
from controller_manager.client import MERGE_PATCH, KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.mutationcache import MutationCache
from controller_manager.objects import Obj
from controller_manager.reconcile import Request, Result
from karmada_api import health
from karmada_api.bindings import CRB_KIND, RB_KIND, BindingKind, binding_cluster_names, workload_reference
from karmada_api.names import binding_name
from karmada_api.rebalancers import chunks, workload_key
from karmada_api.resources import CLUSTERS, WORKLOAD_REBALANCERS
from karmada_api.shapes import Workload, binding_spec
from kube_api.timeutil import format_time, now, parse_optional_time, parse_time
from sharedcli.flagtypes import format_duration

from . import progress, reasons, recovery
from .caches import Policies, Templates, WorkloadKey
from .metrics import BATCHES, IN_FLIGHT, PAUSED_CLUSTERS, PAUSES, REBALANCERS_CREATED, WORKLOADS_FAILED_BACK
from .options import FailbackOptions
from .owed import UnrecordedSkip, UnrecordedSkips, UnreportedFinishes
from .recorder import DecisionOutdated, rewrite

log = structlog.get_logger(__name__)

RECORDER_NAME = "failback-recorder"
FAILBACK_NAME = "cluster-failback"
TEMPLATES_FILLING = 1.0
"""Seconds before looking again at a cluster whose in-flight workloads' template cache is still filling."""
RECORD_INDEX = "failback.evictedFrom"
"""Binding informer index: the clusters a binding's record names."""
FLIGHT_INDEX = "failback.failingBack"
"""Binding informer index: the clusters a binding is being failed back to now."""
WRITE_CONCURRENCY = 8
"""Binding writes of one reconcile in flight at once (a batch's marks, the finished ones' records)."""
ROUND_INDEX = "failback.round"
"""Rebalancer informer index: the round digest of a fail-back batch."""

Entry = tuple[BindingKind, Obj]
Flight = tuple[BindingKind, Obj, datetime]
"""A binding in flight back to a cluster, and since when."""


def _display(binding: Obj) -> str:
    ref = workload_reference(binding)
    namespace = ref.get("namespace") or ""
    return f"{ref.get('kind')}/{namespace + '/' if namespace else ''}{ref.get('name')}"


class ClusterFailback:
    """One Cluster per reconcile: track its recovery window, then fail its recorded bindings back in batches of
    at most ``--failback-max-concurrent`` in flight, each next one when those are healthy (docs/failback.md)."""

    def __init__(self, client: KubeClient, clusters: MutationCache, bindings: MutationCache,
                 cluster_bindings: MutationCache, *, events: EventRecorder, options: FailbackOptions,
                 templates: Templates | None = None, policies: Policies | None = None,
                 rebalancers: Indexer | None = None) -> None:
        self.client = client
        self.clusters = clusters
        self.binding_stores: dict[BindingKind, MutationCache] = {RB_KIND: bindings, CRB_KIND: cluster_bindings}
        self.binding_kinds = {kind.resource.key: kind for kind in self.binding_stores}
        """binding resource → its kind (the resource is how :attr:`marked` names a binding's kind)."""
        self.events = events
        self.options = options
        self.templates = templates
        self.policies = policies
        self.rebalancers = rebalancers
        self.windows = recovery.RecoveryWindows(options.stabilization_window)
        self.flights: dict[str, set[WorkloadKey]] = {}
        """cluster → the workloads in flight to it (as last seen): template events map back through it."""
        self.paused: set[str] = set()
        self.reported: dict[str, set[str]] = {}
        """cluster → the stuck workloads a FailbackPaused event named (in this process)."""
        self.adopted: set[tuple[str, str]] = set()
        """(cluster, round) whose earlier batches were adopted by this process (:meth:`_adopt`)."""
        self.unsettled: dict[str, dict[str, Any]] = {}
        """cluster → the body of a batch rebalancer whose create or marks failed (:meth:`_settle`)."""
        self.marked: dict[str, set[tuple[str, str]]] = {}
        """cluster → (binding resource, key) this process marked in flight: until the informer's index shows a
        mark, it is found here (the binding itself is then read through the mutation cache)."""
        self.waiting: dict[str, dict[str, str]] = {}
        """cluster → the workloads told to wait, and why (:meth:`_tell_waiting`)."""
        self.warned_resume: dict[str, str] = {}
        """cluster → the resume value last warned about (one Warning per value, not one per reconcile)."""
        self.unrecorded_skips = UnrecordedSkips()  # skips whose write failed, their Warning still owed
        self.unreported_finishes = UnreportedFinishes()  # finishes whose write failed, their check still owed
        self.controller: Controller | None = None

    # ------------------------------------------------------------------ reads

    def _record_keys(self, cluster: str) -> list[tuple[BindingKind, str]]:
        """The bindings whose record names the cluster (per the index: it may be behind our own writes), in
        the order fail-back takes them: by namespace and name. Keys only: a reconcile loads what it needs."""
        found = [(kind, key) for kind, store in self.binding_stores.items()
                 for key in store.store.index_keys(RECORD_INDEX, cluster)]
        return sorted(found, key=lambda entry: (entry[1], entry[0].resource.key))

    def _cached(self, kind: BindingKind, key: str) -> Obj | None:
        """The binding, our own writes included."""
        return self.binding_stores[kind].get(key)

    def _load(self, kind: BindingKind, key: str, cluster: str) -> Obj | None:
        """The binding, our own writes included, if its record still names the cluster."""
        binding = self._cached(kind, key)
        return binding if binding is not None and cluster in recovery.recorded_clusters(binding) else None

    def _in_flight(self, cluster: str) -> list[Flight]:
        """The bindings being failed back to the cluster, and since when, by workload."""
        found: dict[tuple[str, str], Flight] = {}
        marked = self.marked.get(cluster, set())
        candidates = [(kind, key) for kind, store in self.binding_stores.items()
                      for key in store.store.index_keys(FLIGHT_INDEX, cluster)]
        # our marks the index may not show yet
        candidates += [(self.binding_kinds[resource], key) for resource, key in marked]
        for kind, key in candidates:
            binding = self._load(kind, key, cluster)
            started = progress.failing_back(binding).get(cluster) if binding is not None else None
            if binding is not None and started is not None:
                found[(kind.resource.key, key)] = (kind, binding, started)
        marked.intersection_update(found.keys())  # the rest are over (in place: &= would rebind)
        return sorted(found.values(), key=lambda flight: _display(flight[1]))

    def template_changed(self, workload: WorkloadKey) -> None:
        if self.controller is None:
            return
        for cluster, workloads in list(self.flights.items()):
            if workload in workloads:
                self.controller.enqueue(Request("", cluster))

    def _not_healthy(self, binding: Obj, started: datetime) -> str | None:
        ref = workload_reference(binding)
        tracked, template = self.templates.lookup(ref) if self.templates is not None else (False, None)
        if tracked:
            return health.workload_not_healthy(binding, template, started)
        return health.binding_not_healthy(binding, started)

    # ------------------------------------------------------------------ reconcile

    async def reconcile(self, request: Request) -> Result:
        name = request.name
        for binding, message in self.unrecorded_skips.stored(name, self._cached):
            self.events.event(binding, WARNING, reasons.EVENT_SKIPPED, message)
        self._report_not_placed(name, list(self.unreported_finishes.stored(name, self._cached)))
        cluster = self.clusters.get(name)
        keys = self._record_keys(name) if cluster is not None else []
        if cluster is None or not keys:
            self.windows.forget(name)
            self.unrecorded_skips.forget(name)
            self.unreported_finishes.forget(name)
            self.marked.pop(name, None)
            self.unsettled.pop(name, None)
            self.waiting.pop(name, None)
            self._set_flights(name, [])
            if cluster is not None:
                await self._annotate(cluster, {progress.ROUND_ANNOTATION: None, progress.PAUSED_ANNOTATION: None})
            self._set_paused(name, False)
            return Result()
        recovered = recovery.is_recovered(cluster)
        annotations = objects.annotations(cluster)
        round_value = annotations.get(progress.ROUND_ANNOTATION)
        if not recovered and round_value:  # a relapse ends the round: what has not started waits for a new one
            cluster = await self._annotate(cluster, {progress.ROUND_ANNOTATION: None})
            round_value = None
        unsettled = self.unsettled.get(name)
        if unsettled is not None:  # first: finding its batch gone makes the round's adoption run again below
            same_round = bool(round_value) and (objects.labels(unsettled).get(progress.ROUND_LABEL)
                                                == progress.round_digest(name, str(round_value)))
            await self._settle(cluster, unsettled, resend=recovered and same_round)
        if round_value and (name, round_value) not in self.adopted:
            await self._adopt(name, round_value)
            self.adopted.add((name, round_value))
        flights = self._in_flight(name)
        flying = {(kind.resource.key, objects.key(b)) for kind, b, _ in flights}
        pending = [(kind, key) for kind, key in keys if (kind.resource.key, key) not in flying]
        self._set_flights(name, [b for _, b, _ in flights])
        may_start, requeue = False, None
        if pending:
            started, left = self.windows.observe(name, recovered, time.monotonic())
            if started:
                self.events.event(cluster, NORMAL, reasons.EVENT_SCHEDULED,
                                  f"cluster {name} has recovered; {len(pending)} evicted workload(s) fail back if it "
                                  f"stays recovered for {format_duration(self.options.stabilization_window)}")
                log.info("fail-back scheduled", cluster=name, bindings=len(pending))
            may_start = recovered and left <= 0
            requeue = left if recovered and left > 0 else None
        else:
            self.windows.forget(name)
        resume = progress.read_resume(cluster)
        self._warn_resume(cluster, resume)
        if self.templates is not None and self.templates.filling(workload_reference(b) for _, b, _ in flights):
            return Result(requeue_after=TEMPLATES_FILLING)  # judged on an empty cache, every flight would look stuck
        health_now = [progress.InFlight(_display(b), started, self._not_healthy(b, started))
                      for _, b, started in flights]
        if not recovered:
            flights, health_now = await self._undo_relapsed(name, flights, health_now)
        plan = progress.plan(health_now, len(pending), now=now(), max_concurrent=self.options.max_concurrent,
                             deadline=self.options.progress_deadline, may_start=may_start,
                             paused_at=progress.paused_since(cluster), resume=resume)
        given_up = set(plan.given_up)
        over = [(kind, b, started) for (kind, b, started), seen in zip(flights, health_now, strict=True)
                if seen.not_healthy is None or seen.workload in given_up]
        self.unreported_finishes.finishing(name, [(kind, objects.key(b)) for kind, b, _ in over
                                                  if _display(b) not in given_up])
        await self._write_all([(kind, b, progress.finished_change(name, started)) for kind, b, started in over],
                              then=lambda finished: self._report_not_placed(name, finished, given_up))
        self._set_flights(name, [b for _, b, _ in flights if all(b is not o for _, o, _ in over)])
        cluster = await self._pause_or_resume(cluster, plan)
        if plan.start:
            await self._batch(cluster, pending, plan.start, in_flight=len(flights) - len(over))
        IN_FLIGHT.labels(name).set(len(self.flights.get(name, ())))
        waits = [w for w in (requeue, plan.next_deadline) if w is not None]
        return Result(requeue_after=min(waits) + 0.05) if waits else Result()

    def _report_not_placed(self, cluster: str, finished: list[Obj], given_up: Collection[str] = ()) -> None:
        """A Warning on each binding whose fail-back ended healthy (not ``given_up``) with no replica on the cluster
        (:func:`.progress.not_placed_message`); one whose finishing answer was lost is checked later (:mod:`.owed`)."""
        for binding in finished:
            self.unreported_finishes.checked(cluster, objects.key(binding))
            if _display(binding) in given_up:
                continue
            if (message := progress.not_placed_message(binding, cluster)) is not None:
                self.events.event(binding, WARNING, reasons.EVENT_NOT_PLACED, message)

    async def _undo_relapsed(self, cluster: str, flights: list[Flight], health_now: list[progress.InFlight]
                             ) -> tuple[list[Flight], list[progress.InFlight]]:
        """The flights still going: one healthy on other clusters but not on this one, which is unhealthy, is no
        finished fail-back. The cluster relapsed before the scheduler could place it back (no eviction to see),
        or the recorder has not written the eviction yet: the move is undone, and the workload pending again."""
        judged = list(zip(flights, health_now, strict=True))
        undone = [flight for flight, seen in judged
                  if seen.not_healthy is None and cluster not in binding_cluster_names(binding_spec(flight[1]))]
        if not undone:
            return flights, health_now
        seen_at = now()
        await self._write_all([(kind, b, progress.relapsed_change(cluster, started, seen_at))
                               for kind, b, started in undone])
        log.info("fail-back undone: the cluster is unhealthy again", cluster=cluster,
                 bindings=[_display(b) for _, b, _ in undone])
        gone = {id(b) for _, b, _ in undone}
        kept = [(flight, seen) for flight, seen in judged if id(flight[1]) not in gone]
        return [flight for flight, _ in kept], [seen for _, seen in kept]

    def _set_flights(self, cluster: str, bindings: Iterable[Obj]) -> None:
        keys = {workload_key(workload_reference(b)) for b in bindings}
        if keys:
            self.flights[cluster] = keys
        else:
            self.flights.pop(cluster, None)
        IN_FLIGHT.labels(cluster).set(len(keys))

    def _set_paused(self, cluster: str, paused: bool) -> None:
        (self.paused.add if paused else self.paused.discard)(cluster)
        PAUSED_CLUSTERS.set(len(self.paused))

    def _warn_resume(self, cluster: Obj, resume: progress.Resume) -> None:
        name = objects.name(cluster)
        value = objects.annotations(cluster).get(progress.RESUME_ANNOTATION, "")
        if resume.invalid is None:
            self.warned_resume.pop(name, None)
        elif self.warned_resume.get(name) != value:
            self.warned_resume[name] = value
            self.events.event(cluster, WARNING, reasons.EVENT_RESUME_INVALID, resume.invalid)

    async def _pause_or_resume(self, cluster: Obj, plan: progress.Plan) -> Obj:
        """Write the pause (or its end) and say so; while paused, name each workload that gets stuck too."""
        name = objects.name(cluster)
        stuck = {f.workload for f in plan.stuck}
        if plan.pause:
            cluster = await self._annotate(cluster, {progress.PAUSED_ANNOTATION: format_time(now())})
            PAUSES.labels(name).inc()
            self._paused_event(cluster, plan, "paused")
            log.warning("fail-back paused", cluster=name, stuck=sorted(stuck))
            self.reported[name] = stuck
        elif plan.unpause:
            cluster = await self._annotate(cluster, {progress.PAUSED_ANNOTATION: None})
            why = (f"resumed by {progress.RESUME_ANNOTATION}; given up: {', '.join(plan.given_up)}"
                   if plan.given_up else "the workloads that held it are healthy")
            self.events.event(cluster, NORMAL, reasons.EVENT_RESUMED, f"fail-back to cluster {name} resumed: {why}")
            self.reported.pop(name, None)
        elif stuck - self.reported.get(name, set()):  # paused, and more are stuck now (or first seen since a start)
            self._paused_event(cluster, plan, "still paused")
            self.reported[name] = stuck | self.reported.get(name, set())
        self._set_paused(name, progress.paused_since(cluster) is not None)
        return cluster

    def _paused_event(self, cluster: Obj, plan: progress.Plan, state: str) -> None:
        stuck = "; ".join(f"{f.workload}: {f.not_healthy}" for f in plan.stuck)
        self.events.event(cluster, WARNING, reasons.EVENT_PAUSED,
                          f"fail-back to cluster {objects.name(cluster)} {state}: {len(plan.stuck)} workload(s) not "
                          f"healthy within {format_duration(self.options.progress_deadline)} ({stuck}); it resumes "
                          f"when they are healthy, or with the annotation {progress.RESUME_ANNOTATION}=<a time at or "
                          f"after {progress.PAUSED_ANNOTATION}>")

    async def _batch(self, cluster: Obj, pending: list[tuple[BindingKind, str]], slots: int, *,
                     in_flight: int) -> None:
        """The next ``slots`` allowed workloads (in binding order) as one batch; skipped and opted-out ones are
        decided on the way (their records cleared, an Event on the binding) and take no slot. One that still has a
        graceful-eviction task from the cluster, or whose placement does not tolerate a taint of it, waits (no slot
        either): Karmada's scheduler leaves such a cluster out (its ``ClusterEviction`` and ``TaintToleration``
        filters), so a fresh schedule now would not place it back, and the move would look finished with the
        workload still elsewhere (:func:`.recovery.wait_reason`). Loads only the bindings it looks at. A failure
        between a create and its marks leaves the batch unsettled (:meth:`_settle`)."""
        name = objects.name(cluster)
        round_start = parse_optional_time(objects.annotations(cluster).get(progress.ROUND_ANNOTATION))
        chosen: dict[WorkloadKey, list[Entry]] = {}
        held: list[tuple[Obj, str]] = []  # (binding, why): Karmada's eviction not over, or a taint not tolerated
        decided: list[Obj] = []  # skipped, opted out
        for kind, key in pending:
            if len(chosen) >= slots:
                break
            binding = self._load(kind, key, name)
            if binding is None or name in progress.failing_back(binding):
                continue
            evicted = progress.evicted_at(binding).get(name)
            if round_start is not None and evicted is not None and evicted >= round_start:
                await self._end_round(cluster, binding, "evicted during the round")
                return
            workload = workload_key(workload_reference(binding))
            if workload in chosen:  # one workload, two bindings (a kind under two apiVersions): one entry
                if (why := recovery.wait_reason(binding, cluster)) is not None:
                    held.append((binding, why))
                else:
                    chosen[workload].append((kind, binding))
                continue
            if recovery.evicting(binding, name):  # decided once it is over: its end's Event must not postdate the skip
                held.append((binding, str(recovery.wait_reason(binding, cluster))))
                continue
            policy = self.policies.opting_out(binding) if self.policies is not None else None
            reason = progress.opt_out_reason(policy) if policy is not None else recovery.skip_reason(binding, cluster)
            if reason is not None:
                await self._skip(kind, binding, name, reason, still=None if policy is not None else (
                    lambda fresh: recovery.skip_stands(fresh, cluster)))
                decided.append(binding)
                continue
            if (why := recovery.wait_reason(binding, cluster)) is not None:
                held.append((binding, why))
                continue
            chosen[workload] = [(kind, binding)]
        self._tell_waiting(name, held, [*decided, *(b for entries in chosen.values() for _, b in entries)])
        if not chosen:
            return
        round_value = objects.annotations(cluster).get(progress.ROUND_ANNOTATION)
        if not round_value:
            round_value = format_time(now())
            cluster = await self._annotate(cluster, {progress.ROUND_ANNOTATION: round_value})
        created = []
        for group in chunks(sorted(chosen), self.options.max_workloads):
            body = progress.batch_body(name, round_value, [Workload(**workload_reference(chosen[k][0][1]))
                                                           for k in group],
                                       ttl_seconds=int(self.options.rebalancer_ttl))
            self.unsettled[name] = body
            rebalancer = await self._create_once(name, body)
            refused: Obj | None = None
            if rebalancer is not None:
                started = parse_time(objects.metadata(rebalancer)["creationTimestamp"])
                written = await self._write_all([(kind, binding, progress.started_change(name, started))
                                                 for key in group for kind, binding in chosen[key]])
                refused = next((w for w in written if w is not None and name in recovery.recorded_clusters(w)
                                and name not in progress.failing_back(w)), None)
                created.append(objects.name(rebalancer))
                REBALANCERS_CREATED.labels(name).inc()
                WORKLOADS_FAILED_BACK.labels(name).inc(len(group))
            self.unsettled.pop(name, None)
            if refused is not None:  # evicted since the batch began (a 409 met an old one): not this round's any more
                await self._end_round(cluster, refused, "evicted at or after its batch began")
                return
        BATCHES.labels(name).inc()
        self.flights.setdefault(name, set()).update(chosen)
        waiting = len(pending) - len(chosen)
        listed = ", ".join(_display(entries[0][1]) for entries in chosen.values())
        self.events.event(cluster, NORMAL, reasons.EVENT_TRIGGERED,
                          f"created WorkloadRebalancer(s) {', '.join(created)} for {len(chosen)} workload(s) evicted "
                          f"from cluster {name} ({listed}); {in_flight + len(chosen)} in flight, at most "
                          f"{self.options.max_concurrent}; {max(waiting, 0)} waiting")
        log.info("fail-back batch started", cluster=name, rebalancers=created, workloads=len(chosen),
                 waiting=waiting)

    async def _skip(self, kind: BindingKind, binding: Obj, cluster: str, reason: str, *,
                    still: Callable[[Obj], bool] | None) -> None:
        """Decide against failing the binding back to the cluster (its record goes, the decision is marked), and
        say why in a Warning on the binding once that is stored. ``still``: whether a binding read afresh (after a
        409) still calls for it; a skip is final, so one decided on a cache copy behind is decided again. A write
        that fails may have been stored (its answer lost): the retry would no longer see the record, so the
        Warning is kept for it (:mod:`.owed`)."""
        at, message, key = now(), f"not failed back to cluster {cluster}: {reason}", objects.key(binding)
        try:
            await self._write(kind, binding, progress.skipped_change(cluster, at), only_if=still)
        except DecisionOutdated:
            raise  # nothing written: the retry decides again on the binding as it is now
        except Exception:
            self.unrecorded_skips.failed(cluster, UnrecordedSkip(kind, key, at, message))
            raise
        self.unrecorded_skips.said(cluster, kind, key)
        self.events.event(binding, WARNING, reasons.EVENT_SKIPPED, message)

    def _tell_waiting(self, cluster: str, bindings: list[tuple[Obj, str]], decided: Iterable[Obj]) -> None:
        """Say which workloads wait, and why (:func:`.recovery.wait_reason`): a ``FailbackWaiting`` Event on each
        binding and a log line, once per reason (in this process) until it is ``decided`` (chosen, skipped)."""
        told = self.waiting.setdefault(cluster, {})
        for binding in decided:
            told.pop(_display(binding), None)
        new = {shown: (b, why) for b, why in bindings if told.get(shown := _display(b)) != why}
        for binding, why in new.values():
            self.events.event(binding, NORMAL, reasons.EVENT_WAITING,
                              f"not failed back to cluster {cluster} yet: {why}")
        if new:
            told.update((shown, why) for shown, (_, why) in new.items())
            log.info("fail-back waits", cluster=cluster, bindings={shown: why for shown, (_, why) in new.items()})
        if not told:
            del self.waiting[cluster]

    async def _end_round(self, cluster: Obj, binding: Obj, why: str) -> None:
        """A workload of this round was evicted from the cluster again, a relapse the Cluster may never have shown
        us (over between two looks): the round ends, and the cluster must stay recovered a full window again. The
        next round's batches have other names, so the workload can be listed again (the same list in the same
        round would only meet the old batch again, whose move the eviction undid)."""
        name = objects.name(cluster)
        await self._annotate(cluster, {progress.ROUND_ANNOTATION: None})
        self.windows.forget(name)
        log.info("fail-back round ended: a workload was evicted again", cluster=name, binding=objects.key(binding),
                 why=why)

    async def _create_once(self, cluster: str, body: dict[str, Any]) -> Obj | None:
        """Create the batch's rebalancer; 409 AlreadyExists means an earlier attempt did (an answer lost, a
        restart between the create and the marks): that one is the batch. None: that one is gone already
        (finished, deleted by its TTL); the round's adoption then finds its workloads by their trigger.

        Any other failure leaves the batch unsettled, a 4xx too: it says this attempt was not stored, not that
        no earlier one was (a lost answer, the client's own retry after a 5xx)."""
        try:
            created: Obj = await self.client.create(WORKLOAD_REBALANCERS, body)
            return created
        except ApiError as exc:
            if not exc.is_already_exists:
                raise
        return await self._get_batch(cluster, body["metadata"]["name"])

    async def _get_batch(self, cluster: str, name: str) -> Obj | None:
        """The batch rebalancer ``name``, or None when it does not exist (re-adopting the cluster's round)."""
        try:
            existing: Obj = await self.client.get(WORKLOAD_REBALANCERS, name)
            return existing
        except ApiError as exc:
            if not exc.is_not_found:
                raise
        self.adopted = {entry for entry in self.adopted if entry[0] != cluster}
        return None

    async def _settle(self, cluster_obj: Obj, body: dict[str, Any], *, resend: bool) -> None:
        """Finish a batch that a failure left unsettled, before anything else is decided: its create may or may
        not have been stored, its marks may be missing, and the informer may not show it yet. A batch decided
        afresh could list other workloads under another name and move some twice; so the very same create is
        sent again (409 if the first was stored) and what it lists is marked in flight. Once its round is over
        (a relapse), or when none of its workloads is pending any more, it is only looked for: a batch that
        never started stays unstarted."""
        cluster = objects.name(cluster_obj)
        pending = any(binding is not None and cluster not in progress.failing_back(binding)
                      for _, binding in self._listed(cluster, body))
        rebalancer = (await self._create_once(cluster, body) if resend and pending
                      else await self._get_batch(cluster, body["metadata"]["name"]))
        if rebalancer is not None:
            await self._mark_listed(cluster, rebalancer)
            if resend and pending:  # started by the failed attempt or by this one: say so, as for any batch
                listed = objects.spec(rebalancer).get("workloads") or []
                REBALANCERS_CREATED.labels(cluster).inc()
                WORKLOADS_FAILED_BACK.labels(cluster).inc(len(listed))
                BATCHES.labels(cluster).inc()
                self.events.event(cluster_obj, NORMAL, reasons.EVENT_TRIGGERED,
                                  f"created WorkloadRebalancer {objects.name(rebalancer)} for {len(listed)} "
                                  f"workload(s) evicted from cluster {cluster}, after a failure left it unsettled")
                log.info("fail-back batch settled", cluster=cluster, rebalancer=objects.name(rebalancer))
        self.unsettled.pop(cluster, None)

    async def _adopt(self, cluster: str, round_value: str) -> None:
        """Mark in flight the pending workloads a batch of this round already moved (its rebalancer was made,
        the marks were not: a crash or a failure in between). Once per round and process, and again after a
        failed batch: in between, this process's own batches are marked before anything else starts.

        First those a rebalancer of the round lists, since its creation; then those whose reschedule was
        triggered in the round (:func:`progress.triggered_in_round`), since that trigger: their batch may have
        finished and been deleted by its TTL, and making it again would reschedule them a second time."""
        listed = (self.rebalancers.by_index(ROUND_INDEX, progress.round_digest(cluster, round_value))
                  if self.rebalancers is not None else [])
        for rebalancer in listed:
            await self._mark_listed(cluster, rebalancer)
        for kind, key in self._record_keys(cluster):
            binding = self._load(kind, key, cluster)
            if binding is not None:
                await self._mark_pending(kind, binding, cluster, progress.triggered_in_round(binding, round_value))

    def _listed(self, cluster: str, rebalancer: Obj) -> list[tuple[BindingKind, Obj | None]]:
        """The binding of each workload a (fail-back) rebalancer lists, if its record still names the cluster."""
        found: list[tuple[BindingKind, Obj | None]] = []
        for workload in objects.spec(rebalancer).get("workloads") or []:
            namespace = str(workload.get("namespace") or "")
            kind = RB_KIND if namespace else CRB_KIND
            name = binding_name(str(workload.get("kind", "")), str(workload.get("name", "")))
            found.append((kind, self._load(kind, objects.join_key(namespace, name), cluster)))
        return found

    async def _mark_listed(self, cluster: str, rebalancer: Obj) -> None:
        """Mark in flight, since the rebalancer's creation, each pending workload it lists (the writes of a
        batch's marks, :data:`WRITE_CONCURRENCY` at a time, as :meth:`_batch` writes them)."""
        began = parse_time(objects.metadata(rebalancer)["creationTimestamp"])
        await self._write_all([(kind, binding, progress.started_change(cluster, began))
                               for kind, binding in self._listed(cluster, rebalancer)
                               if binding is not None and cluster not in progress.failing_back(binding)
                               and not self._held(binding, cluster)])

    async def _mark_pending(self, kind: BindingKind, binding: Obj | None, cluster: str, began: datetime | None) -> None:
        """Mark the binding in flight to the cluster since ``began``, if it is pending (loaded: its record names
        the cluster; no mark yet), ``began`` is a time, and it is not held (:meth:`_held`: an eviction from the
        cluster going on, or a taint of it not tolerated)."""
        if (binding is not None and began is not None and cluster not in progress.failing_back(binding)
                and not self._held(binding, cluster)):
            await self._write(kind, binding, progress.started_change(cluster, began))

    def _held(self, binding: Obj, cluster: str) -> bool:
        """Whether the binding's fail-back to the cluster must wait (:func:`.recovery.wait_reason`): whatever moved
        it, the scheduler left the cluster out, so that move is no fail-back to adopt."""
        cluster_obj = self.clusters.get(cluster)
        if cluster_obj is None or cluster in binding_cluster_names(binding_spec(binding)):
            return recovery.evicting(binding, cluster)  # back on it already: a taint added since did not hold that move
        return recovery.wait_reason(binding, cluster_obj) is not None

    # ------------------------------------------------------------------ writes

    async def _write(self, kind: BindingKind, binding: Obj, change: progress.Change, *,
                     only_if: Callable[[Obj], bool] | None = None) -> Obj | None:
        written = await rewrite(self.client, kind, objects.namespace(binding), objects.name(binding), change,
                                cached=binding, only_if=only_if)
        if written is not None:
            self.binding_stores[kind].mutated(written)
            for cluster in progress.failing_back(written):
                self.marked.setdefault(cluster, set()).add((kind.resource.key, objects.key(written)))
        return written

    async def _write_all(self, writes: list[tuple[BindingKind, Obj, progress.Change]], *,
                         then: Callable[[list[Obj]], None] | None = None) -> list[Obj | None]:
        """:meth:`_write` each, ``WRITE_CONCURRENCY`` at a time (different bindings: independent writes); the
        bindings as written, in order.

        ``then`` is given the bindings written (the gone ones left out) before any failure is raised: what must
        follow a write that landed (an Event) cannot wait for the retry, which no longer sees that write's
        binding as one to make."""
        limit = asyncio.Semaphore(WRITE_CONCURRENCY)

        async def one(kind: BindingKind, binding: Obj, change: progress.Change) -> Obj | None:
            async with limit:
                return await self._write(kind, binding, change)

        outcomes = await asyncio.gather(*(one(*write) for write in writes), return_exceptions=True)
        if then is not None:
            then([outcome for outcome in outcomes if outcome is not None and not isinstance(outcome, BaseException)])
        written: list[Obj | None] = []
        for outcome in outcomes:  # all ended: the first failure fails the reconcile (retried with backoff)
            if isinstance(outcome, BaseException):
                raise outcome
            written.append(outcome)
        return written

    async def _annotate(self, cluster: Obj, annotations: dict[str, str | None]) -> Obj:
        """Merge-patch the Cluster's annotations of ours (only those that differ); the Cluster as it is now."""
        current = objects.annotations(cluster)
        change = {k: v for k, v in annotations.items() if current.get(k) != v}
        if not change:
            return cluster
        written: Obj = await self.client.patch(CLUSTERS, objects.name(cluster), {"metadata": {"annotations": change}},
                                               content_type=MERGE_PATCH)
        return self.clusters.mutated(written)


