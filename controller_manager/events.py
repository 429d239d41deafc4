"""core/v1 Events, recorded the way client-go's ``tools/record`` does.

Recording never blocks a reconcile: events go to a bounded queue (1,000; extra ones are
dropped) and one background task writes them. A repeat of the same event (object, type,
reason, message, source) PATCHes ``count`` and ``lastTimestamp`` of the existing Event, so
``kubectl describe`` shows ``(x20 over 5m)`` instead of twenty lines; 10 events of the same
reason on an object within 10 minutes with different messages are combined into one whose
message starts with "(combined from similar events): ".
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import structlog

from . import objects
from .apierrors import ApiError
from .client import KubeClient
from .objects import Obj
from .rbac import PolicyRule, rule
from .resource import Resource

log = structlog.get_logger(__name__)

EVENTS = Resource("", "v1", "events", "Event", True)
NORMAL = "Normal"
WARNING = "Warning"

QUEUE_SIZE = 1000
CACHE_SIZE = 4096
SIMILAR_LIMIT = 10
SIMILAR_WINDOW = 600.0
COMBINED_PREFIX = "(combined from similar events): "
ATTEMPTS = 12  # client-go's maxTriesPerEvent: an Event outlives an API-server restart
RETRY_DELAY = 1.0  # doubled after each failed attempt, up to RETRY_DELAY_MAX
RETRY_DELAY_MAX = 10.0  # client-go's sleepDuration between tries

RBAC_RULES: tuple[PolicyRule, ...] = (rule("", "events", ("create", "patch")),)
"""What recording needs: POST a new Event, PATCH ``count``/``lastTimestamp`` of a repeat. In any
namespace (an Event lives in its object's namespace, "default" for cluster-scoped objects), so
components grant it cluster-wide. Events are never read back."""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_reference(obj: Obj) -> dict[str, Any]:
    ref = {"kind": obj.get("kind", ""), "namespace": objects.namespace(obj), "name": objects.name(obj),
           "uid": objects.uid(obj), "apiVersion": obj.get("apiVersion", ""),
           "resourceVersion": objects.resource_version(obj)}
    return {k: v for k, v in ref.items() if v}


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    first: str


@dataclass
class _Similar:
    messages: set[str]
    last: float


class EventRecorder:
    """Records events as ``component`` (the Event's ``source.component``)."""

    def __init__(self, client: KubeClient, component: str, *, host: str = "") -> None:
        self._client = client
        self.component = component
        self._host = host
        self._queue: asyncio.Queue[tuple[Obj, str, str, str, str]] = asyncio.Queue(QUEUE_SIZE)
        self._seen: OrderedDict[tuple[str, ...], _Seen] = OrderedDict()
        self._similar: OrderedDict[tuple[str, ...], _Similar] = OrderedDict()
        self.dropped = 0

    def event(self, obj: Obj, event_type: str, reason: str, message: str) -> None:
        """Queue an event about ``obj``; returns at once. Its time is now (client-go's ``makeEvent``), not when a
        busy queue or a retry gets it written: readers compare it with other objects' times."""
        try:
            self._queue.put_nowait((obj, event_type, reason, message, _now()))
        except asyncio.QueueFull:
            self.dropped += 1

    async def run(self) -> None:
        """Write queued events until cancelled (owned by the manager)."""
        while True:
            await self._write(*await self._queue.get())

    async def flush(self, timeout: float = 5.0) -> None:
        """Write what is queued now (used on shutdown and in tests)."""
        deadline = time.monotonic() + timeout
        while not self._queue.empty() and time.monotonic() < deadline:
            try:
                async with asyncio.timeout(deadline - time.monotonic()):
                    await self._write(*self._queue.get_nowait())
            except TimeoutError:
                self.dropped += self._queue.qsize() + 1
                log.warning("events dropped at shutdown", count=self._queue.qsize() + 1)
                return

    async def _write(self, obj: Obj, event_type: str, reason: str, message: str, at: str) -> None:
        ref = object_reference(obj)
        namespace = ref.get("namespace") or "default"
        message = self._aggregate(ref, event_type, reason, message)
        # A combined event is one Event whatever its latest message (client-go's aggregate key).
        identity = COMBINED_PREFIX if message.startswith(COMBINED_PREFIX) else message
        key = (ref.get("uid", ""), ref.get("kind", ""), ref.get("namespace", ""), ref.get("name", ""),
               event_type, reason, identity)
        # One name for every attempt: a create whose answer was lost (a restarting server) and is sent
        # again meets AlreadyExists instead of writing the Event twice (client-go names it once too).
        name = f"{ref.get('name', 'object')}.{time.time_ns():x}"
        for attempt in range(ATTEMPTS):
            try:
                await self._send(key, ref, namespace, name, event_type=event_type, reason=reason, message=message,
                                 at=at)
                return
            except ApiError as exc:
                if exc.status in (400, 403, 422):
                    log.warning("event rejected", reason=reason, error=exc.message)
                    return
                if exc.is_not_found:
                    self._seen.pop(key, None)  # the Event (or its namespace) is gone: create a new one
                # else: 404 not served (a restarting server), 409, 5xx...: retry
            except Exception as exc:  # network: retry a few times, then drop
                log.debug("event write failed", reason=reason, error=str(exc), attempt=attempt)
            if attempt < ATTEMPTS - 1:
                await asyncio.sleep(min(RETRY_DELAY * 2 ** attempt, RETRY_DELAY_MAX))
        log.warning("event dropped after retries", reason=reason, object=ref.get("name"))

    def _aggregate(self, ref: dict[str, Any], event_type: str, reason: str, message: str) -> str:
        """client-go's EventAggregate: the 10th distinct message of one (object, type, reason) within
        600 s of the previous event, and every one after it, becomes a combined event."""
        key = (ref.get("uid", ""), ref.get("kind", ""), ref.get("name", ""), event_type, reason)
        now = time.monotonic()
        similar = self._similar.get(key)
        if similar is None or now - similar.last > SIMILAR_WINDOW:
            similar = _Similar(set(), now)
        similar.messages.add(message)
        similar.last = now
        self._similar[key] = similar
        self._similar.move_to_end(key)
        while len(self._similar) > CACHE_SIZE:
            self._similar.popitem(last=False)
        if len(similar.messages) < SIMILAR_LIMIT:
            return message
        similar.messages.pop()  # keep the set at its bound, as client-go does
        return COMBINED_PREFIX + message

    async def _send(self, key: tuple[str, ...], ref: dict[str, Any], namespace: str, name: str, *,
                    event_type: str, reason: str, message: str, at: str) -> None:
        seen = self._seen.get(key)
        if seen is not None:
            body = {"count": seen.count + 1, "lastTimestamp": at, "message": message}
            await self._client.patch(EVENTS, seen.name, body, namespace=seen.namespace)
            seen.count += 1
            self._seen.move_to_end(key)
            return
        event = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref, "reason": reason, "message": message, "type": event_type,
            "source": {"component": self.component, **({"host": self._host} if self._host else {})},
            "firstTimestamp": at, "lastTimestamp": at, "count": 1,
            "reportingComponent": self.component, "reportingInstance": self._host,
        }
        try:
            await self._client.create(EVENTS, event, namespace)
        except ApiError as exc:
            if not exc.is_already_exists:
                raise
            # an earlier attempt of this very Event was stored, its answer lost: it is written once
        self._seen[key] = _Seen(name, namespace, 1, at)
        while len(self._seen) > CACHE_SIZE:
            self._seen.popitem(last=False)
