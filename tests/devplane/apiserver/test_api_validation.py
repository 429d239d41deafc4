"""Validation, defaulting, pruning, naming, CRD serving and discovery, over real HTTP.

Expected answers are what a real kube-apiserver gives (docs/apiserver.md, "Semantics honoured").
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conftest import eventually

MERGE = "application/merge-patch+json"
WR_GROUP = "apps.karmada.io"
RB_GROUP = "work.karmada.io"
PP_GROUP = "policy.karmada.io"
WR_PATH = f"/apis/{WR_GROUP}/v1alpha1/workloadrebalancers"
RB_PATH = f"/apis/{RB_GROUP}/v1alpha2/namespaces/default/resourcebindings"
PP_PATH = f"/apis/{PP_GROUP}/v1alpha1/namespaces/default/propagationpolicies"
CM_PATH = "/api/v1/namespaces/default/configmaps"
CLUSTER_PATH = "/apis/cluster.karmada.io/v1alpha1/clusters"
TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
GENERATED_RE = re.compile(r"^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$")
CR_VERBS = {"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}
SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@dataclass
class Reply:
    status: int
    content_type: str
    body: Any


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None, *,
               ctype: str = "application/json") -> Reply:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": ctype} if data is not None else {}
    async with http.request(method, path, data=data, headers=headers) as resp:
        text = await resp.text()
        parsed: Any = json.loads(text) if resp.content_type == "application/json" else text
        return Reply(resp.status, resp.content_type, parsed)


async def get(http: aiohttp.ClientSession, path: str) -> dict[str, Any]:
    reply = await call(http, "GET", path)
    assert reply.status == 200, reply.body
    result: dict[str, Any] = reply.body
    return result


async def gone(http: aiohttp.ClientSession, path: str) -> bool:
    return (await call(http, "GET", path)).status == 404


def workload(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "default", **fields}


def wr(name: str = "x", spec: Any = None, **meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": f"{WR_GROUP}/v1alpha1", "kind": "WorkloadRebalancer",
                            "metadata": {"name": name, **meta}}
    if spec is not None:
        body["spec"] = spec
    return body


def rb(name: str = "b", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{RB_GROUP}/v1alpha2", "kind": "ResourceBinding", "metadata": {"name": name},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                  "namespace": "default"}, **spec}}


def invalid(reply: Reply, kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> None:
    """Assert a 422 Invalid naming ``causes`` as (reason, field, message); list indexes in fields are ignored."""
    assert reply.status == 422, reply.body
    body = reply.body
    assert body["kind"] == "Status"
    assert body["reason"] == "Invalid"
    assert body["code"] == 422
    details = body["details"]
    assert details["name"] == name
    assert details["group"] == group
    assert details["kind"] == kind

    def normal(field: str) -> str:
        return re.sub(r"\[\d+\]", "", field)

    got = sorted((c["reason"], normal(c["field"]), c["message"]) for c in details["causes"])
    assert got == sorted((r, normal(f), m) for r, f, m in causes)
    parts = [f"{normal(c['field'])}: {c['message']}" for c in details["causes"]]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    assert normal(body["message"]) == f'{kind}.{group} "{name}" is invalid: {joined}'


# ------------------------------------------------------------------------------------ CRD schema validation


async def test_empty_workloads_is_invalid_and_not_stored(http: aiohttp.ClientSession) -> None:
    reply = await call(http, "POST", WR_PATH, wr("x", {"workloads": []}))
    invalid(reply, "WorkloadRebalancer", WR_GROUP, "x", [
        ("FieldValueInvalid", "spec.workloads",
         "Invalid value: 0: spec.workloads in body should have at least 1 items")])
    assert reply.body["message"] == ('WorkloadRebalancer.apps.karmada.io "x" is invalid: spec.workloads: Invalid '
                                     "value: 0: spec.workloads in body should have at least 1 items")
    assert await gone(http, f"{WR_PATH}/x")
    assert (await get(http, WR_PATH))["items"] == []


async def test_typed_client_sees_invalid(api: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as err:
        await custom.create_cluster_custom_object(WR_GROUP, "v1alpha1", "workloadrebalancers",
                                                  wr("x", {"workloads": []}))
    assert err.value.status == 422
    assert json.loads(err.value.body)["details"]["causes"][0]["field"] == "spec.workloads"


@pytest.mark.parametrize(("spec", "causes"), [
    (None, [("FieldValueRequired", "spec", "Required value")]),
    ({"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment"}]},
     [("FieldValueRequired", "spec.workloads[0].name", "Required value")]),
    ({"workloads": [workload()], "ttlSecondsAfterFinished": "string"},
     [("FieldValueInvalid", "spec.ttlSecondsAfterFinished",
       'Invalid value: "string": spec.ttlSecondsAfterFinished in body must be of type integer: "string"')]),
    ({"workloads": "string"},
     [("FieldValueInvalid", "spec.workloads",
       'Invalid value: "string": spec.workloads in body must be of type array: "string"')]),
    ({"workloads": [], "ttlSecondsAfterFinished": "string"},
     [("FieldValueInvalid", "spec.workloads", "Invalid value: 0: spec.workloads in body should have at least 1 items"),
      ("FieldValueInvalid", "spec.ttlSecondsAfterFinished",
       'Invalid value: "string": spec.ttlSecondsAfterFinished in body must be of type integer: "string"')]),
], ids=["missing-spec", "workload-without-name", "ttl-string", "workloads-string", "two-errors"])
async def test_workloadrebalancer_schema_violations(http: aiohttp.ClientSession, spec: Any,
                                                    causes: list[tuple[str, str, str]]) -> None:
    reply = await call(http, "POST", WR_PATH, wr("x", spec))
    invalid(reply, "WorkloadRebalancer", WR_GROUP, "x", causes)
    assert await gone(http, f"{WR_PATH}/x")


async def test_enum_violation(http: aiohttp.ClientSession) -> None:
    reply = await call(http, "POST", RB_PATH, rb("b", conflictResolution="Bogus"))
    invalid(reply, "ResourceBinding", RB_GROUP, "b", [
        ("FieldValueNotSupported", "spec.conflictResolution",
         'Unsupported value: "Bogus": supported values: "Abort", "Overwrite"')])
    assert await gone(http, f"{RB_PATH}/b")


async def test_missing_required_nested_object(http: aiohttp.ClientSession) -> None:
    body = rb("b")
    del body["spec"]["resource"]
    reply = await call(http, "POST", RB_PATH, body)
    invalid(reply, "ResourceBinding", RB_GROUP, "b", [("FieldValueRequired", "spec.resource", "Required value")])
    assert await gone(http, f"{RB_PATH}/b")


async def test_invalid_patch_and_update_keep_the_object(http: aiohttp.ClientSession) -> None:
    reply = await call(http, "POST", WR_PATH, wr("x", {"workloads": [workload()]}))
    assert reply.status == 201
    before = reply.body
    reply = await call(http, "PATCH", f"{WR_PATH}/x", {"spec": {"workloads": []}}, ctype=MERGE)
    invalid(reply, "WorkloadRebalancer", WR_GROUP, "x", [
        ("FieldValueInvalid", "spec.workloads",
         "Invalid value: 0: spec.workloads in body should have at least 1 items")])
    reply = await call(http, "PATCH", f"{WR_PATH}/x",
                       [{"op": "replace", "path": "/spec/ttlSecondsAfterFinished", "value": "soon"}],
                       ctype="application/json-patch+json")
    assert reply.status == 422, reply.body
    bad = json.loads(json.dumps(before))
    bad["spec"]["workloads"][0].pop("name")
    reply = await call(http, "PUT", f"{WR_PATH}/x", bad)
    assert reply.status == 422
    assert await get(http, f"{WR_PATH}/x") == before


async def test_status_is_validated_on_status_subresource(http: aiohttp.ClientSession) -> None:
    reply = await call(http, "POST", WR_PATH, wr("x", {"workloads": [workload()]}))
    before = reply.body
    reply = await call(http, "PATCH", f"{WR_PATH}/x/status", {"status": {"observedGeneration": "one"}}, ctype=MERGE)
    invalid(reply, "WorkloadRebalancer", WR_GROUP, "x", [
        ("FieldValueInvalid", "status.observedGeneration",
         'Invalid value: "string": status.observedGeneration in body must be of type integer: "string"')])
    assert await get(http, f"{WR_PATH}/x") == before


# ------------------------------------------------------------------------------------ defaults and pruning


async def test_resourcebinding_default_is_stored(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    custom = client.CustomObjectsApi(api)
    created = await custom.create_namespaced_custom_object(RB_GROUP, "v1alpha2", "default", "resourcebindings",
                                                           rb("b"))
    assert created["spec"]["conflictResolution"] == "Abort"
    assert (await get(http, f"{RB_PATH}/b"))["spec"]["conflictResolution"] == "Abort"
    explicit = await custom.create_namespaced_custom_object(RB_GROUP, "v1alpha2", "default", "resourcebindings",
                                                            rb("c", conflictResolution="Overwrite"))
    assert explicit["spec"]["conflictResolution"] == "Overwrite"
    # Removing a defaulted field defaults it again.
    reply = await call(http, "PATCH", f"{RB_PATH}/c", {"spec": {"conflictResolution": None}}, ctype=MERGE)
    assert reply.status == 200, reply.body
    assert (await get(http, f"{RB_PATH}/c"))["spec"]["conflictResolution"] == "Abort"


async def test_propagationpolicy_defaults(http: aiohttp.ClientSession) -> None:
    selector = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]
    body = {"apiVersion": f"{PP_GROUP}/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "with"},
            "spec": {"resourceSelectors": selector, "placement": {"replicaScheduling": {}}}}
    reply = await call(http, "POST", PP_PATH, body)
    assert reply.status == 201, reply.body
    stored = await get(http, f"{PP_PATH}/with")
    spec = stored["spec"]
    assert spec["conflictResolution"] == "Abort"
    assert spec["preemption"] == "Never"
    assert spec["priority"] == 0
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["placement"]["replicaScheduling"] == {"replicaSchedulingType": "Divided"}
    assert spec["resourceSelectors"] == selector

    # Nested defaults apply only when their parent object is present.
    body = {"apiVersion": f"{PP_GROUP}/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "without"},
            "spec": {"resourceSelectors": selector}}
    reply = await call(http, "POST", PP_PATH, body)
    assert reply.status == 201, reply.body
    spec = (await get(http, f"{PP_PATH}/without"))["spec"]
    assert "placement" not in spec
    assert spec["schedulerName"] == "default-scheduler"


async def test_undeclared_fields_are_pruned(http: aiohttp.ClientSession) -> None:
    body = wr("x", {"workloads": [workload(bogus=True)], "unknownField": {"a": 1}})
    body["topLevelJunk"] = 1
    reply = await call(http, "POST", WR_PATH, body)
    assert reply.status == 201, reply.body
    stored = await get(http, f"{WR_PATH}/x")
    assert stored["spec"] == {"workloads": [workload()]}
    assert "topLevelJunk" not in stored
    reply = await call(http, "PATCH", f"{WR_PATH}/x", {"spec": {"alsoUnknown": 1}}, ctype=MERGE)
    assert reply.status == 200
    after = await get(http, f"{WR_PATH}/x")
    assert after["spec"] == {"workloads": [workload()]}
    assert after["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]


# ------------------------------------------------------------------------------------ names


@pytest.mark.parametrize(("path", "body", "qualified"), [
    (CM_PATH, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad_name"}}, "ConfigMap"),
    (WR_PATH, wr("bad_name", {"workloads": [workload()]}), "WorkloadRebalancer.apps.karmada.io"),
])
async def test_invalid_name(http: aiohttp.ClientSession, path: str, body: dict[str, Any], qualified: str) -> None:
    reply = await call(http, "POST", path, body)
    assert reply.status == 422, reply.body
    assert reply.body["reason"] == "Invalid"
    assert reply.body["message"] == (f'{qualified} "bad_name" is invalid: metadata.name: Invalid value: '
                                     f'"bad_name": {SUBDOMAIN_MESSAGE}')
    assert reply.body["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "metadata.name",
                                                "message": f'Invalid value: "bad_name": {SUBDOMAIN_MESSAGE}'}]
    assert (await get(http, path))["items"] == []


@pytest.mark.parametrize(("path", "body", "qualified"), [
    (CM_PATH, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, "ConfigMap"),
    (WR_PATH, {**wr("", {"workloads": [workload()]}), "metadata": {"labels": {"a": "b"}}},
     "WorkloadRebalancer.apps.karmada.io"),
])
async def test_name_required(http: aiohttp.ClientSession, path: str, body: dict[str, Any], qualified: str) -> None:
    reply = await call(http, "POST", path, body)
    assert reply.status == 422, reply.body
    assert reply.body["message"] == (f'{qualified} "" is invalid: metadata.name: Required value: name or '
                                     f"generateName is required")
    assert reply.body["details"]["causes"] == [{"reason": "FieldValueRequired", "field": "metadata.name",
                                                "message": "Required value: name or generateName is required"}]
    assert (await get(http, path))["items"] == []


async def test_generate_name(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    core = client.CoreV1Api(api)
    made = {(await core.create_namespaced_config_map(
        "default", {"metadata": {"generateName": "gen-"}, "data": {}})).metadata.name for _ in range(5)}
    assert len(made) == 5
    assert all(GENERATED_RE.match(name) for name in made), made
    listed = await core.list_namespaced_config_map("default")
    assert {i.metadata.name for i in listed.items} == made
    assert {i.metadata.generate_name for i in listed.items} == {"gen-"}

    reply = await call(http, "POST", WR_PATH, {**wr("", {"workloads": [workload()]}),
                                               "metadata": {"generateName": "gen-"}})
    assert reply.status == 201, reply.body
    name = reply.body["metadata"]["name"]
    assert GENERATED_RE.match(name)
    assert (await get(http, f"{WR_PATH}/{name}"))["metadata"]["generateName"] == "gen-"


async def test_explicit_name_wins_over_generate_name(http: aiohttp.ClientSession) -> None:
    reply = await call(http, "POST", CM_PATH, {"metadata": {"name": "fixed", "generateName": "gen-"}})
    assert reply.status == 201
    assert reply.body["metadata"]["name"] == "fixed"


# ------------------------------------------------------------------------------------ CRDs through the API


def widget_crd() -> dict[str, Any]:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["size"],
                 "properties": {"size": {"type": "integer", "minimum": 1},
                                "color": {"type": "string", "default": "blue"}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                               "shortNames": ["wd"], "categories": ["toys"]},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}]}}


async def test_created_crd_is_served_and_deleting_it_stops_serving(api: client.ApiClient,
                                                                   http: aiohttp.ClientSession) -> None:
    extensions = client.ApiextensionsV1Api(api)
    crd = await extensions.create_custom_resource_definition(widget_crd())
    assert crd.metadata.name == "widgets.example.com"

    async def served() -> bool:
        reply = await call(http, "GET", "/apis/example.com/v1")
        return reply.status == 200 and any(r["name"] == "widgets" for r in reply.body["resources"])

    await eventually(served)
    established = await extensions.read_custom_resource_definition("widgets.example.com")
    assert {(c.type, c.status) for c in established.status.conditions} >= {("Established", "True")}
    resources = {r["name"]: r for r in (await get(http, "/apis/example.com/v1"))["resources"]}
    assert resources["widgets"]["kind"] == "Widget"
    assert resources["widgets"]["namespaced"] is True
    assert resources["widgets"]["shortNames"] == ["wd"]
    assert resources["widgets"]["categories"] == ["toys"]
    assert "widgets/status" in resources
    groups = {g["name"]: g for g in (await get(http, "/apis"))["groups"]}
    assert groups["example.com"]["preferredVersion"]["version"] == "v1"

    custom = client.CustomObjectsApi(api)
    args = ("example.com", "v1", "default", "widgets")
    made = await custom.create_namespaced_custom_object(*args, {"apiVersion": "example.com/v1", "kind": "Widget",
                                                                "metadata": {"name": "w"}, "spec": {"size": 2}})
    assert made["spec"] == {"size": 2, "color": "blue"}
    assert made["metadata"]["generation"] == 1
    reply = await call(http, "POST", "/apis/example.com/v1/namespaces/default/widgets",
                       {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "z"},
                        "spec": {"size": 0}})
    invalid(reply, "Widget", "example.com", "z", [
        ("FieldValueInvalid", "spec.size", "Invalid value: 0: spec.size in body should be greater than or equal to 1")])

    await extensions.delete_custom_resource_definition("widgets.example.com")

    async def unserved() -> bool:
        reply = await call(http, "GET", "/apis/example.com/v1/namespaces/default/widgets/w")
        return reply.status == 404 and (await call(http, "GET", "/apis/example.com/v1")).status == 404

    await eventually(unserved)
    assert "example.com" not in {g["name"] for g in (await get(http, "/apis"))["groups"]}

    # Recreating the CRD does not bring the old objects back.
    await extensions.create_custom_resource_definition(widget_crd())
    await eventually(served)
    assert (await custom.list_namespaced_custom_object(*args))["items"] == []


async def test_invalid_crd_is_refused(http: aiohttp.ClientSession) -> None:
    crd = widget_crd()
    crd["metadata"]["name"] = "gadgets.example.com"  # must be <plural>.<group>
    reply = await call(http, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert reply.status == 422, reply.body
    assert reply.body["reason"] == "Invalid"
    assert (await call(http, "GET", "/apis/example.com/v1")).status == 404


# ------------------------------------------------------------------------------------ discovery


async def test_version(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    info = await client.VersionApi(api).get_code()
    assert info.major == "1"
    assert info.minor.isdigit()
    assert info.git_version.startswith(f"v{info.major}.{info.minor}.")
    raw = await get(http, "/version")
    assert set(raw) >= {"major", "minor", "gitVersion", "gitCommit", "gitTreeState", "buildDate", "goVersion",
                        "compiler", "platform"}


async def test_core_api_versions(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    versions = await client.CoreApi(api).get_api_versions()
    assert versions.versions == ["v1"]
    raw = await get(http, "/api")
    assert raw["kind"] == "APIVersions"
    assert raw["serverAddressByClientCIDRs"]
    resources = {r["name"]: r for r in (await get(http, "/api/v1"))["resources"]}
    assert resources["configmaps"]["namespaced"] is True
    assert resources["configmaps"]["shortNames"] == ["cm"]
    assert resources["namespaces"]["namespaced"] is False
    assert resources["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert set(resources["configmaps"]["verbs"]) == CR_VERBS


async def test_api_groups(api: client.ApiClient, http: aiohttp.ClientSession) -> None:
    groups = {g.name: g for g in (await client.ApisApi(api).get_api_versions()).groups}
    work = groups["work.karmada.io"]
    assert work.preferred_version.version == "v1alpha2"
    assert [v.version for v in work.versions] == ["v1alpha2", "v1alpha1"]
    assert [v.group_version for v in work.versions] == ["work.karmada.io/v1alpha2", "work.karmada.io/v1alpha1"]
    assert groups["apps"].preferred_version.version == "v1"
    assert {"apps.karmada.io", "policy.karmada.io", "cluster.karmada.io", "apiextensions.k8s.io",
            "rbac.authorization.k8s.io", "coordination.k8s.io"} <= set(groups)
    group = await get(http, "/apis/work.karmada.io")
    assert group["kind"] == "APIGroup"
    assert group["preferredVersion"] == {"groupVersion": "work.karmada.io/v1alpha2", "version": "v1alpha2"}


async def test_apps_v1_resources(http: aiohttp.ClientSession) -> None:
    body = await get(http, "/apis/apps/v1")
    assert body["kind"] == "APIResourceList"
    assert body["groupVersion"] == "apps/v1"
    resources = {r["name"]: r for r in body["resources"]}
    deployments = resources["deployments"]
    assert deployments["shortNames"] == ["deploy"]
    assert deployments["categories"] == ["all"]
    assert deployments["kind"] == "Deployment"
    assert deployments["namespaced"] is True
    scale = resources["deployments/scale"]
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    assert scale["verbs"] == ["get", "patch", "update"]
    assert resources["deployments/status"]["verbs"] == ["get", "patch", "update"]


async def test_custom_resource_discovery(http: aiohttp.ClientSession) -> None:
    body = await get(http, "/apis/work.karmada.io/v1alpha2")
    assert body["groupVersion"] == "work.karmada.io/v1alpha2"
    resources = {r["name"]: r for r in body["resources"]}
    bindings = resources["resourcebindings"]
    assert bindings["categories"] == ["karmada-io"]
    assert bindings["singularName"] == "resourcebinding"
    assert bindings["shortNames"] == ["rb"]
    assert bindings["kind"] == "ResourceBinding"
    assert bindings["namespaced"] is True
    assert set(bindings["verbs"]) == CR_VERBS
    assert len(bindings["verbs"]) == len(CR_VERBS)
    assert bindings["storageVersionHash"]
    assert resources["resourcebindings/status"]["verbs"] == ["get", "patch", "update"]
    assert resources["clusterresourcebindings"]["namespaced"] is False
    rebalancers = {r["name"]: r for r in (await get(http, "/apis/apps.karmada.io/v1alpha1"))["resources"]}
    assert rebalancers["workloadrebalancers"]["namespaced"] is False
    assert "categories" not in rebalancers["workloadrebalancers"]  # its CRD declares none
    policies = {r["name"]: r for r in (await get(http, "/apis/policy.karmada.io/v1alpha1"))["resources"]}
    assert policies["propagationpolicies"]["categories"] == ["karmada-io"]


async def test_cluster_api_discovery(http: aiohttp.ClientSession) -> None:
    body = await get(http, "/apis/cluster.karmada.io/v1alpha1")
    resources = {r["name"]: r for r in body["resources"]}
    assert resources["clusters"]["namespaced"] is False
    assert resources["clusters"]["kind"] == "Cluster"
    assert "clusters/status" in resources


# ------------------------------------------------------------------------------------ Cluster


def cluster(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://member1.example:6443", **spec}}


async def test_cluster_noexecute_taint_gets_time_added(http: aiohttp.ClientSession) -> None:
    taints = [{"key": "gone", "effect": "NoExecute"}, {"key": "soft", "effect": "NoSchedule"},
              {"key": "kept", "effect": "NoExecute", "timeAdded": "2020-01-01T00:00:00Z"}]
    reply = await call(http, "POST", CLUSTER_PATH, cluster("member1", taints=taints))
    assert reply.status == 201, reply.body
    stored = {t["key"]: t for t in (await get(http, f"{CLUSTER_PATH}/member1"))["spec"]["taints"]}
    assert TIMESTAMP_RE.match(stored["gone"]["timeAdded"])
    assert "timeAdded" not in stored["soft"]
    assert stored["kept"]["timeAdded"] == "2020-01-01T00:00:00Z"

    reply = await call(http, "PATCH", f"{CLUSTER_PATH}/member1",
                       {"spec": {"taints": [*stored.values(), {"key": "later", "effect": "NoExecute"}]}},
                       ctype=MERGE)
    assert reply.status == 200, reply.body
    after = {t["key"]: t for t in (await get(http, f"{CLUSTER_PATH}/member1"))["spec"]["taints"]}
    assert TIMESTAMP_RE.match(after["later"]["timeAdded"])
    assert after["gone"]["timeAdded"] == stored["gone"]["timeAdded"]


async def test_cluster_default_resource_models(http: aiohttp.ClientSession) -> None:
    reply = await call(http, "POST", CLUSTER_PATH, cluster("member1"))
    assert reply.status == 201, reply.body
    models = (await get(http, f"{CLUSTER_PATH}/member1"))["spec"]["resourceModels"]
    assert [m["grade"] for m in models] == list(range(9))
    first = {r["name"]: r for r in models[0]["ranges"]}
    assert first["cpu"]["min"] == "0"
    assert first["cpu"]["max"] == "1"
    assert first["memory"]["min"] == "0"
    assert first["memory"]["max"] == "4Gi"
    last = {r["name"]: r for r in models[-1]["ranges"]}
    assert last["cpu"]["max"] == "9223372036854775807"
    assert last["memory"]["max"] == "9223372036854775807"
    # Contiguous ranges: each grade starts where the previous one ends.
    for prev, nxt in itertools.pairwise(models):
        prev_ranges = {r["name"]: r for r in prev["ranges"]}
        for r in nxt["ranges"]:
            assert r["min"] == prev_ranges[r["name"]]["max"]


async def test_cluster_schema_is_enforced(http: aiohttp.ClientSession) -> None:
    body = cluster("member1")
    body["spec"]["syncMode"] = "Sideways"
    reply = await call(http, "POST", CLUSTER_PATH, body)
    assert reply.status == 422, reply.body
    assert reply.body["details"]["causes"][0]["field"] == "spec.syncMode"
    assert await gone(http, f"{CLUSTER_PATH}/member1")
