"""workload-rebalancer: trigger a fresh rescheduling of each listed workload's binding.

Karmada's algorithm (``pkg/controllers/workloadrebalancer/workloadrebalancer_controller.go`` at
commit f8fdd02): sync ``spec.workloads`` into a sorted ``status.observedWorkloads`` (new items
added without a result, removed ones kept only if they had succeeded), then for each item
without a result set ``spec.rescheduleTriggeredAt`` on its ResourceBinding (namespaced workload)
or ClusterResourceBinding (cluster-scoped). A missing binding is
``Failed/ReferencedBindingNotFound`` (final); any other error leaves the item without a result
and the rebalancer is retried with backoff. ``finishTime`` is set when the status changed and
nothing needs a retry. TTL deletion is the ttl-cleaner's job.

Beyond Karmada (docs/compatibility.md):
- the trigger is the rebalancer's ``creationTimestamp`` only when that is strictly later than
  the binding's ``status.lastScheduledTime``; otherwise the first whole second strictly later
  than both ``lastScheduledTime`` and now, so the scheduler never ignores the trigger; such a
  trigger is written once its second has come (under a second's wait), or the scheduler,
  stamping ``lastScheduledTime`` with its current second, would leave it pending;
- a binding missing from the cache is confirmed with a live GET before the item is failed;
- an Event on the rebalancer for each workload result, and the
  ``workload_rebalancer_workloads_total{result}`` counter;
- preserve mode (karmada-io/karmada#7662, :mod:`controllers.preserve`): a rebalancer that asks for it
  lowers each binding's ``spec.clusters`` by the replicas confirmed unschedulable instead of triggering
  a fresh reschedule, and fails closed whenever that cannot be judged;
- each binding write carries a mark naming the rebalancer (:mod:`controllers.writemark`), so a retry, even
  after a restart, knows its own write and never reschedules (or lowers) a workload twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

import structlog
from prometheus_client import Counter

from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.events import RBAC_RULES as EVENT_RULES
from controller_manager.manager import Manager
from controller_manager.mutationcache import MutationCache
from controller_manager.objects import Obj
from controller_manager.predicate import FuncPredicate
from controller_manager.rbac import PolicyRule, for_resources, informer_rules
from controller_manager.reconcile import Request, Result
from controller_manager.resource import InvalidName, Resource
from karmada_api.bindings import spec_update
from karmada_api.names import binding_name
from karmada_api.resources import CLUSTER_RESOURCE_BINDINGS, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from karmada_api.shapes import (
    ObservedWorkload,
    RebalancerStatus,
    Workload,
    binding_spec,
    binding_status,
    rebalancer_status,
)
from kube_api.timeutil import format_time, now, parse_time
from sharedcli.flagtypes import format_duration

from . import preserve, writemark
from .preserve import Lowering, PreserveOptions, Refusal
from .rebalancerstatus import (
    FAILED,
    SUCCESSFUL,
    Decided,
    decided,
    describe,
    results,
    status_view,
    summary_message,
    sync_spec_to_status,
)

log = structlog.get_logger(__name__)

NAME = "workload-rebalancer"
BINDING_NOT_FOUND = "ReferencedBindingNotFound"
RESCHEDULE_TRIGGERED = "RescheduleTriggered"
PRESERVED = "AvailableReplicasPreserved"
NOTHING_TO_MOVE = "NothingToMove"
CONFLICT_ATTEMPTS = 5  # a preserve write that meets a newer binding decides again on a fresh read, this often

WORKLOADS_TOTAL = Counter("workload_rebalancer_workloads_total",
                          "Workloads processed by the workload-rebalancer, by result (Successful, Failed, Retry).",
                          ["result"])


class RetryNeeded(Exception):
    """Some workloads could not be triggered for a transient reason: retry the rebalancer with backoff."""


TRIGGER_CONCURRENCY = 5
"""Bindings of one rebalancer written at once, so that a rebalancer of many workloads is not a chain of
round trips (with 5 workers, up to 25 writes in flight)."""

MAX_TRIGGER_WAIT = 2.0
"""Longest wait, inside a reconcile, for a trigger's second to come; further away is re-checked later."""


def trigger_time(rebalancer_created: datetime, last_scheduled: datetime | None, current: datetime) -> datetime:
    """The rescheduleTriggeredAt to write: creationTimestamp, unless the scheduler would ignore it."""
    if last_scheduled is None or rebalancer_created > last_scheduled:
        return rebalancer_created
    floor = max(last_scheduled, current).replace(microsecond=0)
    return floor + timedelta(seconds=1)


def already_triggered(existing: datetime, last_scheduled: datetime | None, created: datetime, trigger: datetime, *,
                      first_generation: bool, own: str | None) -> bool:
    """Whether the binding's ``existing`` rescheduleTriggeredAt already answers the rebalancer: nothing to write.

    A trigger at least as new as the one to write (never overwrite it). Otherwise only one at or after the
    rebalancer's creation can: still pending (the scheduler will reschedule afresh); or the one this controller
    wrote for this rebalancer, ``own`` (:mod:`controllers.writemark`; a retry after a lost answer, a failed status
    write or a restart: writing another once the scheduler consumed it would reschedule the workload a second
    time); or, for a rebalancer never edited, any (Karmada's rule: every workload was in it at its creation). A
    consumed one of someone else's does not answer a workload added to the rebalancer since: that one gets a trigger
    of its own (:func:`trigger_time`).
    """
    if existing >= trigger:
        return True
    if existing < created:
        return False
    pending = last_scheduled is None or existing > last_scheduled
    return pending or first_generation or (own is not None and existing >= parse_time(own))


class TriggerNotDue(Exception):
    """The trigger to write is a second still to come: write it then (``delay`` seconds from now)."""

    def __init__(self, delay: float) -> None:
        super().__init__(f"trigger due in {delay:.3f}s")
        self.delay = delay


Outcome = Exception | Lowering | Refusal | None
"""What one workload's action ended with: an error, a preserve decision, or None (a trigger written)."""
T = TypeVar("T")


@dataclass
class _Unrecorded:
    """What a reconcile decided, and would record, when its status write failed: the write may have been stored
    with its answer lost. The retry records it if the stored status shows it (:meth:`_settle_unrecorded`)."""

    uid: str
    decided: Decided
    events: list[tuple[str, str, str]]
    finals: list[str]


def _shows(rebalancer: Obj, unrecorded: _Unrecorded) -> bool:
    """The rebalancer (the same object) has stored exactly the results that reconcile decided."""
    if objects.uid(rebalancer) != unrecorded.uid:
        return False
    stored = results(rebalancer_status(rebalancer))
    return all(stored.get(key) == result for key, result in unrecorded.decided.items())


class WorkloadRebalancerReconciler:
    """One rebalancer per reconcile; bindings read from shared informer caches."""

    def __init__(self, client: KubeClient, rebalancers: MutationCache, bindings: Indexer,
                 cluster_bindings: Indexer, events: EventRecorder, *,
                 preserve_options: PreserveOptions | None = None) -> None:
        self.client = client
        self.rebalancers = rebalancers
        """With our own status writes: the retry after a partial success starts from the results it stored,
        not from an older copy that would trigger (and report) the succeeded workloads again."""
        self.bindings = bindings
        self.cluster_bindings = cluster_bindings
        self.events = events
        self.preserve = preserve_options or PreserveOptions()
        self._first_retry: dict[str, tuple[str, int, datetime]] = {}
        """Per rebalancer name: (uid, generation, this process's clock) when it first looked at that generation,
        the earliest a retry bound may start (:meth:`_retries_expired`); dropped once nothing is left to retry."""
        self._unrecorded: dict[str, _Unrecorded] = {}
        """Per rebalancer name: the Events and results of a reconcile whose status write failed, until the next."""

    async def reconcile(self, request: Request) -> Result:
        rebalancer = self.rebalancers.get(request.name)
        if rebalancer is None or objects.is_deleting(rebalancer):
            self._first_retry.pop(request.name, None)
            self._unrecorded.pop(request.name, None)
            return Result()
        rebalancer = await self._settle_unrecorded(rebalancer)
        if rebalancer is None:  # gone since: nothing left to record or to do
            return Result()
        status = sync_spec_to_status(rebalancer)
        events: list[tuple[str, str, str]] = []
        finals: list[str] = []
        retries, due_in = await self._trigger(rebalancer, status, events, finals)
        old = status_view(rebalancer_status(rebalancer))
        if old["finishTime"]:
            status["finishTime"] = old["finishTime"]
        if status_view(status) != old:
            if retries == 0 and due_in == 0:
                status["finishTime"] = format_time(now())
            try:
                await self._write_status(request.name, status)
            except Exception:
                self._unrecorded[request.name] = _Unrecorded(objects.uid(rebalancer), decided(rebalancer, status),
                                                             events, finals)
                raise
        # Only once the results are stored: a status write that fails is retried, and the retry finds the
        # same results again; recording them before would write each Event, and count each result, twice.
        self._record(rebalancer, events, finals)
        if retries == 0 and due_in == 0:
            self._first_retry.pop(request.name, None)  # nothing left to retry: no later reconcile may come
        if retries:
            raise RetryNeeded(f"{retries} resource reschedule triggered failed and need retry")
        return Result(requeue_after=due_in) if due_in else Result()

    def _record(self, rebalancer: Obj, events: list[tuple[str, str, str]], finals: list[str]) -> None:
        for event_type, reason, message in events:
            self.events.event(rebalancer, event_type, reason, message)
        for result in finals:
            WORKLOADS_TOTAL.labels(result).inc()

    async def _settle_unrecorded(self, rebalancer: Obj) -> Obj | None:
        """Before deciding anything: record what the last reconcile decided but could not store, if its status
        write was stored after all (the answer lost). This retry would find those workloads done and record
        nothing. The cached status may not show that write yet (the watch broken by the same restart), so the
        rebalancer is then read afresh; the decision stands on that read, and so does this reconcile. A read that
        fails keeps the record for the next retry. Returns the rebalancer to reconcile (None: it is gone)."""
        name = objects.name(rebalancer)
        unrecorded = self._unrecorded.get(name)
        if unrecorded is None or not unrecorded.decided or unrecorded.uid != objects.uid(rebalancer):
            self._unrecorded.pop(name, None)  # nothing to record, or another rebalancer of that name
            return rebalancer
        if not _shows(rebalancer, unrecorded):
            fresh = await self.client.get_or_none(WORKLOAD_REBALANCERS, name)
            if fresh is None or objects.is_deleting(fresh):
                del self._unrecorded[name]
                return None
            self.rebalancers.mutated(fresh)
            rebalancer = self.rebalancers.get(name) or fresh
        del self._unrecorded[name]
        if _shows(rebalancer, unrecorded):
            log.info("status write stored although its answer was lost: its events recorded now",
                     rebalancer=name, workloads=len(unrecorded.decided))
            self._record(rebalancer, unrecorded.events, unrecorded.finals)
        # otherwise it was not stored: this reconcile decides those workloads again, and records them once stored
        return rebalancer

    async def _trigger(self, rebalancer: Obj, status: RebalancerStatus, events: list[tuple[str, str, str]],
                       finals: list[str]) -> tuple[int, float]:
        """Act on every item without a result: (items to retry, seconds until a not-yet-due trigger).

        A fresh reschedule is triggered, or, when the rebalancer asks for preserve mode, the binding lowered.
        ``events`` gets the Events (type, reason, message) to record once the results are stored: a Warning for
        each workload that failed, then one for all the workloads triggered (or lowered, or left as they were);
        ``finals`` each final result, to count once they are stored.

        The bindings are written concurrently (``_run_all``): each item is independent. The results,
        Events and metrics are then taken in the items' (sorted) order, as if written one after the other.
        """
        retries, due_in = 0, 0.0
        done: dict[str, list[str]] = {RESCHEDULE_TRIGGERED: [], PRESERVED: [], NOTHING_TO_MOVE: []}
        items = status.get("observedWorkloads") or []
        pending = [item for item in items if item.get("result") not in (SUCCESSFUL, FAILED)]
        workloads = [item.get("workload") or {} for item in pending]
        mode = preserve.requested(rebalancer)
        outcomes: Sequence[Outcome]
        if mode is False:
            outcomes = await _run_all(workloads, lambda w: self._trigger_one(w, rebalancer))
        else:
            outcomes = await _run_all(workloads, lambda w: self._preserve_one(w, mode, objects.uid(rebalancer)))
        expired = await self._retries_expired(rebalancer, outcomes)
        if expired:  # a transient refusal about to become final is judged again on a fresh read first
            outcomes = await self._confirm_fresh(workloads, outcomes, mode, objects.uid(rebalancer))
        for item, outcome in zip(pending, outcomes, strict=True):
            workload = item["workload"]
            if isinstance(outcome, TriggerNotDue):
                due_in = max(due_in, outcome.delay)
            elif (isinstance(outcome, ApiError) and outcome.is_not_found) or isinstance(outcome, InvalidName):
                # InvalidName: a workload name or namespace no binding can have ("/" or "%" in it)
                self._fail(item, Refusal(BINDING_NOT_FOUND, _missing_binding(workload)), events, finals,
                           reason_only=True)
            elif isinstance(outcome, ApiError) or (isinstance(outcome, Refusal) and outcome.transient
                                                   and (not expired or not outcome.bounded)):
                retries += 1
                WORKLOADS_TOTAL.labels("Retry").inc()
                _log_retry(rebalancer, workload, outcome)
            elif isinstance(outcome, Exception):
                raise outcome
            elif isinstance(outcome, Refusal):
                self._fail(item, self._final(outcome), events, finals)
            else:
                item["result"] = SUCCESSFUL
                finals.append(SUCCESSFUL)
                done[_success_kind(outcome)].append(describe(workload) + _moved_text(outcome))
        threshold = format_duration(self.preserve.threshold.total_seconds())
        for reason, what in ((RESCHEDULE_TRIGGERED, "rescheduling triggered"),
                             (PRESERVED, "unschedulable replicas released, the available ones kept,"),
                             (NOTHING_TO_MOVE, f"nothing had to move, no replica unschedulable for longer than "
                                               f"{threshold},")):
            if done[reason]:
                events.append((NORMAL, reason, summary_message(what, done[reason])))
        return retries, due_in

    def _final(self, refusal: Refusal) -> Refusal:
        """A refusal as a workload's final reason: a transient one says it outlasted the retry timeout."""
        if not refusal.transient:
            return refusal
        bound = format_duration(self.preserve.retry_timeout.total_seconds())
        return Refusal(refusal.reason, f"{refusal.detail} (for longer than the retry timeout, {bound})")

    def _fail(self, item: ObservedWorkload, refusal: Refusal, events: list[tuple[str, str, str]],
              finals: list[str], *, reason_only: bool = False) -> None:
        """Mark the item Failed (final) with the refusal as its reason, and a Warning Event saying why."""
        item["result"], item["reason"] = FAILED, refusal.reason if reason_only else str(refusal)
        finals.append(FAILED)
        events.append((WARNING, refusal.reason, f"{describe(item['workload'])}: {refusal.detail}"))

    async def _binding(self, workload: Workload, *, fresh: bool = False) -> tuple[Resource, Obj]:
        """The workload's binding, from the cache, else (or ``fresh``) from the API server (an ApiError 404 when
        missing)."""
        namespace, name = _binding_of(workload)
        resource: Resource = RESOURCE_BINDINGS if namespace else CLUSTER_RESOURCE_BINDINGS
        cache = self.bindings if namespace else self.cluster_bindings
        binding = None if fresh else cache.get(objects.join_key(namespace, name))
        if binding is None:  # not cached (yet): ask the API server before declaring it missing
            binding = await self.client.get(resource, name, namespace)
        return resource, binding

    async def _trigger_one(self, workload: Workload, rebalancer: Obj) -> Lowering | None:
        """Trigger a fresh reschedule of the workload's binding (None), unless the rebalancer's own write is there
        already: its trigger (None), or a lowering it made in preserve mode before the mode was switched off (that
        lowering, the workload's result).

        Decided on the cache's copy; a conflict (the binding changed since that copy, as when cluster fail-back
        marks its batch's bindings in flight right after creating the batch) is decided once more at once, on a
        fresh read, instead of after the controller's backoff."""
        try:
            return await self._trigger_from(workload, rebalancer, fresh=False)
        except ApiError as exc:
            if not exc.is_conflict:
                raise
        return await self._trigger_from(workload, rebalancer, fresh=True)

    async def _trigger_from(self, workload: Workload, rebalancer: Obj, *, fresh: bool) -> Lowering | None:
        """:meth:`_trigger_one` on the cache's copy of the binding, or on the API server's (``fresh``)."""
        resource, binding = await self._binding(workload, fresh=fresh)
        created = parse_time(objects.creation_timestamp(rebalancer))
        last_text = binding_status(binding).get("lastScheduledTime")
        last = parse_time(last_text) if last_text else None
        current = now()
        trigger = trigger_time(created, last, current)
        existing = binding_spec(binding).get("rescheduleTriggeredAt")
        uid = objects.uid(rebalancer)
        mark = writemark.read(binding, uid)
        if mark is not None and not mark.is_trigger:
            return _outcome_of(mark, binding)
        if existing and already_triggered(parse_time(existing), last, created, trigger,
                                          first_generation=objects.generation(rebalancer) <= 1,
                                          own=mark.trigger if mark else None):
            return None
        if trigger > current:
            # The scheduler stamps lastScheduledTime with its current second: a trigger from the
            # future would still be pending after the schedule it causes. Write it once it has come.
            delay = (trigger - current).total_seconds()
            if delay > MAX_TRIGGER_WAIT:  # lastScheduledTime ahead of our clock: look again later
                raise TriggerNotDue(MAX_TRIGGER_WAIT)
            await asyncio.sleep(delay)
        written = format_time(trigger)
        update = spec_update(binding, {**binding_spec(binding), "rescheduleTriggeredAt": written})
        await self.client.update_unread(resource, writemark.stamped(update, writemark.WriteMark(uid, trigger=written)))
        return None

    async def _confirm_fresh(self, workloads: list[Workload], outcomes: Sequence[Outcome],
                             mode: bool | Refusal, rebalancer_uid: str) -> list[Outcome]:
        """``outcomes`` with each transient refusal decided again on a fresh read of its binding.

        Called once the retry bound has passed, just before those refusals become ``Failed``: the informer's
        copy may be behind a cause that has already passed (scheduling done, an eviction finished).
        """
        again = [i for i, o in enumerate(outcomes) if _bounded_transient(o)]
        fresh = await _run_all([workloads[i] for i in again],
                               lambda w: self._preserve_one(w, mode, rebalancer_uid, fresh=True))
        confirmed = list(outcomes)
        for index, outcome in zip(again, fresh, strict=True):
            confirmed[index] = outcome
        return confirmed

    async def _preserve_one(self, workload: Workload, mode: bool | Refusal, rebalancer_uid: str, *,
                            fresh: bool = False) -> Lowering | Refusal | None:
        """Preserve mode for one workload: the binding lowered (conditional on its resourceVersion), or why not.

        A final answer that writes nothing (a permanent refusal, nothing to move) judged on the cached binding is
        confirmed on a fresh read: the cache may be behind a user's edit, or behind this rebalancer's own lowering
        whose answer was lost (its mark then says so); a write that meets a newer binding (409) decides again on a
        fresh read. ``fresh``: read the binding from the API server from the start. A binding that carries the mark
        of a write for this rebalancer (its answer lost, the status write failed, or a restart since) is done: never
        lowered twice; a trigger it wrote before preserve mode was asked for (None) is the workload's result,
        whatever the mode's state now (an annotation edited to a bad value, the mode switched off in this process).
        The write is conditional on the binding's resourceVersion, so a retry that read a copy from before its own
        write meets a 409 and reads the binding again, mark included.
        """
        refused: Refusal | None = None
        if isinstance(mode, Refusal):
            refused = mode
        elif self.preserve.estimate is None:
            refused = preserve.disabled()
        try:
            resource, binding = await self._binding(workload, fresh=fresh)
        except ApiError as exc:
            if refused is not None and exc.is_not_found:  # no binding to hold a mark: the refusal is the answer
                return refused
            raise
        for attempt in range(CONFLICT_ATTEMPTS):
            mark = writemark.read(binding, rebalancer_uid)
            if mark is not None:
                return _outcome_of(mark, binding)
            if refused is not None:
                return refused
            outcome = await self._decide(binding)
            if isinstance(outcome, Lowering) and outcome.moved:
                update = writemark.stamped(outcome.apply(binding), writemark.WriteMark(rebalancer_uid,
                                                                                       lowered=outcome.moved))
                try:
                    await self.client.update_unread(resource, update)
                except ApiError as exc:
                    if not exc.met_newer_object or attempt == CONFLICT_ATTEMPTS - 1:
                        raise
                else:
                    return outcome
            elif attempt or fresh or (isinstance(outcome, Refusal) and outcome.transient):
                return outcome
            read = await self.client.get(resource, objects.name(binding), objects.namespace(binding))
            wrote = isinstance(outcome, Lowering) and outcome.moved
            if not wrote and objects.resource_version(read) == objects.resource_version(binding):
                return outcome  # a final answer judged on the cache, and the cache was current
            binding = read
        raise AssertionError("unreachable")

    async def _decide(self, binding: Obj) -> Lowering | Refusal:
        refused = preserve.refusal(binding, self.preserve.gvks)
        if refused is not None:
            return refused
        assert self.preserve.estimate is not None
        clusters = preserve.clusters_to_ask(binding)
        resource = binding_spec(binding).get("resource") or {}
        try:
            answers = await self.preserve.estimate(clusters, resource, self.preserve.threshold) if clusters else {}
        except Exception as exc:  # an estimator that cannot answer judges nothing: retried, never guessed
            return Refusal(preserve.ESTIMATOR_UNAVAILABLE, f"the estimator failed: {exc}", transient=True)
        unjudged = preserve.unjudged(binding, answers)
        starting = self.preserve.still_starting
        return preserve.lower(binding, answers, starting(unjudged, resource) if unjudged and starting else ())

    async def _retries_expired(self, rebalancer: Obj, outcomes: Sequence[Outcome]) -> bool:
        """Whether transient refusals have been retried for longer than the retry timeout (False: none to judge).

        Measured from the latest of :func:`preserve.retry_started`, this process's start (its member caches start
        empty) and the moment this process first looked at this generation: ``creationTimestamp`` is the API
        server's clock, and a controller whose clock runs ahead would otherwise find the bound spent at its first
        look. A later generation without a mark gets one now, so the bound survives a restart.
        """
        name = objects.name(rebalancer)
        seen = (objects.uid(rebalancer), objects.generation(rebalancer))
        first = self._first_retry.get(name)
        if first is None or first[:2] != seen:  # kept across reconciles without one: the bound is never put off
            first = self._first_retry[name] = (*seen, now())
        if not any(_bounded_transient(o) for o in outcomes):
            return False
        started = preserve.retry_started(rebalancer)
        if started is None:
            mark = {preserve.RETRY_SINCE_ANNOTATION: preserve.retry_since_value(rebalancer, now())}
            self.rebalancers.mutated(await self.client.patch(WORKLOAD_REBALANCERS, objects.name(rebalancer),
                                                             {"metadata": {"annotations": mark}}))
            return False
        return now() - max(started, self.preserve.started, first[2]) >= self.preserve.retry_timeout

    async def _write_status(self, name: str, status: RebalancerStatus) -> None:
        async def patch() -> None:
            self.rebalancers.mutated(await self.client.patch_status(WORKLOAD_REBALANCERS, name, {"status": status}))

        await retry_on_conflict(patch)


def _bounded_transient(outcome: Outcome) -> bool:
    """A refusal retried until the retry timeout, then Failed (not one that ends by itself, a first list)."""
    return isinstance(outcome, Refusal) and outcome.transient and outcome.bounded


async def _run_all(workloads: list[Workload], action: Callable[[Workload], Awaitable[T]]) -> list[T | Exception]:
    """``action`` for each workload, concurrently; what each returned or raised.

    At most ``TRIGGER_CONCURRENCY`` tasks, each taking the next workload when done with one: a
    few tasks per reconcile however many workloads. asyncio tasks: an anyio task cost 10-20 µs of CPU to
    start, an asyncio one about 4 µs.
    """
    outcomes: list[T | Exception] = [None] * len(workloads)  # type: ignore[list-item]  # each slot is set below
    queue = iter(enumerate(workloads))

    async def run_next() -> None:
        for index, workload in queue:
            try:
                outcomes[index] = await action(workload)
            except Exception as exc:  # handed back to the caller, which decides
                outcomes[index] = exc

    async with asyncio.TaskGroup() as group:
        for _ in range(min(len(workloads), TRIGGER_CONCURRENCY)):
            group.create_task(run_next())
    return outcomes


def _log_retry(rebalancer: Obj, workload: Workload, outcome: ApiError | Refusal) -> None:
    if isinstance(outcome, Refusal):
        log.info("preserve mode cannot judge the workload yet, will retry", rebalancer=objects.name(rebalancer),
                 workload=describe(workload), reason=str(outcome))
        return
    # A 403 will not heal by itself: say so loudly, with the API server's own message.
    report = log.warning if outcome.is_forbidden else log.info
    report("reschedule trigger failed, will retry", rebalancer=objects.name(rebalancer),
           workload=describe(workload), error=outcome.message, status=outcome.status)


def _outcome_of(mark: writemark.WriteMark, binding: Obj) -> Lowering | None:
    """The workload's outcome that a rebalancer's own write found on its binding stands for: None for a trigger
    (reported RescheduleTriggered), the lowering for a lowering (AvailableReplicasPreserved)."""
    if mark.is_trigger:
        return None
    return Lowering(binding_spec(binding).get("clusters") or [], mark.lowered)


def _binding_of(workload: Workload) -> tuple[str, str]:
    """The namespace ("" for a ClusterResourceBinding) and name of the workload's binding."""
    return (str(workload.get("namespace") or ""),
            binding_name(str(workload.get("kind", "")), str(workload.get("name", ""))))


def _missing_binding(workload: Workload) -> str:
    """The Event's text for a workload without a binding: which binding was looked for, and what to check."""
    namespace, name = _binding_of(workload)
    kind = "ResourceBinding" if namespace else "ClusterResourceBinding"
    return (f"its binding was not found ({kind} {objects.join_key(namespace, name)}): check the workload's kind, "
            "name and namespace, and that a propagation policy propagates it")


def _success_kind(outcome: Lowering | None) -> str:
    """The Event reason a successful workload is reported under."""
    if outcome is None:
        return RESCHEDULE_TRIGGERED
    return PRESERVED if outcome.moved else NOTHING_TO_MOVE


def _moved_text(outcome: Lowering | None) -> str:
    if outcome is None or not outcome.moved:
        return ""
    return " (" + ", ".join(f"{cluster} -{count}" for cluster, count in outcome.moved.items()) + ")"


def _spec_changed(old: Obj, new: Obj) -> bool:
    return bool(old.get("spec") != new.get("spec"))


RBAC_RULES: list[PolicyRule] = [
    # setup(): informers on rebalancers and both binding kinds
    *informer_rules(WORKLOAD_REBALANCERS, RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS),
    # _binding(): a live GET of a binding missing from the cache; _trigger_one(): a PUT of
    # spec.rescheduleTriggeredAt; _preserve_one(): a PUT of spec.clusters
    *for_resources((RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS), ("get", "update")),
    # _write_status(): a merge patch of the status subresource
    *for_resources((WORKLOAD_REBALANCERS,), "patch", subresource="status"),
    # _retries_expired(): a merge patch of preserve mode's retry-since annotation
    *for_resources((WORKLOAD_REBALANCERS,), "patch"),
    *EVENT_RULES,  # an Event per workload result
]
"""The permissions this controller needs on the Karmada API server (see controller_manager.rbac)."""


def setup(manager: Manager, *, workers: int = 1, preserve_options: PreserveOptions | None = None,
          **controller_options: Any) -> Controller:
    """Register the controller: watches rebalancers (create, spec change); reads bindings from caches.

    ``preserve_options`` without an ``estimate`` (the default) leaves preserve mode off: each workload of a
    rebalancer asking for it fails closed.
    """
    rebalancers = manager.informer(WORKLOAD_REBALANCERS)
    bindings = manager.informer(RESOURCE_BINDINGS)
    cluster_bindings = manager.informer(CLUSTER_RESOURCE_BINDINGS)
    reconciler = WorkloadRebalancerReconciler(manager.client, rebalancers.mutation_cache(), bindings.store,
                                              cluster_bindings.store, manager.event_recorder(NAME),
                                              preserve_options=preserve_options)
    controller = Controller(NAME, reconciler, workers=workers, **controller_options)
    controller.watches(rebalancers, predicates=[FuncPredicate(on_update=_spec_changed,
                                                              on_delete=lambda _obj: False)])
    controller.wait_for_caches(bindings, cluster_bindings)
    manager.add_controller(controller)
    return controller
