"""How answers leave the dev API server: JSON bodies, stored bytes, server-side tables, errors.

Stored objects keep their encoded bytes, so an object served in its storage version is
written as stored and one served in another version is relabelled; ``Accept: ...;as=Table``
gets kube's server-side table instead. Every error leaves as a kube ``Status`` (or kube's
text/plain 404), and field-validation warnings as ``Warning`` headers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from .codec import encode_json
from .errors import StatusError
from .resources import ResourceType
from .store import FieldChecks, Store
from .tables import to_table
from .watch import Stored

JSON = "application/json"


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(body=encode_json(body), status=status, content_type=JSON)


def raw_response(raw: bytes, status: int = 200) -> web.Response:
    return web.Response(body=raw, status=status, content_type=JSON)


def error_response(exc: StatusError) -> web.Response:
    if exc.plain_text:
        return web.Response(text=exc.message + "\n", status=exc.code, content_type="text/plain")
    response = json_response(exc.to_status(), exc.code)
    retry_after = (exc.details or {}).get("retryAfterSeconds")
    if isinstance(retry_after, int) and retry_after > 0:  # kube's responsewriters.ErrorNegotiated does the same
        response.headers["Retry-After"] = str(retry_after)
    return response


def wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return "as=Table" in accept


def encoder(rtype: ResourceType) -> Callable[[Stored], bytes]:
    """Objects are stored in the storage version; relabel them when served in another."""
    if rtype.version == rtype.storage_version:
        return lambda stored: stored.raw

    def convert(stored: Stored) -> bytes:
        obj = dict(stored.obj)
        obj["apiVersion"] = rtype.api_version
        return encode_json(obj)

    return convert


def as_object(rtype: ResourceType, stored: Stored) -> dict[str, Any]:
    if rtype.version == rtype.storage_version:
        return stored.obj
    return {**stored.obj, "apiVersion": rtype.api_version}


async def respond_object(store: Store, request: web.Request, rtype: ResourceType, stored: Stored,
                         status: int = 200) -> web.Response:
    """One object, answered once its write is durable."""
    await store.wait_durable(stored.rv)
    if wants_table(request):
        meta = {"resourceVersion": str(stored.rv)}
        return json_response(to_table(rtype, [as_object(rtype, stored)], meta), status)
    return raw_response(encoder(rtype)(stored), status)


def warn(response: web.Response, checks: FieldChecks) -> web.Response:
    """Unknown fields under fieldValidation=Warn travel as HTTP ``Warning: 299`` headers, like kube."""
    for text in checks.warnings:
        escaped = text.replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{escaped}"')
    return response
