"""Watch fan-out: a bounded per-resource event history and the watchers reading from it.

Like kube-apiserver's watch cache: each resource type keeps a window of recent events; a
watch from a resourceVersion older than the window gets ``410 Expired``; a watcher that
cannot keep up is closed (its client re-watches from the last resourceVersion it saw).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller_manager import objects
from kube_api.selectors import LabelSelector

from .codec import encode_json
from .errors import expired
from .selectors import FieldSelector, field_values


@dataclass(frozen=True, slots=True)
class Stored:
    """An object as stored: parsed (read-only by convention), its JSON bytes, its resourceVersion."""

    obj: dict[str, Any]
    raw: bytes
    rv: int

    @property
    def namespace(self) -> str:
        return objects.namespace(self.obj)

    @property
    def name(self) -> str:
        return objects.name(self.obj)


@dataclass(frozen=True, slots=True)
class Event:
    """One write as watchers see it. For DELETED, ``new`` is the last state with the deletion's RV."""

    type: str
    rv: int
    storage_key: str
    new: Stored
    prev: Stored | None


Encoder = Callable[[Stored], bytes]


class Watcher:
    """One watch stream: filters events, buffers encoded lines, remembers the last RV sent."""

    def __init__(self, *, namespace: str, labels: LabelSelector, fields: FieldSelector,
                 encode: Encoder, start_rv: int, max_buffer: int) -> None:
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.encode = encode
        self.last_rv = start_rv  # newest event considered (sent or filtered out)
        self.sent_rv = start_rv  # newest resourceVersion the client has been told about
        self._buffer: deque[bytes] = deque()
        self._ready = asyncio.Event()
        self._max_buffer = max_buffer
        self.closed = False

    def matches(self, stored: Stored) -> bool:
        if self.namespace and stored.namespace != self.namespace:
            return False
        if not self.labels.empty() and not self.labels.matches(objects.labels(stored.obj)):
            return False
        return self.fields.empty() or self.fields.matches(field_values(stored.obj, self.fields.keys))

    def offer(self, event: Event) -> None:
        """Turn a store event into what this watcher should see (selector transitions included)."""
        if self.closed or event.rv <= self.last_rv:
            return
        new_ok = self.matches(event.new)
        if event.type == "MODIFIED":
            old_ok = event.prev is not None and self.matches(event.prev)
            if new_ok and not old_ok:
                self._push("ADDED", self.encode(event.new), event.rv)
            elif new_ok:
                self._push("MODIFIED", self.encode(event.new), event.rv)
            elif old_ok and event.prev is not None:
                self._push("DELETED", self.encode(_with_rv(event.prev, event.rv)), event.rv)
            else:
                self.last_rv = event.rv
        elif new_ok:
            self._push(event.type, self.encode(event.new), event.rv)
        else:
            self.last_rv = event.rv

    def push_initial(self, stored: Stored) -> None:
        """A synthetic ADDED for a watch started at resourceVersion "" or "0"."""
        if self.matches(stored):
            self._push("ADDED", self.encode(stored), None)

    def push_raw(self, line: bytes) -> None:
        self._buffer.append(line)
        self._ready.set()

    def _push(self, etype: str, payload: bytes, rv: int | None) -> None:
        if rv is not None:
            self.last_rv = self.sent_rv = rv
        if len(self._buffer) >= self._max_buffer:
            self.close()  # too slow: kube closes such a watcher; the client re-watches
            return
        self._buffer.append(b'{"type":"' + etype.encode() + b'","object":' + payload + b"}\n")
        self._ready.set()

    def close(self) -> None:
        self.closed = True
        self._ready.set()

    async def next_lines(self, timeout: float | None) -> list[bytes]:
        """Everything buffered so far ([] on timeout or when closed and drained)."""
        if not self._buffer and not self.closed:
            self._ready.clear()
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                return []
        lines = list(self._buffer)
        self._buffer.clear()
        return lines


def _with_rv(stored: Stored, rv: int) -> Stored:
    obj = dict(stored.obj)
    obj["metadata"] = {**stored.obj["metadata"], "resourceVersion": str(rv)}
    return Stored(obj, encode_json(obj), rv)


class History:
    """The bounded event window of one resource type, and its live watchers."""

    def __init__(self, size: int, floor: int) -> None:
        self.events: deque[Event] = deque()
        self.size = size
        self.floor = floor  # every event with rv > floor is in the window
        self.latest = floor  # newest event rv of this resource type
        self.watchers: set[Watcher] = set()

    def append(self, event: Event) -> None:
        self.events.append(event)
        self.latest = event.rv
        while len(self.events) > self.size:
            self.floor = self.events.popleft().rv
        for watcher in list(self.watchers):
            watcher.offer(event)
            if watcher.closed:
                self.watchers.discard(watcher)

    def since(self, rv: int) -> list[Event]:
        """Events after ``rv``; 410 Expired when the window no longer reaches back that far."""
        if rv < self.floor:
            raise expired(f"too old resource version: {rv} ({self.floor})")
        newer: list[Event] = []
        for event in reversed(self.events):
            if event.rv <= rv:
                break
            newer.append(event)
        newer.reverse()
        return newer

    def close_all(self) -> None:
        for watcher in self.watchers:
            watcher.close()
        self.watchers.clear()
