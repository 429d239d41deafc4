"""Controllers: watch a primary kind (plus mapped secondary kinds), reconcile keys with N workers.

As in controller-runtime: events become :class:`~.reconcile.Request` keys in a rate-limited
workqueue (deduplicated, never two workers on one key); ``reconcile`` returns a
:class:`~.reconcile.Result`; an exception is logged, counted and retried with per-item backoff and
never kills a worker; a :class:`~.reconcile.TerminalError` is counted and not retried. The request
and result types live in ``reconcile.py``, the event filters in ``predicate.py``, the mapping of
events to requests in ``handler.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable

import structlog

from . import metrics
from .coalescing import Coalescer
from .handler import Enqueuer, MapFunc, request_for_object
from .informer import SharedInformer
from .predicate import Predicate
from .ratelimiter import RateLimiter, RateLimiterOptions, default_controller_rate_limiter
from .reconcile import ReconcileFunc, Reconciler, Request, TerminalError, as_result
from .workqueue import RateLimitingQueue, ShutDown

log = structlog.get_logger(__name__)


class Controller:
    """A named reconcile loop. Create it, add watches, and let a Manager run it."""

    def __init__(self, name: str, reconcile: Reconciler | ReconcileFunc, *, workers: int = 1,
                 rate_limiter: RateLimiter[Request] | None = None,
                 rate_limiter_options: RateLimiterOptions | None = None, coalesce: float = 0.0) -> None:
        """``coalesce`` > 0: a stream of watch events for one key is reconciled once it has been quiet for that
        many seconds (:mod:`.coalescing`); the first event after a quiet period at once."""
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be at least 1, got {workers}")
        self.name = name
        self._reconcile: ReconcileFunc = reconcile.reconcile if hasattr(reconcile, "reconcile") else reconcile
        self.workers = workers
        limiter = rate_limiter or default_controller_rate_limiter(rate_limiter_options or RateLimiterOptions())
        self.queue: RateLimitingQueue[Request] = RateLimitingQueue(limiter, name=name, controller=name)
        self._coalescer: Coalescer[Request] | None = Coalescer(self.queue, coalesce) if coalesce > 0 else None
        self.informers: list[SharedInformer] = []
        self._stopping = False
        self._metrics = metrics.ControllerMetrics(name, workers)

    def watches(self, informer: SharedInformer, *, map_func: MapFunc | None = None,
                predicates: Iterable[Predicate] = ()) -> Controller:
        """Enqueue on this informer's events: the object itself, or what ``map_func`` maps it to."""
        informer.add_event_handler(Enqueuer(self._coalescer or self.queue, map_func or request_for_object,
                                            list(predicates)))
        return self.wait_for_caches(informer)

    def wait_for_caches(self, *informers: SharedInformer) -> Controller:
        """Start this controller's workers only after these informers' caches have synced.

        For caches the reconciler reads but does not watch (their events enqueue nothing):
        reading them before their first list would see objects as missing. ``watches`` adds
        its informer here itself. Each informer is listed once (controller-runtime waits the
        same way on every source's ``WaitForSync`` before starting the workers).
        """
        for informer in informers:
            if informer not in self.informers:
                self.informers.append(informer)
        return self

    def enqueue(self, request: Request) -> None:
        self.queue.add(request)

    async def run(self) -> None:
        """Run the workers until cancelled; on cancel, stop intake and let running reconciles finish."""
        log.info("starting workers", controller=self.name, workers=self.workers)
        workers = [asyncio.create_task(self._worker(), name=f"{self.name} worker {i}") for i in range(self.workers)]
        try:
            await asyncio.gather(*workers)
        finally:
            self.queue.shut_down()
            if self._coalescer is not None:
                self._coalescer.close()
            for worker in workers:
                if not worker.done():
                    worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            log.info("workers stopped", controller=self.name)

    async def drain(self, timeout: float) -> None:
        """Graceful stop: hand out no more keys (the backlog is dropped, as controller-runtime's priority
        queue does) and wait, bounded, for the reconciles already running."""
        self._stopping = True
        self.queue.shut_down()
        try:
            await asyncio.wait_for(self.queue.shut_down_with_drain(), timeout)
        except TimeoutError:
            log.warning("reconciles still running at shutdown deadline", controller=self.name)

    async def _worker(self) -> None:
        while True:
            try:
                request = await self.queue.get()
            except ShutDown:
                return
            try:
                if self._stopping:
                    continue  # shutting down: leave queued keys to the next leader
                await self._process(request)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug in the bookkeeping below must not kill the worker
                log.exception("worker error", controller=self.name, request=str(request))
            finally:
                self.queue.done(request)

    async def _process(self, request: Request) -> None:
        name, counts = self.name, self._metrics
        counts.active_workers.inc()
        if self._coalescer is not None:
            self._coalescer.started(request)
        started = time.perf_counter()
        try:
            result = as_result(await self._reconcile(request))
            if result.requeue_after > 0:
                self.queue.forget(request)
                self.queue.add_after(request, result.requeue_after)
                counts.reconciles["requeue_after"].inc()
            elif result.requeue:
                self.queue.add_rate_limited(request)
                counts.reconciles["requeue"].inc()
            else:
                self.queue.forget(request)
                counts.reconciles["success"].inc()
        except asyncio.CancelledError:
            raise
        except TerminalError as exc:
            counts.terminal_errors.inc()
            counts.errors.inc()
            counts.reconciles["error"].inc()
            log.error("reconcile failed permanently", controller=name, request=str(request), error=str(exc))
            self.queue.forget(request)
        except Exception as exc:
            counts.errors.inc()
            counts.reconciles["error"].inc()
            log.error("reconcile failed, will retry", controller=name, request=str(request),
                      error=f"{type(exc).__name__}: {exc}", retries=self.queue.num_requeues(request))
            self.queue.add_rate_limited(request)
        finally:
            counts.reconcile_time.observe(time.perf_counter() - started)
            counts.active_workers.dec()
