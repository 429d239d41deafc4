"""Per-key coalescing of event-driven reconciles: a stream of events for one key becomes two reconciles.

A controller whose reconcile writes what it computes (binding status) writes every intermediate state when the
events for one key come a few hundred milliseconds apart, as a member's Works do while a rollout progresses:
each state is correct, and each costs the API server a write. Karmada's controller-manager writes fewer of them
only because its shared client-side rate limit slows every reconcile and the workqueue coalesces the events
that wait meanwhile. :class:`Coalescer` makes that coalescing explicit and independent of load:

* the first event for a key that has been quiet for ``quiet`` seconds goes to the queue at once: a single
  update is never delayed;
* an event that comes sooner (a stream) starts, or pushes back, a timer: the key is queued once no event has
  come for ``quiet`` seconds, and at the latest ``max_wait`` seconds after the first event of the stream, so a
  key whose events never stop is still reconciled that often. The reconcile reads the cache as it is then.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from .workqueue import WorkQueue

T = TypeVar("T", bound=Hashable)

MAX_WAIT_PERIODS = 5
"""``max_wait`` as a multiple of ``quiet`` unless given."""


@dataclass
class _Stream:
    first: float
    timer: asyncio.TimerHandle


class Coalescer(Generic[T]):
    """``add`` for a watch's events (in place of the queue's own); ``started`` from the controller's worker."""

    def __init__(self, queue: WorkQueue[T], quiet: float, *, max_wait: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if quiet <= 0:
            raise ValueError(f"coalescing period must be positive, got {quiet}")
        self.queue = queue
        self.quiet = quiet
        self.max_wait = max_wait if max_wait is not None else MAX_WAIT_PERIODS * quiet
        self._clock = clock
        self._last: dict[T, float] = {}
        """key → when its last event or reconcile was: the start of its quiet period."""
        self._streams: dict[T, _Stream] = {}
        self._prune_at = 1024

    def add(self, item: T) -> None:
        now = self._clock()
        last = self._last.get(item)
        self._touch(item, now)
        stream = self._streams.get(item)
        if stream is None and (last is None or now - last >= self.quiet):
            self.queue.add(item)
            return
        first = stream.first if stream is not None else now
        if stream is not None:
            stream.timer.cancel()
        delay = max(0.0, min(now + self.quiet, first + self.max_wait) - now)
        timer = asyncio.get_running_loop().call_later(delay, self._fire, item)
        self._streams[item] = _Stream(first, timer)

    def started(self, item: T) -> None:
        """A reconcile of ``item`` starts now: it reads every event so far; later ones start a stream."""
        self._touch(item, self._clock())

    def close(self) -> None:
        """Cancel the waiting timers (the controller is stopping: nothing more is queued)."""
        for stream in self._streams.values():
            stream.timer.cancel()
        self._streams.clear()

    def _fire(self, item: T) -> None:
        self._streams.pop(item, None)
        self.queue.add(item)

    def _touch(self, item: T, now: float) -> None:
        self._last[item] = now
        if len(self._last) >= self._prune_at:  # forget keys quiet for a whole period: memory stays bounded
            horizon = now - self.quiet
            self._last = {key: at for key, at in self._last.items() if at > horizon or key in self._streams}
            self._prune_at = max(1024, 2 * len(self._last))
