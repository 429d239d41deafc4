"""The OpenAPI v3 documents' shape: what kubectl explain and kubectl apply read from them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devplane.apiserver import openapi
from devplane.apiserver.crds import packaged_crds, types_for_crd
from devplane.apiserver.discovery import SERVER_VERSION
from devplane.apiserver.kinds import CLUSTER_TYPE
from devplane.apiserver.resources import Registry, builtin_registry

ROOT = Path(__file__).resolve().parents[3]
REF = "#/components/schemas/"


@pytest.fixture
def registry() -> Registry:
    registry = builtin_registry()
    registry.add(CLUSTER_TYPE)
    for crd in packaged_crds():
        for rtype in types_for_crd(crd):
            registry.add(rtype)
    return registry


def refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            found.add(node["$ref"])
        for value in node.values():
            found |= refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= refs(value)
    return found


def types_of(node: Any) -> list[Any]:
    found: list[Any] = []
    if isinstance(node, dict):
        if "type" in node and not isinstance(node["type"], dict):
            found.append(node["type"])
        for value in node.values():
            found += types_of(value)
    elif isinstance(node, list):
        for value in node:
            found += types_of(value)
    return found


def gvk_of(schema: dict[str, Any]) -> list[dict[str, str]]:
    gvks: list[dict[str, str]] = schema.get("x-kubernetes-group-version-kind", [])
    return gvks


def test_generated_builtin_schemas_are_fresh() -> None:
    """The vendored file is what the generator makes from Kubernetes' published definitions."""
    result = subprocess.run([sys.executable, "hack/generate_builtin_openapi.py", "--check"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr


def test_index_lists_every_group_version_with_a_content_hash(registry: Registry) -> None:
    root = openapi.root_document(registry)["paths"]
    for path in ("api/v1", "apis/apps/v1", "apis/apps.karmada.io/v1alpha1", "apis/work.karmada.io/v1alpha1",
                 "apis/work.karmada.io/v1alpha2", "apis/cluster.karmada.io/v1alpha1"):
        url = root[path]["serverRelativeURL"]
        assert url.startswith(f"/openapi/v3/{path}?hash=")
        assert len(url.partition("hash=")[2]) == 128


@pytest.mark.parametrize(("group", "version"), [("", "v1"), ("apps", "v1"), ("apps.karmada.io", "v1alpha1"),
                                                ("work.karmada.io", "v1alpha2"), ("policy.karmada.io", "v1alpha1"),
                                                ("cluster.karmada.io", "v1alpha1")])
def test_every_reference_resolves_inside_its_document(registry: Registry, group: str, version: str) -> None:
    doc = openapi.group_version_document(registry, group, version)
    assert doc["openapi"].startswith("3.")
    assert doc["info"]["version"] == SERVER_VERSION["gitVersion"]
    schemas = doc["components"]["schemas"]
    for ref in refs(doc):
        assert ref.startswith(REF), ref
        assert ref[len(REF):] in schemas, ref
    # kube's v3 spelling: one type per node, never the JSON-Schema converter's [T, "null"]
    assert all(isinstance(t, str) for t in types_of(schemas))


def test_builtin_kind_is_kubes_published_schema(registry: Registry) -> None:
    schemas = openapi.group_version_document(registry, "apps", "v1")["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert gvk_of(deployment) == [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    assert deployment["description"].startswith("Deployment enables declarative updates")
    spec = deployment["properties"]["spec"]
    assert spec["allOf"] == [{"$ref": REF + "io.k8s.api.apps.v1.DeploymentSpec"}]
    assert spec["description"]
    assert "enum" not in deployment["properties"]["apiVersion"]
    replicas = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]
    assert replicas["type"] == "integer" and "Number of desired pods" in replicas["description"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    core = openapi.group_version_document(registry, "", "v1")["components"]["schemas"]
    for kind in ("Pod", "ConfigMap", "Namespace", "Node", "Secret", "Service"):
        assert gvk_of(core[f"io.k8s.api.core.v1.{kind}"]) == [{"group": "", "kind": kind, "version": "v1"}]


def test_custom_kind_is_named_and_shaped_as_kube_publishes_crds(registry: Registry) -> None:
    schemas = openapi.group_version_document(registry, "apps.karmada.io", "v1alpha1")["components"]["schemas"]
    rebalancer = schemas["io.karmada.apps.v1alpha1.WorkloadRebalancer"]
    assert gvk_of(rebalancer) == [{"group": "apps.karmada.io", "kind": "WorkloadRebalancer", "version": "v1alpha1"}]
    assert rebalancer["properties"]["metadata"]["allOf"] == [
        {"$ref": REF + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    workloads = rebalancer["properties"]["spec"]["properties"]["workloads"]
    assert workloads["type"] == "array" and workloads["description"]
    listed = schemas["io.karmada.apps.v1alpha1.WorkloadRebalancerList"]
    assert gvk_of(listed) == [{"group": "apps.karmada.io", "kind": "WorkloadRebalancerList", "version": "v1alpha1"}]
    assert listed["properties"]["items"]["items"] == {"$ref": REF + "io.karmada.apps.v1alpha1.WorkloadRebalancer"}
    v1alpha2 = openapi.group_version_document(registry, "work.karmada.io", "v1alpha2")["components"]["schemas"]
    assert "io.karmada.work.v1alpha2.ResourceBinding" in v1alpha2
    assert "io.karmada.work.v1alpha1.Work" not in v1alpha2  # a document holds its own group-version only


def test_paths_name_the_kind_for_explain_and_the_patch_types_for_apply(registry: Registry) -> None:
    paths = openapi.group_version_document(registry, "apps", "v1")["paths"]
    gvk = {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert paths["/apis/apps/v1/deployments"]["get"]["x-kubernetes-group-version-kind"] == gvk
    namespaced = paths["/apis/apps/v1/namespaces/{namespace}/deployments"]
    assert namespaced["get"]["x-kubernetes-group-version-kind"] == gvk
    patch = paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    custom = openapi.group_version_document(registry, "apps.karmada.io", "v1alpha1")["paths"]
    assert custom["/apis/apps.karmada.io/v1alpha1/workloadrebalancers"]["get"]["x-kubernetes-group-version-kind"] \
        == {"group": "apps.karmada.io", "version": "v1alpha1", "kind": "WorkloadRebalancer"}
    custom_patch = custom["/apis/apps.karmada.io/v1alpha1/workloadrebalancers/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" not in custom_patch["requestBody"]["content"]
    assert "application/merge-patch+json" in custom_patch["requestBody"]["content"]


def test_a_crd_change_changes_the_document_and_its_hash(registry: Registry) -> None:
    before = openapi.root_document(registry)["paths"]["apis/work.karmada.io/v1alpha2"]
    registry.remove_crd("works.work.karmada.io")
    after = openapi.root_document(registry)["paths"]
    assert "apis/work.karmada.io/v1alpha1" in after  # the bindings still serve v1alpha1
    schemas = openapi.group_version_document(registry, "work.karmada.io", "v1alpha1")["components"]["schemas"]
    assert "io.karmada.work.v1alpha1.Work" not in schemas
    assert after["apis/work.karmada.io/v1alpha2"] == before  # unchanged group-versions keep their hash
