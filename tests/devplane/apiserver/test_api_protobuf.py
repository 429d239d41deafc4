"""Protobuf request bodies over HTTP: stored as their JSON would be; refused whole when undecodable."""

from __future__ import annotations

from typing import Any

import aiohttp

from devplane.apiserver import protobuf
from tests.conftest import eventually, get_or_none, send
from tests.devplane.apiserver.test_protobuf import entry, envelope, ld, meta, s

PB = {"Content-Type": protobuf.MEDIA_TYPE, "Accept": "application/json"}
CM = "/api/v1/namespaces/default/configmaps"


async def post(http: aiohttp.ClientSession, path: str, body: bytes) -> tuple[int, dict[str, Any]]:
    async with http.post(path, data=body, headers=PB) as r:
        return r.status, await r.json()


async def test_protobuf_configmap_is_stored_like_json(http: aiohttp.ClientSession) -> None:
    status, created = await post(http, CM, envelope("v1", "ConfigMap", meta("pb") + entry(2, "a", s(2, "b"))))
    assert status == 201, created
    await send(http, "POST", CM, {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "js", "labels": {"app": "web"}}, "data": {"a": "b"}})
    pb, js = await get_or_none(http, f"{CM}/pb"), await get_or_none(http, f"{CM}/js")
    assert pb is not None and js is not None
    for obj in (pb, js):
        for key in ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields"):
            obj["metadata"].pop(key, None)
    assert pb == js


async def test_unknown_field_is_400_and_nothing_is_stored(http: aiohttp.ClientSession) -> None:
    status, body = await post(http, CM, envelope("v1", "ConfigMap", meta("newer") + s(99, "x")))
    assert status == 400, body
    assert body["reason"] == "BadRequest"
    assert "unknown field number 99" in body["message"] and "ConfigMap" in body["message"]
    assert await get_or_none(http, f"{CM}/newer") is None


async def test_truncated_body_is_400_and_nothing_is_stored(http: aiohttp.ClientSession) -> None:
    status, body = await post(http, CM, envelope("v1", "ConfigMap", meta("cut"))[:-3])
    assert status == 400, body
    assert await get_or_none(http, f"{CM}/cut") is None


async def test_protobuf_put_and_delete_options(http: aiohttp.ClientSession) -> None:
    status, created = await post(http, CM, envelope("v1", "ConfigMap", meta("upd")))
    assert status == 201, created
    rv = created["metadata"]["resourceVersion"]
    raw = ld(1, s(1, "upd") + s(3, "default") + s(6, rv)) + entry(2, "k", s(2, "v"))
    async with http.put(f"{CM}/upd", data=envelope("v1", "ConfigMap", raw), headers=PB) as r:
        assert r.status == 200, await r.text()
        assert (await r.json())["data"] == {"k": "v"}
    stale = envelope("v1", "DeleteOptions", ld(2, s(2, "1")))  # preconditions.resourceVersion
    async with http.delete(f"{CM}/upd", data=stale, headers=PB) as r:
        assert r.status == 409, await r.text()
    async with http.delete(f"{CM}/upd", data=envelope("v1", "DeleteOptions", b""), headers=PB) as r:
        assert r.status == 200, await r.text()
    assert await get_or_none(http, f"{CM}/upd") is None


async def test_custom_resources_refuse_protobuf(http: aiohttp.ClientSession) -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    await send(http, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    path = "/apis/example.com/v1/namespaces/default/widgets"

    async def served() -> bool:
        async with http.get(path) as r:
            return r.status == 200

    await eventually(served, timeout=5)
    status, body = await post(http, path, envelope("example.com/v1", "Widget", meta("w")))
    assert status == 415, body
    assert body["reason"] == "UnsupportedMediaType"
