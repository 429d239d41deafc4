"""Rate limiters: client-go's formulas, x/time/rate's reservation delays, Karmada's flag defaults."""

from __future__ import annotations

import asyncio
import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller_manager.ratelimiter import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    RateLimiterOptions,
    TokenBucket,
    default_controller_rate_limiter,
)


class FakeClock:
    """Time stands still unless a test moves it."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# --- ItemExponentialFailureRateLimiter -------------------------------------------------------------


def test_exponential_defaults_double_from_base() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    assert [rl.when("a") for _ in range(5)] == [0.005, 0.01, 0.02, 0.04, 0.08]
    assert rl.num_requeues("a") == 5
    assert rl.when("b") == 0.005, "items are tracked separately"


def test_exponential_nineteenth_call_hits_the_cap() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [rl.when("a") for _ in range(19)]
    assert delays[17] == pytest.approx(655.36)  # 5 ms * 2**17
    assert delays[18] == 1000.0
    assert all(d < 1000.0 for d in delays[:18])
    assert rl.when("a") == 1000.0


def test_exponential_forget_resets() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    for _ in range(4):
        rl.when("a")
    rl.forget("a")
    assert rl.num_requeues("a") == 0
    assert rl.when("a") == 0.005
    rl.forget("never-seen")  # no error


def test_exponential_never_overflows() -> None:
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(1.0, 30.0)
    rl._failures["a"] = 10**6  # far past float range
    assert rl.when("a") == 30.0
    rl._failures["a"] = 1030
    assert rl.when("a") == 30.0


@given(
    base=st.floats(min_value=1e-6, max_value=10.0, allow_nan=False),
    cap=st.floats(min_value=1e-6, max_value=1e6, allow_nan=False),
    failures=st.integers(min_value=0, max_value=2000),
)
def test_exponential_matches_formula(base: float, cap: float, failures: int) -> None:
    """delay(n) = min(base * 2**n, max), computed here with exact rationals as the oracle."""
    rl: ItemExponentialFailureRateLimiter[int] = ItemExponentialFailureRateLimiter(base, cap)
    rl._failures[1] = failures
    expected = min(Fraction(base) * 2**failures, Fraction(cap))
    assert rl.when(1) == float(expected)
    assert rl.num_requeues(1) == failures + 1


@given(calls=st.lists(st.sampled_from(["a", "b", "c", "forget-a", "forget-b"]), max_size=60))
def test_exponential_counts_per_item(calls: list[str]) -> None:
    """num_requeues is the number of when() calls since the item's last forget."""
    rl: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(0.001, 60.0)
    model: dict[str, int] = {}
    for call in calls:
        if call.startswith("forget-"):
            item = call.removeprefix("forget-")
            rl.forget(item)
            model.pop(item, None)
        else:
            n = model.get(call, 0)
            assert rl.when(call) == min(0.001 * 2**n, 60.0)
            model[call] = n + 1
    for item in "abc":
        assert rl.num_requeues(item) == model.get(item, 0)


# --- BucketRateLimiter / TokenBucket -------------------------------------------------------------------


def test_bucket_burst_then_growing_steps() -> None:
    clock = FakeClock()
    rl = BucketRateLimiter(10.0, 3, clock=clock)
    assert [rl.when(i) for i in range(3)] == [0.0, 0.0, 0.0]
    assert [rl.when(i) for i in range(3)] == pytest.approx([0.1, 0.2, 0.3])
    rl.forget(1)
    assert rl.num_requeues(1) == 0


def test_bucket_refills_with_time_up_to_burst() -> None:
    clock = FakeClock()
    rl = BucketRateLimiter(10.0, 2, clock=clock)
    rl.when("x")
    rl.when("x")
    assert rl.when("x") == pytest.approx(0.1)  # in debt by one token
    clock.advance(0.35)  # +3.5 tokens -> 2.5, capped at burst 2
    assert rl.when("x") == 0.0
    assert rl.when("x") == 0.0
    assert rl.when("x") == pytest.approx(0.1)


@given(
    qps=st.floats(min_value=0.1, max_value=1000.0),
    burst=st.integers(min_value=1, max_value=200),
    extra=st.integers(min_value=1, max_value=50),
)
def test_bucket_delays_match_formula(qps: float, burst: int, extra: int) -> None:
    """With a frozen clock: the first ``burst`` reservations are free, the k-th one after waits k/qps."""
    rl = BucketRateLimiter(qps, burst, clock=FakeClock())
    for _ in range(burst):
        assert rl.when("i") == 0.0
    for k in range(1, extra + 1):
        assert math.isclose(rl.when("i"), k / qps, rel_tol=1e-9)


def test_token_bucket_unlimited_when_qps_not_positive() -> None:
    for qps in (0.0, -1.0):
        bucket = TokenBucket(qps, 0)
        assert bucket.unlimited
        assert all(bucket.reserve() == 0.0 for _ in range(1000))


def test_token_bucket_rejects_zero_burst() -> None:
    with pytest.raises(ValueError, match="burst"):
        TokenBucket(5.0, 0)


def test_token_bucket_backwards_clock_refills_nothing() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1.0, 1, clock=clock)
    assert bucket.reserve() == 0.0
    clock.advance(-5.0)
    assert bucket.reserve() == pytest.approx(1.0)


async def test_token_bucket_wait_does_not_suspend_with_tokens() -> None:
    bucket = TokenBucket(1.0, 2, clock=FakeClock())
    # Driving the coroutine by hand shows it finishes on the first step.
    coro = bucket.wait()
    with pytest.raises(StopIteration):
        coro.send(None)
    await TokenBucket(0, 0).wait()


async def test_token_bucket_wait_waits_for_the_delay() -> None:
    bucket = TokenBucket(50.0, 1, clock=FakeClock())  # frozen clock: the second token is exactly 20 ms away
    await bucket.wait()
    loop = asyncio.get_running_loop()
    start = loop.time()
    await asyncio.wait_for(bucket.wait(), timeout=5)
    assert loop.time() - start >= 0.019


async def test_token_bucket_cancelled_wait_returns_its_token() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1.0, 1, clock=clock)
    assert bucket.reserve() == 0.0
    task = asyncio.create_task(bucket.wait())  # reserves a token 1 s ahead
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert bucket.reserve() == pytest.approx(1.0), "the cancelled reservation was given back"
    assert bucket.reserve() == pytest.approx(2.0)


# --- MaxOfRateLimiter ---------------------------------------------------------------------------------


class Fixed:
    """A limiter with a fixed delay that records calls."""

    def __init__(self, delay: float, requeues: int = 0) -> None:
        self.delay = delay
        self.requeues = requeues
        self.forgotten: list[str] = []
        self.calls = 0

    def when(self, item: str) -> float:
        self.calls += 1
        return self.delay

    def forget(self, item: str) -> None:
        self.forgotten.append(item)

    def num_requeues(self, item: str) -> int:
        return self.requeues


def test_max_of_takes_max_and_forwards() -> None:
    a, b, c = Fixed(0.5, 3), Fixed(2.0, 1), Fixed(0.1, 7)
    rl: MaxOfRateLimiter[str] = MaxOfRateLimiter(a, b, c)
    assert rl.when("x") == 2.0
    assert (a.calls, b.calls, c.calls) == (1, 1, 1), "every limiter records the failure"
    assert rl.num_requeues("x") == 7
    rl.forget("x")
    assert a.forgotten == b.forgotten == c.forgotten == ["x"]


def test_max_of_needs_a_limiter() -> None:
    with pytest.raises(ValueError):
        MaxOfRateLimiter[str]()


def test_default_controller_rate_limiter_combines_exponential_and_bucket() -> None:
    clock = FakeClock()
    rl: RateLimiter[str] = default_controller_rate_limiter(
        RateLimiterOptions(base_delay=0.005, max_delay=1000.0, qps=10.0, bucket_size=3), clock=clock)
    # Bucket has 3 free tokens: the per-item backoff dominates.
    assert [rl.when("a"), rl.when("a"), rl.when("b")] == [0.005, 0.01, 0.005]
    # Bucket empty: its 0.1 s step beats the 5 ms/10 ms backoff.
    assert rl.when("c") == pytest.approx(0.1)
    assert rl.num_requeues("a") == 2
    rl.forget("a")
    assert rl.num_requeues("a") == 0


# --- RateLimiterOptions ---------------------------------------------------------------------------------


def test_options_defaults_match_karmada_flags() -> None:
    assert RateLimiterOptions() == RateLimiterOptions(base_delay=0.005, max_delay=1000.0, qps=10.0, bucket_size=100)


@given(
    base=st.floats(allow_nan=True, allow_infinity=False),
    cap=st.floats(allow_nan=True, allow_infinity=False),
    qps=st.floats(allow_nan=True, allow_infinity=False),
    bucket=st.integers(min_value=-1000, max_value=1000),
)
def test_options_normalized_falls_back_per_field(base: float, cap: float, qps: float, bucket: int) -> None:
    d = RateLimiterOptions()
    n = RateLimiterOptions(base, cap, qps, bucket).normalized()
    assert n.base_delay == (base if base > 0 else d.base_delay)
    assert n.max_delay == (cap if cap > 0 else d.max_delay)
    assert n.qps == (qps if qps > 0 else d.qps)
    assert n.bucket_size == (bucket if bucket > 0 else d.bucket_size)


def test_default_limiter_normalizes_options() -> None:
    rl: RateLimiter[str] = default_controller_rate_limiter(RateLimiterOptions(0, -1, 0, 0), clock=FakeClock())
    assert rl.when("a") == 0.005
    delays = [rl.when(str(i)) for i in range(100)]
    assert delays[-1] == pytest.approx(0.1), "bucket fell back to 10 qps / 100 burst"
