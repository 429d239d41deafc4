"""Replica division: Webster apportionment and the scheduler's assignment strategies.

Karmada's ``pkg/scheduler/core/assignment.go`` and ``division_algorithm.go`` as pure functions:
every weighted division hands out replicas one at a time by the Sainte-Laguë priority
``votes / (2*seats + 1)``, ties broken by fewer seats and then by name in an order fixed by the
parity of FNV-32a of the template's UID. Assignments are ``(cluster name, replicas)`` pairs;
:func:`assign_replicas` returns ``spec.clusters`` entries.

Errors carry Karmada's texts, wrapped the way ``fmt.Errorf("...: %w")`` wraps them so that
:func:`find_error` still finds an :class:`UnschedulableError` under the prefixes.

Not implemented: overflow affinities (``clusterAffinities[*].overflowAffinities``) — every
candidate is in one tier; multi-component workloads (``spec.components``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from controller_manager import objects
from controller_manager.objects import Obj
from karmada_api.names import fnv32a
from karmada_api.placement import (
    STRATEGY_AGGREGATED,
    STRATEGY_DUPLICATED,
    STRATEGY_DYNAMIC_WEIGHT,
    STRATEGY_STATIC_WEIGHT,
    cluster_matches,
    replica_scheduling,
    replica_scheduling_type,
    reschedule_required,
    strategy_type,
)
from karmada_api.shapes import BindingSpec
from kube_api.limits import MAX_INT32
from kube_api.validation import aggregate_messages

from ...runtime import error_text

Assignment = list[tuple[str, int]]
E = TypeVar("E", bound=BaseException)


# --------------------------------------------------------------------------------------------------
# Errors


class SchedulingError(Exception):
    """A scheduling failure with a Karmada message (retried by the scheduler)."""


class UnschedulableError(SchedulingError):
    """Not enough capacity (``framework.UnschedulableError``): condition reason ``Unschedulable``."""


class WrappedError(SchedulingError):
    """``fmt.Errorf("<prefix>: %w", err)``: the message is prefixed, ``err`` stays reachable."""

    def __init__(self, prefix: str, err: BaseException) -> None:
        super().__init__(f"{prefix}: {error_text(err)}")
        self.err = err


class AggregateError(SchedulingError):
    """``utilerrors.NewAggregate``: several errors; not unwrapped by :func:`find_error` (as in Go)."""

    def __init__(self, errors: Sequence[BaseException]) -> None:
        self.errors = list(errors)
        super().__init__(aggregate_messages([error_text(e) for e in self.errors]))


def aggregate(errors: Iterable[BaseException | None]) -> AggregateError | None:
    """An aggregate of the non-None errors, or None if there are none."""
    present = [e for e in errors if e is not None]
    return AggregateError(present) if present else None


def find_error(err: BaseException | None, cls: type[E]) -> E | None:
    """``errors.As``: ``err`` or an error it wraps (through :class:`WrappedError`) of type ``cls``."""
    seen = 0
    while err is not None and seen < 64:
        if isinstance(err, cls):
            return err
        err = err.err if isinstance(err, WrappedError) else None
        seen += 1
    return None


# --------------------------------------------------------------------------------------------------
# Webster (pkg/util/helper/webstermethod.go) and the Dispenser (pkg/util/helper/binding.go)


@dataclass(slots=True)
class Party:
    name: str
    votes: int = 0
    seats: int = 0


Tiebreak = Callable[[Party, Party], bool]
"""``tiebreak(a, b)``: whether ``a`` wins over ``b`` at equal priority."""


def uid_tiebreak(uid: str) -> Tiebreak:
    """Fewer seats wins; then the smaller name, or the larger one when FNV-32a(uid) is odd."""
    descending = bool(uid) and fnv32a(uid.encode()) & 1 == 1

    def wins(a: Party, b: Party) -> bool:
        if a.seats != b.seats:
            return a.seats < b.seats
        return a.name > b.name if descending else a.name < b.name

    return wins


def webster(seats: int, votes: Mapping[str, int], initial: Mapping[str, int] | None = None,
            tiebreak: Tiebreak | None = None) -> list[Party] | None:
    """``AllocateWebsterSeats``: hand out ``seats`` one by one to the highest ``votes / (2*seats+1)``.

    Parties in ``initial`` keep their seats (with 0 votes unless also in ``votes``). Returns every
    party sorted by name, or None when there are no parties.
    """
    parties = {name: Party(name, 0, held) for name, held in (initial or {}).items()}
    for name, count in votes.items():
        parties.setdefault(name, Party(name)).votes = count
    if not parties:
        return None
    wins = tiebreak or uid_tiebreak("")

    def better(a: Party, b: Party) -> bool:
        pa, pb = a.votes / (2 * a.seats + 1), b.votes / (2 * b.seats + 1)
        return wins(a, b) if pa == pb else pa > pb

    members = list(parties.values())
    for _ in range(max(seats, 0)):
        best = members[0]
        for party in members[1:]:
            if better(party, best):
                best = party
        best.seats += 1
    return sorted(members, key=lambda p: p.name)


def webster_seats(seats: int, votes: Iterable[tuple[str, int]], uid: str = "",
                  initial: Iterable[tuple[str, int]] | None = None) -> dict[str, int]:
    """:func:`webster` with the UID tie-break of :func:`uid_tiebreak`: each party's seats by name, in name
    order (empty without parties)."""
    return {p.name: p.seats for p in webster(seats, dict(votes), dict(initial or []), uid_tiebreak(uid)) or []}


def dispense(seats: int, initial: Sequence[tuple[str, int]] | None, weights: Sequence[tuple[str, int]],
             uid: str = "") -> Assignment:
    """``Dispenser.TakeByWeight``: ``seats`` more replicas on top of ``initial``, by ``weights``."""
    if seats == 0 and initial:
        return list(initial)
    if sum(weight for _, weight in weights) == 0:
        return list(initial or [])
    return list(webster_seats(seats, weights, uid, initial).items())


def spread_replicas_by_target_clusters(total: int, clusters: Sequence[tuple[str, int]],
                                       initial: Sequence[tuple[str, int]] | None = None, uid: str = "") -> Assignment:
    """``SpreadReplicasByTargetClusters``: the clusters' replicas are the weights."""
    return dispense(total, initial, clusters, uid)


def merge(previous: Sequence[tuple[str, int]] | None, new: Sequence[tuple[str, int]] | None) -> Assignment:
    """Per-name addition: entries of ``new`` (in order), then the names only in ``previous``."""
    if not previous:
        return list(new or [])
    if not new:
        return list(previous)
    old = dict(previous)
    out: Assignment = []
    for name, replicas in new:
        out.append((name, replicas + old.pop(name)) if name in old else (name, replicas))
    return out + list(old.items())


# --------------------------------------------------------------------------------------------------
# Strategies (pkg/scheduler/core/assignment.go, division_algorithm.go)


def _sort_desc(items: Iterable[tuple[str, int]]) -> Assignment:
    """Stable sort by replicas, largest first (Go's insertion sort for these small lists)."""
    return sorted(items, key=lambda item: -item[1])


def divide(strategy: str, available: Sequence[tuple[str, int]], target: int,
           previous: Sequence[tuple[str, int]] | None, uid: str = "") -> Assignment:
    """``dynamicDivideReplicas``: ``target`` replicas over ``available`` (sorted), merged onto ``previous``."""
    total = sum(value for _, value in available)
    if total < target:
        raise UnschedulableError(f"Clusters available replicas {total} are not enough to schedule.")
    avail = list(available)
    if strategy == STRATEGY_AGGREGATED:
        prior = {name for name, replicas in previous or [] if replicas > 0}
        if prior:
            avail = [a for a in avail if a[0] in prior] + [a for a in avail if a[0] not in prior]
        running = 0
        for index, (_, value) in enumerate(avail):
            running += value
            if running >= target:
                avail = avail[:index + 1]
                break
    return merge(previous, dispense(target, None, avail, uid))


def assign_dynamic(strategy: str, candidates: Sequence[tuple[str, int]], replicas: int,
                   spec_clusters: Sequence[tuple[str, int]], *, fresh: bool = False, uid: str = "") -> Assignment:
    """``assignByDynamicStrategy`` (DynamicWeight and Aggregated), zero entries removed.

    ``candidates`` are ``(name, allocatable replicas)`` in candidate order; ``spec_clusters`` the
    previous result. Fresh re-divides everything by free capacity plus own replicas; Steady scales
    down proportionally to the previous result, or adds the missing replicas on top of it.
    """
    names = {name for name, _ in candidates}
    scheduled = [(name, r) for name, r in spec_clusters if name in names]
    assigned = sum(r for _, r in scheduled)
    previous: Assignment | None = None
    if fresh:
        own = dict(scheduled)
        prefix, target = "failed to do fresh scale", replicas
        available = _sort_desc((n, a + own.get(n, 0)) for n, a in candidates)
    elif assigned > replicas:  # shrink in proportion to the previous result
        prefix, target, available = "failed to scale down", replicas, _sort_desc(scheduled)
    elif assigned < replicas:  # add the missing replicas on top (a first schedule is a scale up from 0)
        prefix, target, available = "failed to scale up", replicas - assigned, _sort_desc(candidates)
        previous = scheduled
    else:
        return remove_zero_replicas(scheduled)
    try:
        result = divide(strategy, available, target, previous, uid)
    except SchedulingError as exc:
        raise WrappedError(prefix, exc) from exc
    return remove_zero_replicas(result)


def static_weights(candidates: Sequence[Obj], placement: Mapping[str, Any] | None
                   ) -> dict[str, int] | None:
    """Each candidate cluster's static weight: the largest weight of the rules matching it (0 if none).

    None when ``weightPreference`` is unset (every cluster weighs the same).
    """
    weights = (replica_scheduling(placement) or {}).get("weightPreference")
    if not isinstance(weights, Mapping):
        return None
    result: dict[str, int] = {}
    for cluster in candidates:
        name = objects.name(cluster)
        best = 0
        for rule in weights.get("staticWeightList") or []:
            if cluster_matches(cluster, rule.get("targetCluster") or {}):
                best = max(best, int(rule.get("weight") or 0))
        result[name] = best
    return result


def assign_static(candidate_names: Sequence[str], weight_of: Mapping[str, int] | None, replicas: int,
                  uid: str = "") -> Assignment:
    """``assignByStaticWeightStrategy``: Webster over the positive weights (all 1 if none); zeros kept."""
    if weight_of is None:
        weight_of = dict.fromkeys(candidate_names, 1)
    weighted = [(n, weight_of.get(n, 0)) for n in candidate_names if weight_of.get(n, 0) > 0]
    if not weighted:
        weighted = [(n, 1) for n in candidate_names]
    return dispense(replicas, None, weighted, uid)


def assign_duplicated(candidate_names: Sequence[str], replicas: int) -> Assignment:
    """``assignByDuplicatedStrategy``: every candidate gets ``replicas`` (candidate order)."""
    return [(name, replicas) for name in candidate_names]


def remove_zero_replicas(assignment: Iterable[tuple[str, int]]) -> Assignment:
    return [(name, replicas) for name, replicas in assignment if replicas > 0]


def attach_zero_replicas_clusters(selected: Sequence[str], result: Sequence[tuple[str, int]]) -> Assignment:
    """``attachZeroReplicasCluster`` (``--enable-empty-workload-propagation``)."""
    present = {name for name, _ in result}
    return list(result) + [(name, 0) for name in selected if name not in present]


# --------------------------------------------------------------------------------------------------
# AssignReplicas (pkg/scheduler/core/common.go)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A feasible cluster, scored and estimated (``ClusterDetailInfo``)."""

    cluster: Obj
    allocatable: int = MAX_INT32
    """Replicas the estimators say still fit (``AllocatableReplicas``)."""
    assigned: int = 0
    """Replicas ``spec.clusters`` currently gives this cluster."""
    score: int = 0
    overflow_order: int = 0

    @property
    def name(self) -> str:
        return objects.name(self.cluster)

    @property
    def available(self) -> int:
        """``AvailableReplicas``: what fits plus what is already there."""
        return self.allocatable + self.assigned


def spec_clusters(assignment: Iterable[tuple[str, int]]) -> list[dict[str, Any]]:
    """``spec.clusters`` entries; ``replicas`` is omitted when 0 (``omitempty``)."""
    return [{"name": name, "replicas": replicas} if replicas else {"name": name} for name, replicas in assignment]


def assignment_of(clusters: Iterable[Mapping[str, Any]] | None) -> Assignment:
    """``(name, replicas)`` pairs of ``spec.clusters``."""
    return [(str(c.get("name") or ""), int(c.get("replicas") or 0)) for c in clusters or []]


def _assigns_workload(spec: BindingSpec) -> bool:
    return ((int(spec.get("replicas") or 0) > 0 or spec.get("replicaRequirements") is not None)
            and len(spec.get("components") or []) <= 1)


def assign_replicas(candidates: Sequence[Candidate], spec: BindingSpec,
                    status: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """``AssignReplicas``: the scheduling result for ``candidates`` (in candidate order).

    Workloads are divided by the strategy of ``spec.placement`` (the binding's current placement)
    and zero entries removed; anything else goes to every candidate without replicas.
    """
    if not candidates:
        raise SchedulingError("no clusters available to schedule")
    names = [c.name for c in candidates]
    if not _assigns_workload(spec):
        return [{"name": name} for name in names]
    placement = spec.get("placement") or {}
    replicas = int(spec.get("replicas") or 0)
    uid = str((spec.get("resource") or {}).get("uid") or "")
    strategy = strategy_type(placement)
    if strategy == STRATEGY_DUPLICATED:
        result = assign_duplicated(names, replicas)
    elif strategy == STRATEGY_STATIC_WEIGHT:
        result = assign_static(names, static_weights([c.cluster for c in candidates], placement), replicas, uid)
    elif strategy in (STRATEGY_DYNAMIC_WEIGHT, STRATEGY_AGGREGATED):
        fresh = reschedule_required(spec.get("rescheduleTriggeredAt"), (status or {}).get("lastScheduledTime"))
        result = assign_dynamic(strategy, [(c.name, c.allocatable) for c in candidates], replicas,
                                assignment_of(spec.get("clusters")), fresh=fresh, uid=uid)
    else:
        preference = (replica_scheduling(placement) or {}).get("replicaDivisionPreference") or ""
        raise SchedulingError(
            f"unsupported replica scheduling strategy, replicaSchedulingType: {replica_scheduling_type(placement)}, "
            f"replicaDivisionPreference: {preference}, please try another scheduling strategy")
    return spec_clusters(remove_zero_replicas(result))
