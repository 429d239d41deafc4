"""The three PATCH flavours: RFC 7386, RFC 6902 and strategic merge patch.

Strategic-merge expectations were checked against ``kubectl patch --local --type strategic``
(kubectl 1.32, i.e. the real k8s.io/apimachinery code), including its element order.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from devplane.apiserver.errors import StatusError
from devplane.apiserver.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    supports_strategic_merge_patch,
)

# --------------------------------------------------------------------------------------
# RFC 7386 merge patch
# --------------------------------------------------------------------------------------

RFC7386_APPENDIX: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("original", "patch", "expected"), RFC7386_APPENDIX)
def test_merge_patch_rfc7386_appendix(original: Any, patch: Any, expected: Any) -> None:
    assert apply_merge_patch(original, patch) == expected


def test_merge_patch_replaces_lists_and_does_not_mutate() -> None:
    original = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"items": [1, 2, 3]}}
    patch: dict[str, Any] = {
        "metadata": {"labels": {"a": None, "c": "3"}},
        "spec": {"items": [9], "new": {"x": None, "y": 1}},
    }
    before = copy.deepcopy((original, patch))
    result = apply_merge_patch(original, patch)
    assert result == {
        "metadata": {"labels": {"b": "2", "c": "3"}},
        "spec": {"items": [9], "new": {"y": 1}},
    }
    assert (original, patch) == before
    result["spec"]["items"].append(10)  # the result shares nothing with the patch
    assert patch["spec"]["items"] == [9]


# --------------------------------------------------------------------------------------
# RFC 6902 JSON patch
# --------------------------------------------------------------------------------------

RFC6902_APPENDIX: list[tuple[str, Any, Any, Any]] = [
    ("A.1", {"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"}),
    (
        "A.2",
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    ("A.3", {"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
    ("A.4", {"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]}),
    (
        "A.5",
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    (
        "A.6",
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        "A.7",
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        "A.8",
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    (
        "A.10",
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    (
        "A.11",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    ("A.14", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
    (
        "A.16",
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
    (
        "copy",
        {"a": {"b": [1]}},
        [{"op": "copy", "from": "/a", "path": "/c"}],
        {"a": {"b": [1]}, "c": {"b": [1]}},
    ),
    ("escape ~1", {}, [{"op": "add", "path": "/a~1b", "value": 1}], {"a/b": 1}),
    ("append at len", {"l": [1]}, [{"op": "add", "path": "/l/1", "value": 2}], {"l": [1, 2]}),
    ("replace root", {"a": 1}, [{"op": "replace", "path": "", "value": {"b": 2}}], {"b": 2}),
    ("null patch", {"a": 1}, None, {"a": 1}),
]


@pytest.mark.parametrize(
    ("original", "operations", "expected"),
    [case[1:] for case in RFC6902_APPENDIX],
    ids=[case[0] for case in RFC6902_APPENDIX],
)
def test_json_patch_rfc6902_examples(original: Any, operations: Any, expected: Any) -> None:
    assert apply_json_patch(original, operations) == expected


def _assert_rejected(exc: pytest.ExceptionInfo[StatusError]) -> None:
    """kube's 422 for a JSON patch that does not apply: no causes, empty details."""
    err = exc.value
    assert (err.code, err.reason, err.message, err.details) == (
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
        {},
    )
    assert err.to_status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server rejected our request due to an error in our request",
        "reason": "Invalid",
        "details": {},
        "code": 422,
    }


@pytest.mark.parametrize(
    ("original", "operations"),
    [
        ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}]),  # A.9
        ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}]),  # A.12
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}]),  # A.15
        ({"a": 1}, [{"op": "remove", "path": "/missing"}]),
        ({"a": 1}, [{"op": "replace", "path": "/missing", "value": 2}]),
        ({"l": [1, 2]}, [{"op": "remove", "path": "/l/2"}]),
        ({"l": [1, 2]}, [{"op": "add", "path": "/l/3", "value": 0}]),
        ({"l": [1, 2]}, [{"op": "replace", "path": "/l/-", "value": 0}]),
        ({"l": [1, 2]}, [{"op": "remove", "path": "/l/01"}]),
        ({"a": 1}, [{"op": "move", "path": "/b"}]),  # missing from
        ({"a": 1}, [{"op": "copy", "from": "/nope", "path": "/b"}]),
        ({"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": "/a/b/c"}]),  # into its own child
        ({"a": 1}, [{"op": "add", "path": "/b"}]),  # missing value
        ({"a": True}, [{"op": "test", "path": "/a", "value": 1}]),  # true is not 1
        ({"a": 1}, [{"op": "add", "path": "a", "value": 1}]),  # pointer without leading slash
    ],
)
def test_json_patch_that_does_not_apply_is_422(original: Any, operations: Any) -> None:
    with pytest.raises(StatusError) as exc:
        apply_json_patch(original, operations)
    _assert_rejected(exc)


@pytest.mark.parametrize(
    "operations",
    [
        {"op": "add", "path": "/a", "value": 1},  # not an array
        ["add"],  # not an array of objects
        [{"path": "/a", "value": 1}],  # no op
        [{"op": "add", "value": 1}],  # no path
        [{"op": "frobnicate", "path": "/a"}],  # unknown op
    ],
)
def test_malformed_json_patch_is_400(operations: Any) -> None:
    with pytest.raises(StatusError) as exc:
        apply_json_patch({"a": 0}, operations)
    assert (exc.value.code, exc.value.reason) == (400, "BadRequest")


def test_malformed_json_patch_is_400_even_after_an_applicable_op() -> None:
    ops = [{"op": "remove", "path": "/missing"}, {"op": "bogus", "path": "/a"}]
    with pytest.raises(StatusError) as exc:
        apply_json_patch({"a": 0}, ops)
    assert exc.value.code == 400


def test_json_patch_is_all_or_nothing_and_does_not_mutate() -> None:
    original = {"a": {"b": [1, 2]}, "c": "d"}
    ops = [
        {"op": "add", "path": "/a/b/-", "value": {"x": 1}},
        {"op": "remove", "path": "/c"},
        {"op": "test", "path": "/c", "value": "d"},  # fails: /c was removed
    ]
    before = copy.deepcopy((original, ops))
    with pytest.raises(StatusError) as exc:
        apply_json_patch(original, ops)
    _assert_rejected(exc)
    assert (original, ops) == before

    result = apply_json_patch(original, ops[:2])
    assert result == {"a": {"b": [1, 2, {"x": 1}]}}
    result["a"]["b"][2]["x"] = 2  # values are copied out of the operations
    assert (original, ops) == before


# --------------------------------------------------------------------------------------
# Strategic merge patch
# --------------------------------------------------------------------------------------


def _deployment(containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": containers},
            },
        },
    }


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    containers: list[dict[str, Any]] = obj["spec"]["template"]["spec"]["containers"]
    return containers


def _smp(original: Any, patch: Any, kind_key: str) -> Any:
    """Apply and check that neither input was touched."""
    before = copy.deepcopy((original, patch))
    result = apply_strategic_merge_patch(original, patch, kind_key)
    assert (original, patch) == before
    return result


def test_smp_merges_containers_by_name_keeping_unlisted_fields() -> None:
    original = _deployment(
        [
            {"name": "app", "image": "nginx:1.0", "env": [{"name": "A", "value": "1"}]},
            {"name": "sidecar", "image": "envoy"},
        ]
    )
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2.0"}]}}}}
    result = _smp(original, patch, "apps/Deployment")
    assert _containers(result) == [
        {"name": "app", "image": "nginx:2.0", "env": [{"name": "A", "value": "1"}]},
        {"name": "sidecar", "image": "envoy"},
    ]
    assert result["spec"]["replicas"] == 2


def test_smp_new_list_elements_come_first_like_apimachinery() -> None:
    original = _deployment([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "z"}]}}}}
    result = _smp(original, patch, "apps/Deployment")
    assert [c["name"] for c in _containers(result)] == ["c", "a", "b"]


def test_smp_merges_nested_lists_env_ports_and_mounts() -> None:
    original = _deployment(
        [
            {
                "name": "app",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "ports": [{"containerPort": 80, "name": "http"}],
                "volumeMounts": [{"mountPath": "/data", "name": "data"}],
                "envFrom": [{"configMapRef": {"name": "one"}}],
            }
        ]
    )
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "env": [{"name": "B", "value": "3"}],
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "volumeMounts": [{"mountPath": "/data", "readOnly": True}],
                            "envFrom": [{"secretRef": {"name": "two"}}],
                        }
                    ]
                }
            }
        }
    }
    (container,) = _containers(_smp(original, patch, "apps/Deployment"))
    assert container["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]
    assert container["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}]
    assert container["volumeMounts"] == [{"mountPath": "/data", "name": "data", "readOnly": True}]
    assert container["envFrom"] == [{"secretRef": {"name": "two"}}]  # no strategy: replaced


def test_smp_patch_delete_removes_a_container() -> None:
    original = _deployment([{"name": "app", "image": "x"}, {"name": "sidecar", "image": "y"}])
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}}}
    result = _smp(original, patch, "apps/Deployment")
    assert _containers(result) == [{"name": "app", "image": "x"}]


def test_smp_patch_replace_as_list_element_replaces_the_list() -> None:
    original = _deployment([{"name": "app", "image": "x", "env": [{"name": "A"}]}, {"name": "b"}])
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "z"}, {"$patch": "replace"}]}}}}
    result = _smp(original, patch, "apps/Deployment")
    assert _containers(result) == [{"name": "app", "image": "z"}]


def test_smp_set_element_order_reorders_merged_list() -> None:
    original = _deployment([{"name": "a", "image": "1"}, {"name": "b", "image": "2"}, {"name": "c", "image": "3"}])
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
                    "containers": [{"name": "a", "image": "new"}],
                }
            }
        }
    }
    result = _smp(original, patch, "apps/Deployment")
    # Listed elements in the given order; the unlisted "b" is interleaved by stored position
    # (it was before "c"), which is what apimachinery does (checked with kubectl 1.32).
    assert _containers(result) == [
        {"name": "b", "image": "2"},
        {"name": "c", "image": "3"},
        {"name": "a", "image": "new"},
    ]
    assert "$setElementOrder/containers" not in result["spec"]["template"]["spec"]


def test_smp_set_element_order_alone_only_reorders() -> None:
    original = _deployment([{"name": "a"}, {"name": "b"}, {"name": "c"}])
    patch = {
        "spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "b"}, {"name": "a"}]}}}
    }
    assert [c["name"] for c in _containers(_smp(original, patch, "apps/Deployment"))] == ["c", "b", "a"]


def test_smp_set_element_order_must_follow_patch_order() -> None:
    original = _deployment([{"name": "a"}, {"name": "c"}])
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "a"}, {"name": "c"}],
                    "containers": [{"name": "c", "image": "n"}, {"name": "a", "image": "m"}],
                }
            }
        }
    }
    with pytest.raises(StatusError) as exc:
        apply_strategic_merge_patch(original, patch, "apps/Deployment")
    assert exc.value.code == 400
    assert "doesn't match $setElementOrder list" in exc.value.message


def test_smp_kubectl_apply_three_way_patch() -> None:
    """What kubectl apply sends after renaming a container: delete, add, order."""
    original = _deployment([{"name": "old", "image": "x"}, {"name": "keep", "image": "k"}])
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "new"}, {"name": "keep"}],
                    "containers": [{"name": "new", "image": "y"}, {"name": "old", "$patch": "delete"}],
                }
            }
        }
    }
    result = _smp(original, patch, "apps/Deployment")
    assert _containers(result) == [{"name": "new", "image": "y"}, {"name": "keep", "image": "k"}]


def _node() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "spec": {"podCIDRs": ["10.0.0.0/24"], "taints": [{"key": "a", "effect": "NoSchedule"}]},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True", "reason": "KubeletReady"},
                {"type": "MemoryPressure", "status": "False"},
            ],
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            "images": [{"names": ["a"], "sizeBytes": 1}],
        },
    }


def test_smp_node_conditions_merge_by_type() -> None:
    patch = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False", "reason": "KubeletNotReady"},
                {"type": "DiskPressure", "status": "False"},
            ],
            "addresses": [{"type": "Hostname", "address": "n1"}],
            "images": [{"names": ["b"], "sizeBytes": 2}],
        }
    }
    status = _smp(_node(), patch, "/Node")["status"]
    assert status["conditions"] == [
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady"},
        {"type": "DiskPressure", "status": "False"},
        {"type": "MemoryPressure", "status": "False"},
    ]
    assert status["addresses"] == [
        {"type": "Hostname", "address": "n1"},
        {"type": "InternalIP", "address": "10.0.0.1"},
    ]
    assert status["images"] == [{"names": ["b"], "sizeBytes": 2}]  # no strategy: replaced


def test_smp_node_taints_replaced_whole_and_pod_cidrs_merged() -> None:
    patch = {"spec": {"taints": [{"key": "b", "effect": "NoExecute"}], "podCIDRs": ["10.0.1.0/24"]}}
    spec = _smp(_node(), patch, "/Node")["spec"]
    assert spec["taints"] == [{"key": "b", "effect": "NoExecute"}]
    assert spec["podCIDRs"] == ["10.0.1.0/24", "10.0.0.0/24"]


def test_smp_kubectl_cordon() -> None:
    result = _smp(_node(), {"spec": {"unschedulable": True}}, "/Node")
    expected = _node()
    expected["spec"]["unschedulable"] = True
    assert result == expected


def test_smp_owner_references_merge_by_uid() -> None:
    original = {
        "metadata": {
            "name": "cm",
            "ownerReferences": [
                {"uid": "u1", "name": "one", "kind": "A"},
                {"uid": "u2", "name": "two", "kind": "B"},
            ],
        }
    }
    patch = {
        "metadata": {
            "ownerReferences": [
                {"uid": "u2", "controller": True},
                {"uid": "u3", "name": "three", "kind": "C"},
                {"uid": "u1", "$patch": "delete"},
            ]
        }
    }
    result = _smp(original, patch, "/ConfigMap")
    assert result["metadata"]["ownerReferences"] == [
        {"uid": "u2", "name": "two", "kind": "B", "controller": True},
        {"uid": "u3", "name": "three", "kind": "C"},
    ]


def test_smp_finalizers_union_and_delete_from_primitive_list() -> None:
    original = {"metadata": {"name": "x", "finalizers": ["a", "b"]}}
    union = _smp(original, {"metadata": {"finalizers": ["b", "c"]}}, "/ConfigMap")
    assert union["metadata"]["finalizers"] == ["a", "b", "c"]
    # A new value goes in front of the stored ones it was not placed after (apimachinery order).
    assert _smp(original, {"metadata": {"finalizers": ["c"]}}, "/ConfigMap")["metadata"]["finalizers"] == [
        "c",
        "a",
        "b",
    ]
    removed = _smp(original, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "zzz"]}}, "/ConfigMap")
    assert removed["metadata"] == {"name": "x", "finalizers": ["b"]}


def test_smp_tolerations_replaced_whole() -> None:
    original = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c"}],
            "tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}],
        },
    }
    patch = {"spec": {"tolerations": [{"key": "a", "effect": "NoSchedule"}]}}
    assert _smp(original, patch, "/Pod")["spec"]["tolerations"] == [{"key": "a", "effect": "NoSchedule"}]


def test_smp_patch_replace_on_a_map() -> None:
    original = {"metadata": {"name": "x", "labels": {"a": "1", "b": "2"}}}
    patch = {"metadata": {"labels": {"$patch": "replace", "c": "3"}}}
    assert _smp(original, patch, "/ConfigMap")["metadata"] == {"name": "x", "labels": {"c": "3"}}


def test_smp_patch_delete_on_a_map_and_null_deletes_a_key() -> None:
    original = {"metadata": {"name": "x", "labels": {"a": "1"}, "annotations": {"k": "v", "j": "w"}}}
    patch = {"metadata": {"labels": {"$patch": "delete"}, "annotations": {"k": None}}}
    assert _smp(original, patch, "/ConfigMap")["metadata"] == {
        "name": "x",
        "labels": {},
        "annotations": {"j": "w"},
    }


def test_smp_patch_merge_directive_is_refused_in_a_map() -> None:
    with pytest.raises(StatusError) as exc:
        apply_strategic_merge_patch({"metadata": {}}, {"metadata": {"$patch": "merge"}}, "/ConfigMap")
    assert exc.value.code == 400
    assert exc.value.message.startswith("unknown patch type: merge in map")


def test_smp_retain_keys_clears_other_strategy_fields() -> None:
    original = _deployment([{"name": "a"}])
    original["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert _smp(original, patch, "apps/Deployment")["spec"]["strategy"] == {"type": "Recreate"}


def test_smp_new_subtree_drops_nulls_and_directives() -> None:
    original = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
    patch = {"spec": {"nodeSelector": {"a": None, "b": "c"}, "tolerations": [{"$patch": "replace"}]}}
    spec = _smp(original, patch, "/Pod")["spec"]
    assert spec["nodeSelector"] == {"b": "c"}
    assert spec["tolerations"] == []


def test_smp_missing_merge_key_is_400() -> None:
    original = _deployment([{"name": "a"}])
    patch = {"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}
    with pytest.raises(StatusError) as exc:
        apply_strategic_merge_patch(original, patch, "apps/Deployment")
    assert (exc.value.code, exc.value.message) == (
        400,
        "map: map[image:x] does not contain declared merge key: name",
    )


def test_smp_pod_template_reached_for_every_workload() -> None:
    containers = [{"name": "a", "env": [{"name": "X", "value": "1"}]}]
    patch_containers = [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]
    merged_env = [{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}]
    for kind_key in ("apps/ReplicaSet", "apps/StatefulSet", "apps/DaemonSet", "batch/Job"):
        original = {"spec": {"template": {"spec": {"containers": containers}}}}
        patch = {"spec": {"template": {"spec": {"containers": patch_containers}}}}
        result = _smp(original, patch, kind_key)
        assert result["spec"]["template"]["spec"]["containers"][0]["env"] == merged_env, kind_key
    cronjob = {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": containers}}}}}}
    cronjob_patch = {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": patch_containers}}}}}}
    result = _smp(cronjob, cronjob_patch, "batch/CronJob")
    assert result["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"] == merged_env


def test_smp_status_conditions_merge_by_type_for_built_in_kinds() -> None:
    for kind_key in (
        "/Pod",
        "/Namespace",
        "/Service",
        "apps/Deployment",
        "apps/StatefulSet",
        "batch/Job",
        "policy/PodDisruptionBudget",
    ):
        original = {"status": {"conditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}]}}
        patch = {"status": {"conditions": [{"type": "B", "status": "False"}]}}
        result = _smp(original, patch, kind_key)
        assert result["status"]["conditions"] == [
            {"type": "A", "status": "True"},
            {"type": "B", "status": "False"},
        ], kind_key


def test_smp_lists_without_strategy_are_replaced() -> None:
    role = {"rules": [{"verbs": ["get"], "resources": ["pods"]}, {"verbs": ["list"], "resources": ["nodes"]}]}
    patch = {"rules": [{"verbs": ["watch"], "resources": ["pods"]}]}
    assert _smp(role, patch, "rbac.authorization.k8s.io/Role")["rules"] == patch["rules"]
    pod = {
        "spec": {"containers": [{"name": "a", "resizePolicy": [{"resourceName": "cpu"}, {"resourceName": "memory"}]}]}
    }
    pod_patch = {
        "spec": {"containers": [{"name": "a", "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "x"}]}]}
    }
    assert _smp(pod, pod_patch, "/Pod")["spec"]["containers"][0]["resizePolicy"] == [
        {"resourceName": "cpu", "restartPolicy": "x"}
    ]


def test_smp_service_ports_by_port_and_service_account_secrets_by_name() -> None:
    svc = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}}
    result = _smp(svc, {"spec": {"ports": [{"port": 80, "targetPort": 8080}]}}, "/Service")
    assert result["spec"]["ports"] == [
        {"port": 80, "name": "http", "targetPort": 8080},
        {"port": 443, "name": "https"},
    ]
    sa = {"secrets": [{"name": "a"}], "imagePullSecrets": [{"name": "p"}]}
    result = _smp(sa, {"secrets": [{"name": "b"}], "imagePullSecrets": [{"name": "q"}]}, "/ServiceAccount")
    assert result == {"secrets": [{"name": "b"}, {"name": "a"}], "imagePullSecrets": [{"name": "q"}]}


def test_smp_on_custom_resource_is_415() -> None:
    assert not supports_strategic_merge_patch("work.karmada.io/ResourceBinding")
    with pytest.raises(StatusError) as exc:
        apply_strategic_merge_patch({"spec": {}}, {"spec": {"a": 1}}, "work.karmada.io/ResourceBinding")
    assert (exc.value.code, exc.value.reason, exc.value.message) == (
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    )


def test_smp_patch_body_must_be_an_object() -> None:
    with pytest.raises(StatusError) as exc:
        apply_strategic_merge_patch({"metadata": {}}, ["x"], "/ConfigMap")
    assert exc.value.code == 400


def test_smp_does_not_mutate_inputs_even_when_failing() -> None:
    original = _deployment([{"name": "a", "env": [{"name": "X"}]}, {"name": "b"}])
    original["metadata"]["finalizers"] = ["f1"]
    ok_patch: dict[str, Any] = {
        "metadata": {"finalizers": ["f2"], "$deleteFromPrimitiveList/finalizers": ["f1"]},
        "spec": {
            "template": {
                "spec": {
                    "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                    "containers": [{"name": "b", "$patch": "delete"}, {"name": "a", "env": [{"name": "Y"}]}],
                }
            }
        },
    }
    bad_patch = copy.deepcopy(ok_patch)
    bad_patch["spec"]["template"]["spec"]["containers"].append({"image": "no-name"})
    before = copy.deepcopy((original, ok_patch, bad_patch))

    result = apply_strategic_merge_patch(original, ok_patch, "apps/Deployment")
    with pytest.raises(StatusError):
        apply_strategic_merge_patch(original, bad_patch, "apps/Deployment")
    assert (original, ok_patch, bad_patch) == before

    _containers(result)[0]["env"].append({"name": "Z"})
    assert (original, ok_patch, bad_patch) == before
