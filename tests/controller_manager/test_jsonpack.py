"""Packed objects come back equal, whatever they share with the packer's dictionary."""

from __future__ import annotations

import json

import pytest

from controller_manager.jsonpack import MAX_DICTIONARY, JsonPacker


def test_objects_come_back_equal_and_fresh() -> None:
    packer = JsonPacker()
    first = {"kind": "ResourceBinding", "metadata": {"name": "a", "labels": {"k": "v"}}, "spec": {"replicas": 2}}
    other = {"kind": "ResourceBinding", "metadata": {"name": "b", "annotations": {"note": "ünïcode ☃ \u0000"}},
             "spec": {"replicas": None, "clusters": [{"name": "m1", "weight": 1.5}], "flag": True}}
    unlike = {"apiVersion": "v1", "kind": "ConfigMap", "data": {str(i): "x" * i for i in range(50)}}
    packed = [packer.pack(obj) for obj in (first, other, unlike)]
    assert [packer.unpack(data) for data in packed] == [first, other, unlike]
    one, two = packer.unpack(packed[1]), packer.unpack(packed[1])
    assert one is not two and one["spec"]["clusters"] is not two["spec"]["clusters"]


def test_objects_like_the_first_pack_small() -> None:
    packer = JsonPacker()
    objs = [{"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
             "metadata": {"name": f"app-{i:06d}-deployment", "namespace": "bench-1", "resourceVersion": str(i)},
             "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"app-{i:06d}"}}}
            for i in range(3)]
    sizes = [len(packer.pack(obj)) for obj in objs]
    assert sizes[2] < len(json.dumps(objs[2], separators=(",", ":"))) / 3


def test_a_first_object_larger_than_the_window() -> None:
    packer = JsonPacker()
    big = {"data": {"blob": "y" * (3 * MAX_DICTIONARY)}}
    small = {"data": {"blob": "z"}}
    packed = [packer.pack(big), packer.pack(small)]
    assert packer.unpack(packed[0]) == big and packer.unpack(packed[1]) == small


def test_unpacking_before_any_pack_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="nothing was packed"):
        JsonPacker().unpack(b"\x00")


def test_objects_larger_than_the_window_come_back_equal() -> None:
    packer = JsonPacker()
    first = {"kind": "Work", "spec": {"manifests": [{"data": {str(i): f"value-{i}" for i in range(400)}}]}}
    larger = {"kind": "Work", "spec": {"manifests": [{"data": {str(i): f"value-{i}" * 3 for i in range(2000)}}]}}
    assert len(json.dumps(larger)) > 4 * MAX_DICTIONARY
    packed = [packer.pack(first), packer.pack(larger)]
    assert [packer.unpack(data) for data in packed] == [first, larger]
