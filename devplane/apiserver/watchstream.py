"""The watch verb: a chunked HTTP stream of a watcher's events, with bookmarks.

A watch starts at a resourceVersion (or with the current objects as ADDED events, and with
``sendInitialEvents`` an initial-events-end bookmark), then streams what the watch cache
(``watch.py``) delivers until ``timeoutSeconds`` (by default kube's randomized minimum
request timeout). With ``allowWatchBookmarks`` it sends a BOOKMARK every bookmark interval
and one shortly before the timeout, so clients can resume from a recent resourceVersion.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .codec import encode_json
from .errors import StatusError
from .params import check_list_options, int_param, query_selectors, resource_version_param, truthy
from .resources import ResourceType
from .responses import JSON, as_object, encoder, wants_table
from .routing import Target
from .selectors import FieldSelector
from .store import Store
from .tables import to_table
from .watch import Stored, Watcher


async def watch(store: Store, request: web.Request, target: Target, *, bookmark_interval: float,
                min_request_timeout: float) -> web.StreamResponse:
    """Stream the events of the collection, or of one object, until the timeout or a disconnect."""
    rtype = target.rtype
    query = request.query
    timeout_param = int_param(query.get("timeoutSeconds"))
    check_list_options(query, watch=True)
    labels, fields = query_selectors(request, rtype)
    if target.name:
        name_sel = FieldSelector.parse(f"metadata.name={target.name}", rtype.field_selectors,
                                       builtin=rtype.builtin)
        fields = name_sel if fields.empty() else FieldSelector.parse(
            query.get("fieldSelector", "") + f",metadata.name={target.name}", rtype.field_selectors,
            builtin=rtype.builtin)
    from_rv = resource_version_param(query.get("resourceVersion")) or None
    if timeout_param < 0:  # kube's timer has fired already: its stream ends at once, mostly before any event
        response = _stream_response()
        await response.prepare(request)
        await response.write_eof()
        return response
    timeout = float(timeout_param) if timeout_param else \
        min_request_timeout * (1 + random.random())
    bookmarks = truthy(query.get("allowWatchBookmarks"))
    send_initial = truthy(query.get("sendInitialEvents"))
    encode = _watch_encoder(request, rtype)
    key = rtype.storage_key
    start_rv = from_rv if from_rv is not None else store.rv
    watcher = Watcher(namespace=target.namespace, labels=labels, fields=fields, encode=encode,
                      start_rv=start_rv, max_buffer=store.watch_buffer)
    initial = from_rv is None or send_initial
    if initial:
        for stored in store.items(key, target.namespace):
            watcher.push_initial(stored)
        if send_initial:
            watcher.push_raw(_bookmark(rtype, start_rv, initial_end=True))
    await store.wait_durable(min(start_rv, store.rv))  # a future resourceVersion just stays silent
    response = _stream_response()
    try:
        store.attach_watcher(key, watcher, start_rv)
    except StatusError as exc:
        await response.prepare(request)
        await response.write(b'{"type":"ERROR","object":' + encode_json(exc.to_status()) + b"}\n")
        await response.write_eof()
        return response
    try:
        await response.prepare(request)
        await _stream(store, response, watcher, rtype, timeout=timeout, bookmarks=bookmarks,
                      bookmark_interval=bookmark_interval)
    except ConnectionError:
        pass  # the client went away
    finally:
        store.detach_watcher(key, watcher)
    return response


def _stream_response() -> web.StreamResponse:
    """A watch's 200: chunked JSON lines, never cached."""
    response = web.StreamResponse(status=200, headers={"Content-Type": JSON, "Cache-Control": "no-cache, private"})
    response.enable_chunked_encoding()
    return response


def _watch_encoder(request: web.Request, rtype: ResourceType) -> Callable[[Stored], bytes]:
    """How each event's object is written: as served, or as a one-row table."""
    if not wants_table(request):
        return encoder(rtype)

    def table(stored: Stored) -> bytes:
        obj = as_object(rtype, stored)
        return encode_json(to_table(rtype, [obj], {"resourceVersion": str(stored.rv)}))

    return table


def _bookmark(rtype: ResourceType, rv: int, *, initial_end: bool = False) -> bytes:
    """A BOOKMARK event line: only the kind and a resourceVersion (built-in kinds add a null creationTimestamp)."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    if rtype.builtin:
        meta["creationTimestamp"] = None
    obj = {"kind": rtype.kind, "apiVersion": rtype.api_version, "metadata": meta}
    return b'{"type":"BOOKMARK","object":' + encode_json(obj) + b"}\n"


async def _stream(store: Store, response: web.StreamResponse, watcher: Watcher, rtype: ResourceType, *,
                  timeout: float, bookmarks: bool, bookmark_interval: float) -> None:
    """Write the watcher's event lines as they come, and the bookmarks when they are due."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    interval = bookmark_interval
    next_bookmark = loop.time() + interval if bookmarks else float("inf")
    final_bookmark = deadline - 2.0 if bookmarks else float("inf")
    history = store.history(rtype.storage_key)
    while True:
        now = loop.time()
        wake = min(deadline, next_bookmark, final_bookmark)
        lines = await watcher.next_lines(max(wake - now, 0.0))
        if lines:
            await response.write(b"".join(lines))
        elif watcher.closed:
            break
        now = loop.time()
        if now >= deadline:
            break
        if now >= next_bookmark or now >= final_bookmark:
            if now >= final_bookmark:
                final_bookmark = float("inf")
            next_bookmark = now + interval
            if history.latest > watcher.sent_rv:
                watcher.sent_rv = history.latest
                await response.write(_bookmark(rtype, history.latest))
    await response.write_eof()
