"""When a moved workload is healthy again: the one rule every bounded mover waits on.

Progressive fail-back and ``karmada-rebalance create --max-concurrent`` start the next workloads only
once those already moving are healthy again (issue 26). Healthy means, from what Karmada itself writes
(so it is read from informer caches, never by asking the members):

- the binding is scheduled for its current generation and any reschedule it was asked for has happened
  (``rescheduleTriggeredAt`` not after ``lastScheduledTime``): until then its ``spec.clusters`` is the old
  assignment, and its replicas being ready says nothing about the move;
- every target cluster (``spec.clusters``) is in ``status.aggregatedStatus``, applied, and, for a workload
  with replicas, reports at least its assigned replicas ready (``status.readyReplicas`` reflected from the
  member) for the template generation the member was applied from;
- the resource template (on the Karmada API server) reports ``status.readyReplicas`` at least
  ``spec.replicas``, for its current generation.

Ready counts are required of the ``apps/v1`` kinds, whose statuses always carry them (a 0 is omitted, so a
missing count is 0). Another kind's status may have no such field at all: its count is checked only where
its status has one, and otherwise being applied is all that can be known.

Each check returns why the workload is not healthy yet (for Events and ``--wait`` output), or None.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from kube_api.timeutil import parse_optional_time

from .shapes import AggregatedStatusItem, binding_spec, binding_status

NotHealthy = str | None
"""Why a workload is not healthy yet; None when it is."""


READY_COUNTING_KINDS = frozenset({("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "ReplicaSet")})
"""Kinds whose status always reports ``readyReplicas`` (omitted when 0) and ``observedGeneration``."""


GENERATION_REFLECTING_KINDS = frozenset({("apps/v1", "Deployment")})
"""Kinds whose reflected member status carries the member's ``observedGeneration`` beside its ``generation``.

Karmada's ``reflectStatefulSetStatus`` copies a StatefulSet's counters but not its ``observedGeneration``
(its own aggregation then never advances the template's), so a StatefulSet's member status is never
compared by generation: its ready count is all there is. Other kinds' whole status is reflected, without
``generation``, so the comparison holds trivially where it applies."""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _counts_ready(api_version: str, kind: str, status: Mapping[str, Any]) -> bool:
    return (api_version, kind) in READY_COUNTING_KINDS or "readyReplicas" in status


def reschedule_pending(binding: Obj, moved_at: datetime | None = None) -> NotHealthy:
    """Why the binding's current assignment is not the scheduler's answer to its latest spec, or None.

    ``moved_at``: when a rebalancer asked for the move (its creationTimestamp, which Karmada's rebalancer
    controller writes as ``rescheduleTriggeredAt`` at the earliest); until a trigger that late is there the
    binding still shows the assignment from before the move, healthy or not.
    """
    spec, status = binding_spec(binding), binding_status(binding)
    observed, generation = _int(status.get("schedulerObservedGeneration")), objects.generation(binding)
    if observed < generation:
        return f"not scheduled yet (schedulerObservedGeneration {observed} < generation {generation})"
    triggered = parse_optional_time(spec.get("rescheduleTriggeredAt"))
    if moved_at is not None and (triggered is None or triggered < moved_at):
        return "reschedule not triggered yet"
    if triggered is not None:
        scheduled = parse_optional_time(status.get("lastScheduledTime"))
        if scheduled is None or scheduled < triggered:
            return "reschedule not done yet (lastScheduledTime before rescheduleTriggeredAt)"
    return None


def _member_not_ready(cluster: str, assigned: int, item: AggregatedStatusItem | None,
                      kind: tuple[str, str]) -> NotHealthy:
    if item is None:
        return f"no status from {cluster} yet"
    if not item.get("applied"):
        message = item.get("appliedMessage") or ""
        return f"not applied on {cluster}" + (f": {message}" if message else "")
    if assigned <= 0:
        return None
    member: Mapping[str, Any] = item.get("status") or {}
    if not _counts_ready(*kind, member):
        return None
    ready = _int(member.get("readyReplicas"))
    if ready < assigned:
        return f"{ready}/{assigned} replicas ready on {cluster}"
    compared = kind in GENERATION_REFLECTING_KINDS or "observedGeneration" in member
    if compared and _int(member.get("observedGeneration")) < _int(member.get("generation")):
        return f"{cluster} has not observed its latest generation"
    return None


def binding_not_healthy(binding: Obj, moved_at: datetime | None = None) -> NotHealthy:
    """Why the binding's targets are not all applied with their assigned replicas ready; None when they are.
    ``moved_at``: see :func:`reschedule_pending`."""
    pending = reschedule_pending(binding, moved_at)
    if pending is not None:
        return pending
    spec, status = binding_spec(binding), binding_status(binding)
    items = {item.get("clusterName", ""): item for item in status.get("aggregatedStatus") or []}
    has_replicas = _int(spec.get("replicas")) > 0
    resource = spec.get("resource") or {}
    kind = (resource.get("apiVersion", ""), resource.get("kind", ""))
    for target in spec.get("clusters") or []:
        name = target.get("name", "")
        assigned = _int(target.get("replicas")) if has_replicas else 0
        if has_replicas and assigned <= 0:
            continue  # a cluster left with no replicas has nothing to become ready
        reason = _member_not_ready(name, assigned, items.get(name), kind)
        if reason is not None:
            return reason
    return None


def template_not_healthy(template: Obj) -> NotHealthy:
    """Why the resource template does not report all its replicas ready; None when it does, or has none."""
    wanted = objects.spec(template).get("replicas")
    if not isinstance(wanted, int) or isinstance(wanted, bool):
        return None  # a kind without replicas (ConfigMap, a Job...) is healthy once applied
    status = objects.status(template)
    if not _counts_ready(str(template.get("apiVersion", "")), str(template.get("kind", "")), status):
        return None
    observed = status.get("observedGeneration", objects.generation(template))  # a kind without it: trust the rest
    if _int(observed) < objects.generation(template):
        return "the template's status is not aggregated for its latest generation yet"
    ready = _int(status.get("readyReplicas"))
    if ready < wanted:
        return f"{ready}/{wanted} replicas ready"
    return None


def workload_not_healthy(binding: Obj, template: Obj | None, moved_at: datetime | None = None) -> NotHealthy:
    """:func:`binding_not_healthy`, then :func:`template_not_healthy` (a missing template: not healthy)."""
    reason = binding_not_healthy(binding, moved_at)
    if reason is not None:
        return reason
    if template is None:
        return "the resource template is not found"
    return template_not_healthy(template)
