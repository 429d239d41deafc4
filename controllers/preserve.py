"""Preserve mode's decisions, free of I/O: may a workload's binding be lowered, and to what.

karmada-io/karmada#7662 proposes ``spec.reschedule.preserveAvailableReplicas`` on a WorkloadRebalancer:
instead of a fresh reschedule, each cluster keeps every replica except those an estimator confirms
as long-term unschedulable, and only that deficit is placed again. Lowering a cluster in the binding's
``spec.clusters`` below ``spec.replicas`` is enough: Karmada's scheduler places the deficit by its
scale-up path, as it does after the descheduler.

Fail closed, as #7662 asks: whatever the controller cannot judge leaves the binding as it was, with a
:class:`Refusal` that says why. Refusals that can pass by themselves (scheduling under way, a graceful
eviction, an estimator not answering, the mode off or a kind not declared in a leader being replaced) are
``transient``: the controller retries them and fails the workload only once they outlast
``--preserve-available-replicas-retry-timeout`` (:func:`retry_started`); the others fail at once.
docs/compatibility.md lists them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from estimator.eligibility import filter_bindings
from estimator.podselectors import BUILTIN_KINDS
from karmada_api.bindings import SCHEDULED_CONDITION, clusters_with_status, ready_replicas, spec_update
from karmada_api.placement import (
    PlacementError,
    applied_placement,
    applied_placement_text,
    is_dynamic_divided,
    placement_changed,
    strategy_type,
)
from karmada_api.rebalancers import preserve_requested
from karmada_api.shapes import TargetCluster, binding_spec, binding_status
from kube_api.conditions import find_condition
from kube_api.timeutil import format_time, now, parse_time

ENABLE_FLAG = "--enable-preserve-available-replicas"
RETRY_SINCE_ANNOTATION = "rebalance.karmada-rebalance.io/preserve-retry-since"
"""``<generation>/<RFC 3339 time>``: when a preserve rebalancer of generation > 1 first had to retry; written
by the controller, so the retry bound survives a restart (generation 1 counts from ``creationTimestamp``)."""

# Refusal reasons (the first word of a Failed workload's status reason).
PRESERVE_DISABLED = "PreserveModeDisabled"
INVALID_ANNOTATION = "InvalidPreserveAnnotation"
SCHEDULING_NOT_COMPLETE = "SchedulingNotComplete"
PLACEMENT_DIFFERS = "AppliedPlacementDiffers"
NOT_DYNAMIC_DIVIDED = "NotDynamicDivided"
UNSUPPORTED_KIND = "UnsupportedKind"
GRACEFUL_EVICTION = "GracefulEvictionInProgress"
ESTIMATOR_UNAVAILABLE = "EstimatorUnavailable"
READY_UNKNOWN = "ReadyReplicasUnknown"


@dataclass(frozen=True)
class Refusal:
    """Why a workload's binding is left as it was; ``transient``: retried until the retry bound."""

    reason: str
    detail: str
    transient: bool = False
    bounded: bool = True
    """With ``transient``: False when the cause ends by itself however long it lasts, so the retry timeout does
    not count it (a member's caches on their first list end in an answer or in an error)."""

    def __str__(self) -> str:
        """The status ``reason`` of a Failed workload: the reason word, then why."""
        return f"{self.reason}: {self.detail}"


@dataclass(frozen=True)
class Lowering:
    """The new ``spec.clusters`` (same entries and order) and the replicas each cluster gave up (may be empty)."""

    clusters: list[TargetCluster]
    moved: dict[str, int] = field(default_factory=dict)

    def apply(self, binding: Obj) -> dict[str, Any]:
        """The update of ``binding`` to the new ``spec.clusters``, nothing else changed (its resourceVersion
        included: the update is conditional; :func:`spec_update`)."""
        return spec_update(binding, {**binding_spec(binding), "clusters": self.clusters})


def requested(rebalancer: Obj) -> bool | Refusal:
    """Whether the rebalancer asks for preserve mode (:func:`preserve_requested`: the field or our annotation).

    An annotation value other than ``true``/``false`` is a :class:`Refusal` for every workload (not a full
    reschedule: the user asked for something, and a guess either way could move replicas they meant to keep).
    """
    try:
        return preserve_requested(rebalancer)
    except ValueError as exc:
        return Refusal(INVALID_ANNOTATION, str(exc))


def disabled() -> Refusal:
    """The refusal of every preserve workload while the controller-manager runs without preserve mode.

    Transient, bounded by the retry timeout: a rollout that turns the flag on runs the old leader, without it,
    until the new one takes the Lease, and the user who enabled the mode and then asked for it must not get a
    final ``Failed`` from the process on its way out."""
    return Refusal(PRESERVE_DISABLED, f"karmada-controller-manager runs without {ENABLE_FLAG}", transient=True)


def refusal(binding: Obj, gvks: Collection[tuple[str, str]] = BUILTIN_KINDS) -> Refusal | None:
    """Why the binding cannot be lowered before asking the estimator; None when it can.

    Scheduling first (the applied placement of a schedule under way is about to change), then the placement
    the current ``spec.clusters`` was computed with (the scheduler's own ``placementChanged``), then the
    descheduler's own rule (:func:`filter_bindings`: a kind the estimator judges, a dynamic-divided applied
    placement), then graceful evictions.
    """
    spec, status = binding_spec(binding), binding_status(binding)
    observed, generation = status.get("schedulerObservedGeneration"), objects.generation(binding)
    if observed != generation:
        seen = "no schedulerObservedGeneration" if observed is None else f"schedulerObservedGeneration {observed}"
        return Refusal(SCHEDULING_NOT_COMPLETE, f"{seen} != generation {generation}", transient=True)
    scheduled = find_condition(status.get("conditions"), SCHEDULED_CONDITION)
    if scheduled is None or scheduled.get("status") != "True":
        why = f"Scheduled is {scheduled.get('status')} ({scheduled.get('reason')})" if scheduled else "no Scheduled"
        return Refusal(SCHEDULING_NOT_COMPLETE, f"{why} condition", transient=True)
    try:
        applied = applied_placement(binding)
    except PlacementError as exc:
        return Refusal(PLACEMENT_DIFFERS, str(exc))
    observed_term = status.get("schedulerObservingAffinityName", "")
    if applied is None or placement_changed(spec.get("placement") or {}, applied_placement_text(binding),
                                            observed_term):
        return Refusal(PLACEMENT_DIFFERS, "the placement of the last schedule is not spec.placement")
    if not filter_bindings([binding], gvks):
        if not is_dynamic_divided(applied):
            strategy = strategy_type(applied) or "an unsupported strategy"
            return Refusal(NOT_DYNAMIC_DIVIDED, f"the placement is {strategy}; preserve mode needs Divided with "
                                                "a dynamicWeight or Aggregated")
        return unsupported_kind(spec.get("resource") or {})
    evicting = [task.get("fromCluster", "") for task in spec.get("gracefulEvictionTasks") or []]
    if evicting:
        return Refusal(GRACEFUL_EVICTION, f"evicting from {', '.join(evicting)}", transient=True)
    return None


def unsupported_kind(resource: Mapping[str, Any]) -> Refusal:
    """The refusal of a kind this process does not count unschedulable Pods for.

    Transient, bounded by the retry timeout, for the reason :func:`disabled` is: a rollout that declares the kind
    in ``--unschedulable-pod-selectors`` runs the old leader, without it, until the new one takes the Lease. A
    kind nobody declares fails once the bound has passed."""
    return Refusal(UNSUPPORTED_KIND, f"{resource.get('apiVersion')} {resource.get('kind')} has no "
                                     "unschedulable-replica estimate", transient=True)


def clusters_to_ask(binding: Obj) -> list[str]:
    """The assigned clusters with replicas: the only ones a lowering can change."""
    return [str(c.get("name", "")) for c in binding_spec(binding).get("clusters") or [] if c.get("replicas", 0) > 0]


def unjudged(binding: Obj, unschedulable: Mapping[str, int]) -> list[str]:
    """The clusters to lower that the estimate left out or could not calculate (-1)."""
    return [name for name in clusters_to_ask(binding) if unschedulable.get(name, -1) < 0]


def lower(binding: Obj, unschedulable: Mapping[str, int], starting: Collection[str] = ()) -> Lowering | Refusal:
    """Each cluster lowered by its confirmed unschedulable replicas; a cluster the estimator left out refuses.

    Never below the cluster's ready replicas (the descheduler's floor: during a stuck rollout the old Pods
    serve while the new ones wait), and never below 0 (a count above the assignment means every assigned
    replica is stuck). An empty ``moved``: nothing had to move.

    Where the descheduler takes an unknown ready count as 0 (Go's map lookup), preserve mode fails closed: a
    cluster to lower whose status the binding has not collected yet is a transient refusal, since the floor
    that keeps its serving Pods cannot be known.

    ``starting``: clusters whose member caches are still on their first list (``Estimate``'s companion
    ``still_starting``); when only those are unjudged, the refusal is not bounded by the retry timeout: after a
    restart, a large member's first list can outlast it, and a workload must not fail for that.
    """
    missing = unjudged(binding, unschedulable)
    if missing and set(missing) <= set(starting):
        return Refusal(ESTIMATOR_UNAVAILABLE, f"the member caches of {', '.join(missing)} are still on their "
                                              "first list", transient=True, bounded=False)
    if missing:
        return Refusal(ESTIMATOR_UNAVAILABLE, f"no unschedulable-replica estimate for {', '.join(missing)}",
                       transient=True)
    reported = clusters_with_status(binding)
    unknown = [name for name in clusters_to_ask(binding) if unschedulable.get(name, 0) > 0 and name not in reported]
    if unknown:
        return Refusal(READY_UNKNOWN, f"no workload status collected from {', '.join(unknown)} yet: its ready "
                                      "replicas are unknown", transient=True)
    ready = ready_replicas(binding)
    clusters: list[TargetCluster] = []
    moved: dict[str, int] = {}
    for entry in binding_spec(binding).get("clusters") or []:
        name, assigned = str(entry.get("name", "")), int(entry.get("replicas", 0))
        target = max(assigned - unschedulable.get(name, 0), 0, min(ready.get(name, 0), assigned))
        clusters.append({**entry, "replicas": target})
        if target < assigned:
            moved[name] = assigned - target
    return Lowering(clusters, moved)


def retry_started(rebalancer: Obj) -> datetime | None:
    """When the retries of the rebalancer's current generation started, from the object alone (restart-safe).

    Generation 1: its ``creationTimestamp``. Later generations: :data:`RETRY_SINCE_ANNOTATION` if it names the
    current generation; None otherwise (the caller writes it, see :func:`retry_since_value`).
    """
    generation = objects.generation(rebalancer)
    if generation <= 1:
        return parse_time(objects.creation_timestamp(rebalancer))
    mark = objects.annotations(rebalancer).get(RETRY_SINCE_ANNOTATION, "")
    marked_generation, _, since = mark.partition("/")
    if marked_generation != str(generation):
        return None
    try:
        return parse_time(since)
    except ValueError:
        return None


def retry_since_value(rebalancer: Obj, moment: datetime) -> str:
    """The :data:`RETRY_SINCE_ANNOTATION` value that starts the current generation's retries at ``moment``."""
    return f"{objects.generation(rebalancer)}/{format_time(moment)}"


Estimate = Callable[[list[str], Obj, timedelta], Awaitable[dict[str, int]]]
"""``EstimatorClient.unschedulable_replicas``: confirmed unschedulable replicas per cluster (a cluster left out
could not be judged)."""
StillStarting = Callable[[list[str], Obj], list[str]]
"""``EstimatorClient.still_starting``: of the clusters left out, those whose member caches are on their first list."""


@dataclass(frozen=True)
class PreserveOptions:
    """Preserve mode's settings; ``estimate`` None: the mode is off, and each preserve workload fails closed."""

    estimate: Estimate | None = None
    threshold: timedelta = timedelta(minutes=5)
    """``--preserve-unschedulable-threshold``: how long a Pod must be unschedulable to count."""
    retry_timeout: timedelta = timedelta(minutes=1)
    """``--preserve-available-replicas-retry-timeout``: how long a transient refusal is retried."""
    gvks: Collection[tuple[str, str]] = BUILTIN_KINDS
    """The kinds the estimator counts: the built-in ones and those of ``--unschedulable-pod-selectors``."""
    started: datetime = field(default_factory=now)
    """When this process began serving preserve mode: its member caches are empty before, so no retry bound
    ends earlier than ``retry_timeout`` after it (a restart never turns a not-yet-judged workload Failed)."""
    still_starting: StillStarting | None = None
    """Which clusters left out of an estimate are still on their first list: not counted by the retry bound
    (:attr:`Refusal.bounded`). None: every cluster left out counts."""
