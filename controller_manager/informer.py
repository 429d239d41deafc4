"""Reflector and shared informers: list + watch into a cache, and notify handlers.

Behaves like client-go's: LIST (paginated), then WATCH from the list's resourceVersion with
bookmarks; a watch that simply ends is resumed from the last resourceVersion without a
relist; 410 Expired (or any watch failure) relists and replaces the cache, reporting the
right add/update/delete deltas (objects deleted while disconnected arrive as deletes).
Failures back off 800 ms → 30 s. One informer per resource per process, however many
controllers watch it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import structlog

from . import objects
from .apierrors import MAX_RETRY_AFTER_SECONDS, ApiError
from .cache import Delta, Indexer, IndexFunc, share_item_strings, share_strings
from .client import KubeClient, object_json
from .mutationcache import DEFAULT_TTL, MutationCache
from .objects import MutableObj
from .resource import Resource

Transform = Callable[[dict[str, Any]], dict[str, Any]]
"""What an informer applies to each object before caching it (:attr:`SharedInformer.transform`)."""


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop ``metadata.managedFields`` (controller-runtime's ``TransformStripManagedFields``; Karmada's member
    informers do the same): the server-side-apply bookkeeping is often the larger part of an object, and
    nothing that reads a cache needs it."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj

log = structlog.get_logger(__name__)

BACKOFF_INITIAL = 0.8
BACKOFF_MAX = 30.0
BACKOFF_RESET_AFTER = 120.0
LIST_PAGE_SIZE = 500
WATCH_TIMEOUT_MIN = 300  # client-go: random in [5 min, 10 min]


class EventHandler(Protocol):
    """What an informer calls, synchronously and in watch order. Handlers must not block."""

    def on_add(self, obj: MutableObj, initial: bool) -> None: ...

    def on_update(self, old: MutableObj, new: MutableObj) -> None: ...

    def on_delete(self, obj: MutableObj) -> None: ...


@dataclass
class FuncHandler:
    """An EventHandler from plain functions (any of them may be omitted)."""

    add: Callable[[MutableObj, bool], None] | None = None
    update: Callable[[MutableObj, MutableObj], None] | None = None
    delete: Callable[[MutableObj], None] | None = None

    def on_add(self, obj: MutableObj, initial: bool) -> None:
        if self.add:
            self.add(obj, initial)

    def on_update(self, old: MutableObj, new: MutableObj) -> None:
        if self.update:
            self.update(old, new)

    def on_delete(self, obj: MutableObj) -> None:
        if self.delete:
            self.delete(obj)


class Backoff:
    """Exponential backoff with jitter, reset after a quiet period (client-go's reflector backoff)."""

    def __init__(self, initial: float = BACKOFF_INITIAL, maximum: float = BACKOFF_MAX,
                 reset_after: float = BACKOFF_RESET_AFTER, clock: Callable[[], float] = time.monotonic) -> None:
        self._initial, self._max, self._reset_after, self._clock = initial, maximum, reset_after, clock
        self._current = 0.0
        self._last = 0.0

    def next(self) -> float:
        now = self._clock()
        if self._current == 0.0 or now - self._last > self._reset_after:
            self._current = self._initial
        else:
            self._current = min(self._current * 2, self._max)
        self._last = now
        return self._current * (1 + random.random())  # jitter 1.0, like client-go


class SharedInformer:
    """A cache of one resource (optionally one namespace) kept current by a reflector."""

    def __init__(self, client: KubeClient, resource: Resource, *, namespace: str = "",
                 indexers: Mapping[str, IndexFunc] | None = None, label_selector: str = "", field_selector: str = "",
                 page_size: int = LIST_PAGE_SIZE, watch_timeout: int = WATCH_TIMEOUT_MIN,
                 compact: bool = False, transform: Transform | None = None) -> None:
        self.client = client
        self.transform = transform
        """Applied to each object before it is cached (client-go's ``TransformFunc``), e.g. to drop fields no
        reader needs; it may change the object it is given and returns what the cache keeps."""
        self.resource = resource
        self.namespace = namespace
        self.store = Indexer(indexers, compact=compact)
        self.label_selector = label_selector
        self.field_selector = field_selector
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()
        self._page_size = page_size
        self._watch_timeout = watch_timeout
        self.last_sync_resource_version = ""
        self.last_error: str = ""
        self.started = False
        self.lists = 0  # how many times the reflector listed (1 + relists)

    @property
    def name(self) -> str:
        return f"{self.resource.key}[{self.field_selector}]" if self.field_selector else self.resource.key

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_for_sync(self) -> None:
        await self._synced.wait()

    def add_event_handler(self, handler: EventHandler) -> None:
        """Register a handler; one added after the initial list gets an add for every cached object."""
        self._handlers.append(handler)
        if self._synced.is_set():
            for obj in self.store.list():
                self._call(handler.on_add, obj, True)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        self.store.add_indexers(indexers)

    def mutation_cache(self, *, ttl: float = DEFAULT_TTL) -> MutationCache:
        """This informer's cache as read by a controller that writes what it reads: it sees its own writes.

        One per controller (its reconciler calls ``mutated`` with each write's answer); this informer's
        events forget the writes it has caught up with. See :mod:`controller_manager.mutationcache`.
        """
        cache = MutationCache(self.store, ttl=ttl)
        self.add_event_handler(cache)
        return cache

    def ensure_indexer(self, name: str, func: IndexFunc) -> None:
        """Add the index ``name`` unless a controller sharing this informer already did."""
        if not self.store.has_index(name):
            self.store.add_indexers({name: func})

    # ----------------------------------------------------------------- reflector

    async def run(self) -> None:
        """List and watch until cancelled."""
        self.started = True
        backoff = Backoff()
        while True:
            pause = 0.0  # what a throttled or starting server asked for (Retry-After)
            try:
                await self._list()
                self.last_error = ""
                await self._watch_until_failure()
            except asyncio.CancelledError:
                raise
            except ApiError as exc:
                pause = self._failed(exc, f"{exc.status} {exc.reason}: {exc.message}")
            except (aiohttp.ClientError, TimeoutError, ConnectionError, OSError) as exc:
                pause = self._failed(exc, f"{type(exc).__name__}: {exc}")
            except Exception as exc:  # a garbled watch line, a failing index function: never die silently
                log.exception("informer error, relisting after backoff", resource=self.resource.key)
                pause = self._failed(exc, f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(max(backoff.next(), pause))

    def _failed(self, exc: BaseException, text: str) -> float:
        """Record a failed LIST or WATCH; the pause its server asked for, if any. The store is left as it
        is: only a complete LIST replaces it."""
        if isinstance(exc, ApiError) and exc.is_not_served and not self.has_synced():
            text = (f"the server could not find the requested resource {self.resource.key} "
                    f"({self.resource.api_version}); is its CustomResourceDefinition installed?")
        if text != self.last_error:
            log.warning("list/watch failed", resource=self.resource.key, error=text)
        self.last_error = text
        retry_after = exc.retry_after if isinstance(exc, ApiError) else None
        return min(retry_after, MAX_RETRY_AFTER_SECONDS) if retry_after is not None else 0.0

    async def _list(self) -> None:
        # Each item as the store keeps it, packed page by page: a compact store never holds the whole list
        # as dicts (see Indexer.replace_packed).
        items: list[Any] = []
        token = ""
        list_rv = ""
        while True:
            page = await self.client.list(self.resource, self.namespace, label_selector=self.label_selector,
                                          field_selector=self.field_selector,
                                          limit=self._page_size, continue_token=token)
            if not list_rv:
                list_rv = objects.resource_version(page)
            page_items = page.get("items") or []
            if self.transform is not None:
                page_items = [self.transform(item) for item in page_items]
            if not self.store.compact:
                for item in page_items:
                    share_item_strings(item)
            items.extend(self.store.pack(item) for item in page_items)
            token = objects.metadata(page).get("continue") or ""
            del page, page_items  # free this page's dicts before the next one is read
            if not token:
                break
            await asyncio.sleep(0)  # let other tasks run between pages
        self.lists += 1
        initial = not self._synced.is_set()
        for delta in self.store.replace_packed(items):
            self._dispatch([delta], initial=initial)
        self.last_sync_resource_version = list_rv
        self._synced.set()

    async def _watch_until_failure(self) -> None:
        """Re-watch from the last resourceVersion each time a watch simply ends; return on failure."""
        while True:
            started = time.monotonic()
            events = 0
            timeout = random.randint(self._watch_timeout, 2 * self._watch_timeout)
            try:
                async for event, line in self.client.watch_events(
                        self.resource, self.namespace, resource_version=self.last_sync_resource_version,
                        timeout_seconds=timeout, label_selector=self.label_selector,
                        field_selector=self.field_selector):
                    events += 1
                    self._handle(event, line)
            except ApiError as exc:
                if exc.is_gone:
                    log.info("watch expired, relisting", resource=self.resource.key, reason=exc.message)
                    # Until the relist completes the cache may lack what happened since: say so, so that
                    # readers that must not act on stale data (the estimator) wait for the relist.
                    self.last_error = f"watch expired, relisting: {exc.message}"
                    return  # relist after the usual short backoff, as client-go does
                raise
            if events == 0 and time.monotonic() - started < 1.0:
                raise ConnectionError("very short watch: ended in under a second with no events")

    def _handle(self, event: dict[str, Any], line: bytes | None = None) -> None:
        etype = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            return
        rv = objects.resource_version(obj)
        if etype == "BOOKMARK":
            if rv:
                self.last_sync_resource_version = rv
            return
        if etype in ("ADDED", "MODIFIED"):
            if self.transform is not None:
                obj, line = self.transform(obj), None  # the cache keeps the transformed object, not the line
            try:
                if self.store.compact:
                    delta = self.store.upsert(obj, json_text=object_json(line, event) if line else None)
                else:
                    delta = self.store.upsert(share_strings(obj))
            except Exception:  # an index function failed: skip this version, keep watching
                log.exception("object left out of the cache: an index function failed on it",
                              resource=self.resource.key, rv=rv)
            else:
                self._dispatch([delta])
        elif etype == "DELETED" and self.store.delete(obj) is not None:
            self._dispatch([Delta("deleted", obj)])
        if rv:
            self.last_sync_resource_version = rv

    # ----------------------------------------------------------------- handlers

    def _dispatch(self, deltas: list[Delta], *, initial: bool = False) -> None:
        for delta in deltas:
            for handler in self._handlers:
                if delta.type == "added":
                    self._call(handler.on_add, delta.obj, initial)
                elif delta.type == "updated":
                    assert delta.old is not None
                    self._call(handler.on_update, delta.old, delta.obj)
                else:
                    self._call(handler.on_delete, delta.obj)

    def _call(self, func: Callable[..., None], *args: Any) -> None:
        try:
            func(*args)
        except Exception:
            log.exception("event handler failed", resource=self.resource.key)


class SyncTimeout(Exception):
    """Caches did not sync in time; the message names each kind and why."""


class InformerFactory:
    """One shared informer per (resource, namespace) in the process, started and synced together."""

    def __init__(self, client: KubeClient, *, watch_timeout: int = WATCH_TIMEOUT_MIN, compact: bool = True) -> None:
        # compact (the default): the lean store, deflated JSON (see Indexer); False for caches read whole and often
        self.client = client
        self.compact = compact
        self._informers: dict[tuple[Resource, str, str], SharedInformer] = {}
        self._tasks: dict[tuple[Resource, str, str], asyncio.Task[None]] = {}
        self._watch_timeout = watch_timeout

    def informer(self, resource: Resource, namespace: str = "", *, compact: bool | None = None,
                 field_selector: str = "") -> SharedInformer:
        """The shared informer; ``compact`` (decided by whoever asks first, default the factory's) keeps
        objects packed (deflated JSON); ``field_selector``: only the objects it selects (one informer each)."""
        key = (resource, namespace, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            informer = SharedInformer(self.client, resource, namespace=namespace, watch_timeout=self._watch_timeout,
                                      compact=self.compact if compact is None else compact,
                                      field_selector=field_selector)
            self._informers[key] = informer
        return informer

    def informers(self) -> list[SharedInformer]:
        return list(self._informers.values())

    def start(self) -> None:
        """Start every informer not yet running (safe to call again after adding informers)."""
        for key, informer in self._informers.items():
            if key not in self._tasks:
                self._tasks[key] = asyncio.create_task(informer.run(), name=f"informer {informer.name}")

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    async def wait_for_sync(self, informers: list[SharedInformer] | None = None, *, timeout: float) -> None:
        """Wait until the given (default: all) informers synced; SyncTimeout naming the others."""
        pending = [i for i in (informers if informers is not None else self.informers()) if not i.has_synced()]
        if not pending:
            return
        # asyncio.wait, not gather: a cancelled wait must not leave a gathering future whose
        # CancelledError nobody retrieves (logged as a traceback at shutdown).
        waits = [asyncio.ensure_future(i.wait_for_sync()) for i in pending]
        try:
            await asyncio.wait(waits, timeout=None if timeout == float("inf") else timeout)
        finally:
            for wait in waits:
                wait.cancel()
        missing = [i for i in pending if not i.has_synced()]
        if missing:
            reasons = "; ".join(f"{i.name}: {i.last_error or 'no answer yet'}" for i in missing)
            raise SyncTimeout(f"timed out after {timeout:g}s waiting for caches to sync: {reasons}")
