"""Finished fail-backs whose ``FailbackNotPlaced`` check is still owed.

A fail-back that ends healthy with no replica on the cluster gets a Warning (:func:`.progress.not_placed_message`)
once the write that finishes it is stored. That write may fail and be stored all the same (its answer lost): the
retry then no longer sees the move in flight, so it would neither finish it again nor say anything. The binding is
kept here until it shows the move over (checked then) or still in flight (finished again by the reconcile, which
checks it itself).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from controller_manager.objects import Obj
from karmada_api.bindings import BindingKind

from . import progress


class UnreportedFinishes:
    """Per cluster, the bindings (kind, key) whose finishing write was sent and whose check is not made yet."""

    def __init__(self) -> None:
        self._by_cluster: dict[str, set[tuple[BindingKind, str]]] = {}

    def finishing(self, cluster: str, bindings: Iterable[tuple[BindingKind, str]]) -> None:
        """Their finishing writes are about to be sent."""
        self._by_cluster.setdefault(cluster, set()).update(bindings)
        if not self._by_cluster[cluster]:
            del self._by_cluster[cluster]

    def checked(self, cluster: str, key: str) -> None:
        """The reconcile that finished it checked it (its write's answer came)."""
        kept = self._by_cluster.get(cluster, set())
        kept.difference_update({entry for entry in kept if entry[1] == key})
        if not kept:
            self._by_cluster.pop(cluster, None)

    def forget(self, cluster: str) -> None:
        self._by_cluster.pop(cluster, None)

    def stored(self, cluster: str, load: Callable[[BindingKind, str], Obj | None]) -> Iterator[Obj]:
        """The bindings (as ``load`` reads them) whose move to the cluster shows over: to check now, once. One still
        in flight is kept; a binding gone is dropped."""
        kept = self._by_cluster.pop(cluster, set())
        for entry in list(kept):
            binding = load(*entry)
            if binding is None:
                kept.discard(entry)
            elif cluster not in progress.failing_back(binding):
                kept.discard(entry)
                yield binding
        if kept:
            self._by_cluster[cluster] = kept
