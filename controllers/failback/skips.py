"""The ``FailbackSkipped`` Warnings of skips whose write failed.

Such a write may have been stored with its answer lost. The retry would then no longer see the record, so it
would neither decide the skip again nor say why; the Warning is kept here until the binding shows the skip
stored, or that it was not (the record still there: the skip is decided again, and says so itself).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from controller_manager.objects import Obj
from karmada_api.bindings import BindingKind

from . import progress, recovery


@dataclass(frozen=True)
class UnrecordedSkip:
    """A skip whose write failed: the binding, the earliest time its skip was decided, its Warning's message."""

    kind: BindingKind
    key: str
    at: datetime
    message: str


class UnrecordedSkips:
    """Per cluster, the skips whose write failed, one per binding: the earliest attempt's. Each attempt marks its
    own time on the binding, and any of them may be the one stored."""

    def __init__(self) -> None:
        self._by_cluster: dict[str, dict[tuple[BindingKind, str], UnrecordedSkip]] = {}

    def failed(self, cluster: str, skip: UnrecordedSkip) -> None:
        """The skip's write failed: keep its Warning (or the earlier attempt's)."""
        self._by_cluster.setdefault(cluster, {}).setdefault((skip.kind, skip.key), skip)

    def said(self, cluster: str, kind: BindingKind, key: str) -> None:
        """A later attempt was stored and recorded its own Warning: the kept one would be a second."""
        kept = self._by_cluster.get(cluster, {})
        kept.pop((kind, key), None)
        if not kept:
            self._by_cluster.pop(cluster, None)

    def forget(self, cluster: str) -> None:
        self._by_cluster.pop(cluster, None)

    def stored(self, cluster: str, load: Callable[[BindingKind, str], Obj | None]) -> Iterator[tuple[Obj, str]]:
        """The bindings (as ``load`` reads them) that carry a skip decided at or after a kept attempt, each with its
        Warning's message, once. A binding that still shows the record keeps its Warning; any other is dropped."""
        kept = self._by_cluster.pop(cluster, {})
        for entry, skip in list(kept.items()):
            binding = load(skip.kind, skip.key)
            skipped = progress.skipped_at(binding).get(cluster) if binding is not None else None
            if binding is not None and skipped is not None and skipped >= skip.at:
                del kept[entry]
                yield binding, skip.message
            elif binding is None or cluster not in recovery.recorded_clusters(binding):
                del kept[entry]
        if kept:
            self._by_cluster[cluster] = kept
