"""Reconcile: what a controller is asked (:class:`Request`) and what it answers (:class:`Result`).

As in controller-runtime's ``reconcile`` package: a reconciler gets a key, not an event, and
returns a :class:`Result` (or None, meaning success); raising retries the key with backoff, a
:class:`TerminalError` is counted and not retried.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from . import objects
from .objects import Obj


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """What to reconcile: an object's namespace and name (namespace "" for cluster-scoped)."""

    namespace: str
    name: str

    @classmethod
    def for_object(cls, obj: Obj) -> Request:
        return cls(objects.namespace(obj), objects.name(obj))

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


def as_result(value: object) -> Result:
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
