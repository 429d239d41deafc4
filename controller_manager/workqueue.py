"""Work queues after client-go's ``util/workqueue`` (queue.go, delaying_queue.go, rate_limiting_queue.go).

Guarantees (the ones controllers rely on):

* an item added while queued is stored once;
* an item added while being processed is queued again when ``done`` is called, so it runs
  exactly once more and never on two workers at the same time;
* distinct items come out in FIFO order; waiting ``get()`` callers are served in arrival order,
  and a cancelled waiter never takes an item with it.

Everything runs on one event loop and takes no locks. ``add``, ``get_nowait`` and ``done`` are
plain synchronous calls, and ``get()`` on a non-empty queue returns without suspending.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from controller_manager.metrics import (
    WORKQUEUE_ADDS,
    WORKQUEUE_DEPTH,
    WORKQUEUE_LONGEST_RUNNING,
    WORKQUEUE_QUEUE_DURATION,
    WORKQUEUE_RETRIES,
    WORKQUEUE_UNFINISHED_WORK,
    WORKQUEUE_WORK_DURATION,
)
from controller_manager.ratelimiter import RateLimiter

__all__ = ["DelayingQueue", "RateLimitingQueue", "ShutDown", "WorkQueue"]

T = TypeVar("T", bound=Hashable)

Clock = Callable[[], float]


class ShutDown(Exception):
    """The queue is shut down and has nothing left to hand out: the worker should exit."""


class _QueueMetrics(Generic[T]):
    """client-go's ``defaultQueueMetrics`` under controller-runtime's metric names and labels.

    Depth, unfinished work and longest-running processor are computed when scraped, so the
    hot path only counts adds and observes the two durations.
    """

    def __init__(self, queue: WorkQueue[T], name: str, controller: str, clock: Clock) -> None:
        self._clock = clock
        self.add_times: dict[T, float] = {}  # first non-deduplicated add since the item's last get
        self.start_times: dict[T, float] = {}  # when processing of each handed-out item started
        self.adds = WORKQUEUE_ADDS.labels(name, controller)
        self.retries = WORKQUEUE_RETRIES.labels(name, controller)
        self.queue_duration = WORKQUEUE_QUEUE_DURATION.labels(name, controller)
        self.work_duration = WORKQUEUE_WORK_DURATION.labels(name, controller)
        # Weak references, so the registry doesn't keep a dead queue (and its items) alive.
        queue_ref = weakref.ref(queue)
        self_ref = weakref.ref(self)

        def depth() -> float:
            q = queue_ref()
            return float(q._depth()) if q is not None else 0.0

        def unfinished_work() -> float:
            m = self_ref()
            return m.unfinished_work() if m is not None else 0.0

        def longest_running() -> float:
            m = self_ref()
            return m.longest_running() if m is not None else 0.0

        WORKQUEUE_DEPTH.labels(name, controller, "").set_function(depth)
        WORKQUEUE_UNFINISHED_WORK.labels(name, controller).set_function(unfinished_work)
        WORKQUEUE_LONGEST_RUNNING.labels(name, controller).set_function(longest_running)

    def on_add(self, item: T) -> None:
        self.adds.inc()
        if item not in self.add_times:
            self.add_times[item] = self._clock()

    def on_get(self, item: T) -> None:
        now = self._clock()
        added = self.add_times.pop(item, None)
        if added is not None:
            self.queue_duration.observe(now - added)
        self.start_times[item] = now

    def on_done(self, item: T) -> None:
        started = self.start_times.pop(item, None)
        if started is not None:
            self.work_duration.observe(self._clock() - started)

    def unfinished_work(self) -> float:
        now = self._clock()
        return sum(now - t for t in list(self.start_times.values()))

    def longest_running(self) -> float:
        now = self._clock()
        return max((now - t for t in list(self.start_times.values())), default=0.0)


class WorkQueue(Generic[T]):
    """A deduplicating FIFO of keys with a *processing* set (client-go's ``Typed`` queue).

    ``name`` "" means no metrics; otherwise metrics carry ``name=name`` and
    ``controller=controller or name`` (controller-runtime sets both to the controller name).
    ``clock`` only feeds the duration metrics.
    """

    def __init__(self, name: str = "", *, controller: str | None = None, clock: Clock = time.monotonic) -> None:
        self._name = name
        self._clock = clock
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()  # needs processing: queued, or re-added while processing
        self._processing: set[T] = set()
        self._getters: deque[asyncio.Future[None]] = deque()  # get() callers waiting, oldest first
        self._drainers: list[asyncio.Future[None]] = []
        self._shutting_down = False
        self._drain = False
        self._metrics: _QueueMetrics[T] | None = (
            _QueueMetrics(self, name, controller or name, clock) if name else None
        )

    @property
    def name(self) -> str:
        return self._name

    def __len__(self) -> int:
        """Items waiting to be handed out (not those being processed)."""
        return len(self._queue)

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self._name!r} queued={len(self._queue)} "
                f"processing={len(self._processing)} shutting_down={self._shutting_down}>")

    def _depth(self) -> int:
        """client-go's depth gauge: +1 per non-deduplicated add, -1 per get, which is the dirty set."""
        return len(self._dirty)

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing; a no-op if it already is or the queue is shutting down."""
        if self._shutting_down or item in self._dirty:
            return
        if self._metrics is not None:
            self._metrics.on_add(item)
        self._dirty.add(item)
        if item in self._processing:
            return  # done() queues it again
        self._queue.append(item)
        if self._getters:
            self._wakeup_next()

    def _wakeup_next(self) -> None:
        """Wake the longest-waiting live getter; it takes the item itself when it runs."""
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def _pop(self) -> T:
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        if self._metrics is not None:
            self._metrics.on_get(item)
        return item

    def get_nowait(self) -> T | None:
        """Take the next item without waiting: None if empty, ``ShutDown`` if also shut down."""
        if self._queue:
            return self._pop()
        if self._shutting_down:
            raise ShutDown
        return None

    async def get(self) -> T:
        """Wait for the next item and mark it as processing; the caller must call :meth:`done` with it.

        Raises ``ShutDown`` only once the queue is shut down *and* empty.
        """
        first_in_line = False
        while not self._queue:
            if self._shutting_down:
                raise ShutDown
            getter = asyncio.get_running_loop().create_future()
            if first_in_line:
                self._getters.appendleft(getter)
            else:
                self._getters.append(getter)
            try:
                await getter
            except BaseException:
                getter.cancel()
                with contextlib.suppress(ValueError):
                    self._getters.remove(getter)
                # Woken for an item we won't take: pass the wake-up on, so the item isn't stranded.
                if self._queue and not getter.cancelled():
                    self._wakeup_next()
                raise
            # If someone took the item before we ran (get_nowait, or a get() that didn't have to
            # wait), we wait again, keeping our place at the head of the line.
            first_in_line = True
        return self._pop()

    def done(self, item: T) -> None:
        """Finish processing ``item``; if it was added meanwhile, queue it again. Unknown items are ignored."""
        if item not in self._processing:
            return
        if self._metrics is not None:
            self._metrics.on_done(item)
        self._processing.remove(item)
        if item in self._dirty:
            self._queue.append(item)
            if self._getters:
                self._wakeup_next()
        if not self._processing and self._drainers:
            self._release_drainers()

    def processing(self) -> int:
        """How many items are handed out and not yet done."""
        return len(self._processing)

    def shutting_down(self) -> bool:
        return self._shutting_down

    def _shut_down(self) -> None:
        """Stop intake and wake every waiting getter; subclasses also drop pending timers here."""
        self._shutting_down = True
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(None)

    def _release_drainers(self) -> None:
        drainers, self._drainers = self._drainers, []
        for fut in drainers:
            if not fut.done():
                fut.set_result(None)

    def shut_down(self) -> None:
        """Drop later adds; ``get`` hands out what is queued, then raises ``ShutDown``.

        Also cuts short a running :meth:`shut_down_with_drain`, as in client-go.
        """
        self._drain = False
        self._shut_down()
        self._release_drainers()

    async def shut_down_with_drain(self) -> None:
        """Shut down, then wait until no item is being processed (so workers must call ``done``)."""
        self._drain = True
        self._shut_down()
        while self._processing and self._drain:
            fut = asyncio.get_running_loop().create_future()
            self._drainers.append(fut)
            try:
                await fut
            finally:
                with contextlib.suppress(ValueError):
                    self._drainers.remove(fut)


class DelayingQueue(WorkQueue[T]):
    """A work queue that can add items later (client-go's delaying queue), with one loop timer per item.

    A second ``add_after`` for an item that is still waiting keeps the earlier ready time.
    """

    def __init__(self, name: str = "", *, controller: str | None = None, clock: Clock = time.monotonic) -> None:
        super().__init__(name, controller=controller, clock=clock)
        self._waiting: dict[T, asyncio.TimerHandle] = {}

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` after ``delay`` seconds (at once if ``delay <= 0``); every call counts as a retry.

        Needs a running event loop when ``delay > 0``.
        """
        if self._shutting_down:
            return
        if self._metrics is not None:
            self._metrics.retries.inc()  # client-go counts every AddAfter, even without a delay
        if delay <= 0:
            self.add(item)
            return
        loop = asyncio.get_running_loop()
        ready_at = loop.time() + delay
        handle = self._waiting.get(item)
        if handle is not None:
            if handle.when() <= ready_at:
                return
            handle.cancel()
        self._waiting[item] = loop.call_at(ready_at, self._ready, item)

    def _ready(self, item: T) -> None:
        del self._waiting[item]
        self.add(item)

    def waiting(self) -> int:
        """Items whose delay has not run out yet."""
        return len(self._waiting)

    def _shut_down(self) -> None:
        super()._shut_down()
        for handle in self._waiting.values():
            handle.cancel()
        self._waiting.clear()


class RateLimitingQueue(DelayingQueue[T]):
    """A delaying queue that asks a :class:`RateLimiter` how long to hold back each retry."""

    def __init__(self, rate_limiter: RateLimiter[T], name: str = "", *, controller: str | None = None,
                 clock: Clock = time.monotonic) -> None:
        super().__init__(name, controller=controller, clock=clock)
        self.rate_limiter = rate_limiter

    def add_rate_limited(self, item: T) -> None:
        """Requeue ``item`` after the limiter's delay (which also records a failure in the limiter)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """The item succeeded: clear its failure history (it stays queued if it is queued)."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)
