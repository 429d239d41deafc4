"""Workqueue invariants (client-go semantics), checked with model-based and property-based tests.

The synchronous core (add / get_nowait / done / shut_down) is driven by a hypothesis state
machine against a small model; waiting behaviour (get, drain, timers, cancellation) has async
tests with deadline-bounded waits.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Coroutine
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from prometheus_client.metrics import MetricWrapperBase

from controller_manager.metrics import (
    WORKQUEUE_ADDS,
    WORKQUEUE_DEPTH,
    WORKQUEUE_LONGEST_RUNNING,
    WORKQUEUE_QUEUE_DURATION,
    WORKQUEUE_RETRIES,
    WORKQUEUE_UNFINISHED_WORK,
    WORKQUEUE_WORK_DURATION,
)
from controller_manager.ratelimiter import ItemExponentialFailureRateLimiter
from controller_manager.workqueue import DelayingQueue, RateLimitingQueue, ShutDown, WorkQueue

KEYS = ("a", "b", "c", "d", "e")
DEADLINE = 5.0  # generous bound for anything that should happen "soon"


class FakeClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def unique_name() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


_FAMILIES: dict[str, MetricWrapperBase] = {
    "workqueue_adds_total": WORKQUEUE_ADDS,
    "workqueue_depth": WORKQUEUE_DEPTH,
    "workqueue_queue_duration_seconds": WORKQUEUE_QUEUE_DURATION,
    "workqueue_work_duration_seconds": WORKQUEUE_WORK_DURATION,
    "workqueue_unfinished_work_seconds": WORKQUEUE_UNFINISHED_WORK,
    "workqueue_longest_running_processor_seconds": WORKQUEUE_LONGEST_RUNNING,
    "workqueue_retries_total": WORKQUEUE_RETRIES,
}


def sample_value(sample: str, labels: dict[str, str]) -> float | None:
    """Read one sample as a scrape would, collecting only its own metric (the whole registry is slow)."""
    family = next(f for prefix, f in _FAMILIES.items() if sample.startswith(prefix))
    for metric_family in family.collect():
        for s in metric_family.samples:
            if s.name == sample and s.labels == labels:
                return s.value
    return None


def metric(sample: str, name: str, **labels: str) -> float:
    """A sample for a queue whose ``name`` and ``controller`` labels are both ``name`` (0 if absent)."""
    value = sample_value(sample, {"name": name, "controller": name, **labels})
    return 0.0 if value is None else value


def run_to_completion(coro: Coroutine[Any, Any, str]) -> str:
    """Run a coroutine that must not suspend; fail if it does."""
    try:
        coro.send(None)
    except StopIteration as stop:
        result: str = stop.value
        return result
    coro.close()
    raise AssertionError("coroutine suspended")


# --- model-based state machine over the synchronous API ----------------------------------------------------


class WorkQueueMachine(RuleBasedStateMachine):
    """Model: FIFO of queued keys, keys held by workers, keys re-added while held (run once more after done)."""

    name = "test-machine"  # one name for all runs (new label sets make every scrape slower): compare deltas

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.base = {s: metric(s, self.name) for s in (
            "workqueue_adds_total", "workqueue_queue_duration_seconds_count", "workqueue_work_duration_seconds_count")}
        self.q: WorkQueue[str] = WorkQueue(self.name, clock=self.clock)
        self.queued: list[str] = []
        self.held: dict[str, float] = {}  # key -> when processing started
        self.pending: set[str] = set()  # added while held: queued again at done
        self.shut = False
        self.adds = 0  # adds that were not deduplicated
        self.gets = 0
        self.dones = 0

    @initialize()
    def start(self) -> None:
        assert len(self.q) == 0

    @rule(key=st.sampled_from(KEYS))
    def add(self, key: str) -> None:
        self.q.add(key)
        if self.shut or key in self.queued or key in self.pending:
            return  # dropped after shutdown, or stored once
        self.adds += 1
        if key in self.held:
            self.pending.add(key)
        else:
            self.queued.append(key)

    @rule()
    def get_nowait(self) -> None:
        if not self.queued:
            if self.shut:
                with pytest.raises(ShutDown):
                    self.q.get_nowait()
            else:
                assert self.q.get_nowait() is None
            return
        key = self.q.get_nowait()
        assert key == self.queued.pop(0), "distinct keys come out in FIFO order"
        assert key not in self.held, "a key is never held by two workers"
        self.held[key] = self.clock.now
        self.gets += 1

    @precondition(lambda self: bool(self.held))
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.held)))
        self.q.done(key)
        del self.held[key]
        self.dones += 1
        if key in self.pending:
            self.pending.remove(key)
            self.queued.append(key)  # exactly one more run

    @rule(key=st.sampled_from(KEYS))
    def done_unknown(self, key: str) -> None:
        """done() for a key nobody holds changes nothing."""
        if key not in self.held:
            self.q.done(key)

    @rule(dt=st.sampled_from([0.5, 1.0, 3.0]))
    def tick(self, dt: float) -> None:
        self.clock.now += dt

    @precondition(lambda self: not self.shut)
    @rule()
    def shut_down(self) -> None:
        self.q.shut_down()
        self.shut = True

    @invariant()
    def matches_model(self) -> None:
        assert len(self.q) == len(self.queued)
        assert self.q.processing() == len(self.held)
        assert self.q.shutting_down() == self.shut

    @invariant()
    def metrics_match_model(self) -> None:
        n = self.name

        def delta(sample: str) -> float:
            return metric(sample, n) - self.base[sample]

        assert delta("workqueue_adds_total") == self.adds
        # client-go's depth: +1 per non-deduplicated add, -1 per get.
        assert metric("workqueue_depth", n, priority="") == len(self.queued) + len(self.pending)
        assert delta("workqueue_queue_duration_seconds_count") == self.gets
        assert delta("workqueue_work_duration_seconds_count") == self.dones
        now = self.clock.now
        assert metric("workqueue_unfinished_work_seconds", n) == pytest.approx(
            sum(now - t for t in self.held.values()))
        assert metric("workqueue_longest_running_processor_seconds", n) == pytest.approx(
            max((now - t for t in self.held.values()), default=0.0))


WorkQueueMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=60, deadline=None)
TestWorkQueueMachine = pytest.mark.slow(WorkQueueMachine.TestCase)  # 300 examples: ~8 s


# --- concurrent workers: a property over random interleavings ------------------------------------------------

# ("add", key index, yields after, _) or ("cancel", worker index, yields after, start a replacement)
Step = tuple[str, int, int, bool]
steps = st.one_of(
    st.tuples(st.just("add"), st.integers(0, len(KEYS) - 1), st.integers(0, 3), st.just(False)),
    st.tuples(st.just("cancel"), st.integers(0, 3), st.integers(0, 2), st.booleans()),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(steps, max_size=50), n_workers=st.integers(1, 4),
       work=st.lists(st.integers(0, 3), min_size=1, max_size=6))
# The head waiter is woken by the last add and cancelled before it runs, with no replacement:
# random scripts rarely end exactly like this (any later add or finishing worker hides it).
@example(script=[("add", 0, 0, False), ("cancel", 0, 0, False)], n_workers=2, work=[0])
async def test_workers_never_share_a_key_and_no_add_is_lost(
        script: list[Step], n_workers: int, work: list[int]) -> None:
    """Workers process keys with random yields while a producer adds keys and randomly cancels workers.

    From the log of adds and processing starts: every start follows a non-deduplicated add, every such
    add is followed by exactly one start, and no key is ever held twice. Cancelled workers are not
    always replaced (a fresh get() would pick up anything stranded), so the remaining waiters must
    be woken for every item: a cancelled getter neither takes an item nor swallows its wake-up.
    """
    q: WorkQueue[str] = WorkQueue()
    holding: set[str] = set()
    log: list[tuple[str, str]] = []  # ("add" | "start", key), in execution order
    rounds = itertools.count()

    async def worker() -> None:
        while True:
            try:
                key = await q.get()
            except ShutDown:
                return
            try:
                assert key not in holding, f"{key} handed to two workers"
                holding.add(key)
                log.append(("start", key))
                for _ in range(work[next(rounds) % len(work)]):
                    await asyncio.sleep(0)
            finally:
                holding.discard(key)
                q.done(key)

    tasks = [asyncio.create_task(worker()) for _ in range(n_workers)]  # cancelled ones stay listed
    await asyncio.sleep(0)  # the workers are waiting in get() before the first add
    for kind, arg, pause, respawn in script:
        if kind == "add":
            log.append(("add", KEYS[arg]))
            q.add(KEYS[arg])
        else:
            live = [t for t in tasks if not t.done() and not t.cancelling()]
            victim = live[arg % len(live)]
            victim.cancel()
            if respawn or len(live) == 1:
                tasks.append(asyncio.create_task(worker()))
        for _ in range(pause):
            await asyncio.sleep(0)
    # Only ready callbacks are involved (no timers), so the workers finish within a bounded number of
    # loop iterations; an item still queued then is stranded while workers wait.
    for _ in range(1000):
        if len(q) == 0 and q.processing() == 0:
            break
        await asyncio.sleep(0)
    assert (len(q), q.processing()) == (0, 0), "items stranded while workers wait"
    q.shut_down()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), DEADLINE)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result

    dirty: dict[str, bool] = dict.fromkeys(KEYS, False)
    for kind, key in log:
        if kind == "add":
            dirty[key] = True  # a second add while dirty is deduplicated
        else:
            assert dirty[key], f"{key} ran without a pending add"
            dirty[key] = False
    assert not any(dirty.values()), f"adds never processed: {dirty}"
    assert len(q) == 0
    assert q.processing() == 0


# --- waiting behaviour ----------------------------------------------------------------------------------------


async def test_get_waits_for_add() -> None:
    q: WorkQueue[str] = WorkQueue()
    task = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not task.done()
    q.add("x")
    assert await asyncio.wait_for(task, DEADLINE) == "x"
    assert q.processing() == 1


async def test_get_on_non_empty_queue_does_not_suspend() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("x")
    assert run_to_completion(q.get()) == "x"


async def test_waiters_are_served_in_arrival_order() -> None:
    q: WorkQueue[str] = WorkQueue()
    tasks = []
    for _ in range(3):
        tasks.append(asyncio.create_task(q.get()))
        await asyncio.sleep(0)
    for key in ("a", "b", "c"):
        q.add(key)
    assert await asyncio.wait_for(asyncio.gather(*tasks), DEADLINE) == ["a", "b", "c"]


async def test_cancelled_waiter_takes_nothing() -> None:
    q: WorkQueue[str] = WorkQueue()
    task = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    q.add("x")
    assert len(q) == 1
    assert q.get_nowait() == "x"


async def test_waiter_cancelled_after_wakeup_passes_item_on() -> None:
    q: WorkQueue[str] = WorkQueue()
    first = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("x")  # wakes `first`, which has not run yet
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await asyncio.wait_for(second, DEADLINE) == "x"


async def test_waiter_cancelled_after_wakeup_leaves_item_queued() -> None:
    q: WorkQueue[str] = WorkQueue()
    task = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("x")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(q) == 1
    assert q.processing() == 0


async def test_woken_waiter_whose_item_was_taken_keeps_its_place() -> None:
    q: WorkQueue[str] = WorkQueue()
    first = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    second = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("a")  # wakes `first`...
    assert q.get_nowait() == "a"  # ...but the item is taken before it runs
    await asyncio.sleep(0)
    assert not first.done()
    q.add("b")
    assert await asyncio.wait_for(first, DEADLINE) == "b"
    assert not second.done()
    second.cancel()


async def test_add_during_processing_runs_once_more_after_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("x")
    assert await q.get() == "x"
    q.add("x")
    q.add("x")
    assert len(q) == 0, "not handed out while held"
    waiter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not waiter.done()
    q.done("x")
    assert await asyncio.wait_for(waiter, DEADLINE) == "x"
    q.done("x")
    assert q.get_nowait() is None


# --- shutdown -------------------------------------------------------------------------------------------------


async def test_shut_down_hands_out_queued_items_then_raises() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    q.add("b")
    q.shut_down()
    q.add("c")  # dropped
    assert await q.get() == "a"
    assert await q.get() == "b"
    with pytest.raises(ShutDown):
        await q.get()
    with pytest.raises(ShutDown):
        q.get_nowait()


async def test_shut_down_wakes_waiters_with_shutdown() -> None:
    q: WorkQueue[str] = WorkQueue()
    tasks = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.shut_down()
    results = await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), DEADLINE)
    assert all(isinstance(r, ShutDown) for r in results)


async def test_item_readded_while_processing_survives_shutdown() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("x")
    assert q.get_nowait() == "x"
    q.add("x")
    q.shut_down()
    q.done("x")
    assert q.get_nowait() == "x"
    q.done("x")
    with pytest.raises(ShutDown):
        q.get_nowait()


async def test_shut_down_with_drain_waits_for_done() -> None:
    q: WorkQueue[str] = WorkQueue()
    for key in ("a", "b"):
        q.add(key)
        assert q.get_nowait() == key
    drain = asyncio.create_task(q.shut_down_with_drain())
    for _ in range(5):
        await asyncio.sleep(0)
    assert q.shutting_down()
    assert not drain.done()
    q.done("a")
    for _ in range(5):
        await asyncio.sleep(0)
    assert not drain.done()
    q.done("b")
    await asyncio.wait_for(drain, DEADLINE)


async def test_shut_down_with_drain_returns_at_once_when_idle() -> None:
    q: WorkQueue[str] = WorkQueue()
    await asyncio.wait_for(q.shut_down_with_drain(), DEADLINE)
    assert q.shutting_down()


async def test_shut_down_cuts_drain_short() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("a")
    assert q.get_nowait() == "a"
    drain = asyncio.create_task(q.shut_down_with_drain())
    await asyncio.sleep(0)
    assert not drain.done()
    q.shut_down()
    await asyncio.wait_for(drain, DEADLINE)
    assert q.processing() == 1


# --- delaying queue -------------------------------------------------------------------------------------------


async def test_add_after_non_positive_is_plain_add_and_counts_retry() -> None:
    name = unique_name()
    q: DelayingQueue[str] = DelayingQueue(name)
    q.add_after("a", 0)
    q.add_after("b", -1)
    assert q.get_nowait() == "a"
    assert q.get_nowait() == "b"
    assert metric("workqueue_retries_total", name) == 2
    assert metric("workqueue_adds_total", name) == 2


async def test_add_after_delays_the_item() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    loop = asyncio.get_running_loop()
    start = loop.time()
    q.add_after("x", 0.02)
    assert q.get_nowait() is None
    assert q.waiting() == 1
    assert await asyncio.wait_for(q.get(), DEADLINE) == "x"
    assert loop.time() - start >= 0.015
    assert q.waiting() == 0


async def test_add_after_earlier_ready_time_wins() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    q.add_after("x", 3600)
    q.add_after("x", 0.01)
    assert q.waiting() == 1
    assert await asyncio.wait_for(q.get(), DEADLINE) == "x"
    assert q.waiting() == 0, "the hour-long timer was replaced, not kept"


async def test_add_after_later_ready_time_is_ignored() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    q.add_after("x", 0.01)
    q.add_after("x", 3600)
    assert await asyncio.wait_for(q.get(), DEADLINE) == "x"
    assert q.waiting() == 0


async def test_add_after_item_already_queued_is_stored_once() -> None:
    q: DelayingQueue[str] = DelayingQueue()
    q.add("x")
    q.add_after("x", 0.01)
    assert q.get_nowait() == "x"
    q.done("x")
    # The timer still fires later and adds it again, as in client-go.
    assert await asyncio.wait_for(q.get(), DEADLINE) == "x"
    assert len(q) == 0


async def test_shut_down_cancels_timers() -> None:
    name = unique_name()
    q: DelayingQueue[str] = DelayingQueue(name)
    q.add_after("x", 0.01)
    q.shut_down()
    assert q.waiting() == 0
    q.add_after("y", 0.01)  # dropped, and not counted
    assert q.waiting() == 0
    assert metric("workqueue_retries_total", name) == 1
    with pytest.raises(ShutDown):
        await asyncio.wait_for(q.get(), DEADLINE)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(calls=st.lists(st.tuples(st.sampled_from(KEYS), st.integers(1, 15)), min_size=1, max_size=12))
async def test_add_after_order_follows_earliest_ready_time(calls: list[tuple[str, int]]) -> None:
    """Each key comes out once, at its earliest requested time, in order of those times."""
    q: DelayingQueue[str] = DelayingQueue()
    effective: dict[str, int] = {}
    loop = asyncio.get_running_loop()
    # Freeze the loop clock while scheduling, so ready times are exactly now + delay (no loop
    # iteration runs inside this block, so the timers themselves are unaffected).
    with mock.patch.object(loop, "time", return_value=loop.time()):
        for key, ms in calls:
            q.add_after(key, ms / 1000)
            effective[key] = min(ms, effective.get(key, ms))
    assert q.waiting() == len(effective)
    got = []
    for _ in effective:
        got.append(await asyncio.wait_for(q.get(), DEADLINE))
    assert sorted(got) == sorted(effective)
    delays = [effective[key] for key in got]
    assert delays == sorted(delays)
    assert q.waiting() == 0
    assert len(q) == 0


# --- rate-limited queue ---------------------------------------------------------------------------------------


class ScriptedLimiter:
    """Returns the delays it is given, in order, and records calls."""

    def __init__(self, delays: list[float]) -> None:
        self.delays = list(delays)
        self.when_calls: list[str] = []
        self.forgotten: list[str] = []

    def when(self, item: str) -> float:
        self.when_calls.append(item)
        return self.delays.pop(0)

    def forget(self, item: str) -> None:
        self.forgotten.append(item)

    def num_requeues(self, item: str) -> int:
        return self.when_calls.count(item) - self.forgotten.count(item)


async def test_rate_limited_queue_uses_limiter_delays() -> None:
    name = unique_name()
    limiter = ScriptedLimiter([0.03, 0.0, 0.01])
    q: RateLimitingQueue[str] = RateLimitingQueue(limiter, name)
    q.add_rate_limited("slow")
    q.add_rate_limited("now")
    q.add_rate_limited("soon")
    assert q.get_nowait() == "now", "a zero delay is a plain add"
    assert q.waiting() == 2
    assert await asyncio.wait_for(q.get(), DEADLINE) == "soon"
    assert await asyncio.wait_for(q.get(), DEADLINE) == "slow"
    assert limiter.when_calls == ["slow", "now", "soon"]
    assert metric("workqueue_retries_total", name) == 3


async def test_rate_limited_queue_forget_and_num_requeues() -> None:
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.001, 0.01)
    q: RateLimitingQueue[str] = RateLimitingQueue(limiter)
    for expected in (1, 2, 3):
        q.add_rate_limited("x")
        assert q.num_requeues("x") == expected
    assert await asyncio.wait_for(q.get(), DEADLINE) == "x"
    q.forget("x")
    assert q.num_requeues("x") == 0
    q.done("x")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(failures=st.integers(0, 6))
async def test_rate_limited_delay_follows_exponential_limiter(failures: int) -> None:
    """After n failures the next requeue waits base * 2**n (checked against the loop's clock)."""
    base = 0.0005
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(base, 1.0)
    for _ in range(failures):
        limiter.when("x")
    q: RateLimitingQueue[str] = RateLimitingQueue(limiter)
    loop = asyncio.get_running_loop()
    start = loop.time()
    q.add_rate_limited("x")
    assert q.get_nowait() is None
    assert await asyncio.wait_for(q.get(), DEADLINE) == "x"
    assert loop.time() - start >= base * 2**failures - 0.001
    assert q.num_requeues("x") == failures + 1


# --- metrics ---------------------------------------------------------------------------------------------------


def test_metrics_durations_and_labels() -> None:
    name = unique_name()
    clock = FakeClock(10.0)
    q: WorkQueue[str] = WorkQueue(name, controller="ctl", clock=clock)

    def m(sample: str, **extra: str) -> float | None:
        return sample_value(sample, {"name": name, "controller": "ctl", **extra})

    q.add("x")
    q.add("x")  # deduplicated: not counted
    assert m("workqueue_adds_total") == 1
    assert m("workqueue_depth", priority="") == 1
    clock.now = 12.0
    assert q.get_nowait() == "x"
    assert m("workqueue_depth", priority="") == 0
    assert m("workqueue_queue_duration_seconds_sum") == pytest.approx(2.0)
    clock.now = 15.0
    assert m("workqueue_unfinished_work_seconds") == pytest.approx(3.0)
    assert m("workqueue_longest_running_processor_seconds") == pytest.approx(3.0)
    q.done("x")
    assert m("workqueue_work_duration_seconds_sum") == pytest.approx(3.0)
    assert m("workqueue_unfinished_work_seconds") == 0
    assert m("workqueue_longest_running_processor_seconds") == 0


def test_unnamed_queue_has_no_metrics() -> None:
    q: WorkQueue[str] = WorkQueue()
    q.add("x")
    assert sample_value("workqueue_adds_total", {"name": "", "controller": ""}) is None
