"""The simulated execution and work-status controllers against a host and two member dev API servers.

The host serves Clusters (registered in push mode with token Secrets), the execution namespaces
``karmada-es-member1|2`` and Works created by hand; the members are plain Kubernetes servers with
nothing running in them, so member Deployment status is written by the test through ``/status``.
A Manager runs both controllers and the MemberRegistry. Every wait is a deadline (``eventually``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s

from clusteraccess.registry import MemberRegistry
from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.events import EVENTS
from controller_manager.manager import Manager, ManagerOptions
from controller_manager.objects import Obj
from controller_manager.resource import Resource
from devplane.apiserver.server import ApiServer
from devplane.karmada.execution import setup_execution
from devplane.karmada.workstatus import setup_work_status
from karmada_api.labels import EXECUTION_CONTROLLER_FINALIZER as EXECUTION_FINALIZER
from karmada_api.names import execution_space, work_name
from karmada_api.resources import CLUSTERS, WORKS
from kube_api.conditions import find_condition
from kube_api.jobs import CONTROLLER_UID_LABEL
from kube_api.resources import CONFIGMAPS, DEPLOYMENTS, JOBS, NAMESPACES, SECRETS, SERVICES
from tests.conftest import eventually

SECRET_NAMESPACE = "karmada-cluster"
MEMBERS = ("member1", "member2")
PERMANENT_ID = "resourcebinding.karmada.io/permanent-id"


def plain_client(url: str) -> KubeClient:
    return KubeClient(k8s.ApiClient(k8s.Configuration(host=url)), qps=0)


@dataclass
class Plane:
    host: KubeClient
    members: dict[str, KubeClient]
    manager: Manager
    registry: MemberRegistry
    task: asyncio.Task[None] | None = None

    async def stop(self) -> None:
        if self.task is not None:
            self.manager.request_shutdown()
            await asyncio.wait_for(self.task, 15)
            self.task = None

    async def register(self, name: str, url: str) -> None:
        """A token Secret in karmada-cluster and a Push Cluster pointing at the member."""
        token = base64.b64encode(f"token-of-{name}".encode()).decode()
        await self.host.create(SECRETS, {"metadata": {"name": name, "namespace": SECRET_NAMESPACE},
                                         "data": {"token": token}})
        await self.host.create(CLUSTERS, {
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
            "spec": {"syncMode": "Push", "apiEndpoint": url,
                     "secretRef": {"namespace": SECRET_NAMESPACE, "name": name}}})

    async def work(self, cluster: str, name: str) -> Obj | None:
        try:
            return await self.host.get(WORKS, name, execution_space(cluster))
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise

    async def member_object(self, cluster: str, resource: Resource, name: str,
                            namespace: str = "default") -> Obj | None:
        try:
            return await self.members[cluster].get(resource, name, namespace)
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise

    async def events(self, cluster: str, work: str) -> list[tuple[str, str, str]]:
        await self.manager.flush_events()
        answer = await self.host.list(EVENTS, execution_space(cluster),
                                      field_selector=f"involvedObject.name={work}")
        return [(e["type"], e["reason"], e["message"]) for e in answer.get("items") or []]


@pytest.fixture
async def plane() -> AsyncIterator[Plane]:
    async with contextlib.AsyncExitStack() as stack:
        host_server = await stack.enter_async_context(ApiServer(extra_namespaces=(SECRET_NAMESPACE,)))
        host = plain_client(host_server.url)
        stack.push_async_callback(host.close)
        for cluster in MEMBERS:
            await host.create(NAMESPACES, {"metadata": {"name": execution_space(cluster)}})
        members: dict[str, KubeClient] = {}
        urls: dict[str, str] = {}
        for cluster in MEMBERS:
            member_server = await stack.enter_async_context(ApiServer(karmada=False))
            members[cluster] = plain_client(member_server.url)
            stack.push_async_callback(members[cluster].close)
            urls[cluster] = member_server.url
        manager = Manager(host, ManagerOptions(name="test-sim-execution", metrics_bind_address="0",
                                               health_probe_bind_address="0"))
        registry = MemberRegistry(host, manager.informer(CLUSTERS), sync_timeout=5.0, client_timeout=2.0)
        manager.add_runnable("member-registry", registry.run, needs_leader=False)
        setup_execution(manager, registry, workers=2)
        setup_work_status(manager, registry, workers=2)
        environment = Plane(host, members, manager, registry)
        for cluster in MEMBERS:
            await environment.register(cluster, urls[cluster])
        environment.task = asyncio.create_task(manager.run())
        stack.push_async_callback(environment.stop)
        yield environment


# ----------------------------------------------------------------------------- helpers


def deployment_manifest(name: str = "web", *, replicas: int = 2, namespace: str = "default",
                        generation: str = "1", annotations: dict[str, str] | None = None) -> Obj:
    """A manifest as the binding controller writes it (managed label, template generation...)."""
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {**labels, "karmada.io/managed": "true", PERMANENT_ID: "id-1"},
                         "annotations": {"resourcetemplate.karmada.io/generation": generation,
                                         "resourcebinding.karmada.io/name": f"{name}-deployment",
                                         "resourcebinding.karmada.io/namespace": namespace, **(annotations or {})}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}}}


async def create_work(plane: Plane, cluster: str, manifest: Obj, *, preserve: bool = False) -> str:
    meta = manifest["metadata"]
    name = work_name(manifest["kind"], meta["name"], meta.get("namespace", ""))
    spec: dict[str, Any] = {"workload": {"manifests": [manifest]}}
    if preserve:
        spec["preserveResourcesOnDeletion"] = True
    await plane.host.create(WORKS, {
        "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
        "metadata": {"name": name, "namespace": execution_space(cluster),
                     "finalizers": [EXECUTION_FINALIZER],  # set by the binding controller, not by execution
                     "labels": {PERMANENT_ID: "id-1", "karmada.io/managed": "true"},
                     "annotations": {"resourcebinding.karmada.io/name": f"{meta['name']}-deployment",
                                     "resourcebinding.karmada.io/namespace": meta.get("namespace", "")}},
        "spec": spec})
    return name


def applied(work: Obj | None) -> dict[str, Any] | None:
    return find_condition(((work or {}).get("status") or {}).get("conditions"), "Applied")


def manifest_status(work: Obj | None) -> dict[str, Any] | None:
    statuses = ((work or {}).get("status") or {}).get("manifestStatuses") or []
    return statuses[0] if statuses else None


async def set_member_status(plane: Plane, cluster: str, name: str, **status: int) -> None:
    await plane.members[cluster].patch_status(DEPLOYMENTS, name, {"status": status}, namespace="default")


async def wait_applied(plane: Plane, cluster: str, name: str) -> Obj:
    async def check() -> Obj | None:
        work = await plane.work(cluster, name)
        condition = applied(work)
        return work if condition and condition["status"] == "True" else None

    result: Obj = await eventually(check, timeout=15)
    return result


async def wait_apply_failed(plane: Plane, cluster: str, name: str) -> dict[str, Any]:
    """The Work's ``Applied`` condition, once it is False."""
    async def failed() -> dict[str, Any] | None:
        condition = applied(await plane.work(cluster, name))
        return condition if condition and condition["status"] == "False" else None

    condition: dict[str, Any] = await eventually(failed, timeout=10)
    return condition


# ----------------------------------------------------------------------------- tests


async def test_work_is_applied_and_its_status_follows_the_member(plane: Plane) -> None:
    name = await create_work(plane, "member1", deployment_manifest())
    work = await wait_applied(plane, "member1", name)
    condition = applied(work)
    assert condition is not None
    assert condition["reason"] == "AppliedSuccessful"
    assert condition["message"] == "Manifest has been successfully applied"
    assert EXECUTION_FINALIZER in work["metadata"]["finalizers"]

    deployment = await plane.member_object("member1", DEPLOYMENTS, "web")
    assert deployment is not None
    annotations = deployment["metadata"]["annotations"]
    assert annotations["work.karmada.io/name"] == name
    assert annotations["work.karmada.io/namespace"] == "karmada-es-member1"
    assert annotations["resourcetemplate.karmada.io/generation"] == "1"
    assert deployment["metadata"]["labels"]["karmada.io/managed"] == "true"
    assert deployment["spec"]["replicas"] == 2
    assert await plane.member_object("member2", DEPLOYMENTS, "web") is None

    async def reflected(status: dict[str, Any], health: str) -> bool:
        item = manifest_status(await plane.work("member1", name))
        return item is not None and item.get("status") == status and item.get("health") == health

    # Nothing runs in the member: the new Deployment has not been observed yet.
    await eventually(lambda: reflected({"generation": 1, "resourceTemplateGeneration": 1}, "Unhealthy"), timeout=10)
    item = manifest_status(await plane.work("member1", name))
    assert item is not None
    assert item["identifier"] == {"ordinal": 0, "group": "apps", "version": "v1", "kind": "Deployment",
                                  "resource": "deployments", "namespace": "default", "name": "web"}

    await set_member_status(plane, "member1", "web", observedGeneration=1, replicas=2, updatedReplicas=2,
                            readyReplicas=2, availableReplicas=2)
    await eventually(lambda: reflected({"generation": 1, "resourceTemplateGeneration": 1, "observedGeneration": 1,
                                        "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
                                        "availableReplicas": 2}, "Healthy"), timeout=10)

    await set_member_status(plane, "member1", "web", observedGeneration=1, replicas=2, updatedReplicas=2,
                            readyReplicas=1, availableReplicas=1, unavailableReplicas=1)
    await eventually(lambda: reflected({"generation": 1, "resourceTemplateGeneration": 1, "observedGeneration": 1,
                                        "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1,
                                        "availableReplicas": 1, "unavailableReplicas": 1}, "Unhealthy"), timeout=10)

    events = await plane.events("member1", name)
    assert ("Normal", "SyncSucceed", "Successfully applied resource(default/web) to cluster member1") in events


async def test_work_update_reaches_the_member_and_keeps_its_status(plane: Plane) -> None:
    name = await create_work(plane, "member1", deployment_manifest())
    await wait_applied(plane, "member1", name)
    await set_member_status(plane, "member1", "web", observedGeneration=1, replicas=2, availableReplicas=2)

    work = await plane.work("member1", name)
    assert work is not None
    work["spec"]["workload"]["manifests"] = [deployment_manifest(replicas=4, generation="2")]
    await plane.host.update(WORKS, work)

    async def updated() -> bool:
        deployment = await plane.member_object("member1", DEPLOYMENTS, "web")
        return bool(deployment and deployment["spec"]["replicas"] == 4
                    and deployment["metadata"]["annotations"]["resourcetemplate.karmada.io/generation"] == "2")

    await eventually(updated, timeout=10)
    deployment = await plane.member_object("member1", DEPLOYMENTS, "web")
    assert deployment is not None
    assert deployment["status"]["availableReplicas"] == 2  # the member's status survived the update
    assert deployment["metadata"]["generation"] == 2

    async def reflected() -> bool:
        item = manifest_status(await plane.work("member1", name)) or {}
        return (item.get("status") or {}).get("resourceTemplateGeneration") == 2 and item.get("health") == "Unhealthy"

    await eventually(reflected, timeout=10)


def job_manifest(parallelism: int, generation: str) -> Obj:
    """A Job's manifest as the binding controller renders it: the host's generated selector and labels pruned."""
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "batch", "namespace": "default",
                         "labels": {"karmada.io/managed": "true", PERMANENT_ID: "id-1"},
                         "annotations": {"resourcetemplate.karmada.io/generation": generation}},
            "spec": {"parallelism": parallelism, "completions": 4, "selector": {"matchLabels": {}},
                     "template": {"metadata": {"labels": {"app": "batch"}},
                                  "spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "main", "image": "busybox"}]}}}}


async def test_a_job_keeps_the_selector_its_member_generated_when_its_work_changes(plane: Plane) -> None:
    """The member's API server generates the Job's selector and Pod labels from its own uid, as kube-apiserver does,
    and refuses a change to either: the execution controller's update keeps them (Karmada's retain), so a new
    parallelism reaches the member."""
    name = await create_work(plane, "member1", job_manifest(2, "1"))
    await wait_applied(plane, "member1", name)
    job = await plane.member_object("member1", JOBS, "batch")
    assert job is not None
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"] == {"matchLabels": {CONTROLLER_UID_LABEL: uid}}
    assert job["spec"]["template"]["metadata"]["labels"][CONTROLLER_UID_LABEL] == uid

    work = await plane.work("member1", name)
    assert work is not None
    work["spec"]["workload"]["manifests"] = [job_manifest(3, "2")]
    await plane.host.update(WORKS, work)

    async def updated() -> bool:
        job = await plane.member_object("member1", JOBS, "batch")
        return bool(job and job["spec"]["parallelism"] == 3)

    await eventually(updated, timeout=10)
    assert (applied(await plane.work("member1", name)) or {}).get("status") == "True"


def local_service_manifest(health_check_node_port: int, port: int) -> Obj:
    """A LoadBalancer Service keeping external traffic local, as the Karmada API server allocated it (node ports
    and health-check node port are not pruned; the cluster IP is)."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "front", "namespace": "default",
                         "labels": {"karmada.io/managed": "true", PERMANENT_ID: "id-1"}},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local", "selector": {"app": "front"},
                     "healthCheckNodePort": health_check_node_port, "ports": [{"port": port, "nodePort": 30080}]}}


async def test_a_services_health_check_node_port_is_the_members_when_its_work_changes(plane: Plane) -> None:
    """The member refuses a change of a health-check node port; the execution controller's update keeps the
    member's (Karmada's RetainServiceFields), so a new port reaches the member although the desired Service names
    another health-check node port (the Karmada API server's, after the Service was made again there)."""
    name = await create_work(plane, "member1", local_service_manifest(30111, 80))
    await wait_applied(plane, "member1", name)
    work = await plane.work("member1", name)
    assert work is not None
    work["spec"]["workload"]["manifests"] = [local_service_manifest(30222, 81)]
    await plane.host.update(WORKS, work)

    async def updated() -> Obj | None:
        service = await plane.member_object("member1", SERVICES, "front")
        return service if service and service["spec"]["ports"][0]["port"] == 81 else None

    service = await eventually(updated, timeout=10)
    assert service["spec"]["healthCheckNodePort"] == 30111
    assert (applied(await plane.work("member1", name)) or {}).get("status") == "True"


async def test_deleting_a_work_deletes_the_member_object(plane: Plane) -> None:
    name = await create_work(plane, "member1", deployment_manifest())
    await wait_applied(plane, "member1", name)
    assert await plane.member_object("member1", DEPLOYMENTS, "web") is not None

    await plane.host.delete(WORKS, name, execution_space("member1"))
    await eventually(lambda: _gone(plane, "member1", name), timeout=10)
    assert await plane.member_object("member1", DEPLOYMENTS, "web") is None


async def _gone(plane: Plane, cluster: str, name: str) -> bool:
    return await plane.work(cluster, name) is None


async def test_preserve_resources_on_deletion_keeps_the_member_object(plane: Plane) -> None:
    name = await create_work(plane, "member2", deployment_manifest(), preserve=True)
    await wait_applied(plane, "member2", name)

    await plane.host.delete(WORKS, name, execution_space("member2"))
    await eventually(lambda: _gone(plane, "member2", name), timeout=10)
    deployment = await plane.member_object("member2", DEPLOYMENTS, "web")
    assert deployment is not None
    annotations = deployment["metadata"].get("annotations") or {}
    assert "work.karmada.io/name" not in annotations
    assert "karmada.io/managed" not in (deployment["metadata"].get("labels") or {})
    assert deployment["metadata"]["labels"]["app"] == "web"


async def test_member_object_deleted_by_hand_is_recreated(plane: Plane) -> None:
    name = await create_work(plane, "member1", deployment_manifest())
    await wait_applied(plane, "member1", name)
    original = await plane.member_object("member1", DEPLOYMENTS, "web")
    assert original is not None
    # wait until the work-status controller watches it, so the deletion is seen as one
    await eventually(lambda: _has_manifest_status(plane, "member1", name), timeout=10)

    await plane.members["member1"].delete(DEPLOYMENTS, "web", "default")

    async def recreated() -> bool:
        again = await plane.member_object("member1", DEPLOYMENTS, "web")
        return again is not None and again["metadata"]["uid"] != original["metadata"]["uid"]

    await eventually(recreated, timeout=10)
    again = await plane.member_object("member1", DEPLOYMENTS, "web")
    assert again is not None
    assert again["metadata"]["annotations"]["work.karmada.io/name"] == name
    work = await plane.work("member1", name)
    condition = applied(work)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", "ReCreateSuccessful")


async def _has_manifest_status(plane: Plane, cluster: str, name: str) -> bool:
    return manifest_status(await plane.work(cluster, name)) is not None


async def test_member_spec_changed_by_hand_is_put_back(plane: Plane) -> None:
    name = await create_work(plane, "member1", deployment_manifest(replicas=2))
    await wait_applied(plane, "member1", name)
    await eventually(lambda: _has_manifest_status(plane, "member1", name), timeout=10)
    deployment = await plane.member_object("member1", DEPLOYMENTS, "web")
    assert deployment is not None
    deployment["spec"]["replicas"] = 9
    await plane.members["member1"].update(DEPLOYMENTS, deployment)

    async def restored() -> bool:
        current = await plane.member_object("member1", DEPLOYMENTS, "web")
        return bool(current and current["spec"]["replicas"] == 2 and current["metadata"]["generation"] == 3)

    await eventually(restored, timeout=10)


async def test_unknown_kind_is_not_applied(plane: Plane) -> None:
    manifest = {"apiVersion": "example.io/v1", "kind": "Widget",
                "metadata": {"name": "gadget", "namespace": "default", "labels": {"karmada.io/managed": "true"}},
                "spec": {"size": 3}}
    name = await create_work(plane, "member1", manifest)

    condition = await wait_apply_failed(plane, "member1", name)
    assert condition["reason"] == "AppliedFailed"
    assert condition["message"] == 'Failed to apply all manifests (0/1): no matches for kind "Widget" in version ' \
                                   '"example.io/v1"'
    events = await plane.events("member1", name)
    assert ("Warning", "SyncFailed", 'Failed to create or update resource(default/gadget) in member '
            'cluster(member1): no matches for kind "Widget" in version "example.io/v1"') in events
    assert manifest_status(await plane.work("member1", name)) is None


async def test_cluster_not_ready_holds_works_back(plane: Plane) -> None:
    cluster = await plane.host.get(CLUSTERS, "member2")
    not_ready = {"type": "Ready", "status": "False", "reason": "ClusterNotReachable",
                 "message": "cluster is not reachable", "lastTransitionTime": "2024-01-01T00:00:00Z"}
    await plane.host.update_status(CLUSTERS, {**cluster, "status": {"conditions": [not_ready]}})
    held = await create_work(plane, "member2", deployment_manifest("held"))
    sentinel = await create_work(plane, "member1", deployment_manifest("sentinel"))
    await wait_applied(plane, "member1", sentinel)  # the controller is working...
    assert applied(await plane.work("member2", held)) is None  # ...but not on a cluster that is not Ready
    assert await plane.member_object("member2", DEPLOYMENTS, "held") is None

    cluster = await plane.host.get(CLUSTERS, "member2")
    ready = {**not_ready, "status": "True", "reason": "ClusterReady",
             "message": "cluster is healthy and ready to accept workloads"}
    await plane.host.update_status(CLUSTERS, {**cluster, "status": {"conditions": [ready]}})
    await wait_applied(plane, "member2", held)
    assert await plane.member_object("member2", DEPLOYMENTS, "held") is not None


async def test_missing_member_namespace_is_created(plane: Plane) -> None:
    name = await create_work(plane, "member2", deployment_manifest("shop", namespace="shop"))
    await wait_applied(plane, "member2", name)
    assert await plane.member_object("member2", DEPLOYMENTS, "shop", "shop") is not None


async def test_conflict_resolution_abort_refuses_an_unmanaged_object(plane: Plane) -> None:
    await plane.members["member1"].create(DEPLOYMENTS, {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "main", "image": "httpd"}]}}}})
    manifest = deployment_manifest(annotations={"work.karmada.io/conflict-resolution": "abort"})
    name = await create_work(plane, "member1", manifest)

    condition = await wait_apply_failed(plane, "member1", name)
    assert condition["reason"] == "AppliedFailed"
    assert "Karmada will not manage this resource" in condition["message"]
    deployment = await plane.member_object("member1", DEPLOYMENTS, "web")
    assert deployment is not None
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "httpd"  # untouched


async def test_several_manifests_of_other_kinds_are_reflected(plane: Plane) -> None:
    """Kinds the registry does not watch get their own member informers, stopped with the manager."""
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"},
              "data": {"mode": "fast"}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "front", "namespace": "default"},
               "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"port": 80}]}}
    name = "bundle-1"
    await plane.host.create(WORKS, {
        "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
        "metadata": {"name": name, "namespace": execution_space("member2")},
        "spec": {"workload": {"manifests": [config, service]}}})
    await wait_applied(plane, "member2", name)
    assert (await plane.member_object("member2", CONFIGMAPS, "settings") or {}).get("data") == {"mode": "fast"}

    async def statuses() -> list[dict[str, Any]]:
        work = await plane.work("member2", name)
        return list(((work or {}).get("status") or {}).get("manifestStatuses") or [])

    async def reflected(ingress: list[dict[str, str]] | None, health: str) -> bool:
        items = await statuses()
        if len(items) != 2:
            return False
        first, second = items
        balancer = {"ingress": ingress} if ingress else {}
        return (first == {"identifier": {"ordinal": 0, "version": "v1", "kind": "ConfigMap", "resource": "configmaps",
                                         "namespace": "default", "name": "settings"}, "health": "Healthy"}
                and second["identifier"]["resource"] == "services" and second["identifier"]["ordinal"] == 1
                and second.get("status") == {"loadBalancer": balancer} and second.get("health") == health)

    await eventually(lambda: reflected(None, "Unhealthy"), timeout=10)
    await plane.members["member2"].patch_status(SERVICES, "front", {"status": {"loadBalancer": {
        "ingress": [{"ip": "10.0.0.9"}]}}}, namespace="default")
    await eventually(lambda: reflected([{"ip": "10.0.0.9"}], "Healthy"), timeout=10)

    assert sorted(informer_tasks("member2")) == ["member member2 configmaps informer",
                                                 "member member2 services informer"]
    await plane.stop()
    assert informer_tasks("member2") == []


def informer_tasks(cluster: str) -> list[str]:
    """The running member-object informers this component started for ``cluster``."""
    return [t.get_name() for t in asyncio.all_tasks() if t.get_name().startswith(f"member {cluster} ")
            and t.get_name().endswith(" informer") and not t.done()]


@pytest.mark.slow
async def test_member_informers_follow_the_registry(plane: Plane) -> None:
    """A member closed by the registry loses its informers; registered again, it gets new ones that work."""
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default"},
              "data": {"mode": "fast"}}
    name = await create_work(plane, "member1", config)
    await wait_applied(plane, "member1", name)
    await eventually(lambda: _has_manifest_status(plane, "member1", name), timeout=10)
    assert informer_tasks("member1") == ["member member1 configmaps informer"]
    cluster = await plane.host.get(CLUSTERS, "member1")
    endpoint = cluster["spec"]["apiEndpoint"]

    await plane.host.delete(CLUSTERS, "member1")
    await eventually(lambda: informer_tasks("member1") == [], timeout=10)

    await plane.host.create(CLUSTERS, {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "member1"},
        "spec": {"syncMode": "Push", "apiEndpoint": endpoint,
                 "secretRef": {"namespace": SECRET_NAMESPACE, "name": "member1"}}})
    await eventually(lambda: informer_tasks("member1") == ["member member1 configmaps informer"], timeout=10)
    original = await plane.member_object("member1", CONFIGMAPS, "settings")
    assert original is not None
    await plane.members["member1"].delete(CONFIGMAPS, "settings", "default")

    async def recreated() -> bool:
        again = await plane.member_object("member1", CONFIGMAPS, "settings")
        return again is not None and again["metadata"]["uid"] != original["metadata"]["uid"]

    await eventually(recreated, timeout=10)


async def test_execution_adds_no_finalizer_to_a_work_it_did_not_make(plane: Plane) -> None:
    """Karmada's execution controller only removes ``karmada.io/execution-controller``; Works get it from
    whoever creates them (the binding controller). A hand-made Work without it is applied and left as is."""
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bare", "namespace": "default"},
              "data": {"k": "v"}}
    await plane.host.create(WORKS, {"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                                    "metadata": {"name": "bare", "namespace": execution_space("member1")},
                                    "spec": {"workload": {"manifests": [config]}}})
    work = await wait_applied(plane, "member1", "bare")
    assert not work["metadata"].get("finalizers")
