"""Budgets for the descheduler (beyond Karmada): how many replicas may move per cycle and per workload.

Karmada's descheduler moves every unschedulable replica it finds in one cycle; after a node pool
or a whole cluster fails that can be thousands at once, all rescheduled while the new replicas are
not yet Ready. ``--max-descheduled-replicas-per-cycle`` and ``--max-descheduled-replicas-per-workload``
bound it, as the Kubernetes descheduler's ``maxNoOfPodsToEvictTotal`` and ``...PerNamespace`` do.
A budget only lowers what a plan takes (never below Karmada's ready-replicas floor, never more than
the unschedulable count); the rest stays unschedulable and is taken in the next cycles.

Order under the cycle budget: bindings by key (namespace/name), as Karmada enqueues them, but each
cycle starts at the first binding the previous cycle's budget held back and wraps around. Keys
make the order deterministic; starting where the budget ran out is round-robin, so a workload late
in the alphabet is not starved by earlier ones that keep needing moves. The resume point is kept in
memory only: after a restart or a change of leader the first cycle starts at the first key again,
which costs at most one cycle of fairness and never moves more than the budget.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

CYCLE_BUDGET = "cycle-budget"
"""The ``reason`` of replicas held back because the cycle's budget was spent."""
WORKLOAD_BUDGET = "workload-budget"
"""The ``reason`` of replicas held back by the per-workload cap."""


@dataclass(frozen=True)
class Budget:
    """How many replicas one binding's plan may take: at most ``workload`` (the per-workload cap)
    and at most ``cycle`` (what is left of the cycle's); None is no limit."""

    workload: int | None = None
    cycle: int | None = None

    @property
    def limit(self) -> int | None:
        """The lower of the two limits (None when neither is set)."""
        limits = [n for n in (self.workload, self.cycle) if n is not None]
        return min(limits) if limits else None

    def held_back(self, wanted: int, taken: int) -> dict[str, int]:
        """Why ``wanted - taken`` replicas were held back, per reason: the per-workload cap's share
        first (what it alone would have held), the cycle budget's the rest."""
        by_workload = max(0, wanted - self.workload) if self.workload is not None else 0
        by_cycle = wanted - taken - by_workload
        return {reason: n for reason, n in ((WORKLOAD_BUDGET, by_workload), (CYCLE_BUDGET, by_cycle)) if n > 0}


def rotate(keys: Iterable[str], start: str | None) -> list[str]:
    """``keys`` sorted, beginning at ``start`` (or the first key after it, if it is gone) and wrapping."""
    ordered = sorted(keys)
    if start is None:
        return ordered
    at = bisect.bisect_left(ordered, start)
    return ordered[at:] + ordered[:at]


class CycleBudget:
    """The descheduler's budgets across one cycle: what is left, what was held back, where to resume.

    ``per_cycle`` / ``per_workload`` None: no limit (the flags' absence, Karmada's behaviour).
    """

    def __init__(self, per_cycle: int | None = None, per_workload: int | None = None) -> None:
        self.per_cycle = per_cycle
        self.per_workload = per_workload
        self.left = per_cycle
        self.held: Counter[str] = Counter()  # reason -> replicas held back in this cycle
        self._resume: str | None = None  # the first binding the last cycle's budget held back
        self._first_held: str | None = None

    @property
    def limited(self) -> bool:
        return self.per_cycle is not None or self.per_workload is not None

    def start(self, keys: Iterable[str]) -> list[str]:
        """Begin a cycle over ``keys``; returns them in the order to process them."""
        self.left = self.per_cycle
        self.held = Counter()
        self._first_held = None
        return rotate(keys, self._resume)

    def for_binding(self) -> Budget | None:
        """The limits of the next binding's plan (None: unlimited)."""
        return Budget(self.per_workload, self.left) if self.limited else None

    def spend(self, replicas: int) -> None:
        """A plan moved ``replicas`` (written, or reported by a dry run)."""
        if self.left is not None:
            self.left = max(0, self.left - replicas)

    def hold(self, key: str, held_back: dict[str, int]) -> None:
        """A plan of binding ``key`` held ``held_back`` (reason -> replicas) back."""
        self.held.update(held_back)
        if held_back.get(CYCLE_BUDGET) and self._first_held is None:
            self._first_held = key

    def finish(self) -> None:
        """End the cycle: the next one starts at the first binding this one's cycle budget held back."""
        self._resume = self._first_held
