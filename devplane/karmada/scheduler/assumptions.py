"""``SchedulingOvercommitProtection``: what the scheduler assumes is still in flight, and when it forgets it.

Karmada's alpha feature gate (``pkg/features/features.go``, default off) closes the window between a schedule
and the Pods it leads to: until they exist, a member's resource summary and Nodes still show the room they will
take, so the next binding would be given it too. With the gate on (Karmada f8fdd02):

* after a successful, non-empty merge patch of a ResourceBinding's schedule (``patchScheduleResultForResourceBinding``
  → ``updateAssumptionsCache``), a workload binding assumes, per cluster of the result, its whole assignment there
  (``replicas`` of ``spec.replicaRequirements``, as one component named after the template), replacing what it
  assumed there before; clusters the result dropped are released. ClusterResourceBindings assume nothing;
* every estimator is handed, per cluster, the workloads assumed there (by every binding, the one being scheduled
  included: ``core/util.go`` ``calAvailableReplicas``), and deducts them (``overcommit.py``);
* an assumption is forgotten when its binding is deleted or stops being this scheduler's (the informer's filter
  turns that into a delete: ``onResourceBindingDelete``), per cluster when the binding's ``aggregatedStatus`` turns
  ``Healthy`` there (``releaseHealthyClusterAssumptions``, on any update, status included), and when the binding has
  assumed nothing for five minutes (``DefaultAssumptionTTL``; each assume renews the binding's whole entry). A
  Cluster status that catches up forgets nothing.

:class:`AssumptionCache` is ``pkg/scheduler/cache``'s ``AssigningResourceBindingCache`` for this purpose.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from karmada_api.placement import is_workload
from karmada_api.shapes import BindingSpec, binding_spec

FEATURE = "SchedulingOvercommitProtection"
DEFAULT_ASSUMPTION_TTL = 300.0
"""``DefaultAssumptionTTL`` (5 minutes): the safety net when no Healthy signal ever comes."""
HEALTHY = "Healthy"


@dataclass(frozen=True)
class AssumedWorkload:
    """One binding's footprint on one cluster: ``replicas`` Pods of ``requirements`` (a single-template
    workload as ``singleTemplateAsComponents`` wraps it; the simulation has no multi-component workloads)."""

    namespace: str
    name: str
    replicas: int
    requirements: Mapping[str, Any] | None = None
    """``resourceRequest`` and ``nodeClaim`` of the binding's ``spec.replicaRequirements``."""


@dataclass
class _BindingAssumption:
    entries: dict[str, AssumedWorkload] = field(default_factory=dict)
    expires_at: float = 0.0


class AssumptionCache:
    """Per binding (``namespace/name``) and cluster, the workload assumed there; a binding's entries expire
    together ``ttl`` seconds after its last assume."""

    def __init__(self, ttl: float = DEFAULT_ASSUMPTION_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._bindings: dict[str, _BindingAssumption] = {}

    def assume(self, binding_key: str, cluster: str, workload: AssumedWorkload) -> None:
        """Record (or replace) the binding's footprint on ``cluster``; renews the binding's expiry."""
        entry = self._bindings.setdefault(binding_key, _BindingAssumption())
        entry.entries[cluster] = workload
        entry.expires_at = self._clock() + self.ttl

    def release_cluster(self, binding_key: str, cluster: str) -> None:
        """Forget the binding's footprint on one cluster (and the binding once it has none)."""
        entry = self._bindings.get(binding_key)
        if entry is None:
            return
        entry.entries.pop(cluster, None)
        if not entry.entries:
            del self._bindings[binding_key]

    def release(self, binding_key: str) -> None:
        """Forget everything the binding assumed."""
        self._bindings.pop(binding_key, None)

    def exists(self, binding_key: str) -> bool:
        return binding_key in self._bindings

    def workloads(self, cluster: str) -> list[AssumedWorkload]:
        """What is assumed on ``cluster`` by bindings whose entry has not expired, in the order they first assumed
        (Karmada walks a Go map: its order is random, which matters only when first-fit packing depends on it)."""
        now = self._clock()
        return [entry.entries[cluster] for entry in self._bindings.values()
                if now <= entry.expires_at and cluster in entry.entries]

    def by_cluster(self, clusters: Iterable[str]) -> dict[str, list[AssumedWorkload]]:
        """``buildAssumedWorkloadsByCluster``: the clusters that have assumed workloads, with them."""
        found = {name: self.workloads(name) for name in clusters}
        return {name: workloads for name, workloads in found.items() if workloads}

    def gc(self) -> int:
        """Drop expired bindings (Karmada sweeps every minute; expired entries are never read meanwhile)."""
        now = self._clock()
        expired = [key for key, entry in self._bindings.items() if now > entry.expires_at]
        for key in expired:
            del self._bindings[key]
        return len(expired)

    def __len__(self) -> int:
        return len(self._bindings)


def assumed_workload(spec: BindingSpec, replicas: int) -> AssumedWorkload:
    """``singleTemplateAsComponents``: ``replicas`` of the binding's template with its replica requirements."""
    resource = spec.get("resource") or {}
    requirements = spec.get("replicaRequirements")
    kept: dict[str, Any] | None = None
    if requirements is not None:
        kept = {}
        if requirements.get("resourceRequest") is not None:
            kept["resourceRequest"] = dict(requirements["resourceRequest"])
        if requirements.get("nodeClaim") is not None:
            kept["nodeClaim"] = dict(requirements["nodeClaim"])
    return AssumedWorkload(str(resource.get("namespace") or ""), str(resource.get("name") or ""), replicas, kept)


def record_schedule(cache: AssumptionCache, binding: Obj, result: Iterable[Mapping[str, Any]] | None) -> None:
    """``updateAssumptionsCache``, after ``result`` was patched onto ``binding`` (the binding as scheduled): release
    the clusters the result dropped, assume the whole assignment on each cluster of the result."""
    spec = binding_spec(binding)
    if not is_workload(spec):
        return
    key = objects.key(binding)
    targets = [(str(c.get("name") or ""), int(c.get("replicas") or 0)) for c in result or []]
    kept = {name for name, _ in targets}
    for target in spec.get("clusters") or []:
        name = str(target.get("name") or "")
        if name not in kept:
            cache.release_cluster(key, name)
    for name, replicas in targets:
        cache.assume(key, name, assumed_workload(spec, replicas))


def newly_healthy_clusters(old_status: Obj, new_status: Obj) -> list[str]:
    """``newlyHealthyClusters``: clusters ``Healthy`` in the new ``aggregatedStatus`` and not in the old."""
    before = {item.get("clusterName") for item in old_status.get("aggregatedStatus") or []
              if item.get("health") == HEALTHY}
    return [str(item.get("clusterName") or "") for item in new_status.get("aggregatedStatus") or []
            if item.get("health") == HEALTHY and item.get("clusterName") not in before]


def release_healthy(cache: AssumptionCache, old: Obj, new: Obj) -> None:
    """``releaseHealthyClusterAssumptions``: a workload binding's clusters that just turned Healthy."""
    if not is_workload(binding_spec(old)):
        return
    key = objects.key(new)
    if not cache.exists(key):
        return
    for name in newly_healthy_clusters(objects.status(old), objects.status(new)):
        cache.release_cluster(key, name)
