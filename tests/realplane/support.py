"""What the real-plane tests share: kubectl as a user runs it, namespaces, workloads and their bindings."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
from collections.abc import Callable
from typing import Any

import aiohttp
import anyio

from benchmarks.refplane import RefPlane, kubectl
from controller_manager.client import ApiError, KubeClient, Resource
from karmada_api.resources import CLUSTERS, PROPAGATION_POLICIES, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from kube_api.resources import DEPLOYMENTS, NAMESPACES
from tests.conftest import eventually

SCHEDULED = 60.0  # seconds Karmada's scheduler and controllers get to place and apply a workload


async def run_kubectl(plane: RefPlane, *args: str, context: str = "karmada-apiserver",
                      stdin: str | None = None) -> str:
    """``kubectl --context C ARGS`` with the plane's kubeconfigs (the one the project installs); its stdout."""
    config = f"{plane.karmada_kubeconfig}:{plane.members_kubeconfig}"
    argv = [kubectl() or "kubectl", "--context", context, *args]

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60, check=False,
                              env={**os.environ, "KUBECONFIG": config})

    done = await anyio.to_thread.run_sync(run)
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


async def binding_of(karmada: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    return await karmada.get_or_none(RESOURCE_BINDINGS, f"{name}-deployment", namespace)


async def wait_assigned(karmada: KubeClient, namespace: str, name: str, check: Callable[[dict[str, int]], bool],
                        timeout: float = SCHEDULED) -> dict[str, Any]:
    """The binding once ``check(assigned(binding))`` holds."""

    async def ready() -> dict[str, Any] | None:
        binding = await binding_of(karmada, namespace, name)
        return binding if binding is not None and check(assigned(binding)) else None

    result: dict[str, Any] = await eventually(ready, timeout=timeout, interval=0.25)
    return result


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
