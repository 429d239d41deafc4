"""A JSON client for any Kubernetes resource, over kubernetes_asyncio's ApiClient.

Objects stay plain parsed JSON (dicts): no model conversion on the hot path, and custom
resources look like built-ins. Requests go through kubernetes_asyncio (its auth, TLS and
proxy handling) with a client-side QPS/burst limiter, a timeout on every call, the
``rest_client_requests_total`` metric, and errors typed by the API ``Status`` reason.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from yarl import URL

from .metrics import REST_CLIENT_REQUESTS
from .ratelimiter import TokenBucket

T = TypeVar("T")

DEFAULT_TIMEOUT = 32.0  # kubectl's default request timeout; every call has one
WATCH_READ_TIMEOUT = 150.0  # a watch silent this long is ended and resumed from its resourceVersion
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"


@dataclass(frozen=True, slots=True)
class Resource:
    """A resource type by its REST coordinates."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """``plural.group`` (``deployments.apps``, ``configmaps``): how kube names a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str = "", name: str = "", subresource: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


class ApiError(Exception):
    """A non-2xx answer, carrying the ``Status`` reason (NotFound, Conflict, AlreadyExists, Invalid...)."""

    def __init__(self, status: int, reason: str, message: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}

    @classmethod
    def from_body(cls, status: int, raw: bytes) -> ApiError:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("kind") == "Status":
            return cls(status, str(body.get("reason") or ""), str(body.get("message") or ""), body)
        text = raw.decode("utf-8", "replace").strip()
        reason = {404: "NotFound", 401: "Unauthorized", 403: "Forbidden", 429: "TooManyRequests"}.get(status, "")
        return cls(status, reason, text[:500])

    @property
    def is_not_found(self) -> bool:
        return self.status == 404

    @property
    def is_conflict(self) -> bool:
        return self.status == 409 and self.reason == "Conflict"

    @property
    def is_already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def is_invalid(self) -> bool:
        return self.status == 422

    @property
    def is_gone(self) -> bool:
        return self.status == 410

    @property
    def is_forbidden(self) -> bool:
        return self.status == 403


def is_not_found(exc: BaseException) -> bool:
    return isinstance(exc, ApiError) and exc.is_not_found


def is_conflict(exc: BaseException) -> bool:
    return isinstance(exc, ApiError) and exc.is_conflict


class KubeClient:
    """Get/list/watch/create/update/patch/delete of JSON objects, rate-limited and measured."""

    def __init__(self, api_client: k8s.ApiClient, *, qps: float = 40.0, burst: int = 60,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.api_client = api_client
        self._limiter = TokenBucket(qps, burst)
        self._timeout = timeout
        host = urlsplit(api_client.configuration.host)
        self._host = host.netloc or api_client.configuration.host
        self._env_checked_for = ""  # the server URL whose netrc/proxy environment was last checked
        self._session_trusts_env: bool | None = None  # as kubernetes_asyncio created the session
        self._counters: dict[tuple[str, str], Any] = {}

    @classmethod
    async def from_kubeconfig(cls, kubeconfig: str | None = None, context: str | None = None, *,
                              qps: float = 40.0, burst: int = 60) -> KubeClient:
        """Load a kubeconfig (or the in-cluster service account when ``kubeconfig`` is empty)."""
        configuration = k8s.Configuration()
        if kubeconfig:
            await k8s_config.load_kube_config(config_file=kubeconfig, context=context,
                                              client_configuration=configuration)
        else:
            try:
                k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            except k8s_config.ConfigException:
                await k8s_config.load_kube_config(context=context, client_configuration=configuration)
        return cls(k8s.ApiClient(configuration), qps=qps, burst=burst)

    async def close(self) -> None:
        await self.api_client.close()

    @property
    def host(self) -> str:
        return str(self.api_client.configuration.host)

    # ------------------------------------------------------------------ raw

    async def _send(self, method: str, path: str, *, query: dict[str, Any] | None = None, body: Any = None,
                    content_type: str = "application/json",
                    timeout: float | aiohttp.ClientTimeout | None = None) -> aiohttp.ClientResponse:
        """One request through kubernetes_asyncio's REST client (its session, TLS, proxy) with its auth headers.

        This is what ``ApiClient.call_api`` does for a JSON body, without its model serialization: the body
        is already plain JSON, and walking it again cost about a tenth of a busy controller's CPU.
        """
        await self._limiter.wait()
        api = self.api_client
        if api.configuration.host != self._env_checked_for:
            await self._skip_needless_env_lookups()
        params = [(k, v) for k, v in (query or {}).items() if v not in (None, "")]
        headers = {**api.default_headers, "Content-Type": content_type, "Accept": "application/json"}
        await api.update_params_for_auth(headers, params, ["BearerToken"])  # refreshes an expiring token
        try:
            response: aiohttp.ClientResponse = await api.rest_client.request(
                method, self.host + path, query_params=dict(params), headers=headers, body=body,
                _preload_content=False, _request_timeout=timeout if timeout is not None else self._timeout)
        except (aiohttp.ClientError, TimeoutError):
            self._count("<error>", method)
            raise
        self._count(str(response.status), method)
        return response

    def _count(self, code: str, method: str) -> None:
        """``rest_client_requests_total``, with the labelled child cached (``labels()`` costs more than ``inc()``)."""
        counter = self._counters.get((code, method))
        if counter is None:
            counter = self._counters[(code, method)] = REST_CLIENT_REQUESTS.labels(code, method, self._host)
        counter.inc()

    async def _skip_needless_env_lookups(self) -> None:
        """Turn off the per-request netrc and proxy look-ups of kubernetes_asyncio's session when they find nothing.

        Its aiohttp session has ``trust_env=True``: before *every* request aiohttp reads ~/.netrc in a
        worker thread and resolves the proxy variables in another (about 40% of a busy controller's CPU).
        The answer only depends on the environment and the server URL, so it is checked once per URL
        (again if the host is changed, e.g. by ``--master``): when neither a netrc entry nor an
        environment proxy applies, the session stops looking; otherwise it keeps aiohttp's handling.
        """
        url = str(self.api_client.configuration.host)
        self._env_checked_for = url
        session = getattr(getattr(self.api_client, "rest_client", None), "pool_manager", None)
        if not isinstance(session, aiohttp.ClientSession) or not hasattr(session, "_trust_env"):
            return
        if self._session_trusts_env is None:
            self._session_trusts_env = session.trust_env
        if self._session_trusts_env:
            try:
                applies = await asyncio.to_thread(_env_applies, url)
            except Exception:  # a URL it cannot parse...: keep aiohttp's handling, let the request report it
                applies = True
            session._trust_env = applies

    async def request(self, method: str, path: str, *, query: dict[str, Any] | None = None, body: Any = None,
                      content_type: str = "application/json") -> Any:
        """One request; the parsed JSON answer, or ApiError."""
        response = await self._send(method, path, query=query, body=body, content_type=content_type)
        async with response:
            raw = await response.read()
            if not 200 <= response.status < 300:
                raise ApiError.from_body(response.status, raw)
        return json.loads(raw) if raw else None

    # ------------------------------------------------------------------ verbs

    async def get(self, resource: Resource, name: str, namespace: str = "") -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", resource.path(namespace, name))
        return result

    async def get_or_none(self, resource: Resource, name: str, namespace: str = "") -> dict[str, Any] | None:
        """GET, with None for NotFound (the object is gone: usually nothing left to do)."""
        try:
            return await self.get(resource, name, namespace)
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise

    async def list(self, resource: Resource, namespace: str = "", *, label_selector: str = "",
                   field_selector: str = "", limit: int = 0, continue_token: str = "",
                   resource_version: str = "") -> dict[str, Any]:
        query = {"labelSelector": label_selector, "fieldSelector": field_selector,
                 "limit": str(limit) if limit else "", "continue": continue_token,
                 "resourceVersion": resource_version}
        result: dict[str, Any] = await self.request("GET", resource.path(namespace), query=query)
        return result

    async def create(self, resource: Resource, obj: dict[str, Any], namespace: str = "") -> dict[str, Any]:
        ns = namespace or obj.get("metadata", {}).get("namespace", "")
        result: dict[str, Any] = await self.request("POST", resource.path(ns), body=obj)
        return result

    async def update(self, resource: Resource, obj: dict[str, Any], *, subresource: str = "") -> dict[str, Any]:
        """PUT; the object's resourceVersion makes it conditional (409 Conflict when stale)."""
        meta = obj["metadata"]
        path = resource.path(meta.get("namespace", ""), meta["name"], subresource)
        result: dict[str, Any] = await self.request("PUT", path, body=obj)
        return result

    async def update_status(self, resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.update(resource, obj, subresource="status")

    async def patch(self, resource: Resource, name: str, patch: Any, *, namespace: str = "",
                    content_type: str = MERGE_PATCH, subresource: str = "") -> dict[str, Any]:
        """PATCH with an explicit content type (merge patch unless told otherwise)."""
        result: dict[str, Any] = await self.request("PATCH", resource.path(namespace, name, subresource),
                                                    body=patch, content_type=content_type)
        return result

    async def patch_status(self, resource: Resource, name: str, patch: Any, *,
                           namespace: str = "") -> dict[str, Any]:
        return await self.patch(resource, name, patch, namespace=namespace, subresource="status")

    async def delete(self, resource: Resource, name: str, namespace: str = "", *, uid: str = "",
                     resource_version: str = "", propagation: str = "") -> Any:
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
        if preconditions:
            body["preconditions"] = preconditions
        if propagation:
            body["propagationPolicy"] = propagation
        return await self.request("DELETE", resource.path(namespace, name), body=body)

    async def watch(self, resource: Resource, namespace: str = "", *, resource_version: str = "",
                    timeout_seconds: int = 300, allow_bookmarks: bool = True, label_selector: str = "",
                    field_selector: str = "") -> AsyncIterator[dict[str, Any]]:
        """Stream watch events as parsed dicts until the server ends the watch.

        A client-side read deadline (the server timeout plus a margin) makes a dead connection
        end the stream instead of hanging it. An ERROR event is raised as ApiError (410 Expired...).
        """
        query = {"watch": "true", "resourceVersion": resource_version, "timeoutSeconds": str(timeout_seconds),
                 "allowWatchBookmarks": "true" if allow_bookmarks else "", "labelSelector": label_selector,
                 "fieldSelector": field_selector}
        deadline = aiohttp.ClientTimeout(total=timeout_seconds + 30, sock_connect=self._timeout,
                                         sock_read=WATCH_READ_TIMEOUT)
        response = await self._send("GET", resource.path(namespace), query=query, timeout=deadline)
        async with response:
            if response.status != 200:
                raise ApiError.from_body(response.status, await response.read())
            while True:
                try:
                    line = await response.content.readline()
                except TimeoutError:
                    return  # nothing for a long while (dead connection or a quiet resource): re-watch
                if not line:
                    return
                if not line.strip():
                    continue
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    raise ApiError(int(status.get("code") or 500), str(status.get("reason") or ""),
                                   str(status.get("message") or ""), status)
                yield event


def _env_applies(url: str) -> bool:
    """Whether aiohttp's ``trust_env`` changes a request to ``url``: a netrc entry for its host, or a proxy
    from the environment (``HTTPS_PROXY``... not bypassed by ``NO_PROXY``). Reads ~/.netrc: call off the loop."""
    try:
        from aiohttp.helpers import basicauth_from_netrc, get_env_proxy_for_url, netrc_from_env  # noqa: PLC0415
    except ImportError:  # an aiohttp without these helpers: keep its own handling
        return True
    parsed = URL(url)
    if parsed.host is None:
        return True  # cannot tell: keep aiohttp's own handling
    try:
        basicauth_from_netrc(netrc_from_env(), parsed.host)
        return True
    except LookupError:
        pass
    try:
        get_env_proxy_for_url(parsed)
    except LookupError:
        return False
    return True


async def retry_on_conflict(operation: Callable[[], Awaitable[T]], *, steps: int = 5,
                            delay: float = 0.01, jitter: float = 0.1) -> T:
    """client-go's RetryOnConflict(DefaultRetry): re-run ``operation`` (which must re-read) on 409 Conflict."""
    for attempt in range(steps):
        try:
            return await operation()
        except ApiError as exc:
            if not exc.is_conflict or attempt == steps - 1:
                raise
        await asyncio.sleep(delay * (1 + jitter * random.random()))
    raise AssertionError("unreachable")
