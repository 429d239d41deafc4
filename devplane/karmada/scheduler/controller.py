"""The simulated karmada-scheduler: bindings in, ``spec.clusters`` and the ``Scheduled`` condition out.

One controller, one worker and one queue for ResourceBindings and ClusterResourceBindings,
as Karmada's scheduler has (an RB key has a namespace, a CRB key has none):

* intake (``pkg/scheduler/event_handler.go``): a binding that carries a policy/managed-by
  label, names this scheduler and is not suspended; creates, and updates that change
  ``metadata.generation`` (or make the binding visible). A Cluster whose labels or generation
  change, or that starts terminating, re-enqueues the bindings its old or new self may
  concern. Status writes never re-enqueue anything.
* ``doSchedule`` (``pkg/scheduler/scheduler.go``): schedule when the placement changed, the
  replicas changed, a manual reschedule is pending, the workload is Duplicated or not a
  workload, or a target cluster is being deleted; otherwise only catch
  ``schedulerObservedGeneration`` up.
* one scheduling (``scheduleResourceBinding``): the algorithm (each ``clusterAffinities`` term
  in turn when there are terms), a merge patch of ``spec.clusters`` + the applied-placement
  annotation when they differ (a FitError clears ``spec.clusters``), events on the binding and
  on its template, then the ``Scheduled`` condition, ``schedulerObservedGeneration`` and
  ``lastScheduledTime``.

The binding is read from the API server at the start of each reconcile (not the cache), so a
status written by the previous reconcile is always seen: a consumed ``rescheduleTriggeredAt``
is never mistaken for a pending one.

With ``overcommit_protection`` (``--feature-gates=SchedulingOvercommitProtection=true``; off by default, as in
Karmada) a ResourceBinding's patched schedule is assumed in flight until the binding turns Healthy there, goes
away or five minutes pass (``assumptions.py``), and the estimators deduct it (``overcommit.py``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from prometheus_client import Counter, Histogram

from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.informer import FuncHandler
from controller_manager.manager import Manager
from controller_manager.objects import MutableObj, Obj
from controller_manager.predicate import FuncPredicate
from controller_manager.ratelimiter import ItemExponentialFailureRateLimiter
from controller_manager.reconcile import Request, Result, TerminalError
from karmada_api.bindings import CRB_KIND, RB_KIND, SCHEDULED_CONDITION, BindingKind
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION, BINDING_MANAGED_BY, CPP_PERMANENT_ID, PP_PERMANENT_ID
from karmada_api.placement import (
    DUPLICATED,
    applied_placement_text,
    cluster_matches,
    is_binding_replicas_changed,
    is_workload,
    placement_changed,
    placement_json,
    replica_scheduling,
    replica_scheduling_type,
    reschedule_required,
)
from karmada_api.resources import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, RESOURCE_BINDINGS
from karmada_api.shapes import BindingSpec, ClusterAffinity, binding_spec
from kube_api.conditions import set_condition
from kube_api.timeutil import now_text

from ...runtime import error_text
from ..events import template_reference
from .algorithm import Algorithm, AvailableReplicas
from .assumptions import AssumptionCache, record_schedule, release_healthy
from .division import (
    AggregateError,
    SchedulingError,
    UnschedulableError,
    aggregate,
    assignment_of,
    find_error,
)
from .filters import FitError, affinity_index

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "karmada-scheduler"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
SCHEDULER_LABELS = (PP_PERMANENT_ID, CPP_PERMANENT_ID, BINDING_MANAGED_BY)

SCHEDULED = SCHEDULED_CONDITION
REASON_SUCCESS = "Success"
REASON_SCHEDULER_ERROR = "SchedulerError"
REASON_NO_CLUSTER_FIT = "NoClusterFit"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_QUOTA_EXCEEDED = "QuotaExceeded"
SUCCESS_MESSAGE = "Binding has been scheduled successfully."
EVENT_SCHEDULE_SUCCEED = "ScheduleBindingSucceed"
EVENT_SCHEDULE_FAILED = "ScheduleBindingFailed"

RECONCILE_SCHEDULE = "ReconcileSchedule"
SCALE_SCHEDULE = "ScaleSchedule"

BACKOFF_INITIAL = 1.0
BACKOFF_MAX = 10.0
"""The scheduling queue's backoff for failed attempts (Karmada's priority queue: 1 s doubling to 10 s)."""

SCHEDULE_ATTEMPTS = Counter("karmada_scheduler_schedule_attempts_total",
                            "Number of attempts to schedule a binding.", ["result", "schedule_type"])
E2E_DURATION = Histogram("karmada_scheduler_e2e_scheduling_duration_seconds",
                         "E2E scheduling latency in seconds.", ["result", "schedule_type"],
                         buckets=[0.001 * 2**i for i in range(15)])


# ----------------------------------------------------------------------------- pure rules


def schedulable(binding: Obj, scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> bool:
    """The intake's event filter: this scheduler's, not suspended, and labelled by a policy or a manager."""
    spec = binding_spec(binding)
    if (spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME) != scheduler_name:
        return False
    if (spec.get("suspension") or {}).get("scheduling") is True:
        return False
    labels = objects.labels(binding)
    return any(labels.get(key) for key in SCHEDULER_LABELS)


def binding_predicate(scheduler_name: str) -> FuncPredicate:
    """Creates of visible bindings; updates that change the generation or make a binding visible."""

    def on_update(old: Obj, new: Obj) -> bool:
        if not schedulable(new, scheduler_name):
            return False
        return not schedulable(old, scheduler_name) or objects.generation(old) != objects.generation(new)

    return FuncPredicate(on_create=lambda obj: schedulable(obj, scheduler_name), on_update=on_update,
                         on_delete=lambda _obj: False)


def cluster_changed(old: Obj, new: Obj) -> bool:
    """Labels or spec (generation) changed, or the cluster started terminating; status never counts."""
    if objects.labels(old) != objects.labels(new):
        return True
    if objects.generation(old) != objects.generation(new):
        return True
    return objects.is_deleting(new) and not objects.is_deleting(old)


CLUSTER_PREDICATE = FuncPredicate(on_create=lambda _obj: False, on_update=cluster_changed,
                                  on_delete=lambda _obj: False)


def affected_by_cluster(binding: Obj, cluster: Obj) -> bool:
    """``enqueueAffectedBindings``: the binding's current affinity matches the cluster (or there is none)."""
    placement = binding_spec(binding).get("placement")
    if placement is None:
        return False
    terms = placement.get("clusterAffinities")
    if terms:
        status = objects.status(binding)
        if int(status.get("schedulerObservedGeneration") or 0) != objects.generation(binding):
            return True  # maybe still queued, or its status not seen yet: do not miss the change
        observed = status.get("schedulerObservingAffinityName") or ""
        affinity: ClusterAffinity | None = terms[affinity_index(terms, observed)]
    else:
        affinity = placement.get("clusterAffinity")
    return affinity is None or cluster_matches(cluster, affinity)


def schedule_type(binding: Obj, cluster_deleting: Callable[[str], bool]) -> str | None:
    """``doSchedule``'s decision tree: why to schedule (the metric's schedule type), or None when nothing is needed."""
    spec, status = binding_spec(binding), objects.status(binding)
    placement = spec.get("placement") or {}
    observed = str(status.get("schedulerObservingAffinityName") or "")
    if placement_changed(placement, applied_placement_text(binding), observed):
        return RECONCILE_SCHEDULE
    if is_binding_replicas_changed(spec, replica_scheduling(placement)):
        return SCALE_SCHEDULE
    if reschedule_required(spec.get("rescheduleTriggeredAt"), status.get("lastScheduledTime")):
        return RECONCILE_SCHEDULE
    if not is_workload(spec) or replica_scheduling_type(placement) == DUPLICATED:
        return RECONCILE_SCHEDULE
    if any(cluster_deleting(str(c.get("name") or "")) for c in spec.get("clusters") or []):
        return RECONCILE_SCHEDULE
    return None


def _condition(status: str, reason: str, message: str) -> dict[str, Any]:
    """``util.NewCondition``: no observedGeneration."""
    return {"type": SCHEDULED, "status": status, "reason": reason, "message": message}


def condition_for(err: BaseException | None) -> tuple[dict[str, Any], bool]:
    """``getConditionByError``: the Scheduled condition for a result, and whether not to retry."""
    if err is None:
        return _condition("True", REASON_SUCCESS, SUCCESS_MESSAGE), True
    text = error_text(err)
    if find_error(err, UnschedulableError) is not None:
        return _condition("False", REASON_UNSCHEDULABLE, text), False
    if find_error(err, FitError) is not None:
        return _condition("False", REASON_NO_CLUSTER_FIT, text), True
    if isinstance(err, AggregateError):
        for member in err.errors:
            if find_error(member, FitError) is not None:
                return _condition("False", REASON_NO_CLUSTER_FIT, text), False
            if isinstance(member, ApiError) and member.status == 403 and member.reason == REASON_QUOTA_EXCEEDED:
                return _condition("False", REASON_QUOTA_EXCEEDED, error_text(member)), False
    return _condition("False", REASON_SCHEDULER_ERROR, text), False


def scheduled_status(status: Obj, condition: Mapping[str, Any], generation: int, now: str,
                     affinity_name: str | None = None) -> dict[str, Any]:
    """The binding status after a scheduling attempt (``patchBindingStatusCondition``)."""
    result = dict(status)
    result["conditions"] = set_condition(list(status.get("conditions") or []), dict(condition))
    if condition.get("status") == "True":
        result["schedulerObservedGeneration"] = generation
        result["lastScheduledTime"] = now
    if affinity_name is not None:
        if affinity_name:
            result["schedulerObservingAffinityName"] = affinity_name
        else:
            result.pop("schedulerObservingAffinityName", None)
    return result


def status_merge_patch(old: Obj, new: Obj) -> dict[str, Any]:
    """Top-level status fields that differ (removed ones as null): a JSON merge patch of ``status``."""
    return {key: new.get(key) for key in {*old, *new} if old.get(key) != new.get(key)}


def result_message(clusters: Sequence[Mapping[str, Any]] | None, *, cluster_scoped: bool) -> str:
    """``Binding has been scheduled successfully. Result: {m1:2, m2:1}`` (no colon for CRBs)."""
    entries = ", ".join(f"{name}:{replicas}" for name, replicas in assignment_of(clusters))
    return f"{SUCCESS_MESSAGE} Result{'' if cluster_scoped else ':'} {{{entries}}}"


# ----------------------------------------------------------------------------- reconciler


@dataclass
class _Outcome:
    """What one scheduling did: its error, the binding as last written, the affinity term used."""

    error: BaseException | None
    binding: Obj
    affinity_name: str | None = None


class SchedulerReconciler:
    """Schedules one binding per reconcile (key without namespace: a ClusterResourceBinding)."""

    def __init__(self, client: KubeClient, algorithm: Algorithm, *, bindings: Indexer, cluster_bindings: Indexer,
                 clusters: Indexer, events: EventRecorder, scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> None:
        self.client = client
        self.algorithm = algorithm
        self.bindings = bindings
        self.cluster_bindings = cluster_bindings
        self.clusters = clusters
        self.events = events
        self.scheduler_name = scheduler_name

    async def reconcile(self, request: Request) -> Result:
        kind = CRB_KIND if not request.namespace else RB_KIND
        store = self.cluster_bindings if kind.cluster_scoped else self.bindings
        if store.get(str(request)) is None:
            return Result()
        binding = await self.client.get_or_none(kind.resource, request.name, request.namespace)
        if binding is None:
            return Result()
        if not schedulable(binding, self.scheduler_name):
            return Result()
        if self.algorithm.overcommit_protection:
            self.algorithm.assumptions.gc()  # Karmada sweeps every minute; expired entries are never read anyway
        if objects.is_deleting(binding):
            self._record(kind, binding, None, SchedulingError(
                f"skip schedule deleting {kind.lower_noun}: {kind.key(binding)}"))
            return Result()
        if binding_spec(binding).get("placement") is None:
            raise TerminalError(f"failed to get placement from {kind.lower_noun}({kind.key(binding)})")
        reason = schedule_type(binding, self._cluster_deleting)
        if reason is None:
            await self._observe_generation(kind, binding)
            return Result()
        log.info("scheduling binding", binding=kind.describe(binding), schedule_type=reason)
        started = time.perf_counter()
        err = await self._schedule(kind, binding)
        result = "scheduled" if err is None else "error"
        SCHEDULE_ATTEMPTS.labels(result, reason).inc()
        E2E_DURATION.labels(result, reason).observe(time.perf_counter() - started)
        if err is not None:
            raise err  # retried with backoff
        return Result()

    def _cluster_deleting(self, name: str) -> bool:
        cluster = self.clusters.get(name)
        return cluster is not None and objects.is_deleting(cluster)

    async def _observe_generation(self, kind: BindingKind, binding: Obj) -> None:
        """Nothing to schedule: only record that this generation was seen."""
        generation = objects.generation(binding)
        if generation == int(objects.status(binding).get("schedulerObservedGeneration") or 0):
            return
        try:
            await self.client.patch_status(kind.resource, objects.name(binding),
                                           {"status": {"schedulerObservedGeneration": generation}},
                                           namespace=objects.namespace(binding))
        except ApiError as exc:
            if not exc.is_not_found:
                raise

    # ------------------------------------------------------------------------- one scheduling

    async def _schedule(self, kind: BindingKind, binding: MutableObj) -> BaseException | None:
        """Schedule, then write the Scheduled condition; the error to retry with, if any."""
        if (binding_spec(binding).get("placement") or {}).get("clusterAffinities"):
            outcome = await self._schedule_with_affinities(kind, binding)
        else:
            outcome = await self._schedule_once(kind, binding)
        condition, ignore = condition_for(outcome.error)
        try:
            await self._write_status(kind, binding, outcome.binding, condition, outcome.affinity_name)
        except ApiError as exc:
            return exc
        return None if ignore else outcome.error

    async def _run_algorithm(self, spec: BindingSpec,
                             status: Obj) -> tuple[list[dict[str, Any]] | None, BaseException | None]:
        try:
            return await self.algorithm.schedule(spec, status), None
        except asyncio.CancelledError:
            raise
        except (SchedulingError, FitError) as exc:
            return None, exc
        except Exception as exc:  # a bug: reported like any scheduler error, with its traceback in the log
            log.exception("scheduling algorithm failed")
            return None, exc

    async def _schedule_once(self, kind: BindingKind, binding: MutableObj) -> _Outcome:
        """``scheduleResourceBinding`` without clusterAffinities."""
        spec, status = binding_spec(binding), objects.status(binding)
        result, err = await self._run_algorithm(spec, status)
        if err is not None and not isinstance(err, FitError):
            self._record(kind, binding, None, err)
            return _Outcome(err, binding)
        written, patch_err = await self._patch_result(kind, binding, result)
        if patch_err is not None:
            err = aggregate([err, patch_err])
        self._record(kind, binding, result, err)
        return _Outcome(err, written)

    async def _schedule_with_affinities(self, kind: BindingKind, binding: MutableObj) -> _Outcome:
        """Try the ``clusterAffinities`` terms in order, from the observed one (the first on a manual
        reschedule); the first term that schedules wins and becomes the observed term."""
        spec, status = binding_spec(binding), objects.status(binding)
        terms = spec["placement"]["clusterAffinities"]
        observed = str(status.get("schedulerObservingAffinityName") or "")
        index = affinity_index(terms, observed)
        if reschedule_required(spec.get("rescheduleTriggeredAt"), status.get("lastScheduledTime")):
            index = 0
        first_err: BaseException | None = None
        for position in range(index, len(terms)):
            name = str(terms[position].get("affinityName") or "")
            result, err = await self._run_algorithm(spec, {**status, "schedulerObservingAffinityName": name})
            if err is None:
                written, patch_err = await self._patch_result(kind, binding, result)
                err = aggregate([patch_err])
                self._record(kind, binding, result, err)
                return _Outcome(err, written, name)
            first_err = first_err or err
            self._record(kind, binding, None, SchedulingError(
                f"failed to schedule {kind.describe(binding)} with clusterAffiliates "
                f"index({position}): {error_text(err)}"))
        if not isinstance(first_err, FitError):
            return _Outcome(first_err, binding)
        written, patch_err = await self._patch_result(kind, binding, None)
        err = aggregate([first_err, patch_err])
        self._record(kind, binding, None, err)
        return _Outcome(err, written)

    async def _patch_result(self, kind: BindingKind, binding: Obj,
                            result: list[dict[str, Any]] | None) -> tuple[Obj, ApiError | None]:
        """Merge-patch ``spec.clusters`` (null when empty) and the applied placement, when they differ."""
        spec = binding_spec(binding)
        text = placement_json(spec.get("placement"))
        clusters = result or None
        patch: dict[str, Any] = {}
        if applied_placement_text(binding) != text:
            patch["metadata"] = {"annotations": {APPLIED_PLACEMENT_ANNOTATION: text}}
        if assignment_of(spec.get("clusters")) != assignment_of(clusters):
            patch["spec"] = {"clusters": clusters}
        if not patch:
            return binding, None
        try:
            written = await self.client.patch(kind.resource, objects.name(binding), patch,
                                              namespace=objects.namespace(binding))
        except ApiError as exc:
            return binding, exc
        if self.algorithm.overcommit_protection and not kind.cluster_scoped:
            record_schedule(self.algorithm.assumptions, binding, clusters)  # updateAssumptionsCache
        return written, None

    async def _write_status(self, kind: BindingKind, scheduled: Obj, latest: Obj, condition: dict[str, Any],
                            affinity_name: str | None) -> None:
        """Set the Scheduled condition (and, on success, the observed generation and lastScheduledTime):
        a merge patch guarded by the resourceVersion, re-read and recomputed on conflict."""
        generation = objects.generation(scheduled)
        name, namespace = objects.name(scheduled), objects.namespace(scheduled)
        now = now_text()
        first: Obj | None = latest

        async def attempt() -> None:
            nonlocal first
            binding = first if first is not None else await self.client.get(kind.resource, name, namespace)
            first = None  # a conflict means it changed: read it again
            old = objects.status(binding)
            new = scheduled_status(old, condition, generation, now, affinity_name)
            if new == old:
                return
            body = {"metadata": {"resourceVersion": objects.resource_version(binding)},
                    "status": status_merge_patch(old, new)}
            await self.client.patch_status(kind.resource, name, body, namespace=namespace)

        try:
            await retry_on_conflict(attempt)
        except ApiError as exc:
            if not exc.is_not_found:
                raise

    def _record(self, kind: BindingKind, binding: MutableObj, result: list[dict[str, Any]] | None,
                err: BaseException | None) -> None:
        """Events on the binding and on its template (``recordScheduleResultEventFor...``)."""
        if err is None:
            event_type, reason, message = NORMAL, EVENT_SCHEDULE_SUCCEED, result_message(
                result, cluster_scoped=kind.cluster_scoped)
        else:
            event_type, reason, message = WARNING, EVENT_SCHEDULE_FAILED, error_text(err)
        self.events.event(binding, event_type, reason, message)
        template = template_reference(binding)
        if template is not None:
            self.events.event(template, event_type, reason, message)


# ----------------------------------------------------------------------------- wiring


def _binding_mapper(bindings: Indexer, cluster_bindings: Indexer,
                    scheduler_name: str) -> Callable[[Obj], list[Request]]:
    """A changed Cluster → the visible bindings whose current affinity concerns it."""

    def map_cluster(cluster: Obj) -> list[Request]:
        requests: list[Request] = []
        for store in (bindings, cluster_bindings):
            for binding in store.list():
                if schedulable(binding, scheduler_name) and affected_by_cluster(binding, cluster):
                    requests.append(Request.for_object(binding))
        return requests

    return map_cluster


def assumption_handler(cache: AssumptionCache, scheduler_name: str = DEFAULT_SCHEDULER_NAME) -> FuncHandler:
    """The ResourceBinding events that make the scheduler forget (``event_handler.go``, behind the intake's filter,
    which turns a binding leaving it into a delete): deleted or no longer this scheduler's → all of it; an update
    (status included) → the clusters that just turned Healthy."""

    def on_update(old: Obj, new: Obj) -> None:
        if not schedulable(old, scheduler_name):
            return  # filtered out before, or now an add: nothing to forget
        if not schedulable(new, scheduler_name):
            cache.release(objects.key(new))
        else:
            release_healthy(cache, old, new)

    def on_delete(obj: Obj) -> None:
        if schedulable(obj, scheduler_name):
            cache.release(objects.key(obj))

    return FuncHandler(update=on_update, delete=on_delete)


def setup_scheduler(manager: Manager, *, available_replicas: AvailableReplicas | None = None,
                    scheduler_name: str = DEFAULT_SCHEDULER_NAME, overcommit_protection: bool = False,
                    assumptions: AssumptionCache | None = None) -> list[Controller]:
    """Register the scheduler controllers on a host Manager. available_replicas defaults to the
    general estimator only (estimator.general.GeneralEstimator over the clusters' status);
    overcommit_protection is the ``SchedulingOvercommitProtection`` feature gate (default off)."""
    bindings = manager.informer(RESOURCE_BINDINGS)
    cluster_bindings = manager.informer(CLUSTER_RESOURCE_BINDINGS)
    clusters = manager.informer(CLUSTERS)
    algorithm = Algorithm(clusters.store.list, available_replicas, overcommit_protection=overcommit_protection,
                          assumptions=assumptions)
    if overcommit_protection:
        bindings.add_event_handler(assumption_handler(algorithm.assumptions, scheduler_name))
    reconciler = SchedulerReconciler(manager.client, algorithm, bindings=bindings.store,
                                     cluster_bindings=cluster_bindings.store, clusters=clusters.store,
                                     events=manager.event_recorder(scheduler_name), scheduler_name=scheduler_name)
    name = CONTROLLER_NAME if scheduler_name == DEFAULT_SCHEDULER_NAME else f"{CONTROLLER_NAME}-{scheduler_name}"
    controller = Controller(name, reconciler, workers=1,
                            rate_limiter=ItemExponentialFailureRateLimiter[Request](BACKOFF_INITIAL, BACKOFF_MAX))
    predicate = binding_predicate(scheduler_name)
    controller.watches(bindings, predicates=[predicate])
    controller.watches(cluster_bindings, predicates=[predicate])
    controller.watches(clusters, map_func=_binding_mapper(bindings.store, cluster_bindings.store, scheduler_name),
                       predicates=[CLUSTER_PREDICATE])
    manager.add_controller(controller)
    return [controller]
