"""Read-your-writes: a controller's reads see its own writes until its informer catches up (MutationCache)."""

from __future__ import annotations

import pytest

from controller_manager.cache import Indexer
from controller_manager.mutationcache import MutationCache
from controller_manager.objects import MutableObj


def config_map(rv: str, value: str, *, uid: str = "uid-1", name: str = "cm", team: str = "a") -> MutableObj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "data": {"v": value},
            "metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv, "labels": {"team": team}}}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=[False, True], ids=["parsed", "compact"])
def store(request: pytest.FixtureRequest) -> Indexer:
    store = Indexer({"team": lambda obj: [obj["metadata"]["labels"]["team"]]}, compact=request.param)
    store.upsert(config_map("5", "cached"))
    return store


def test_our_newer_write_is_read_until_the_informer_has_it(store: Indexer) -> None:
    cache = MutationCache(store)
    written = cache.mutated(config_map("7", "ours"))
    assert cache.get("ns/cm") is written
    assert cache.by_index("team", "a") == [written]
    assert cache.list() == [written]
    store.upsert(config_map("7", "ours"))  # the informer caught up: its copy is read, our write forgotten
    assert cache.get("ns/cm") == config_map("7", "ours")
    assert cache.remembered() == 0


def test_of_two_answers_arriving_out_of_order_the_newer_is_kept(store: Indexer) -> None:
    cache = MutationCache(store)
    cache.mutated(config_map("8", "second write"))
    cache.mutated(config_map("7", "first write"))
    assert cache.get("ns/cm") == config_map("8", "second write")


def test_a_newer_informer_copy_wins_over_our_write(store: Indexer) -> None:
    cache = MutationCache(store)
    cache.mutated(config_map("7", "ours"))
    store.upsert(config_map("9", "someone else's"))
    assert cache.get("ns/cm") == config_map("9", "someone else's")
    assert cache.remembered() == 0


@pytest.mark.parametrize(("cached", "written"), [
    (config_map("5", "cached"), config_map("not-a-number", "ours")),
    (config_map("5", "cached"), config_map("7", "ours", uid="uid-2")),  # the object was deleted and created again
])
def test_the_informer_is_trusted_when_the_versions_do_not_compare(cached: MutableObj, written: MutableObj) -> None:
    store = Indexer()
    store.upsert(cached)
    cache = MutationCache(store)
    cache.mutated(written)
    assert cache.get("ns/cm") == cached
    assert cache.remembered() == 0


def test_an_object_the_informer_does_not_hold_reads_as_absent() -> None:
    cache = MutationCache(Indexer())
    cache.mutated(config_map("7", "ours"))
    assert cache.get("ns/cm") is None
    assert cache.list() == []


def test_writes_are_forgotten_after_the_ttl(store: Indexer) -> None:
    clock = Clock()
    cache = MutationCache(store, ttl=60, clock=clock)
    cache.mutated(config_map("7", "ours"))
    clock.now += 59
    assert cache.get("ns/cm") == config_map("7", "ours")
    clock.now += 1
    assert cache.get("ns/cm") == config_map("5", "cached")
    assert cache.remembered() == 0


def test_expired_and_excess_writes_go_when_another_is_remembered() -> None:
    clock = Clock()
    cache = MutationCache(Indexer(), ttl=60, limit=2, clock=clock)
    cache.mutated(config_map("1", "x", name="old"))
    clock.now += 60
    cache.mutated(config_map("2", "x", name="a"))
    assert cache.remembered() == 1  # "old" expired
    cache.mutated(config_map("3", "x", name="b"))
    cache.mutated(config_map("4", "x", name="c"))
    assert cache.remembered() == 2  # "a", the oldest, made room


def test_informer_events_forget_what_it_caught_up_with(store: Indexer) -> None:
    cache = MutationCache(store)
    cache.mutated(config_map("7", "ours"))
    cache.on_update(config_map("5", "cached"), config_map("6", "an older version"))
    assert cache.remembered() == 1
    cache.on_update(config_map("6", "an older version"), config_map("7", "ours"))
    assert cache.remembered() == 0
    cache.mutated(config_map("8", "ours again"))
    cache.on_delete(config_map("8", "ours again"))
    assert cache.remembered() == 0


def test_forget_after_our_own_delete(store: Indexer) -> None:
    cache = MutationCache(store)
    cache.mutated(config_map("7", "ours"))
    cache.forget("ns/cm")
    assert cache.get("ns/cm") == config_map("5", "cached")
