"""Rate limiters for the workqueue and the API client, after client-go's ``default_rate_limiters.go``.

Delays are in seconds (floats). Every limiter takes an injectable ``clock`` where time
matters, so tests can drive it deterministically. Everything here runs on one event-loop
thread and takes no locks.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "RateLimiterOptions",
    "TokenBucket",
    "default_controller_rate_limiter",
]

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)

Clock = Callable[[], float]


class RateLimiter(Protocol[T_contra]):
    """What the rate-limited workqueue needs: a delay per failure, and a way to forget an item."""

    def when(self, item: T_contra) -> float:
        """Seconds to wait before ``item`` may be processed again (records one more failure)."""
        ...

    def forget(self, item: T_contra) -> None:
        """Stop tracking ``item`` (it succeeded), so its next failure starts from scratch."""
        ...

    def num_requeues(self, item: T_contra) -> int:
        """How many failures are recorded for ``item``."""
        ...


class ItemExponentialFailureRateLimiter(Generic[T]):
    """Per-item backoff ``base * 2**failures``, capped at ``max_delay``: the first call returns ``base``.

    Failure counts keep growing past the cap (as in Go); the float maths can't overflow
    because ``ldexp`` raises instead, which we turn into the cap.
    """

    def __init__(self, base_delay: float, max_delay: float) -> None:
        self._base = base_delay
        self._max = max_delay
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        try:
            backoff = math.ldexp(self._base, exp)
        except OverflowError:
            return self._max
        if math.isinf(backoff) or backoff > self._max:
            return self._max
        return backoff

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)


class TokenBucket:
    """A token bucket like ``golang.org/x/time/rate.Limiter``: refills at ``qps``, holds at most ``burst``.

    Starts full. :meth:`reserve` always takes a token, even one that has not been minted yet, and
    returns how long the caller must wait for it, so back-to-back reservations return growing delays.
    ``qps <= 0`` means unlimited: nothing is ever delayed (client-go's ``--kube-api-qps`` < 0 convention).
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock = time.monotonic) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"burst must be >= 1 when qps > 0, got {burst}")
        self._qps = float(qps)
        self._burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()  # when _tokens was last brought up to date
        self._last_event = self._last  # when the latest reservation may act

    @property
    def qps(self) -> float:
        return self._qps

    @property
    def burst(self) -> int:
        return self._burst

    @property
    def unlimited(self) -> bool:
        return self._qps <= 0

    def _advance(self, now: float) -> float:
        """Tokens at ``now``; a clock that went backwards refills nothing (as in Go)."""
        last = min(self._last, now)
        return min(float(self._burst), self._tokens + (now - last) * self._qps)

    def reserve(self) -> float:
        """Take one token; return the delay (seconds) before it may be used."""
        return self._reserve()[0]

    def _reserve(self) -> tuple[float, float]:
        """Take one token; return (delay, time to act)."""
        if self._qps <= 0:
            return 0.0, 0.0
        now = self._clock()
        tokens = self._advance(now) - 1.0
        delay = -tokens / self._qps if tokens < 0 else 0.0
        self._last = now
        self._tokens = tokens
        self._last_event = now + delay
        return delay, now + delay

    def _cancel(self, time_to_act: float) -> None:
        """Give back a reservation that won't be used, minus what later reservations already built on it.

        Mirrors ``Reservation.CancelAt``: only the part not yet overtaken by later reservations returns.
        """
        now = self._clock()
        if time_to_act < now:
            return  # already acted on
        restore = 1.0 - (self._last_event - time_to_act) * self._qps
        if restore <= 0:
            return
        tokens = min(float(self._burst), self._advance(now) + restore)
        self._last = now
        self._tokens = tokens
        if time_to_act == self._last_event:
            prev_event = time_to_act - 1.0 / self._qps
            if prev_event >= now:
                self._last_event = prev_event

    async def wait(self) -> None:
        """Wait for a token. Doesn't suspend when one is available; a cancelled wait returns its token."""
        delay, time_to_act = self._reserve()
        if delay <= 0:
            return
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            self._cancel(time_to_act)
            raise


class BucketRateLimiter:
    """One token bucket shared by all items (client-go's ``TypedBucketRateLimiter``): an overall rate cap.

    It has no per-item state, so ``forget`` does nothing and ``num_requeues`` is always 0.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock = time.monotonic) -> None:
        self._bucket = TokenBucket(qps, burst, clock=clock)

    def when(self, item: Hashable) -> float:
        return self._bucket.reserve()

    def forget(self, item: Hashable) -> None:
        return None

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """Combines limiters: the longest delay wins, ``forget`` reaches all, ``num_requeues`` is the max.

    Every limiter's ``when`` is called, so each one records the failure (the bucket spends a token).
    """

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, item: T) -> float:
        return max(limiter.when(item) for limiter in self._limiters)

    def forget(self, item: T) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


@dataclass(frozen=True)
class RateLimiterOptions:
    """The default controller limiter's parameters, settable; seconds, qps, tokens."""

    base_delay: float = 0.005
    max_delay: float = 1000.0
    qps: float = 10.0
    bucket_size: int = 100

    def normalized(self) -> RateLimiterOptions:
        """Zero or negative (or NaN) values fall back to the defaults."""
        d = RateLimiterOptions()
        return RateLimiterOptions(
            base_delay=self.base_delay if self.base_delay > 0 else d.base_delay,
            max_delay=self.max_delay if self.max_delay > 0 else d.max_delay,
            qps=self.qps if self.qps > 0 else d.qps,
            bucket_size=self.bucket_size if self.bucket_size > 0 else d.bucket_size,
        )


def default_controller_rate_limiter(
    options: RateLimiterOptions = RateLimiterOptions(), *, clock: Clock = time.monotonic
) -> MaxOfRateLimiter[T]:
    """client-go's default controller limiter: max of per-item exponential backoff and one overall token bucket."""
    opts = options.normalized()
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter[T](opts.base_delay, opts.max_delay),
        BucketRateLimiter(opts.qps, opts.bucket_size, clock=clock),
    )
