"""The protobuf body decoder on bytes built here with a tiny encoder (field numbers from upstream .proto)."""

from __future__ import annotations

from typing import Any

import pytest

from devplane.apiserver import protobuf
from devplane.apiserver.errors import StatusError
from devplane.apiserver.resources import BUILTIN_TYPES, ResourceType


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def ld(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def s(number: int, text: str) -> bytes:
    return ld(number, text.encode())


def vi(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def entry(number: int, key: str, value: bytes) -> bytes:
    """One map<string, V> entry: key = 1, value = 2 (value already encoded as field 2)."""
    return ld(number, s(1, key) + value)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return protobuf.MAGIC + ld(1, s(1, api_version) + s(2, kind)) + ld(2, raw)


def rtype(kind: str) -> ResourceType:
    return next(t for t in BUILTIN_TYPES if t.kind == kind)


def meta(name: str, namespace: str = "default") -> bytes:
    # ObjectMeta: name 1, namespace 3, labels 11; an empty creationTimestamp (8), as Go writes a zero Time
    return ld(1, s(1, name) + s(3, namespace) + entry(11, "app", s(2, "web")) + ld(8, b""))


def decode(body: bytes, kind: str) -> dict[str, Any]:
    return protobuf.decode_body(body, rtype(kind))


def test_configmap_as_its_json() -> None:
    raw = meta("cm") + entry(2, "a", s(2, "b")) + entry(2, "empty", s(2, "")) + entry(3, "bin", ld(2, b"\x00\xff"))
    assert decode(envelope("v1", "ConfigMap", raw), "ConfigMap") == {
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "web"}},
        "data": {"a": "b", "empty": ""}, "binaryData": {"bin": "AP8="},
    }


def test_secret_bytes_are_base64_and_empty_type_is_left_out() -> None:
    raw = meta("s") + entry(2, "password", ld(2, b"hunter2")) + s(3, "")
    assert decode(envelope("v1", "Secret", raw), "Secret") == {
        "kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s", "namespace": "default",
                                                            "labels": {"app": "web"}},
        "data": {"password": "aHVudGVyMg=="},
    }


def test_deployment_nested_messages_int_or_string_and_zero_structs() -> None:
    container = s(1, "nginx") + s(2, "nginx:1.27") + ld(6, vi(3, 80) + s(4, "TCP"))
    template = ld(1, b"") + ld(2, ld(2, container))
    strategy = s(1, "RollingUpdate") + ld(2, ld(1, vi(1, 1) + s(3, "25%")) + ld(2, vi(1, 0) + vi(2, 2)))
    spec = vi(1, 3) + ld(2, entry(1, "app", s(2, "web"))) + ld(3, template) + ld(4, strategy) + vi(5, 0)
    obj = decode(envelope("apps/v1", "Deployment", meta("d") + ld(2, spec)), "Deployment")
    assert obj["spec"] == {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {}, "spec": {"containers": [
            {"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80, "protocol": "TCP"}],
             "resources": {}}]}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 2}},
    }
    assert obj["status"] == {}  # a non-pointer struct Go's JSON always writes


def test_negative_ints_times_and_quantities() -> None:
    # Lease: MicroTime acquireTime (3) with nanos; int32 leaseDurationSeconds (2) negative on the wire
    micro = vi(1, 1_700_000_000) + vi(2, 123_456_789)
    raw = meta("l") + ld(2, s(1, "me") + vi(2, -5) + ld(3, micro) + vi(5, 0))
    spec = decode(envelope("coordination.k8s.io/v1", "Lease", raw), "Lease")["spec"]
    assert spec == {"holderIdentity": "me", "leaseDurationSeconds": -5,
                    "acquireTime": "2023-11-14T22:13:20.123456Z", "leaseTransitions": 0}
    # Pod resources: map<string, Quantity>
    container = s(1, "c") + ld(8, entry(2, "cpu", ld(2, s(1, "500m"))))
    pod = decode(envelope("v1", "Pod", meta("p") + ld(2, ld(2, container))), "Pod")
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "500m"}}


def test_delete_options() -> None:
    body = envelope("meta.k8s.io/v1", "DeleteOptions", vi(1, 0) + ld(2, s(2, "42")) + s(4, "Foreground"))
    assert protobuf.decode_delete_options(body) == {
        "kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "gracePeriodSeconds": 0,
        "preconditions": {"resourceVersion": "42"}, "propagationPolicy": "Foreground"}


def test_unknown_field_names_message_and_number() -> None:
    with pytest.raises(StatusError) as caught:
        decode(envelope("v1", "ConfigMap", meta("cm") + s(99, "new")), "ConfigMap")
    assert caught.value.code == 400
    assert "unknown field number 99" in caught.value.message
    assert "k8s.io.api.core.v1.ConfigMap" in caught.value.message


@pytest.mark.parametrize("cut", [1, 5, 20])
def test_truncated_body_is_400(cut: int) -> None:
    body = envelope("v1", "ConfigMap", meta("cm") + entry(2, "a", s(2, "b")))
    with pytest.raises(StatusError) as caught:
        decode(body[:-cut], "ConfigMap")
    assert caught.value.code == 400
    assert "truncated" in caught.value.message


def test_missing_magic_and_unknown_kind() -> None:
    with pytest.raises(StatusError) as caught:
        decode(b"\x0a\x00", "ConfigMap")
    assert caught.value.code == 400 and "expected prefix" in caught.value.message
    with pytest.raises(StatusError) as caught:
        decode(envelope("v1", "Gadget", b""), "ConfigMap")
    assert caught.value.code == 400 and 'no kind "Gadget"' in caught.value.message


def test_custom_resources_are_never_protobuf() -> None:
    cr = ResourceType("example.com", "v1", "widgets", "Widget", True, builtin=False)
    with pytest.raises(StatusError) as caught:
        protobuf.decode_body(envelope("example.com/v1", "Widget", b""), cr)
    assert caught.value.code == 415


def test_hostile_nesting_is_bounded() -> None:
    props = b""
    for _ in range(200):  # JSONSchemaProps.not (field 28) inside itself
        props = ld(28, props)
    crd_spec = ld(7, s(1, "v1") + ld(4, ld(1, props)))
    with pytest.raises(StatusError) as caught:
        decode(envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", meta("c", "") + ld(2, crd_spec)),
               "CustomResourceDefinition")
    assert caught.value.code == 400 and "nested" in caught.value.message


def test_go_duration_format() -> None:
    go = protobuf._go_duration
    assert [go(0), go(1500), go(2_000_000), go(90 * 10**9), go(3600 * 10**9 + 500_000_000)] == \
        ["0s", "1.5µs", "2ms", "1m30s", "1h0m0.5s"]
