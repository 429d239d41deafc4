"""A JSON client for any Kubernetes resource, over kubernetes_asyncio's ApiClient.

Objects stay plain parsed JSON (dicts): no model conversion on the hot path, and custom
resources look like built-ins. Requests go through kubernetes_asyncio (its auth, TLS and
proxy handling) with a client-side QPS/burst limiter, a timeout on every call, the
``rest_client_requests_total`` metric, and errors typed by the API ``Status`` reason
(:mod:`.apierrors`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp
import structlog
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from yarl import URL

from . import objects
from .apierrors import MAX_RETRY_AFTER_RETRIES, MAX_RETRY_AFTER_SECONDS, ApiError
from .metrics import REST_CLIENT_REQUESTS
from .ratelimiter import TokenBucket
from .resource import RequestTarget, Resource

log = structlog.get_logger(__name__)

DEFAULT_TIMEOUT = 32.0  # kubectl's default request timeout; every call has one
WATCH_READ_TIMEOUT = 150.0  # a watch silent this long is ended and resumed from its resourceVersion
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
_BODY_ENCODER = json.JSONEncoder(separators=(",", ":"))  # what json.dumps(separators=...) builds on every call
_PLAIN_PATH = re.compile(r"[A-Za-z0-9/._:~-]*")  # needs no percent-encoding: the URL can be built without parsing


def _object_path(resource: Resource, obj: dict[str, Any], subresource: str = "") -> str:
    """The path of ``obj`` itself (or of its ``subresource``): where a PUT of it goes."""
    return resource.path(objects.namespace(obj), objects.metadata(obj)["name"], subresource)


class KubeClient:
    """Get/list/watch/create/update/patch/delete of JSON objects, rate-limited and measured."""

    def __init__(self, api_client: k8s.ApiClient, *, qps: float = 40.0, burst: int = 60,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.api_client = api_client
        self._limiter = TokenBucket(qps, burst)
        self._timeout = timeout
        self._client_timeout = aiohttp.ClientTimeout(total=timeout)
        host = urlsplit(api_client.configuration.host)
        self._host = host.netloc or api_client.configuration.host
        self._env_checked_for = ""  # the server URL whose netrc/proxy environment was last checked
        self._session_trusts_env: bool | None = None  # as kubernetes_asyncio created the session
        self._counters: dict[tuple[str, str], Any] = {}
        self._unserved: set[str] = set()  # resources answered by a 404 that names no object, until served again
        self._base_for = ""  # the host string _base was parsed from
        self._base = URL()

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
        """One request on kubernetes_asyncio's session (its TLS) with its proxy settings and auth headers.

        This is what ``ApiClient.call_api`` and ``RESTClientObject.request`` do for a JSON body, without
        their per-call work: model serialization (the body is already plain JSON, and walking it again
        cost about a tenth of a busy controller's CPU), a new ``ClientTimeout``, a regex on the content
        type. The body is sent as compact JSON bytes.
        """
        await self._limiter.wait()
        api = self.api_client
        if api.configuration.host != self._env_checked_for:
            await self._skip_needless_env_lookups()
        params = [(k, v) for k, v in (query or {}).items() if v not in (None, "")]
        headers = {**api.default_headers, "Content-Type": content_type, "Accept": "application/json"}
        await api.update_params_for_auth(headers, params, ["BearerToken"])  # refreshes an expiring token
        rest = api.rest_client
        url = self._url(path, params)
        # what RESTClientObject.request passes on from the configuration, when set
        settings = (("proxy", rest.proxy), ("proxy_headers", rest.proxy_headers),
                    ("server_hostname", rest.server_hostname))
        options: dict[str, Any] = {key: value for key, value in settings if value}
        if body is not None:
            options["data"] = _BODY_ENCODER.encode(body).encode()
        if timeout is None:
            timeout = self._client_timeout
        elif not isinstance(timeout, aiohttp.ClientTimeout):
            timeout = aiohttp.ClientTimeout(total=timeout)
        try:
            response: aiohttp.ClientResponse = await rest.pool_manager.request(
                method, url, headers=headers, timeout=timeout, **options)
        except (aiohttp.ClientError, TimeoutError):
            self._count("<error>", method)
            raise
        self._count(str(response.status), method)
        return response

    def _url(self, path: str, params: list[tuple[str, Any]]) -> str | URL:
        """The request URL. A plain path (the usual one) is joined to the parsed server URL as it is: parsing
        a new URL string costs yarl ~6 us per request, about 5% of a busy controller's CPU."""
        host = self.host
        if params or not _PLAIN_PATH.fullmatch(path):
            return host + path + ("?" + urlencode(params) if params else "")
        if host != self._base_for:
            self._base, self._base_for = URL(host), host
        base = self._base
        return base.with_path(base.raw_path.rstrip("/") + path, encoded=True)

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
                      content_type: str = "application/json", decode: bool = True) -> Any:
        """One request; the parsed JSON answer (None without ``decode``: a caller that only needs the 2xx), or
        ApiError.

        A 429 or 5xx that asks for a pause (``Retry-After``, or ``retryAfterSeconds`` in its Status: a
        throttled or starting server) is sent again after that pause, up to 10 times, as client-go
        does. Every other error is the caller's to handle. A 5xx does not say the server did not act: a
        500 ``ServerTimeout`` (etcd timed out) carries ``Retry-After: 2`` and its write may have been stored. A
        write sent again after one and answered 409 (a conditional update that meets its own earlier write, a
        create that meets its own object) raises that earlier 5xx instead: the 409 is this client's own doing,
        and the caller must learn that the result is unknown (:func:`may_have_landed`), not that it conflicted.
        So does a resent write that is refused otherwise (``404 page not found`` from a restarting server, a
        403) or whose answer is lost: only a NotFound that names the object ends it as gone.
        """
        unknown: ApiError | None = None  # a 5xx answer to an earlier attempt of this write
        for attempt in range(MAX_RETRY_AFTER_RETRIES + 1):
            try:
                response = await self._send(method, path, query=query, body=body, content_type=content_type)
                async with response:
                    raw = await response.read()
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                if unknown is None:
                    raise
                raise unknown from exc  # the earlier attempt may have been stored: the result is unknown
            if 200 <= response.status < 300:
                if self._unserved:
                    self._served_again(path)
                return json.loads(raw) if raw and decode else None
            error = ApiError.from_body(response.status, raw, target=RequestTarget.from_path(path),
                                       retry_after_header=response.headers.get("Retry-After"))
            if error.is_not_served:
                self._report_not_served(error)
            pause = error.retry_after if attempt < MAX_RETRY_AFTER_RETRIES else None
            if unknown is not None and error.status == 409:
                unknown.resent_into_conflict = error.is_conflict
                error, pause = unknown, None
            elif unknown is not None and pause is None and error.status < 500 and not error.is_not_found:
                # A resent write refused (404 page not found, 403, ...) says nothing of the attempt the 5xx
                # answered, which may have been stored. Only an object gone is final whatever happened before.
                log.info("resent write refused, the first attempt's result unknown", method=method, path=path,
                         status=error.status, reason=error.reason)
                error = unknown
            elif method != "GET" and error.status >= 500:
                unknown = error
            if pause is None:
                try:
                    raise error
                finally:
                    # This frame held the error, whose traceback holds this frame: a reference cycle
                    # that kept every failed response (a 404 GET, a 409 PUT) until a cyclic collection,
                    # hundreds at a time under the large-heap GC policy (docs/benchmarks.md, Memory).
                    del error, unknown
            log.info("server asked to retry later", method=method, path=path, status=error.status,
                     reason=error.reason, retry_after=pause, attempt=attempt + 1)
            await asyncio.sleep(min(pause, MAX_RETRY_AFTER_SECONDS))
        raise AssertionError("unreachable")

    def _report_not_served(self, error: ApiError) -> None:
        """Warn once per resource while it is not served (a 404 that names no object), not per request."""
        name = error.target.key if error.target is not None else "<unknown>"
        if name in self._unserved:
            return
        self._unserved.add(name)
        log.warning("resource not served by the API server (its CRD missing, or the server still starting)",
                    resource=name, server=self._host, answer=error.message[:200])

    def _served_again(self, path: str) -> None:
        target = RequestTarget.from_path(path)
        if target is not None and target.key in self._unserved:
            self._unserved.discard(target.key)
            log.info("resource served again", resource=target.key, server=self._host)

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
        ns = namespace or objects.namespace(obj)
        result: dict[str, Any] = await self.request("POST", resource.path(ns), body=obj)
        return result

    async def update(self, resource: Resource, obj: dict[str, Any], *, subresource: str = "") -> dict[str, Any]:
        """PUT; the object's resourceVersion makes it conditional (409 Conflict when stale)."""
        result: dict[str, Any] = await self.request("PUT", _object_path(resource, obj, subresource), body=obj)
        return result

    async def update_status(self, resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.update(resource, obj, subresource="status")

    async def update_unread(self, resource: Resource, obj: dict[str, Any], *, subresource: str = "") -> None:
        """:meth:`update` for a caller that does not read the answer: the stored object is not decoded (a
        controller writing thousands of bindings spent a few percent of its CPU decoding answers it dropped)."""
        await self.request("PUT", _object_path(resource, obj, subresource), body=obj, decode=False)

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
        async for event, _ in self.watch_events(resource, namespace, resource_version=resource_version,
                                                timeout_seconds=timeout_seconds, allow_bookmarks=allow_bookmarks,
                                                label_selector=label_selector, field_selector=field_selector):
            yield event

    async def watch_events(self, resource: Resource, namespace: str = "", *, resource_version: str = "",
                           timeout_seconds: int = 300, allow_bookmarks: bool = True, label_selector: str = "",
                           field_selector: str = "") -> AsyncIterator[tuple[dict[str, Any], bytes]]:
        """:meth:`watch`, each event with the line it was read from: a compact cache keeps the object's JSON
        as the server sent it (:func:`object_json`) instead of encoding the parsed object again."""
        query = {"watch": "true", "resourceVersion": resource_version, "timeoutSeconds": str(timeout_seconds),
                 "allowWatchBookmarks": "true" if allow_bookmarks else "", "labelSelector": label_selector,
                 "fieldSelector": field_selector}
        deadline = aiohttp.ClientTimeout(total=timeout_seconds + 30, sock_connect=self._timeout,
                                         sock_read=WATCH_READ_TIMEOUT)
        response = await self._send("GET", resource.path(namespace), query=query, timeout=deadline)
        async with response:
            if response.status != 200:
                error = ApiError.from_body(response.status, await response.read(),
                                           target=RequestTarget.from_path(resource.path(namespace)),
                                           retry_after_header=response.headers.get("Retry-After"))
                if error.is_not_served:
                    self._report_not_served(error)
                try:
                    raise error
                finally:
                    del error  # no frame → error → traceback → frame cycle (see request)
            if self._unserved:
                self._served_again(resource.path(namespace))
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
                                   str(status.get("message") or ""), status,
                                   target=RequestTarget.from_path(resource.path(namespace)))
                yield event, line


def object_json(line: bytes, event: dict[str, Any]) -> bytes | None:
    """The object's JSON text in a watch event's line, if the line is exactly ``{"type":T,"object":O}``.

    kube-apiserver writes a WatchEvent as just that, compact, type first. Anything else (another member,
    other spacing or order) gives None, and the caller encodes the parsed object instead.
    """
    if len(event) != 2 or not isinstance(event.get("object"), dict):
        return None
    prefix = b'{"type":' + _BODY_ENCODER.encode(event.get("type")).encode() + b',"object":'
    end = len(line.rstrip())
    if not line.startswith(prefix) or end <= len(prefix) or line[end - 1:end] != b"}":
        return None
    return line[len(prefix):end - 1]


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
