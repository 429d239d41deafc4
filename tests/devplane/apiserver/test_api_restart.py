"""What the server answers just after a restart, as kube-apiserver v1.20 does (issue 15).

Observed on kube after SIGKILL and restart: a moment of 503 "server is starting" (with ``Retry-After``),
then a moment of text/plain ``404 page not found`` on custom-resource paths while built-in resources
already answer, then normal answers. The windows are off by default; a restart on a data directory
with ``starting_window``/``crd_unserved_window`` set, or ``ApiServer.simulate_restart``, turns them on.
Windows are generous and phases are awaited with deadlines, so slow machines do not flake.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from devplane.apiserver.server import ApiServer
from devplane.cli import apiserver_config, build_parser
from tests.conftest import eventually

GROUP_VERSION = "/apis/work.karmada.io/v1alpha2"
RBS = f"{GROUP_VERSION}/namespaces/default/resourcebindings"
RB = f"{RBS}/web"
STARTING = (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"server is starting",'
            b'"reason":"ServiceUnavailable","details":{"retryAfterSeconds":10},"code":503}')
PAGE_NOT_FOUND = b"404 page not found\n"
WINDOW = 1.5  # seconds of each window: far longer than the few requests made inside it
BUILTIN_PATHS = ("/api/v1/namespaces/default", "/apis/apps/v1/namespaces/default/deployments",
                 "/apis/cluster.karmada.io/v1alpha1/clusters",
                 "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
CRD_PATHS = (RB, RBS, f"{GROUP_VERSION}/resourcebindings", GROUP_VERSION, "/apis/work.karmada.io",
             "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies")


def binding() -> dict[str, Any]:
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                  "namespace": "default"}, "replicas": 2}}


async def answer(http: aiohttp.ClientSession, path: str, method: str = "GET",
                 **params: str) -> tuple[int, str, str | None, bytes]:
    """(status, content type, Retry-After, body) of one request."""
    async with http.request(method, path, params=params) as resp:
        return resp.status, resp.content_type, resp.headers.get("Retry-After"), await resp.read()


async def create_binding(url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession(base_url=url) as http, http.post(RBS, json=binding()) as resp:
        assert resp.status == 201, await resp.text()
        created: dict[str, Any] = await resp.json()
        return created


async def assert_starting(http: aiohttp.ClientSession) -> None:
    """The 503 window: kube's exact Status and Retry-After everywhere but the health probes."""
    for path in (RB, RBS, GROUP_VERSION, "/api/v1/namespaces/default", "/version", "/api", "/apis", "/openapi/v3"):
        assert await answer(http, path) == (503, "application/json", "10", STARTING), path
    assert await answer(http, RBS, watch="true") == (503, "application/json", "10", STARTING)
    assert await answer(http, RB, "PUT") == (503, "application/json", "10", STARTING)
    for probe in ("/livez", "/healthz"):
        assert await answer(http, probe) == (200, "text/plain", None, b"ok"), probe
    status, ctype, _, body = await answer(http, "/readyz")
    assert (status, ctype) == (500, "text/plain")
    assert body.startswith(b"[+]ping ok\n") and body.endswith(b"\nreadyz check failed\n")
    assert b"failed: reason withheld\n" in body


async def in_crd_window(http: aiohttp.ClientSession) -> bool:
    status, ctype, _, body = await answer(http, RB)
    assert status in (503, 404), (status, body)  # nothing else may come between the two windows
    return (status, ctype, body) == (404, "text/plain", PAGE_NOT_FOUND)


async def assert_crds_unserved(http: aiohttp.ClientSession) -> None:
    """The 404 window: Go's plain 404 on every CRD-served path; built-in resources answer."""
    for path in CRD_PATHS:
        assert await answer(http, path) == (404, "text/plain", None, PAGE_NOT_FOUND), path
    for path in BUILTIN_PATHS:
        status, _, _, body = await answer(http, path)
        assert status == 200, (path, body)
    assert (await answer(http, "/readyz"))[0] == 200


async def serving(http: aiohttp.ClientSession) -> bool:
    status, _, _, body = await answer(http, RB)
    assert status in (404, 200), (status, body)
    return status == 200


async def ride_out_restart(http: aiohttp.ClientSession, created: dict[str, Any]) -> None:
    """503 first, then the CRD 404 window, then normal answers with the data intact."""
    await assert_starting(http)
    await eventually(lambda: in_crd_window(http), timeout=10, interval=0.02)
    await assert_crds_unserved(http)
    await eventually(lambda: serving(http), timeout=10, interval=0.02)
    status, ctype, retry_after, body = await answer(http, RB)
    assert (status, ctype, retry_after) == (200, "application/json", None)
    assert json.loads(body) == created
    listed = json.loads((await answer(http, RBS))[3])
    assert [item["metadata"]["name"] for item in listed["items"]] == ["web"]


@pytest.mark.slow
async def test_a_restart_on_stored_data_answers_503_then_crd_404_then_normally(tmp_path: Path) -> None:
    async with ApiServer(data_dir=tmp_path) as first:
        created = await create_binding(first.url)
    async with ApiServer(data_dir=tmp_path, starting_window=WINDOW, crd_unserved_window=WINDOW) as server, \
            aiohttp.ClientSession(base_url=server.url) as http:
        await ride_out_restart(http, created)
        assert server.api.startup is None  # back to the no-cost path


async def test_the_windows_apply_only_to_a_restart(tmp_path: Path) -> None:
    async with ApiServer(data_dir=tmp_path, starting_window=WINDOW, crd_unserved_window=WINDOW) as server, \
            aiohttp.ClientSession(base_url=server.url) as http:
        assert server.api.startup is None  # an empty data directory: a first start, not a restart
        assert (await answer(http, RBS))[0] == 200


async def test_without_windows_a_restart_answers_normally_at_once(tmp_path: Path) -> None:
    async with ApiServer(data_dir=tmp_path) as first:
        created = await create_binding(first.url)
    async with ApiServer(data_dir=tmp_path) as server, aiohttp.ClientSession(base_url=server.url) as http:
        assert server.api.startup is None
        status, _, _, body = await answer(http, RB)
        assert status == 200 and json.loads(body) == created
        assert (await answer(http, "/readyz"))[:2] == (200, "text/plain")


@pytest.mark.slow
async def test_simulate_restart_reproduces_the_windows_on_a_running_server() -> None:
    async with ApiServer() as server, aiohttp.ClientSession(base_url=server.url) as http:
        created = await create_binding(server.url)
        async with http.get(RBS, params={"watch": "true", "resourceVersion": created["metadata"]["resourceVersion"]},
                            timeout=aiohttp.ClientTimeout(total=10)) as watch:
            server.simulate_restart(starting=WINDOW, crd_unserved=WINDOW)
            # The restart drops open watches; the client's re-watch then meets the 503.
            assert await asyncio.wait_for(watch.content.read(), 5) == b""
        await ride_out_restart(http, created)
        assert server.api.startup is None


async def test_simulate_restart_with_no_windows_ends_open_ones() -> None:
    async with ApiServer() as server, aiohttp.ClientSession(base_url=server.url) as http:
        server.simulate_restart(starting=600, crd_unserved=600)
        assert (await answer(http, "/api"))[0] == 503
        server.simulate_restart(starting=0, crd_unserved=0)
        assert (await answer(http, "/api"))[0] == 200
        with pytest.raises(ValueError):
            server.simulate_restart(starting=-1, crd_unserved=0)


async def test_an_injected_fault_can_ask_for_a_pause_or_lose_the_answer_to_a_stored_write() -> None:
    async with ApiServer() as server, aiohttp.ClientSession(base_url=server.url) as http:
        server.inject_fault("GET", "/namespaces/default", code=429, reason="TooManyRequests", retry_after=3)
        async with http.get("/api/v1/namespaces/default") as response:
            assert (response.status, response.headers.get("Retry-After")) == (429, "3")
            assert (await response.json())["details"] == {"retryAfterSeconds": 3}
        lost = server.inject_fault("POST", "/resourcebindings", code=504, reason="Timeout", after_dispatch=True)
        async with http.post(RBS, json=binding()) as response:
            assert (response.status, (await response.json())["reason"]) == (504, "Timeout")
        assert lost.times == 0
        async with http.get(RB) as response:
            assert response.status == 200  # stored all the same
        async with http.post(RBS, json=binding()) as response:
            assert response.status == 409  # the fault was used up


def test_the_apiserver_command_takes_the_windows_as_go_durations() -> None:
    args = build_parser().parse_args(["apiserver", "--starting-window", "300ms", "--crd-unserved-window", "1m0.5s"])
    config = apiserver_config(args)
    assert (config.starting_window, config.crd_unserved_window) == (0.3, 60.5)
    defaults = apiserver_config(build_parser().parse_args(["apiserver"]))
    assert (defaults.starting_window, defaults.crd_unserved_window) == (0.0, 0.0)
