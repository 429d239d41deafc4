"""Conformance of the dev API server's REST semantics, over real HTTP on 127.0.0.1.

Expected codes, reasons and messages are what a real kube-apiserver answers (docs/apiserver.md,
"Semantics honoured"). Happy paths go through kubernetes_asyncio's typed
APIs, as product code does; exact status codes and ``Status`` bodies are checked over raw HTTP.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conftest import eventually

UID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
RB_GROUP = "work.karmada.io"
WR_GROUP = "apps.karmada.io"


# ------------------------------------------------------------------------------------ helpers


@dataclass
class Reply:
    status: int
    content_type: str
    body: Any  # parsed JSON, or text when the server did not answer JSON


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None, *,
               ctype: str = "application/json", data: bytes | None = None,
               params: dict[str, str] | None = None) -> Reply:
    if body is not None:
        data = json.dumps(body).encode()
    headers = {"Content-Type": ctype} if data is not None else {}
    async with http.request(method, path, data=data, headers=headers, params=params) as resp:
        text = await resp.text()
        parsed: Any = json.loads(text) if resp.content_type == "application/json" else text
        return Reply(resp.status, resp.content_type, parsed)


def cm_path(ns: str = "default", name: str = "") -> str:
    return f"/api/v1/namespaces/{ns}/configmaps" + (f"/{name}" if name else "")


def rb_path(ns: str = "default", name: str = "", sub: str = "") -> str:
    path = f"/apis/{RB_GROUP}/v1alpha2/namespaces/{ns}/resourcebindings"
    return path + (f"/{name}" if name else "") + (f"/{sub}" if sub else "")


def wr_path(name: str = "", sub: str = "") -> str:
    return f"/apis/{WR_GROUP}/v1alpha1/workloadrebalancers" + (f"/{name}" if name else "") + \
        (f"/{sub}" if sub else "")


def deploy_path(ns: str = "default", name: str = "", sub: str = "") -> str:
    return f"/apis/apps/v1/namespaces/{ns}/deployments" + (f"/{name}" if name else "") + \
        (f"/{sub}" if sub else "")


def cm(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta},
            "data": data if data is not None else {"k": "v"}}


def rb(name: str, ns: str = "default", replicas: int = 1, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": f"{RB_GROUP}/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": ns, **meta},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": ns},
                     "replicas": replicas}}


def wr(name: str, workload: str = "web", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": f"{WR_GROUP}/v1alpha1", "kind": "WorkloadRebalancer", "metadata": {"name": name, **meta},
            "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": workload,
                                    "namespace": "default"}]}}


def deployment(name: str, replicas: int = 1) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                         {"name": "app", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
                         {"name": "side", "image": "busybox:1"}]}}}}


def status_of(reply: Reply, code: int, reason: str | None, message: str) -> dict[str, Any]:
    """Assert ``reply`` is a kube ``Status`` failure; return its details (or {})."""
    assert reply.status == code, reply.body
    body = reply.body
    assert isinstance(body, dict), body
    assert body["kind"] == "Status"
    assert body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["code"] == code
    assert body.get("reason") == reason
    assert body["message"] == message
    details: dict[str, Any] = body.get("details") or {}
    return details


async def create(http: aiohttp.ClientSession, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    reply = await call(http, "POST", path, obj)
    assert reply.status == 201, reply.body
    result: dict[str, Any] = reply.body
    return result


async def get(http: aiohttp.ClientSession, path: str) -> dict[str, Any]:
    reply = await call(http, "GET", path)
    assert reply.status == 200, reply.body
    result: dict[str, Any] = reply.body
    return result


async def gone(http: aiohttp.ClientSession, path: str) -> bool:
    return (await call(http, "GET", path)).status == 404


async def make_namespace(http: aiohttp.ClientSession, name: str) -> None:
    await create(http, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


async def names(http: aiohttp.ClientSession, path: str, **params: str) -> set[str]:
    reply = await call(http, "GET", path, params=params)
    assert reply.status == 200, reply.body
    return {item["metadata"]["name"] for item in reply.body["items"]}


def check_new_object_meta(meta: dict[str, Any]) -> None:
    assert UID_RE.match(meta["uid"]), meta["uid"]
    assert meta["resourceVersion"].isdigit()
    assert TIMESTAMP_RE.match(meta["creationTimestamp"]), meta["creationTimestamp"]


# ------------------------------------------------------------------------------------ 1. CRUD


async def test_configmap_crud_typed(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    core = client.CoreV1Api(api)
    created = await core.create_namespaced_config_map(
        "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="a", labels={"x": "1"}), data={"k": "v"}))
    assert created.metadata.name == "a"
    raw = await get(http, cm_path(name="a"))
    check_new_object_meta(raw["metadata"])
    assert "generation" not in raw["metadata"]
    assert raw["metadata"]["uid"] == created.metadata.uid

    got = await core.read_namespaced_config_map("a", "default")
    assert got.data == {"k": "v"}
    assert got.metadata.resource_version == created.metadata.resource_version

    listed = await core.list_namespaced_config_map("default")
    assert [i.metadata.name for i in listed.items] == ["a"]
    assert int(listed.metadata.resource_version) >= int(created.metadata.resource_version)

    got.data = {"k": "v2"}
    replaced = await core.replace_namespaced_config_map("a", "default", got)
    assert replaced.data == {"k": "v2"}
    assert int(replaced.metadata.resource_version) > int(got.metadata.resource_version)

    patched = await core.patch_namespaced_config_map("a", "default", {"data": {"extra": "1"}})
    assert patched.data == {"k": "v2", "extra": "1"}

    deleted = await core.delete_namespaced_config_map("a", "default")
    assert deleted.status == "Success"
    assert deleted.details.name == "a"
    assert deleted.details.kind == "configmaps"
    assert deleted.details.group is None
    assert deleted.details.uid == created.metadata.uid
    with pytest.raises(ApiException) as err:
        await core.read_namespaced_config_map("a", "default")
    assert err.value.status == 404


async def test_delete_answers_status_with_plural_kind(http: aiohttp.ClientSession) -> None:
    created = await create(http, cm_path(), cm("a"))
    reply = await call(http, "DELETE", cm_path(name="a"))
    assert reply.status == 200
    assert reply.body["kind"] == "Status"
    assert reply.body["status"] == "Success"
    assert reply.body["details"] == {"name": "a", "kind": "configmaps", "uid": created["metadata"]["uid"]}
    assert "resourceVersion" not in reply.body.get("metadata", {})

    binding = await create(http, rb_path(), rb("b"))
    reply = await call(http, "DELETE", rb_path(name="b"))
    assert reply.status == 200
    assert reply.body["details"] == {"name": "b", "group": RB_GROUP, "kind": "resourcebindings",
                                     "uid": binding["metadata"]["uid"]}
    assert await gone(http, rb_path(name="b"))


async def test_deployment_crud_typed(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    apps = client.AppsV1Api(api)
    created = await apps.create_namespaced_deployment("default", deployment("web"))
    assert created.metadata.generation == 1
    raw = await get(http, deploy_path(name="web"))
    check_new_object_meta(raw["metadata"])
    assert raw["metadata"]["generation"] == 1

    listed = await apps.list_namespaced_deployment("default")
    assert [d.metadata.name for d in listed.items] == ["web"]

    got = await apps.read_namespaced_deployment("web", "default")
    got.spec.replicas = 3
    replaced = await apps.replace_namespaced_deployment("web", "default", got)
    assert replaced.spec.replicas == 3
    assert replaced.metadata.generation == 2

    patched = await apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 4}})
    assert patched.spec.replicas == 4
    assert patched.metadata.generation == 3

    deleted = await apps.delete_namespaced_deployment("web", "default")
    assert deleted.details.kind == "deployments"
    assert deleted.details.group == "apps"
    assert deleted.details.uid == created.metadata.uid
    assert await gone(http, deploy_path(name="web"))


async def test_workloadrebalancer_crud_typed(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    custom = client.CustomObjectsApi(api)
    args = (WR_GROUP, "v1alpha1", "workloadrebalancers")
    created = await custom.create_cluster_custom_object(*args, wr("rebalance"))
    meta = created["metadata"]
    check_new_object_meta(meta)
    assert meta["generation"] == 1
    assert "namespace" not in meta

    got = await custom.get_cluster_custom_object(*args, "rebalance")
    assert got == created
    listed = await custom.list_cluster_custom_object(*args)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["rebalance"]
    assert listed["metadata"]["continue"] == ""

    got["spec"]["ttlSecondsAfterFinished"] = 60
    replaced = await custom.replace_cluster_custom_object(*args, "rebalance", got)
    assert replaced["spec"]["ttlSecondsAfterFinished"] == 60
    assert replaced["metadata"]["generation"] == 2

    patched = await custom.patch_cluster_custom_object(
        *args, "rebalance", {"spec": {"ttlSecondsAfterFinished": None}}, _content_type=MERGE)
    assert "ttlSecondsAfterFinished" not in patched["spec"]
    assert patched["metadata"]["generation"] == 3

    deleted = await custom.delete_cluster_custom_object(*args, "rebalance")
    assert deleted["kind"] == "Status"
    assert deleted["details"] == {"name": "rebalance", "group": WR_GROUP, "kind": "workloadrebalancers",
                                  "uid": meta["uid"]}
    assert await gone(http, wr_path("rebalance"))


async def test_resourcebinding_crud_typed(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    custom = client.CustomObjectsApi(api)
    args = (RB_GROUP, "v1alpha2", "default", "resourcebindings")
    created = await custom.create_namespaced_custom_object(*args, rb("web-deployment"))
    check_new_object_meta(created["metadata"])
    assert created["metadata"]["namespace"] == "default"
    assert created["metadata"]["generation"] == 1
    assert created["apiVersion"] == f"{RB_GROUP}/v1alpha2"

    listed = await custom.list_namespaced_custom_object(*args)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["web-deployment"]

    got = await custom.get_namespaced_custom_object(*args, "web-deployment")
    got["spec"]["replicas"] = 5
    replaced = await custom.replace_namespaced_custom_object(*args, "web-deployment", got)
    assert replaced["spec"]["replicas"] == 5

    patched = await custom.patch_namespaced_custom_object(
        *args, "web-deployment", {"metadata": {"labels": {"l": "1"}}}, _content_type=MERGE)
    assert patched["metadata"]["labels"] == {"l": "1"}
    assert patched["metadata"]["generation"] == 2  # labels do not bump it

    deleted = await custom.delete_namespaced_custom_object(*args, "web-deployment")
    assert deleted["details"]["kind"] == "resourcebindings"
    with pytest.raises(ApiException) as err:
        await custom.get_namespaced_custom_object(*args, "web-deployment")
    assert err.value.status == 404


async def test_rbac_and_lease_typed(api: client.ApiClient) -> None:
    rbac = client.RbacAuthorizationV1Api(api)
    role = await rbac.create_namespaced_role("default", client.V1Role(
        metadata=client.V1ObjectMeta(name="system:reader"),
        rules=[client.V1PolicyRule(api_groups=[""], resources=["configmaps"], verbs=["get", "list"])]))
    assert role.metadata.name == "system:reader"  # RBAC names are path segments, ':' allowed
    binding = await rbac.create_namespaced_role_binding("default", client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name="reader"),
        role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name="system:reader"),
        subjects=[client.RbacV1Subject(kind="ServiceAccount", name="default", namespace="default")]))
    assert binding.role_ref.name == "system:reader"
    cluster_role = await rbac.create_cluster_role(client.V1ClusterRole(
        metadata=client.V1ObjectMeta(name="karmada:view"),
        rules=[client.V1PolicyRule(api_groups=["work.karmada.io"], resources=["*"], verbs=["get"])]))
    assert cluster_role.metadata.namespace is None
    roles = await rbac.list_namespaced_role("default")
    assert [r.metadata.name for r in roles.items] == ["system:reader"]
    await rbac.delete_namespaced_role("system:reader", "default")
    assert (await rbac.list_namespaced_role("default")).items == []

    coordination = client.CoordinationV1Api(api)
    lease = await coordination.create_namespaced_lease("kube-system", client.V1Lease(
        metadata=client.V1ObjectMeta(name="leader"),
        spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15)))
    lease.spec.holder_identity = "b"
    renewed = await coordination.replace_namespaced_lease("leader", "kube-system", lease)
    assert renewed.spec.holder_identity == "b"
    lease.spec.holder_identity = "c"  # stale: the lease moved on
    with pytest.raises(ApiException) as err:
        await coordination.replace_namespaced_lease("leader", "kube-system", lease)
    assert err.value.status == 409


async def test_deployment_scale_subresource(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    apps = client.AppsV1Api(api)
    await apps.create_namespaced_deployment("default", deployment("web", replicas=2))
    scale = await apps.read_namespaced_deployment_scale("web", "default")
    assert scale.spec.replicas == 2
    scale.spec.replicas = 5
    await apps.replace_namespaced_deployment_scale("web", "default", scale)
    await apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 6}})
    stored = await get(http, deploy_path(name="web"))
    assert stored["spec"]["replicas"] == 6
    assert stored["metadata"]["generation"] == 3


async def test_syntactically_broken_scale_patch_is_bad_request(api: client.ApiClient,
                                                               http: aiohttp.ClientSession) -> None:
    await client.AppsV1Api(api).create_namespaced_deployment("default", deployment("web", replicas=2))
    reply = await call(http, "PATCH", deploy_path(name="web") + "/scale", data=b"{bad",
                       ctype="application/merge-patch+json")
    status_of(reply, 400, "BadRequest", "invalid character 'b' looking for beginning of object key string")
    assert (await get(http, deploy_path(name="web")))["spec"]["replicas"] == 2


async def test_delete_missing_is_not_found(http: aiohttp.ClientSession) -> None:
    status_of(await call(http, "DELETE", cm_path(name="x")), 404, "NotFound", 'configmaps "x" not found')
    status_of(await call(http, "DELETE", wr_path("x")), 404, "NotFound",
              'workloadrebalancers.apps.karmada.io "x" not found')


async def test_delete_collection_answers_the_deleted_objects(http: aiohttp.ClientSession) -> None:
    for name, tier in [("a", "web"), ("b", "web"), ("c", "db")]:
        await create(http, cm_path(), cm(name, labels={"tier": tier}))
    reply = await call(http, "DELETE", cm_path(), params={"labelSelector": "tier=web"})
    assert reply.status == 200
    assert reply.body["kind"] == "ConfigMapList"
    assert {i["metadata"]["name"] for i in reply.body["items"]} == {"a", "b"}
    assert await names(http, cm_path()) == {"c"}


@pytest.mark.parametrize(("path", "message", "details"), [
    (cm_path(name="x"), 'configmaps "x" not found', {"name": "x", "kind": "configmaps"}),
    (deploy_path(name="x"), 'deployments.apps "x" not found', {"name": "x", "group": "apps", "kind": "deployments"}),
    (rb_path(name="x"), 'resourcebindings.work.karmada.io "x" not found',
     {"name": "x", "group": RB_GROUP, "kind": "resourcebindings"}),
    (wr_path("x"), 'workloadrebalancers.apps.karmada.io "x" not found',
     {"name": "x", "group": WR_GROUP, "kind": "workloadrebalancers"}),
])
async def test_get_missing_is_not_found_status(http: aiohttp.ClientSession, path: str, message: str,
                                               details: dict[str, str]) -> None:
    reply = await call(http, "GET", path)
    assert status_of(reply, 404, "NotFound", message) == details


# ------------------------------------------------------------------------------------ 2. PATCH


async def test_merge_patch_null_deletes_maps_merge(http: aiohttp.ClientSession) -> None:
    await create(http, cm_path(), cm("a", {"keep": "1", "drop": "2"}, labels={"x": "1"}))
    reply = await call(http, "PATCH", cm_path(name="a"),
                       {"data": {"drop": None, "new": "3"}, "metadata": {"labels": {"y": "2"}}}, ctype=MERGE)
    assert reply.status == 200
    stored = await get(http, cm_path(name="a"))
    assert stored["data"] == {"keep": "1", "new": "3"}
    assert stored["metadata"]["labels"] == {"x": "1", "y": "2"}


async def test_merge_patch_replaces_lists_whole(http: aiohttp.ClientSession) -> None:
    await create(http, deploy_path(), deployment("web"))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}}
    reply = await call(http, "PATCH", deploy_path(name="web"), patch, ctype=MERGE)
    assert reply.status == 200
    containers = (await get(http, deploy_path(name="web")))["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"], "env" in c) for c in containers] == [("app", "nginx:2", False)]


async def test_json_patch_applies_ops_in_order(http: aiohttp.ClientSession) -> None:
    await create(http, cm_path(), cm("a", {"k": "v"}))
    ops = [{"op": "add", "path": "/data/n", "value": "1"},
           {"op": "replace", "path": "/data/n", "value": "2"},
           {"op": "test", "path": "/data/n", "value": "2"},
           {"op": "copy", "from": "/data/n", "path": "/data/m"},
           {"op": "remove", "path": "/data/k"}]
    reply = await call(http, "PATCH", cm_path(name="a"), ops, ctype=JSON_PATCH)
    assert reply.status == 200, reply.body
    assert (await get(http, cm_path(name="a")))["data"] == {"n": "2", "m": "2"}


@pytest.mark.parametrize("ops", [
    [{"op": "add", "path": "/data/n", "value": "1"}, {"op": "test", "path": "/data/k", "value": "other"}],
    [{"op": "add", "path": "/data/n", "value": "1"}, {"op": "remove", "path": "/data/missing"}],
], ids=["failing-test", "remove-missing"])
async def test_json_patch_failure_is_invalid_and_stores_nothing(http: aiohttp.ClientSession,
                                                                ops: list[dict[str, Any]]) -> None:
    before = await create(http, cm_path(), cm("a", {"k": "v"}))
    reply = await call(http, "PATCH", cm_path(name="a"), ops, ctype=JSON_PATCH)
    details = status_of(reply, 422, "Invalid", "the server rejected our request due to an error in our request")
    assert details == {}
    assert await get(http, cm_path(name="a")) == before


async def test_json_patch_failure_on_custom_resource_stores_nothing(http: aiohttp.ClientSession) -> None:
    before = await create(http, rb_path(), rb("a"))
    ops = [{"op": "replace", "path": "/spec/replicas", "value": 9},
           {"op": "test", "path": "/spec/replicas", "value": 1}]
    reply = await call(http, "PATCH", rb_path(name="a"), ops, ctype=JSON_PATCH)
    status_of(reply, 422, "Invalid", "the server rejected our request due to an error in our request")
    assert await get(http, rb_path(name="a")) == before


async def test_syntactically_broken_json_patch_is_bad_request(http: aiohttp.ClientSession) -> None:
    before = await create(http, cm_path(), cm("a"))
    reply = await call(http, "PATCH", cm_path(name="a"), data=b"[{bad", ctype=JSON_PATCH)
    status_of(reply, 400, "BadRequest", "invalid character 'b' looking for beginning of object key string")
    assert await get(http, cm_path(name="a")) == before


async def test_strategic_merge_patch_merges_containers_by_name(http: aiohttp.ClientSession) -> None:
    await create(http, deploy_path(), deployment("web"))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}}
    reply = await call(http, "PATCH", deploy_path(name="web"), patch, ctype=STRATEGIC)
    assert reply.status == 200, reply.body
    containers = (await get(http, deploy_path(name="web")))["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"], c.get("env")) for c in containers] == [
        ("app", "nginx:2", [{"name": "A", "value": "1"}]),
        ("side", "busybox:1", None),
    ]


async def test_strategic_merge_patch_delete_directive(http: aiohttp.ClientSession) -> None:
    await create(http, deploy_path(), deployment("web"))
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "side", "$patch": "delete"}]}}}}
    reply = await call(http, "PATCH", deploy_path(name="web"), patch, ctype=STRATEGIC)
    assert reply.status == 200, reply.body
    containers = (await get(http, deploy_path(name="web")))["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["app"]
    assert containers[0]["env"] == [{"name": "A", "value": "1"}]


async def test_typed_strategic_patch_keeps_container_env(api: client.ApiClient) -> None:
    apps = client.AppsV1Api(api)
    await apps.create_namespaced_deployment("default", deployment("web"))
    patched = await apps.patch_namespaced_deployment(
        "web", "default", {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:3"}]}}}})
    app = patched.spec.template.spec.containers[0]
    assert (app.name, app.image, app.env[0].name) == ("app", "nginx:3", "A")
    assert len(patched.spec.template.spec.containers) == 2


async def test_strategic_merge_patch_on_custom_resource_is_unsupported(http: aiohttp.ClientSession) -> None:
    before = await create(http, rb_path(), rb("a"))
    reply = await call(http, "PATCH", rb_path(name="a"), {"spec": {"replicas": 3}}, ctype=STRATEGIC)
    status_of(reply, 415, "UnsupportedMediaType",
              "the body of the request was in an unknown format - accepted media types include: "
              "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
    assert await get(http, rb_path(name="a")) == before


@pytest.mark.parametrize("ctype", ["application/json", "text/plain"])
async def test_patch_with_plain_content_type_is_unsupported(http: aiohttp.ClientSession, ctype: str) -> None:
    """A built-in kind's route does not consume the type (go-restful's own 415); a custom resource's handler names
    the types it takes (both as kube-apiserver 1.20 answered, refplane)."""
    before = await create(http, cm_path(), cm("a"))
    reply = await call(http, "PATCH", cm_path(name="a"), {"data": {"k": "x"}}, ctype=ctype)
    assert status_of(reply, 415, "UnsupportedMediaType", "415: Unsupported Media Type") == {}
    binding = await create(http, rb_path(), rb("a"))
    reply = await call(http, "PATCH", rb_path(name="a"), {"spec": {"replicas": 2}}, ctype=ctype)
    status_of(reply, 415, "UnsupportedMediaType",
              "the body of the request was in an unknown format - accepted media types include: "
              "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
    assert await get(http, rb_path(name="a")) == binding
    assert await get(http, cm_path(name="a")) == before


# ------------------------------------------------------------------------------------ 3. resourceVersion


async def test_resource_version_is_one_global_increasing_counter(http: aiohttp.ClientSession) -> None:
    await make_namespace(http, "other")
    versions = [
        (await create(http, cm_path(), cm("a")))["metadata"]["resourceVersion"],
        (await create(http, cm_path("other"), cm("a")))["metadata"]["resourceVersion"],
        (await create(http, rb_path(), rb("a")))["metadata"]["resourceVersion"],
        (await create(http, wr_path(), wr("a")))["metadata"]["resourceVersion"],
        (await create(http, deploy_path("other"), deployment("web")))["metadata"]["resourceVersion"],
        (await call(http, "PATCH", cm_path(name="a"), {"data": {"k": "2"}}, ctype=MERGE)).body["metadata"][
            "resourceVersion"],
        (await call(http, "PATCH", rb_path(name="a"), {"spec": {"replicas": 2}}, ctype=MERGE)).body["metadata"][
            "resourceVersion"],
    ]
    numbers = [int(v) for v in versions]
    assert numbers == sorted(numbers)
    assert len(set(numbers)) == len(numbers)
    # A list's resourceVersion is the current revision, even when the newest write was of another kind.
    for path in (cm_path(), wr_path(), "/api/v1/namespaces"):
        listed = await call(http, "GET", path)
        assert int(listed.body["metadata"]["resourceVersion"]) >= numbers[-1]


async def test_noop_update_and_patch_keep_resource_version(http: aiohttp.ClientSession) -> None:
    created = await create(http, rb_path(), rb("a"))
    rv = created["metadata"]["resourceVersion"]
    reply = await call(http, "PUT", rb_path(name="a"), created)
    assert reply.status == 200
    assert reply.body["metadata"]["resourceVersion"] == rv
    reply = await call(http, "PATCH", rb_path(name="a"), {"spec": {"replicas": 1}}, ctype=MERGE)
    assert reply.status == 200
    assert reply.body["metadata"]["resourceVersion"] == rv
    assert (await get(http, rb_path(name="a")))["metadata"]["resourceVersion"] == rv

    config = await create(http, cm_path(), cm("c"))
    reply = await call(http, "PUT", cm_path(name="c"), config)
    assert reply.status == 200
    assert reply.body["metadata"]["resourceVersion"] == config["metadata"]["resourceVersion"]
    # The next real write still gets a newer resourceVersion.
    reply = await call(http, "PATCH", cm_path(name="c"), {"data": {"k": "new"}}, ctype=MERGE)
    assert int(reply.body["metadata"]["resourceVersion"]) > int(config["metadata"]["resourceVersion"])


# ------------------------------------------------------------------------------------ 4. generation


async def test_custom_resource_generation(http: aiohttp.ClientSession) -> None:
    await create(http, rb_path(), rb("a"))

    async def generation_after(patch: dict[str, Any], sub: str = "") -> int:
        reply = await call(http, "PATCH", rb_path(name="a", sub=sub), patch, ctype=MERGE)
        assert reply.status == 200, reply.body
        generation: int = (await get(http, rb_path(name="a")))["metadata"]["generation"]
        return generation

    assert await generation_after({"metadata": {"labels": {"l": "1"}}}) == 1
    assert await generation_after({"metadata": {"annotations": {"a": "1"}}}) == 1
    assert await generation_after({"metadata": {"finalizers": ["example.com/f"]}}) == 1
    assert await generation_after({"status": {"schedulerObservedGeneration": 1}}, "status") == 1
    assert await generation_after({"spec": {"replicas": 2}}) == 2
    assert await generation_after({"spec": {"replicas": 3}}) == 3


async def test_deployment_generation(http: aiohttp.ClientSession) -> None:
    await create(http, deploy_path(), deployment("web"))
    for patch, sub, expected in [
        ({"metadata": {"labels": {"l": "1"}, "annotations": {"a": "1"}}}, "", 1),
        ({"status": {"replicas": 1}}, "status", 1),
        ({"spec": {"replicas": 2}}, "", 2),
        ({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:2"}]}}}}, "", 3),
    ]:
        reply = await call(http, "PATCH", deploy_path(name="web", sub=sub), patch, ctype=STRATEGIC)
        assert reply.status == 200, reply.body
        assert reply.body["metadata"]["generation"] == expected


async def test_configmap_has_no_generation(http: aiohttp.ClientSession) -> None:
    created = await create(http, cm_path(), cm("a", generation=7))
    assert "generation" not in created["metadata"]
    reply = await call(http, "PATCH", cm_path(name="a"), {"data": {"k": "2"}}, ctype=MERGE)
    assert "generation" not in reply.body["metadata"]
    assert "generation" not in (await get(http, cm_path(name="a")))["metadata"]


async def test_delete_held_by_finalizer_bumps_generation(http: aiohttp.ClientSession) -> None:
    await create(http, rb_path(), rb("a", finalizers=["example.com/hold"]))
    reply = await call(http, "DELETE", rb_path(name="a"))
    assert reply.status == 200
    assert reply.body["metadata"]["generation"] == 2
    assert (await get(http, rb_path(name="a")))["metadata"]["generation"] == 2


# ------------------------------------------------------------------------------------ 5. status subresource


async def test_deployment_status_subresource_isolation(http: aiohttp.ClientSession) -> None:
    created = await create(http, deploy_path(), deployment("web"))
    assert created["status"] == {}

    # Main resource: status is ignored.
    body = dict(created, status={"replicas": 5})
    body["spec"] = dict(created["spec"], replicas=2)
    reply = await call(http, "PUT", deploy_path(name="web"), body)
    assert reply.status == 200
    assert reply.body["status"] == {}
    assert reply.body["spec"]["replicas"] == 2
    reply = await call(http, "PATCH", deploy_path(name="web"), {"status": {"replicas": 5}}, ctype=MERGE)
    assert reply.status == 200
    assert reply.body["status"] == {}

    # /status: spec is ignored, generation left alone.
    current = await get(http, deploy_path(name="web"))
    generation = current["metadata"]["generation"]
    body = dict(current, status={"replicas": 2, "readyReplicas": 2})
    body["spec"] = dict(current["spec"], replicas=9)
    reply = await call(http, "PUT", deploy_path(name="web", sub="status"), body)
    assert reply.status == 200, reply.body
    reply = await call(http, "PATCH", deploy_path(name="web", sub="status"),
                       {"spec": {"replicas": 7}, "status": {"availableReplicas": 2}}, ctype=MERGE)
    assert reply.status == 200, reply.body
    stored = await get(http, deploy_path(name="web"))
    assert stored["spec"]["replicas"] == 2
    assert stored["status"] == {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2}
    assert stored["metadata"]["generation"] == generation


async def test_custom_resource_status_subresource_isolation(http: aiohttp.ClientSession) -> None:
    body = rb("a")
    body["status"] = {"schedulerObservedGeneration": 5}
    created = await create(http, rb_path(), body)
    assert "status" not in created  # dropped on create

    body = dict(created, status={"schedulerObservedGeneration": 1})
    body["metadata"] = dict(created["metadata"], labels={"l": "1"})
    reply = await call(http, "PUT", rb_path(name="a"), body)
    assert reply.status == 200
    assert "status" not in reply.body
    assert reply.body["metadata"]["labels"] == {"l": "1"}
    reply = await call(http, "PATCH", rb_path(name="a"), {"status": {"schedulerObservedGeneration": 1}},
                       ctype=MERGE)
    assert reply.status == 200
    assert "status" not in reply.body

    current = await get(http, rb_path(name="a"))
    body = dict(current, status={"schedulerObservedGeneration": 1})
    body["spec"] = dict(current["spec"], replicas=9)
    reply = await call(http, "PUT", rb_path(name="a", sub="status"), body)
    assert reply.status == 200, reply.body
    reply = await call(http, "PATCH", rb_path(name="a", sub="status"),
                       {"spec": {"replicas": 8}, "status": {"lastScheduledTime": "2026-01-01T00:00:00Z"}},
                       ctype=MERGE)
    assert reply.status == 200, reply.body
    stored = await get(http, rb_path(name="a"))
    assert stored["spec"]["replicas"] == 1
    assert stored["status"] == {"schedulerObservedGeneration": 1, "lastScheduledTime": "2026-01-01T00:00:00Z"}
    assert stored["metadata"]["generation"] == 1


async def test_a_put_of_the_object_keeps_the_stored_status_whether_it_sends_one_or_not(
        http: aiohttp.ClientSession) -> None:
    """With the status subresource the main resource's PUT ignores .status (kube-apiserver v1.20.2 on the
    reference plane answers the same): the product's spec updates leave it out, to save encoding it."""
    await create(http, rb_path(), rb("kept"))
    settled = {"lastScheduledTime": "2026-01-01T00:00:00Z"}
    reply = await call(http, "PATCH", rb_path(name="kept", sub="status"), {"status": settled}, ctype=MERGE)
    assert reply.status == 200
    current = await get(http, rb_path(name="kept"))
    without = {key: value for key, value in current.items() if key != "status"}
    without["spec"] = dict(current["spec"], replicas=4)
    reply = await call(http, "PUT", rb_path(name="kept"), without)
    assert reply.status == 200, reply.body
    assert reply.body["status"] == settled and reply.body["spec"]["replicas"] == 4
    changed = dict(reply.body, status={"lastScheduledTime": "2030-01-01T00:00:00Z"})
    reply = await call(http, "PUT", rb_path(name="kept"), changed)
    assert reply.status == 200, reply.body
    assert (await get(http, rb_path(name="kept")))["status"] == settled


async def test_cluster_scoped_custom_resource_status_subresource(api: client.ApiClient,
                                                                 http: aiohttp.ClientSession) -> None:
    custom = client.CustomObjectsApi(api)
    args = (WR_GROUP, "v1alpha1", "workloadrebalancers", "r")
    body = wr("r")
    body["status"] = {"observedGeneration": 3}
    created = await custom.create_cluster_custom_object(*args[:3], body)
    assert "status" not in created
    patched = await custom.patch_cluster_custom_object_status(
        *args, {"status": {"observedGeneration": 1}, "spec": {"ttlSecondsAfterFinished": 5}},
        _content_type=MERGE)
    assert patched["status"] == {"observedGeneration": 1}
    assert "ttlSecondsAfterFinished" not in patched["spec"]
    assert patched["metadata"]["generation"] == 1
    stored = await get(http, wr_path("r"))
    assert stored["status"] == {"observedGeneration": 1}


# ------------------------------------------------------------------------------------ 6. conflicts


async def test_stale_resource_version_is_conflict(http: aiohttp.ClientSession) -> None:
    created = await create(http, rb_path(), rb("a"))
    reply = await call(http, "PATCH", rb_path(name="a"), {"spec": {"replicas": 2}}, ctype=MERGE)
    assert reply.status == 200
    stale = dict(created)
    stale["spec"] = dict(created["spec"], replicas=3)
    reply = await call(http, "PUT", rb_path(name="a"), stale)
    details = status_of(reply, 409, "Conflict",
                        'Operation cannot be fulfilled on resourcebindings.work.karmada.io "a": the object has '
                        "been modified; please apply your changes to the latest version and try again")
    assert details == {"name": "a", "group": RB_GROUP, "kind": "resourcebindings"}
    assert (await get(http, rb_path(name="a")))["spec"]["replicas"] == 2


async def test_stale_resource_version_typed_client(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    first = await core.create_namespaced_config_map("default", cm("a"))
    await core.patch_namespaced_config_map("a", "default", {"data": {"k": "2"}})
    first.data = {"k": "3"}
    with pytest.raises(ApiException) as err:
        await core.replace_namespaced_config_map("a", "default", first)
    assert err.value.status == 409
    assert json.loads(err.value.body)["reason"] == "Conflict"


@pytest.mark.parametrize(("path", "body", "message", "details"), [
    (cm_path(), cm("a"), 'configmaps "a" already exists', {"name": "a", "kind": "configmaps"}),
    (rb_path(), rb("a"), 'resourcebindings.work.karmada.io "a" already exists',
     {"name": "a", "group": RB_GROUP, "kind": "resourcebindings"}),
    (wr_path(), wr("a"), 'workloadrebalancers.apps.karmada.io "a" already exists',
     {"name": "a", "group": WR_GROUP, "kind": "workloadrebalancers"}),
])
async def test_duplicate_create_is_already_exists(http: aiohttp.ClientSession, path: str, body: dict[str, Any],
                                                  message: str, details: dict[str, str]) -> None:
    first = await create(http, path, body)
    changed = json.loads(json.dumps(body))
    changed["metadata"]["labels"] = {"second": "1"}
    reply = await call(http, "POST", path, changed)
    assert status_of(reply, 409, "AlreadyExists", message) == details
    assert await get(http, f"{path}/a") == first


@pytest.mark.parametrize("kind", ["configmap", "resourcebinding"])
async def test_concurrent_updates_from_one_resource_version(http: aiohttp.ClientSession, kind: str) -> None:
    path, item = (cm_path(), cm_path(name="a")) if kind == "configmap" else (rb_path(), rb_path(name="a"))
    created = await create(http, path, cm("a") if kind == "configmap" else rb("a"))

    def attempt(i: int) -> dict[str, Any]:
        body = json.loads(json.dumps(created))
        if kind == "configmap":
            body["data"] = {"writer": str(i)}
        else:
            body["spec"]["replicas"] = i + 2
        return body

    replies = await asyncio.gather(*(call(http, "PUT", item, attempt(i)) for i in range(20)))
    codes = sorted(r.status for r in replies)
    assert codes == [200] + [409] * 19
    winner = next(r.body for r in replies if r.status == 200)
    assert all(r.body["reason"] == "Conflict" for r in replies if r.status == 409)
    assert await get(http, item) == winner


async def test_custom_resource_put_requires_resource_version(http: aiohttp.ClientSession) -> None:
    created = await create(http, rb_path(), rb("a"))
    body = json.loads(json.dumps(created))
    del body["metadata"]["resourceVersion"]
    body["spec"]["replicas"] = 4
    reply = await call(http, "PUT", rb_path(name="a"), body)
    details = status_of(reply, 422, "Invalid",
                        'ResourceBinding.work.karmada.io "a" is invalid: metadata.resourceVersion: Invalid value: '
                        "0x0: must be specified for an update")
    assert details["kind"] == "ResourceBinding"
    assert details["causes"] == [{"reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
                                  "message": "Invalid value: 0x0: must be specified for an update"}]
    assert await get(http, rb_path(name="a")) == created


async def test_configmap_put_without_resource_version_is_unconditional(http: aiohttp.ClientSession) -> None:
    created = await create(http, cm_path(), cm("a", {"k": "1"}))
    await call(http, "PATCH", cm_path(name="a"), {"data": {"k": "2"}}, ctype=MERGE)
    reply = await call(http, "PUT", cm_path(name="a"), cm("a", {"k": "3"}))
    assert reply.status == 200, reply.body
    stored = await get(http, cm_path(name="a"))
    assert stored["data"] == {"k": "3"}
    assert stored["metadata"]["uid"] == created["metadata"]["uid"]
    assert stored["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]


@pytest.mark.parametrize(("path", "body", "message"), [
    (cm_path(name="a"), cm("a"), 'configmaps "a" not found'),
    (rb_path(name="a"), rb("a"), 'resourcebindings.work.karmada.io "a" not found'),
])
async def test_put_of_missing_object_is_not_found(http: aiohttp.ClientSession, path: str, body: dict[str, Any],
                                                  message: str) -> None:
    body = dict(body, metadata=dict(body["metadata"], resourceVersion="1"))
    reply = await call(http, "PUT", path, body)
    status_of(reply, 404, "NotFound", message)
    assert await gone(http, path)


# ------------------------------------------------------------------------------------ 7. delete preconditions


async def test_delete_preconditions_on_custom_resource(http: aiohttp.ClientSession) -> None:
    created = await create(http, rb_path(), rb("a"))
    uid, rv = created["metadata"]["uid"], created["metadata"]["resourceVersion"]
    wrong_uid = "00000000-0000-0000-0000-000000000000"
    reply = await call(http, "DELETE", rb_path(name="a"), {"preconditions": {"uid": wrong_uid}})
    details = status_of(reply, 409, "Conflict",
                        f'Operation cannot be fulfilled on ResourceBinding.work.karmada.io "a": the UID in the '
                        f"precondition ({wrong_uid}) does not match the UID in record ({uid}). The object might "
                        f"have been deleted and then recreated")
    assert details == {"name": "a", "group": RB_GROUP, "kind": "ResourceBinding"}

    reply = await call(http, "DELETE", rb_path(name="a"), {"preconditions": {"resourceVersion": "1"}})
    status_of(reply, 409, "Conflict",
              f'Operation cannot be fulfilled on ResourceBinding.work.karmada.io "a": the ResourceVersion in the '
              f"precondition (1) does not match the ResourceVersion in record ({rv}). The object might have been "
              f"modified")
    assert await get(http, rb_path(name="a")) == created

    reply = await call(http, "DELETE", rb_path(name="a"),
                       {"kind": "DeleteOptions", "apiVersion": "v1",
                        "preconditions": {"uid": uid, "resourceVersion": rv}})
    assert reply.status == 200
    assert reply.body["status"] == "Success"
    assert await gone(http, rb_path(name="a"))


async def test_delete_preconditions_on_configmap(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    created = await create(http, cm_path(), cm("a"))
    uid = created["metadata"]["uid"]
    reply = await call(http, "DELETE", cm_path(name="a"), {"preconditions": {"uid": "nope"}})
    details = status_of(reply, 409, "Conflict",
                        f'Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition (nope) does '
                        f"not match the UID in record ({uid}). The object might have been deleted and then "
                        f"recreated")
    assert details == {"name": "a", "kind": "ConfigMap"}
    core = client.CoreV1Api(api)
    status = await core.delete_namespaced_config_map(
        "a", "default", body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid)))
    assert status.status == "Success"
    assert await gone(http, cm_path(name="a"))


# ------------------------------------------------------------------------------------ 8. finalizers


async def test_finalizers_hold_deletion(http: aiohttp.ClientSession) -> None:
    await create(http, rb_path(), rb("a", finalizers=["example.com/hold"]))
    reply = await call(http, "DELETE", rb_path(name="a"))
    assert reply.status == 200
    held = reply.body
    assert held["kind"] == "ResourceBinding"
    assert TIMESTAMP_RE.match(held["metadata"]["deletionTimestamp"])
    assert held["metadata"]["deletionGracePeriodSeconds"] == 0
    assert await get(http, rb_path(name="a")) == held

    # Deleting again changes nothing.
    again = await call(http, "DELETE", rb_path(name="a"))
    assert again.status == 200
    assert again.body["metadata"]["resourceVersion"] == held["metadata"]["resourceVersion"]

    reply = await call(http, "PATCH", rb_path(name="a"),
                       {"metadata": {"finalizers": ["example.com/hold", "other/x"]}}, ctype=MERGE)
    details = status_of(reply, 422, "Invalid",
                        'ResourceBinding.work.karmada.io "a" is invalid: metadata.finalizers: Forbidden: no new '
                        'finalizers can be added if the object is being deleted, found new finalizers '
                        '[]string{"other/x"}')
    assert details["causes"][0]["field"] == "metadata.finalizers"
    assert await get(http, rb_path(name="a")) == held

    reply = await call(http, "PATCH", rb_path(name="a"), {"metadata": {"finalizers": None}}, ctype=MERGE)
    assert reply.status == 200, reply.body
    assert reply.body["metadata"]["resourceVersion"] == held["metadata"]["resourceVersion"]
    assert await gone(http, rb_path(name="a"))


async def test_configmap_finalizer_removed_by_typed_client(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_config_map("default", cm("a", finalizers=["example.com/f1", "example.com/f2"]))
    held = await call(http, "DELETE", cm_path(name="a"))
    assert held.body["kind"] == "ConfigMap"
    assert "generation" not in held.body["metadata"]
    current = await core.read_namespaced_config_map("a", "default")
    assert current.metadata.deletion_timestamp is not None
    current.metadata.finalizers = ["example.com/f2"]
    current = await core.replace_namespaced_config_map("a", "default", current)
    assert current.metadata.finalizers == ["example.com/f2"]
    assert not await gone(http, cm_path(name="a"))
    await core.patch_namespaced_config_map("a", "default", [{"op": "remove", "path": "/metadata/finalizers"}])
    assert await gone(http, cm_path(name="a"))


# ------------------------------------------------------------------------------------ 9. garbage collection


def owned_by(name: str, owner: dict[str, Any]) -> dict[str, Any]:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
           "uid": owner["metadata"]["uid"]}
    return cm(name, ownerReferences=[ref])


async def test_deleting_owner_collects_dependents(http: aiohttp.ClientSession) -> None:
    owner = await create(http, cm_path(), cm("owner"))
    await create(http, cm_path(), owned_by("dep1", owner))
    await create(http, cm_path(), owned_by("dep2", owner))
    await create(http, cm_path(), cm("bystander"))
    reply = await call(http, "DELETE", cm_path(name="owner"))
    assert reply.status == 200

    async def collected() -> bool:
        return await names(http, cm_path()) == {"bystander"}

    await eventually(collected)


async def test_orphan_propagation_keeps_dependents(http: aiohttp.ClientSession) -> None:
    owner = await create(http, cm_path(), cm("owner"))
    await create(http, cm_path(), owned_by("dep1", owner))
    await create(http, cm_path(), owned_by("dep2", owner))
    reply = await call(http, "DELETE", cm_path(name="owner"), {"propagationPolicy": "Orphan"})
    assert reply.status == 200
    assert await gone(http, cm_path(name="owner"))

    # A later background deletion is collected; by then the collector has seen the orphans too.
    other = await create(http, cm_path(), cm("other"))
    await create(http, cm_path(), owned_by("dep3", other))
    await call(http, "DELETE", cm_path(name="other"))

    async def dep3_collected() -> bool:
        return await gone(http, cm_path(name="dep3"))

    await eventually(dep3_collected)
    for name in ("dep1", "dep2"):
        assert "ownerReferences" not in (await get(http, cm_path(name=name)))["metadata"]


async def test_dangling_owner_reference_is_collected(http: aiohttp.ClientSession) -> None:
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "11111111-2222-3333-4444-555555555555"}
    await create(http, cm_path(), cm("orphan", ownerReferences=[ref]))
    await create(http, cm_path(), cm("keeper"))

    async def collected() -> bool:
        return await names(http, cm_path()) == {"keeper"}

    await eventually(collected)


async def test_dependent_with_a_live_owner_survives(http: aiohttp.ClientSession) -> None:
    alive = await create(http, cm_path(), cm("alive"))
    doomed = await create(http, cm_path(), cm("doomed"))
    body = owned_by("shared", alive)
    body["metadata"]["ownerReferences"].append(owned_by("x", doomed)["metadata"]["ownerReferences"][0])
    await create(http, cm_path(), body)
    await create(http, cm_path(), owned_by("sentinel", doomed))
    await call(http, "DELETE", cm_path(name="doomed"))

    async def sentinel_collected() -> bool:
        return await gone(http, cm_path(name="sentinel"))

    await eventually(sentinel_collected)
    assert not await gone(http, cm_path(name="shared"))


async def test_deployment_owning_custom_resource(http: aiohttp.ClientSession) -> None:
    owner = await create(http, deploy_path(), deployment("web"))
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": owner["metadata"]["uid"]}
    await create(http, rb_path(), rb("web-deployment", ownerReferences=[ref]))
    await call(http, "DELETE", deploy_path(name="web"))

    async def collected() -> bool:
        return await gone(http, rb_path(name="web-deployment"))

    await eventually(collected)


# ------------------------------------------------------------------------------------ 10. namespaces


@pytest.mark.parametrize("path", [cm_path("missing-ns"), rb_path("missing-ns")])
async def test_create_in_missing_namespace(http: aiohttp.ClientSession, path: str) -> None:
    body = cm("a") if "configmaps" in path else rb("a", ns="missing-ns")
    reply = await call(http, "POST", path, body)
    details = status_of(reply, 404, "NotFound", 'namespaces "missing-ns" not found')
    assert details == {"name": "missing-ns", "kind": "namespaces"}
    assert await gone(http, "/api/v1/namespaces/missing-ns")


async def test_namespace_deletion_empties_then_removes_it(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="doomed")))
    ns = await get(http, "/api/v1/namespaces/doomed")
    assert ns["status"] == {"phase": "Active"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    await create(http, cm_path("doomed"), cm("a"))
    await create(http, cm_path("doomed"), cm("held", finalizers=["example.com/hold"]))
    await create(http, rb_path("doomed"), rb("b", ns="doomed"))
    await create(http, cm_path(), cm("outside"))

    reply = await call(http, "DELETE", "/api/v1/namespaces/doomed")
    assert reply.status == 200
    assert reply.body["status"]["phase"] == "Terminating"
    assert reply.body["metadata"]["deletionTimestamp"]

    reply = await call(http, "POST", cm_path("doomed"), cm("late"))
    details = status_of(reply, 403, "Forbidden",
                        'configmaps "late" is forbidden: unable to create new content in namespace doomed because it '
                        "is being terminated")
    assert details["kind"] == "configmaps"
    reply = await call(http, "POST", rb_path("doomed"), rb("late", ns="doomed"))
    assert reply.status == 403

    async def emptied() -> bool:
        held = await get(http, cm_path("doomed", "held"))
        return bool(held["metadata"].get("deletionTimestamp")) and \
            await names(http, cm_path("doomed")) == {"held"} and \
            await names(http, rb_path("doomed")) == set()

    await eventually(emptied)
    assert (await get(http, "/api/v1/namespaces/doomed"))["status"]["phase"] == "Terminating"

    await call(http, "PATCH", cm_path("doomed", "held"), {"metadata": {"finalizers": None}}, ctype=MERGE)

    async def removed() -> bool:
        return await gone(http, "/api/v1/namespaces/doomed")

    await eventually(removed)
    assert await names(http, cm_path()) >= {"outside"}
    assert await gone(http, cm_path("doomed", "late"))


# ------------------------------------------------------------------------------------ 11. selectors


async def labelled_configmaps(http: aiohttp.ClientSession) -> None:
    await make_namespace(http, "sel")
    for name, labels in [("a", {"env": "prod", "tier": "web"}), ("b", {"env": "dev"}), ("c", {}),
                         ("d", {"env": "prod", "tier": "db"}), ("e", {"env": "", "tier": "web"})]:
        await create(http, cm_path("sel"), cm(name, labels=labels))


@pytest.mark.parametrize(("selector", "expected"), [
    ("env=prod", {"a", "d"}),
    ("env==prod", {"a", "d"}),
    ("env!=prod", {"b", "c", "e"}),
    ("env in (prod,dev)", {"a", "b", "d"}),
    ("env notin (prod)", {"b", "c", "e"}),
    ("tier", {"a", "d", "e"}),
    ("!tier", {"b", "c"}),
    ("env=prod,tier=web", {"a"}),
    ("env in (prod),tier notin (web)", {"d"}),
    ("env,!tier", {"b"}),
    ("env==", {"e"}),
    ("", {"a", "b", "c", "d", "e"}),
])
async def test_label_selector_operators(api: client.ApiClient, http: aiohttp.ClientSession, selector: str,
                                        expected: set[str]) -> None:
    await labelled_configmaps(http)
    core = client.CoreV1Api(api)
    listed = await core.list_namespaced_config_map("sel", label_selector=selector)
    assert {i.metadata.name for i in listed.items} == expected


async def test_label_selector_on_custom_resources(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    await create(http, rb_path(), rb("a", labels={"app": "x"}))
    await create(http, rb_path(), rb("b", labels={"app": "y"}))
    await create(http, wr_path(), wr("c", labels={"app": "x"}))
    custom = client.CustomObjectsApi(api)
    listed = await custom.list_cluster_custom_object(RB_GROUP, "v1alpha2", "resourcebindings", label_selector="app=x")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a"]
    listed = await custom.list_cluster_custom_object(WR_GROUP, "v1alpha1", "workloadrebalancers",
                                                     label_selector="app notin (x)")
    assert listed["items"] == []


async def test_malformed_label_selector(http: aiohttp.ClientSession) -> None:
    reply = await call(http, "GET", cm_path(), params={"labelSelector": "n in (1,2"})
    status_of(reply, 400, "BadRequest", "unable to parse requirement: found '', expected: ',' or ')'")


async def test_field_selectors_on_configmaps(http: aiohttp.ClientSession) -> None:
    await make_namespace(http, "one")
    await make_namespace(http, "two")
    for ns in ("one", "two"):
        for name in ("a", "b"):
            await create(http, cm_path(ns), cm(name))

    async def pairs(path: str, selector: str) -> set[tuple[str, str]]:
        reply = await call(http, "GET", path, params={"fieldSelector": selector})
        assert reply.status == 200, reply.body
        return {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in reply.body["items"]
                if i["metadata"]["namespace"] in ("one", "two")}

    assert await pairs(cm_path("one"), "metadata.name=a") == {("one", "a")}
    assert await pairs(cm_path("one"), "metadata.name==b") == {("one", "b")}
    assert await pairs(cm_path("one"), "metadata.name!=a") == {("one", "b")}
    everywhere = "/api/v1/configmaps"
    assert await pairs(everywhere, "metadata.name=a") == {("one", "a"), ("two", "a")}
    assert await pairs(everywhere, "metadata.namespace=two") == {("two", "a"), ("two", "b")}
    assert await pairs(everywhere, "metadata.namespace==two,metadata.name!=a") == {("two", "b")}
    assert await pairs(everywhere, "metadata.namespace!=two") == {("one", "a"), ("one", "b")}


async def test_field_selectors_on_custom_resources(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    await make_namespace(http, "one")
    for ns in ("default", "one"):
        for name in ("a", "b"):
            await create(http, rb_path(ns), rb(name, ns=ns))
    await create(http, wr_path(), wr("x"))
    await create(http, wr_path(), wr("y"))
    custom = client.CustomObjectsApi(api)
    listed = await custom.list_namespaced_custom_object(RB_GROUP, "v1alpha2", "one", "resourcebindings",
                                                        field_selector="metadata.name!=a")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in listed["items"]] == [("one", "b")]
    listed = await custom.list_cluster_custom_object(RB_GROUP, "v1alpha2", "resourcebindings",
                                                     field_selector="metadata.namespace==one")
    assert {i["metadata"]["name"] for i in listed["items"]} == {"a", "b"}
    assert {i["metadata"]["namespace"] for i in listed["items"]} == {"one"}
    listed = await custom.list_cluster_custom_object(RB_GROUP, "v1alpha2", "resourcebindings",
                                                     field_selector="metadata.name=b")
    assert {(i["metadata"]["namespace"], i["metadata"]["name"]) for i in listed["items"]} == \
        {("default", "b"), ("one", "b")}
    assert await names(http, wr_path(), fieldSelector="metadata.name=y") == {"y"}
    assert await names(http, wr_path(), fieldSelector="metadata.name!=y") == {"x"}


async def test_pod_field_selectors(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    core = client.CoreV1Api(api)
    for name, node in [("p1", "node-1"), ("p2", "node-2"), ("p3", None)]:
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
        if node:
            spec["nodeName"] = node
        await core.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod",
                                                     "metadata": {"name": name}, "spec": spec})
    await core.patch_namespaced_pod_status("p1", "default", {"status": {"phase": "Running"}})

    async def selected(selector: str) -> set[str]:
        pods = await core.list_namespaced_pod("default", field_selector=selector)
        return {p.metadata.name for p in pods.items}

    assert await selected("spec.nodeName=node-1") == {"p1"}
    assert await selected("spec.nodeName=") == {"p3"}
    assert await selected("spec.nodeName!=node-1") == {"p2", "p3"}
    assert await selected("status.phase=Running") == {"p1"}
    assert await selected("status.phase!=Running") == {"p2", "p3"}
    assert await selected("status.phase=Pending,spec.nodeName=node-2") == {"p2"}
    assert {p.metadata.name for p in (await core.list_pod_for_all_namespaces(
        field_selector="spec.nodeName=node-2")).items} == {"p2"}


@pytest.mark.parametrize(("path", "message"), [
    (cm_path(), '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("/api/v1/configmaps", '"spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    (rb_path(), "field label not supported: spec.foo"),
    (wr_path(), "field label not supported: spec.foo"),
])
async def test_unknown_field_selector(http: aiohttp.ClientSession, path: str, message: str) -> None:
    reply = await call(http, "GET", path, params={"fieldSelector": "spec.foo=bar"})
    status_of(reply, 400, "BadRequest", message)


# ------------------------------------------------------------------------------------ 12. pagination


async def test_pagination_is_a_consistent_snapshot(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    await make_namespace(http, "pages")
    created = [f"c{i:02d}" for i in range(12)]
    for name in created:
        await create(http, cm_path("pages"), cm(name))

    first = await call(http, "GET", cm_path("pages"), params={"limit": "5"})
    assert first.status == 200
    meta = first.body["metadata"]
    rv = meta["resourceVersion"]
    assert [i["metadata"]["name"] for i in first.body["items"]] == created[:5]
    assert meta["remainingItemCount"] == 7
    assert meta["continue"]

    # Changes after the first page do not show in the remaining pages.
    await create(http, cm_path("pages"), cm("c05a"))
    await create(http, cm_path("pages"), cm("zz"))
    await call(http, "DELETE", cm_path("pages", "c09"))
    await call(http, "PATCH", cm_path("pages", "c10"), {"data": {"k": "changed"}}, ctype=MERGE)

    second = await call(http, "GET", cm_path("pages"), params={"limit": "5", "continue": meta["continue"]})
    assert second.status == 200, second.body
    assert second.body["metadata"]["resourceVersion"] == rv
    assert second.body["metadata"]["remainingItemCount"] == 2
    assert [i["metadata"]["name"] for i in second.body["items"]] == created[5:10]

    third = await call(http, "GET", cm_path("pages"),
                       params={"limit": "5", "continue": second.body["metadata"]["continue"]})
    assert third.body["metadata"]["resourceVersion"] == rv
    assert [i["metadata"]["name"] for i in third.body["items"]] == created[10:]
    assert third.body["items"][0]["data"] == {"k": "v"}  # as of the snapshot
    assert not third.body["metadata"].get("continue")
    assert "remainingItemCount" not in third.body["metadata"]

    # The typed client pages the current state.
    core = client.CoreV1Api(api)
    seen: list[str] = []
    token = None
    while True:
        page = await core.list_namespaced_config_map("pages", limit=4, _continue=token)
        seen += [i.metadata.name for i in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert seen == sorted({*created, "c05a", "zz"} - {"c09"})


async def test_pagination_across_namespaces_follows_etcd_key_order(http: aiohttp.ClientSession) -> None:
    """etcd orders by the key string, so namespace "a-b" comes before "a" ("-" < "/"); paging loses nothing."""
    for ns in ("a", "a-b"):
        await make_namespace(http, ns)
    for ns, name in [("a", "x"), ("a", "z"), ("a-b", "y")]:
        reply = await call(http, "POST", cm_path(ns), {"metadata": {"name": name}})
        assert reply.status == 201
    seen: list[str] = []
    token = ""
    for _ in range(10):
        params = {"limit": "1", **({"continue": token} if token else {})}
        page = (await call(http, "GET", "/api/v1/configmaps", params=params)).body
        seen += [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in page["items"]
                 if i["metadata"]["namespace"] in ("a", "a-b")]
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert seen == ["a-b/y", "a/x", "a/z"]


async def test_pagination_with_selector_has_no_remaining_count(http: aiohttp.ClientSession) -> None:
    for i in range(6):
        await create(http, cm_path(), cm(f"c{i}", labels={"even": str(i % 2 == 0).lower()}))
    seen: list[str] = []
    params = {"limit": "2", "labelSelector": "even=true"}
    while True:
        reply = await call(http, "GET", cm_path(), params=params)
        assert reply.status == 200
        assert "remainingItemCount" not in reply.body["metadata"]
        seen += [i["metadata"]["name"] for i in reply.body["items"]]
        token = reply.body["metadata"].get("continue")
        if not token:
            break
        params["continue"] = token
    assert seen == ["c0", "c2", "c4"]


async def test_custom_resource_pagination(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    for i in range(5):
        await create(http, wr_path(), wr(f"r{i}"))
    custom = client.CustomObjectsApi(api)
    page = await custom.list_cluster_custom_object(WR_GROUP, "v1alpha1", "workloadrebalancers", limit=3)
    assert [i["metadata"]["name"] for i in page["items"]] == ["r0", "r1", "r2"]
    assert page["metadata"]["remainingItemCount"] == 2
    rest = await custom.list_cluster_custom_object(WR_GROUP, "v1alpha1", "workloadrebalancers", limit=3,
                                                   _continue=page["metadata"]["continue"])
    assert [i["metadata"]["name"] for i in rest["items"]] == ["r3", "r4"]
    assert rest["metadata"]["continue"] == ""
    assert rest["metadata"]["resourceVersion"] == page["metadata"]["resourceVersion"]


@pytest.mark.parametrize("token", ["garbage!!", base64.urlsafe_b64encode(b'{"v":"other"}').decode(), "e30"])
async def test_garbage_continue_token(http: aiohttp.ClientSession, token: str) -> None:
    reply = await call(http, "GET", cm_path(), params={"limit": "1", "continue": token})
    assert reply.status == 400
    assert reply.body["reason"] == "BadRequest"
    assert reply.body["message"].startswith("invalid continue token")


def _invalid_options(kind: str, field: str, reason: str, message: str) -> tuple[int, str, str, dict[str, Any]]:
    return (422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: {field}: {message}',
            {"group": "meta.k8s.io", "kind": kind, "causes": [{"reason": reason, "message": message, "field": field}]})


_RV_NOT_A_NUMBER = 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax'


@pytest.mark.parametrize("case", [  # (method, path, query, body, answer), each as kube-apiserver 1.20 answered
    ("POST", cm_path(), {"dryRun": "Some"}, cm("dry"), _invalid_options(
        "CreateOptions", "dryRun", "FieldValueNotSupported", 'Unsupported value: []string{"Some"}: supported values: '
                                                             '"All"')),
    ("PUT", cm_path(name="existing"), {"dryRun": "x"}, cm("existing"), _invalid_options(
        "UpdateOptions", "dryRun", "FieldValueNotSupported", 'Unsupported value: []string{"x"}: supported values: '
                                                             '"All"')),
    ("DELETE", cm_path(name="existing"), {"dryRun": "x"}, None, _invalid_options(
        "DeleteOptions", "dryRun", "FieldValueNotSupported", 'Unsupported value: []string{"x"}: supported values: '
                                                             '"All"')),
    ("GET", cm_path(), {"resourceVersionMatch": "Exact"}, None, _invalid_options(
        "ListOptions", "resourceVersionMatch", "FieldValueForbidden",
        "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")),
    ("GET", cm_path(), {"resourceVersion": "0", "resourceVersionMatch": "Exact"}, None, _invalid_options(
        "ListOptions", "resourceVersionMatch", "FieldValueForbidden",
        'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"')),
    ("GET", cm_path(), {"resourceVersion": "1", "resourceVersionMatch": "Bogus"}, None, _invalid_options(
        "ListOptions", "resourceVersionMatch", "FieldValueNotSupported",
        'Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""')),
    ("GET", cm_path(), {"resourceVersion": "1", "resourceVersionMatch": "NotOlderThan", "continue": "abc"}, None,
     _invalid_options("ListOptions", "resourceVersionMatch", "FieldValueForbidden",
                      "Forbidden: resourceVersionMatch is forbidden when continue is provided")),
    ("GET", cm_path(), {"watch": "true", "resourceVersion": "1", "resourceVersionMatch": "NotOlderThan"}, None,
     _invalid_options("ListOptions", "resourceVersionMatch", "FieldValueForbidden",
                      "Forbidden: resourceVersionMatch is forbidden for watch")),
    ("GET", cm_path(name="existing"), {"resourceVersion": "abc"}, None, (500, None, _RV_NOT_A_NUMBER, None)),
    ("GET", cm_path(), {"resourceVersion": "abc"}, None, (500, None, _RV_NOT_A_NUMBER, None)),
    ("GET", cm_path(), {"watch": "true", "resourceVersion": "abc"}, None, (500, None, _RV_NOT_A_NUMBER, None)),
    ("GET", cm_path(), {"limit": "abc"}, None,
     (400, "BadRequest", 'strconv.ParseInt: parsing "abc": invalid syntax', None)),
    ("GET", cm_path(), {"watch": "true", "timeoutSeconds": "abc"}, None,
     (400, "BadRequest", 'strconv.ParseInt: parsing "abc": invalid syntax', None)),
    ("GET", cm_path(), {"limit": "1", "continue": "garbage"}, None, (400, "BadRequest", (
        "invalid continue token: continue key is not valid: invalid character '\\u0081' looking for beginning of "
        "value"), None)),
    ("GET", cm_path(), {"limit": "1", "continue": "!!"}, None, (400, "BadRequest", (
        "invalid continue token: continue key is not valid: illegal base64 data at input byte 0"), None)),
    ("GET", cm_path(), {"limit": "1", "continue": "MTIz"}, None, (400, "BadRequest", (
        "invalid continue token: continue key is not valid: json: cannot unmarshal number into Go value of type "
        "etcd3.continueToken"), None)),
    ("GET", cm_path(), {"limit": "1", "continue": "eyJ2IjoieCIsInJ2IjoxLCJzdGFydCI6ImEifQ"}, None, (
        400, "BadRequest", 'invalid continue token: continue key is not valid: server does not recognize this '
                           'encoded version "x"', None)),
    ("POST", cm_path(), {}, {**cm("withrv"), "metadata": {"name": "withrv", "resourceVersion": "12"}},
     (500, None, "resourceVersion should not be set on objects to be created", None)),
    ("GET", cm_path(), {"resourceVersionMatch": "Bogus"}, None, (
        422, "Invalid", 'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch '
                        'is forbidden unless resourceVersion is provided, resourceVersionMatch: Unsupported value: '
                        '"Bogus": supported values: "Exact", "NotOlderThan", ""]',
        {"group": "meta.k8s.io", "kind": "ListOptions", "causes": [
            {"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
             "message": "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"},
            {"reason": "FieldValueNotSupported", "field": "resourceVersionMatch",
             "message": 'Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""'}]})),
    ("GET", cm_path(), {"limit": "1", "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiJhIn0"}, None, (
        400, "BadRequest", "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion "
                           "(version meta.k8s.io/v1)", None)),
    ("DELETE", cm_path(name="existing"), {}, {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["x"]},
     _invalid_options("DeleteOptions", "dryRun", "FieldValueNotSupported",
                      'Unsupported value: []string{"x"}: supported values: "All"')),
    ("POST", deploy_path(), {}, {**deployment("v2"), "apiVersion": "apps/v2"}, (
        400, "BadRequest", 'Deployment in version "v2" cannot be handled as a Deployment: no kind "Deployment" is '
                           'registered for version "apps/v2" in scheme "pkg/api/legacyscheme/scheme.go:30"', None)),
    ("POST", deploy_path(), {}, {**deployment("v1b1"), "apiVersion": "apps/v1beta1"}, (
        400, "BadRequest", "the API version in the data (apps/v1beta1) does not match the expected API version "
                           "(apps/v1)", None)),
])
async def test_refused_parameters_and_bodies_answer_as_kube_does_and_change_nothing(
        http: aiohttp.ClientSession, existing: dict[str, Any], case: tuple[Any, ...]) -> None:
    """Each row as the refplane's kube-apiserver 1.20 answered it (500s included: kube answers these so)."""
    method, path, params, body, (code, reason, message, details) = case
    reply = await call(http, method, path, body, params=params)
    assert status_of(reply, code, reason, message) == (details or {})
    await assert_configmaps_untouched(http, existing)


_QUALIFIED = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
              "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
              "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
_NOT_STANDARD = "name is neither a standard finalizer name nor is it fully qualified"


@pytest.mark.parametrize(("path", "finalizers", "causes"), [  # as kube-apiserver 1.20 answered (refplane)
    (cm_path(), ["Bad Finalizer"], [("metadata.finalizers", f'Invalid value: "Bad Finalizer": {_QUALIFIED}'),
                                    ("metadata.finalizers[0]", f'Invalid value: "Bad Finalizer": {_NOT_STANDARD}')]),
    (cm_path(), ["nodomain"], [("metadata.finalizers[0]", f'Invalid value: "nodomain": {_NOT_STANDARD}')]),
    (cm_path(), ["kubernetes", "orphan", "foregroundDeletion"], [(
        "metadata.finalizers", 'Invalid value: []string{"kubernetes", "orphan", "foregroundDeletion"}: finalizer '
                               "orphan and foregroundDeletion cannot be both set")]),
    (wr_path(), ["nodomain", "Bad X"], [("metadata.finalizers", f'Invalid value: "Bad X": {_QUALIFIED}')]),
])
async def test_finalizer_names_are_validated_as_kube_does(http: aiohttp.ClientSession, path: str,
                                                          finalizers: list[str],
                                                          causes: list[tuple[str, str]]) -> None:
    """Every kind: qualified names, not both orphan and foregroundDeletion; built-in kinds: a name without a "/" is
    a standard one. Nothing is stored."""
    body = wr("fin") if path == wr_path() else cm("fin")
    body["metadata"]["finalizers"] = finalizers
    reply = await call(http, "POST", path, body)
    assert reply.status == 422, reply.body
    assert [(c["field"], c["message"]) for c in reply.body["details"]["causes"]] == causes
    assert await gone(http, f"{path}/fin")


async def test_a_delete_takes_its_dry_run_from_its_body(http: aiohttp.ClientSession,
                                                         existing: dict[str, Any]) -> None:
    """With a DeleteOptions body (client-go's way) kube reads dryRun there and ignores the query (refplane)."""
    reply = await call(http, "DELETE", cm_path(name="existing"),
                       {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}, params={"dryRun": "bogus"})
    assert reply.status == 200, reply.body
    await assert_configmaps_untouched(http, existing)


async def test_a_create_may_carry_resource_version_0(http: aiohttp.ClientSession) -> None:
    """etcd3 refuses only a resourceVersion that parses to a number other than 0 (refplane: 201)."""
    reply = await call(http, "POST", cm_path(), {**cm("zero"), "metadata": {"name": "zero", "resourceVersion": "0"}})
    assert reply.status == 201, reply.body


async def test_an_update_lists_a_built_in_objects_finalizer_causes_twice(http: aiohttp.ClientSession,
                                                                         existing: dict[str, Any]) -> None:
    """kube validates them twice on update and keeps both lists of causes; its message shows each once (refplane)."""
    reply = await call(http, "PATCH", cm_path(name="existing"), {"metadata": {"finalizers": ["nodomain"]}},
                       ctype="application/merge-patch+json")
    cause = f'Invalid value: "nodomain": {_NOT_STANDARD}'
    details = status_of(reply, 422, "Invalid", f'ConfigMap "existing" is invalid: metadata.finalizers[0]: {cause}')
    assert [(c["field"], c["message"]) for c in details["causes"]] == [("metadata.finalizers[0]", cause)] * 2
    await assert_configmaps_untouched(http, existing)


async def test_a_dry_run_create_may_carry_a_resource_version(http: aiohttp.ClientSession) -> None:
    """Only storage refuses a create's resourceVersion, and a dry run stores nothing (refplane: 201)."""
    reply = await call(http, "POST", cm_path(), {**cm("dry"), "metadata": {"name": "dry", "resourceVersion": "5"}},
                       params={"dryRun": "All"})
    assert reply.status == 201, reply.body
    assert await gone(http, cm_path(name="dry"))


# ------------------------------------------------------------------------------------ 13. bad input


async def assert_configmaps_untouched(http: aiohttp.ClientSession, before: dict[str, Any]) -> None:
    assert await names(http, cm_path()) == {"existing"}
    assert await get(http, cm_path(name="existing")) == before


@pytest.fixture
async def existing(http: aiohttp.ClientSession) -> dict[str, Any]:
    return await create(http, cm_path(), cm("existing"))


async def test_truncated_json_create(http: aiohttp.ClientSession, existing: dict[str, Any]) -> None:
    reply = await call(http, "POST", cm_path(), data=b'{"apiVersion":')
    status_of(reply, 400, "BadRequest",
              "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json "
              'parse error: unexpected end of JSON input ({"apiVersion":)')
    await assert_configmaps_untouched(http, existing)


async def test_truncated_json_update(http: aiohttp.ClientSession, existing: dict[str, Any]) -> None:
    text = json.dumps(dict(existing, data={"k": "new"}))
    reply = await call(http, "PUT", cm_path(name="existing"), data=text[: len(text) // 2].encode())
    assert reply.status == 400
    assert reply.body["message"].startswith("the object provided is unrecognized (must be of type ConfigMap): "
                                            "couldn't get version/kind; json parse error: unexpected end of JSON "
                                            "input")
    await assert_configmaps_untouched(http, existing)


async def test_truncated_json_custom_resource(http: aiohttp.ClientSession) -> None:
    reply = await call(http, "POST", rb_path(), data=b'{"apiVersion":')
    status_of(reply, 400, "BadRequest",
              "the object provided is unrecognized (must be of type ResourceBinding): couldn't get version/kind; "
              'json parse error: unexpected end of JSON input ({"apiVersion":)')
    assert await names(http, rb_path()) == set()


async def test_unknown_core_resource(http: aiohttp.ClientSession) -> None:
    reply = await call(http, "GET", "/api/v1/namespaces/default/widgets")
    assert status_of(reply, 404, "NotFound", "the server could not find the requested resource") == {}
    assert reply.body["details"] == {}
    reply = await call(http, "POST", "/api/v1/namespaces/default/widgets", cm("a"))
    assert reply.status == 404


@pytest.mark.parametrize("path", [
    "/apis/nope.example.com/v1/widgets",
    "/apis/apps/v9/deployments",
    f"/apis/{RB_GROUP}/v1alpha2/namespaces/default/widgets",
    "/apis/nope.example.com",
])
async def test_unknown_group_version_or_resource_is_plain_404(http: aiohttp.ClientSession, path: str) -> None:
    reply = await call(http, "GET", path)
    assert reply.status == 404
    assert reply.content_type == "text/plain"
    assert reply.body.strip() == "404 page not found"


async def test_body_over_limit(http: aiohttp.ClientSession, existing: dict[str, Any]) -> None:
    huge = cm("huge", {"blob": "x" * (3 * 1024 * 1024 + 10)})
    reply = await call(http, "POST", cm_path(), huge)
    assert reply.status == 413
    assert reply.body["message"] == "Request entity too large: limit is 3145728"
    assert reply.body["reason"] == "RequestEntityTooLarge"
    assert reply.body["code"] == 413
    reply = await call(http, "PUT", cm_path(name="existing"), dict(existing, data=huge["data"]))
    assert reply.status == 413
    await assert_configmaps_untouched(http, existing)


async def test_secret_body_on_configmaps(http: aiohttp.ClientSession, existing: dict[str, Any]) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {}}
    reply = await call(http, "POST", cm_path(), secret)
    status_of(reply, 400, "BadRequest", 'Secret in version "v1" cannot be handled as a ConfigMap: converting '
                                        "(v1.Secret) to (core.ConfigMap): unknown conversion")
    reply = await call(http, "PUT", cm_path(name="existing"), dict(existing, kind="Secret"))
    assert reply.status == 400
    await assert_configmaps_untouched(http, existing)
    assert await gone(http, "/api/v1/namespaces/default/secrets/s")


async def test_wrong_api_version_on_custom_resource(http: aiohttp.ClientSession) -> None:
    body = rb("a")
    body["apiVersion"] = "apps/v1"
    reply = await call(http, "POST", rb_path(), body)
    status_of(reply, 400, "BadRequest", "the API version in the data (apps/v1) does not match the expected API "
                                        "version (work.karmada.io/v1alpha2)")
    assert await names(http, rb_path()) == set()


async def test_other_kind_of_same_group_on_custom_resource(http: aiohttp.ClientSession) -> None:
    body = rb("a")
    body["kind"] = "Work"
    reply = await call(http, "POST", rb_path(), body)
    details = status_of(reply, 422, "Invalid",  # kube names the object by the kind its body gave (refplane)
                        'Work.work.karmada.io "a" is invalid: kind: Invalid value: "Work": must be ResourceBinding')
    assert details["causes"][0]["field"] == "kind" and details["kind"] == "Work"
    assert await names(http, rb_path()) == set()
    assert await names(http, f"/apis/{RB_GROUP}/v1alpha1/namespaces/default/works") == set()


async def test_namespace_mismatch(http: aiohttp.ClientSession, existing: dict[str, Any]) -> None:
    message = "the namespace of the provided object does not match the namespace sent on the request"
    reply = await call(http, "POST", cm_path(), cm("new", namespace="kube-system"))
    status_of(reply, 400, "BadRequest", message)
    body = dict(existing, metadata=dict(existing["metadata"], namespace="kube-system"), data={"k": "x"})
    reply = await call(http, "PUT", cm_path(name="existing"), body)
    status_of(reply, 400, "BadRequest", message)
    await assert_configmaps_untouched(http, existing)
    assert await names(http, cm_path("kube-system")) == set()


async def test_name_mismatch_on_put(http: aiohttp.ClientSession, existing: dict[str, Any]) -> None:
    body = dict(existing, metadata=dict(existing["metadata"], name="r"), data={"k": "x"})
    reply = await call(http, "PUT", cm_path(name="existing"), body)
    status_of(reply, 400, "BadRequest", "the name of the object (r) does not match the name on the URL (existing)")
    await assert_configmaps_untouched(http, existing)

    created = await create(http, rb_path(), rb("zz"))
    body = dict(created, metadata=dict(created["metadata"], name="r"))
    reply = await call(http, "PUT", rb_path(name="zz"), body)
    status_of(reply, 400, "BadRequest", "the name of the object (r) does not match the name on the URL (zz)")
    assert await get(http, rb_path(name="zz")) == created


async def test_post_with_text_plain(http: aiohttp.ClientSession, existing: dict[str, Any]) -> None:
    reply = await call(http, "POST", cm_path(), cm("new"), ctype="text/plain")
    status_of(reply, 415, "UnsupportedMediaType",
              "the body of the request was in an unknown format - accepted media types include: application/json, "
              "application/yaml, application/vnd.kubernetes.protobuf")
    await assert_configmaps_untouched(http, existing)


async def test_yaml_body_is_accepted(http: aiohttp.ClientSession) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n"
    reply = await call(http, "POST", cm_path(), data=body, ctype="application/yaml")
    assert reply.status == 201, reply.body
    assert (await get(http, cm_path(name="from-yaml")))["data"] == {"k": "v"}


async def test_configmap_over_one_mebibyte_is_invalid(http: aiohttp.ClientSession,
                                                      existing: dict[str, Any]) -> None:
    big = {"a": "x" * (1024 * 1024), "b": "y"}
    reply = await call(http, "POST", cm_path(), cm("big", big))
    details = status_of(reply, 422, "Invalid",
                        'ConfigMap "big" is invalid: []: Too long: must have at most 1048576 bytes')
    assert details["causes"] == [{"reason": "FieldValueTooLong", "field": "[]",
                                  "message": "Too long: must have at most 1048576 bytes"}]
    reply = await call(http, "PATCH", cm_path(name="existing"), {"data": big}, ctype=MERGE)
    assert reply.status == 422
    await assert_configmaps_untouched(http, existing)
    reply = await call(http, "POST", cm_path(), cm("fits", {"a": "x" * (1024 * 1024)}))
    assert reply.status == 201


async def test_nan_is_a_json_syntax_error(http: aiohttp.ClientSession, existing: dict[str, Any]) -> None:
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"nan"},"data":{"k":NaN}}'
    reply = await call(http, "POST", cm_path(), data=body)
    assert reply.status == 400, reply.body
    assert reply.body["message"].startswith("the object provided is unrecognized (must be of type ConfigMap): "
                                            "couldn't get version/kind; json parse error: invalid character 'N' "
                                            "looking for beginning of value")
    reply = await call(http, "PATCH", cm_path(name="existing"), data=b'{"data":{"k":Infinity}}', ctype=MERGE)
    status_of(reply, 400, "BadRequest", "invalid character 'I' looking for beginning of value")
    await assert_configmaps_untouched(http, existing)


async def test_wrong_value_type_in_builtin_is_decode_error(http: aiohttp.ClientSession,
                                                           existing: dict[str, Any]) -> None:
    reply = await call(http, "POST", cm_path(), {"apiVersion": "v1", "kind": "ConfigMap",
                                                 "metadata": {"name": "bad"}, "data": {"k": 1}})
    assert reply.status == 400, reply.body
    assert reply.body["reason"] == "BadRequest"
    assert reply.body["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot '
                                     "unmarshal number into Go struct field ConfigMap.data of type string")
    await assert_configmaps_untouched(http, existing)


@pytest.mark.parametrize(("body", "message"), [
    ({"metadata": {"name": "bad", "labels": {"a": 1}}},
     "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"),
    ({"metadata": {"name": "bad"}, "spec": {"replicas": "3"}},
     "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ({"metadata": {"name": "bad"}, "spec": {"replicas": 1.5}},
     "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ({"metadata": {"name": "bad"}, "spec": {"replicas": 2.0}},
     "json: cannot unmarshal number 2.0 into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ({"metadata": {"name": "bad"}, "spec": "three"},
     "json: cannot unmarshal string into Go struct field Deployment.spec of type v1.DeploymentSpec"),
    ({"metadata": {"name": "bad"}, "spec": {"template": {"spec": {"containers": [{"name": ["c"]}]}}}},
     "json: cannot unmarshal array into Go struct field Container.spec.template.spec.containers.name of type "
     "string"),
])
async def test_a_wrong_type_anywhere_in_a_deployment_is_refused_before_validation(
        http: aiohttp.ClientSession, body: dict[str, Any], message: str) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments"
    async with http.post(path, json=body) as r:
        assert r.status == 400, await r.text()
        reply = await r.json()
    assert reply["reason"] == "BadRequest"
    assert reply["message"] == f'Deployment in version "v1" cannot be handled as a Deployment: {message}'
    async with http.get(f"{path}/bad") as r:
        assert r.status == 404  # nothing stored


SMP = "application/strategic-merge-patch+json"


@pytest.mark.parametrize(("patch", "shown", "error"), [  # each as kube-apiserver 1.20 answered it (refplane)
    ({"spec": {"replicas": "3"}}, "map[spec:map[replicas:3]]", "unrecognized type: int32"),
    ({"spec": {"replicas": 1.5}}, "map[spec:map[replicas:1.5]]", "cannot convert float64 to int32"),
    ({"spec": {"paused": 1}}, "map[spec:map[paused:1]]", "unrecognized type: bool"),
    ({"metadata": {"labels": {"a": 1}}}, "map[metadata:map[labels:map[a:1]]]", "cannot convert int64 to string"),
    ({"metadata": {"labels": {"a": 1.5}}}, "map[metadata:map[labels:map[a:1.5]]]", "unrecognized type: string"),
    ({"metadata": {"labels": "x"}}, "map[metadata:map[labels:x]]", "cannot restore map from string"),
    ({"spec": {"strategy": "x"}}, "map[spec:map[strategy:x]]", "cannot restore struct from: string"),
    ({"spec": {"template": {"spec": {"containers": "x"}}}}, "map[spec:map[template:map[spec:map[containers:x]]]]",
     "cannot restore slice from string"),
    ({"spec": {"strategy": {"rollingUpdate": {"maxSurge": True}}}},
     "map[spec:map[strategy:map[rollingUpdate:map[maxSurge:true]]]]",
     "json: cannot unmarshal bool into Go value of type int32"),
])
async def test_a_strategic_merge_patch_to_a_wrong_type_is_refused_and_nothing_stored(
        http: aiohttp.ClientSession, patch: dict[str, Any], shown: str, error: str) -> None:
    before = await create(http, deploy_path(), deployment("typed"))
    reply = await call(http, "PATCH", deploy_path(name="typed"), patch, ctype=SMP)
    message = f'Invalid value: "{shown}": {error}'
    details = status_of(reply, 422, "Invalid", f' "" is invalid: patch: {message}')
    assert details == {"causes": [{"reason": "FieldValueInvalid", "message": message, "field": "patch"}]}
    assert (await get(http, deploy_path(name="typed"))) == before


@pytest.mark.parametrize(("ctype", "patch"), [
    ("application/merge-patch+json", {"spec": {"replicas": "3", "paused": False}}),
    ("application/json-patch+json", [{"op": "replace", "path": "/spec/replicas", "value": "3"}]),
])
async def test_a_merge_or_json_patch_to_a_wrong_type_shows_the_patched_object_and_stores_nothing(
        http: aiohttp.ClientSession, ctype: str, patch: Any) -> None:
    """kube decodes the patched object: the error shows it as JSON, each object the patch reached with its keys
    sorted (evanphx/json-patch re-encodes them), then the decoder's error."""
    before = await create(http, deploy_path(), deployment("typed"))
    reply = await call(http, "PATCH", deploy_path(name="typed"), patch, ctype=ctype)
    error = "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    message = reply.body["message"]
    assert reply.status == 422 and reply.body["reason"] == "Invalid", reply.body
    assert message.startswith(' "" is invalid: patch: Invalid value: "{') and message.endswith('}": ' + error)
    shown = json.loads(json.loads(message.removeprefix(' "" is invalid: patch: Invalid value: ')
                                  .removesuffix(f": {error}")))
    assert shown["spec"]["replicas"] == "3"
    assert list(shown) == sorted(shown) and list(shown["spec"]) == sorted(shown["spec"])
    assert reply.body["details"]["causes"][0]["field"] == "patch"
    assert (await get(http, deploy_path(name="typed"))) == before


async def test_a_server_side_apply_of_a_wrong_type_is_refused_and_nothing_stored(http: aiohttp.ClientSession) -> None:
    """kube answers 500 (kubernetes#139253); this server a 400 of the same shape, and nothing is stored."""
    body = b"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: applied\nspec:\n  replicas: \"3\"\n"
    reply = await call(http, "PATCH", deploy_path(name="applied"), data=body, ctype="application/apply-patch+yaml",
                       params={"fieldManager": "test"})
    status_of(reply, 400, "BadRequest", "failed to create typed patch object (default/applied; apps/v1, "
                                        "Kind=Deployment): .spec.replicas: expected numeric (int or float), got string")
    assert await gone(http, deploy_path(name="applied"))


async def test_an_unquoted_date_in_yaml_stays_a_string(http: aiohttp.ClientSession) -> None:
    """kube reads YAML with go-yaml through sigs.k8s.io/yaml: ``2024-01-01`` is a string, not a timestamp."""
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dated\ndata:\n  since: 2024-01-01\n"
    async with http.post(cm_path(), data=body, headers={"Content-Type": "application/yaml"}) as r:
        assert r.status == 201, await r.text()
        assert (await r.json())["data"] == {"since": "2024-01-01"}


async def test_what_go_decodes_passes_the_type_check(http: aiohttp.ClientSession) -> None:
    """null, unknown fields, int-or-string and quantities as numbers or strings, any JSON in managedFields."""
    body = {"metadata": {"name": "fine", "labels": None, "unknownField": 1,
                         "managedFields": [{"manager": "m", "operation": "Update", "fieldsV1": "anything"}]}, "spec": {
        "replicas": 2, "selector": {"matchLabels": {"app": "fine"}},
        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
        "template": {"metadata": {"labels": {"app": "fine"}}, "spec": {"containers": [{
            "name": "c", "image": "nginx", "resources": {"requests": {"cpu": 0.5, "memory": "1Gi"}}}]}}}}
    async with http.post("/apis/apps/v1/namespaces/default/deployments", json=body) as r:
        assert r.status == 201, await r.text()
        assert (await r.json())["spec"]["replicas"] == 2


async def test_emptied_labels_and_annotations_are_dropped(http: aiohttp.ClientSession) -> None:
    """ObjectMeta's maps and lists are omitempty: removing the last label leaves no ``labels: {}``."""
    body = {"metadata": {"name": "emptied", "labels": {"a": "1"}, "annotations": {"b": "2"}, "finalizers": []}}
    async with http.post("/api/v1/namespaces/default/configmaps", json=body) as r:
        assert r.status == 201
        assert "finalizers" not in (await r.json())["metadata"]
    patch = {"metadata": {"labels": {"a": None}, "annotations": {"b": None}}}
    async with http.patch("/api/v1/namespaces/default/configmaps/emptied", json=patch,
                          headers={"Content-Type": MERGE}) as r:
        assert r.status == 200
    async with http.get("/api/v1/namespaces/default/configmaps/emptied") as r:
        meta = (await r.json())["metadata"]
    assert "labels" not in meta and "annotations" not in meta, meta
