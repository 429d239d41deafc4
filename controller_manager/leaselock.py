"""The Lease lock: reading, writing and watching one coordination.k8s.io/v1 Lease.

client-go's ``leaderelection/resourcelock`` for the Lease kind: the requests and the record's
wire format. Whether to take, renew or release the Lease is :mod:`.leaderelection`'s business.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

import aiohttp
from kubernetes_asyncio import client

from . import objects
from .apierrors import ApiError
from .resource import RequestTarget

MICROTIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
"""Go's ``metav1.MicroTime`` layout (``2006-01-02T15:04:05.000000Z07:00`` in UTC)."""


def micro_time(moment: datetime | None = None) -> str:
    """Format a moment (default: now) as a Kubernetes MicroTime string, always in UTC."""
    moment = moment or datetime.now(UTC)
    return moment.astimezone(UTC).strftime(MICROTIME_FORMAT)


class Answer(NamedTuple):
    status: int
    body: dict[str, Any] | None
    error: ApiError | None  # set for every non-2xx answer


class LeaseLock:
    """One named Lease in one namespace, through kubernetes_asyncio's CoordinationV1Api."""

    def __init__(self, api_client: client.ApiClient, namespace: str, name: str) -> None:
        self._api = client.CoordinationV1Api(api_client)
        self.namespace = namespace
        self.name = name

    async def call(self, verb: str, timeout: float, body: dict[str, Any] | None = None) -> Answer:
        """One Lease request (``read``, ``create``, else replace): status, parsed JSON object, and the error.

        ``_preload_content=False`` keeps the raw JSON (no naive-datetime models) and leaves
        non-2xx answers to us instead of raising; ``_request_timeout`` is always set because
        kubernetes_asyncio's default is no timeout at all. A non-2xx answer is also parsed into
        the framework's :class:`ApiError`, whose ``is_not_found`` tells an absent object from a
        resource that is not served right now.
        """
        name, namespace = self.name, self.namespace
        kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": max(timeout, 0.001)}
        payload = cast(Any, body)  # the typed API takes plain dicts too: it serializes them as they are
        if verb == "read":
            pending = self._api.read_namespaced_lease(name, namespace, **kwargs)
        elif verb == "create":
            pending = self._api.create_namespaced_lease(namespace, payload, **kwargs)
        else:
            pending = self._api.replace_namespaced_lease(name, namespace, payload, **kwargs)
        response = cast(aiohttp.ClientResponse, await pending)
        async with response:
            raw = await response.read()
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            data = None
        target = RequestTarget("coordination.k8s.io", "leases", namespace, "" if verb == "create" else name)
        error = None if 200 <= response.status < 300 else ApiError.from_body(response.status, raw, target=target)
        return Answer(response.status, data if isinstance(data, dict) else None, error)

    async def watch(self, resource_version: str, seconds: float) -> aiohttp.ClientResponse:
        """A watch on this Lease alone from ``resource_version``, ending after about ``seconds``."""
        return cast(aiohttp.ClientResponse, await self._api.list_namespaced_lease(
            self.namespace, field_selector=f"metadata.name={self.name}", watch=True,
            resource_version=resource_version, timeout_seconds=max(1, math.ceil(seconds)), _preload_content=False,
            _request_timeout=seconds + 1))


def with_spec(lease: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``lease`` (metadata incl. resourceVersion kept) carrying ``spec``.

    Only client-go's record fields are written: coordinated-election fields (``strategy``,
    ``preferredHolder``) are dropped, as a non-coordinated client-go elector does.
    """
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": dict(objects.metadata(lease)), "spec": dict(spec)}


def status_reason(body: dict[str, Any] | None) -> str:
    """The Status reason of an error answer, for logs."""
    return str((body or {}).get("reason") or "")
