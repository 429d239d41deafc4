"""Watch over real HTTP, as kube-apiserver serves it (docs/apiserver.md, "Semantics honoured").

kubernetes_asyncio is the client where a user's view matters; raw aiohttp where the exact
frames matter (ERROR events inside an HTTP 200, bookmark objects, the end of the stream).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from devplane.apiserver.server import ApiServer

WR_PATH = "/apis/apps.karmada.io/v1alpha1/workloadrebalancers"
PP_GV = "/apis/policy.karmada.io/v1alpha1"


# ---------------------------------------------------------------------------- helpers


async def new_namespace(http: aiohttp.ClientSession) -> str:
    name = f"w-{uuid.uuid4().hex[:10]}"
    async with http.post("/api/v1/namespaces", json={"metadata": {"name": name}}) as resp:
        assert resp.status == 201, await resp.text()
    return name


async def create_cm(http: aiohttp.ClientSession, ns: str, name: str, data: dict[str, str] | None = None,
                    labels: dict[str, str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": name}, "data": data or {}}
    if labels:
        body["metadata"]["labels"] = labels
    async with http.post(f"/api/v1/namespaces/{ns}/configmaps", json=body) as resp:
        assert resp.status == 201, await resp.text()
        created: dict[str, Any] = await resp.json()
        return created


async def merge_patch(http: aiohttp.ClientSession, path: str, patch: dict[str, Any]) -> dict[str, Any]:
    async with http.patch(path, data=json.dumps(patch),
                          headers={"Content-Type": "application/merge-patch+json"}) as resp:
        assert resp.status == 200, await resp.text()
        patched: dict[str, Any] = await resp.json()
        return patched


async def delete(http: aiohttp.ClientSession, path: str) -> None:
    async with http.delete(path) as resp:
        assert resp.status == 200, await resp.text()


async def list_rv(http: aiohttp.ClientSession, path: str) -> int:
    async with http.get(path) as resp:
        assert resp.status == 200, await resp.text()
        return int((await resp.json())["metadata"]["resourceVersion"])


def rv_of(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def open_watch(http: aiohttp.ClientSession, path: str, **params: str) -> aiohttp.ClientResponse:
    """Start a raw watch; the server has registered the watcher once the headers are here."""
    resp = await http.get(path, params={"watch": "true", **params})
    assert resp.status == 200, await resp.text()
    return resp


async def next_event(resp: aiohttp.ClientResponse, timeout: float = 5.0) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        line = await resp.content.readline()
    assert line, "the watch ended where an event was expected"
    event: dict[str, Any] = json.loads(line)
    return event


async def read_to_end(resp: aiohttp.ClientResponse, timeout: float) -> list[tuple[float, dict[str, Any]]]:
    """Every event until the server ends the stream, each with its arrival time (monotonic)."""
    events: list[tuple[float, dict[str, Any]]] = []
    async with asyncio.timeout(timeout):
        while line := await resp.content.readline():
            events.append((time.monotonic(), json.loads(line)))
    return events


@pytest.fixture
async def v1(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
async def small_history() -> AsyncIterator[tuple[ApiServer, aiohttp.ClientSession]]:
    async with ApiServer(watch_history=5) as srv, aiohttp.ClientSession(base_url=srv.url) as http:
        yield srv, http


# ---------------------------------------------------------------------------- from a resourceVersion


async def test_watch_from_rv_delivers_exactly_the_later_events_in_order(
        http: aiohttp.ClientSession, v1: client.CoreV1Api) -> None:
    ns = await new_namespace(http)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    a = await create_cm(http, ns, "a", {"k": "1"})
    a2 = await merge_patch(http, f"{path}/a", {"data": {"k": "2"}})
    b = await create_cm(http, ns, "b")
    await delete(http, f"{path}/a")
    assert rv_of(a) < rv_of(a2) < rv_of(b)

    events = []
    async with watch.Watch() as w, asyncio.timeout(10):
        async for event in w.stream(v1.list_namespaced_config_map, ns, resource_version=a["metadata"][
                "resourceVersion"], timeout_seconds=30):
            events.append(event)
            if len(events) == 3:
                break

    assert [(e["type"], e["raw_object"]["metadata"]["name"]) for e in events] == [
        ("MODIFIED", "a"), ("ADDED", "b"), ("DELETED", "a")]
    modified, added, deleted = (e["raw_object"] for e in events)
    assert modified == a2
    assert added == b
    # The deletion has its own, newer resourceVersion and carries the last state of the object.
    assert rv_of(deleted) > rv_of(b)
    assert {**deleted, "metadata": {**deleted["metadata"], "resourceVersion": "x"}} == \
        {**a2, "metadata": {**a2["metadata"], "resourceVersion": "x"}}
    assert await list_rv(http, path) >= rv_of(deleted)
    # The typed view agrees with the raw one.
    assert events[0]["object"].data == {"k": "2"}
    assert w.resource_version == deleted["metadata"]["resourceVersion"]


async def test_watch_from_an_rv_continues_live(http: aiohttp.ClientSession) -> None:
    ns = await new_namespace(http)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    a = await create_cm(http, ns, "a")
    resp = await open_watch(http, path, resourceVersion=a["metadata"]["resourceVersion"])
    async with resp:
        b = await create_cm(http, ns, "b")
        event = await next_event(resp)
        assert event == {"type": "ADDED", "object": b}


async def test_watch_from_list_rv_sees_first_write_of_a_kind(http: aiohttp.ClientSession) -> None:
    """An informer lists (RV n), the first object of the kind is written, then its watch from n starts."""
    path = WR_PATH
    listed = await list_rv(http, path)
    async with http.post(path, json={
            "apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
            "metadata": {"name": "first"},
            "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "x"}]}}) as resp:
        assert resp.status == 201, await resp.text()
        created = await resp.json()
    resp = await open_watch(http, path, resourceVersion=str(listed), timeoutSeconds="10")
    async with resp:
        event = await next_event(resp)
    assert event == {"type": "ADDED", "object": created}


async def test_watch_from_a_future_rv_stays_silent(http: aiohttp.ClientSession) -> None:
    ns = await new_namespace(http)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    future = await list_rv(http, path) + 1000
    resp = await open_watch(http, path, resourceVersion=str(future), timeoutSeconds="1")
    async with resp:
        assert await read_to_end(resp, timeout=5) == []


# ---------------------------------------------------------------------------- RV "0" and unset


@pytest.mark.parametrize("resource_version", ["0", None])
async def test_watch_without_rv_starts_with_current_state(
        http: aiohttp.ClientSession, v1: client.CoreV1Api, resource_version: str | None) -> None:
    ns = await new_namespace(http)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    existing = {o["metadata"]["name"]: o for o in [await create_cm(http, ns, "a"), await create_cm(http, ns, "b")]}
    kwargs: dict[str, Any] = {"timeout_seconds": 30}
    if resource_version is not None:
        kwargs["resource_version"] = resource_version

    async with watch.Watch() as w, asyncio.timeout(10):
        stream = w.stream(v1.list_namespaced_config_map, ns, **kwargs)
        initial = [await anext(stream), await anext(stream)]
        assert sorted((e["type"], e["raw_object"]["metadata"]["name"]) for e in initial) == [
            ("ADDED", "a"), ("ADDED", "b")]
        for e in initial:
            assert e["raw_object"] == existing[e["raw_object"]["metadata"]["name"]]
        # ...then live events only.
        c = await create_cm(http, ns, "c")
        a2 = await merge_patch(http, f"{path}/a", {"data": {"x": "y"}})
        live = [await anext(stream), await anext(stream)]
    assert [(e["type"], e["raw_object"]) for e in live] == [("ADDED", c), ("MODIFIED", a2)]


# ---------------------------------------------------------------------------- selectors


async def test_label_selector_watch_turns_transitions_into_added_and_deleted(http: aiohttp.ClientSession) -> None:
    ns = await new_namespace(http)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    await create_cm(http, ns, "other", labels={"app": "web"})
    resp = await open_watch(http, path, labelSelector="app=web", resourceVersion=str(await list_rv(http, path)))
    async with resp:
        plain = await create_cm(http, ns, "c", {"v": "0"})  # does not match: nothing
        starts = await merge_patch(http, f"{path}/c", {"metadata": {"labels": {"app": "web"}}})
        changes = await merge_patch(http, f"{path}/c", {"data": {"v": "1"}})
        stops = await merge_patch(http, f"{path}/c", {"metadata": {"labels": {"app": "db"}}, "data": {"v": "2"}})
        await merge_patch(http, f"{path}/c", {"data": {"v": "3"}})  # still not matching: nothing
        await delete(http, f"{path}/c")  # not matching: nothing
        again = await create_cm(http, ns, "d", labels={"app": "web"})

        events = [await next_event(resp) for _ in range(4)]
    assert rv_of(plain) < rv_of(starts)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED", "ADDED"]
    assert events[0]["object"] == starts
    assert events[1]["object"] == changes
    # Leaving the selector: DELETED with the last matching state, at the resourceVersion of the write.
    left = events[2]["object"]
    assert left["metadata"]["labels"] == {"app": "web"}
    assert left["data"] == {"v": "1"}
    assert rv_of(left) == rv_of(stops)
    assert events[3]["object"] == again


async def test_field_selector_watch_turns_transitions_into_added_and_deleted(
        http: aiohttp.ClientSession, v1: client.CoreV1Api) -> None:
    async with http.post("/api/v1/nodes", json={"metadata": {"name": f"n-{uuid.uuid4().hex[:8]}"}}) as resp:
        assert resp.status == 201
        node = await resp.json()
    name = node["metadata"]["name"]
    path = f"/api/v1/nodes/{name}"

    events = []
    async with watch.Watch() as w, asyncio.timeout(10):
        stream = w.stream(v1.list_node, field_selector="spec.unschedulable=true",
                          resource_version=node["metadata"]["resourceVersion"], timeout_seconds=30)
        cordoned = await merge_patch(http, path, {"spec": {"unschedulable": True}})
        events.append(await anext(stream))
        uncordoned = await merge_patch(http, path, {"spec": {"unschedulable": None}})
        events.append(await anext(stream))
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]
    assert events[0]["raw_object"] == cordoned
    assert events[1]["raw_object"]["spec"] == {"unschedulable": True}
    assert rv_of(events[1]["raw_object"]) == rv_of(uncordoned)


# ---------------------------------------------------------------------------- timeoutSeconds


@pytest.mark.slow
async def test_timeout_seconds_ends_the_stream_cleanly(http: aiohttp.ClientSession) -> None:
    ns = await new_namespace(http)
    started = time.monotonic()
    resp = await open_watch(http, f"/api/v1/namespaces/{ns}/configmaps", timeoutSeconds="2")
    async with resp:
        events = await read_to_end(resp, timeout=6)
    elapsed = time.monotonic() - started
    assert events == []  # no ERROR event, nothing at all on a quiet namespace
    assert 1.0 <= elapsed < 6


@pytest.mark.slow
async def test_timeout_seconds_ends_the_client_iteration(http: aiohttp.ClientSession, v1: client.CoreV1Api) -> None:
    ns = await new_namespace(http)
    await create_cm(http, ns, "a")
    async with watch.Watch() as w, asyncio.timeout(6):
        types = [e["type"] async for e in w.stream(v1.list_namespaced_config_map, ns, timeout_seconds=2)]
    assert types == ["ADDED"]


async def test_a_negative_timeout_ends_the_stream_at_once_with_nothing_in_it(http: aiohttp.ClientSession) -> None:
    """kube's timer has already fired: 200 and a stream that ends at once. kube 1.20 sent nothing in most of
    the runs observed and the initial ADDED events in some (its select picks at random); the dev server sends
    nothing."""
    ns = await new_namespace(http)
    await create_cm(http, ns, "a")
    resp = await open_watch(http, f"/api/v1/namespaces/{ns}/configmaps", timeoutSeconds="-1")
    async with resp:
        assert await read_to_end(resp, timeout=2) == []


@pytest.mark.parametrize(("value", "watches"), [("yes", True), ("", True), ("00", True), ("TRUE", True),
                                                ("FALSE", False), ("0", False), ("false", False)])
async def test_the_watch_parameter_is_read_as_kube_reads_a_boolean(http: aiohttp.ClientSession, value: str,
                                                                   watches: bool) -> None:
    """Only ``0`` and ``false`` (any case) are false; anything else, an empty value too, asks for a watch."""
    ns = await new_namespace(http)
    await create_cm(http, ns, "a")
    async with http.get(f"/api/v1/namespaces/{ns}/configmaps", params={"watch": value, "timeoutSeconds": "1"}) as resp:
        assert resp.status == 200, await resp.text()
        first = json.loads(await resp.content.readline())
    assert (first.get("type"), first.get("kind")) == (("ADDED", None) if watches else (None, "ConfigMapList"))


# ---------------------------------------------------------------------------- bookmarks


def assert_bookmark_shape(obj: dict[str, Any], kind: str, api_version: str) -> None:
    """Only metadata.resourceVersion (kube adds ``creationTimestamp: null`` on built-ins)."""
    assert obj["kind"] == kind
    assert obj["apiVersion"] == api_version
    assert set(obj) <= {"kind", "apiVersion", "metadata"}
    meta = obj["metadata"]
    assert set(meta) <= {"resourceVersion", "creationTimestamp"}
    assert meta.get("creationTimestamp") is None


@pytest.mark.slow
async def test_bookmark_before_timeout_reports_progress_elsewhere(http: aiohttp.ClientSession) -> None:
    """A namespace-filtered watch with allowWatchBookmarks and timeoutSeconds=4 hears of a write in
    another namespace through one BOOKMARK, about 2 s before the end (built-in and CR alike)."""
    ns, elsewhere = await new_namespace(http), await new_namespace(http)
    cm_watch = await open_watch(http, f"/api/v1/namespaces/{ns}/configmaps", allowWatchBookmarks="true",
                                timeoutSeconds="4")
    pp_watch = await open_watch(http, f"{PP_GV}/namespaces/{ns}/propagationpolicies",
                                allowWatchBookmarks="true", timeoutSeconds="4")
    async with cm_watch, pp_watch:
        reading = [asyncio.create_task(read_to_end(r, timeout=10)) for r in (cm_watch, pp_watch)]
        await create_cm(http, elsewhere, "noise")
        newest_cm = await create_cm(http, elsewhere, "newest")
        async with http.post(f"{PP_GV}/namespaces/{elsewhere}/propagationpolicies", json={
                "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                "metadata": {"name": "pp"},
                "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}}) as resp:
            assert resp.status == 201, await resp.text()
            newest_pp = await resp.json()
        cm_events, pp_events = await asyncio.gather(*reading)
        ended = time.monotonic()

    for events, newest, kind, api_version in (
            (cm_events, newest_cm, "ConfigMap", "v1"),
            (pp_events, newest_pp, "PropagationPolicy", "policy.karmada.io/v1alpha1")):
        assert [e["type"] for _, e in events] == ["BOOKMARK"], events
        arrived, bookmark = events[0]
        assert_bookmark_shape(bookmark["object"], kind, api_version)
        assert rv_of(bookmark["object"]) == rv_of(newest)  # the newest revision of that resource
        assert ended - arrived >= 1.0  # well before the end, not with it
    assert "creationTimestamp" not in pp_events[0][1]["object"]["metadata"]  # CRs: exactly resourceVersion


@pytest.mark.slow
async def test_no_bookmark_without_opt_in_or_without_progress(http: aiohttp.ClientSession) -> None:
    ns, elsewhere = await new_namespace(http), await new_namespace(http)
    not_asked = await open_watch(http, f"/api/v1/namespaces/{ns}/configmaps", timeoutSeconds="4")
    quiet = await open_watch(http, f"/api/v1/namespaces/{ns}/secrets", allowWatchBookmarks="true",
                             timeoutSeconds="4")
    async with not_asked, quiet:
        reading = [asyncio.create_task(read_to_end(r, timeout=10)) for r in (not_asked, quiet)]
        await create_cm(http, elsewhere, "progress")  # configmaps move on; secrets stay quiet
        not_asked_events, quiet_events = await asyncio.gather(*reading)
    assert not_asked_events == []
    assert quiet_events == []


async def test_periodic_bookmarks_follow_the_interval_and_only_report_progress() -> None:
    async with ApiServer(bookmark_interval=0.5) as srv, aiohttp.ClientSession(base_url=srv.url) as http:
        ns, elsewhere = await new_namespace(http), await new_namespace(http)
        resp = await open_watch(http, f"/api/v1/namespaces/{ns}/configmaps", allowWatchBookmarks="true",
                                timeoutSeconds="30")
        async with resp:
            first = await create_cm(http, elsewhere, "one")
            bookmark = await next_event(resp, timeout=3)
            assert bookmark["type"] == "BOOKMARK"
            assert rv_of(bookmark["object"]) == rv_of(first)
            mine = await create_cm(http, ns, "mine")
            assert await next_event(resp) == {"type": "ADDED", "object": mine}
            # Nothing new since "mine": the next bookmark waits for the next write elsewhere.
            second = await create_cm(http, elsewhere, "two")
            bookmark = await next_event(resp, timeout=3)
            assert bookmark["type"] == "BOOKMARK"
            assert rv_of(bookmark["object"]) == rv_of(second)


async def test_kubernetes_asyncio_follows_bookmarks() -> None:
    async with ApiServer(bookmark_interval=0.5) as srv, aiohttp.ClientSession(base_url=srv.url) as http:
        ns, elsewhere = await new_namespace(http), await new_namespace(http)
        async with client.ApiClient(client.Configuration(host=srv.url)) as api:
            v1 = client.CoreV1Api(api)
            start = await list_rv(http, f"/api/v1/namespaces/{ns}/configmaps")
            async with watch.Watch() as w, asyncio.timeout(10):
                stream = w.stream(v1.list_namespaced_config_map, ns, resource_version=str(start),
                                  allow_watch_bookmarks=True, timeout_seconds=30)
                noise = await create_cm(http, elsewhere, "noise")
                event = await anext(stream)
                assert event["type"] == "BOOKMARK"
                assert w.resource_version == noise["metadata"]["resourceVersion"]


# ---------------------------------------------------------------------------- 410 Expired


async def write_history(http: aiohttp.ClientSession, count: int) -> list[int]:
    """``count`` ConfigMap writes in a row; their resourceVersions."""
    created = await create_cm(http, "default", f"h-{uuid.uuid4().hex[:8]}", {"n": "0"})
    rvs = [rv_of(created)]
    path = f"/api/v1/namespaces/default/configmaps/{created['metadata']['name']}"
    for n in range(1, count):
        rvs.append(rv_of(await merge_patch(http, path, {"data": {"n": str(n)}})))
    return rvs


async def test_watch_from_an_rv_older_than_the_window_gets_410_expired(
        small_history: tuple[ApiServer, aiohttp.ClientSession]) -> None:
    _, http = small_history
    rvs = await write_history(http, 8)  # the window keeps the last 5 of them
    assert rvs == list(range(rvs[0], rvs[0] + 8))
    resp = await open_watch(http, "/api/v1/namespaces/default/configmaps", resourceVersion=str(rvs[0]))
    async with resp:
        assert resp.status == 200
        events = [e for _, e in await read_to_end(resp, timeout=5)]  # ...and the stream ends
    assert events == [{"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"too old resource version: {rvs[0]} ({rvs[2]})", "reason": "Expired", "code": 410}}]

    # The oldest resourceVersion the window still answers from replays what followed it.
    resp = await open_watch(http, "/api/v1/namespaces/default/configmaps", resourceVersion=str(rvs[2]))
    async with resp:
        replayed = [await next_event(resp) for _ in range(5)]
    assert [(e["type"], rv_of(e["object"])) for e in replayed] == [("MODIFIED", rv) for rv in rvs[3:]]


async def test_kubernetes_asyncio_raises_410_for_an_expired_rv(
        small_history: tuple[ApiServer, aiohttp.ClientSession]) -> None:
    srv, http = small_history
    rvs = await write_history(http, 8)
    async with client.ApiClient(client.Configuration(host=srv.url)) as api:
        v1 = client.CoreV1Api(api)
        async with watch.Watch() as w, asyncio.timeout(10):
            with pytest.raises(ApiException) as raised:
                async for _ in w.stream(v1.list_namespaced_config_map, "default", resource_version=str(rvs[0]),
                                        timeout_seconds=10):
                    pytest.fail("no event may come before the 410")
    assert raised.value.status == 410
    assert "Expired: too old resource version" in str(raised.value.reason)


# ---------------------------------------------------------------------------- fan-out


async def test_many_watchers_each_receive_every_event_in_order(http: aiohttp.ClientSession) -> None:
    ns = await new_namespace(http)
    path = f"/api/v1/namespaces/{ns}/configmaps"
    start = await list_rv(http, path)
    writes = 200
    watchers = [await open_watch(http, path, resourceVersion=str(start), timeoutSeconds="60") for _ in range(10)]

    async def collect(resp: aiohttp.ClientResponse) -> list[tuple[str, str, int]]:
        got: list[tuple[str, str, int]] = []
        while len(got) < writes:
            event = await next_event(resp, timeout=20)
            got.append((event["type"], event["object"]["metadata"]["name"], rv_of(event["object"])))
        return got

    try:
        collecting = [asyncio.create_task(collect(r)) for r in watchers]
        limit = asyncio.Semaphore(20)

        async def write(n: int) -> tuple[str, str, int]:
            async with limit:
                created = await create_cm(http, ns, f"cm-{n:03d}", {"n": str(n)})
            return "ADDED", created["metadata"]["name"], rv_of(created)

        written = sorted(await asyncio.gather(*(write(n) for n in range(writes))), key=lambda w: w[2])
        results = await asyncio.gather(*collecting)
    finally:
        for resp in watchers:
            resp.close()
    assert len({rv for _, _, rv in written}) == writes
    for got in results:
        assert got == written  # all of them, once each, in resourceVersion order
