"""An HTTP proxy in front of an API server that misbehaves on purpose, for ``benchmarks/faults.py``.

The components under test get a kubeconfig that points at the proxy (plain HTTP on 127.0.0.1); the
proxy forwards every request to the real server (the dev API server, or any kubeconfig's server with
its TLS and credentials) and streams the answer back, watches included. On command it:

- answers a share of requests with what a loaded or failing kube-apiserver sends (``inject_errors``):
  500 InternalError, 503 with ``Retry-After``, 429 with ``Retry-After``, 504 Timeout, or it forwards
  the request and then drops the connection before the answer (the write happened, the client does
  not know: the case that duplicates work);
- drops every open watch's connection (``cut_watches``), or ends each watch cleanly (``end_watches``) so
  that informers resume from their last resourceVersion, while new watches can be held back
  (``watches_held``);
- loses the answer of one chosen request (``lose_answer``), e.g. a create;
- plays kube-apiserver's restart (``play_restart``): connections refused, then ``503 server is
  starting``, then ``404 page not found`` (text/plain) on custom-resource paths, then normal answers;
  used when the server itself cannot be restarted (a real Karmada given by ``--kubeconfig``).

It only listens on 127.0.0.1 and is stopped by its owner (an async context manager).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import ssl
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

HOP_BY_HOP = frozenset({"host", "connection", "keep-alive", "transfer-encoding", "content-length", "te", "upgrade",
                        "proxy-authorization", "proxy-connection", "accept-encoding", "authorization"})
ERROR_KINDS = ("500", "503", "429", "504", "lost")
RETRY_AFTER = 1  # seconds asked for by the injected 429 and 503
AGGREGATED_GROUPS = ("cluster.karmada.io", "search.karmada.io", "metrics.karmada.io")  # not CRD-served


@dataclass(frozen=True)
class Upstream:
    """Where requests go, with the TLS and credentials of a kubeconfig (none for the dev API server)."""

    url: str
    ssl_context: ssl.SSLContext | bool = True
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    async def from_kubeconfig(cls, path: str, context: str | None = None) -> Upstream:
        configuration = k8s.Configuration()
        await k8s_config.load_kube_config(config_file=path, context=context, client_configuration=configuration)
        headers: dict[str, str] = {}
        token = (configuration.api_key or {}).get("authorization") or (configuration.api_key or {}).get("BearerToken")
        if token:
            headers["Authorization"] = token if " " in token else f"Bearer {token}"
        context_or_flag: ssl.SSLContext | bool = True
        if str(configuration.host).startswith("https"):
            if configuration.verify_ssl:
                ctx = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
            else:
                ctx = ssl.create_default_context()
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            if configuration.cert_file:
                ctx.load_cert_chain(configuration.cert_file, configuration.key_file)
            context_or_flag = ctx
        return cls(str(configuration.host).rstrip("/"), context_or_flag, headers)

    def session(self, *, connections: int = 16, timeout: float = 30.0) -> aiohttp.ClientSession:
        """A session to the real server (for the benchmark's own reads and writes: never faulted)."""
        return aiohttp.ClientSession(self.url, headers=self.headers,
                                     timeout=aiohttp.ClientTimeout(total=timeout),
                                     connector=aiohttp.TCPConnector(limit=connections, ssl=self.ssl_context))


def _status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> web.Response:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": message, "reason": reason, "code": code}
    if details is not None:
        body["details"] = details
    headers = {"Retry-After": str(details["retryAfterSeconds"])} if details and "retryAfterSeconds" in details else {}
    return web.Response(status=code, text=json.dumps(body), content_type="application/json", headers=headers)


def injected_answer(kind: str) -> web.Response:
    """kube-apiserver's own answers for each kind of trouble."""
    if kind == "500":
        return _status(500, "InternalError", "Internal error occurred: injected by the fault proxy",
                       {"causes": [{"message": "injected by the fault proxy"}]})
    if kind == "503":
        return _status(503, "ServiceUnavailable", "the server is currently unable to handle the request",
                       {"retryAfterSeconds": RETRY_AFTER})
    if kind == "429":
        return _status(429, "TooManyRequests", "Too many requests, please try again later.",
                       {"retryAfterSeconds": RETRY_AFTER})
    if kind == "504":
        return _status(504, "Timeout", "Timeout: request did not complete within the allotted timeout", {})
    raise ValueError(kind)


def crd_path(path: str) -> bool:
    """A path under a Karmada group served by CustomResourceDefinitions (what a starting server 404s)."""
    parts = path.split("/")
    return len(parts) > 2 and parts[1] == "apis" and parts[2].endswith("karmada.io") \
        and parts[2] not in AGGREGATED_GROUPS


def verb_of(method: str, path: str, *, watch: bool) -> str:
    """``"LIST pods"``, ``"WATCH pods"``, ``"GET pods"``, ``"PUT replicasets"``...: a request as kube-apiserver's
    ``apiserver_request_total`` counts it (the verb, and the resource of an ``/api`` or ``/apis`` path)."""
    parts = path.strip("/").split("/")
    parts = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else []
    if len(parts) >= 3 and parts[0] == "namespaces":
        parts = parts[2:]  # a namespaced resource (a Namespace itself is parts == ["namespaces", name])
    resource = parts[0] if parts else "-"
    if method != "GET":
        return f"{method} {resource}"
    return f"{'WATCH' if watch else 'GET' if len(parts) >= 2 else 'LIST'} {resource}"


class FaultProxy:
    """The proxy; ``url`` once started. Every fault is off until asked for."""

    def __init__(self, upstream: Upstream, *, seed: int = 1) -> None:
        self.upstream = upstream
        self.url = ""
        self.injected: Counter[str] = Counter()
        self.requests = 0
        self.verbs: Counter[str] = Counter()
        """Requests forwarded or answered, by ``"<VERB> <resource>"`` (:func:`verb_of`): LIST and WATCH told apart."""
        self._random = random.Random(seed)
        self._error_rate = 0.0
        self._errors_until = 0.0
        self._next_kind = 0
        self._starting_until = 0.0
        self._crd_unserved_until = 0.0
        self._watches: dict[asyncio.BaseTransport, aiohttp.ClientResponse] = {}  # the open watches
        self._port = 0
        self._ending: set[asyncio.BaseTransport] = set()  # watches being ended cleanly
        self._watches_open = asyncio.Event()
        self._watches_open.set()
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._session: aiohttp.ClientSession | None = None
        self._lose: list[tuple[str, str, int]] = []  # (method, path part, matches to let through first)

    # ------------------------------------------------------------------ faults

    def lose_answer(self, method: str, path_contains: str, *, after: int = 0) -> None:
        """Forward the next ``method`` request whose path contains ``path_contains`` (after letting ``after``
        of them through) and drop its answer: the server acted on it, the client never hears."""
        self._lose.append((method, path_contains, after))

    def _answer_lost(self, request: web.Request) -> bool:
        for i, (method, part, after) in enumerate(self._lose):
            if request.method == method and part in request.path:
                if after > 0:
                    self._lose[i] = (method, part, after - 1)
                    return False
                del self._lose[i]
                self.injected["lost"] += 1
                return True
        return False

    def inject_errors(self, rate: float, seconds: float) -> None:
        """For ``seconds`` from now, answer ``rate`` of the requests with an error (the kinds in turn)."""
        self._error_rate = rate
        self._errors_until = time.monotonic() + seconds

    def cut_watches(self) -> int:
        """Drop the connection of every open watch, as a dying server does; how many were cut."""
        cut = 0
        for transport in list(self._watches):
            if isinstance(transport, asyncio.Transport):
                transport.abort()
                cut += 1
        self._watches.clear()
        return cut

    def end_watches(self) -> int:
        """End every open watch cleanly, as its ``timeoutSeconds`` would: the client resumes from its last
        resourceVersion instead of relisting. How many were ended."""
        ended = len(self._watches)
        for transport, upstream in list(self._watches.items()):
            self._ending.add(transport)
            upstream.close()
        return ended

    @contextlib.asynccontextmanager
    async def watches_held(self) -> AsyncIterator[None]:
        """While the block runs, a new watch request waits (unanswered) until the block ends."""
        self._watches_open.clear()
        try:
            yield
        finally:
            self._watches_open.set()

    async def play_restart(self, down: float, starting: float, crd_unserved: float) -> None:
        """Refuse connections for ``down`` seconds (every open one dropped), then answer 503 "server is
        starting" for ``starting`` seconds, then text/plain 404 on custom resources for ``crd_unserved``."""
        assert self._site is not None
        await self._site.stop()
        self.cut_watches()
        await asyncio.sleep(down)
        now = time.monotonic()
        self._starting_until = now + starting
        self._crd_unserved_until = now + starting + crd_unserved
        await self._listen()

    # ------------------------------------------------------------------ serving

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        self.verbs[verb_of(request.method, request.path, watch=request.query.get("watch") in ("true", "1"))] += 1
        now = time.monotonic()
        if now < self._crd_unserved_until:
            if now < self._starting_until:
                return _status(503, "ServiceUnavailable", "server is starting", {"retryAfterSeconds": 10})
            if crd_path(request.path):
                return web.Response(status=404, text="404 page not found\n", content_type="text/plain")
        if request.query.get("watch") in ("true", "1") and not self._watches_open.is_set():
            await self._watches_open.wait()
        kind = "lost" if self._lose and self._answer_lost(request) else ""
        if not kind and now < self._errors_until and self._random.random() < self._error_rate:
            kind = ERROR_KINDS[self._next_kind % len(ERROR_KINDS)]
            self._next_kind += 1
            watch = request.query.get("watch") in ("true", "1")
            if kind == "lost" and watch:
                kind = "500"
            self.injected[kind] += 1
            if kind != "lost":
                return injected_answer(kind)
        return await self._forward(request, lose_answer=kind == "lost")

    async def _forward(self, request: web.Request, *, lose_answer: bool) -> web.StreamResponse:
        assert self._session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        body = await request.read()
        watch = request.query.get("watch") in ("true", "1")
        try:
            upstream = await self._session.request(request.method, request.rel_url.path_qs, headers=headers,
                                                   data=body or None, allow_redirects=False)
        except (aiohttp.ClientError, OSError):
            # the server is not there: the client sees its connection dropped, not an answer we made up
            if request.transport is not None:
                request.transport.abort()
            raise web.HTTPServiceUnavailable() from None
        async with upstream:
            if lose_answer:
                await upstream.read()  # the server acted on it; the client never hears
                if request.transport is not None:
                    request.transport.abort()
                raise web.HTTPServiceUnavailable()
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for key, value in upstream.headers.items():
                if key.lower() not in HOP_BY_HOP:
                    response.headers[key] = value
            await response.prepare(request)
            transport = request.transport
            if watch and transport is not None:
                self._watches[transport] = upstream
            try:
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
            except (aiohttp.ClientError, ConnectionError):
                if transport is None or transport not in self._ending:  # not ended on purpose: drop it
                    if request.transport is not None:
                        request.transport.abort()
                    return response
            finally:
                if transport is not None:
                    self._watches.pop(transport, None)
                    self._ending.discard(transport)
            await response.write_eof()
            return response

    async def _listen(self) -> None:
        assert self._runner is not None
        self._site = web.TCPSite(self._runner, "127.0.0.1", self._port, reuse_address=True)
        await self._site.start()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[FaultProxy]:
        """Serve on a free 127.0.0.1 port until the block ends."""
        self._session = aiohttp.ClientSession(
            self.upstream.url, headers=self.upstream.headers, auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=10),
            connector=aiohttp.TCPConnector(limit=0, ssl=self.upstream.ssl_context))
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        try:
            await self._listen()
            self._port = self._runner.addresses[0][1]
            self.url = f"http://127.0.0.1:{self._port}"
            yield self
        finally:
            for upstream in list(self._watches.values()):  # else each handler waits for its watch to end
                upstream.close()
            self.cut_watches()
            await self._runner.cleanup()
            await self._session.close()
