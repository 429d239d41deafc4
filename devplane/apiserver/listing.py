"""The list verb: pages of a collection at one resourceVersion, and the list body they share.

kube serves a list from its watch cache at the current resourceVersion, waits briefly
for a future one (then 504 "Too large resource version"), and pages with ``limit`` and
``continue`` tokens that pin the first page's resourceVersion (410 once that snapshot is
gone). The body is built from each object's stored bytes, so a large list costs no
re-encoding; deletecollection answers with the same body.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import bisect
import json
import time
from typing import Any

from aiohttp import web

from . import errors
from .codec import encode_json, go_json_syntax_error, go_json_type_name
from .errors import StatusError
from .params import check_list_options, int_param, matches, query_selectors, resource_version_param
from .resources import ResourceType
from .responses import as_object, encoder, json_response, raw_response, wants_table
from .routing import Target
from .store import Store, etcd_key, namespace_slice
from .tables import to_table
from .watch import Stored

TOO_LARGE_RV_WAIT = 3.0


async def list_objects(store: Store, request: web.Request, target: Target) -> web.Response:
    """One page of the collection (all of it without ``limit``) that matches the selectors."""
    rtype = target.rtype
    query = request.query
    limit = int_param(query.get("limit"))
    int_param(query.get("timeoutSeconds"))
    check_list_options(query, watch=False)
    labels, fields = query_selectors(request, rtype)
    token = query.get("continue")
    key = rtype.storage_key
    decoded = _decode_continue(token) if token else None  # storage reads the token before the resourceVersion
    await _wait_for_rv(store, query.get("resourceVersion"))
    if decoded is not None:
        rv, start = decoded
        items = store.snapshot_at(key, rv)
        if items is None:
            fresh = _encode_continue(store.rv, start)
            raise StatusError(410, "Expired",
                              "The provided continue parameter is too old to display a consistent list result. "
                              "You can start a new list without the continue parameter, or use the continue "
                              "token in this response to retrieve the remainder of the results. Continuing "
                              "with the provided token results in an inconsistent list - objects that were "
                              "created, modified, or deleted between the time the first chunk was returned and "
                              "now may show up in the list.", extra={"metadata": {"continue": fresh}})
        if target.namespace:  # items are sorted by "namespace/name": a namespace is one slice
            items = namespace_slice(items, target.namespace, _item_key)
    else:
        rv = store.rv
        start = ""
        items = store.items(key, target.namespace)
    page: list[Stored] = []
    next_start = ""
    remaining = 0
    # Items are in key order, so the ones before ``start`` are a prefix: pages cost O(limit).
    first = bisect.bisect_left(items, start, key=_item_key) if start else 0
    for position in range(first, len(items)):
        stored = items[position]
        if limit and len(page) >= limit:
            next_start = _item_key(page[-1]) + "\x00"
            remaining = len(items) - position
            break
        if matches(stored, labels, fields):
            page.append(stored)
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if next_start:
        meta["continue"] = _encode_continue(rv, next_start)
        if labels.empty() and fields.empty():
            meta["remainingItemCount"] = remaining
        if not token:
            store.snapshot(key, rv, store.items(key))
    elif not rtype.builtin:
        meta["continue"] = ""
    await store.wait_durable(rv)
    return list_response(request, rtype, page, meta)


def list_response(request: web.Request, rtype: ResourceType, items: list[Stored],
                  meta: dict[str, Any]) -> web.Response:
    """A list body (or a table) of ``items``, each written from its stored bytes."""
    if wants_table(request):
        return json_response(to_table(rtype, [as_object(rtype, s) for s in items], meta))
    encode = encoder(rtype)
    head = encode_json({"apiVersion": rtype.api_version, "kind": rtype.list_kind, "metadata": meta})
    body = head[:-1] + b',"items":[' + b",".join(encode(s) for s in items) + b"]}"
    return raw_response(body)


async def _wait_for_rv(store: Store, text: str | None) -> None:
    """A list at a future resourceVersion waits briefly, then 504 (kube's "Too large resource version")."""
    wanted = resource_version_param(text)
    if not wanted or wanted <= store.rv:
        return
    deadline = time.monotonic() + TOO_LARGE_RV_WAIT
    while store.rv < wanted and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    if store.rv < wanted:
        raise StatusError(504, "Timeout", f"Timeout: Too large resource version: {wanted}, current: "
                          f"{store.rv}", {"causes": [{"reason": "ResourceVersionTooLarge",
                                                      "message": "Too large resource version"}],
                                          "retryAfterSeconds": 1})


def _item_key(stored: Stored) -> str:
    return etcd_key(stored.namespace, stored.name)


def _encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    """The snapshot and start key of a continue token; kube's ``continue key is not valid`` errors (observed)."""
    def refused(why: str) -> errors.StatusError:
        return errors.bad_request(f"invalid continue token: continue key is not valid: {why}")

    bad = next((i for i, char in enumerate(token) if not (char.isascii() and (char.isalnum() or char in "-_"))), None)
    try:
        if bad is not None:
            raise ValueError
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):  # Go's RawURLEncoding names the first byte it cannot take
        raise refused(f"illegal base64 data at input byte {len(token) - 1 if bad is None else bad}") from None
    try:
        data = json.loads(raw.decode("utf-8", "surrogateescape"))
    except json.JSONDecodeError as exc:
        raise refused(go_json_syntax_error(exc)) from None
    if not isinstance(data, dict):
        raise refused(f"json: cannot unmarshal {go_json_type_name(data)} into Go value of type etcd3.continueToken")
    if data.get("v") != "meta.k8s.io/v1":
        raise refused(f'server does not recognize this encoded version "{data.get("v", "")}"')
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or isinstance(rv, bool) or rv <= 0:
        raise refused("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    if not isinstance(start, str) or not start:
        raise refused("encoded start key empty (version meta.k8s.io/v1)")
    return rv, start
