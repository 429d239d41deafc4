"""Read-your-writes over an informer cache, as client-go's ``MutationCache``.

A controller that writes an object and reads it again before its informer has delivered that write
starts from the older cached copy: it writes again, triggers again, records an Event twice, or loses
a round trip to a 409. A :class:`MutationCache` remembers the object each of the controller's own
successful writes returned, and its reads hand out the newer of that and the informer's copy.

"Newer" compares resourceVersions as integers, as client-go's integer-resourceVersion cache does (kube's
and the dev API server's are counters); when either does not parse, or the two copies have different
uids (deleted and created again), the informer's copy is trusted. A remembered write is forgotten once
the informer holds that version or a newer one, when the informer deletes the object, when the
controller says it deleted it (:meth:`MutationCache.forget`), or after ``ttl`` seconds: forgetting
too early only costs what the cache-only read cost before (a needless write or a 409).

An object the informer does not hold reads as absent, even if written here (client-go's cache without
``includeAdds``): a deletion the informer has seen wins, and an object created here shows up when the
informer has it.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from . import objects
from .cache import Indexer
from .objects import Obj

DEFAULT_TTL = 60.0
"""Seconds a write is remembered at most: far longer than an informer normally lags (milliseconds)."""

DEFAULT_LIMIT = 10_000
"""Writes remembered at most (the oldest go first): bounds the memory while an informer is disconnected."""

Written = TypeVar("Written", bound=Obj)


def _resource_version(obj: Obj) -> int | None:
    try:
        return int(objects.resource_version(obj))
    except ValueError:
        return None


def is_older(cached: Obj, written: Obj) -> bool:
    """Whether ``cached`` is an older version of the object ``written`` (client-go's newerObject rule)."""
    if objects.uid(cached) != objects.uid(written):
        return False
    cached_version, written_version = _resource_version(cached), _resource_version(written)
    return cached_version is not None and written_version is not None and cached_version < written_version


@dataclass(slots=True)
class _Write:
    obj: Obj
    expires: float


class MutationCache:
    """An informer's store read together with this controller's own writes (see the module docstring).

    Build it with :meth:`SharedInformer.mutation_cache <controller_manager.informer.SharedInformer.mutation_cache>`,
    which also lets the informer's events forget writes it has caught up with; call :meth:`mutated` with
    what each successful write returned. Reads are the :class:`~controller_manager.cache.Indexer`'s
    (``get``, ``by_index``, ``list``), read-only as the cache's are.
    """

    def __init__(self, store: Indexer, *, ttl: float = DEFAULT_TTL, limit: int = DEFAULT_LIMIT,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self._ttl, self._limit, self._clock = ttl, limit, clock
        self._writes: dict[str, _Write] = {}  # oldest first: one ttl for all, so also the order they expire in

    def remembered(self) -> int:
        """How many writes are remembered now: those the informer has not caught up with (nor expired)."""
        return len(self._writes)

    # ----------------------------------------------------------------- writes

    def mutated(self, obj: Written) -> Written:
        """Remember ``obj``, what one of our writes returned (its resourceVersion is the server's); returns it.

        Of two writes of one object whose answers arrive out of order, the newer is kept.
        """
        key = objects.key(obj)
        previous = self._writes.pop(key, None)
        kept: Obj = previous.obj if previous is not None and is_older(obj, previous.obj) else obj
        now = self._clock()
        self._writes[key] = _Write(kept, now + self._ttl)
        self._expire(now)
        return obj

    def forget(self, key: str) -> None:
        """Drop our write of ``key`` (e.g. we deleted the object): reads give the informer's copy again."""
        self._writes.pop(key, None)

    def _expire(self, now: float) -> None:
        writes = self._writes
        while writes:
            key, write = next(iter(writes.items()))
            if write.expires > now and len(writes) <= self._limit:
                return
            del writes[key]

    # ----------------------------------------------------------------- reads

    def get(self, key: str) -> Obj | None:
        """The newer of the informer's copy and our write; None when the informer does not hold the object."""
        cached = self.store.get(key)
        return None if cached is None else self._newer(key, cached)

    def by_index(self, index: str, value: str) -> builtins.list[Obj]:
        """The informer's objects of an index, each replaced by our write when that is newer."""
        return [self._newer(objects.key(obj), obj) for obj in self.store.by_index(index, value)]

    def list(self) -> builtins.list[Obj]:
        return [self._newer(objects.key(obj), obj) for obj in self.store.list()]

    def _newer(self, key: str, cached: Obj) -> Obj:
        write = self._writes.get(key)
        if write is None:
            return cached
        if write.expires > self._clock() and is_older(cached, write.obj):
            return write.obj
        del self._writes[key]
        return cached

    # ----------------------------------------------------------------- informer events (an EventHandler)

    def on_add(self, obj: Obj, initial: bool) -> None:
        self._seen(obj)

    def on_update(self, old: Obj, new: Obj) -> None:
        self._seen(new)

    def on_delete(self, obj: Obj) -> None:
        if self._writes:
            self._writes.pop(objects.key(obj), None)

    def _seen(self, obj: Obj) -> None:
        """The informer has this version: forget our write unless it is still newer."""
        if self._writes:  # the usual case: nothing remembered, nothing to look up
            key = objects.key(obj)
            write = self._writes.get(key)
            if write is not None and not is_older(obj, write.obj):
                del self._writes[key]
