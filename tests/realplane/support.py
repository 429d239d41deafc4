"""What the real-plane tests share: kubectl as a user runs it, namespaces, workloads and their bindings."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import aiohttp
import anyio

from benchmarks.refplane import RefPlane, kubectl
from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.events import EVENTS
from controller_manager.resource import Resource
from karmada_api.bindings import ready_replicas
from karmada_api.resources import CLUSTERS, PROPAGATION_POLICIES, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from kube_api.resources import DEPLOYMENTS, NAMESPACES, PODS, REPLICA_SETS
from tests.conftest import cancel_and_wait, eventually

T = TypeVar("T")

SCHEDULED = 60.0  # seconds Karmada's scheduler and controllers get to place and apply a workload


def kubectl_run(plane: RefPlane, *args: str, context: str = "karmada-apiserver",
                stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``kubectl --context C ARGS`` with the plane's kubeconfigs (the one the project installs), blocking: for the
    synchronous fixtures; async tests use :func:`run_kubectl`."""
    config = f"{plane.karmada_kubeconfig}:{plane.members_kubeconfig}"
    return subprocess.run([kubectl() or "kubectl", "--context", context, *args], input=stdin, capture_output=True,
                          text=True, timeout=60, check=False, env={**os.environ, "KUBECONFIG": config})


async def run_kubectl(plane: RefPlane, *args: str, context: str = "karmada-apiserver",
                      stdin: str | None = None) -> str:
    """:func:`kubectl_run` off the event loop; its stdout (an AssertionError naming stderr when it fails)."""
    done = await anyio.to_thread.run_sync(lambda: kubectl_run(plane, *args, context=context, stdin=stdin))
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


async def fresh_namespace(karmada: KubeClient, prefix: str) -> str:
    """A namespace of the test's own, ``prefix-<random>``: member namespaces are never deleted (the members
    run no namespace controller), so a name is not used twice on one plane."""
    name = f"{prefix}-{secrets.token_hex(3)}"
    await karmada.create(NAMESPACES, {"metadata": {"name": name}})
    return name


def deployment(name: str, replicas: int) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "nginx", "resources": {
                                      "requests": {"cpu": "10m", "memory": "10Mi"}}}]}}}}


def policy(name: str, *, divided: dict[str, Any] | None = None, tolerations: list[dict[str, Any]] | None = None,
           selector: dict[str, Any] | None = None) -> dict[str, Any]:
    """A PropagationPolicy over member1 and member2, Divided (by available replicas unless ``divided``)."""
    preference = divided or {"dynamicWeight": "AvailableReplicas"}
    placement: dict[str, Any] = {
        "clusterAffinity": {"clusterNames": ["member1", "member2"]},
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                              "weightPreference": preference}}
    if tolerations:
        placement["clusterTolerations"] = tolerations
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": name},
            "spec": {"resourceSelectors": [selector or {"apiVersion": "apps/v1", "kind": "Deployment"}],
                     "placement": placement}}


STATIC_HALVES = {"staticWeightList": [{"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                                      {"targetCluster": {"clusterNames": ["member2"]}, "weight": 1}]}


async def propagate(karmada: KubeClient, namespace: str, names: list[str], replicas: int,
                    pp: dict[str, Any] | None = None) -> None:
    """Create the policy (default: every Deployment of the namespace) and the Deployments."""
    await karmada.create(PROPAGATION_POLICIES, pp or policy("all"), namespace)
    for name in names:
        await karmada.create(DEPLOYMENTS, deployment(name, replicas), namespace)


def assigned(binding: dict[str, Any] | None) -> dict[str, int]:
    """Cluster → replicas of the binding's ``spec.clusters``."""
    clusters = ((binding or {}).get("spec") or {}).get("clusters") or []
    return {str(c["name"]): int(c.get("replicas") or 0) for c in clusters}


async def binding_of(karmada: KubeClient, namespace: str, name: str,
                     kind: str = "Deployment") -> dict[str, Any] | None:
    return await karmada.get_or_none(RESOURCE_BINDINGS, f"{name}-{kind.lower()}", namespace)


async def wait_assigned(karmada: KubeClient, namespace: str, name: str, check: Callable[[dict[str, int]], bool],
                        timeout: float = SCHEDULED, *, kind: str = "Deployment") -> dict[str, Any]:
    """The binding of the ``kind`` workload once ``check(assigned(binding))`` holds."""

    async def ready() -> dict[str, Any] | None:
        binding = await binding_of(karmada, namespace, name, kind)
        return binding if binding is not None and check(assigned(binding)) else None

    result: dict[str, Any] = await eventually(ready, timeout=timeout, interval=0.25)
    return result


async def divide(karmada: KubeClient, prefix: str, resource: Resource,
                 workload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """``workload`` in a fresh namespace whose policy divides its kind over both members by available replicas; the
    namespace, and the binding once all of ``spec.replicas`` are assigned, some on member1. That takes Karmada's
    interpreter giving the binding its replicas (``GetReplicas``): a kind without one is never divided."""
    ns = await fresh_namespace(karmada, prefix)
    kind, total = workload["kind"], workload["spec"]["replicas"]
    await karmada.create(PROPAGATION_POLICIES, policy("all", selector={"apiVersion": workload["apiVersion"],
                                                                       "kind": kind}), ns)
    await karmada.create(resource, workload, ns)
    binding = await wait_assigned(karmada, ns, workload["metadata"]["name"],
                                  lambda a: a.get("member1", 0) >= 1 and sum(a.values()) == total, kind=kind)
    assert binding["spec"]["replicas"] == total, binding["spec"]
    return ns, binding


async def wait_ready_reported(karmada: KubeClient, binding: dict[str, Any], cluster: str, ready: int) -> dict[str, Any]:
    """The binding once its ``aggregatedStatus`` reports ``ready`` ready replicas on ``cluster`` (Karmada's
    work-status controller reflects the member workload's status into its Work, our binding-status controller
    assembles the Works): the descheduler's ready-replicas floor."""
    ns, resource = objects.namespace(binding), binding["spec"]["resource"]
    name, kind = resource["name"], resource["kind"]

    async def reported() -> dict[str, Any] | None:
        found = await binding_of(karmada, ns, name, kind)
        return found if found is not None and ready_replicas(found).get(cluster) == ready else None

    result: dict[str, Any] = await eventually(reported, timeout=SCHEDULED)
    return result


async def wait_member_ready(member: KubeClient, ns: str, name: str, ready: int) -> None:
    """Until the member's Deployment reports ``ready`` ready replicas (the readiness faker's doing)."""

    async def reported() -> bool:
        with contextlib.suppress(ApiError):
            status = (await member.get(DEPLOYMENTS, name, ns)).get("status") or {}
            return bool(status.get("readyReplicas") == ready)
        return False

    await eventually(reported, timeout=SCHEDULED)


def rebalancer(name: str, workloads: list[tuple[str, str]], ttl: int | None = None) -> dict[str, Any]:
    """A WorkloadRebalancer of Deployments given as (namespace, name)."""
    spec: dict[str, Any] = {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "namespace": ns,
                                           "name": n} for ns, n in workloads]}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    return {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer", "metadata": {"name": name},
            "spec": spec}


async def wait_finished(karmada: KubeClient, name: str, timeout: float = SCHEDULED) -> dict[str, Any]:
    """The WorkloadRebalancer once its ``status.finishTime`` is set."""

    async def finished() -> dict[str, Any] | None:
        try:
            obj = await karmada.get_or_none(WORKLOAD_REBALANCERS, name)
        except (ApiError, aiohttp.ClientError, OSError):
            return None  # a restarting server: ask again
        return obj if obj is not None and (obj.get("status") or {}).get("finishTime") else None

    result: dict[str, Any] = await eventually(finished, timeout=timeout, interval=0.25)
    return result


def results(obj: dict[str, Any]) -> dict[str, str]:
    """``namespace/name`` → result of each observed workload."""
    return {f"{w['workload'].get('namespace', '')}/{w['workload']['name']}": str(w.get("result"))
            for w in (obj.get("status") or {}).get("observedWorkloads") or []}


async def set_taint(karmada: KubeClient, cluster: str, taints: list[dict[str, str]]) -> None:
    """Replace the Cluster's taints (what ``karmadactl taint`` writes)."""
    await karmada.patch(CLUSTERS, cluster, {"spec": {"taints": taints or None}})


async def delete_quietly(karmada: KubeClient, resource: Resource, name: str, namespace: str = "") -> None:
    """Delete what a test made, if it is still there."""
    with contextlib.suppress(ApiError):
        await karmada.delete(resource, name, namespace)


# --------------------------------------------------------------------------------------------
# The descheduler's tests: a member's unschedulable replica, the events and assignments that follow


@contextlib.asynccontextmanager
async def faker_paused(plane: RefPlane) -> AsyncIterator[None]:
    """The readiness faker stopped (SIGSTOP): it would report every replica Ready, and the descheduler's floor
    rightly never takes a Ready replica away; the test writes the member workload's status itself meanwhile."""
    plane.send_signal("readiness-faker", signal.SIGSTOP)
    try:
        yield
    finally:
        plane.send_signal("readiness-faker", signal.SIGCONT)


STUCK_FOR = timedelta(minutes=10)
"""How long ago the tests' stuck Pods became unschedulable: beyond the descheduler's 5-minute threshold."""


async def make_unschedulable(member: KubeClient, pod: dict[str, Any], stuck_for: timedelta = STUCK_FOR) -> None:
    """Create ``pod`` and give it the status a member's scheduler writes for a Pod that cannot fit, ``stuck_for``
    ago."""
    created = await member.create(PODS, pod)
    long_ago = (datetime.now(UTC) - stuck_for).strftime("%Y-%m-%dT%H:%M:%SZ")
    created["status"] = {"phase": "Pending", "conditions": [{
        "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": long_ago,
        "message": "0/2 nodes are available: 2 Insufficient cpu."}]}
    await member.update_status(PODS, created)


POD_TEMPLATE_HASH = "7f9d8c6b5d"


async def make_replicas_unschedulable(member: KubeClient, ns: str, name: str, count: int = 1,
                                      stuck_for: timedelta = STUCK_FOR) -> list[str]:
    """What a member's controllers and scheduler would show for a Deployment with ``count`` Pods that cannot fit;
    the stuck Pods' names.

    The members have no ReplicaSet controller: the Deployment's current ReplicaSet (its template, which the
    estimator matches) is made here, with the Pending Pods, and the member Deployment's status written as its
    controller would (``count`` fewer ready). The readiness faker must be paused (:func:`faker_paused`), or it
    writes every replica Ready again.
    """
    deployment = await member.get(DEPLOYMENTS, name, ns)
    template = deployment["spec"]["template"]
    labels = {**template["metadata"]["labels"], "pod-template-hash": POD_TEMPLATE_HASH}
    replica_set = await member.create(REPLICA_SETS, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": f"{name}-{POD_TEMPLATE_HASH}", "namespace": ns, "labels": labels,
                     "ownerReferences": [controller_ref(deployment)]},
        "spec": {"replicas": deployment["spec"]["replicas"],
                 "selector": {"matchLabels": {**deployment["spec"]["selector"]["matchLabels"],
                                              "pod-template-hash": POD_TEMPLATE_HASH}},
                 "template": {**template, "metadata": {**template["metadata"], "labels": labels}}}})
    stuck = [f"{name}-{POD_TEMPLATE_HASH}-stuck-{k}" for k in range(count)]
    for pod in stuck:
        await make_unschedulable(member, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": ns, "labels": labels,
                         "ownerReferences": [controller_ref(replica_set)]},
            "spec": template["spec"]}, stuck_for)
    deployment = await member.get(DEPLOYMENTS, name, ns)
    replicas = deployment["spec"]["replicas"]
    generation = deployment["metadata"]["generation"]
    deployment["status"] = {**(deployment.get("status") or {}), "observedGeneration": generation,
                            "replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas - count,
                            "availableReplicas": replicas - count, "unavailableReplicas": count}
    await member.update_status(DEPLOYMENTS, deployment)
    return stuck


async def delete_pod_now(member: KubeClient, ns: str, name: str) -> None:
    """Delete a Pod at once (grace 0), if it is there: with no kubelet a graceful delete never finishes."""
    with contextlib.suppress(ApiError):
        await member.request("DELETE", PODS.path(ns, name),
                             body={"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})


def controller_ref(owner: dict[str, Any]) -> dict[str, Any]:
    """The ownerReference a controller puts on what it makes from ``owner``."""
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


async def events_of(karmada: KubeClient, obj: dict[str, Any], reason: str) -> list[dict[str, Any]]:
    """``obj``'s Events of ``reason`` (in its namespace, ``default`` for a cluster-scoped object), once there is
    one."""
    about = f"involvedObject.uid={obj['metadata']['uid']}"

    async def found() -> list[dict[str, Any]]:
        events = await karmada.list(EVENTS, objects.namespace(obj) or "default", field_selector=about)
        return [e for e in events.get("items") or [] if e["reason"] == reason]

    result: list[dict[str, Any]] = await eventually(found, timeout=SCHEDULED, interval=0.5)
    return result


async def descheduled(karmada: KubeClient, binding: dict[str, Any]) -> list[dict[str, Any]]:
    """The binding's ``DescheduleBindingSucceed`` events, once there is one."""
    return await events_of(karmada, binding, "DescheduleBindingSucceed")


@contextlib.asynccontextmanager
async def versions_seen(karmada: KubeClient, binding: dict[str, Any]) -> AsyncIterator[list[dict[str, Any]]]:
    """Every version the binding goes through from now on, however briefly each lasted (a watch sees each one)."""
    async with _seen(karmada, binding, lambda obj: obj) as seen:
        yield seen


@contextlib.asynccontextmanager
async def assignments_seen(karmada: KubeClient, binding: dict[str, Any]) -> AsyncIterator[list[dict[str, int]]]:
    """Every assignment the binding goes through from now on, however briefly each lasted (a watch sees each
    version), so a test can tell the descheduler's lowered assignment from the scheduler's refilled one."""
    async with _seen(karmada, binding, assigned) as seen:
        yield seen


@contextlib.asynccontextmanager
async def _seen(karmada: KubeClient, binding: dict[str, Any],
                project: Callable[[dict[str, Any]], T]) -> AsyncIterator[list[T]]:
    seen: list[T] = []

    def record(kind: str, obj: dict[str, Any]) -> None:
        if kind != "DELETED":
            seen.append(project(obj))

    name, ns = binding["metadata"]["name"], binding["metadata"]["namespace"]
    watcher = asyncio.create_task(_record(karmada, RESOURCE_BINDINGS, ns, binding["metadata"]["resourceVersion"],
                                          record, field_selector=f"metadata.name={name}"))
    try:
        yield seen
    finally:
        await cancel_and_wait(watcher)


@contextlib.asynccontextmanager
async def watching(karmada: KubeClient, resource: Resource, record: Callable[[str, dict[str, Any]], None], *,
                   label_selector: str = "") -> AsyncIterator[None]:
    """Every object of ``resource`` in every namespace passed to ``record`` (as ``ADDED``), then every change from
    then on (``ADDED``, ``MODIFIED``, ``DELETED``), however briefly each version lasted."""
    listed = await karmada.list(resource, label_selector=label_selector)
    for obj in listed.get("items") or []:
        record("ADDED", obj)
    watcher = asyncio.create_task(_record(karmada, resource, "", listed["metadata"]["resourceVersion"], record,
                                          label_selector=label_selector))
    try:
        yield
    finally:
        await cancel_and_wait(watcher)


async def _record(karmada: KubeClient, resource: Resource, namespace: str, version: str,
                  record: Callable[[str, dict[str, Any]], None], *, field_selector: str = "",
                  label_selector: str = "") -> None:
    """Watched again from the last version when the server ends a watch, and not at all after an error (an expired
    version cannot be watched from again: the test then fails on what was seen)."""
    with contextlib.suppress(ApiError):
        while True:
            async for event in karmada.watch(resource, namespace, resource_version=version,
                                             field_selector=field_selector, label_selector=label_selector):
                obj = event.get("object") or {}
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                    record(event["type"], obj)


async def lowered_then_refilled(karmada: KubeClient, binding: dict[str, Any], seen: list[dict[str, int]], *,
                                cluster: str, before: int) -> None:
    """After the event: the assignment had ``cluster`` one lower with the total short (our descheduler), then the
    total back (Karmada's scheduler places the deficit, its scale-up path, by the policy's weights)."""
    resource, total = binding["spec"]["resource"], binding["spec"]["replicas"]
    await wait_assigned(karmada, objects.namespace(binding), resource["name"], lambda a: sum(a.values()) == total,
                        kind=resource["kind"])
    await eventually(lambda: any(a.get(cluster, 0) == before - 1 and sum(a.values()) < total for a in seen),
                     timeout=10)
