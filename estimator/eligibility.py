"""Which bindings an unschedulable-replica estimate can act on (Karmada's ``pkg/descheduler/core/filter.go``).

The descheduler acts on these, and a preserve-mode WorkloadRebalancer refuses the others: a kind the
estimator counts (Karmada: only ``apps/v1`` Deployments, with a "make it an option" TODO; here by default
the ``apps/v1`` Deployment, StatefulSet and ReplicaSet, and the kinds an operator declares with a Pod
selector: :mod:`estimator.podselectors`) whose last schedule divided it by a dynamic weight.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.objects import Obj
from karmada_api.placement import PlacementError, applied_placement, is_dynamic_divided

from .podselectors import BUILTIN_KINDS

log = structlog.get_logger(__name__)


def _gvk(resource_ref: Any) -> tuple[Any, Any] | None:
    """``spec.resource``'s (apiVersion, kind), compared case-sensitively as Go compares GVKs."""
    if not isinstance(resource_ref, dict):
        return None
    return (resource_ref.get("apiVersion"), resource_ref.get("kind"))


def filter_bindings(bindings: Iterable[Obj], gvks: Collection[tuple[str, str]] = BUILTIN_KINDS) -> list[Obj]:
    """The bindings the descheduler may act on: a supported kind (Karmada: only Deployments; here by
    default the ``apps/v1`` Deployment, StatefulSet and ReplicaSet) with a dynamic-divided applied placement."""
    return partition_bindings(bindings, gvks).eligible


@dataclass
class Partition:
    """One cycle's bindings: those to judge, and the dynamic-divided workloads of unsupported kinds
    (``(apiVersion, kind)`` -> binding keys), which are skipped and reported."""

    eligible: list[Obj] = field(default_factory=list)
    unsupported: dict[tuple[str, str], list[str]] = field(default_factory=dict)


def partition_bindings(bindings: Iterable[Obj], gvks: Collection[tuple[str, str]]) -> Partition:
    """:func:`filter_bindings`, also collecting the workloads skipped for their kind alone.

    A binding of an unsupported kind is reported only when it would otherwise qualify: a dynamic
    divided placement and replicas to divide (``spec.replicas`` > 0), so ConfigMaps and the like
    propagated by the same policy are not counted.
    """
    result = Partition()
    for binding in bindings:
        spec = objects.spec(binding)
        gvk = _gvk(spec.get("resource"))
        supported = gvk in gvks
        if not supported and not (isinstance(spec.get("replicas"), int) and spec["replicas"] > 0):
            continue
        try:
            placement = applied_placement(binding)
        except PlacementError as exc:
            if supported:
                log.warning("Failed to get applied placement when validating", binding=objects.key(binding),
                            error=str(exc))
            continue
        if placement is None or not is_dynamic_divided(placement):
            continue
        if supported:
            result.eligible.append(binding)
        elif gvk is not None:
            key = (str(gvk[0] or ""), str(gvk[1] or ""))
            result.unsupported.setdefault(key, []).append(objects.key(binding))
    return result
