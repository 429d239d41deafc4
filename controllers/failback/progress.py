"""Progressive fail-back, pure: what is in flight, which batch starts next, when a cluster pauses or resumes.

Everything the controller needs to remember is in the API (docs/failback.md, "Restart safety"):

* a binding's :data:`~.recovery.EVICTED_FROM_ANNOTATION` names the clusters it still has to go back to;
* its :data:`FAILING_BACK_ANNOTATION` names those it is going back to now, with when that move began (the
  creationTimestamp of the batch's WorkloadRebalancer, the time Karmada's rebalancer triggers the reschedule at);
* its :data:`EVICTED_AT_ANNOTATION` says when a relapse evicted it again while going back: no batch that began
  then or before marks it in flight, and one seen during a round ends that round;
* its :data:`SKIPPED_ANNOTATION` says when its fail-back to a cluster was decided against (skipped, opted out):
  the eviction that recorded it, still told of by a task or an Event after a restart, is not recorded again;
* the Cluster's :data:`ROUND_ANNOTATION` names the fail-back in progress (batch names derive from it), its
  :data:`PAUSED_ANNOTATION` says since when it is paused, and the operator's :data:`RESUME_ANNOTATION` resumes it.

No I/O here: :mod:`.controller` reads the caches, calls these and writes the results.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from karmada_api.bindings import binding_cluster_names
from karmada_api.placement import assigned_replicas, target_contains
from karmada_api.rebalancers import rebalancer_body, workload_key
from karmada_api.shapes import BindingSpec, Workload, binding_spec
from kube_api.timeutil import format_time, parse_optional_time

from .recovery import EVICTED_FROM_ANNOTATION, record_value, recorded_clusters

PREFIX = "failback.karmada-rebalance.io"
FAILING_BACK_ANNOTATION = f"{PREFIX}/failing-back"
"""On a binding: ``{"<cluster>": "<RFC 3339 start>", ...}``, the fail-backs in flight (JSON)."""
EVICTED_AT_ANNOTATION = f"{PREFIX}/evicted-at"
"""On a binding: ``{"<cluster>": "<RFC 3339>"}``, for each recorded cluster it was evicted from again while going
back there (a relapse), when that eviction was seen (never before the move it undid). A batch that began at or
before it cannot mark the binding in flight: re-adopted after the relapse, its stale move would be taken for one
still going, its end for the fail-back's, and the eviction's record would be cleared. Stamped during a round, it
ends the round, seen or not on the Cluster (docs/failback.md)."""
SKIPPED_ANNOTATION = f"{PREFIX}/skipped"
"""On a binding: ``{"<cluster>": "<RFC 3339>"}``, when its fail-back to each cluster was skipped or opted out of.
An eviction from that cluster at or before then (a graceful-eviction task still on the binding, Karmada's
``EvictWorkloadFromClusterSucceed`` Event, both outliving the decision) is the one already decided, so a restarted
recorder does not record it again (nor the controller skip it again, with a second Warning). Dropped when a newer
eviction from the cluster is recorded."""
ROUND_ANNOTATION = f"{PREFIX}/round"
"""On a Cluster: when the fail-back in progress began (RFC 3339); batch names derive from it."""
PAUSED_ANNOTATION = f"{PREFIX}/paused"
"""On a Cluster: since when its fail-back is paused (RFC 3339), a batch having missed its deadline."""
RESUME_ANNOTATION = f"{PREFIX}/resume"
"""On a Cluster, written by the operator: an RFC 3339 time; resumes a pause that began at or before it."""
OPT_OUT_ANNOTATION = f"{PREFIX}/opt-out"
"""On a PropagationPolicy or ClusterPropagationPolicy: ``"true"`` leaves its workloads where eviction put them."""
CLUSTER_LABEL = f"{PREFIX}/cluster"
"""On a fail-back rebalancer: the cluster it fails back to."""
ROUND_LABEL = f"{PREFIX}/round"
"""On a fail-back rebalancer: a digest of (cluster, round); finds a round's batches after a restart."""
NAME_PREFIX = "failback-"


@dataclass(frozen=True)
class Progress:
    """What a binding's annotations say of its fail-backs: the clusters it was evicted from and has not gone back
    to (``record``), those it is going back to now with when that began (``flight``), when a relapse evicted
    it again (``evicted_at``, :data:`EVICTED_AT_ANNOTATION`), and when a fail-back was decided against
    (``skipped``, :data:`SKIPPED_ANNOTATION`)."""

    record: frozenset[str] = frozenset()
    flight: Mapping[str, datetime] = field(default_factory=dict)
    evicted_at: Mapping[str, datetime] = field(default_factory=dict)
    skipped: Mapping[str, datetime] = field(default_factory=dict)


Change = Callable[[Progress], Progress]
"""A rewrite of a binding's :class:`Progress`, given the current one."""

PP_NAME_ANNOTATION = "propagationpolicy.karmada.io/name"
PP_NAMESPACE_ANNOTATION = "propagationpolicy.karmada.io/namespace"
CPP_NAME_ANNOTATION = "clusterpropagationpolicy.karmada.io/name"


# --------------------------------------------------------------------------------------------------
# In flight, on the binding


def failing_back(binding: Obj) -> dict[str, datetime]:
    """The binding's fail-backs in flight: cluster → when it began. Entries that cannot be read are left out
    (the cluster is then simply pending again, as its record still names it)."""
    return _times(objects.annotations(binding).get(FAILING_BACK_ANNOTATION))


def evicted_at(binding: Obj) -> dict[str, datetime]:
    """When the binding's recorded evictions were (:data:`EVICTED_AT_ANNOTATION`); unreadable entries left out."""
    return _times(objects.annotations(binding).get(EVICTED_AT_ANNOTATION))


def skipped_at(binding: Obj) -> dict[str, datetime]:
    """When the binding's fail-backs were decided against (:data:`SKIPPED_ANNOTATION`); unreadable entries left
    out (such an eviction may then be recorded, and skipped, once more)."""
    return _times(objects.annotations(binding).get(SKIPPED_ANNOTATION))


def decided_already(binding: Obj, cluster: str, at: datetime | None, margin: timedelta = timedelta(0)) -> bool:
    """Whether an eviction of the binding from ``cluster`` at ``at`` is the one whose fail-back was decided against
    since (:data:`SKIPPED_ANNOTATION`); ``margin`` allows for another clock (an Event's). An eviction of unknown time
    (a task Karmada has not stamped yet) is not: it may be a new one, and at worst is skipped a second time. No skip
    is decided while a task names the cluster, so the decided eviction's task had its time, and the Event at its end
    comes before the mark."""
    return _decided(skipped_at(binding), cluster, at, margin)


def _decided(skipped: Mapping[str, datetime], cluster: str, at: datetime | None,
             margin: timedelta = timedelta(0)) -> bool:
    """:func:`decided_already` on the skip marks themselves (also what :func:`evicted_change` checks)."""
    decided = skipped.get(cluster)
    return decided is not None and at is not None and at - margin <= decided


def _times(text: str | None) -> dict[str, datetime]:
    """A ``{"<cluster>": "<RFC 3339>"}`` annotation's value, the entries that can be read."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    found: dict[str, datetime] = {}
    if isinstance(value, dict):
        for cluster, started in value.items():
            moment = parse_optional_time(started)
            if moment is not None:
                found[str(cluster)] = moment
    return found


def failing_back_clusters(binding: Obj) -> list[str]:
    """Informer index: the clusters the binding is being failed back to now."""
    return sorted(failing_back(binding))


def _times_value(times: Mapping[str, datetime]) -> str | None:
    text = {cluster: format_time(moment) for cluster, moment in sorted(times.items())}
    return json.dumps(text) if text else None


def progress_patch(binding: Obj, wanted: Progress) -> dict[str, Any]:
    """A merge patch setting the four annotations, conditional on the binding's resourceVersion."""
    return {"metadata": {"resourceVersion": objects.resource_version(binding),
                         "annotations": {EVICTED_FROM_ANNOTATION: record_value(wanted.record),
                                         FAILING_BACK_ANNOTATION: _times_value(wanted.flight),
                                         EVICTED_AT_ANNOTATION: _times_value(wanted.evicted_at),
                                         SKIPPED_ANNOTATION: _times_value(wanted.skipped)}}}


def triggered_in_round(binding: Obj, round_value: str) -> datetime | None:
    """The binding's ``spec.rescheduleTriggeredAt`` if it is at or after the start of the round (``round_value``,
    :data:`ROUND_ANNOTATION`): its reschedule was already triggered in this round, by a batch whose marks were
    lost (docs/failback.md, "What is kept where"). None otherwise, or when either time cannot be read.

    "At": both are whole seconds, and a batch created in the second its round began triggers at that second.
    """
    start = parse_optional_time(round_value)
    triggered = parse_optional_time(binding_spec(binding).get("rescheduleTriggeredAt"))
    if start is None or triggered is None or triggered < start:
        return None
    return triggered


def started_change(cluster: str, started: datetime) -> Change:
    """``change`` for :func:`rewrite`: the cluster's fail-back of this binding began at ``started``. Nothing changes
    when it is done meanwhile (no record), already marked, or was evicted at or after ``started`` (a relapse
    undid that move; both are whole seconds, and a tie counts as undone)."""
    def change(current: Progress) -> Progress:
        evicted = current.evicted_at.get(cluster)
        if (cluster not in current.record or cluster in current.flight
                or (evicted is not None and started <= evicted)):
            return current
        return replace(current, flight={**current.flight, cluster: started})
    return change


def finished_change(cluster: str, started: datetime) -> Change:
    """``change`` for :func:`rewrite`: the cluster's fail-back of this binding that began at ``started`` is over
    (healthy, or given up): its record goes. Nothing changes when that move is no longer in flight: an eviction
    undid it meanwhile (the recorder, quicker than the cache the judgement was made on, made it pending again),
    and that eviction's record must stay."""
    def change(current: Progress) -> Progress:
        if current.flight.get(cluster) != started:
            return current
        return _forgotten(current, cluster)
    return change


def skipped_change(cluster: str, at: datetime) -> Change:
    """``change`` for :func:`rewrite`: the binding does not go back to the cluster (skipped, opted out), decided
    at ``at``: its record goes, and the decision is marked (:data:`SKIPPED_ANNOTATION`). Nothing changes when the
    record went meanwhile (another decision, or the other controller's)."""
    def change(current: Progress) -> Progress:
        if cluster not in current.record:
            return current
        return replace(_forgotten(current, cluster), skipped={**current.skipped, cluster: at})
    return change


def _forgotten(current: Progress, cluster: str) -> Progress:
    """``current`` without the cluster's record, move in flight and relapse stamp."""
    return replace(current, record=current.record - {cluster}, flight=_without(current.flight, cluster),
                   evicted_at=_without(current.evicted_at, cluster))


@dataclass(frozen=True)
class Eviction:
    """An eviction the recorder saw: when (``at``), and whether it undid a fail-back (``undoes``: the cluster was
    in flight or recorded when it was seen)."""

    at: datetime
    undoes: bool = False

    def merged(self, other: Eviction) -> Eviction:
        """The same eviction seen twice: first seen at the earlier time, undoing if either sighting said so."""
        return Eviction(min(self.at, other.at), self.undoes or other.undoes)


def evicted_change(seen: Mapping[str, Eviction]) -> Change:
    """``change`` for :func:`rewrite`: the binding was evicted from each cluster of ``seen``. Each is recorded
    (pending). An eviction that undoes a fail-back (so it was seen, or the cluster is recorded or in flight now)
    is stamped with when it was seen, and a move back to it that began at or before it is undone (out of flight).
    A move that began after the eviction was seen is a newer one (a recorder that lagged behind a whole window):
    it stands. The times are whole seconds from two clocks (ours, or Karmada's for an eviction found in its Event;
    the API server's for a move's start): a skew of a second or more can take a relapse for an older eviction,
    which the controller then still finds on the binding (healthy elsewhere, this cluster unhealthy).

    An eviction at or before the cluster's skip mark (:data:`SKIPPED_ANNOTATION`) is the one already decided
    against: left out. A later one is recorded, and the mark goes."""
    def change(current: Progress) -> Progress:
        record, flight, stamps = set(current.record), dict(current.flight), dict(current.evicted_at)
        skipped = dict(current.skipped)
        for cluster, eviction in seen.items():
            started = flight.get(cluster)
            if (started is not None and started > eviction.at) or _decided(skipped, cluster, eviction.at):
                continue
            if eviction.undoes or cluster in record or started is not None:
                stamps[cluster] = max(eviction.at, stamps.get(cluster, eviction.at))
            record.add(cluster)
            flight.pop(cluster, None)
            skipped.pop(cluster, None)  # a newer eviction: its fail-back is decided afresh
        return Progress(frozenset(record), flight, stamps, skipped)
    return change


def relapsed_change(cluster: str, started: datetime, at: datetime) -> Change:
    """``change`` for :func:`rewrite`: the cluster's fail-back that began at ``started`` is undone, seen at ``at``
    on the binding itself (rescheduled elsewhere while the cluster is unhealthy): as :func:`evicted_change`, if
    that very move is still in flight."""
    def change(current: Progress) -> Progress:
        if current.flight.get(cluster) != started:
            return current
        return evicted_change({cluster: Eviction(max(at, started), undoes=True)})(current)  # never before the move
    return change


def _without(times: Mapping[str, datetime], cluster: str) -> dict[str, datetime]:
    return {c: t for c, t in times.items() if c != cluster}


def current(binding: Obj) -> Progress:
    return Progress(frozenset(recorded_clusters(binding)), failing_back(binding), evicted_at(binding),
                    skipped_at(binding))


# --------------------------------------------------------------------------------------------------
# Per-policy opt-out


def policy_of(binding: Obj) -> tuple[str, str] | None:
    """The binding's policy as (namespace, name); namespace "" for a ClusterPropagationPolicy; None: none known."""
    annotations = objects.annotations(binding)
    labels = objects.labels(binding)
    name = annotations.get(PP_NAME_ANNOTATION) or labels.get(PP_NAME_ANNOTATION)
    if name:
        namespace = (annotations.get(PP_NAMESPACE_ANNOTATION) or labels.get(PP_NAMESPACE_ANNOTATION)
                     or objects.namespace(binding))
        return namespace, name
    name = annotations.get(CPP_NAME_ANNOTATION) or labels.get(CPP_NAME_ANNOTATION)
    return ("", name) if name else None


def opted_out(policy: Obj | None) -> bool:
    return policy is not None and objects.annotations(policy).get(OPT_OUT_ANNOTATION) == "true"


def opt_out_reason(policy: Obj) -> str:
    kind = "PropagationPolicy" if objects.namespace(policy) else "ClusterPropagationPolicy"
    return f"its {kind} {objects.key(policy)} opts out of fail-back ({OPT_OUT_ANNOTATION}=true)"


# --------------------------------------------------------------------------------------------------
# Batches


def round_digest(cluster: str, round_value: str) -> str:
    return hashlib.sha256(f"{cluster}\n{round_value}".encode()).hexdigest()[:16]


def batch_body(cluster: str, round_value: str, workloads: Sequence[Workload], *, ttl_seconds: int) -> dict[str, Any]:
    """One batch's WorkloadRebalancer, named from (cluster, round, workloads): the same batch has the same name,
    so a create repeated after a lost answer or a restart meets 409 AlreadyExists instead of a second move."""
    ordered = sorted(workloads, key=workload_key)
    text = "\n".join([cluster, round_value, *("/".join(workload_key(w)) for w in ordered)])
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    metadata = {"name": f"{NAME_PREFIX}{cluster[:200]}-{digest}",
                "labels": {CLUSTER_LABEL: cluster[:63], ROUND_LABEL: round_digest(cluster, round_value)}}
    return rebalancer_body(metadata, ordered, ttl_seconds if ttl_seconds > 0 else None)


# --------------------------------------------------------------------------------------------------
# Pause and resume


@dataclass(frozen=True)
class Resume:
    """What the Cluster's resume annotation says: ``at`` (None: no resume), or ``invalid`` naming the problem."""

    at: datetime | None = None
    invalid: str | None = None


def read_resume(cluster: Obj) -> Resume:
    text = objects.annotations(cluster).get(RESUME_ANNOTATION)
    if text is None:
        return Resume()
    at = parse_optional_time(text.strip())
    if at is None:
        return Resume(invalid=f'{RESUME_ANNOTATION}="{text}" is not understood: want an RFC 3339 time '
                              f'(such as the value of {PAUSED_ANNOTATION}); nothing was changed')
    return Resume(at=at)


def paused_since(cluster: Obj) -> datetime | None:
    return parse_optional_time(objects.annotations(cluster).get(PAUSED_ANNOTATION))


@dataclass(frozen=True)
class InFlight:
    """One workload being failed back: its name for messages, when it began, why it is not healthy (None: it is)."""

    workload: str
    started: datetime
    not_healthy: str | None


@dataclass
class Plan:
    """One reconcile's decisions for a cluster."""

    finished: list[str] = field(default_factory=list)
    """Healthy again: their fail-back is over."""
    stuck: list[InFlight] = field(default_factory=list)
    """Not healthy within the deadline."""
    given_up: list[str] = field(default_factory=list)
    """Stuck ones the operator's resume releases (their fail-back is over, healthy or not)."""
    pause: bool = False
    """Write the pause now (it was not paused)."""
    unpause: bool = False
    """Remove the pause (the stuck ones are healthy, or the operator resumed)."""
    start: int = 0
    """How many pending workloads to start now."""
    next_deadline: float | None = None
    """Seconds until the earliest unhealthy workload misses its deadline."""


def plan(in_flight: Sequence[InFlight], pending: int, *, now: datetime, max_concurrent: int, deadline: float,
         may_start: bool, paused_at: datetime | None, resume: Resume) -> Plan:
    """The rules of progressive fail-back for one cluster.

    At most ``max_concurrent`` in flight; a workload not healthy ``deadline`` seconds after its start is stuck;
    any stuck one pauses the cluster (no new start) until all stuck ones are healthy or a resume at or after
    the pause releases them. ``may_start``: the cluster is recovered and its window is over (a relapse stops
    only what has not started).
    """
    result = Plan(finished=[f.workload for f in in_flight if f.not_healthy is None])
    unhealthy = [f for f in in_flight if f.not_healthy is not None]
    waits: list[float] = []
    for flight in unhealthy:
        left = deadline - (now - flight.started).total_seconds()
        if left <= 0:
            result.stuck.append(flight)
        else:
            waits.append(left)
    result.next_deadline = min(waits) if waits else None
    resumed = paused_at is not None and resume.at is not None and paused_at <= resume.at
    if resumed:
        result.given_up = [f.workload for f in result.stuck]
    held = bool(result.stuck) and not resumed
    if paused_at is None:
        result.pause = held
    else:
        result.unpause = not held
    busy = len(unhealthy) - len(result.given_up)
    if may_start and not held:
        result.start = max(0, min(pending, max_concurrent - busy))
    return result


def _placed(spec: BindingSpec, cluster: str) -> bool:
    """The schedule gives the cluster replicas; a binding without any (a ConfigMap, a ClusterRole) is placed
    wherever it is listed."""
    return target_contains(spec, cluster) and (not spec.get("replicas") or assigned_replicas(spec, cluster) > 0)


def not_placed_message(binding: Obj, cluster: str) -> str | None:
    """What to tell of a fail-back to the cluster that ended healthy with no replica there: the fresh schedule
    placed the workload elsewhere (the cluster excluded for a moment the recovery check did not see, its estimator
    still starting, a policy changed meanwhile). Saying so keeps the move from looking done. None: back as it
    should be, or not over after all (an eviction made it pending again)."""
    spec = binding_spec(binding)
    if _placed(spec, cluster) or cluster in current(binding).record:
        return None
    elsewhere = [name for name in binding_cluster_names(spec) if _placed(spec, name)]
    return (f"fail-back to cluster {cluster} is over without a replica there: Karmada's scheduler placed the "
            f"workload on {', '.join(elsewhere) or 'no cluster'}; it is not failed back again (a WorkloadRebalancer "
            "asks for another fresh schedule)")
