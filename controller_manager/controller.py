"""Controllers: watch a primary kind (plus mapped secondary kinds), reconcile keys with N workers.

As in controller-runtime: events become :class:`Request` keys in a rate-limited workqueue
(deduplicated, never two workers on one key); ``reconcile`` returns a :class:`Result`; an
exception is logged, counted and retried with per-item backoff and never kills a worker; a
:class:`TerminalError` is counted and not retried.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

import structlog

from . import metrics
from .cache import Obj, object_key, split_key
from .informer import SharedInformer
from .ratelimiter import RateLimiter, RateLimiterOptions, default_controller_rate_limiter
from .workqueue import RateLimitingQueue, ShutDown

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """What to reconcile: an object's namespace and name (namespace "" for cluster-scoped)."""

    namespace: str
    name: str

    @classmethod
    def for_object(cls, obj: Obj) -> Request:
        return cls(*split_key(object_key(obj)))

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class Result:
    """``requeue_after`` > 0: run again after that many seconds; ``requeue``: again with backoff."""

    requeue: bool = False
    requeue_after: float = 0.0

    def __post_init__(self) -> None:
        after: object = self.requeue_after
        if isinstance(after, timedelta):
            object.__setattr__(self, "requeue_after", after.total_seconds())
        elif not isinstance(after, int | float):
            raise TypeError(f"requeue_after must be seconds or a timedelta, got {type(after).__name__}")


def _as_result(value: object) -> Result:
    """What reconcile returned, checked: None means success; anything but a Result is a bug (an error)."""
    if value is None:
        return Result()
    if not isinstance(value, Result):
        raise TypeError(f"reconcile returned {type(value).__name__}, expected Result or None")
    return value


class TerminalError(Exception):
    """An error retrying cannot fix: counted and logged, not requeued."""


class Reconciler(Protocol):
    async def reconcile(self, request: Request) -> Result | None: ...


ReconcileFunc = Callable[[Request], Awaitable[Result | None]]
MapFunc = Callable[[Obj], Iterable[Request]]


# ---------------------------------------------------------------------- predicates


class Predicate:
    """Filters events before they are enqueued; the default lets everything through."""

    def create(self, obj: Obj) -> bool:
        return True

    def update(self, old: Obj, new: Obj) -> bool:
        return True

    def delete(self, obj: Obj) -> bool:
        return True


class GenerationChangedPredicate(Predicate):
    """Updates only when ``metadata.generation`` changed: drops status-only writes."""

    def update(self, old: Obj, new: Obj) -> bool:
        return bool(old.get("metadata", {}).get("generation") != new.get("metadata", {}).get("generation"))


class ResourceVersionChangedPredicate(Predicate):
    def update(self, old: Obj, new: Obj) -> bool:
        return bool(old.get("metadata", {}).get("resourceVersion") != new.get("metadata", {}).get("resourceVersion"))


class LabelChangedPredicate(Predicate):
    def update(self, old: Obj, new: Obj) -> bool:
        return bool(old.get("metadata", {}).get("labels") != new.get("metadata", {}).get("labels"))


class AnnotationChangedPredicate(Predicate):
    def update(self, old: Obj, new: Obj) -> bool:
        return bool(old.get("metadata", {}).get("annotations") != new.get("metadata", {}).get("annotations"))


@dataclass
class FuncPredicate(Predicate):
    """A predicate from functions; an omitted one lets its events through."""

    on_create: Callable[[Obj], bool] | None = None
    on_update: Callable[[Obj, Obj], bool] | None = None
    on_delete: Callable[[Obj], bool] | None = None

    def create(self, obj: Obj) -> bool:
        return self.on_create(obj) if self.on_create else True

    def update(self, old: Obj, new: Obj) -> bool:
        return self.on_update(old, new) if self.on_update else True

    def delete(self, obj: Obj) -> bool:
        return self.on_delete(obj) if self.on_delete else True


@dataclass
class AnyOf(Predicate):
    """Passes when any of the predicates passes (controller-runtime's ``predicate.Or``)."""

    predicates: list[Predicate] = field(default_factory=list)

    def create(self, obj: Obj) -> bool:
        return any(p.create(obj) for p in self.predicates)

    def update(self, old: Obj, new: Obj) -> bool:
        return any(p.update(old, new) for p in self.predicates)

    def delete(self, obj: Obj) -> bool:
        return any(p.delete(obj) for p in self.predicates)


def _self_request(obj: Obj) -> Iterable[Request]:
    return (Request.for_object(obj),)


class _Enqueuer:
    """The informer handler of one watch: predicates, then map to requests, then enqueue."""

    def __init__(self, controller: Controller, map_func: MapFunc, predicates: list[Predicate]) -> None:
        self._controller = controller
        self._map = map_func
        self._predicates = predicates

    def on_add(self, obj: Obj, initial: bool) -> None:
        if all(p.create(obj) for p in self._predicates):
            self._enqueue(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        if all(p.update(old, new) for p in self._predicates):
            self._enqueue(new)
            if self._map is not _self_request:
                self._enqueue(old)  # a mapped owner may have changed: reconcile the old one too

    def on_delete(self, obj: Obj) -> None:
        if all(p.delete(obj) for p in self._predicates):
            self._enqueue(obj)

    def _enqueue(self, obj: Obj) -> None:
        for request in self._map(obj):
            self._controller.queue.add(request)


# ---------------------------------------------------------------------- controller


class Controller:
    """A named reconcile loop. Create it, add watches, and let a Manager run it."""

    def __init__(self, name: str, reconcile: Reconciler | ReconcileFunc, *, workers: int = 1,
                 rate_limiter: RateLimiter[Request] | None = None,
                 rate_limiter_options: RateLimiterOptions | None = None) -> None:
        if workers < 1:
            raise ValueError(f"controller {name}: workers must be at least 1, got {workers}")
        self.name = name
        self._reconcile: ReconcileFunc = reconcile.reconcile if hasattr(reconcile, "reconcile") else reconcile
        self.workers = workers
        limiter = rate_limiter or default_controller_rate_limiter(rate_limiter_options or RateLimiterOptions())
        self.queue: RateLimitingQueue[Request] = RateLimitingQueue(limiter, name=name, controller=name)
        self.informers: list[SharedInformer] = []
        self._stopping = False
        self._metrics = metrics.ControllerMetrics(name, workers)

    def watches(self, informer: SharedInformer, *, map_func: MapFunc | None = None,
                predicates: Iterable[Predicate] = ()) -> Controller:
        """Enqueue on this informer's events: the object itself, or what ``map_func`` maps it to."""
        informer.add_event_handler(_Enqueuer(self, map_func or _self_request, list(predicates)))
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
        started = time.perf_counter()
        try:
            result = _as_result(await self._reconcile(request))
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
