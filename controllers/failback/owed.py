"""The Warnings owed for binding writes that failed.

A write that fails may have been stored all the same (its answer lost). The retry then no longer sees what the
write decided, so it would neither decide it again nor say it. What the Warning needs is kept here, per cluster
and binding, until the binding shows the write stored (the Warning is said then, once), or shows it was not (the
reconcile decides again, and says so itself):

* :class:`UnrecordedSkips`: a skip's ``FailbackSkipped``;
* :class:`UnreportedFinishes`: the ``FailbackNotPlaced`` check of a finished fail-back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from controller_manager.objects import Obj
from karmada_api.bindings import BindingKind

from . import progress, recovery

T = TypeVar("T")
Load = Callable[[BindingKind, str], Obj | None]
"""The binding of (kind, key), as the controller's cache has it (its own writes included)."""


class _OwedByBinding(Generic[T]):
    """Per cluster, per binding (kind, key): what is owed, the first kept."""

    def __init__(self) -> None:
        self._by_cluster: dict[str, dict[tuple[BindingKind, str], T]] = {}

    def _owe(self, cluster: str, kind: BindingKind, key: str, item: T) -> None:
        self._by_cluster.setdefault(cluster, {}).setdefault((kind, key), item)

    def _paid(self, cluster: str, key: str) -> None:
        kept = self._by_cluster.get(cluster, {})
        for entry in [entry for entry in kept if entry[1] == key]:
            del kept[entry]
        if not kept:
            self._by_cluster.pop(cluster, None)

    def forget(self, cluster: str) -> None:
        self._by_cluster.pop(cluster, None)

    def _due(self, cluster: str, load: Load, judge: Callable[[Obj, T], bool | None]) -> Iterator[tuple[Obj, T]]:
        """Each binding whose ``judge`` says the write is stored (True), with what is owed, once; kept while it says
        not yet (None); dropped when it says no (False) or the binding is gone."""
        kept = self._by_cluster.pop(cluster, {})
        for entry, item in list(kept.items()):
            binding = load(*entry)
            verdict = False if binding is None else judge(binding, item)
            if verdict is not None:
                del kept[entry]
            if verdict and binding is not None:
                yield binding, item
        if kept:
            self._by_cluster[cluster] = kept


@dataclass(frozen=True)
class UnrecordedSkip:
    """A skip whose write failed: the binding, the earliest time its skip was decided, its Warning's message."""

    kind: BindingKind
    key: str
    at: datetime
    message: str


class UnrecordedSkips(_OwedByBinding[UnrecordedSkip]):
    """The skips whose write failed, one per binding: the earliest attempt's. Each attempt marks its own time on the
    binding, and any of them may be the one stored."""

    def failed(self, cluster: str, skip: UnrecordedSkip) -> None:
        """The skip's write failed: keep its Warning (or the earlier attempt's)."""
        self._owe(cluster, skip.kind, skip.key, skip)

    def said(self, cluster: str, kind: BindingKind, key: str) -> None:
        """A later attempt was stored and recorded its own Warning: the kept one would be a second."""
        self._paid(cluster, key)

    def stored(self, cluster: str, load: Load) -> Iterator[tuple[Obj, str]]:
        """The bindings that carry a skip decided at or after a kept attempt, each with its Warning's message, once.
        A binding that still shows the record keeps its Warning; any other is dropped."""
        def judge(binding: Obj, skip: UnrecordedSkip) -> bool | None:
            skipped = progress.skipped_at(binding).get(cluster)
            if skipped is not None and skipped >= skip.at:
                return True
            return None if cluster in recovery.recorded_clusters(binding) else False

        for binding, skip in self._due(cluster, load, judge):
            yield binding, skip.message


class UnreportedFinishes(_OwedByBinding[None]):
    """The bindings whose finishing write was sent and whose ``FailbackNotPlaced`` check is not made yet."""

    def finishing(self, cluster: str, bindings: Iterable[tuple[BindingKind, str]]) -> None:
        """Their finishing writes are about to be sent."""
        for kind, key in bindings:
            self._owe(cluster, kind, key, None)

    def checked(self, cluster: str, key: str) -> None:
        """The reconcile that finished it checked it (its write's answer came)."""
        self._paid(cluster, key)

    def stored(self, cluster: str, load: Load) -> Iterator[Obj]:
        """The bindings whose move to the cluster shows over: to check now, once. One still in flight is kept."""
        for binding, _ in self._due(cluster, load, lambda binding, _: cluster not in progress.failing_back(binding)
                                    or None):
            yield binding
