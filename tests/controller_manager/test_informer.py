"""Informers against the dev API server over HTTP: convergence, relist on 410, server restarts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client

from controller_manager import objects
from controller_manager.client import KubeClient
from controller_manager.informer import FuncHandler, InformerFactory, SharedInformer, SyncTimeout, strip_managed_fields
from controller_manager.objects import Obj
from controller_manager.resource import Resource
from devplane.apiserver.server import ApiServer
from devplane.apiserver.store import DeleteOptions
from kube_api.resources import CONFIGMAPS
from tests.conftest import eventually

MISSING = Resource("example.io", "v1", "widgets", "Widget", True)


def kube_client(server: ApiServer) -> KubeClient:
    return KubeClient(client.ApiClient(client.Configuration(host=server.url)), qps=0)


class Recorder:
    """Collects what an informer tells its handlers."""

    def __init__(self) -> None:
        self.adds: list[str] = []
        self.updates: list[tuple[str, str]] = []
        self.deletes: list[str] = []
        self.latest: dict[str, Obj] = {}

    def handler(self) -> FuncHandler:
        return FuncHandler(add=self.add, update=self.update, delete=self.delete)

    def add(self, obj: Obj, initial: bool) -> None:
        self.adds.append(objects.key(obj))
        self.latest[objects.key(obj)] = obj

    def update(self, old: Obj, new: Obj) -> None:
        self.updates.append((objects.key(new), new["data"]["v"] if "data" in new else ""))
        self.latest[objects.key(new)] = new

    def delete(self, obj: Obj) -> None:
        self.deletes.append(objects.key(obj))
        self.latest.pop(objects.key(obj), None)


async def _cm(http: aiohttp.ClientSession, name: str, value: str, ns: str = "default") -> dict[str, Any]:
    async with http.post(f"/api/v1/namespaces/{ns}/configmaps",
                         json={"metadata": {"name": name}, "data": {"v": value}}) as resp:
        assert resp.status == 201, await resp.text()
        result: dict[str, Any] = await resp.json()
        return result


async def _set(http: aiohttp.ClientSession, name: str, value: str) -> None:
    async with http.patch(f"/api/v1/namespaces/default/configmaps/{name}", json={"data": {"v": value}},
                          headers={"Content-Type": "application/merge-patch+json"}) as resp:
        assert resp.status == 200, await resp.text()


@pytest.fixture
async def factory(server: ApiServer) -> AsyncIterator[InformerFactory]:
    kube = kube_client(server)
    informers = InformerFactory(kube)
    yield informers
    await informers.stop()
    await kube.close()


async def test_informer_converges_after_2000_rapid_updates(server: ApiServer, http: aiohttp.ClientSession,
                                                           factory: InformerFactory) -> None:
    names = [f"cm-{i:02d}" for i in range(50)]
    for name in names:
        await _cm(http, name, "0")
    informer = factory.informer(CONFIGMAPS, "default")
    seen = Recorder()
    informer.add_event_handler(seen.handler())
    factory.start()
    await factory.wait_for_sync(timeout=10)
    assert sorted(seen.adds) == [f"default/{n}" for n in names]

    semaphore = asyncio.Semaphore(16)

    async def update(i: int) -> None:
        async with semaphore:
            await _set(http, names[i % 50], str(i // 50 + 1))

    await asyncio.gather(*(update(i) for i in range(2000)))  # 40 updates per object, last value "40"

    async def converged() -> bool:
        cached = {objects.key(o): o["data"]["v"] for o in informer.store.list()}
        handled = {k: o["data"]["v"] for k, o in seen.latest.items()}
        return cached == handled == {f"default/{n}": "40" for n in names}

    await eventually(converged)
    # every update reached the handlers once, in order per object
    per_object: dict[str, list[int]] = {}
    for key, value in seen.updates:
        per_object.setdefault(key, []).append(int(value))
    assert all(values == sorted(values) for values in per_object.values())
    assert sum(len(v) for v in per_object.values()) == 2000


async def test_forced_410_relists_with_correct_deltas(http: aiohttp.ClientSession) -> None:
    async with ApiServer(watch_history=5) as small, aiohttp.ClientSession(base_url=small.url) as h:
        for name in ("keep", "change", "remove"):
            await _cm(h, name, "1")
        kube = kube_client(small)
        informers = InformerFactory(kube)
        informer = informers.informer(CONFIGMAPS, "default")
        seen = Recorder()
        informer.add_event_handler(seen.handler())
        informers.start()
        try:
            await informers.wait_for_sync(timeout=10)
            list_rv = informer.last_sync_resource_version
            # Cut the watch and, before the informer can re-watch, write more than the window holds.
            store = small.store
            cm_type = store.registry.get("", "v1", "configmaps")
            assert cm_type is not None
            store.history(cm_type.storage_key).close_all()
            store.patch(cm_type, "default", "change", lambda o: {**o, "data": {"v": "2"}})
            store.delete(cm_type, "default", "remove", DeleteOptions())
            store.create(cm_type, "default", {"metadata": {"name": "new"}, "data": {"v": "1"}})
            for i in range(6):  # push the changes above out of the 5-event window
                store.create(cm_type, "default", {"metadata": {"name": f"filler-{i}"}, "data": {"v": "1"}})

            async def relisted() -> bool:
                return informer.last_sync_resource_version != list_rv and "default/new" in informer.store

            await eventually(relisted)
            assert informer.lists == 2  # the watch got 410 Expired and the reflector listed again
            assert ("default/change", "2") in seen.updates
            assert "default/remove" in seen.deletes
            assert "default/new" in seen.adds
            assert not any(key == "default/keep" for key, _ in seen.updates)  # unchanged: no spurious update
            assert sorted(informer.store.keys()) == sorted(
                ["default/keep", "default/change", "default/new", *(f"default/filler-{i}" for i in range(6))])
        finally:
            await informers.stop()
            await kube.close()


@pytest.mark.slow
async def test_restart_on_same_data_dir_mid_watch_loses_nothing(tmp_path: Path) -> None:
    first = ApiServer(data_dir=tmp_path)
    await first.start()
    port = first.port
    kube = KubeClient(client.ApiClient(client.Configuration(host=first.url)), qps=0)
    informers = InformerFactory(kube)
    informer = informers.informer(CONFIGMAPS, "default")
    seen = Recorder()
    informer.add_event_handler(seen.handler())
    second: ApiServer | None = None
    try:
        async with aiohttp.ClientSession(base_url=first.url) as h:
            for name in ("a", "b", "c"):
                await _cm(h, name, "1")
        informers.start()
        await informers.wait_for_sync(timeout=10)
        await first.stop()
        second = ApiServer(data_dir=tmp_path, port=port)
        await second.start()
        async with aiohttp.ClientSession(base_url=second.url) as h:
            await _set(h, "a", "2")
            async with h.delete("/api/v1/namespaces/default/configmaps/b") as resp:
                assert resp.status == 200
            await _cm(h, "d", "1")

        async def recovered() -> bool:
            return {k: o["data"]["v"] for k, o in seen.latest.items()} == \
                {"default/a": "2", "default/c": "1", "default/d": "1"}

        await eventually(recovered, timeout=20)
        assert {objects.key(o) for o in informer.store.list()} == {"default/a", "default/c", "default/d"}
    finally:
        await informers.stop()
        await kube.close()
        if second is not None:
            await second.stop()
        await first.stop()


async def test_a_mutation_cache_reads_our_write_until_the_informer_has_it(server: ApiServer,
                                                                           http: aiohttp.ClientSession,
                                                                           factory: InformerFactory) -> None:
    await _cm(http, "mine", "0")
    informer = factory.informer(CONFIGMAPS, "default")
    own = informer.mutation_cache()
    factory.start()
    await factory.wait_for_sync(timeout=10)
    written = own.mutated(await factory.client.patch(CONFIGMAPS, "mine", {"data": {"v": "1"}}, namespace="default"))
    assert (own.get("default/mine") or {})["data"] == {"v": "1"}  # at once, whether or not the watch delivered it
    await eventually(lambda: own.remembered() == 0)  # the informer's event made it forget our write
    cached = informer.store.get("default/mine")
    assert cached is not None and objects.resource_version(cached) == objects.resource_version(written)


@pytest.mark.parametrize("compact", [False, True])
async def test_a_transform_shapes_what_the_cache_keeps_from_the_list_and_the_watch(
        server: ApiServer, http: aiohttp.ClientSession, compact: bool) -> None:
    def keep_little(obj: dict[str, Any]) -> dict[str, Any]:  # as a transform that drops what no reader needs
        obj["data"] = {"v": obj["data"]["v"].upper()}
        return obj

    await _cm(http, "listed", "a")
    kube = kube_client(server)
    informer = SharedInformer(kube, CONFIGMAPS, transform=keep_little, compact=compact)
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(informer.wait_for_sync(), 10)
        await _cm(http, "watched", "b")
        await _set(http, "listed", "c")
        await eventually(lambda: [(informer.store.get(f"default/{n}") or {}).get("data") for n in ("listed", "watched")]
                         == [{"v": "C"}, {"v": "B"}])
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await kube.close()


def test_strip_managed_fields_drops_only_them() -> None:
    obj = {"metadata": {"name": "p", "managedFields": [{"manager": "kubectl"}], "labels": {"a": "b"}}, "spec": {}}
    assert strip_managed_fields(obj) == {"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {}}
    assert strip_managed_fields({"kind": "Status"}) == {"kind": "Status"}


async def test_handler_added_after_sync_gets_existing_objects(http: aiohttp.ClientSession,
                                                              factory: InformerFactory) -> None:
    await _cm(http, "x", "1")
    informer = factory.informer(CONFIGMAPS)
    factory.start()
    await factory.wait_for_sync(timeout=10)
    late = Recorder()
    informer.add_event_handler(late.handler())
    assert "default/x" in late.adds


async def test_one_informer_per_resource(factory: InformerFactory) -> None:
    assert factory.informer(CONFIGMAPS) is factory.informer(CONFIGMAPS)
    assert factory.informer(CONFIGMAPS, "default") is not factory.informer(CONFIGMAPS)


@pytest.mark.slow
async def test_missing_crd_gives_a_clear_sync_error(factory: InformerFactory) -> None:
    informer: SharedInformer = factory.informer(MISSING)
    factory.start()
    with pytest.raises(SyncTimeout) as failure:
        await factory.wait_for_sync([informer], timeout=1.5)
    message = str(failure.value)
    assert "widgets.example.io" in message
    assert "CustomResourceDefinition" in message


async def test_indexers(http: aiohttp.ClientSession, factory: InformerFactory) -> None:
    await _cm(http, "p", "x")
    await _cm(http, "q", "y")
    await _cm(http, "r", "x")
    informer = factory.informer(CONFIGMAPS)
    informer.add_indexers({"by-value": lambda o: [o.get("data", {}).get("v", "")]})
    factory.start()
    await factory.wait_for_sync(timeout=10)
    assert sorted(objects.key(o) for o in informer.store.by_index("by-value", "x")) == ["default/p", "default/r"]
    assert [objects.key(o) for o in informer.store.by_index("namespace", "default")] != []
    await _set(http, "p", "y")

    async def moved() -> bool:
        return sorted(informer.store.index_keys("by-value", "y")) == ["default/p", "default/q"]

    await eventually(moved)


async def test_a_failing_index_function_neither_corrupts_the_store_nor_kills_the_informer(
        http: aiohttp.ClientSession, factory: InformerFactory) -> None:
    informer = factory.informer(CONFIGMAPS, "default")
    informer.add_indexers({"by-value": lambda o: [o["data"]["v"]]})  # raises KeyError without data
    factory.start()
    await factory.wait_for_sync(timeout=10)
    async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "bad"}}) as r:
        assert r.status == 201
    await _cm(http, "good", "1")

    async def good_is_cached() -> bool:
        return "default/good" in informer.store

    await eventually(good_is_cached)
    assert "default/bad" not in informer.store  # never half-inserted
    assert informer.store.index_keys("by-value", "1") == ["default/good"]


async def test_compact_cache_behaves_the_same_and_hands_out_private_copies(
        server: ApiServer, http: aiohttp.ClientSession) -> None:
    kube = kube_client(server)
    informers = InformerFactory(kube)
    informer = informers.informer(CONFIGMAPS, "default", compact=True)
    informer.add_indexers({"by-value": lambda o: [o.get("data", {}).get("v", "")]})
    seen = Recorder()
    informer.add_event_handler(seen.handler())
    try:
        await _cm(http, "a", "1")
        informers.start()
        await informers.wait_for_sync(timeout=10)
        await _set(http, "a", "2")
        await _cm(http, "b", "2")

        async def converged() -> bool:
            return sorted(informer.store.index_keys("by-value", "2")) == ["default/a", "default/b"]

        await eventually(converged)
        assert ("default/a", "2") in seen.updates
        copy = informer.store.get("default/a")
        assert copy is not None and copy["data"]["v"] == "2"
        copy["data"]["v"] = "mutated"
        again = informer.store.get("default/a")
        assert again is not None and again["data"]["v"] == "2"  # the cache is not affected
    finally:
        await informers.stop()
        await kube.close()
