"""The scheduler-estimator's NodeResourceEstimator: max replicas from member Nodes and Pods.

For each node that passes the filters (nodeSelector + required node affinity; cordon unless
``node.kubernetes.io/unschedulable:NoSchedule`` is tolerated; every NoSchedule/NoExecute taint
tolerated), the node takes ``min(free_r // request_r)`` over the requested resources (cpu in
millicores, memory, ephemeral-storage, scalar resources such as GPUs; only requests > 0 count) and
its free pod slots, where free = allocatable - requested clamped at 0 and free pods =
``allocatable.pods - #pods``. The answer is the sum, capped at MaxInt32; 0 without nodes.

Requested resources count the pods bound to the node (``spec.nodeName``) that are not terminal
(the estimator's informer drops Succeeded/Failed pods); a pod's request is
:func:`kube_api.quantity.pod_requests`.

:class:`NodeUsage` is the estimator's scheduler cache: it keeps per-node allocatable and requested
totals up to date from informer events (``add_pod``/``update_pod``/``remove_pod``,
``update_node``/``remove_node``), so an estimate is one pass over the nodes with integer arithmetic.
Node eligibility depends only on node labels, taints and cordon state, so the eligible-node list is
cached per node claim until such a node field changes. Not thread-safe: call it from one thread
(the event loop that runs the informer handlers).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from kube_api.affinity import RequiredNodeAffinity
from kube_api.limits import MAX_INT32
from kube_api.pods import is_pod_terminated
from kube_api.quantity import (
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    pod_requests,
    resource_list_units,
)
from kube_api.tolerations import node_tolerated

_FILTER_CACHE_SIZE = 64


def replica_request_units(replica_requirements: Obj | None) -> dict[str, int]:
    """A replica's request in scheduler units, keeping only resources the estimate divides by.

    That is cpu (millicores), memory, ephemeral-storage and scalar resources, each only when > 0
    (``MaxDivided`` skips zero requests); ``pods`` and untracked names are dropped.
    """
    if not replica_requirements:
        return {}
    units = resource_list_units(replica_requirements.get("resourceRequest"), include_pods=False)
    return {name: amount for name, amount in units.items() if amount > 0}


def divide_capacity(free: Mapping[str, int], free_pods: int, request: Mapping[str, int]) -> int:
    """``Resource.MaxDivided``: replicas of ``request`` fitting in ``free``, at most ``free_pods``.

    ``request`` holds positive amounts only (see :func:`replica_request_units`); a resource missing
    from ``free`` has 0 free. Negative free amounts count as 0.
    """
    result = free_pods
    for name, amount in request.items():
        available = free.get(name, 0)
        if available < amount:
            return 0
        fits = available // amount
        result = min(result, fits)
    return max(result, 0)


def node_claim_affinity(replica_requirements: Obj | None) -> tuple[RequiredNodeAffinity, list[Obj]]:
    """(affinity, tolerations) of a replica requirement's ``nodeClaim``.

    ``nodeClaim`` has Karmada's API shape: ``nodeSelector`` (map), ``hardNodeAffinity``
    (a ``core.v1.NodeSelector``) and ``tolerations``.
    """
    claim = (replica_requirements or {}).get("nodeClaim") or {}
    affinity = RequiredNodeAffinity(claim.get("nodeSelector"), claim.get("hardNodeAffinity"))
    return affinity, list(claim.get("tolerations") or [])


def pod_key(pod: Obj) -> str:
    """The cache key of a pod: its UID (as the scheduler cache), else ``namespace/name``."""
    uid = objects.uid(pod)
    if uid:
        return uid
    return f"{objects.namespace(pod)}/{objects.name(pod)}"


def pod_counts(pod: Obj) -> bool:
    """Whether a pod occupies its node: bound (``spec.nodeName``) and not Succeeded/Failed."""
    return bool(objects.spec(pod).get("nodeName")) and not is_pod_terminated(pod)


class _Node:
    """One node's state: filter inputs, allocatable and what its pods request (scheduler units)."""

    __slots__ = ("alloc_cpu", "alloc_eph", "alloc_mem", "alloc_pods", "alloc_scalar", "name", "node",
                 "pod_count", "present", "req_cpu", "req_eph", "req_mem", "req_scalar")

    def __init__(self, name: str) -> None:
        self.name = name
        self.node: Obj | None = None
        self.present = False
        self.alloc_cpu = self.alloc_mem = self.alloc_eph = self.alloc_pods = 0
        self.alloc_scalar: dict[str, int] = {}
        self.req_cpu = self.req_mem = self.req_eph = 0
        self.req_scalar: dict[str, int] = {}
        self.pod_count = 0

    def set_node(self, node: Obj) -> None:
        self.node = node
        self.present = True
        alloc = resource_list_units(objects.status(node).get("allocatable"))
        self.alloc_cpu = alloc.pop(RESOURCE_CPU, 0)
        self.alloc_mem = alloc.pop(RESOURCE_MEMORY, 0)
        self.alloc_eph = alloc.pop(RESOURCE_EPHEMERAL_STORAGE, 0)
        self.alloc_pods = alloc.pop(RESOURCE_PODS, 0)
        self.alloc_scalar = alloc

    def account(self, request: Mapping[str, int], sign: int) -> None:
        self.pod_count += sign
        for name, amount in request.items():
            if name == RESOURCE_CPU:
                self.req_cpu += sign * amount
            elif name == RESOURCE_MEMORY:
                self.req_mem += sign * amount
            elif name == RESOURCE_EPHEMERAL_STORAGE:
                self.req_eph += sign * amount
            else:
                self.req_scalar[name] = self.req_scalar.get(name, 0) + sign * amount

    def free_resources(self) -> dict[str, int]:
        """Allocatable - requested per tracked resource, clamped at 0 (pods excluded)."""
        free = {RESOURCE_CPU: self.alloc_cpu - self.req_cpu, RESOURCE_MEMORY: self.alloc_mem - self.req_mem,
                RESOURCE_EPHEMERAL_STORAGE: self.alloc_eph - self.req_eph}
        for name, amount in self.alloc_scalar.items():
            free[name] = amount - self.req_scalar.get(name, 0)
        return {name: max(amount, 0) for name, amount in free.items()}

    def free_pods(self) -> int:
        return max(self.alloc_pods - self.pod_count, 0)


def _filter_inputs(node: Obj) -> tuple[Any, ...]:
    """What node eligibility depends on; a node update that keeps it keeps the filter cache."""
    meta, spec = objects.metadata(node), objects.spec(node)
    return meta.get("name"), meta.get("labels"), bool(spec.get("unschedulable")), spec.get("taints")


class NodeUsage:
    """Per-node allocatable and requested resources, maintained incrementally from informer events.

    Pods bound to a node that is not (yet) known are accounted and count once the node appears,
    like the scheduler cache; a removed node that still has pods keeps their accounting.
    """

    def __init__(self, nodes: Iterable[Obj] = (), pods: Iterable[Obj] = ()) -> None:
        self._nodes: dict[str, _Node] = {}
        self._pods: dict[str, tuple[str, dict[str, int]]] = {}
        self._present = 0
        self._filter_cache: OrderedDict[str, list[_Node]] = OrderedDict()
        for node in nodes:
            self.update_node(node)
        for pod in pods:
            self.add_pod(pod)

    # ---- events ----------------------------------------------------------------------------------

    def update_node(self, node: Obj) -> None:
        """Add or update a node (informer add/update)."""
        name = objects.name(node)
        entry = self._nodes.get(name)
        if entry is None:
            entry = self._nodes[name] = _Node(name)
        if not entry.present:
            self._present += 1
            self._filter_cache.clear()
        elif entry.node is None or _filter_inputs(entry.node) != _filter_inputs(node):
            self._filter_cache.clear()
        entry.set_node(node)

    add_node = update_node

    def remove_node(self, node: Obj | str) -> None:
        """Forget a node (informer delete); its pods' accounting stays until they are removed."""
        name = node if isinstance(node, str) else objects.name(node)
        entry = self._nodes.get(name)
        if entry is None or not entry.present:
            return
        self._present -= 1
        self._filter_cache.clear()
        if entry.pod_count:
            entry.present = False
            entry.node = None
        else:
            del self._nodes[name]

    def add_pod(self, pod: Obj) -> None:
        """Account a pod (informer add; also an update). Unbound or terminal pods are not counted."""
        key = pod_key(pod)
        if key in self._pods:
            self._forget_pod(key)
        if not pod_counts(pod):
            return
        spec = objects.spec(pod)
        node_name = spec["nodeName"]
        request = pod_requests(spec)
        entry = self._nodes.get(node_name)
        if entry is None:
            entry = self._nodes[node_name] = _Node(node_name)
        entry.account(request, 1)
        self._pods[key] = (node_name, request)

    def update_pod(self, old: Obj | None, new: Obj) -> None:
        """Informer update: the new object replaces the old (even under a different key)."""
        if old is not None:
            old_key = pod_key(old)
            if old_key != pod_key(new) and old_key in self._pods:
                self._forget_pod(old_key)
        self.add_pod(new)

    def remove_pod(self, pod: Obj) -> None:
        """Informer delete (the object may be stale: the stored request is what gets released)."""
        key = pod_key(pod)
        if key in self._pods:
            self._forget_pod(key)

    def _forget_pod(self, key: str) -> None:
        node_name, request = self._pods.pop(key)
        entry = self._nodes[node_name]
        entry.account(request, -1)
        if not entry.present and entry.pod_count == 0:
            del self._nodes[node_name]

    # ---- queries ---------------------------------------------------------------------------------

    @property
    def node_count(self) -> int:
        return self._present

    @property
    def pod_count(self) -> int:
        return len(self._pods)

    def present_nodes(self) -> list[Obj]:
        """The Nodes present, by name."""
        return [entry.node for _, entry in sorted(self._nodes.items()) if entry.present and entry.node is not None]

    def node_free(self, name: str) -> tuple[dict[str, int], int] | None:
        """(free resources in scheduler units, free pod slots) of a known node, for diagnostics."""
        entry = self._nodes.get(name)
        if entry is None or not entry.present:
            return None
        return entry.free_resources(), entry.free_pods()

    def _eligible(self, replica_requirements: Obj | None) -> list[_Node]:
        claim = (replica_requirements or {}).get("nodeClaim") or None
        cache_key = json.dumps(claim, sort_keys=True, separators=(",", ":")) if claim else ""
        cached = self._filter_cache.get(cache_key)
        if cached is not None:
            self._filter_cache.move_to_end(cache_key)
            return cached
        present = [entry for entry in self._nodes.values() if entry.present]
        if claim:
            affinity, tolerations = node_claim_affinity(replica_requirements)
            eligible = [entry for entry in present if entry.node is not None
                        and (affinity.is_empty or affinity.matches(entry.node))
                        and node_tolerated(entry.node, tolerations)]
        else:
            eligible = [entry for entry in present if entry.node is not None and node_tolerated(entry.node, ())]
        self._filter_cache[cache_key] = eligible
        if len(self._filter_cache) > _FILTER_CACHE_SIZE:
            self._filter_cache.popitem(last=False)
        return eligible

    def max_available_replicas(self, replica_requirements: Obj | None) -> int:
        """How many more replicas fit on the eligible nodes (0 without nodes, at most MaxInt32)."""
        if not self._present:
            return 0
        request = replica_request_units(replica_requirements)
        cpu = request.pop(RESOURCE_CPU, 0)
        mem = request.pop(RESOURCE_MEMORY, 0)
        eph = request.pop(RESOURCE_EPHEMERAL_STORAGE, 0)
        scalars = list(request.items())
        total = 0
        for entry in self._eligible(replica_requirements):
            fits = entry.alloc_pods - entry.pod_count
            if fits <= 0:
                continue
            if cpu:
                by_cpu = (entry.alloc_cpu - entry.req_cpu) // cpu
                if by_cpu < fits:
                    if by_cpu <= 0:
                        continue
                    fits = by_cpu
            if mem:
                by_mem = (entry.alloc_mem - entry.req_mem) // mem
                if by_mem < fits:
                    if by_mem <= 0:
                        continue
                    fits = by_mem
            if eph:
                by_eph = (entry.alloc_eph - entry.req_eph) // eph
                if by_eph < fits:
                    if by_eph <= 0:
                        continue
                    fits = by_eph
            for name, amount in scalars:
                by_scalar = (entry.alloc_scalar.get(name, 0) - entry.req_scalar.get(name, 0)) // amount
                if by_scalar < fits:
                    fits = by_scalar
                    if fits <= 0:
                        break
            if fits > 0:
                total += fits
        return min(total, MAX_INT32)


def max_available_replicas(nodes: Iterable[Obj], pods: Iterable[Obj], replica_requirements: Obj | None) -> int:
    """One-shot estimate over member Node and Pod dicts (builds a :class:`NodeUsage`)."""
    return NodeUsage(nodes, pods).max_available_replicas(replica_requirements)
