"""What every writer and reader of WorkloadRebalancers shares: a workload's identity, lists in runs, the body."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from .resources import WORKLOAD_REBALANCERS
from .shapes import RebalancerSpec, Workload

T = TypeVar("T")

PRESERVE_ANNOTATION = "rebalance.karmada-rebalance.io/preserve-available-replicas"
"""``"true"``: this project's WorkloadRebalancer controller lowers only the replicas confirmed unschedulable
(karmada-io/karmada#7662's ``spec.reschedule.preserveAvailableReplicas``, which Karmada's stock CRD prunes)."""


def preserve_requested(rebalancer: Mapping[str, Any]) -> bool:
    """Whether the rebalancer asks for preserve mode: #7662's ``spec.reschedule.preserveAvailableReplicas: true``
    or :data:`PRESERVE_ANNOTATION` ``"true"``. ``ValueError`` (naming the value) for an annotation value other
    than ``true``/``false``."""
    metadata = rebalancer.get("metadata") or {}
    value = (metadata.get("annotations") or {}).get(PRESERVE_ANNOTATION)
    if value is not None and value not in ("true", "false"):
        raise ValueError(f'{PRESERVE_ANNOTATION}="{value}", want "true" or "false"')
    reschedule = (rebalancer.get("spec") or {}).get("reschedule") or {}
    return reschedule.get("preserveAvailableReplicas") is True or value == "true"


def workload_key(workload: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """A workload's identity in a rebalancer's list (and its sort order): apiVersion, kind, namespace, name."""
    return (str(workload.get("apiVersion", "")), str(workload.get("kind", "")),
            str(workload.get("namespace", "") or ""), str(workload.get("name", "")))


def chunks(items: Sequence[T], size: int) -> list[list[T]]:
    """``items`` in order, in runs of at most ``size`` (≥ 1): the workloads of one rebalancer each."""
    if size < 1:
        raise ValueError(f"chunk size must be at least 1, got {size}")
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def rebalancer_body(metadata: Mapping[str, Any], workloads: Iterable[Workload],
                    ttl_seconds: int | None, *, preserve: bool = False) -> dict[str, Any]:
    """A WorkloadRebalancer to create: ``workloads`` (``ObjectReference`` items) in order; ``ttl_seconds``
    None leaves ``ttlSecondsAfterFinished`` out (the rebalancer is kept once finished); ``preserve`` adds
    :data:`PRESERVE_ANNOTATION` (only the annotation: a spec field unknown to the installed CRD is pruned)."""
    spec = RebalancerSpec(workloads=[Workload(**w) for w in workloads])
    if ttl_seconds is not None:
        spec["ttlSecondsAfterFinished"] = ttl_seconds
    meta = dict(metadata)
    if preserve:
        meta["annotations"] = {**(meta.get("annotations") or {}), PRESERVE_ANNOTATION: "true"}
    return {"apiVersion": WORKLOAD_REBALANCERS.api_version, "kind": WORKLOAD_REBALANCERS.kind,
            "metadata": meta, "spec": spec}
