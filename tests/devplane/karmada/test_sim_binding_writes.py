"""What the simulated binding controller may write to bindings it did not make (issue 16, item 5).

Karmada's binding controller (``pkg/controllers/binding``) never adds ``karmada.io/binding-controller``:
the detector sets it on the bindings it makes, the binding controller only removes it. And it
cannot render a Work for a target cluster that has no Cluster object: its override step reads the
Cluster, fails, and the failure is a ``SyncWorkFailed`` Warning on the binding and the template.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from controller_manager.client import KubeClient
from controller_manager.manager import Manager, ManagerOptions
from devplane.karmada.binding import setup_binding_controllers
from devplane.karmada.detector import setup_detector
from karmada_api.names import work_name
from tests.conftest import ensure_namespace, events_about, eventually, get_or_none, running, send

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
RBS = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
CRBS = "/apis/work.karmada.io/v1alpha2/clusterresourcebindings"
CLUSTERROLES = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
WORKS = "/apis/work.karmada.io/v1alpha1/namespaces/{ns}/works"


@pytest.fixture
async def plane(kube: KubeClient) -> AsyncIterator[Manager]:
    manager = Manager(kube, ManagerOptions(name="test-binding-writes", metrics_bind_address="127.0.0.1:0",
                                           health_probe_bind_address="127.0.0.1:0"))
    setup_detector(manager, workers=2)
    setup_binding_controllers(manager, workers=2)
    async with running(manager):
        yield manager


async def join(http: aiohttp.ClientSession, name: str) -> None:
    """A Cluster and its execution namespace (what registration and the cluster controller make)."""
    await send(http, "POST", CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                        "metadata": {"name": name}, "spec": {"syncMode": "Push"}})
    await ensure_namespace(http, f"karmada-es-{name}")


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": name, "image": "nginx"}]}}}}


def hand_made_binding(template: dict[str, Any], name: str, clusters: list[dict[str, Any]] | None = None,
                      ) -> dict[str, Any]:
    meta = template["metadata"]
    spec: dict[str, Any] = {"resource": {"apiVersion": template["apiVersion"], "kind": template["kind"],
                                         "name": meta["name"], "uid": meta["uid"]}}
    if meta.get("namespace"):
        spec["resource"]["namespace"] = meta["namespace"]
    if clusters is not None:
        spec["clusters"] = clusters
    body_meta: dict[str, Any] = {"name": name}
    if meta.get("namespace"):
        body_meta["namespace"] = meta["namespace"]
        return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", "metadata": body_meta,
                "spec": spec}
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding", "metadata": body_meta,
            "spec": spec}


async def test_hand_made_bindings_get_no_finalizer(plane: Manager, http: aiohttp.ClientSession) -> None:
    """Neither an unscheduled nor a scheduled hand-made binding gets the binding controller's finalizer."""
    await join(http, "member1")
    template = await send(http, "POST", DEPLOYMENTS, deployment("web"))
    await send(http, "POST", RBS, hand_made_binding(template, "idle"))
    await send(http, "POST", RBS, hand_made_binding(template, "web-deployment",
                                                    [{"name": "member1", "replicas": 1}]))
    role = await send(http, "POST", CLUSTERROLES, {"apiVersion": "rbac.authorization.k8s.io/v1",
                                                   "kind": "ClusterRole", "metadata": {"name": "hand-made"},
                                                   "rules": []})
    await send(http, "POST", CRBS, hand_made_binding(role, "hand-made-clusterrole",
                                                     [{"name": "member1"}]))
    # The positive signal: both scheduled bindings were processed (their Works exist).
    work = await eventually(lambda: get_or_none(http, WORKS.format(ns="karmada-es-member1") + "/"
                                                + work_name("Deployment", "web", "default")))
    assert work["metadata"]["finalizers"] == ["karmada.io/execution-controller"]  # ensureWork's workMeta
    await eventually(lambda: get_or_none(http, WORKS.format(ns="karmada-es-member1") + "/"
                                         + work_name("ClusterRole", "hand-made", "")))
    for path in (RBS + "/idle", RBS + "/web-deployment", CRBS + "/hand-made-clusterrole"):
        binding = await get_or_none(http, path)
        assert binding is not None
        assert not binding["metadata"].get("finalizers"), path


async def test_no_work_for_a_cluster_without_a_cluster_object(plane: Manager,
                                                                http: aiohttp.ClientSession) -> None:
    """A target with no Cluster: SyncWorkFailed (Karmada's NotFound text) on binding and template, no Work."""
    await join(http, "member1")
    await ensure_namespace(http, "karmada-es-ghost")  # a namespace alone does not make a cluster
    template = await send(http, "POST", DEPLOYMENTS, deployment("lost"))
    binding = await send(http, "POST", RBS, hand_made_binding(
        template, "lost-deployment", [{"name": "member1", "replicas": 1}, {"name": "ghost", "replicas": 1}]))
    message = 'clusters.cluster.karmada.io "ghost" not found'
    failed = await eventually(lambda: events_about(http, binding, "SyncWorkFailed"))
    assert (failed[0]["type"], failed[0]["message"]) == ("Warning", message)
    on_template = await eventually(lambda: events_about(http, template, "SyncWorkFailed"))
    assert on_template[0]["message"] == message
    name = work_name("Deployment", "lost", "default")
    # Karmada renders the clusters in order and stops at the first failure: member1's Work is there.
    assert await get_or_none(http, WORKS.format(ns="karmada-es-member1") + f"/{name}") is not None
    assert await get_or_none(http, WORKS.format(ns="karmada-es-ghost") + f"/{name}") is None
    # Orphaned Works go before the targets are rendered: leaving member1 deletes its Work although
    # ghost still fails (no execution controller runs here, so the Work stays, being deleted).
    await send(http, "PATCH", RBS + "/lost-deployment", {"spec": {"clusters": [{"name": "ghost", "replicas": 1}]}})

    async def member1_work_deleted() -> bool:
        work = await get_or_none(http, WORKS.format(ns="karmada-es-member1") + f"/{name}")
        return work is None or bool(work["metadata"].get("deletionTimestamp"))

    await eventually(member1_work_deleted)
    # Once the Cluster joins, the retry renders its Work.
    await send(http, "POST", CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                        "metadata": {"name": "ghost"}, "spec": {"syncMode": "Push"}})
    await eventually(lambda: get_or_none(http, WORKS.format(ns="karmada-es-ghost") + f"/{name}"), timeout=20)
