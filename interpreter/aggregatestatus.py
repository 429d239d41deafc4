"""``AggregateStatus``: member clusters' statuses folded into the resource template's status.

The binding-status controller (``controllers/bindingstatus.py``) writes what this returns into the
template. Karmada's ``pkg/resourceinterpreter/default/native/aggregatestatus.go``, one small
function per kind. Each takes the resource template (as read from the API server) and the
binding's ``status.aggregatedStatus`` items, and returns the template's new ``status``; when
nothing changed it returns (a copy of) the old status, so callers decide whether to write by
comparing. Kinds without an interpreter (ConfigMap, ClusterRole, custom resources...) give
None: their templates are never written.

Rules shared by all kinds:
- an item whose ``status`` is null (not collected yet) is skipped for sums but still counts
  in the denominator of the observedGeneration check (and as "Pending" for Pod/PV phases);
- zero integers are omitted from what is written, as Go's ``omitempty`` would;
- a member status that is not what the kind expects (a string where a number belongs...) is an
  error, as a failed ``json.Unmarshal`` is in Karmada: the caller retries and reports it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from controller_manager.resource import Resource
from karmada_api.shapes import AggregatedStatusItem
from kube_api import resources as kube
from kube_api.timeutil import now_text, parse_time

from .kinds import KindTable

Status = dict[str, Any]
Item = AggregatedStatusItem
Interpreter = Callable[[Obj, list[Item]], Status]

_AGGREGATORS: KindTable[Interpreter] = KindTable()
"""The kinds with an AggregateStatus hook, each with its REST resource: the RESTMapper of the
binding-status controller (a kind missing here is never looked up)."""

__all__ = ["INTERPRETED_RESOURCES", "InterpretError", "aggregate_status", "has_interpreter", "template_resource"]


class InterpretError(ValueError):
    """A member status could not be read as the kind's status (Karmada: an unmarshal error)."""


# ----------------------------------------------------------------------------- helpers


def _statuses(items: Iterable[Item]) -> list[tuple[str, Status]]:
    """(clusterName, status) of the items that carry a status; a non-object status is an error."""
    result = []
    for item in items:
        status = item.get("status")
        if status is None:
            continue
        if not isinstance(status, dict):
            raise InterpretError(f"status of cluster {item.get('clusterName')!r} is not an object: {status!r}")
        result.append((str(item.get("clusterName") or ""), status))
    return result


def _int(status: Status, field: str) -> int:
    """An integer field, 0 when absent (Go's zero value)."""
    value = status.get(field)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise InterpretError(f"field {field!r} is not an integer: {value!r}")
    return value


def _list(status: Status, field: str) -> list[Any]:
    value = status.get(field)
    if value is None:
        return []
    if not isinstance(value, list):
        raise InterpretError(f"field {field!r} is not a list: {value!r}")
    return value


def _set_or_drop(status: Status, field: str, value: Any) -> None:
    """Write ``value``, or remove the field when it is a zero value (``omitempty``)."""
    if value in (None, 0, "", [], {}) and not isinstance(value, bool):
        status.pop(field, None)
    else:
        status[field] = value


def _observed_generation(template: Obj, items: list[Item], *, member_generation_quirk: bool) -> int | None:
    """The template generation when every member caught up with it, else None (keep the old value).

    A member caught up when it observed its own generation and carries the template generation
    it was applied from. StatefulSet compares that annotation with the *member* generation
    (``member_generation_quirk``: Karmada's ``aggregateStatefulSetStatus`` does so). Items without a
    status fail.
    """
    generation = objects.generation(template)
    for item in items:
        member = item.get("status")
        if not isinstance(member, dict):
            return None
        member_generation = _int(member, "generation")
        bound = member_generation if member_generation_quirk else generation
        if _int(member, "observedGeneration") < member_generation or \
                _int(member, "resourceTemplateGeneration") < bound:
            return None
    return generation


def _old_status(template: Obj) -> Status:
    status = template.get("status")
    return copy.deepcopy(status) if isinstance(status, dict) else {}


Builder = Callable[[Obj, list[Item], Status], Status | None]


def _replacing(build: Builder) -> Interpreter:
    """An interpreter replacing the status as a whole with what ``build`` makes of the template, the
    items and (a copy of) the old status; None from ``build`` keeps the old status, and so does a
    new status equal to it."""

    def aggregate(template: Obj, items: list[Item]) -> Status:
        old = _old_status(template)
        new = build(template, items, old)
        return old if new is None or new == old else new

    return aggregate


# ----------------------------------------------------------------------------- replica workloads


def _summing(fields: tuple[str, ...], *, always: tuple[str, ...] = (),
             member_generation_quirk: bool = False) -> Interpreter:
    """Deployment/ReplicaSet/StatefulSet/DaemonSet: sum ``fields``, maintain ``observedGeneration``.

    Other status fields (conditions, collisionCount...) are kept. When the sums and the
    observedGeneration equal the old values the old status is returned unchanged. A zero sum is
    dropped (Go's ``omitempty``) except for the ``always`` fields, which the kind's Go status type
    serialises even when 0 (a StatefulSet's ``replicas`` and ``availableReplicas``...).
    """

    def aggregate(template: Obj, items: list[Item]) -> Status:
        old = _old_status(template)
        sums = dict.fromkeys(fields, 0)
        for _cluster, member in _statuses(items):
            for field in fields:
                sums[field] += _int(member, field)
        observed = _observed_generation(template, items, member_generation_quirk=member_generation_quirk)
        if observed is None:
            observed = _int(old, "observedGeneration")
        if observed == _int(old, "observedGeneration") and all(_int(old, f) == sums[f] for f in fields):
            return old
        new = old
        _set_or_drop(new, "observedGeneration", observed)
        for field in fields:
            if field in always:
                new[field] = sums[field]
            else:
                _set_or_drop(new, field, sums[field])
        return new

    return aggregate


aggregate_deployment = _AGGREGATORS.add(kube.DEPLOYMENTS, _summing((
    "replicas", "readyReplicas", "updatedReplicas", "availableReplicas", "unavailableReplicas")))
aggregate_replicaset = _AGGREGATORS.add(kube.REPLICA_SETS, _summing((
    "replicas", "readyReplicas", "availableReplicas"), always=("replicas",)))
aggregate_statefulset = _AGGREGATORS.add(kube.STATEFUL_SETS, _summing((
    "availableReplicas", "currentReplicas", "readyReplicas", "replicas", "updatedReplicas"),
    always=("replicas", "availableReplicas"), member_generation_quirk=True))
aggregate_daemonset = _AGGREGATORS.add(kube.DAEMON_SETS, _summing((
    "currentNumberScheduled", "desiredNumberScheduled", "numberAvailable", "numberMisscheduled", "numberReady",
    "updatedNumberScheduled", "numberUnavailable"),
    always=("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")))


# ----------------------------------------------------------------------------- batch


def _job_finished(status: Status) -> str:
    """``Complete`` or ``Failed`` when a condition of that type is True, else "" (GetJobFinishedStatus)."""
    for condition in _list(status, "conditions"):
        if isinstance(condition, dict) and condition.get("type") in ("Complete", "Failed") \
                and condition.get("status") == "True":
            return str(condition["type"])
    return ""


def _earliest(times: Iterable[str]) -> str | None:
    present = [t for t in times if t]
    return min(present, key=parse_time) if present else None


def _latest(times: Iterable[str]) -> str | None:
    present = [t for t in times if t]
    return max(present, key=parse_time) if present else None


@_AGGREGATORS.register(kube.JOBS)
@_replacing
def aggregate_job(_template: Obj, items: list[Item], old: Status) -> Status | None:
    """Sum active/succeeded/failed; Complete when every member completed, Failed when any failed.

    A finished Job (Complete or Failed) is never updated again. ``startTime`` is the earliest
    member start, ``completionTime`` the latest member completion (set once Complete). The
    status is replaced as a whole, as Karmada does. Beyond Karmada: zero members never make a
    Job Complete (Karmada's ``successful == len(items)`` is vacuously true for none).
    """
    if _job_finished(old):
        return None
    members = _statuses(items)
    new: Status = {}
    failed_clusters: list[str] = []
    succeeded_members = 0
    for cluster, member in members:
        finished = _job_finished(member)
        if finished == "Complete":
            succeeded_members += 1
        elif finished == "Failed":
            failed_clusters.append(cluster)
        for field in ("active", "succeeded", "failed"):
            new[field] = new.get(field, 0) + _int(member, field)
    for field in ("active", "succeeded", "failed"):
        _set_or_drop(new, field, new.get(field, 0))
    start = _earliest(str(m.get("startTime") or "") for _c, m in members)
    if start:
        new["startTime"] = start
    conditions: list[dict[str, Any]] = []
    if failed_clusters:
        stamp = now_text()
        conditions.append({"type": "Failed", "status": "True", "lastProbeTime": stamp, "lastTransitionTime": stamp,
                           "reason": "JobFailed",
                           "message": f"Job executed failed in member clusters {','.join(failed_clusters)}"})
    if items and succeeded_members == len(items):
        stamp = now_text()
        conditions.append({"type": "Complete", "status": "True", "lastProbeTime": stamp,
                           "lastTransitionTime": stamp, "reason": "Completed", "message": "Job completed"})
        completion = _latest(str(m.get("completionTime") or "") for _c, m in members)
        if completion:
            new["completionTime"] = completion
    if conditions:
        new["conditions"] = conditions
    return new


@_AGGREGATORS.register(kube.CRON_JOBS)
def aggregate_cronjob(template: Obj, items: list[Item]) -> Status:
    """Union of ``active`` job references; the latest ``lastScheduleTime`` and ``lastSuccessfulTime``."""
    old = _old_status(template)
    members = _statuses(items)
    active = [ref for _c, member in members for ref in _list(member, "active")]
    wanted: Status = {}
    _set_or_drop(wanted, "active", active)
    for field in ("lastScheduleTime", "lastSuccessfulTime"):
        _set_or_drop(wanted, field, _latest(str(m.get(field) or "") for _c, m in members))
    current = {f: old[f] for f in ("active", "lastScheduleTime", "lastSuccessfulTime") if old.get(f)}
    if current == wanted:
        return old
    new = old
    for field in ("active", "lastScheduleTime", "lastSuccessfulTime"):
        _set_or_drop(new, field, wanted.get(field))
    return new


# ----------------------------------------------------------------------------- networking


def _load_balancer(items: list[Item]) -> Status:
    """``{loadBalancer: {ingress: [...]}}`` from every member; an entry without hostname gets the cluster name."""
    ingress: list[Any] = []
    for cluster, member in _statuses(items):
        balancer = member.get("loadBalancer") or {}
        if not isinstance(balancer, dict):
            raise InterpretError(f"loadBalancer of cluster {cluster!r} is not an object")
        for raw in _list(balancer, "ingress"):
            entry = dict(raw) if isinstance(raw, dict) else {}
            if not entry.get("hostname"):
                entry["hostname"] = cluster
            ingress.append(entry)
    return {"loadBalancer": {"ingress": ingress} if ingress else {}}


@_AGGREGATORS.register(kube.SERVICES)
@_replacing
def aggregate_service(template: Obj, items: list[Item], _old: Status) -> Status | None:
    """LoadBalancer Services only: the union of the members' load-balancer ingress points."""
    if objects.spec(template).get("type") != "LoadBalancer":
        return None
    return _load_balancer(items)


@_AGGREGATORS.register(kube.INGRESSES)
@_replacing
def aggregate_ingress(_template: Obj, items: list[Item], _old: Status) -> Status | None:
    """The union of the members' load-balancer ingress points."""
    return _load_balancer(items)


# ----------------------------------------------------------------------------- core


_POD_PHASE_ORDER = ("Failed", "Pending", "Running", "Succeeded")  # Unknown is deprecated (karmada#2137)
_PV_PHASE_ORDER = ("Failed", "Pending", "Available", "Bound", "Released")  # karmada#2394


def _phase(phases: set[str], order: tuple[str, ...]) -> str:
    return next((phase for phase in order if phase in phases), "")


@_AGGREGATORS.register(kube.PODS)
@_replacing
def aggregate_pod(_template: Obj, items: list[Item], _old: Status) -> Status | None:
    """Worst phase (Failed > Pending > Running > Succeeded; no status counts as Pending) and the
    members' container statuses reduced to ``ready`` and ``state``. No members: unchanged."""
    if not items:
        return None
    phases: set[str] = set()
    containers: list[dict[str, Any]] = []
    init_containers: list[dict[str, Any]] = []
    for item in items:
        member = item.get("status")
        if member is None:
            phases.add("Pending")
            continue
        if not isinstance(member, dict):
            raise InterpretError(f"status of cluster {item.get('clusterName')!r} is not an object")
        phases.add(str(member.get("phase") or ""))
        for source, target in (("containerStatuses", containers), ("initContainerStatuses", init_containers)):
            for raw in _list(member, source):
                container = raw if isinstance(raw, dict) else {}
                target.append({"ready": bool(container.get("ready")), "state": container.get("state") or {}})
    new: Status = {}
    _set_or_drop(new, "phase", _phase(phases, _POD_PHASE_ORDER))
    _set_or_drop(new, "containerStatuses", containers)
    _set_or_drop(new, "initContainerStatuses", init_containers)
    return new


@_AGGREGATORS.register(kube.PERSISTENT_VOLUMES)
@_replacing
def aggregate_persistentvolume(_template: Obj, items: list[Item], _old: Status) -> Status | None:
    """Worst phase (Failed > Pending > Available > Bound > Released; no status counts as Pending)."""
    phases = {str(member.get("phase") or "") for _cluster, member in _statuses(items)}
    if any(item.get("status") is None for item in items):
        phases.add("Pending")  # not collected yet: assume Pending rather than report a better phase
    new: Status = {}
    _set_or_drop(new, "phase", _phase(phases, _PV_PHASE_ORDER))
    return new


@_AGGREGATORS.register(kube.PERSISTENT_VOLUME_CLAIMS)
@_replacing
def aggregate_persistentvolumeclaim(_template: Obj, items: list[Item], _old: Status) -> Status | None:
    """Bound unless a member is not: Lost wins at once, otherwise the last non-Bound phase."""
    phase = "Bound"
    for _cluster, member in _statuses(items):
        member_phase = str(member.get("phase") or "")
        if member_phase == "Lost":
            phase = "Lost"
            break
        if member_phase != "Bound":
            phase = member_phase
    new: Status = {}
    _set_or_drop(new, "phase", phase)
    return new


# ----------------------------------------------------------------------------- autoscaling, policy


@_AGGREGATORS.register(kube.HORIZONTAL_POD_AUTOSCALERS)
def aggregate_hpa(template: Obj, items: list[Item]) -> Status:
    """Sum ``currentReplicas`` and ``desiredReplicas``; other fields (conditions, metrics) are kept."""
    old = _old_status(template)
    current = desired = 0
    for _cluster, member in _statuses(items):
        current += _int(member, "currentReplicas")
        desired += _int(member, "desiredReplicas")
    if _int(old, "currentReplicas") == current and _int(old, "desiredReplicas") == desired:
        return old
    new = old
    _set_or_drop(new, "currentReplicas", current)
    new["desiredReplicas"] = desired  # not omitempty in autoscaling/v2
    return new


@_AGGREGATORS.register(kube.POD_DISRUPTION_BUDGETS)
@_replacing
def aggregate_poddisruptionbudget(_template: Obj, items: list[Item], _old: Status) -> Status | None:
    """Sum the four counters; ``disruptedPods`` keyed ``<cluster>/<pod>``. The status is replaced."""
    new: Status = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    disrupted: dict[str, Any] = {}
    for cluster, member in _statuses(items):
        for field in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
            new[field] += _int(member, field)
        pods = member.get("disruptedPods") or {}
        if not isinstance(pods, dict):
            raise InterpretError(f"disruptedPods of cluster {cluster!r} is not an object")
        for pod, when in pods.items():
            disrupted[f"{cluster}/{pod}"] = when
    if disrupted:
        new["disruptedPods"] = disrupted
    return new


# ----------------------------------------------------------------------------- registry


INTERPRETED_RESOURCES: dict[tuple[str, str], Resource] = _AGGREGATORS.resources()
"""The template kinds with an AggregateStatus interpreter: the only ones whose status is written."""


def has_interpreter(api_version: str, kind: str) -> bool:
    return _AGGREGATORS.get(api_version, kind) is not None


def template_resource(api_version: str, kind: str) -> Resource | None:
    """The REST resource of a template kind that has an interpreter, else None."""
    return INTERPRETED_RESOURCES.get((api_version, kind))


def aggregate_status(template: Obj, items: list[Item]) -> Status | None:
    """The template's new ``status`` from the binding's aggregatedStatus items.

    None when the kind has no AggregateStatus interpreter. Equal to the old status when nothing
    changed. Raises InterpretError when a member status cannot be read as the kind's status.
    The template is not modified.
    """
    interpreter = _AGGREGATORS.get(str(template.get("apiVersion") or ""), str(template.get("kind") or ""))
    if interpreter is None:
        return None
    return interpreter(template, items)
