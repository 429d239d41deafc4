"""The simulated detector and binding controllers against the dev API server (no scheduler: tests set
``spec.clusters`` themselves, as the scheduler would).

The seed tutorial's Deployment ``foo`` + PropagationPolicy ``default-pp`` → ResourceBinding
``foo-deployment`` → one Work per scheduled cluster in ``karmada-es-<cluster>``; scheduling changes,
template edits and deletions flow through; a ClusterPropagationPolicy for a ClusterRole makes a
ClusterResourceBinding; policy priority rows pick the policy a user expects.
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

DEPLOYMENTS = "/apis/apps/v1/namespaces/{ns}/deployments"
PPS = "/apis/policy.karmada.io/v1alpha1/namespaces/{ns}/propagationpolicies"
CPPS = "/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies"
RBS = "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings"
CRBS = "/apis/work.karmada.io/v1alpha2/clusterresourcebindings"
WORKS = "/apis/work.karmada.io/v1alpha1/namespaces/{ns}/works"
CLUSTERROLES = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
FOO_WORK = work_name("Deployment", "foo", "default")

SEED_PLACEMENT: dict[str, Any] = {
    "clusterTolerations": [{"effect": "NoExecute", "key": "workload-rebalancer-test", "operator": "Exists",
                            "tolerationSeconds": 0}],
    "clusterAffinity": {"clusterNames": ["member1", "member2"]},
    "replicaScheduling": {"replicaDivisionPreference": "Weighted", "replicaSchedulingType": "Divided",
                          "weightPreference": {"dynamicWeight": "AvailableReplicas"}},
}


def seed_deployment(name: str = "foo", namespace: str = "default", labels: dict[str, str] | None = None,
                    image: str = "nginx") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {"app": "test"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"terminationGracePeriodSeconds": 0,
                                           "containers": [{"image": image, "name": name, "resources": {
                                               "limits": {"cpu": "10m", "memory": "10Mi"}}}]}}}}


def policy(name: str, selectors: list[dict[str, Any]], *, namespace: str = "default", priority: int | None = None,
           placement: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceSelectors": selectors, "placement": placement or SEED_PLACEMENT}
    if priority is not None:
        spec["priority"] = priority
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy" if namespace else "ClusterPropagationPolicy", "metadata": meta, "spec": spec}


# ----------------------------------------------------------------------------- HTTP helpers


def cluster(name: str) -> dict[str, Any]:
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
            "spec": {"syncMode": "Push"}}


async def join(http: aiohttp.ClientSession, name: str) -> None:
    """A Cluster and its execution namespace: without the Cluster the binding controller renders no Work."""
    await send(http, "POST", CLUSTERS, cluster(name), expect=(201, 409))
    await ensure_namespace(http, f"karmada-es-{name}")





def labels_of(obj: dict[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def annotations_of(obj: dict[str, Any] | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("annotations") or {})


def manifest(work: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = work["spec"]["workload"]["manifests"][0]
    return result


# ----------------------------------------------------------------------------- fixture


@pytest.fixture
async def plane(kube: KubeClient, http: aiohttp.ClientSession) -> AsyncIterator[Manager]:
    manager = Manager(kube, ManagerOptions(name="test-detector", metrics_bind_address="127.0.0.1:0",
                                           health_probe_bind_address="127.0.0.1:0"))
    setup_detector(manager, workers=2)
    setup_binding_controllers(manager, workers=2)
    async with running(manager):
        yield manager


async def wait_binding(http: aiohttp.ClientSession, path: str, check: Any = None) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        obj = await get_or_none(http, path)
        if obj is not None and check is not None:
            check(obj)
        return obj

    result: dict[str, Any] = await eventually(found)
    return result


async def schedule(http: aiohttp.ClientSession, path: str, clusters: list[dict[str, Any]]) -> None:
    await send(http, "PATCH", path, {"spec": {"clusters": clusters}})


# ----------------------------------------------------------------------------- the seed tutorial


async def test_seed_deployment_is_bound_and_propagated(plane: Manager, http: aiohttp.ClientSession) -> None:
    deploy = await send(http, "POST", DEPLOYMENTS.format(ns="default"), seed_deployment())
    pp = await send(http, "POST", PPS.format(ns="default"), policy("default-pp", [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo", "namespace": "default"}]))
    rb_path = RBS.format(ns="default") + "/foo-deployment"
    rb = await wait_binding(http, rb_path)

    pp = await get_or_none(http, PPS.format(ns="default") + "/default-pp") or {}
    pp_id = labels_of(pp)["propagationpolicy.karmada.io/permanent-id"]
    assert len(pp_id) == 36  # a uuid4, from the simulated webhook
    rb_labels = labels_of(rb)
    assert rb_labels["propagationpolicy.karmada.io/permanent-id"] == pp_id
    assert len(rb_labels["resourcebinding.karmada.io/permanent-id"]) == 36
    assert annotations_of(rb) == {"propagationpolicy.karmada.io/name": "default-pp",
                               "propagationpolicy.karmada.io/namespace": "default"}
    assert rb["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo",
                                                  "uid": deploy["metadata"]["uid"], "controller": True,
                                                  "blockOwnerDeletion": True}]
    assert "karmada.io/binding-controller" in rb["metadata"]["finalizers"]
    spec = rb["spec"]
    assert spec["replicas"] == 3
    assert spec["replicaRequirements"] == {"resourceRequest": {"cpu": "10m", "memory": "10Mi"},
                                           "namespace": "default"}
    assert spec["placement"] == SEED_PLACEMENT
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["conflictResolution"] == "Abort"
    assert "clusters" not in spec
    template = await get_or_none(http, DEPLOYMENTS.format(ns="default") + "/foo") or {}
    assert spec["resource"] == {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "foo",
                                "uid": deploy["metadata"]["uid"],
                                "resourceVersion": template["metadata"]["resourceVersion"]}
    # The template is claimed by the policy.
    assert labels_of(template)["propagationpolicy.karmada.io/permanent-id"] == pp_id
    assert annotations_of(template)["propagationpolicy.karmada.io/name"] == "default-pp"
    assert annotations_of(template)["propagationpolicy.karmada.io/namespace"] == "default"
    [applied] = await eventually(lambda: events_about(http, template, "ApplyPolicySucceed"))
    assert (applied["type"], applied["message"]) == ("Normal", "Apply policy(default/default-pp) succeed")
    assert applied["source"]["component"] == "resource-detector"

    # The scheduler's result (set by hand here) becomes one Work per cluster.
    await join(http, "member1")
    await join(http, "member2")
    await schedule(http, rb_path, [{"name": "member1", "replicas": 2}, {"name": "member2", "replicas": 1}])
    work1 = await wait_binding(http, WORKS.format(ns="karmada-es-member1") + f"/{FOO_WORK}")
    work2 = await wait_binding(http, WORKS.format(ns="karmada-es-member2") + f"/{FOO_WORK}")
    rb_id = rb_labels["resourcebinding.karmada.io/permanent-id"]
    for work, replicas in ((work1, 2), (work2, 1)):
        assert labels_of(work) == {"resourcebinding.karmada.io/permanent-id": rb_id, "karmada.io/managed": "true"}
        assert annotations_of(work) == {"resourcebinding.karmada.io/namespace": "default",
                                     "resourcebinding.karmada.io/name": "foo-deployment",
                                     "work.karmada.io/conflict-resolution": "abort"}
        body = manifest(work)
        assert body["spec"]["replicas"] == replicas
        assert body["metadata"]["name"] == "foo" and body["metadata"]["namespace"] == "default"
        assert not {"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
                    "ownerReferences", "finalizers"} & set(body["metadata"])
        assert "status" not in body
        assert labels_of(body) == {"app": "test", "propagationpolicy.karmada.io/permanent-id": pp_id,
                                "karmada.io/managed": "true", "resourcebinding.karmada.io/permanent-id": rb_id}
        assert annotations_of(body) == {"propagationpolicy.karmada.io/name": "default-pp",
                                     "propagationpolicy.karmada.io/namespace": "default",
                                     "resourcetemplate.karmada.io/generation": "1",
                                     "resourcebinding.karmada.io/namespace": "default",
                                     "resourcebinding.karmada.io/name": "foo-deployment"}
        assert body["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "10m",
                                                                                            "memory": "10Mi"}
    synced = await eventually(lambda: events_about(http, rb, "SyncWorkSucceed"))
    assert synced[0]["message"] == "Sync work of resourceBinding(default/foo-deployment) successful."

    # Rescheduling away from member1 removes its Work and resizes the other.
    await schedule(http, rb_path, [{"name": "member2", "replicas": 3}])
    await eventually(lambda: _deleted(http, WORKS.format(ns="karmada-es-member1") + f"/{FOO_WORK}"))
    await wait_binding(http, WORKS.format(ns="karmada-es-member2") + f"/{FOO_WORK}",
                       lambda w: _assert(manifest(w)["spec"]["replicas"] == 3))

    # A template edit reaches the binding (resourceVersion) and the Work (content, generation).
    await send(http, "PATCH", DEPLOYMENTS.format(ns="default") + "/foo",
               {"spec": {"template": {"spec": {"containers": [
                   {"image": "nginx:1.27", "name": "foo",
                    "resources": {"limits": {"cpu": "10m", "memory": "10Mi"}}}]}}}})
    edited = await get_or_none(http, DEPLOYMENTS.format(ns="default") + "/foo") or {}
    await wait_binding(http, rb_path, lambda b: _assert(
        b["spec"]["resource"]["resourceVersion"] == edited["metadata"]["resourceVersion"]))
    work2 = await wait_binding(http, WORKS.format(ns="karmada-es-member2") + f"/{FOO_WORK}", lambda w: _assert(
        manifest(w)["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"))
    assert annotations_of(manifest(work2))["resourcetemplate.karmada.io/generation"] == "2"
    assert manifest(work2)["spec"]["replicas"] == 3

    # Deleting the template deletes the binding (garbage collector) and its Works (binding finalizer).
    await send(http, "DELETE", DEPLOYMENTS.format(ns="default") + "/foo")
    await eventually(lambda: _absent(http, rb_path))
    await eventually(lambda: _deleted(http, WORKS.format(ns="karmada-es-member2") + f"/{FOO_WORK}"))


def _assert(condition: bool) -> bool:
    assert condition
    return True


async def _absent(http: aiohttp.ClientSession, path: str) -> bool:
    return await get_or_none(http, path) is None


async def _deleted(http: aiohttp.ClientSession, path: str) -> bool:
    """Gone, or deletion requested: Works keep the execution finalizer, and no execution controller runs here."""
    obj = await get_or_none(http, path)
    return obj is None or bool(obj["metadata"].get("deletionTimestamp"))


async def test_work_waits_for_its_execution_namespace(plane: Manager, http: aiohttp.ClientSession) -> None:
    await send(http, "POST", DEPLOYMENTS.format(ns="default"), seed_deployment())
    await send(http, "POST", PPS.format(ns="default"), policy("default-pp", [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo"}]))
    rb_path = RBS.format(ns="default") + "/foo-deployment"
    rb = await wait_binding(http, rb_path)
    await send(http, "POST", CLUSTERS, cluster("member3"))  # registered, its namespace not made yet
    await schedule(http, rb_path, [{"name": "member3", "replicas": 3}])
    failed = await eventually(lambda: events_about(http, rb, "SyncWorkFailed"))
    assert failed[0]["type"] == "Warning" and "member3" in failed[0]["message"]
    await ensure_namespace(http, "karmada-es-member3")  # what the cluster controller does when the Cluster joins
    work = await wait_binding(http, WORKS.format(ns="karmada-es-member3") + f"/{FOO_WORK}")
    assert manifest(work)["spec"]["replicas"] == 3


async def test_deleted_work_is_recreated(plane: Manager, http: aiohttp.ClientSession) -> None:
    await join(http, "member1")
    await send(http, "POST", DEPLOYMENTS.format(ns="default"), seed_deployment())
    await send(http, "POST", PPS.format(ns="default"), policy("default-pp", [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo"}]))
    rb_path = RBS.format(ns="default") + "/foo-deployment"
    await wait_binding(http, rb_path)
    await schedule(http, rb_path, [{"name": "member1", "replicas": 3}])
    work_path = WORKS.format(ns="karmada-es-member1") + f"/{FOO_WORK}"
    first = await wait_binding(http, work_path)
    await send(http, "DELETE", work_path)
    await send(http, "PATCH", work_path, {"metadata": {"finalizers": None}})  # the execution controller's part
    await wait_binding(http, work_path, lambda w: _assert(w["metadata"]["uid"] != first["metadata"]["uid"]))


async def test_eviction_task_keeps_its_clusters_work(plane: Manager, http: aiohttp.ClientSession) -> None:
    for cluster in ("member1", "member2"):
        await join(http, cluster)
    await send(http, "POST", DEPLOYMENTS.format(ns="default"), seed_deployment())
    await send(http, "POST", PPS.format(ns="default"), policy("default-pp", [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo"}]))
    rb_path = RBS.format(ns="default") + "/foo-deployment"
    await wait_binding(http, rb_path)
    await schedule(http, rb_path, [{"name": "member1", "replicas": 2}, {"name": "member2", "replicas": 1}])
    member1 = WORKS.format(ns="karmada-es-member1") + f"/{FOO_WORK}"
    await wait_binding(http, member1)
    # The taint manager moves member1 into a graceful eviction task; its Work stays as it was.
    task = {"fromCluster": "member1", "purgeMode": "Gracefully", "replicas": 2, "reason": "TaintUntolerated",
            "producer": "TaintManager"}
    await send(http, "PATCH", rb_path, {"spec": {"clusters": [{"name": "member2", "replicas": 3}],
                                                  "gracefulEvictionTasks": [task]}})
    await wait_binding(http, WORKS.format(ns="karmada-es-member2") + f"/{FOO_WORK}",
                       lambda w: _assert(manifest(w)["spec"]["replicas"] == 3))
    kept = await get_or_none(http, member1)
    assert kept is not None and manifest(kept)["spec"]["replicas"] == 2
    # Once the task is gone, so is the Work.
    await send(http, "PATCH", rb_path, {"spec": {"gracefulEvictionTasks": None}})
    await eventually(lambda: _deleted(http, member1))


# ----------------------------------------------------------------------------- cluster-scoped


async def test_cluster_policy_binds_a_cluster_role(plane: Manager, http: aiohttp.ClientSession) -> None:
    role = await send(http, "POST", CLUSTERROLES, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "demo-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})
    await send(http, "POST", CPPS, policy("roles", [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "demo-reader"}],
        namespace="", placement={"clusterAffinity": {"clusterNames": ["member1"]}}))
    crb_path = f"{CRBS}/demo-reader-clusterrole"
    crb = await wait_binding(http, crb_path)
    cpp = await get_or_none(http, f"{CPPS}/roles") or {}
    cpp_id = labels_of(cpp)["clusterpropagationpolicy.karmada.io/permanent-id"]
    assert labels_of(crb)["clusterpropagationpolicy.karmada.io/permanent-id"] == cpp_id
    assert len(labels_of(crb)["clusterresourcebinding.karmada.io/permanent-id"]) == 36
    assert annotations_of(crb) == {"clusterpropagationpolicy.karmada.io/name": "roles"}
    assert "karmada.io/cluster-resource-binding-controller" in crb["metadata"]["finalizers"]
    assert crb["spec"]["resource"]["name"] == "demo-reader" and "namespace" not in crb["spec"]["resource"]
    assert "replicas" not in crb["spec"] and "replicaRequirements" not in crb["spec"]
    [applied] = await eventually(lambda: events_about(http, role, "ApplyPolicySucceed"))
    assert applied["message"] == "Apply cluster policy(roles) succeed"

    await join(http, "member1")
    await schedule(http, crb_path, [{"name": "member1"}])
    name = work_name("ClusterRole", "demo-reader", "")
    work = await wait_binding(http, WORKS.format(ns="karmada-es-member1") + f"/{name}")
    assert annotations_of(work)["clusterresourcebinding.karmada.io/name"] == "demo-reader-clusterrole"
    assert labels_of(work)["clusterresourcebinding.karmada.io/permanent-id"] == labels_of(crb)[
        "clusterresourcebinding.karmada.io/permanent-id"]
    body = manifest(work)
    assert body["rules"] == role["rules"] and "namespace" not in body["metadata"]
    assert annotations_of(body)["clusterresourcebinding.karmada.io/name"] == "demo-reader-clusterrole"
    synced = await eventually(lambda: events_about(http, crb, "SyncWorkSucceed"))
    assert synced[0]["message"] == "Sync work of clusterResourceBinding(demo-reader-clusterrole) successful."


# ----------------------------------------------------------------------------- policy selection


async def claimer(http: aiohttp.ClientSession, ns: str, name: str) -> str | None:
    obj = await get_or_none(http, DEPLOYMENTS.format(ns=ns) + f"/{name}")
    return annotations_of(obj).get("propagationpolicy.karmada.io/name")


async def wait_claimed(http: aiohttp.ClientSession, ns: str, name: str, want: str | None) -> None:
    async def check() -> bool:
        got = await claimer(http, ns, name)
        assert got == want, f"{name} claimed by {got}, want {want}"
        return True

    await eventually(check)


async def test_policy_priority_rows(plane: Manager, http: aiohttp.ClientSession) -> None:
    ns = "prio"
    await ensure_namespace(http, ns)
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment"}
    for pp in (policy("all-b", [deploy], namespace=ns),
               policy("all-a", [deploy], namespace=ns),
               policy("by-label", [{**deploy, "labelSelector": {"matchLabels": {"app": "x"}}}], namespace=ns),
               policy("by-name", [{**deploy, "name": "named"}], namespace=ns),
               policy("high", [{**deploy, "labelSelector": {"matchLabels": {"tier": "high"}}}], namespace=ns,
                      priority=5)):
        await send(http, "POST", PPS.format(ns=ns), pp)
    # A cluster policy with a higher priority still loses to the namespace's policies.
    await send(http, "POST", CPPS, policy("cluster-all", [deploy], namespace="", priority=100))
    rows = {"named": ({"app": "x"}, "by-name"),  # name match beats labelSelector and match-all
            "labelled": ({"app": "x"}, "by-label"),  # labelSelector beats match-all
            "plain": ({"app": "y"}, "all-a"),  # equal priorities: the smaller name
            "urgent": ({"app": "x", "tier": "high"}, "high")}  # explicit priority first
    for name, (template_labels, _) in rows.items():
        await send(http, "POST", DEPLOYMENTS.format(ns=ns), seed_deployment(name, ns, template_labels))
    for name, (_, want) in rows.items():
        await wait_claimed(http, ns, name, want)
    await wait_binding(http, RBS.format(ns=ns) + "/plain-deployment", lambda b: _assert(
        annotations_of(b)["propagationpolicy.karmada.io/name"] == "all-a"))

    # Preemption Never: a better policy arriving later does not take a claimed template...
    await send(http, "POST", PPS.format(ns=ns), policy("plain-now", [{**deploy, "name": "plain"}], namespace=ns,
                                                        priority=10))
    await send(http, "POST", DEPLOYMENTS.format(ns=ns), seed_deployment("late", ns, {"app": "y"}))
    await wait_claimed(http, ns, "late", "all-a")  # (the detector has seen the new policy by now)
    assert await claimer(http, ns, "plain") == "all-a"
    # ...until the claiming policy goes: then the best remaining one claims it, and its binding follows.
    await send(http, "DELETE", PPS.format(ns=ns) + "/all-a")
    await wait_claimed(http, ns, "plain", "plain-now")
    plain_now = await get_or_none(http, PPS.format(ns=ns) + "/plain-now") or {}
    await wait_binding(http, RBS.format(ns=ns) + "/plain-deployment", lambda b: _assert(
        annotations_of(b)["propagationpolicy.karmada.io/name"] == "plain-now"
        and labels_of(b)["propagationpolicy.karmada.io/permanent-id"]
        == labels_of(plain_now)["propagationpolicy.karmada.io/permanent-id"]))
    await wait_claimed(http, ns, "late", "all-b")

    # Where no PropagationPolicy selects a template, a ClusterPropagationPolicy does (into a ResourceBinding).
    await ensure_namespace(http, "no-pp")
    await send(http, "POST", DEPLOYMENTS.format(ns="no-pp"), seed_deployment("solo", "no-pp"))
    cpp = await get_or_none(http, f"{CPPS}/cluster-all") or {}
    rb = await wait_binding(http, RBS.format(ns="no-pp") + "/solo-deployment")
    assert annotations_of(rb) == {"clusterpropagationpolicy.karmada.io/name": "cluster-all"}
    assert (labels_of(rb)["clusterpropagationpolicy.karmada.io/permanent-id"]
            == labels_of(cpp)["clusterpropagationpolicy.karmada.io/permanent-id"])
    assert "karmada.io/binding-controller" in rb["metadata"]["finalizers"]
    solo = await get_or_none(http, DEPLOYMENTS.format(ns="no-pp") + "/solo")
    assert annotations_of(solo)["clusterpropagationpolicy.karmada.io/name"] == "cluster-all"


async def test_policy_that_stops_selecting_releases_the_template(plane: Manager, http: aiohttp.ClientSession) -> None:
    await send(http, "POST", DEPLOYMENTS.format(ns="default"), seed_deployment())
    await send(http, "POST", PPS.format(ns="default"), policy("default-pp", [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo"}]))
    rb_path = RBS.format(ns="default") + "/foo-deployment"
    await wait_binding(http, rb_path)
    await send(http, "PATCH", PPS.format(ns="default") + "/default-pp",
               {"spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "bar"}]}})
    await wait_claimed(http, "default", "foo", None)
    template = await get_or_none(http, DEPLOYMENTS.format(ns="default") + "/foo")
    assert "propagationpolicy.karmada.io/permanent-id" not in labels_of(template)
    # The binding stays (until its template goes) but no longer carries the claim the scheduler looks for.
    rb = await get_or_none(http, rb_path)
    assert rb is not None
    assert "propagationpolicy.karmada.io/permanent-id" not in labels_of(rb)
    assert "propagationpolicy.karmada.io/name" not in annotations_of(rb)
    assert labels_of(rb)["resourcebinding.karmada.io/permanent-id"]


async def test_policy_change_updates_the_binding(plane: Manager, http: aiohttp.ClientSession) -> None:
    await send(http, "POST", DEPLOYMENTS.format(ns="default"), seed_deployment())
    await send(http, "POST", PPS.format(ns="default"), policy("default-pp", [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo"}]))
    rb_path = RBS.format(ns="default") + "/foo-deployment"
    rb = await wait_binding(http, rb_path)
    await schedule(http, rb_path, [{"name": "member1", "replicas": 3}])
    placement = {"clusterAffinity": {"clusterNames": ["member1"]},  # (a merge patch: null removes)
                 "spreadConstraints": [{"maxGroups": 1}], "clusterTolerations": None,
                 "replicaScheduling": {"replicaDivisionPreference": None, "weightPreference": None}}
    await send(http, "PATCH", PPS.format(ns="default") + "/default-pp",
               {"spec": {"placement": placement, "preserveResourcesOnDeletion": True}})
    updated = await wait_binding(http, rb_path, lambda b: _assert(
        b["spec"]["placement"]["clusterAffinity"] == {"clusterNames": ["member1"]}))
    # The webhook's defaults, the scheduler's result and the permanent id are all as they should be.
    assert updated["spec"]["placement"]["spreadConstraints"] == [{"maxGroups": 1, "spreadByField": "cluster",
                                                                  "minGroups": 1}]
    assert updated["spec"]["placement"]["replicaScheduling"] == {"replicaSchedulingType": "Divided",
                                                                 "replicaDivisionPreference": "Weighted"}
    assert updated["spec"]["preserveResourcesOnDeletion"] is True
    assert updated["spec"]["clusters"] == [{"name": "member1", "replicas": 3}]
    assert (labels_of(updated)["resourcebinding.karmada.io/permanent-id"]
            == labels_of(rb)["resourcebinding.karmada.io/permanent-id"])


async def test_reserved_and_kube_namespaces_are_ignored(plane: Manager, http: aiohttp.ClientSession) -> None:
    for ns in ("kube-public", "karmada-system"):
        await ensure_namespace(http, ns)
        await send(http, "POST", PPS.format(ns=ns), policy("all", [{"apiVersion": "v1", "kind": "ConfigMap"}],
                                                            namespace=ns))
        await send(http, "POST", f"/api/v1/namespaces/{ns}/configmaps", {"metadata": {"name": "cm"}})
    # A control: the same in an ordinary namespace is bound, so the detector has had its chance.
    await send(http, "POST", PPS.format(ns="default"), policy("all", [{"apiVersion": "v1", "kind": "ConfigMap"}]))
    await send(http, "POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "cm"}})
    await wait_binding(http, RBS.format(ns="default") + "/cm-configmap")
    for ns in ("kube-public", "karmada-system"):
        assert await get_or_none(http, RBS.format(ns=ns) + "/cm-configmap") is None
        cm = await get_or_none(http, f"/api/v1/namespaces/{ns}/configmaps/cm")
        assert "propagationpolicy.karmada.io/name" not in annotations_of(cm)
