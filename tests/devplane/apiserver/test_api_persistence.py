"""Storage across restarts: ``ApiServer(data_dir=...)`` stopped and started on the same folder.

Like kube-apiserver on etcd: objects come back unchanged, the revision keeps counting up, and
the watch cache starts afresh at the restart (older resourceVersions get 410 Expired).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from devplane.apiserver.server import ApiServer

WR = "/apis/apps.karmada.io/v1alpha1/workloadrebalancers"
PP = "/apis/policy.karmada.io/v1alpha1/namespaces/p/propagationpolicies"
CM = "/api/v1/namespaces/p/configmaps"
DEPLOY = "/apis/apps/v1/namespaces/p/deployments"
CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/p/widgets"


@asynccontextmanager
async def serve(data_dir: Path) -> AsyncIterator[aiohttp.ClientSession]:
    """One server life on ``data_dir``; a session to it. Leaving stops the server."""
    async with ApiServer(data_dir=data_dir) as srv, aiohttp.ClientSession(base_url=srv.url) as http:
        yield http


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None, *, status: int = 200,
               content_type: str = "application/json", **params: str) -> dict[str, Any]:
    data = None if body is None else json.dumps(body)
    async with http.request(method, path, data=data, params=params,
                            headers={"Content-Type": content_type}) as resp:
        text = await resp.text()
        assert resp.status == status, text
        answer: dict[str, Any] = json.loads(text)
        return answer


def rv_of(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


async def list_rv(http: aiohttp.ClientSession, path: str) -> int:
    return rv_of(await call(http, "GET", path))


def workload_rebalancer(name: str, workloads: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer", "metadata": {"name": name},
            "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo",
                                    "namespace": "p"}] if workloads is None else workloads}}


async def populate(http: aiohttp.ClientSession) -> dict[str, dict[str, Any]]:
    """A few objects of several kinds; returns each as the server answered, by its path."""
    await call(http, "POST", "/api/v1/namespaces", {"metadata": {"name": "p"}}, status=201)
    objects = {
        f"{CM}/cm": await call(http, "POST", CM, {"metadata": {"name": "cm", "labels": {"a": "b"}},
                                                  "data": {"key": "värde ✓"}}, status=201),
        f"{DEPLOY}/foo": await call(http, "POST", DEPLOY, {
            "metadata": {"name": "foo"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "foo"}},
                     "template": {"metadata": {"labels": {"app": "foo"}},
                                  "spec": {"containers": [{"name": "foo", "image": "nginx"}]}}}}, status=201),
        f"{WR}/demo": await call(http, "POST", WR, workload_rebalancer("demo"), status=201),
        f"{PP}/pp": await call(http, "POST", PP, {
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "pp"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo"}]}},
                                  status=201),
        "/api/v1/nodes/n1": await call(http, "POST", "/api/v1/nodes", {"metadata": {"name": "n1"}}, status=201),
    }
    # An update and a status write, so that what is stored is not only what was created.
    objects[f"{WR}/demo"] = await call(http, "PATCH", f"{WR}/demo", {"spec": {"ttlSecondsAfterFinished": 60}},
                                       content_type="application/merge-patch+json")
    objects[f"{DEPLOY}/foo"] = await call(http, "PATCH", f"{DEPLOY}/foo/status", {"status": {"replicas": 1}},
                                          content_type="application/merge-patch+json")
    return objects


async def test_objects_survive_a_restart_unchanged(tmp_path: Path) -> None:
    async with serve(tmp_path) as http:
        written = await populate(http)
        before = {path: await call(http, "GET", path) for path in written}
        assert before == written
        listed_before = await call(http, "GET", CM)
    async with serve(tmp_path) as http:
        after = {path: await call(http, "GET", path) for path in written}
        listed_after = await call(http, "GET", CM)
    assert after == before  # uid, resourceVersion, timestamps, generation, spec and status alike
    assert listed_after["items"] == listed_before["items"]


async def test_resource_versions_keep_increasing_across_restarts(tmp_path: Path) -> None:
    newest = 0
    for life in range(3):
        async with serve(tmp_path) as http:
            if life == 0:
                await call(http, "POST", "/api/v1/namespaces", {"metadata": {"name": "p"}}, status=201)
            # Nothing before this restart is newer than what the server now reports...
            assert await list_rv(http, CM) >= newest
            assert await list_rv(http, WR) >= newest
            # ...and every new write comes after it.
            created = await call(http, "POST", CM, {"metadata": {"name": f"c{life}"}}, status=201)
            assert rv_of(created) > newest
            patched = await call(http, "PATCH", f"{CM}/c{life}", {"data": {"x": "1"}},
                                 content_type="application/merge-patch+json")
            assert rv_of(patched) > rv_of(created)
            # The last write of this life is a delete: its revision lives on only in the counter.
            await call(http, "DELETE", f"{CM}/c{life}")
            newest = await list_rv(http, CM)
            assert newest > rv_of(patched)


async def test_watch_from_a_pre_restart_rv_is_expired_after_restart(tmp_path: Path) -> None:
    async with serve(tmp_path) as http:
        await call(http, "POST", "/api/v1/namespaces", {"metadata": {"name": "p"}}, status=201)
        old = await call(http, "POST", CM, {"metadata": {"name": "a"}}, status=201)
        await call(http, "POST", CM, {"metadata": {"name": "b"}}, status=201)
        last = await list_rv(http, CM)
    async with serve(tmp_path) as http:
        # The watch cache starts at the restart, as kube's does: older revisions are gone.
        async with http.get(CM, params={"watch": "true", "resourceVersion": str(rv_of(old)),
                                        "timeoutSeconds": "5"}) as resp:
            assert resp.status == 200
            lines = (await resp.read()).splitlines()
        assert [json.loads(line) for line in lines] == [{"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"too old resource version: {rv_of(old)} ({last})", "reason": "Expired", "code": 410}}]

        # A client that relists gets a resourceVersion it can watch from.
        relisted = await call(http, "GET", CM)
        assert [i["metadata"]["name"] for i in relisted["items"]] == ["a", "b"]
        async with http.get(CM, params={"watch": "true", "resourceVersion": relisted["metadata"]["resourceVersion"],
                                        "timeoutSeconds": "5"}) as resp:
            assert resp.status == 200
            created = await call(http, "POST", CM, {"metadata": {"name": "c"}}, status=201)
            line = await resp.content.readline()
        assert json.loads(line) == {"type": "ADDED", "object": created}


def widget_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {
                    "size": {"type": "integer", "minimum": 1},
                    "color": {"type": "string", "default": "blue"}}}}}}}],
        },
    }


async def test_crds_created_through_the_api_are_served_after_restart(tmp_path: Path) -> None:
    async with serve(tmp_path) as http:
        await call(http, "POST", "/api/v1/namespaces", {"metadata": {"name": "p"}}, status=201)
        await call(http, "POST", CRD, widget_crd(), status=201)
        w1 = await call(http, "POST", WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                                "metadata": {"name": "w1"}, "spec": {"size": 2}}, status=201)
        assert w1["spec"] == {"size": 2, "color": "blue"}
    async with serve(tmp_path) as http:
        discovery = await call(http, "GET", "/apis/example.com/v1")
        assert [(r["name"], r["kind"], r["namespaced"]) for r in discovery["resources"]] == [
            ("widgets", "Widget", True)]
        assert await call(http, "GET", f"{WIDGETS}/w1") == w1
        # Its schema is enforced again, defaults included.
        bad = await call(http, "POST", WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                                 "metadata": {"name": "bad"}, "spec": {"size": "big"}}, status=422)
        assert bad["reason"] == "Invalid"
        assert bad["details"]["causes"][0]["field"] == "spec.size"
        w2 = await call(http, "POST", WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                                "metadata": {"name": "w2"}, "spec": {"size": 3}}, status=201)
        assert w2["spec"] == {"size": 3, "color": "blue"}
        assert rv_of(w2) > rv_of(w1)


async def test_a_failed_write_stores_nothing_also_after_restart(tmp_path: Path) -> None:
    async with serve(tmp_path) as http:
        await call(http, "POST", "/api/v1/namespaces", {"metadata": {"name": "p"}}, status=201)
        kept = await call(http, "POST", WR, workload_rebalancer("kept"), status=201)
        before = await list_rv(http, WR)

        refused = await call(http, "POST", WR, workload_rebalancer("empty", []), status=422)
        assert refused["message"] == ('WorkloadRebalancer.apps.karmada.io "empty" is invalid: spec.workloads: '
                                      "Invalid value: 0: spec.workloads in body should have at least 1 items")
        await call(http, "PATCH", f"{WR}/kept", {"spec": {"ttlSecondsAfterFinished": "soon"}}, status=422,
                   content_type="application/merge-patch+json")
        await call(http, "PUT", f"{WR}/kept", {**workload_rebalancer("kept", []), "metadata": kept["metadata"]},
                   status=422)
        # Nothing was written: no object, no new revision.
        await call(http, "GET", f"{WR}/empty", status=404)
        assert await call(http, "GET", f"{WR}/kept") == kept
        assert await list_rv(http, WR) == before
    async with serve(tmp_path) as http:
        await call(http, "GET", f"{WR}/empty", status=404)
        assert await call(http, "GET", f"{WR}/kept") == kept
        assert [i["metadata"]["name"] for i in (await call(http, "GET", WR))["items"]] == ["kept"]
        assert await list_rv(http, WR) == before


@pytest.mark.parametrize("kind_path", [CM, WR])
async def test_deleted_objects_stay_deleted_after_restart(tmp_path: Path, kind_path: str) -> None:
    async with serve(tmp_path) as http:
        await call(http, "POST", "/api/v1/namespaces", {"metadata": {"name": "p"}}, status=201)
        body = workload_rebalancer("gone") if kind_path == WR else {"metadata": {"name": "gone"}}
        await call(http, "POST", kind_path, body, status=201)
        await call(http, "DELETE", f"{kind_path}/gone")
    async with serve(tmp_path) as http:
        await call(http, "GET", f"{kind_path}/gone", status=404)
        # The name is free again.
        await call(http, "POST", kind_path, body, status=201)


async def test_watchers_of_a_durable_server_get_every_committed_write_in_order(tmp_path: Path) -> None:
    """Group commit: a write is answered, and watched, only once it is on disk; batches keep the order."""
    async with serve(tmp_path) as http:
        await call(http, "POST", "/api/v1/namespaces", {"metadata": {"name": "p"}}, status=201)
        start = await list_rv(http, CM)
        watches = [await http.get(CM, params={"watch": "true", "resourceVersion": str(start),
                                               "timeoutSeconds": "30"}) for _ in range(3)]
        try:
            created = await asyncio.gather(*(call(http, "POST", CM, {"metadata": {"name": f"c{n:02d}"}},
                                                  status=201) for n in range(60)))
            expected = sorted((rv_of(c), c["metadata"]["name"]) for c in created)
            for resp in watches:
                got: list[tuple[int, str]] = []
                async with asyncio.timeout(10):
                    while len(got) < len(expected):
                        event = json.loads(await resp.content.readline())
                        assert event["type"] == "ADDED"
                        got.append((rv_of(event["object"]), event["object"]["metadata"]["name"]))
                assert got == expected
        finally:
            for resp in watches:
                resp.close()
    async with serve(tmp_path) as http:
        listed = await call(http, "GET", CM)
        assert sorted((rv_of(i), i["metadata"]["name"]) for i in listed["items"]) == expected
