"""The informer cache (Indexer) behaves the same whether it keeps dicts or compact bytes."""

from __future__ import annotations

from typing import Any

import pytest

from controller_manager.cache import NAMESPACE_INDEX, Indexer
from controller_manager.objects import MutableObj


def binding(name: str, rv: str, *, namespace: str = "ns-a", cluster: str = "member1") -> MutableObj:
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": rv, "labels": {"tier": "web"}},
            "spec": {"clusters": [{"name": cluster, "replicas": 2}], "replicas": 2,
                     "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}},
            "status": {"conditions": [{"type": "Scheduled", "status": "True", "message": "ünïcode ok"}]}}


def by_cluster(obj: Any) -> list[str]:
    return [c["name"] for c in obj["spec"]["clusters"]]


@pytest.fixture(params=[False, True], ids=["parsed", "compact"])
def store(request: pytest.FixtureRequest) -> Indexer:
    return Indexer({"cluster": by_cluster}, compact=request.param)


def test_round_trip_and_readers_cannot_change_the_cache(store: Indexer) -> None:
    original = binding("a", "1")
    store.upsert(original)
    got = store.get("ns-a/a")
    assert got == binding("a", "1")
    assert store.list() == [binding("a", "1")]
    assert store.by_index("cluster", "member1") == [binding("a", "1")]
    if store.compact:  # readers get private copies: changing one changes nothing cached
        assert got is not None
        got["spec"]["clusters"][0]["name"] = "changed"
        original["metadata"]["labels"]["tier"] = "changed"
        assert store.get("ns-a/a") == binding("a", "1")


def test_indexes_follow_updates_and_deletes(store: Indexer) -> None:
    added = store.upsert(binding("a", "1"))
    assert (added.type, added.old) == ("added", None)
    store.upsert(binding("b", "1", namespace="ns-b"))
    updated = store.upsert(binding("a", "2", cluster="member2"))
    assert updated.type == "updated" and updated.old == binding("a", "1") and updated.obj == binding("a", "2",
                                                                                                    cluster="member2")
    assert store.index_keys("cluster", "member1") == ["ns-b/b"]
    assert store.index_keys("cluster", "member2") == ["ns-a/a"]
    assert store.index_values(NAMESPACE_INDEX) == ["ns-a", "ns-b"]
    deleted = store.delete(binding("b", "9", namespace="ns-b"))
    assert deleted is not None and deleted.type == "deleted" and deleted.obj == binding("b", "1", namespace="ns-b")
    assert store.delete(binding("b", "9", namespace="ns-b")) is None
    assert store.index_values("cluster") == ["member2"] and store.index_values(NAMESPACE_INDEX) == ["ns-a"]
    assert store.keys() == ["ns-a/a"] and len(store) == 1 and "ns-a/a" in store


def test_relist_replace_reports_adds_changes_and_vanished_objects(store: Indexer) -> None:
    for name in ("keep", "change", "gone"):
        store.upsert(binding(name, "1"))
    deltas = store.replace([binding("keep", "1"), binding("change", "2", cluster="member2"), binding("new", "3")])
    assert [(d.type, d.obj["metadata"]["name"]) for d in deltas] == [
        ("updated", "change"), ("added", "new"), ("deleted", "gone")]
    assert deltas[2].obj == binding("gone", "1")  # the last known state
    assert sorted(store.keys()) == ["ns-a/change", "ns-a/keep", "ns-a/new"]
    assert store.index_keys("cluster", "member1") == ["ns-a/keep", "ns-a/new"]


def test_replace_packed_applies_each_delta_as_it_is_consumed(store: Indexer) -> None:
    store.upsert(binding("gone", "1"))
    packed = [store.pack(binding("a", "1")), store.pack(binding("b", "1"))]
    deltas = store.replace_packed(packed)
    first = next(deltas)
    assert (first.type, first.obj) == ("added", binding("a", "1"))
    assert "ns-a/a" in store and "ns-a/b" not in store  # the rest waits for the consumer
    rest = list(deltas)
    assert [(d.type, d.obj["metadata"]["name"]) for d in rest] == [("added", "b"), ("deleted", "gone")]
    assert sorted(store.keys()) == ["ns-a/a", "ns-a/b"]
    assert store.get("ns-a/b") == binding("b", "1")


def test_a_failing_index_function_leaves_the_object_out_of_a_relist(store: Indexer) -> None:
    broken = binding("broken", "1")
    broken["spec"]["clusters"] = None  # by_cluster raises on it
    deltas = list(store.replace_packed([store.pack(broken), store.pack(binding("ok", "1"))]))
    assert [d.obj["metadata"]["name"] for d in deltas] == ["ok"]
    assert store.keys() == ["ns-a/ok"]
