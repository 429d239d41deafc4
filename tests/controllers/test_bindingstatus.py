"""Binding status aggregation against the dev API server, with real informers and a Manager.

Rows of Karmada's binding status aggregation (``AggregateResourceBindingWorkStatus`` for RB and
CRB, ``assembleWorkStatus``, ``generateFullyAppliedCondition``/``worksFullyApplied`` in
``pkg/util/helper/workstatus.go``, ``syncBindingStatus`` in ``pkg/controllers/status/``), the
template status the native AggregateStatus interpreter folds
(``pkg/resourceinterpreter/default/native/aggregatestatus.go``), event volume (one event per
change) and the status controllers' re-aggregation triggers (their predicates). Works and
bindings are created the way Karmada's binding controller creates them (labels, annotations,
``karmada-es-<cluster>`` namespaces); Work status goes through the ``/status`` subresource.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from prometheus_client import REGISTRY

from controller_manager.apierrors import ApiError
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import EventRecorder
from controller_manager.informer import InformerFactory
from controller_manager.manager import Manager, ManagerOptions
from controller_manager.mutationcache import MutationCache
from controller_manager.ratelimiter import RateLimiterOptions
from controller_manager.reconcile import Request, TerminalError
from controller_manager.resource import Resource
from controllers.bindingstatus import (
    AssembleError,
    BindingStatusReconciler,
    assemble_work_status,
    binding_created,
    binding_status_with,
    binding_updated,
    equal_identifier,
    fully_applied_condition,
    manifest_index,
    setup_cluster_resource_binding_status,
    setup_resource_binding_status,
    work_status_changed,
    work_to_cluster_resource_binding,
    work_to_resource_binding,
    works_fully_applied,
)
from devplane.apiserver.server import ApiServer
from karmada_api.bindings import CRB_KIND, RB_KIND, WORK_INDEX_BY_RB_ID, existing_clusters, work_index
from karmada_api.labels import (
    CRB_NAME_ANNOTATION,
    CRB_PERMANENT_ID,
    RB_NAME_ANNOTATION,
    RB_NAMESPACE_ANNOTATION,
    RB_PERMANENT_ID,
)
from karmada_api.resources import RESOURCE_BINDINGS, WORKS
from kube_api.timeutil import now_text
from tests.conftest import ensure_namespace, events_about, eventually, get_or_none, send

RBS = "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings"
CRBS = "/apis/work.karmada.io/v1alpha2/clusterresourcebindings"
WORKS_PATH = "/apis/work.karmada.io/v1alpha1/namespaces/{ns}/works"
DEPLOYMENTS = "/apis/apps/v1/namespaces/{ns}/deployments"
PVS = "/api/v1/persistentvolumes"
CLUSTERROLES = "/apis/rbac.authorization.k8s.io/v1/clusterroles"

DEPLOY_REF = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "test-deployment"}
PV_REF = {"apiVersion": "v1", "kind": "PersistentVolume", "name": "test-pv"}
SUCCEED = "AggregateStatusSucceed"
TEMPLATE_MESSAGE = "Update Resource with AggregatedStatus successfully."
FAST = RateLimiterOptions(base_delay=0.05, max_delay=1.0)


# ----------------------------------------------------------------------------- API helpers





async def create_deployment(http: aiohttp.ClientSession, name: str = "test-deployment",
                            ns: str = "default") -> dict[str, Any]:
    labels = {"app": name}
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    return await send(http, "POST", DEPLOYMENTS.format(ns=ns), body)


async def create_pv(http: aiohttp.ClientSession, name: str = "test-pv") -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": "/tmp/pv"}}}
    return await send(http, "POST", PVS, body)


def manifest_of(ref: dict[str, str]) -> dict[str, Any]:
    meta = {"name": ref["name"], **({"namespace": ref["namespace"]} if ref.get("namespace") else {})}
    return {"apiVersion": ref["apiVersion"], "kind": ref["kind"], "metadata": meta}


@dataclass
class Binding:
    """A binding created for a test: where it lives and what its Works must carry."""

    name: str
    namespace: str  # "" for a ClusterResourceBinding
    permanent_id: str
    ref: dict[str, str]

    @property
    def path(self) -> str:
        base = RBS.format(ns=self.namespace) if self.namespace else CRBS
        return f"{base}/{self.name}"

    @property
    def request(self) -> Request:
        return Request(self.namespace, self.name)

    def work_metadata(self, name: str, cluster: str) -> dict[str, Any]:
        if self.namespace:
            labels = {RB_PERMANENT_ID: self.permanent_id}
            annotations = {RB_NAMESPACE_ANNOTATION: self.namespace, RB_NAME_ANNOTATION: self.name}
        else:
            labels = {CRB_PERMANENT_ID: self.permanent_id}
            annotations = {CRB_NAME_ANNOTATION: self.name}
        return {"name": name, "namespace": f"karmada-es-{cluster}", "labels": labels, "annotations": annotations}


async def create_binding(http: aiohttp.ClientSession, name: str, clusters: list[str], *, ns: str = "default",
                         ref: dict[str, str] | None = None, scheduled: bool = True,
                         spec_extra: dict[str, Any] | None = None) -> Binding:
    """A scheduled binding, as karmada-scheduler leaves it (``lastScheduledTime`` set)."""
    ref = ref or (DEPLOY_REF if ns else PV_REF)
    binding = Binding(name, ns, f"id-{ns or 'cluster'}-{name}", ref)
    label = RB_PERMANENT_ID if ns else CRB_PERMANENT_ID
    body = {"metadata": {"name": name, "labels": {label: binding.permanent_id}},
            "spec": {"resource": dict(ref), "clusters": [{"name": c} for c in clusters], **(spec_extra or {})}}
    if ns:
        body["metadata"]["namespace"] = ns
    await send(http, "POST", RBS.format(ns=ns) if ns else CRBS, body)
    if scheduled:
        await send(http, "PATCH", f"{binding.path}/status", {"status": {"lastScheduledTime": now_text()}})
    return binding


async def touch_binding(http: aiohttp.ClientSession, binding: Binding, version: str) -> None:
    """What the binding controller does when the template changes: a new ``spec.resource.resourceVersion``."""
    await send(http, "PATCH", binding.path, {"spec": {"resource": {"resourceVersion": version}}})


async def create_work(http: aiohttp.ClientSession, binding: Binding, cluster: str, name: str = "work",
                      *, finalizers: list[str] | None = None) -> str:
    await ensure_namespace(http, f"karmada-es-{cluster}")
    meta = binding.work_metadata(name, cluster)
    if finalizers:
        meta["finalizers"] = finalizers
    body = {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work", "metadata": meta,
            "spec": {"workload": {"manifests": [manifest_of(binding.ref)]}}}
    await send(http, "POST", WORKS_PATH.format(ns=f"karmada-es-{cluster}"), body)
    return f"{WORKS_PATH.format(ns=f'karmada-es-{cluster}')}/{name}"


def applied_condition(status: str = "True", message: str = "Manifest has been successfully applied",
                      reason: str = "AppliedSuccessful") -> dict[str, Any]:
    return {"type": "Applied", "status": status, "reason": reason, "message": message,
            "lastTransitionTime": now_text()}


def manifest_status(ref: dict[str, str], status: dict[str, Any] | None, health: str = "Healthy",
                    ordinal: int = 0) -> dict[str, Any]:
    group, _, version = ref["apiVersion"].rpartition("/")
    identifier = {"ordinal": ordinal, "group": group, "version": version, "kind": ref["kind"],
                  "resource": ref["kind"].lower() + "s", "name": ref["name"],
                  **({"namespace": ref["namespace"]} if ref.get("namespace") else {})}
    result: dict[str, Any] = {"identifier": identifier}
    if status is not None:
        result["status"] = status
    if health:
        result["health"] = health
    return result


async def set_work_status(http: aiohttp.ClientSession, work_path: str, conditions: list[dict[str, Any]],
                          manifest_statuses: list[dict[str, Any]] | None = None) -> None:
    status: dict[str, Any] = {"conditions": conditions}
    if manifest_statuses is not None:
        status["manifestStatuses"] = manifest_statuses
    await send(http, "PATCH", f"{work_path}/status", {"status": status})


async def applied_work(http: aiohttp.ClientSession, binding: Binding, cluster: str, status: dict[str, Any],
                       *, name: str = "work", health: str = "Healthy") -> str:
    """A Work the member cluster applied, reflecting ``status`` for the binding's resource."""
    path = await create_work(http, binding, cluster, name)
    await set_work_status(http, path, [applied_condition()], [manifest_status(binding.ref, status, health)])
    return path


def condition(obj: dict[str, Any] | None, ctype: str = "FullyApplied") -> dict[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == ctype:
            return dict(cond)
    return None


async def wait_fully_applied(http: aiohttp.ClientSession, binding: Binding, status: str,
                             items: int | None = None) -> dict[str, Any]:
    """The binding once its FullyApplied condition has ``status`` (and ``items`` aggregated items)."""

    async def check() -> dict[str, Any] | None:
        obj = await get_or_none(http, binding.path)
        cond = condition(obj)
        if obj is None or cond is None or cond["status"] != status:
            return None
        if items is not None and len(obj["status"].get("aggregatedStatus") or []) != items:
            return None
        return obj

    result: dict[str, Any] = await eventually(check)
    return result


def aggregations(result: str) -> float:
    return REGISTRY.get_sample_value("binding_status_aggregations_total", {"result": result}) or 0.0


# ----------------------------------------------------------------------------- fixtures


@dataclass
class Env:
    """A manager with both binding status controllers; started when the test has set the scene."""

    http: aiohttp.ClientSession
    manager: Manager
    rb: Controller
    crb: Controller
    task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.manager.run())
        await self.manager.informers.wait_for_sync(timeout=10)

    async def flush_events(self) -> None:
        await self.manager.flush_events()


@pytest.fixture
async def env(kube: KubeClient, http: aiohttp.ClientSession) -> AsyncIterator[Env]:
    manager = Manager(kube, ManagerOptions(name="test-binding-status", metrics_bind_address="127.0.0.1:0",
                                           health_probe_bind_address="127.0.0.1:0"))
    rb = setup_resource_binding_status(manager, workers=2, rate_limiter_options=FAST)
    crb = setup_cluster_resource_binding_status(manager, workers=2, rate_limiter_options=FAST)
    environment = Env(http, manager, rb, crb)
    yield environment
    if environment.task is not None:
        manager.request_shutdown()
        await asyncio.wait_for(environment.task, 10)


# ----------------------------------------------------------------------------- ResourceBinding rows


async def test_rb_single_work(env: Env, http: aiohttp.ClientSession) -> None:
    deploy = await create_deployment(http)
    binding = await create_binding(http, "binding-1", ["member1"])
    await applied_work(http, binding, "member1", {"replicas": 3})
    updated_before = aggregations("updated")
    await env.start()  # binding create (initial list) with lastScheduledTime triggers
    obj = await wait_fully_applied(http, binding, "True", items=1)
    assert obj["status"]["aggregatedStatus"] == [
        {"clusterName": "member1", "status": {"replicas": 3}, "applied": True, "health": "Healthy"}]
    cond = condition(obj)
    assert cond is not None
    assert (cond["reason"], cond["message"]) == ("FullyAppliedSuccess", "All works have been successfully applied")
    assert "observedGeneration" not in cond
    assert obj["status"]["lastScheduledTime"]  # other status fields are kept
    [event] = await eventually(lambda: events_about(http, obj, SUCCEED))
    assert event["message"] == "Update ResourceBinding(default/binding-1) with AggregatedStatus successfully."
    assert event["type"] == "Normal"
    assert event["source"]["component"] == "resource-binding-status-controller"
    assert aggregations("updated") > updated_before

    async def template_status() -> dict[str, Any] | None:
        current = await get_or_none(http, f"{DEPLOYMENTS.format(ns='default')}/test-deployment")
        return current if current and (current.get("status") or {}).get("replicas") == 3 else None

    current = await eventually(template_status)
    assert current["status"] == {"replicas": 3}  # members report no generations: observedGeneration kept
    [template_event] = await eventually(lambda: events_about(http, deploy, SUCCEED))
    assert template_event["message"] == TEMPLATE_MESSAGE
    assert template_event["source"]["component"] == "resource-binding-status-controller"


async def test_rb_work_not_found(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "binding-2", ["member1"])
    await env.start()
    obj = await wait_fully_applied(http, binding, "False")
    assert "aggregatedStatus" not in obj["status"]
    cond = condition(obj)
    assert cond is not None
    assert (cond["reason"], cond["message"]) == (
        "FullyAppliedFailed", "Failed to apply all works, see status.aggregatedStatus for details")


async def test_rb_not_applied(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "binding-3", ["member1"])
    path = await create_work(http, binding, "member1")
    await set_work_status(http, path, [applied_condition("False", "test message", "AppliedFailed")],
                          [manifest_status(DEPLOY_REF, {"replicas": 3})])
    await env.start()
    obj = await wait_fully_applied(http, binding, "False", items=1)
    assert obj["status"]["aggregatedStatus"] == [
        {"clusterName": "member1", "appliedMessage": "test message", "health": "Unknown"}]


async def test_rb_two_clusters(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "binding-4", ["member1", "member2"])
    await applied_work(http, binding, "member2", {"replicas": 3})
    await applied_work(http, binding, "member1", {"replicas": 3})
    await env.start()
    obj = await wait_fully_applied(http, binding, "True", items=2)
    assert [i["clusterName"] for i in obj["status"]["aggregatedStatus"]] == ["member1", "member2"]
    assert all(i["applied"] for i in obj["status"]["aggregatedStatus"])


async def test_rb_work_without_status(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "binding-5", ["member1"])
    await create_work(http, binding, "member1")
    await env.start()
    obj = await wait_fully_applied(http, binding, "False", items=1)
    assert obj["status"]["aggregatedStatus"] == [{"clusterName": "member1", "health": "Unknown"}]


# ----------------------------------------------------------------------------- ClusterResourceBinding rows


async def test_crb_single_work_and_pv_template(env: Env, http: aiohttp.ClientSession) -> None:
    pv = await create_pv(http)
    binding = await create_binding(http, "binding-1", ["member1"], ns="")
    await applied_work(http, binding, "member1", {"phase": "Bound"})
    await env.start()
    obj = await wait_fully_applied(http, binding, "True", items=1)
    assert obj["status"]["aggregatedStatus"] == [
        {"clusterName": "member1", "status": {"phase": "Bound"}, "applied": True, "health": "Healthy"}]
    [event] = await eventually(lambda: events_about(http, obj, SUCCEED))
    assert event["message"] == "Update ClusterResourceBinding(binding-1) with AggregatedStatus successfully."
    assert event["source"]["component"] == "cluster-resource-binding-status-controller"

    async def bound() -> bool:
        current = await get_or_none(http, f"{PVS}/test-pv")
        return bool(current and current.get("status") == {"phase": "Bound"})

    await eventually(bound)
    [template_event] = await eventually(lambda: events_about(http, pv, SUCCEED))
    assert template_event["message"] == TEMPLATE_MESSAGE


async def test_crb_work_not_found(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "binding-2", ["member1"], ns="")
    await env.start()
    obj = await wait_fully_applied(http, binding, "False")
    assert "aggregatedStatus" not in obj["status"]


async def test_crb_not_applied(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "binding-3", ["member1"], ns="")
    path = await create_work(http, binding, "member1")
    await set_work_status(http, path, [applied_condition("False", "test message", "AppliedFailed")])
    await env.start()
    obj = await wait_fully_applied(http, binding, "False", items=1)
    assert obj["status"]["aggregatedStatus"] == [
        {"clusterName": "member1", "appliedMessage": "test message", "health": "Unknown"}]


async def test_crb_mixed(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "binding-4", ["member1", "member2"], ns="")
    await applied_work(http, binding, "member1", {"phase": "Bound"})
    path = await create_work(http, binding, "member2")
    await set_work_status(http, path, [applied_condition("False", "test message", "AppliedFailed")])
    await env.start()
    obj = await wait_fully_applied(http, binding, "False", items=2)
    first, second = obj["status"]["aggregatedStatus"]
    assert (first["clusterName"], first.get("applied", False)) == ("member1", True)
    assert (second["clusterName"], second.get("applied", False)) == ("member2", False)


async def test_crb_template_without_interpreter_is_left_alone(env: Env, http: aiohttp.ClientSession) -> None:
    role = await send(http, "POST", CLUSTERROLES, {"metadata": {"name": "reader"}, "rules": []})
    ref = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "reader"}
    binding = await create_binding(http, "reader-clusterrole", ["member1"], ns="", ref=ref)
    await applied_work(http, binding, "member1", {"anything": 1})
    await env.start()
    await wait_fully_applied(http, binding, "True", items=1)
    current = await get_or_none(http, f"{CLUSTERROLES}/reader")
    assert current is not None and current["metadata"]["resourceVersion"] == role["metadata"]["resourceVersion"]
    assert await events_about(http, role, SUCCEED) == []


# ----------------------------------------------------------------------------- assembleWorkStatus rows


async def test_work_being_deleted_is_not_aggregated(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "deleting", ["member1"])
    path = await create_work(http, binding, "member1", finalizers=["example.io/hold"])
    await set_work_status(http, path, [applied_condition()], [manifest_status(DEPLOY_REF, {"replicas": 3})])
    await send(http, "DELETE", path)
    await env.start()
    obj = await wait_fully_applied(http, binding, "False")
    assert "aggregatedStatus" not in obj["status"]


@pytest.mark.parametrize(("status", "message"), [("False", "Failed to apply"), ("Unknown", "Status unknown")])
async def test_not_applied_message_is_kept(env: Env, http: aiohttp.ClientSession, status: str, message: str) -> None:
    binding = await create_binding(http, f"applied-{status.lower()}", ["member1"])
    await env.start()
    path = await create_work(http, binding, "member1")
    await set_work_status(http, path, [applied_condition(status, message, "Reason")])  # a status change triggers
    obj = await wait_fully_applied(http, binding, "False", items=1)
    assert obj["status"]["aggregatedStatus"] == [
        {"clusterName": "member1", "appliedMessage": message, "health": "Unknown"}]


async def test_applied_without_matching_manifest_status_is_unknown_health(env: Env,
                                                                          http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "no-manifest-status", ["member1"])
    path = await create_work(http, binding, "member1")
    other = dict(DEPLOY_REF, name="someone-else")
    await set_work_status(http, path, [applied_condition()], [manifest_status(other, {"replicas": 1})])
    await env.start()
    obj = await wait_fully_applied(http, binding, "True", items=1)
    assert obj["status"]["aggregatedStatus"] == [{"clusterName": "member1", "applied": True, "health": "Unknown"}]


# ----------------------------------------------------------------------------- FullyApplied


async def test_fully_applied_regardless_of_health(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "health", ["c1", "c2"])
    await applied_work(http, binding, "c1", {"replicas": 1}, health="Healthy")
    await applied_work(http, binding, "c2", {"replicas": 1}, health="Unknown")
    await env.start()
    obj = await wait_fully_applied(http, binding, "True", items=2)
    assert [i["health"] for i in obj["status"]["aggregatedStatus"]] == ["Healthy", "Unknown"]


async def test_not_fully_applied_when_a_target_has_no_work(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "partial", ["c1", "c2"])
    await applied_work(http, binding, "c1", {"replicas": 1})
    await env.start()
    await wait_fully_applied(http, binding, "False", items=1)


async def test_last_transition_time_moves_only_when_status_changes(env: Env, http: aiohttp.ClientSession) -> None:
    old_time = "2020-01-01T00:00:00Z"
    stale_true = {"type": "FullyApplied", "status": "True", "reason": "Old", "message": "old",
                  "lastTransitionTime": old_time}
    stale_false = dict(stale_true, status="False")
    kept = await create_binding(http, "kept", ["member1"])
    await send(http, "PATCH", f"{kept.path}/status", {"status": {"conditions": [stale_true]}})
    await applied_work(http, kept, "member1", {"replicas": 1})
    moved = await create_binding(http, "moved", ["member1"])
    await send(http, "PATCH", f"{moved.path}/status", {"status": {"conditions": [stale_false]}})
    await applied_work(http, moved, "member1", {"replicas": 1}, name="work-moved")
    await env.start()

    async def refreshed(binding: Binding) -> dict[str, Any] | None:
        cond = condition(await get_or_none(http, binding.path))
        return cond if cond and cond["reason"] == "FullyAppliedSuccess" else None

    kept_cond = await eventually(lambda: refreshed(kept))
    assert kept_cond["lastTransitionTime"] == old_time
    assert kept_cond["message"] == "All works have been successfully applied"
    moved_cond = await eventually(lambda: refreshed(moved))
    assert moved_cond["status"] == "True"
    assert moved_cond["lastTransitionTime"] != old_time


async def test_graceful_eviction_target_counts_unless_purged_directly(env: Env,
                                                                      http: aiohttp.ClientSession) -> None:
    tasks = [{"fromCluster": "old", "purgeMode": "Gracefully", "reason": "TaintUntolerated", "producer": "t"},
             {"fromCluster": "gone", "purgeMode": "Directly", "reason": "TaintUntolerated", "producer": "t"}]
    binding = await create_binding(http, "evicting", ["new"], spec_extra={"gracefulEvictionTasks": tasks})
    await applied_work(http, binding, "new", {"replicas": 1})
    await env.start()
    await wait_fully_applied(http, binding, "False", items=1)  # "old" is still a target without a Work
    await applied_work(http, binding, "old", {"replicas": 1})
    await wait_fully_applied(http, binding, "True", items=2)


# ----------------------------------------------------------------------------- template status (AggregateStatus)


async def test_template_deployment_status_from_two_clusters(env: Env, http: aiohttp.ClientSession) -> None:
    deploy = await create_deployment(http)
    generation = deploy["metadata"]["generation"]
    binding = await create_binding(http, "test-deployment-deployment", ["member1", "member2"])
    caught_up = {"generation": 4, "observedGeneration": 4, "resourceTemplateGeneration": generation}
    await applied_work(http, binding, "member1", {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2,
                                                  "availableReplicas": 2, **caught_up})
    await applied_work(http, binding, "member2", {"replicas": 1, "readyReplicas": 0, "updatedReplicas": 1,
                                                  "availableReplicas": 0, "unavailableReplicas": 1, **caught_up})
    await env.start()
    expected = {"observedGeneration": generation, "replicas": 3, "readyReplicas": 2, "updatedReplicas": 3,
                "availableReplicas": 2, "unavailableReplicas": 1}

    async def aggregated() -> bool:
        current = await get_or_none(http, f"{DEPLOYMENTS.format(ns='default')}/test-deployment")
        return bool(current and current.get("status") == expected)

    await eventually(aggregated)
    [event] = await eventually(lambda: events_about(http, deploy, SUCCEED))
    assert event["message"] == TEMPLATE_MESSAGE
    assert event["count"] == 1


async def test_missing_template_is_not_an_error(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "orphan", ["member1"], ref=dict(DEPLOY_REF, name="does-not-exist"))
    await applied_work(http, binding, "member1", {"replicas": 3})
    errors_before = aggregations("error")
    await env.start()
    await wait_fully_applied(http, binding, "True", items=1)
    assert aggregations("error") == errors_before


# ----------------------------------------------------------------------------- events and triggers


async def test_one_change_gives_one_event_and_steady_state_adds_none(env: Env, http: aiohttp.ClientSession) -> None:
    deploy = await create_deployment(http)
    binding = await create_binding(http, "steady", ["member1"])
    path = await applied_work(http, binding, "member1", {"replicas": 3})
    await env.start()
    obj = await wait_fully_applied(http, binding, "True", items=1)
    await eventually(lambda: events_about(http, obj, SUCCEED))
    await eventually(lambda: events_about(http, deploy, SUCCEED))
    template_rv = (await get_or_none(http, f"{DEPLOYMENTS.format(ns='default')}/test-deployment") or {})["metadata"][
        "resourceVersion"]

    unchanged = aggregations("unchanged")
    # A Work status change that does not change the aggregate, a template change, and a plain resync.
    progressing = {"type": "Progressing", "status": "False", "reason": "Done", "message": "",
                   "lastTransitionTime": now_text()}
    await set_work_status(http, path, [applied_condition(), progressing],
                          [manifest_status(DEPLOY_REF, {"replicas": 3})])
    await eventually(lambda: aggregations("unchanged") >= unchanged + 1)
    await touch_binding(http, binding, "12345")
    await eventually(lambda: aggregations("unchanged") >= unchanged + 2)
    rv = (await get_or_none(http, binding.path) or {})["metadata"]["resourceVersion"]
    env.rb.enqueue(binding.request)
    await eventually(lambda: aggregations("unchanged") >= unchanged + 3)
    await env.flush_events()

    [binding_event] = await events_about(http, obj, SUCCEED)
    [template_event] = await events_about(http, deploy, SUCCEED)
    assert binding_event["count"] == 1
    assert template_event["count"] == 1
    current = await get_or_none(http, binding.path)
    template = await get_or_none(http, f"{DEPLOYMENTS.format(ns='default')}/test-deployment")
    assert current is not None and template is not None
    assert current["status"] == obj["status"]
    assert current["metadata"]["resourceVersion"] == rv  # no status write
    assert template["metadata"]["resourceVersion"] == template_rv



async def test_work_status_change_reaggregates(env: Env, http: aiohttp.ClientSession) -> None:
    deploy = await create_deployment(http)
    binding = await create_binding(http, "changing", ["member1"])
    path = await applied_work(http, binding, "member1", {"replicas": 3})
    await env.start()
    await wait_fully_applied(http, binding, "True", items=1)
    await set_work_status(http, path, [applied_condition()], [manifest_status(DEPLOY_REF, {"replicas": 5})])

    async def five() -> bool:
        obj = await get_or_none(http, binding.path)
        template = await get_or_none(http, f"{DEPLOYMENTS.format(ns='default')}/test-deployment")
        return bool(obj and obj["status"]["aggregatedStatus"][0]["status"] == {"replicas": 5}
                    and template and (template.get("status") or {}).get("replicas") == 5)

    await eventually(five)
    await set_work_status(http, path, [applied_condition("False", "apply failed", "AppliedFailed")])
    obj = await wait_fully_applied(http, binding, "False", items=1)
    assert obj["status"]["aggregatedStatus"] == [
        {"clusterName": "member1", "appliedMessage": "apply failed", "health": "Unknown"}]

    async def zero() -> bool:
        template = await get_or_none(http, f"{DEPLOYMENTS.format(ns='default')}/test-deployment")
        return bool(template and "replicas" not in (template.get("status") or {}))

    await eventually(zero)  # a member without status adds nothing to the sums
    assert deploy["metadata"]["uid"]


async def test_work_delete_reaggregates(env: Env, http: aiohttp.ClientSession) -> None:
    await create_deployment(http)
    binding = await create_binding(http, "shrinking", ["member1", "member2"])
    await applied_work(http, binding, "member1", {"replicas": 2})
    second = await applied_work(http, binding, "member2", {"replicas": 1})
    await env.start()
    await wait_fully_applied(http, binding, "True", items=2)
    await send(http, "DELETE", second)
    obj = await wait_fully_applied(http, binding, "False", items=1)
    assert obj["status"]["aggregatedStatus"][0]["clusterName"] == "member1"

    async def two() -> bool:
        template = await get_or_none(http, f"{DEPLOYMENTS.format(ns='default')}/test-deployment")
        return bool(template and (template.get("status") or {}).get("replicas") == 2)

    await eventually(two)


async def test_binding_template_change_triggers(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "late", ["member1"])
    await env.start()
    await wait_fully_applied(http, binding, "False")
    await applied_work(http, binding, "member1", {"replicas": 1})  # the status write triggers too
    await wait_fully_applied(http, binding, "True", items=1)


async def test_unscheduled_binding_then_template_change(env: Env, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "unscheduled", ["member1"], scheduled=False)
    await env.start()
    await touch_binding(http, binding, "1")  # not scheduled: ignored
    await send(http, "PATCH", f"{binding.path}/status", {"status": {"lastScheduledTime": now_text()}})
    await touch_binding(http, binding, "2")  # scheduled and the template changed: reconciled
    await wait_fully_applied(http, binding, "False")


# ----------------------------------------------------------------------------- direct reconciles


@dataclass
class Direct:
    """A reconciler over running informers, without a controller: for conflict and error paths."""

    reconciler: BindingStatusReconciler
    factory: InformerFactory
    recorder: EventRecorder


async def direct(kube: KubeClient) -> Direct:
    factory = InformerFactory(kube)
    bindings = factory.informer(RESOURCE_BINDINGS)
    works = factory.informer(WORKS)
    works.add_indexers({WORK_INDEX_BY_RB_ID: work_index(RB_PERMANENT_ID)})
    recorder = EventRecorder(kube, RB_KIND.status_controller)
    factory.start()
    await factory.wait_for_sync(timeout=10)
    reconciler = BindingStatusReconciler(kube, RB_KIND, bindings.mutation_cache(), works.store, recorder)
    return Direct(reconciler, factory, recorder)


async def work_cached(setup: Direct, replicas: int) -> None:
    """Until the reconciler's Work cache shows member1's Work reporting ``replicas``."""

    def cached() -> bool:
        work = setup.reconciler.works.get("karmada-es-member1/work") or {}
        return bool(work.get("status", {}).get("manifestStatuses", [{}])[0].get("status") == {"replicas": replicas})

    await eventually(cached)


async def reconcile_once(setup: Direct, binding: Binding) -> None:
    """One reconcile of ``binding`` once the informer has it; the informers are stopped afterwards."""
    try:
        await eventually(lambda: setup.reconciler.bindings.get(str(binding.request)) is not None)
        await setup.reconciler.reconcile(binding.request)
    finally:
        await setup.factory.stop()


class RacingClient(KubeClient):
    """Before the first binding status write, change a Work and the binding behind the writer's back."""

    def __init__(self, base: KubeClient, race: Any) -> None:
        super().__init__(base.api_client, qps=0)
        self.race = race
        self.raced = False
        self.status_writes = 0

    async def update(self, resource: Resource, obj: dict[str, Any], *, subresource: str = "") -> dict[str, Any]:
        if resource == RESOURCE_BINDINGS and subresource == "status":
            self.status_writes += 1
            if not self.raced:
                self.raced = True
                await self.race()
        return await super().update(resource, obj, subresource=subresource)


async def test_conflict_recomputes_from_fresh_works_and_latest_binding(kube: KubeClient,
                                                                       http: aiohttp.ClientSession) -> None:
    await create_deployment(http)
    binding = await create_binding(http, "racy", ["member1"])
    path = await applied_work(http, binding, "member1", {"replicas": 3})
    setup = await direct(kube)

    async def race() -> None:
        # the member reports new status, and another writer updates the binding's status
        await set_work_status(http, path, [applied_condition()], [manifest_status(DEPLOY_REF, {"replicas": 7})])
        await send(http, "PATCH", f"{binding.path}/status", {"status": {"schedulerObservedGeneration": 1}})
        await work_cached(setup, 7)

    racing = RacingClient(kube, race)
    setup.reconciler.client = racing
    await reconcile_once(setup, binding)
    assert racing.status_writes == 2  # the first write was a 409, retried
    obj = await get_or_none(http, binding.path)
    assert obj is not None
    assert obj["status"]["schedulerObservedGeneration"] == 1  # the other writer's change survived
    assert obj["status"]["aggregatedStatus"][0]["status"] == {"replicas": 7}  # computed from the fresh Work
    template = await get_or_none(http, f"{DEPLOYMENTS.format(ns='default')}/test-deployment")
    assert template is not None and template["status"]["replicas"] == 7
    await setup.recorder.flush()
    assert len(await events_about(http, obj, SUCCEED)) == 1


class CountingClient(KubeClient):
    """Counts the binding GETs and status writes, and the 409s among the writes."""

    def __init__(self, base: KubeClient) -> None:
        super().__init__(base.api_client, qps=0)
        self.binding_gets = 0
        self.status_writes = 0
        self.conflicts = 0

    async def get(self, resource: Resource, name: str, namespace: str = "") -> dict[str, Any]:
        if resource == RESOURCE_BINDINGS:
            self.binding_gets += 1
        return await super().get(resource, name, namespace)

    async def update(self, resource: Resource, obj: dict[str, Any], *, subresource: str = "") -> dict[str, Any]:
        if resource == RESOURCE_BINDINGS and subresource == "status":
            self.status_writes += 1
            try:
                return await super().update(resource, obj, subresource=subresource)
            except ApiError as exc:
                self.conflicts += exc.is_conflict
                raise
        return await super().update(resource, obj, subresource=subresource)


def aggregated_replicas(obj: dict[str, Any] | None) -> Any:
    return ((obj or {}).get("status") or {}).get("aggregatedStatus", [{}])[0].get("status", {}).get("replicas")


async def test_steady_state_reads_the_binding_from_the_cache(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    await create_deployment(http)
    binding = await create_binding(http, "cached", ["member1"])
    await applied_work(http, binding, "member1", {"replicas": 3})
    setup = await direct(kube)
    counting = CountingClient(kube)
    setup.reconciler.client = counting
    await reconcile_once(setup, binding)
    assert aggregated_replicas(await get_or_none(http, binding.path)) == 3
    assert (counting.binding_gets, counting.status_writes, counting.conflicts) == (0, 1, 0)


async def test_stale_cached_binding_costs_a_409_and_ends_right(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    await create_deployment(http)
    binding = await create_binding(http, "stale", ["member1"])
    await applied_work(http, binding, "member1", {"replicas": 3})
    stale = Indexer()
    stale.upsert(await send(http, "GET", binding.path))
    # another writer moves the binding on; the reconciler's cache never sees it
    await send(http, "PATCH", f"{binding.path}/status", {"status": {"schedulerObservedGeneration": 4}})
    setup = await direct(kube)
    counting = CountingClient(kube)
    setup.reconciler.client, setup.reconciler.bindings = counting, MutationCache(stale)
    try:
        await work_cached(setup, 3)
        await setup.reconciler.reconcile(binding.request)
    finally:
        await setup.factory.stop()
    obj = await get_or_none(http, binding.path)
    assert obj is not None and aggregated_replicas(obj) == 3
    assert obj["status"]["schedulerObservedGeneration"] == 4  # the other writer's change survived
    assert (condition(obj) or {}).get("status") == "True"
    assert (counting.binding_gets, counting.status_writes, counting.conflicts) == (1, 2, 1)


async def test_a_change_back_before_the_cache_sees_our_write_is_written(kube: KubeClient,
                                                                        http: aiohttp.ClientSession) -> None:
    """Works go 3 → 5 → 3 faster than the binding's watch: the last reconcile must not compare with the cached
    copy (which says 3) and skip, since the server holds our write of 5."""
    await create_deployment(http)
    binding = await create_binding(http, "flapping", ["member1"])
    path = await applied_work(http, binding, "member1", {"replicas": 3})
    setup = await direct(kube)
    counting = CountingClient(kube)
    setup.reconciler.client = counting
    frozen = Indexer()
    try:
        await work_cached(setup, 3)
        await setup.reconciler.reconcile(binding.request)  # through the live informer: the status says 3
        frozen.upsert(await send(http, "GET", binding.path))
        setup.reconciler.bindings = MutationCache(frozen)  # from now on, the cache lags behind
        for replicas in (5, 3):
            await set_work_status(http, path, [applied_condition()],
                                  [manifest_status(DEPLOY_REF, {"replicas": replicas})])
            await work_cached(setup, replicas)
            await setup.reconciler.reconcile(binding.request)
            assert aggregated_replicas(await get_or_none(http, binding.path)) == replicas
    finally:
        await setup.factory.stop()
    assert (counting.status_writes, counting.conflicts) == (3, 0)
    template = await get_or_none(http, f"{DEPLOYMENTS.format(ns='default')}/test-deployment")
    assert template is not None and template["status"]["replicas"] == 3


class FailingClient(KubeClient):
    """Every binding status write fails with a server error."""

    def __init__(self, base: KubeClient) -> None:
        super().__init__(base.api_client, qps=0)

    async def update(self, resource: Resource, obj: dict[str, Any], *, subresource: str = "") -> dict[str, Any]:
        if resource == RESOURCE_BINDINGS and subresource == "status":
            raise ApiError(500, "InternalError", "etcd is on fire")
        return await super().update(resource, obj, subresource=subresource)


async def test_failed_binding_write_records_a_warning(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "unlucky", ["member1"])
    await applied_work(http, binding, "member1", {"replicas": 3})
    setup = await direct(kube)
    setup.reconciler.client = FailingClient(kube)
    errors = aggregations("error")
    try:
        await eventually(lambda: setup.reconciler.bindings.get("default/unlucky") is not None)
        with pytest.raises(ApiError):
            await setup.reconciler.reconcile(binding.request)
    finally:
        await setup.factory.stop()
    assert aggregations("error") == errors + 1
    await setup.recorder.flush()
    obj = await get_or_none(http, binding.path)
    assert obj is not None
    [warning] = await events_about(http, obj, "AggregateStatusFailed")
    assert warning["type"] == "Warning"
    assert "etcd is on fire" in warning["message"]
    assert await events_about(http, obj, SUCCEED) == []


async def test_a_binding_write_stored_despite_a_500_is_not_reported_failed(kube: KubeClient, server: ApiServer,
                                                                        http: aiohttp.ClientSession) -> None:
    """kube-apiserver answers 500 ServerTimeout (etcd timed out, ``Retry-After: 2``) for a status write that is
    stored all the same; the client sends it again and meets its own write as a 409. As client-go would, the
    reconcile reads again and finds the status current: nothing to write, no AggregateStatusFailed Warning."""
    binding = await create_binding(http, "stored", ["member1"])
    await applied_work(http, binding, "member1", {"replicas": 3})
    fault = server.inject_fault("PUT", "/resourcebindings/stored/status", code=500, reason="ServerTimeout",
                                retry_after=1, after_dispatch=True)
    setup = await direct(kube)
    try:
        await eventually(lambda: setup.reconciler.bindings.get("default/stored") is not None)
        await setup.reconciler.reconcile(binding.request)
    finally:
        await setup.factory.stop()
    assert fault.times == 0
    await setup.recorder.flush()
    obj = await get_or_none(http, binding.path)
    assert obj is not None and obj["status"]["aggregatedStatus"][0]["status"] == {"replicas": 3}
    assert await events_about(http, obj, "AggregateStatusFailed") == []


async def test_failed_binding_write_leaves_the_template_alone(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """The template's read starts with the reconcile, but its status is written only after the binding's."""
    await create_deployment(http)
    binding = await create_binding(http, "unlucky", ["member1"])
    await applied_work(http, binding, "member1", {"replicas": 3})
    setup = await direct(kube)
    setup.reconciler.client = FailingClient(kube)
    try:
        await work_cached(setup, 3)
        with pytest.raises(ApiError):
            await setup.reconciler.reconcile(binding.request)
        # checked at once: a read left running would still be pending here
        assert not [t for t in asyncio.all_tasks() if "_read_quietly" in repr(t.get_coro())]
    finally:
        await setup.factory.stop()
    template = await get_or_none(http, f"{DEPLOYMENTS.format(ns='default')}/test-deployment")
    assert template is not None and "replicas" not in (template.get("status") or {})


class OrderingClient(KubeClient):
    """Records the status writes in order; before the first binding write, changes the template's labels."""

    def __init__(self, base: KubeClient, http: aiohttp.ClientSession) -> None:
        super().__init__(base.api_client, qps=0)
        self.http = http
        self.writes: list[str] = []
        self.conflicts = 0
        self.template_read = asyncio.Event()

    async def get(self, resource: Resource, name: str, namespace: str = "") -> dict[str, Any]:
        try:
            return await super().get(resource, name, namespace)
        finally:
            self.template_read.set()

    async def update(self, resource: Resource, obj: dict[str, Any], *, subresource: str = "") -> dict[str, Any]:
        if resource == RESOURCE_BINDINGS and not self.writes:
            # the template changes once the reconcile has read it early: that copy is now stale
            await asyncio.wait_for(self.template_read.wait(), 5)
            await send(self.http, "PATCH", f"{DEPLOYMENTS.format(ns='default')}/test-deployment",
                       {"metadata": {"labels": {"changed": "meanwhile"}}})
        self.writes.append(f"{resource.plural}/{subresource}")
        try:
            return await super().update(resource, obj, subresource=subresource)
        except ApiError as exc:
            self.conflicts += exc.is_conflict
            raise


async def test_template_written_after_the_binding_and_from_a_fresh_read_after_a_409(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    await create_deployment(http)
    binding = await create_binding(http, "ordered", ["member1"])
    await applied_work(http, binding, "member1", {"replicas": 3})
    setup = await direct(kube)
    ordering = OrderingClient(kube, http)
    setup.reconciler.client = ordering
    try:
        await work_cached(setup, 3)
        await setup.reconciler.reconcile(binding.request)
    finally:
        await setup.factory.stop()
    # the binding first; the template's first write carried the early copy's resourceVersion, so a 409
    # and a live read: the status is written, and the concurrent label change survives
    assert ordering.writes == ["resourcebindings/status", "deployments/status", "deployments/status"]
    assert ordering.conflicts == 1
    template = await get_or_none(http, f"{DEPLOYMENTS.format(ns='default')}/test-deployment")
    assert template is not None and template["status"]["replicas"] == 3
    assert template["metadata"]["labels"]["changed"] == "meanwhile"


async def test_unreadable_member_status_records_a_warning_on_the_template(env: Env,
                                                                         http: aiohttp.ClientSession) -> None:
    deploy = await create_deployment(http)
    binding = await create_binding(http, "unreadable", ["member1"])
    await applied_work(http, binding, "member1", {"replicas": "three"})
    await env.start()
    await wait_fully_applied(http, binding, "True", items=1)  # the binding itself is fine
    [warning] = await eventually(lambda: events_about(http, deploy, "AggregateStatusFailed"))
    assert warning["type"] == "Warning"
    assert "replicas" in warning["message"]
    assert await events_about(http, deploy, SUCCEED) == []


async def test_binding_gone_or_deleting_is_a_no_op(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "leaving", ["member1"])
    await send(http, "PATCH", binding.path, {"metadata": {"finalizers": ["example.io/hold"]}})
    await send(http, "DELETE", binding.path)
    setup = await direct(kube)
    try:
        await setup.reconciler.reconcile(binding.request)
        await setup.reconciler.reconcile(Request("default", "never-existed"))
    finally:
        await setup.factory.stop()
    obj = await get_or_none(http, binding.path)
    assert obj is not None and condition(obj) is None


async def test_empty_resource_reference_is_an_error(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "empty-ref", ["member1"],
                                   ref={"apiVersion": "", "kind": "", "name": "", "namespace": "default"})
    setup = await direct(kube)
    errors = aggregations("error")
    try:
        with pytest.raises(TerminalError):
            await setup.reconciler.reconcile(binding.request)
    finally:
        await setup.factory.stop()
    assert aggregations("error") == errors + 1
    await wait_fully_applied(http, binding, "False")  # the binding status was still aggregated


async def test_work_without_the_bindings_manifest_is_an_error(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    binding = await create_binding(http, "unmatched", ["member1"])
    path = await create_work(http, binding, "member1")
    await send(http, "PATCH", path, {"spec": {"workload": {"manifests": [manifest_of(PV_REF)]}}})
    setup = await direct(kube)
    try:
        with pytest.raises(AssembleError, match="no such manifest exist"):
            await setup.reconciler.reconcile(binding.request)
    finally:
        await setup.factory.stop()


# ----------------------------------------------------------------------------- pure rules (workstatus.go unit rows)


def _work(cluster: str, manifests: list[Any], status: dict[str, Any] | None = None,
          deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "w", "namespace": f"karmada-es-{cluster}"}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": meta, "spec": {"workload": {"manifests": manifests}}, "status": status or {}}


def test_assemble_rows() -> None:
    manifest = manifest_of(DEPLOY_REF)
    applied = {"conditions": [applied_condition()], "manifestStatuses": [manifest_status(DEPLOY_REF, {"replicas": 3})]}
    assert assemble_work_status([], DEPLOY_REF) == []
    with pytest.raises(AssembleError):
        assemble_work_status([_work("member1", ["not json"])], DEPLOY_REF)
    assert assemble_work_status([_work("member1", [manifest], applied, deleting=True)], DEPLOY_REF) == []
    assert assemble_work_status([_work("member1", [manifest], applied)], DEPLOY_REF) == [
        {"clusterName": "member1", "status": {"replicas": 3}, "applied": True, "health": "Healthy"}]
    for status, message in (("False", "Failed to apply"), ("Unknown", "Status unknown")):
        work = _work("member1", [manifest], {"conditions": [applied_condition(status, message)]})
        assert assemble_work_status([work], DEPLOY_REF) == [
            {"clusterName": "member1", "appliedMessage": message, "health": "Unknown"}]
    with pytest.raises(AssembleError, match="execution space"):
        work = _work("x", [manifest], applied)
        work["metadata"]["namespace"] = "default"
        assemble_work_status([work], DEPLOY_REF)


def test_manifest_index_and_identifier() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "test-namespace",
                                                                    "name": "test-service"}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"namespace": "test-namespace", "name": "test-deployment"}}
    service_ref = {"apiVersion": "v1", "kind": "Service", "namespace": "test-namespace", "name": "test-service"}
    deploy_ref = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "test-namespace",
                  "name": "test-deployment"}
    assert manifest_index([service, deployment], service_ref) == 0
    assert manifest_index([service, deployment], deploy_ref) == 1
    identifier = {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment", "name": "test-deployment"}
    ref = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "test-deployment"}
    assert equal_identifier(identifier, 0, ref)
    assert not equal_identifier(dict(identifier, ordinal=1), 0, ref)


def _items(*clusters: tuple[str, bool]) -> list[dict[str, Any]]:
    return [{"clusterName": c, **({"applied": True} if applied else {})} for c, applied in clusters]


def test_works_fully_applied_rows() -> None:
    assert not works_fully_applied(_items(("c1", True)), set())
    assert not works_fully_applied([], {"c1"})
    assert not works_fully_applied(_items(("c1", True)), {"c1", "c2"})
    assert works_fully_applied(_items(("c1", True), ("c2", True)), {"c1", "c2"})
    assert not works_fully_applied(_items(("c1", True), ("c2", False)), {"c1", "c2"})
    assert not works_fully_applied(_items(("c1", True), ("c3", True)), {"c1", "c2"})


def test_fully_applied_condition_and_targets() -> None:
    spec = {"clusters": [{"name": "c1"}, {"name": "c2"}]}
    both = [{"clusterName": "c1", "applied": True, "health": "Healthy"},
            {"clusterName": "c2", "applied": True, "health": "Unknown"}]
    assert fully_applied_condition(spec, both)["status"] == "True"
    assert fully_applied_condition(spec, both[:1])["status"] == "False"
    spec_more = {"clusters": [{"name": "a"}], "requiredBy": [{"name": "x", "clusters": [{"name": "b"}]}],
                 "gracefulEvictionTasks": [{"fromCluster": "c", "purgeMode": "Gracefully"},
                                           {"fromCluster": "d", "purgeMode": "Directly"},
                                           {"fromCluster": "e"}]}
    assert existing_clusters(spec_more) == {"a", "b", "c", "e"}


def test_eviction_task_without_from_cluster_counts_as_the_empty_cluster() -> None:
    """Karmada inserts Go's zero value ``""`` for a task with no ``fromCluster`` (never the text ``"None"``):
    the binding is then never FullyApplied, whatever its Works say."""
    spec = {"clusters": [{"name": "None"}], "gracefulEvictionTasks": [{"purgeMode": "Gracefully"}]}
    assert existing_clusters(spec) == {"None", ""}
    applied = [{"clusterName": "None", "applied": True}]
    assert fully_applied_condition(spec, applied)["status"] == "False"
    assert fully_applied_condition({"clusters": [{"name": "None"}]}, applied)["status"] == "True"


def test_trigger_predicates_and_mapping() -> None:
    scheduled = {"status": {"lastScheduledTime": "2024-01-01T00:00:00Z"},
                 "spec": {"resource": {"resourceVersion": "1"}}}
    unscheduled = {"spec": {"resource": {"resourceVersion": "1"}}}
    assert binding_created(scheduled)
    assert not binding_created(unscheduled)
    template_changed = {**scheduled, "spec": {"resource": {"resourceVersion": "2"}}}
    assert binding_updated(scheduled, template_changed)
    assert not binding_updated(scheduled, scheduled)  # status-only / scheduling-result changes
    assert not binding_updated(unscheduled, {"spec": {"resource": {"resourceVersion": "2"}}})
    assert work_status_changed({"status": {}}, {"status": {"conditions": []}})
    assert not work_status_changed({"status": {"a": 1}, "spec": {}}, {"status": {"a": 1}, "spec": {"x": 1}})
    rb_work = {"metadata": {"annotations": {RB_NAMESPACE_ANNOTATION: "ns", RB_NAME_ANNOTATION: "b"}}}
    assert work_to_resource_binding(rb_work) == [Request("ns", "b")]
    assert work_to_resource_binding({"metadata": {"annotations": {RB_NAME_ANNOTATION: "b"}}}) == []
    crb_work = {"metadata": {"annotations": {CRB_NAME_ANNOTATION: "c"}}}
    assert work_to_cluster_resource_binding(crb_work) == [Request("", "c")]
    assert work_to_cluster_resource_binding(rb_work) == []
    assert CRB_KIND.describe({"metadata": {"name": "c"}}) == "ClusterResourceBinding(c)"
    assert RB_KIND.describe({"metadata": {"namespace": "n", "name": "b"}}) == "ResourceBinding(n/b)"


def test_binding_status_with_leaves_the_binding_alone() -> None:
    condition = {"type": "FullyApplied", "status": "False", "reason": "FullyAppliedFailed", "message": "old",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}
    binding = {"spec": {"clusters": [{"name": "member1"}]},
               "status": {"aggregatedStatus": [{"clusterName": "member1"}], "conditions": [condition],
                          "lastScheduledTime": "2026-01-01T00:00:00Z"}}
    before = copy.deepcopy(binding)
    items = [{"clusterName": "member1", "applied": True}]
    status = binding_status_with(binding, items)
    assert binding == before  # a cached copy stays as it was
    assert status["aggregatedStatus"] == items and status["lastScheduledTime"] == "2026-01-01T00:00:00Z"
    assert [c["status"] for c in status["conditions"]] == ["True"]
    assert binding_status_with(binding, []).get("aggregatedStatus") is None
    assert binding == before


async def test_a_rollouts_stream_of_work_statuses_is_written_once_it_is_quiet(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """With --binding-status-coalesce-period, five Work statuses in a row (a rollout on the member) make at most
    two binding writes (the first event at once, the rest once quiet), and the binding ends with the last."""
    manager = Manager(kube, ManagerOptions(name="test-coalesce", metrics_bind_address="127.0.0.1:0",
                                           health_probe_bind_address="127.0.0.1:0"))
    setup_resource_binding_status(manager, workers=2, rate_limiter_options=FAST, coalesce=0.5)
    await create_deployment(http)
    binding = await create_binding(http, "rollout", ["member1"])
    work = await applied_work(http, binding, "member1", {"replicas": 0})
    environment = Env(http, manager, manager.controllers[0], manager.controllers[0])
    await environment.start()
    try:
        await wait_fully_applied(http, binding, "True", items=1)
        updated_before = aggregations("updated")
        for ready in range(1, 6):
            await set_work_status(http, work, [applied_condition()],
                                  [manifest_status(binding.ref, {"replicas": 5, "readyReplicas": ready})])

        async def all_ready() -> bool:
            obj = await get_or_none(http, binding.path)
            return bool(obj) and obj["status"]["aggregatedStatus"][0]["status"].get("readyReplicas") == 5

        await eventually(all_ready)
        assert aggregations("updated") - updated_before <= 2
    finally:
        manager.request_shutdown()
        assert environment.task is not None
        await asyncio.wait_for(environment.task, 10)
