"""The fail-back rules, pure: is a cluster recovered, which bindings lost a cluster through eviction (on the
binding, or told by Karmada's Events), the record kept on a binding, and whether its placement still allows the
cluster (the batches: :mod:`.progress`).

No I/O here: :mod:`.controller` reads the caches, calls these and writes the results.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from controller_manager import objects
from controller_manager.objects import Obj
from controller_manager.reconcile import Request
from karmada_api.bindings import CRB_KIND, RB_KIND, binding_cluster_names
from karmada_api.clusters import CLUSTER_CONTROLLER_TAINT_KEYS, is_ready
from karmada_api.placement import affinity_allows, applied_placement, in_graceful_eviction_tasks
from karmada_api.shapes import as_placement, binding_spec, cluster_spec
from karmada_api.taints import has_no_execute_taints
from kube_api.timeutil import parse_optional_time
from kube_api.tolerations import TAINT_EFFECT_NO_SCHEDULE, find_untolerated_taint

EVICTED_FROM_ANNOTATION = "failback.karmada-rebalance.io/evicted-from"
"""On a binding: the clusters it was evicted from and has not failed back to (sorted, comma-separated)."""



# --------------------------------------------------------------------------------------------------
# Cluster health


def is_recovered(cluster: Obj) -> bool:
    """Ready, no NoExecute taint, and no NoSchedule taint set by Karmada's cluster controller.

    A NoSchedule taint of the user's (a cordon, maintenance) does not make the cluster unrecovered: it only
    stops *new* placements there, so the workloads that tolerate it may go back; the others wait for it to go
    (:func:`blocking_taint`).
    """
    if not is_ready(cluster):
        return False
    taints = cluster_spec(cluster).get("taints") or []
    if has_no_execute_taints(taints):
        return False
    return not any(taint.get("effect") == TAINT_EFFECT_NO_SCHEDULE and taint.get("key") in CLUSTER_CONTROLLER_TAINT_KEYS
                   for taint in taints)


def is_unhealthy(cluster: Obj) -> bool:
    """What makes a cluster dropped from ``spec.clusters`` count as evicted: not Ready, or a NoExecute taint."""
    return not is_ready(cluster) or has_no_execute_taints(cluster_spec(cluster).get("taints"))


@dataclass
class RecoveryWindows:
    """When each cluster was first seen recovered, in this process (monotonic seconds).

    In memory on purpose: after a restart the window starts again from the first observation, so a
    cluster never fails back before a full window of *observed* health. The records themselves are on
    the bindings and survive.
    """

    window: float
    started: dict[str, float] = field(default_factory=dict)

    def observe(self, cluster: str, recovered: bool, now: float) -> tuple[bool, float]:
        """(the window started at this observation, seconds left; ≤ 0: the window is over).

        Not recovered: the window is reset (a relapse) and the time left is the whole window.
        """
        if not recovered:
            self.started.pop(cluster, None)
            return False, self.window
        start = self.started.get(cluster)
        if start is None:
            self.started[cluster] = now
            return True, self.window
        return False, self.window - (now - start)

    def forget(self, cluster: str) -> None:
        self.started.pop(cluster, None)


# --------------------------------------------------------------------------------------------------
# The record on a binding


def recorded_clusters(binding: Obj) -> list[str]:
    """The clusters named by the binding's record, sorted, without blanks or repeats."""
    text = objects.annotations(binding).get(EVICTED_FROM_ANNOTATION) or ""
    return sorted({name.strip() for name in text.split(",") if name.strip()})


def record_value(clusters: Iterable[str]) -> str | None:
    """The annotation's value for these clusters; None (remove the annotation) when there are none."""
    names = sorted(set(clusters))
    return ",".join(names) if names else None


APPLICATION_FAILURE_REASON = "ApplicationFailure"
"""A graceful-eviction task's reason when Karmada's application failover moved the workload off a cluster that is
healthy (the application failed there): not a cluster failure, so nothing to fail back when the cluster recovers."""


def _cluster_failure_tasks(binding: Obj) -> list[Obj]:
    """The binding's graceful-eviction tasks, application failovers left out."""
    return [task for task in binding_spec(binding).get("gracefulEvictionTasks") or []
            if task.get("fromCluster") and task.get("reason") != APPLICATION_FAILURE_REASON]


def eviction_task_clusters(binding: Obj) -> set[str]:
    """The clusters the binding's graceful-eviction tasks evict it from, application failovers left out."""
    return {str(task["fromCluster"]) for task in _cluster_failure_tasks(binding)}


def task_created(binding: Obj, cluster: str) -> datetime | None:
    """When the (latest) graceful-eviction task from the cluster began, application failovers left out; None when
    there is none, or it does not say yet (Karmada's controller fills ``creationTimestamp`` in on its first look)."""
    times = [parse_optional_time(task.get("creationTimestamp"))
             for task in _cluster_failure_tasks(binding) if task["fromCluster"] == cluster]
    known = [t for t in times if t is not None]
    return max(known) if known and len(known) == len(times) else None


def evicting_since(binding: Obj, cluster: str, started: datetime) -> bool:
    """A graceful-eviction task from the cluster began after ``started`` (or does not say when), so it is not one
    that was there when that move began."""
    if cluster not in eviction_task_clusters(binding):
        return False
    created = task_created(binding, cluster)
    return created is None or created > started


def undoes_a_move(binding: Obj, cluster: str, moving: Collection[str]) -> bool:
    """Whether an eviction of the binding from the cluster, seen now, undid a move: one to the cluster (``moving``:
    in flight, or listed and not marked yet), or whatever its last reschedule trigger moved (a fail-back judged
    over already included). Such an eviction is stamped (:data:`~.progress.EVICTED_AT_ANNOTATION`)."""
    return cluster in moving or bool(binding_spec(binding).get("rescheduleTriggeredAt"))


def evicted_clusters(old: Obj | None, new: Obj, clusters: Callable[[str], Obj | None],
                     unknown: set[str] | None = None, *, again: Iterable[str] = ()) -> set[str]:
    """The clusters ``new`` lost through eviction and does not record yet (or records, but names in ``again``: an
    eviction from a cluster it was being failed back to, which undoes that fail-back).

    Eviction is a graceful-eviction task from the cluster (new in ``new``; every task when there is no
    ``old``, as on the initial list), or the cluster dropped from ``spec.clusters``
    (``old`` → ``new``) while it is unhealthy (:func:`is_unhealthy`). A dropped cluster that ``clusters``
    does not know (yet: its cache may still be filling) is added to ``unknown`` instead, for the caller
    to check later. A binding being deleted records nothing.
    """
    if objects.is_deleting(new):
        return set()
    evicted = eviction_task_clusters(new)
    if old is not None:
        # Only a task that appears: one still there after its fail-back must not record it again.
        evicted -= eviction_task_clusters(old)
        for name in set(binding_cluster_names(binding_spec(old))) - set(binding_cluster_names(binding_spec(new))):
            cluster = clusters(name)
            if cluster is None:
                if unknown is not None:
                    unknown.add(name)
            elif is_unhealthy(cluster):
                evicted.add(name)
    return evicted - (set(recorded_clusters(new)) - set(again))


# --------------------------------------------------------------------------------------------------
# Fail-back


def skip_reason(binding: Obj, cluster: Obj) -> str | None:
    """Why the binding must not fail back to ``cluster`` (None: it may).

    Being deleted; or its applied placement (the one it was last scheduled with) no longer allows the
    cluster: none of its cluster affinities matches. A binding never scheduled (no applied placement) is
    allowed: the scheduler decides. A taint it does not tolerate is no reason to skip (:func:`blocking_taint`).
    """
    if objects.is_deleting(binding):
        return "the binding is being deleted"
    try:
        applied = applied_placement(binding)
    except ValueError as exc:
        return f"its applied placement cannot be read: {exc}"
    if applied is None:
        return None
    placement = as_placement(applied)
    name = objects.name(cluster)
    if not affinity_allows(placement, cluster):
        if placement.get("clusterAffinities"):
            return f"no cluster affinity of its placement matches cluster {name}"
        return f"its placement's cluster affinity no longer matches cluster {name}"
    return None


def blocking_taint(binding: Obj, cluster: Obj) -> str | None:
    """A taint of ``cluster`` that the binding's applied placement does not tolerate, as ``key:effect`` (None:
    none). The scheduler would not place the workload there now, but such a taint is usually an operator's
    cordon or maintenance window (``karmadactl cordon`` sets ``cluster.karmada.io/unschedulable:NoSchedule``),
    lifted again later: the fail-back waits for it instead of being given up."""
    try:
        applied = applied_placement(binding)
    except ValueError:
        return None  # skip_reason() says so
    if applied is None:
        return None  # never scheduled: the scheduler decides
    taint = find_untolerated_taint(cluster_spec(cluster).get("taints"), as_placement(applied).get("clusterTolerations"))
    return None if taint is None else f"{taint.get('key')}:{taint.get('effect')}"


# --------------------------------------------------------------------------------------------------
# Evictions told by Karmada's Events


EVICTION_SUCCEEDED_REASON = "EvictWorkloadFromClusterSucceed"
"""The Event Karmada's graceful-eviction controllers record on a binding (and its template) when a task is done."""
EVICTION_EVENTS_SELECTOR = f"reason={EVICTION_SUCCEEDED_REASON}"
_EVICTION_MESSAGE = re.compile(r"Evict from cluster (?P<cluster>\S+) succeed\.")
_BINDING_KINDS = {RB_KIND.resource.kind: RB_KIND, CRB_KIND.resource.kind: CRB_KIND}


@dataclass(frozen=True)
class EvictionEvent:
    """What an ``EvictWorkloadFromClusterSucceed`` Event on a binding tells: the binding, the cluster, when."""

    request: Request
    uid: str
    cluster: str
    at: datetime


def eviction_event(event: Obj) -> EvictionEvent | None:
    """The eviction an Event tells of; None for any other Event (the template's copy, another reason, a message
    or time that is not Karmada's)."""
    involved = event.get("involvedObject") or {}
    kind = _BINDING_KINDS.get(str(involved.get("kind") or ""))
    found = _EVICTION_MESSAGE.fullmatch(str(event.get("message") or ""))
    at = (parse_optional_time(event.get("lastTimestamp")) or parse_optional_time(event.get("eventTime"))
          or parse_optional_time(objects.creation_timestamp(event)))
    if event.get("reason") != EVICTION_SUCCEEDED_REASON or kind is None or found is None or at is None:
        return None
    namespace = str(involved.get("namespace") or "") if kind is RB_KIND else ""
    return EvictionEvent(Request(namespace, str(involved.get("name") or "")), str(involved.get("uid") or ""),
                         found["cluster"], at)


EVENT_CLOCK_MARGIN = timedelta(seconds=2)
"""How much later than a move's start (or a reschedule trigger) an eviction Event may be and still be taken as
older than it. Karmada stamps the Event with its controller-manager's clock, when the task goes; the start and
the trigger are the API server's, in whole seconds. No relapse ends that quickly: the workload must first be
placed back on the cluster, evicted from it again, and be healthy elsewhere."""


def application_failover(binding: Obj) -> bool:
    """The binding has Karmada's application failover on (``spec.failover.application``): an eviction Event about
    it may tell of an application that failed on a healthy cluster, which is nothing to fail back."""
    return bool((binding_spec(binding).get("failover") or {}).get("application"))


def evicted_by_event(binding: Obj, event: EvictionEvent, in_flight: Mapping[str, datetime]) -> bool:
    """Whether ``event`` tells of an eviction ``binding`` does not show as over, nor records already.

    Over (or someone else's business) when the binding is being deleted or is another one by that name (uid),
    has the cluster in ``spec.clusters`` again, or was rescheduled after the event (a fail-back that already ran,
    or the user's own rebalancer: both moved it afresh). A fail-back to the cluster in flight (``in_flight``:
    cluster → when the move began) makes it a relapse if the event is later than the move's start: no fail-back
    starts while an eviction from its cluster is still going on (its task on the binding), so such an eviction
    began after the move. "Later" and "after" allow :data:`EVENT_CLOCK_MARGIN` for the clocks. Never for a
    binding with application failover on (:func:`application_failover`): the Event does not say why.
    """
    if objects.is_deleting(binding) or (event.uid and objects.uid(binding) != event.uid):
        return False
    if application_failover(binding):
        return False
    spec = binding_spec(binding)
    if event.cluster in binding_cluster_names(spec):
        return False
    started = in_flight.get(event.cluster)
    if started is not None:
        return event.at > started + EVENT_CLOCK_MARGIN
    if event.cluster in recorded_clusters(binding):
        return False
    triggered = parse_optional_time(spec.get("rescheduleTriggeredAt"))
    return triggered is None or event.at > triggered + EVENT_CLOCK_MARGIN


def wait_reason(binding: Obj, cluster: Obj) -> str | None:
    """Why the binding's fail-back to ``cluster`` cannot start yet, though it is its turn (None: it can). Either
    makes a fresh schedule leave the cluster out, so the move would look finished with the workload elsewhere."""
    name = objects.name(cluster)
    if evicting(binding, name):
        return "Karmada's graceful eviction from it is not over (a task of spec.gracefulEvictionTasks names it)"
    taint = blocking_taint(binding, cluster)
    if taint is not None:
        return (f"its placement does not tolerate the taint {taint} of cluster {name}; it fails back once the taint "
                f"is removed (or tolerated)")
    return None


def evicting(binding: Obj, cluster: str) -> bool:
    """Karmada's graceful eviction of the binding from the cluster is going on (a task names it): its scheduler
    leaves the cluster out (``ClusterEviction``), so no fail-back to it can start."""
    return in_graceful_eviction_tasks(binding_spec(binding), cluster)


def skip_stands(binding: Obj, cluster: Obj) -> bool:
    """Whether a skip decided on an older copy of the binding still stands on ``binding`` (read afresh): a reason to
    skip, and no eviction from the cluster going on (a skip waits for it to end: :func:`evicting`)."""
    return skip_reason(binding, cluster) is not None and not evicting(binding, objects.name(cluster))
