"""Shared fixtures: a dev API server on 127.0.0.1 (stopped when the test ends) and clients for it."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import anyio
import pytest
from kubernetes_asyncio import client

from controller_manager.client import KubeClient
from controller_manager.manager import Manager
from devplane.apiserver.server import ApiServer


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    async with ApiServer() as srv:
        yield srv


@pytest.fixture
async def api(server: ApiServer) -> AsyncIterator[client.ApiClient]:
    """A kubernetes_asyncio client pointed at the server (plain HTTP, no credentials)."""
    config = client.Configuration(host=server.url)
    async with client.ApiClient(config) as api_client:
        yield api_client


@pytest.fixture
async def kube(server: ApiServer) -> AsyncIterator[KubeClient]:
    """The framework's client pointed at the server, not rate-limited."""
    kube = KubeClient(client.ApiClient(client.Configuration(host=server.url)), qps=0)
    yield kube
    await kube.close()


@pytest.fixture
async def http(server: ApiServer) -> AsyncIterator[aiohttp.ClientSession]:
    """Raw HTTP, for checks of exact status codes and bodies."""
    async with aiohttp.ClientSession(base_url=server.url) as session:
        yield session


MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}


async def send(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               expect: tuple[int, ...] = (200, 201)) -> dict[str, Any]:
    """One raw request (PATCH as a JSON merge patch); asserts the status is expected, returns the JSON body."""
    async with http.request(method, path, json=body, headers=MERGE_PATCH if method == "PATCH" else None) as r:
        text = await r.text()
        assert r.status in expect, f"{method} {path}: {r.status} {text}"
        result: dict[str, Any] = await r.json() if text else {}
        return result


async def get_or_none(http: aiohttp.ClientSession, path: str) -> dict[str, Any] | None:
    """GET an object; None when it does not exist (404)."""
    async with http.get(path) as r:
        if r.status == 404:
            return None
        assert r.status == 200, await r.text()
        result: dict[str, Any] = await r.json()
        return result


async def events_about(http: aiohttp.ClientSession, obj: dict[str, Any], reason: str) -> list[dict[str, Any]]:
    """The Events of ``reason`` about ``obj`` (by its uid), as ``kubectl describe`` finds them."""
    ns = obj["metadata"].get("namespace") or "default"
    async with http.get(f"/api/v1/namespaces/{ns}/events",
                        params={"fieldSelector": f"involvedObject.uid={obj['metadata']['uid']}"}) as r:
        assert r.status == 200
        items: list[dict[str, Any]] = (await r.json())["items"]
    return [e for e in items if e["reason"] == reason]


async def ensure_namespace(http: aiohttp.ClientSession, name: str) -> None:
    await send(http, "POST", "/api/v1/namespaces", {"metadata": {"name": name}}, expect=(201, 409))


async def cancel_and_wait(task: asyncio.Future[Any]) -> None:
    """Cancel a background task of the test and wait until it has stopped (its own cancellation is not an error)."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def eventually(check: Callable[[], Any], *, timeout: float = 10.0, interval: float = 0.05,
                     what: str = "condition") -> Any:
    """Poll ``check`` (a predicate, or a coroutine function) until it returns something truthy without
    raising AssertionError; fail after ``timeout`` (saying ``what`` was awaited) with the last assertion as the
    cause. The tests' one polling helper: synchronous tests run it with ``asyncio.run``."""
    last: BaseException | None = None
    with anyio.move_on_after(timeout):
        while True:
            try:
                result = check()
                if inspect.isawaitable(result):
                    result = await result
                if result:
                    return result
                last = None
            except AssertionError as exc:
                last = exc
            await anyio.sleep(interval)
    raise AssertionError(f"{what} not met within {timeout}s") from last


@contextlib.asynccontextmanager
async def running(manager: Manager, *, stop_timeout: float = 10.0) -> AsyncIterator[Manager]:
    """``manager.run()`` for the block, entered once its informers have synced; shut down and awaited on exit."""
    task = asyncio.create_task(manager.run())
    try:
        await manager.informers.wait_for_sync(timeout=10)
        yield manager
    finally:
        manager.request_shutdown()
        await asyncio.wait_for(task, stop_timeout)
