"""The client's rule for "the object does not exist", and its handling of Retry-After.

A restarting kube-apiserver answers ``404 page not found`` (text/plain) for custom resources for a
moment; a controller that read that as "the binding is gone" marked existing workloads Failed for
good. Only a NotFound Status that names the requested object (or its namespace) means "gone".
The KubeClient tests run against a small aiohttp server on 127.0.0.1 that plays the answers.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import structlog
from aiohttp import web
from kubernetes_asyncio import client

from controller_manager.apierrors import ApiError, may_have_landed, retry_on_conflict_unless_gone
from controller_manager.client import KubeClient
from controller_manager.resource import RequestTarget
from karmada_api.resources import RESOURCE_BINDINGS as _RB

RB_PATH = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings/foo-deployment"
RB_COLLECTION = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"


def status(code: int, reason: str, message: str, details: dict[str, Any] | None) -> bytes:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": message, "reason": reason, "code": code}
    if details is not None:
        body["details"] = details
    return json.dumps(body).encode()


def error_for(path: str, code: int, raw: bytes, retry_after: str | None = None) -> ApiError:
    return ApiError.from_body(code, raw, target=RequestTarget.from_path(path), retry_after_header=retry_after)


# ---------------------------------------------------------------------------------- the three 404 shapes

def test_a_status_naming_the_object_is_not_found() -> None:
    raw = status(404, "NotFound", 'resourcebindings.work.karmada.io "foo-deployment" not found',
                 {"name": "foo-deployment", "group": "work.karmada.io", "kind": "resourcebindings"})
    error = error_for(RB_PATH, 404, raw)
    assert error.is_not_found
    assert not error.is_not_served


def test_a_status_without_details_is_not_served() -> None:
    error = error_for(RB_PATH, 404, status(404, "NotFound", "the server could not find the requested resource", None))
    assert not error.is_not_found
    assert error.is_not_served


def test_a_status_with_empty_details_is_not_served() -> None:
    # kube's answer for an unknown resource in the core group: `details {}`
    error = error_for("/api/v1/namespaces/default/widgets/x", 404,
                      status(404, "NotFound", "the server could not find the requested resource", {}))
    assert not error.is_not_found
    assert error.is_not_served


def test_plain_text_404_is_not_served() -> None:
    error = error_for(RB_PATH, 404, b"404 page not found\n")
    assert not error.is_not_found
    assert error.is_not_served
    assert error.message == "404 page not found"


def test_a_status_naming_another_object_is_not_served() -> None:
    raw = status(404, "NotFound", 'resourcebindings.work.karmada.io "other" not found',
                 {"name": "other", "group": "work.karmada.io", "kind": "resourcebindings"})
    assert not error_for(RB_PATH, 404, raw).is_not_found


def test_a_status_naming_another_group_is_not_served() -> None:
    raw = status(404, "NotFound", 'resourcebindings.example.io "foo-deployment" not found',
                 {"name": "foo-deployment", "group": "example.io", "kind": "resourcebindings"})
    assert not error_for(RB_PATH, 404, raw).is_not_found


def test_core_group_objects_have_no_group_in_details() -> None:
    raw = status(404, "NotFound", 'configmaps "x" not found', {"name": "x", "kind": "configmaps"})
    assert error_for("/api/v1/namespaces/default/configmaps/x", 404, raw).is_not_found


def test_a_missing_namespace_on_create_is_not_found() -> None:
    raw = status(404, "NotFound", 'namespaces "missing" not found', {"name": "missing", "kind": "namespaces"})
    assert error_for("/apis/work.karmada.io/v1alpha2/namespaces/missing/resourcebindings", 404, raw).is_not_found
    assert error_for("/api/v1/namespaces/missing", 404, raw).is_not_found
    assert not error_for("/api/v1/namespaces/other/configmaps", 404, raw).is_not_found


def test_subresources_match_the_resource_or_its_subresource_kind() -> None:
    plain = status(404, "NotFound", 'deployments.apps "web" not found',
                   {"name": "web", "group": "apps", "kind": "deployments"})
    scale = status(404, "NotFound", 'deployments.apps "web" not found',
                   {"name": "web", "group": "apps", "kind": "deployments/scale"})
    path = "/apis/apps/v1/namespaces/default/deployments/web/scale"
    assert error_for(path, 404, plain).is_not_found
    assert error_for(path, 404, scale).is_not_found
    assert error_for(RB_PATH + "/status", 404, status(
        404, "NotFound", "x", {"name": "foo-deployment", "group": "work.karmada.io",
                               "kind": "resourcebindings"})).is_not_found


def test_an_error_made_by_hand_counts_only_with_details() -> None:
    assert not ApiError(404, "NotFound", "gone").is_not_found
    assert ApiError(404, "NotFound", "gone", {"details": {"name": "x", "kind": "pods"}}).is_not_found


def test_other_codes_are_never_not_found_or_unserved() -> None:
    error = error_for(RB_PATH, 409, status(409, "Conflict", "changed", {"name": "foo-deployment"}))
    assert not error.is_not_found
    assert not error.is_not_served
    assert error.is_conflict


# ---------------------------------------------------------------------------------- request targets

@pytest.mark.parametrize(("path", "expected"), [
    (RB_PATH, RequestTarget("work.karmada.io", "resourcebindings", "default", "foo-deployment")),
    (RB_PATH + "/status", RequestTarget("work.karmada.io", "resourcebindings", "default", "foo-deployment", "status")),
    (RB_COLLECTION, RequestTarget("work.karmada.io", "resourcebindings", "default")),
    ("/apis/work.karmada.io/v1alpha2/clusterresourcebindings/x",
     RequestTarget("work.karmada.io", "clusterresourcebindings", "", "x")),
    ("/api/v1/namespaces", RequestTarget("", "namespaces")),
    ("/api/v1/namespaces/ns1", RequestTarget("", "namespaces", name="ns1")),
    ("/api/v1/namespaces/ns1/finalize", RequestTarget("", "namespaces", name="ns1", subresource="finalize")),
    ("/api/v1/namespaces/ns1/pods/p?watch=true", RequestTarget("", "pods", "ns1", "p")),
    ("/api/v1/nodes", RequestTarget("", "nodes")),
    ("/apis/work.karmada.io/v1alpha2", None),
    ("/apis", None),
    ("/healthz", None),
])
def test_request_target_reads_paths_as_kube_does(path: str, expected: RequestTarget | None) -> None:
    assert RequestTarget.from_path(path) == expected


# ---------------------------------------------------------------------------------- Retry-After

def test_retry_after_comes_from_the_header_or_the_status() -> None:
    starting = status(503, "ServiceUnavailable", "server is starting", {"retryAfterSeconds": 10})
    assert error_for(RB_PATH, 503, starting).retry_after == 10.0
    assert error_for(RB_PATH, 503, starting, retry_after="3").retry_after == 3.0
    assert error_for(RB_PATH, 429, status(429, "TooManyRequests", "slow down", None), "1").retry_after == 1.0
    assert error_for(RB_PATH, 429, status(429, "TooManyRequests", "slow down", None)).retry_after is None
    assert error_for(RB_PATH, 500, status(500, "InternalError", "boom", None)).retry_after is None
    # only 429 and 5xx ask for a pause, whatever they carry
    assert error_for(RB_PATH, 409, status(409, "Conflict", "x", {"retryAfterSeconds": 5}), "5").retry_after is None


DROP = 0
"""An answer :func:`play` never sends: it closes the connection instead."""


@pytest.fixture
async def play() -> AsyncIterator[Callable[[list[tuple[int, bytes, dict[str, str]]]], Any]]:
    """A server on 127.0.0.1 that gives the answers it is handed (:data:`DROP`: none), in order, then 200 ``{}``;
    yields a function that takes the answers and returns (KubeClient, list of request paths seen)."""
    runners: list[web.AppRunner] = []
    clients: list[KubeClient] = []

    async def start(answers: list[tuple[int, bytes, dict[str, str]]]) -> tuple[KubeClient, list[str]]:
        seen: list[str] = []

        async def handle(request: web.Request) -> web.Response:
            seen.append(request.path)
            if answers:
                code, body, headers = answers.pop(0)
                if code == DROP and request.transport is not None:
                    request.transport.close()  # the answer is lost
                plain = not body.startswith(b"{")
                return web.Response(status=code, body=body, headers=headers,
                                    content_type="text/plain" if plain else "application/json")
            return web.json_response({"kind": "ResourceBinding", "metadata": {"name": "foo-deployment"}})

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        kube = KubeClient(client.ApiClient(client.Configuration(host=f"http://127.0.0.1:{port}")), qps=0)
        clients.append(kube)
        return kube, seen

    yield start
    for kube in clients:
        await kube.close()
    for runner in runners:
        await runner.cleanup()


async def test_503_with_retry_after_is_sent_again(play: Any) -> None:
    starting = status(503, "ServiceUnavailable", "server is starting", {"retryAfterSeconds": 10})
    kube, seen = await play([(503, starting, {"Retry-After": "0"}), (429, status(429, "TooManyRequests", "x", None),
                                                                      {"Retry-After": "0"})])
    obj = await kube.request("GET", RB_PATH)
    assert obj["metadata"]["name"] == "foo-deployment"
    assert seen == [RB_PATH] * 3


SERVER_TIMEOUT = status(500, "ServerTimeout", "The update operation against resourcebindings could not be completed "
                        "at this time, please try again.", {"retryAfterSeconds": 2})
"""What kube-apiserver answers when etcd timed out on a write (``NewServerTimeout``): the write may still commit."""


@pytest.mark.parametrize("second", [(409, "Conflict"), (409, "AlreadyExists")])
async def test_a_write_sent_again_after_a_5xx_that_meets_a_409_is_reported_as_the_5xx(
        play: Any, second: tuple[int, str]) -> None:
    """The 500 asked for a pause, so the write is sent again; the 409 that answers it is the first attempt's own
    write (stored after all), not somebody else's: the caller gets the 500, whose result is unknown."""
    code, reason = second
    kube, seen = await play([(500, SERVER_TIMEOUT, {"Retry-After": "0"}),
                             (code, status(code, reason, "the object has been modified", None), {})])
    with pytest.raises(ApiError) as raised:
        await kube.request("PUT", RB_PATH, body={})
    assert (raised.value.status, raised.value.reason) == (500, "ServerTimeout")
    assert seen == [RB_PATH] * 2


PAGE_NOT_FOUND = (404, b"404 page not found\n", {})
FORBIDDEN = (403, status(403, "Forbidden", "resourcebindings is forbidden", None), {})


@pytest.mark.parametrize("second", [PAGE_NOT_FOUND, FORBIDDEN, (DROP, b"", {})],
                         ids=["404 page not found", "403", "answer lost"])
async def test_a_write_sent_again_after_a_5xx_and_refused_or_lost_is_reported_as_the_5xx(
        play: Any, second: tuple[int, bytes, dict[str, str]]) -> None:
    """Whatever answers the write sent again (a server restarting says ``404 page not found``, RBAC not there yet
    a 403, or no answer at all) says nothing of the first attempt, which the 500 left unknown: the caller must not
    take the write for refused (undone), so it gets the 500 (:func:`may_have_landed`). A create: aiohttp itself
    sends an idempotent request again when a reused connection drops."""
    kube, seen = await play([(500, SERVER_TIMEOUT, {"Retry-After": "0"}), second])
    with pytest.raises(ApiError) as raised:
        await kube.request("POST", RB_PATH, body={})
    assert (raised.value.status, raised.value.reason) == (500, "ServerTimeout")
    assert may_have_landed(raised.value)
    assert seen == [RB_PATH] * 2


async def test_a_write_sent_again_after_a_5xx_that_finds_the_object_gone_is_not_found(play: Any) -> None:
    """Gone is gone, whatever the first attempt did: a resent update or delete answered by a NotFound that names
    the object ends as not found."""
    gone = status(404, "NotFound", 'resourcebindings.work.karmada.io "foo-deployment" not found',
                  {"name": "foo-deployment", "group": "work.karmada.io", "kind": "resourcebindings"})
    kube, _ = await play([(500, SERVER_TIMEOUT, {"Retry-After": "0"}), (404, gone, {})])
    with pytest.raises(ApiError) as raised:
        await kube.request("DELETE", RB_PATH)
    assert raised.value.is_not_found


async def test_a_409_after_a_429_is_a_conflict(play: Any) -> None:
    """A throttled write was not looked at: the 409 that answers it again is somebody else's write."""
    kube, _ = await play([(429, status(429, "TooManyRequests", "x", None), {"Retry-After": "0"}),
                          (409, status(409, "Conflict", "the object has been modified", None), {})])
    with pytest.raises(ApiError) as raised:
        await kube.request("PUT", RB_PATH, body={})
    assert raised.value.is_conflict


async def test_an_error_without_retry_after_is_the_callers(play: Any) -> None:
    kube, seen = await play([(503, status(503, "ServiceUnavailable", "down", None), {})])
    with pytest.raises(ApiError) as raised:
        await kube.request("GET", RB_PATH)
    assert raised.value.status == 503
    assert seen == [RB_PATH]


async def test_get_or_none_raises_for_a_plain_404_and_warns_once(play: Any) -> None:
    kube, _ = await play([(404, b"404 page not found\n", {})] * 3)
    with structlog.testing.capture_logs() as logs:
        for _ in range(3):
            with pytest.raises(ApiError) as raised:
                await kube.get_or_none(_RB, "foo-deployment", "default")
            assert raised.value.is_not_served
        assert await kube.get_or_none(_RB, "foo-deployment", "default") is not None
    warnings = [entry for entry in logs if entry["log_level"] == "warning"]
    assert len(warnings) == 1
    assert warnings[0]["resource"] == "resourcebindings.work.karmada.io"
    assert any(entry["event"] == "resource served again" for entry in logs)


async def test_get_or_none_is_none_for_a_status_naming_the_object(play: Any) -> None:
    raw = status(404, "NotFound", 'resourcebindings.work.karmada.io "foo-deployment" not found',
                 {"name": "foo-deployment", "group": "work.karmada.io", "kind": "resourcebindings"})
    kube, _ = await play([(404, raw, {})])
    assert await kube.get_or_none(_RB, "foo-deployment", "default") is None


async def test_retry_on_conflict_unless_gone_retries_409s_and_ends_quietly_on_a_404() -> None:
    answers: list[Exception | str] = [ApiError(409, "Conflict", "stale"), "written"]

    async def write() -> str:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert await retry_on_conflict_unless_gone(write) == "written"

    async def gone() -> str:
        raise ApiError(404, "NotFound", "gone", {"details": {"name": "x", "kind": "pods"}})

    assert await retry_on_conflict_unless_gone(gone) is None

    async def refused() -> str:
        raise ApiError(403, "Forbidden", "no")

    with pytest.raises(ApiError, match="Forbidden"):
        await retry_on_conflict_unless_gone(refused)
