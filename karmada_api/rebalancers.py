"""What every writer and reader of WorkloadRebalancer lists shares: a workload's identity, and lists in runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

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
