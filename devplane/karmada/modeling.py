"""Cluster summaries the cluster-status controller publishes: nodes, resources, resource-model grades.

Pure functions over member Nodes and Pods (plain JSON dicts), written from Karmada's
``pkg/controllers/status/cluster_status_controller.go`` (``getNodeSummary``,
``getResourceSummary``, ``getAllocatableModelings``), ``pkg/util/resource.go`` (the ``Resource``
accumulator) and ``pkg/modeling/modeling.go`` (grade search). The general estimator
(``estimator/general.py``) is the consumer: without these summaries it answers 0.

Quirks kept on purpose, because they change numbers a user can see:

* allocating = every pod without ``spec.nodeName``, whatever its phase; allocated = pods bound to a
  node that are not Succeeded/Failed. Both always list cpu, memory, ephemeral-storage and pods.
* A pod's request is added container by container, then each init container raises the *running
  total* to its request (``SetMaxResource`` on the accumulator, not per pod). Overhead is ignored.
* Grades: for every resource of the models (the first model's range names, in order) the last
  grade whose ``min`` <= the node's available amount (Karmada's binary search); the node's grade is
  the minimum over resources. A node with no grade (negative availability) is skipped.

One deliberate deviation: a node whose pods already use its ``pods`` allocatable is skipped, where
Karmada's loop ``break``s and drops every node listed after it (an acknowledged bug whose outcome
depends on the informer's map order).

Quantities are rendered as apimachinery's ``Quantity.String()`` does (canonical DecimalSI or
BinarySI), so the status reads like Karmada's (``"8Gi"``, ``"1500m"``, ``"110"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from kube_api.pods import is_pod_terminated, node_ready
from kube_api.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    format_quantity,
    is_hugepage_resource_name,
    is_scalar_resource_name,
    milli_value,
    parse_quantity,
    quantity_format,
    value,
)

# ----------------------------------------------------------------------------------- quantities


def _parse(quantity: object) -> Fraction | None:
    """A quantity's exact amount, None when it does not parse (a bad object must not stop a summary)."""
    try:
        return parse_quantity(quantity)  # type: ignore[arg-type]
    except ValueError:
        return None


def _units(name: str, quantity: object) -> int | None:
    """``Resource.Add``'s unit for one entry: millicores for cpu, ``Value()`` otherwise."""
    try:
        return milli_value(quantity) if name == RESOURCE_CPU else value(quantity)  # type: ignore[arg-type]
    except ValueError:
        return None


# ----------------------------------------------------------------------------------- Resource


@dataclass
class ResourceTotal:
    """Karmada's ``util.Resource``: an accumulator of pod requests in scheduler units."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    pods: int = 0
    scalars: dict[str, int] = field(default_factory=dict)

    def _apply(self, resources: Mapping[str, object] | None, combine: Any) -> None:
        for name, quantity in (resources or {}).items():
            units = _units(name, quantity)
            if units is None:
                continue
            if name == RESOURCE_CPU:
                self.milli_cpu = combine(self.milli_cpu, units)
            elif name == RESOURCE_MEMORY:
                self.memory = combine(self.memory, units)
            elif name == RESOURCE_PODS:
                self.pods = combine(self.pods, units)
            elif name == RESOURCE_EPHEMERAL_STORAGE:
                self.ephemeral_storage = combine(self.ephemeral_storage, units)
            elif is_scalar_resource_name(name):
                self.scalars[name] = combine(self.scalars.get(name, 0), units)

    def add(self, resources: Mapping[str, object] | None) -> None:
        self._apply(resources, lambda total, units: total + units)

    def set_max(self, resources: Mapping[str, object] | None) -> None:
        self._apply(resources, max)

    def add_pod_request(self, spec: Obj) -> None:
        """``AddPodRequest``: containers' requests added, then each init container raises the total."""
        for container in spec.get("containers") or ():
            self.add((container.get("resources") or {}).get("requests"))
        for container in spec.get("initContainers") or ():
            self.set_max((container.get("resources") or {}).get("requests"))

    def add_pods(self, count: int) -> None:
        self.pods += count

    def amounts(self) -> dict[str, Fraction]:
        """``ResourceList()`` as exact amounts: cpu, memory, ephemeral-storage and pods always present."""
        result = {RESOURCE_CPU: Fraction(self.milli_cpu, 1000), RESOURCE_MEMORY: Fraction(self.memory),
                  RESOURCE_EPHEMERAL_STORAGE: Fraction(self.ephemeral_storage), RESOURCE_PODS: Fraction(self.pods)}
        result.update((name, Fraction(units)) for name, units in self.scalars.items())
        return result

    def resource_list(self) -> dict[str, str]:
        """``ResourceList()`` rendered: cpu and pods DecimalSI, memory, storage and hugepages BinarySI; only the
        amounts above zero (Karmada's ``util.Resource.ResourceList``: no pods, no entries, and the field is omitted)."""
        amounts: list[tuple[str, Fraction, str]] = [
            (RESOURCE_CPU, Fraction(self.milli_cpu, 1000), DECIMAL_SI),
            (RESOURCE_MEMORY, Fraction(self.memory), BINARY_SI),
            (RESOURCE_EPHEMERAL_STORAGE, Fraction(self.ephemeral_storage), BINARY_SI),
            (RESOURCE_PODS, Fraction(self.pods), DECIMAL_SI)]
        amounts += [(name, Fraction(units), BINARY_SI if is_hugepage_resource_name(name) else DECIMAL_SI)
                    for name, units in self.scalars.items()]
        return {name: format_quantity(amount, unit) for name, amount, unit in amounts if amount > 0}


# ----------------------------------------------------------------------------------- summaries


def _node_name(pod: Obj) -> str:
    return str(objects.spec(pod).get("nodeName") or "")


def node_summary(nodes: Sequence[Obj]) -> dict[str, int]:
    """``nodeSummary`` (int32 fields with ``omitempty``: zeros are left out)."""
    summary = {"totalNum": len(nodes), "readyNum": sum(1 for node in nodes if node_ready(node))}
    return {key: count for key, count in summary.items() if count}


def cluster_allocatable(nodes: Iterable[Obj]) -> dict[str, str]:
    """``getClusterAllocatable``: per resource, the sum of the nodes' ``status.allocatable``.

    Each sum keeps the format of its first quantity (``Quantity.Add``; a zero total adopts the
    next one's), so ``8Gi`` + ``8Gi`` reads ``16Gi``.
    """
    totals: dict[str, tuple[Fraction, str]] = {}
    for node in nodes:
        for name, quantity in (objects.status(node).get("allocatable") or {}).items():
            amount = _parse(quantity)
            if amount is None:
                continue
            fmt = quantity_format(quantity)
            if name in totals:
                total, total_fmt = totals[name]
                totals[name] = (total + amount, fmt if total == 0 else total_fmt)
            else:
                totals[name] = (amount, fmt)
    return {name: format_quantity(total, fmt) for name, (total, fmt) in totals.items()}


def allocating_resources(pods: Iterable[Obj]) -> dict[str, str]:
    """``getAllocatingResource``: requests of every pod not bound to a node, plus their count."""
    total, count = ResourceTotal(), 0
    for pod in pods:
        if not _node_name(pod):
            total.add_pod_request(objects.spec(pod))
            count += 1
    total.add_pods(count)
    return total.resource_list()


def allocated_resources(pods: Iterable[Obj]) -> dict[str, str]:
    """``getAllocatedResource``: requests of the pods bound to a node and not terminated, plus their count."""
    total, count = ResourceTotal(), 0
    for pod in pods:
        if _node_name(pod) and not is_pod_terminated(pod):
            total.add_pod_request(objects.spec(pod))
            count += 1
    total.add_pods(count)
    return total.resource_list()


# ----------------------------------------------------------------------------------- modeling


class ResourceModelError(ValueError):
    """The cluster's resource models cannot be used (``InitSummary`` refused them)."""


@dataclass(frozen=True)
class ModelSummary:
    """``modeling.InitSummary``: the range names searched, and per name the grades' ``min`` in model order."""

    names: tuple[str, ...]
    minimums: tuple[tuple[Fraction, ...], ...]

    @classmethod
    def from_models(cls, models: Sequence[Obj]) -> ModelSummary:
        names: list[str] = []
        per_model: list[dict[str, Fraction]] = []
        for model in models:
            ranges = model.get("ranges") or []
            minimums: dict[str, Fraction] = {}
            for item in ranges:
                name = str(item.get("name") or "")
                if len(names) != len(ranges):  # Karmada's loop: the names come from the first model
                    names.append(name)
                amount = _parse(item.get("min", 0))
                if amount is None:
                    raise ResourceModelError(f"resource model grade {model.get('grade')}: invalid min of {name!r}")
                minimums[name] = amount
            per_model.append(minimums)
        if names and per_model and len(names) != len(per_model[0]):
            raise ResourceModelError("the number of resourceName is not equal the number of resourceList")
        return cls(tuple(names), tuple(tuple(m.get(name, Fraction(0)) for m in per_model) for name in names))

    def grade_index(self, available: Mapping[str, Fraction]) -> int:
        """``getIndex``: the minimum over resources of the last grade whose min <= available; -1 if none."""
        if not self.names:
            return -1
        return min(search_last_less_or_equal(self.minimums[i], available.get(name, Fraction(0)))
                   for i, name in enumerate(self.names))


def search_last_less_or_equal(values: Sequence[Fraction], target: Fraction) -> int:
    """``searchLastLessElement``: index of the last element <= target in an ascending list, else -1.

    Karmada's binary search, kept as is (its answer on a non-ascending list is what Karmada reports).
    """
    low, high = 0, len(values) - 1
    while low <= high:
        mid = low + ((high - low) >> 1)
        if values[mid] <= target:
            if mid == len(values) - 1 or values[mid + 1] > target:
                return mid
            low = mid + 1
        else:
            high = mid - 1
    return -1


def _requests_by_node(pods: Iterable[Obj]) -> dict[str, ResourceTotal]:
    """Requests (plus one pod each) of the non-terminated pods, per node they are bound to."""
    by_node: dict[str, ResourceTotal] = {}
    for pod in pods:
        node = _node_name(pod)
        if node and not is_pod_terminated(pod):
            total = by_node.setdefault(node, ResourceTotal())
            total.add_pod_request(objects.spec(pod))
            total.add_pods(1)
    return by_node


def node_available(node: Obj, used: ResourceTotal | None) -> dict[str, Fraction] | None:
    """``getNodeAvailable``: allocatable minus what its pods request; None when no pod slot is left."""
    allocatable: dict[str, Fraction] = {}
    for name, quantity in (objects.status(node).get("allocatable") or {}).items():
        amount = _parse(quantity)
        if amount is not None:
            allocatable[name] = amount
    if used is None:
        return allocatable
    requested = used.amounts()
    if value(allocatable.get(RESOURCE_PODS, Fraction(0))) - value(requested[RESOURCE_PODS]) <= 0:
        return None
    for name, amount in requested.items():
        if name in allocatable:
            allocatable[name] -= amount
    return allocatable


def allocatable_modelings(models: Sequence[Obj] | None, nodes: Iterable[Obj],
                          pods: Iterable[Obj]) -> list[dict[str, int]] | None:
    """``getAllocatableModelings``: how many nodes fall in each grade of ``models`` (every grade listed).

    None when the cluster has no models or they cannot be used (the field is then omitted).
    """
    if not models:
        return None
    try:
        summary = ModelSummary.from_models(models)
    except ResourceModelError:
        return None
    used = _requests_by_node(pods)
    counts = [0] * len(models)
    for node in nodes:
        available = node_available(node, used.get(objects.name(node)))
        if available is None:
            continue  # Karmada: break (see the module docstring)
        index = summary.grade_index(available)
        if index >= 0:
            counts[index] += 1
    return [{"grade": int(model.get("grade") or 0), "count": count} for model, count in zip(models, counts,
                                                                                             strict=True)]


def resource_summary(nodes: Sequence[Obj], pods: Sequence[Obj], models: Sequence[Obj] | None = None, *,
                     modeling: bool = True) -> dict[str, Any]:
    """``resourceSummary``: allocatable, allocating, allocated and (``modeling``) allocatableModelings."""
    summary: dict[str, Any] = {}
    allocatable = cluster_allocatable(nodes)
    if allocatable:
        summary["allocatable"] = allocatable
    for name, resources in (("allocating", allocating_resources(pods)), ("allocated", allocated_resources(pods))):
        if resources:  # a nil ResourceList, omitted
            summary[name] = resources
    if modeling:
        modelings = allocatable_modelings(models, nodes, pods)
        if modelings:
            summary["allocatableModelings"] = modelings
    return summary


__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "ModelSummary",
    "ResourceModelError",
    "ResourceTotal",
    "allocatable_modelings",
    "allocated_resources",
    "allocating_resources",
    "cluster_allocatable",
    "format_quantity",
    "node_available",
    "node_summary",
    "quantity_format",
    "resource_summary",
    "search_last_less_or_equal",
]
