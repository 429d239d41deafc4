"""Event handlers: turn a watch's informer events into requests on a controller's workqueue.

controller-runtime's ``handler`` package: :func:`request_for_object` is
``EnqueueRequestForObject`` (the object's own key), a :data:`MapFunc` is
``EnqueueRequestsFromMapFunc`` (keys of the primary kind from a secondary object). Objects are
typed as the informer hands them out (:data:`~controller_manager.objects.MutableObj`); handlers
only read them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from .objects import MutableObj
from .predicate import Predicate
from .reconcile import Request

MapFunc = Callable[[MutableObj], Iterable[Request]]


class Adder(Protocol):
    """Where an :class:`Enqueuer` puts requests: a workqueue, or a :class:`~.coalescing.Coalescer` in front of one."""

    def add(self, item: Request) -> None: ...


def request_for_object(obj: MutableObj) -> Iterable[Request]:
    """The object's own key: what a watch without ``map_func`` enqueues."""
    return (Request.for_object(obj),)


class Enqueuer:
    """The informer handler of one watch: predicates, then map to requests, then enqueue."""

    def __init__(self, queue: Adder, map_func: MapFunc, predicates: list[Predicate]) -> None:
        self._queue = queue
        self._map = map_func
        self._predicates = predicates

    def on_add(self, obj: MutableObj, initial: bool) -> None:
        if all(p.create(obj) for p in self._predicates):
            self._enqueue(obj)

    def on_update(self, old: MutableObj, new: MutableObj) -> None:
        if all(p.update(old, new) for p in self._predicates):
            self._enqueue(new)
            if self._map is not request_for_object:
                self._enqueue(old)  # a mapped owner may have changed: reconcile the old one too

    def on_delete(self, obj: MutableObj) -> None:
        if all(p.delete(obj) for p in self._predicates):
            self._enqueue(obj)

    def _enqueue(self, obj: MutableObj) -> None:
        for request in self._map(obj):
            self._queue.add(request)
