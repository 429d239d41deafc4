"""What every writer and reader of WorkloadRebalancers shares: a workload's identity, lists in runs, the body."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from .resources import WORKLOAD_REBALANCERS
from .shapes import RebalancerSpec, Workload

T = TypeVar("T")


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
                    ttl_seconds: int | None) -> dict[str, Any]:
    """A WorkloadRebalancer to create: ``workloads`` (``ObjectReference`` items) in order; ``ttl_seconds``
    None leaves ``ttlSecondsAfterFinished`` out (the rebalancer is kept once finished)."""
    spec = RebalancerSpec(workloads=[Workload(**w) for w in workloads])
    if ttl_seconds is not None:
        spec["ttlSecondsAfterFinished"] = ttl_seconds
    return {"apiVersion": WORKLOAD_REBALANCERS.api_version, "kind": WORKLOAD_REBALANCERS.kind,
            "metadata": dict(metadata), "spec": spec}
