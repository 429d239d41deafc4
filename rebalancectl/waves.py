"""``--max-concurrent``: the selection in waves, and when a wave holds the next one back; pure (no I/O).

A wave is at most N workloads (their rebalancers still split by ``--max-per-rebalancer``). The next
wave is created only when every workload of this one is past its move: its rebalancer item is
``Successful`` and :func:`karmada_api.health.workload_not_healthy` finds its binding and template healthy,
the rule progressive fail-back waits on too. A ``Failed`` item is final (the rebalancer controller never
retries it), so it holds the wave back at once instead of running into the deadline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from .selection import Workload

WAVE_ANNOTATION = "rebalance.karmada-rebalance.io/wave"
"""``"K/N"`` on each rebalancer of wave K of N, so that a rebalancer says which wave made it."""

SUCCESSFUL = "Successful"
FAILED = "Failed"
PENDING = "Pending"
NOT_HEALTHY = "NotHealthy"


@dataclass(frozen=True)
class Wave:
    """Wave ``number`` of ``total``: its workloads and the rebalancers that name them."""

    number: int
    total: int
    workloads: tuple[Workload, ...]
    rebalancers: tuple[dict[str, Any], ...]

    @property
    def label(self) -> str:
        return f"{self.number}/{self.total}"

    def rest(self) -> str:
        """The waves after this one, for "not created" messages (``waves 3-5``, ``wave 5``, "")."""
        after = self.number + 1
        if after > self.total:
            return ""
        return f"wave {after}" if after == self.total else f"waves {after}-{self.total}"


def waves(parts: Sequence[Sequence[Workload]], rebalancers: Sequence[Sequence[dict[str, Any]]]) -> list[Wave]:
    """Each wave's workloads with its rebalancers, every rebalancer marked with :data:`WAVE_ANNOTATION`."""
    total = len(parts)
    built = []
    for number, (workloads, objs) in enumerate(zip(parts, rebalancers, strict=True), start=1):
        marked = []
        for obj in objs:
            metadata = dict(obj["metadata"])
            metadata["annotations"] = {**(metadata.get("annotations") or {}), WAVE_ANNOTATION: f"{number}/{total}"}
            marked.append({**obj, "metadata": metadata})
        built.append(Wave(number, total, tuple(workloads), tuple(marked)))
    return built


@dataclass(frozen=True)
class HeldBack:
    """A workload that keeps its wave from being healthy: its state (:data:`PENDING`, :data:`FAILED`,
    :data:`NOT_HEALTHY`) and why."""

    workload: Workload
    state: str
    reason: str

    def __str__(self) -> str:
        return f"{self.workload} ({self.reason})"


class Verdict(Enum):
    HEALTHY = "healthy"
    """Every workload succeeded and is healthy: the next wave may start."""
    WAITING = "waiting"
    """Some are still moving: look again, until the progress deadline."""
    FAILED = "failed"
    """A workload failed (final): stop now."""


def held_back(workloads: Sequence[Workload], results: Mapping[Workload, tuple[str, str]],
              health: Mapping[Workload, str | None]) -> list[HeldBack]:
    """The workloads of a wave that hold it back.

    ``results`` is each workload's rebalancer result and reason (absent: none yet); ``health`` the latest
    health reason of the ``Successful`` ones (None: healthy; absent: not read yet).
    """
    found = []
    for workload in workloads:
        result, reason = results.get(workload, (PENDING, ""))
        if result == FAILED:
            found.append(HeldBack(workload, FAILED, reason or "the rebalancer failed it"))
        elif result != SUCCESSFUL:
            found.append(HeldBack(workload, PENDING, "no result from the rebalancer controller yet"))
        elif workload not in health:
            found.append(HeldBack(workload, NOT_HEALTHY, "health not read yet"))
        elif (why := health[workload]) is not None:
            found.append(HeldBack(workload, NOT_HEALTHY, why))
    return found


def verdict(holding: Sequence[HeldBack]) -> Verdict:
    if not holding:
        return Verdict.HEALTHY
    if any(h.state == FAILED for h in holding):
        return Verdict.FAILED
    return Verdict.WAITING


def named(holding: Sequence[HeldBack], limit: int = 3) -> str:
    """The workloads holding a wave back, for one line: the first ``limit`` with their reason, then a count."""
    ordered = sorted(holding, key=lambda h: h.state != FAILED)  # a failure first: it is what stopped the waves
    shown = "; ".join(str(h) for h in ordered[:limit])
    more = len(holding) - limit
    return shown + (f"; and {more} more" if more > 0 else "")
