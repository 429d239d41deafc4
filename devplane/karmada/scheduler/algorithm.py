"""``Algorithm.Schedule`` (``pkg/scheduler/core/generic_scheduler.go``): filter, score, estimate, select, assign.

The estimate is the only step that may wait (the accurate estimator asks member clusters),
so it is an injected async callable; everything else is pure and runs on the cluster
snapshot the caller provides (the Cluster informer's cache).

With ``overcommit_protection`` (Karmada's alpha gate ``SchedulingOvercommitProtection``, off by default) the
estimator is also handed what the :class:`~.assumptions.AssumptionCache` holds for each feasible cluster, to deduct.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

import structlog

from controller_manager import objects
from controller_manager.objects import Obj
from karmada_api.placement import (
    SPREAD_BY_CLUSTER,
    SPREAD_BY_REGION,
    assigned_replicas,
    is_static_weighted,
    replica_scheduling,
    target_contains,
)
from karmada_api.shapes import BindingSpec
from kube_api.limits import MAX_INT32

from .assumptions import AssumedWorkload, AssumptionCache
from .division import (
    Candidate,
    SchedulingError,
    WrappedError,
    assign_replicas,
    assignment_of,
    attach_zero_replicas_clusters,
    spec_clusters,
)
from .filters import FitError, run_filters
from .overcommit import combined_estimate

log = structlog.get_logger(__name__)



class AvailableReplicas(Protocol):
    """(cluster objects, spec.replicaRequirements, spec.replicas) -> {cluster name: max available replicas};
    clusters missing from the answer get spec.replicas (calAvailableReplicas' MaxInt32 rule). ``assumed`` (given
    only when there is something to deduct) is, per cluster, the workloads assumed in flight there."""

    def __call__(self, clusters: list[dict[str, Any]], requirements: dict[str, Any] | None, replicas: int, /,
                 assumed: Mapping[str, Sequence[AssumedWorkload]] | None = None) -> Awaitable[dict[str, int]]: ...


LOCALITY_SCORE = 100
"""``ClusterLocality``: a cluster the binding is already scheduled to scores the maximum."""


async def general_available_replicas(clusters: list[dict[str, Any]], requirements: dict[str, Any] | None,
                                     replicas: int, /,
                                     assumed: Mapping[str, Sequence[AssumedWorkload]] | None = None) -> dict[str, int]:
    """The general estimator alone (Cluster ``status.resourceSummary``, less what is assumed), combined as the
    scheduler does."""
    return combined_estimate(clusters, requirements, replicas, assumed or {})


def score(cluster: Obj, spec: BindingSpec) -> int:
    """``ClusterLocality`` (100 when already scheduled there) + ``ClusterAffinity`` (always 0)."""
    name = objects.name(cluster)
    return LOCALITY_SCORE if spec.get("clusters") and target_contains(spec, name) else 0


def order_candidates(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Overflow order ascending, score descending, available replicas descending, name ascending."""
    return sorted(candidates, key=lambda c: (c.overflow_order, -c.score, -c.available, c.name))


def _swap_for_resources(candidates: list[Candidate], count: int, need: int) -> list[Candidate] | None:
    """``selectClustersByAvailableResource``: take the first ``count``; while their available replicas
    fall short of ``need``, replace from the last selected backwards with the largest unselected one
    that has more. None when even that is not enough."""
    selected, rest = candidates[:count], candidates[count:]
    index = len(selected) - 1
    while sum(c.available for c in selected) < need and index >= 0:
        best, best_value = -1, selected[index].available
        for position, candidate in enumerate(rest):
            if candidate.available > best_value:
                best, best_value = position, candidate.available
        if best >= 0:
            selected[index], rest[best] = rest[best], selected[index]
        index -= 1
    return selected if sum(c.available for c in selected) >= need else None


def select_best_clusters(candidates: Sequence[Candidate], placement: Obj, replicas: int) -> list[Candidate]:
    """``SelectBestClusters`` for ``cluster`` spread constraints (region grouping is not simulated)."""
    constraints = list(placement.get("spreadConstraints") or [])
    if not constraints or is_static_weighted(placement):
        return list(candidates)
    strategy = replica_scheduling(placement)
    ignore_resources = strategy is None or strategy.get("replicaSchedulingType") == "Duplicated"
    by_field = {c.get("spreadByField"): c for c in constraints}
    if SPREAD_BY_REGION in by_field:
        raise SchedulingError("region spread constraints are not supported by the simulation")
    constraint = by_field.get(SPREAD_BY_CLUSTER)
    if constraint is None:
        raise SchedulingError("just support cluster and region spread constraint")
    min_groups, max_groups = int(constraint.get("minGroups") or 0), int(constraint.get("maxGroups") or 0)
    if len(candidates) < min_groups:
        raise SchedulingError("the number of feasible clusters is less than spreadConstraint.MinGroups")
    count = min(len(candidates), max_groups)
    if ignore_resources:
        return list(candidates[:count])
    selected = _swap_for_resources(list(candidates), count, replicas)
    if selected is None:
        raise SchedulingError(f"no enough resource when selecting {count} clusters")
    return selected


class Algorithm:
    """The generic scheduler over a cluster snapshot and an estimator."""

    def __init__(self, clusters: Callable[[], Sequence[Obj]], available_replicas: AvailableReplicas | None = None,
                 *, enable_empty_workload_propagation: bool = False, overcommit_protection: bool = False,
                 assumptions: AssumptionCache | None = None) -> None:
        self._clusters = clusters
        self._available_replicas = available_replicas or general_available_replicas
        self.enable_empty_workload_propagation = enable_empty_workload_propagation
        self.overcommit_protection = overcommit_protection
        self.assumptions = assumptions if assumptions is not None else AssumptionCache()
        """What the scheduler assumed (filled by its controller, or by a caller replaying one); read only with
        ``overcommit_protection``."""

    def feasible(self, spec: BindingSpec, status: Obj | None) -> list[Obj]:
        """Step 1-2: clusters not being deleted that pass every filter; FitError when none does."""
        snapshot = list(self._clusters())
        feasible: list[Obj] = []
        diagnosis: dict[str, list[str]] = {}
        for cluster in snapshot:
            if objects.is_deleting(cluster):
                continue
            reason = run_filters(cluster, spec, status)
            if reason is None:
                feasible.append(cluster)
            else:
                diagnosis[objects.name(cluster)] = [reason]
        if not feasible:
            raise FitError(len(snapshot), diagnosis)
        return feasible

    async def available(self, clusters: list[Obj], spec: BindingSpec) -> dict[str, int]:
        """Step 4 (``calAvailableReplicas``): MaxInt32 for non-workloads, else the estimate, else replicas."""
        names = [objects.name(c) for c in clusters]
        replicas = int(spec.get("replicas") or 0)
        if replicas == 0 and not spec.get("components"):
            return dict.fromkeys(names, MAX_INT32)
        requirements = spec.get("replicaRequirements")
        wanted = dict(requirements) if requirements else None
        copies = [dict(c) for c in clusters]
        assumed = self.assumptions.by_cluster(names) if self.overcommit_protection else {}
        try:
            if assumed:
                answer = await self._available_replicas(copies, wanted, replicas, assumed)
            else:
                answer = await self._available_replicas(copies, wanted, replicas)
        except Exception as exc:  # an estimator error is ignored: fall back to the general estimator
            log.warning("replica estimation failed, using the general estimator", error=f"{type(exc).__name__}: {exc}")
            answer = await general_available_replicas(copies, wanted, replicas, assumed)
        result = {}
        for name in names:
            value = answer.get(name, MAX_INT32)
            result[name] = replicas if value == MAX_INT32 or value < 0 else value
        return result

    async def schedule(self, spec: BindingSpec, status: Obj | None) -> list[dict[str, Any]]:
        """The new ``spec.clusters``; FitError, UnschedulableError (wrapped) or SchedulingError otherwise."""
        feasible = self.feasible(spec, status)
        estimates = await self.available(feasible, spec)
        candidates = order_candidates([
            Candidate(cluster, allocatable=estimates[name], assigned=assigned_replicas(spec, name),
                      score=score(cluster, spec))
            for cluster in feasible for name in [objects.name(cluster)]])
        try:
            selected = select_best_clusters(candidates, spec.get("placement") or {}, int(spec.get("replicas") or 0))
        except SchedulingError as exc:
            raise WrappedError("failed to select clusters", exc) from exc
        try:
            result = assign_replicas(selected, spec, status)
        except SchedulingError as exc:
            raise WrappedError("failed to assign replicas", exc) from exc
        if self.enable_empty_workload_propagation:
            result = spec_clusters(attach_zero_replicas_clusters([c.name for c in selected], assignment_of(result)))
        return result
