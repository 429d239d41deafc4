"""The general estimator: max replicas from a Cluster's ``status.resourceSummary`` alone.

Always registered on the client side (name ``general-estimator``). It needs no member access, so
it is coarse: free pods are ``allocatable - allocated - allocating``; with resource models (feature
``CustomizedClusterResourceModeling``, on by default) and ``allocatableModelings`` present it
first-fits replicas onto virtual nodes sized at each grade's minimum, otherwise it divides the
cluster-wide free amount of each requested resource. A cluster without a resource summary gets 0,
which is why a simulated member must publish one (``pkg/estimator/client/general.go`` at Karmada
commit f8fdd02).
"""

from __future__ import annotations

from collections.abc import Iterable

from controller_manager import objects
from controller_manager.objects import Obj
from estimator.accurate import divide_capacity, replica_request_units
from estimator.merge import UNAUTHENTIC
from kube_api.limits import MAX_INT32
from kube_api.quantity import RESOURCE_CPU, RESOURCE_PODS, milli_value, parse_quantity, resource_list_units, value

__all__ = [
    "MAX_PODS_PER_NODE",
    "NAME",
    "UNAUTHENTIC",
    "GeneralEstimator",
    "ResourceModelError",
    "allowed_pod_number",
    "max_available_replicas",
    "model_based_replicas",
    "model_nodes",
    "summary_based_replicas",
]

NAME = "general-estimator"
MAX_PODS_PER_NODE = 110
"""Pod capacity of each virtual resource-model node (Kubernetes' default per-node limit)."""
MAX_INT64 = 2**63 - 1


class ResourceModelError(ValueError):
    """The resource models cannot be used (none defined, no summary, negative counts)."""


def _pods(resources: Obj | None) -> int:
    quantity = (resources or {}).get(RESOURCE_PODS)
    return value(quantity) if quantity is not None else 0


def allowed_pod_number(summary: Obj) -> int:
    """``getAllowedPodNumber``: allocatable - allocated - allocating pods, 0 if not positive."""
    allowed = _pods(summary.get("allocatable")) - _pods(summary.get("allocated")) - _pods(summary.get("allocating"))
    return max(allowed, 0)


def summary_based_replicas(summary: Obj, resource_request: Obj | None) -> int:
    """``getMaximumReplicasBasedOnClusterSummary``: min over requested resources of free // request.

    Requests whose ``Value()`` is not positive are ignored; a requested resource the cluster does
    not list as allocatable, or has none of left, gives 0. cpu divides in millicores. Nothing
    requested → int64 max.
    """
    allocatable = summary.get("allocatable") or {}
    allocated = summary.get("allocated") or {}
    allocating = summary.get("allocating") or {}
    result = MAX_INT64
    for name, quantity in (resource_request or {}).items():
        requested = value(quantity)
        if requested <= 0:
            continue
        if name not in allocatable:
            return 0
        available = parse_quantity(allocatable[name])
        if name in allocated:
            available -= parse_quantity(allocated[name])
        if name in allocating:
            available -= parse_quantity(allocating[name])
        if value(available) <= 0:
            return 0
        if name == RESOURCE_CPU:
            requested = milli_value(quantity)
            free = milli_value(available)
        else:
            free = value(available)
        result = min(result, free // requested)
    return result


def model_nodes(cluster: Obj) -> list[tuple[dict[str, int], int]]:
    """``buildModelNodes`` grouped: (capacity in scheduler units, node count) per grade, ascending."""
    summary = objects.status(cluster).get("resourceSummary")
    if summary is None:
        raise ResourceModelError("resource summary is nil")
    models = objects.spec(cluster).get("resourceModels") or []
    if not models:
        raise ResourceModelError("no resource models defined")
    capacity_by_grade: dict[int, dict[str, int]] = {}
    for model in models:
        minimums = {r.get("name"): r.get("min") or 0 for r in model.get("ranges") or []}
        capacity = resource_list_units(minimums)
        capacity[RESOURCE_PODS] = MAX_PODS_PER_NODE
        capacity_by_grade[int(model.get("grade") or 0)] = capacity
    count_by_grade: dict[int, int] = {}
    for modeling in summary.get("allocatableModelings") or []:
        grade, count = int(modeling.get("grade") or 0), int(modeling.get("count") or 0)
        if count < 0:
            raise ResourceModelError(f"negative node count for grade {grade}")
        count_by_grade[grade] = count_by_grade.get(grade, 0) + count
    return [(capacity_by_grade[grade], count_by_grade[grade]) for grade in sorted(capacity_by_grade)
            if count_by_grade.get(grade)]


def model_based_replicas(cluster: Obj, replica_requirements: Obj | None) -> int:
    """``getMaximumReplicasBasedOnResourceModels``: first-fit onto the grades' virtual nodes.

    Every grade with ``count > 0`` contributes ``count`` nodes whose capacity is the grade's ``min``
    for each range plus 110 pods; replicas (request + 1 pod) are placed first-fit with no upper
    bound but MaxInt32. First-fit fills each node to its ``MaxDivided``, so the total is the sum of
    per-node capacities. :class:`ResourceModelError` if the models cannot be used.
    """
    request = replica_request_units(replica_requirements)
    total = 0
    for capacity, count in model_nodes(cluster):
        pods = capacity.get(RESOURCE_PODS, 0)
        total += count * divide_capacity(capacity, pods, request)
        if total >= MAX_INT32:
            return MAX_INT32
    return total


class GeneralEstimator:
    """The ``general-estimator`` replica estimator (stateless)."""

    name = NAME

    def __init__(self, *, customized_resource_modeling: bool = True) -> None:
        self.customized_resource_modeling = customized_resource_modeling

    def max_available_replicas(self, cluster: Obj, replica_requirements: Obj | None) -> int:
        """Max replicas for one Cluster dict; 0 without a resource summary, at most MaxInt32."""
        summary = objects.status(cluster).get("resourceSummary")
        if summary is None:
            return 0
        maximum = allowed_pod_number(summary)
        if maximum <= 0:
            return 0
        if replica_requirements is None:
            return min(maximum, MAX_INT32)
        if self.customized_resource_modeling and summary.get("allocatableModelings"):
            try:
                by_models = model_based_replicas(cluster, replica_requirements)
            except ResourceModelError:
                pass
            else:
                return min(maximum, by_models, MAX_INT32)
        by_summary = summary_based_replicas(summary, replica_requirements.get("resourceRequest"))
        return min(maximum, by_summary, MAX_INT32)

    def estimate(self, clusters: Iterable[Obj], replica_requirements: Obj | None) -> dict[str, int]:
        """``MaxAvailableReplicas`` over many clusters: cluster name → max replicas."""
        result: dict[str, int] = {}
        for cluster in clusters:
            name = objects.name(cluster)
            result[name] = self.max_available_replicas(cluster, replica_requirements)
        return result


_DEFAULT = GeneralEstimator()


def max_available_replicas(cluster: Obj, replica_requirements: Obj | None) -> int:
    """:meth:`GeneralEstimator.max_available_replicas` with the default feature gates."""
    return _DEFAULT.max_available_replicas(cluster, replica_requirements)
