"""The object accessors: what they read, and that missing or null parts read as empty."""

from __future__ import annotations

from typing import Any

import pytest

from controller_manager import objects

FULL: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web-1",
        "namespace": "default",
        "uid": "u-1",
        "resourceVersion": "42",
        "generation": 3,
        "labels": {"app": "web"},
        "annotations": {"note": "x"},
        "finalizers": ["example.com/f"],
        "ownerReferences": [{"kind": "ReplicaSet", "name": "web", "uid": "u-0", "controller": True}],
        "creationTimestamp": "2024-01-01T00:00:00Z",
        "deletionTimestamp": "2024-01-02T00:00:00Z",
    },
    "spec": {"nodeName": "n1"},
    "status": {"phase": "Running"},
}


def test_reads_every_part() -> None:
    assert objects.metadata(FULL) is FULL["metadata"]
    assert objects.spec(FULL) == {"nodeName": "n1"}
    assert objects.status(FULL) == {"phase": "Running"}
    assert objects.name(FULL) == "web-1"
    assert objects.namespace(FULL) == "default"
    assert objects.uid(FULL) == "u-1"
    assert objects.resource_version(FULL) == "42"
    assert objects.generation(FULL) == 3
    assert objects.labels(FULL) == {"app": "web"}
    assert objects.annotations(FULL) == {"note": "x"}
    assert objects.finalizers(FULL) == ["example.com/f"]
    assert objects.owner_references(FULL)[0]["uid"] == "u-0"
    assert objects.creation_timestamp(FULL) == "2024-01-01T00:00:00Z"
    assert objects.is_deleting(FULL)


@pytest.mark.parametrize("obj", [{}, {"metadata": None, "spec": None, "status": None}, {"metadata": {}},
                                 {"metadata": {"name": None, "labels": None, "finalizers": None}}])
def test_missing_parts_read_as_empty(obj: dict[str, Any]) -> None:
    assert objects.metadata(obj) == (obj.get("metadata") or {})
    assert objects.spec(obj) == {}
    assert objects.status(obj) == {}
    assert objects.name(obj) == ""
    assert objects.namespace(obj) == ""
    assert objects.uid(obj) == ""
    assert objects.resource_version(obj) == ""
    assert objects.generation(obj) == 0
    assert objects.labels(obj) == {}
    assert objects.annotations(obj) == {}
    assert list(objects.finalizers(obj)) == []
    assert list(objects.owner_references(obj)) == []
    assert objects.creation_timestamp(obj) == ""
    assert not objects.is_deleting(obj)
    assert objects.key(obj) == ""


def test_an_empty_part_read_is_not_stored() -> None:
    obj: dict[str, Any] = {}
    assert objects.labels(obj) == {}
    assert obj == {}


def test_key_and_split_key() -> None:
    assert objects.key(FULL) == "default/web-1"
    assert objects.key({"metadata": {"name": "node-1"}}) == "node-1"
    assert objects.key({"metadata": {"name": "a", "namespace": ""}}) == "a"
    assert objects.split_key("default/web-1") == ("default", "web-1")
    assert objects.split_key("node-1") == ("", "node-1")
    for obj in (FULL, {"metadata": {"name": "node-1"}}):
        assert objects.split_key(objects.key(obj)) == (objects.namespace(obj), objects.name(obj))


def test_deep_copy_is_private() -> None:
    copied = objects.deep_copy(FULL)
    assert copied == FULL
    copied["metadata"]["labels"]["app"] = "other"
    copied["spec"]["nodeName"] = "n2"
    assert objects.labels(FULL) == {"app": "web"}
    assert objects.spec(FULL) == {"nodeName": "n1"}


def test_text_readers_are_named_after_their_field() -> None:
    readers = (objects.name, objects.namespace, objects.uid, objects.resource_version, objects.creation_timestamp)
    assert [reader.__name__ for reader in readers] == [
        "name", "namespace", "uid", "resource_version", "creation_timestamp"]
    assert all(reader.__doc__ for reader in readers)
