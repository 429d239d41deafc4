"""The estimators with ``SchedulingOvercommitProtection`` on: what is assumed in flight is deducted first.

Karmada f8fdd02, with the gate on in the scheduler (and, for the accurate estimator, in karmada-scheduler-estimator):

* the general estimator (``pkg/estimator/client/general.go`` ``maxAvailableReplicas``) adds every assumed workload's
  ``replicas`` Pods and ``replicas * request`` (cpu in millicores, the rest in whole units) to a copy of the
  Cluster's ``resourceSummary.allocating`` (``deductAssumedWorkloadsFromSummary``), so the free pods and the
  summary-wide division shrink; with resource models (``getMaximumReplicasBasedOnResourceModels``) it first
  places the assumed workloads first-fit onto the grades' virtual nodes (``SchedulingSimulator.SimulateScheduling``
  with one set each: whatever does not fit is simply not placed), then counts what still fits there;
* the accurate estimator (``pkg/estimator/server/framework/plugins/noderesource`` ``Estimate``) places them the same
  way onto the member's Nodes (free = allocatable - requested; each assumed workload only on Nodes its own node
  claim matches), then sums what fits on each Node the request's claim matches.

First-fit walks nodes in order and fills each as far as it can before the next; nodes of one grade are identical,
so :class:`_FirstFit` keeps them as runs (capacity, count) and splits a run where the filling stops.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from estimator.accurate import NodeUsage, divide_capacity, node_claim_affinity, replica_request_units
from estimator.client import EstimatorClient
from estimator.general import (
    GeneralEstimator,
    ResourceModelError,
    allowed_pod_number,
    model_nodes,
    summary_based_replicas,
)
from estimator.merge import combine_available_replicas
from kube_api.limits import MAX_INT32
from kube_api.quantity import RESOURCE_CPU, RESOURCE_PODS, format_quantity, milli_value, parse_quantity, value
from kube_api.tolerations import node_tolerated

from .assumptions import AssumedWorkload

AssumedByCluster = Mapping[str, Sequence[AssumedWorkload]]


def deduct_from_summary(summary: Obj, assumed: Iterable[AssumedWorkload]) -> dict[str, Any]:
    """``deductAssumedWorkloadsFromSummary``: a copy of ``summary`` whose ``allocating`` also holds the assumed
    Pods and their requests (workloads of no replicas count for nothing)."""
    allocating: dict[str, Fraction] = {name: parse_quantity(amount)
                                       for name, amount in (summary.get("allocating") or {}).items()}
    for workload in assumed:
        if workload.replicas <= 0:
            continue
        allocating[RESOURCE_PODS] = allocating.get(RESOURCE_PODS, Fraction(0)) + workload.replicas
        for name, quantity in ((workload.requirements or {}).get("resourceRequest") or {}).items():
            if name == RESOURCE_CPU:
                total = Fraction(milli_value(quantity) * workload.replicas, 1000)
            else:
                total = Fraction(value(quantity) * workload.replicas)
            allocating[name] = allocating.get(name, Fraction(0)) + total
    result = dict(summary)
    result["allocating"] = {name: format_quantity(amount) for name, amount in allocating.items()}
    return result


class _FirstFit:
    """``SchedulingSimulator`` over runs of identical nodes: [free resources (scheduler units, with ``pods``), node
    object or None (virtual: matches any claim), count]."""

    def __init__(self, runs: Iterable[tuple[dict[str, int], Obj | None, int]]) -> None:
        self.runs = [(dict(free), node, count) for free, node, count in runs if count > 0]

    @staticmethod
    def _fits(free: Mapping[str, int], request: Mapping[str, int]) -> int:
        return divide_capacity(free, free.get(RESOURCE_PODS, 0), request)

    @staticmethod
    def _matches(node: Obj | None, requirements: Mapping[str, Any] | None) -> bool:
        """``MatchNode``: a virtual node matches everything; a Node its claim's affinity and tolerations."""
        if node is None:
            return True
        affinity, tolerations = node_claim_affinity(dict(requirements) if requirements else None)
        return (affinity.is_empty or affinity.matches(node)) and node_tolerated(node, tolerations)

    def place(self, workload: AssumedWorkload) -> None:
        """``SimulateScheduling(assumed, 1)``: take ``replicas`` first-fit, node by node, as far as they go."""
        request = replica_request_units(workload.requirements)
        remaining = workload.replicas
        placed: list[tuple[dict[str, int], Obj | None, int]] = []
        for free, node, count in self.runs:
            fits = self._fits(free, request) if remaining > 0 and self._matches(node, workload.requirements) else 0
            if fits <= 0:
                placed.append((free, node, count))
                continue
            full = min(count, remaining // fits)
            if full:
                placed.append((self._less(free, request, fits), node, full))
                remaining -= full * fits
            rest = count - full
            if rest and remaining:  # one node takes what is left, fewer than it could hold
                placed.append((self._less(free, request, remaining), node, 1))
                remaining, rest = 0, rest - 1
            if rest:
                placed.append((free, node, rest))
        self.runs = placed

    @staticmethod
    def _less(free: Mapping[str, int], request: Mapping[str, int], replicas: int) -> dict[str, int]:
        """``SubResource(request * replicas)`` with one pod each, clamped at 0 (a missing scalar stays missing)."""
        result = dict(free)
        result[RESOURCE_PODS] = max(result.get(RESOURCE_PODS, 0) - replicas, 0)
        for name, amount in request.items():
            if name in result:
                result[name] = max(result[name] - amount * replicas, 0)
        return result

    def capacity(self, requirements: Mapping[str, Any] | None) -> int:
        """Replicas of ``requirements`` that still fit: the sum of each matching node's ``MaxDivided``."""
        request = replica_request_units(dict(requirements) if requirements else None)
        total = sum(count * self._fits(free, request) for free, node, count in self.runs
                    if self._matches(node, requirements))
        return min(total, MAX_INT32)


def general_replicas(cluster: Obj, requirements: Mapping[str, Any] | None, assumed: Sequence[AssumedWorkload],
                     *, customized_resource_modeling: bool = True) -> int:
    """The general estimator for one Cluster with ``assumed`` deducted (none: exactly ``GeneralEstimator``)."""
    if not assumed:
        return GeneralEstimator(customized_resource_modeling=customized_resource_modeling).max_available_replicas(
            cluster, dict(requirements) if requirements is not None else None)
    original = objects.status(cluster).get("resourceSummary")
    if original is None:
        return 0
    summary = deduct_from_summary(original, assumed)
    maximum = allowed_pod_number(summary)
    if maximum <= 0:
        return 0
    if requirements is None:
        return min(maximum, MAX_INT32)
    if customized_resource_modeling and original.get("allocatableModelings"):
        try:
            runs = [(capacity, None, count) for capacity, count in model_nodes(cluster)]
        except ResourceModelError:
            pass
        else:
            simulator = _FirstFit(runs)
            for workload in assumed:
                simulator.place(workload)
            return min(maximum, simulator.capacity(requirements), MAX_INT32)
    return min(maximum, summary_based_replicas(summary, requirements.get("resourceRequest")), MAX_INT32)


def general_estimate(clusters: Iterable[Obj], requirements: Mapping[str, Any] | None,
                     assumed: AssumedByCluster) -> dict[str, int]:
    """``GeneralEstimator.MaxAvailableReplicas`` with each cluster's assumed workloads: cluster name → replicas."""
    return {objects.name(cluster): general_replicas(cluster, requirements, assumed.get(objects.name(cluster), ()))
            for cluster in clusters}


def accurate_replicas(usage: NodeUsage, requirements: Mapping[str, Any] | None,
                      assumed: Sequence[AssumedWorkload]) -> int:
    """The accurate estimator's node-resource estimate over a member's node usage (its incremental cache: no pass
    over the Pods) with ``assumed`` placed first; 0 without Nodes. Nodes in name order: Karmada's snapshot lists
    them round-robin over zones, in the order they were added, which is name order for one zone listed at once
    (docs/devplane.md)."""
    if not assumed:
        return usage.max_available_replicas(dict(requirements) if requirements else None)
    runs: list[tuple[dict[str, int], Obj | None, int]] = []
    for node in usage.present_nodes():
        free = usage.node_free(objects.name(node))
        if free is not None:
            resources, pods_free = free
            runs.append(({**resources, RESOURCE_PODS: pods_free}, node, 1))
    if not runs:
        return 0
    simulator = _FirstFit(runs)
    for workload in assumed:
        simulator.place(workload)
    return simulator.capacity(requirements)


def combined_estimate(clusters: Sequence[Obj], requirements: Mapping[str, Any] | None, replicas: int,
                      assumed: AssumedByCluster, accurate: Mapping[str, int] | None = None) -> dict[str, int]:
    """The general estimate with ``assumed`` deducted, combined by minimum with ``accurate`` answers (already
    deducted by whoever computed them), as ``calAvailableReplicas`` merges its estimators."""
    names = [objects.name(c) for c in clusters]
    answers: list[Mapping[str, int] | None] = [general_estimate(clusters, requirements, assumed)]
    if accurate is not None:
        answers.append(accurate)
    return combine_available_replicas(names, answers, replicas)


async def plane_available_replicas(estimator: EstimatorClient, clusters: list[dict[str, Any]],
                                   requirements: dict[str, Any] | None, replicas: int, assumed: AssumedByCluster,
                                   *, accurate: bool) -> dict[str, int]:
    """The dev plane's estimators with ``assumed`` deducted: the general one, and with ``accurate`` each member
    that can answer, recomputed from its node usage where something is assumed on it."""
    if not assumed:
        return await estimator.available_replicas(clusters, requirements, replicas, accurate=accurate)
    answers: dict[str, int] | None = None
    if accurate:
        answers = await estimator.max_available_replicas([objects.name(c) for c in clusters], requirements)
        for name in list(answers):
            member = estimator.registry.get(name)
            if member is not None and assumed.get(name):
                answers[name] = accurate_replicas(member.usage, requirements, assumed[name])
    return combined_estimate(clusters, requirements, replicas, assumed, answers)
