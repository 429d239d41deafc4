"""The per-key coalescing of watch events (controller_manager.coalescing): the first event goes at once, a stream
is reconciled once it is quiet, and a stream that never stops still is, every ``max_wait``.

The quiet-period decisions read an injected clock; the timers that end a stream are the event loop's, waited
for with a deadline.
"""

from __future__ import annotations

import asyncio

from controller_manager.coalescing import Coalescer
from controller_manager.workqueue import WorkQueue

DEADLINE = 5.0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class CountingQueue(WorkQueue[str]):
    def __init__(self) -> None:
        super().__init__()
        self.adds = 0

    def add(self, item: str) -> None:
        self.adds += 1
        super().add(item)


def make(quiet: float = 0.2, max_wait: float | None = None) -> tuple[Coalescer[str], CountingQueue, Clock]:
    queue, clock = CountingQueue(), Clock()
    return Coalescer(queue, quiet, max_wait=max_wait, clock=clock), queue, clock


async def test_a_first_event_and_one_after_a_quiet_period_go_at_once() -> None:
    coalescer, queue, clock = make(quiet=1.0)
    coalescer.add("a")
    assert queue.adds == 1 and len(queue) == 1  # a single update is never delayed
    assert await queue.get() == "a"
    coalescer.started("a")
    queue.done("a")
    clock.now += 1.0  # quiet for a whole period
    coalescer.add("a")
    assert queue.adds == 2 and len(queue) == 1


async def test_a_stream_after_a_reconcile_becomes_one_reconcile_once_quiet() -> None:
    coalescer, queue, clock = make(quiet=0.2)
    coalescer.started("a")  # a reconcile of a starts: it reads what the events so far changed
    for _ in range(3):  # a rollout: more Work statuses within the period
        clock.now += 0.1
        coalescer.add("a")
    assert queue.adds == 0 and len(queue) == 0
    coalescer.add("b")  # another key is not held by a's stream
    assert await asyncio.wait_for(queue.get(), DEADLINE) == "b"
    assert await asyncio.wait_for(queue.get(), DEADLINE) == "a"
    assert queue.adds == 2  # the three events of a: one reconcile (the cancelled timers never fire)


async def test_a_stream_that_never_stops_is_reconciled_after_max_wait() -> None:
    coalescer, queue, clock = make(quiet=60.0, max_wait=0.5)
    coalescer.started("a")
    coalescer.add("a")  # the stream starts at 100.0: reconciled by 100.5 at the latest
    clock.now += 0.49
    coalescer.add("a")  # would push the end to 160.49 without the bound
    assert await asyncio.wait_for(queue.get(), DEADLINE) == "a"
    assert queue.adds == 1


async def test_closing_cancels_the_waiting_streams() -> None:
    coalescer, queue, _ = make(quiet=0.05)
    coalescer.started("a")
    coalescer.add("a")  # a's stream would end in 0.05 s
    coalescer.close()
    asyncio.get_running_loop().call_later(0.1, queue.add, "later")  # a timer due after a's
    assert await asyncio.wait_for(queue.get(), DEADLINE) == "later"  # a's cancelled timer queued nothing before
    assert queue.adds == 1
