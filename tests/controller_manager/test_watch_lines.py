"""The object's JSON cut out of a watch event's line: exactly the object, or nothing."""

from __future__ import annotations

import json

import pytest

from controller_manager.cache import Indexer
from controller_manager.client import object_json

OBJ = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"},
       "data": {"k": "v ☃ \"quoted\" }"}}


def line_of(event: object, **dumps: object) -> bytes:
    return json.dumps(event, **dumps).encode() + b"\n"  # type: ignore[arg-type]


def test_a_kube_apiserver_line_gives_the_object_text() -> None:
    line = line_of({"type": "MODIFIED", "object": OBJ}, separators=(",", ":"))
    raw = object_json(line, json.loads(line))
    assert raw is not None and json.loads(raw) == OBJ
    assert raw == json.dumps(OBJ, separators=(",", ":")).encode()


@pytest.mark.parametrize("line", [
    line_of({"type": "MODIFIED", "object": OBJ}),  # spaces after the separators
    line_of({"object": OBJ, "type": "MODIFIED"}, separators=(",", ":")),  # another order
    line_of({"type": "MODIFIED", "object": OBJ, "extra": 1}, separators=(",", ":")),  # another member
    line_of({"type": "ERROR", "object": "not an object"}, separators=(",", ":")),
])
def test_any_other_line_gives_nothing(line: bytes) -> None:
    assert object_json(line, json.loads(line)) is None


def test_a_compact_store_keeps_the_received_text() -> None:
    store = Indexer(compact=True)
    line = line_of({"type": "ADDED", "object": OBJ}, separators=(",", ":"))
    delta = store.upsert(OBJ, json_text=object_json(line, json.loads(line)))
    assert delta.type == "added"
    assert store.get("ns/a") == OBJ
    parsed = Indexer()
    parsed.upsert(OBJ, json_text=b"ignored by a store of parsed objects")
    assert parsed.get("ns/a") == OBJ
