"""The cluster status controller (``cluster-status-controller``): Ready, version, APIs and summaries.

Written from Karmada's ``pkg/controllers/status/cluster_status_controller.go`` and
``cluster_condition_cache.go``. Every ``period`` seconds (``--cluster-status-update-frequency``)
per Push Cluster that carries the cluster controller's finalizer:

1. probe the member: ``GET /readyz`` (``/healthz`` when that is 404). 200 → online and healthy;
   another 2xx → online, unhealthy; an error or any other status → offline (client-go turns
   non-2xx answers into errors, which Karmada reads as "not reachable").
2. adjust the observed ``Ready`` by the thresholds: a flip away from the current Ready=True
   (or back to it) only shows once it has lasted ``failure_threshold`` (``--cluster-failure-threshold``)
   (or the success threshold) since it was first observed;
3. offline and not Ready → write only the ``Ready`` condition (``ClusterNotReachable``); online,
   healthy and Ready → collect ``kubernetesVersion`` (``/version``), ``apiEnablements`` (discovery,
   with ``CompleteAPIEnablements``), ``nodeSummary`` and ``resourceSummary`` from the member caches
   (see :mod:`devplane.karmada.modeling`) and write them; otherwise write only ``Ready``.

Writes go to the status subresource, only when something differs, inside a conflict retry that
re-reads the Cluster. Member access is :class:`~clusteraccess.registry.MemberRegistry` (the estimator's too):
its client for probes and discovery, its synced Node and Pod caches for the summaries. A member
still starting (no client, caches not synced) leaves the status alone; a member whose client
cannot be built (no Secret, bad endpoint) is ``Ready=False/StatusCollectionFailed`` as in Karmada.

Deviations: the success threshold (``--cluster-success-threshold``, Karmada default 30 s like the
failure threshold) is taken equal to ``failure_threshold``; Pull clusters are left to karmada-agent
(not simulated) as Karmada's controller-manager does.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import structlog
from prometheus_client import Gauge, Histogram

from clusteraccess.cluster import MemberCluster
from clusteraccess.registry import MemberRegistry
from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict_unless_gone
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.manager import Manager
from controller_manager.objects import Obj
from controller_manager.predicate import FuncPredicate, GenerationChangedPredicate
from controller_manager.reconcile import Request, Result
from estimator.caches import NEED_CAPACITY
from karmada_api.clusters import CONDITION_READY, is_ready
from karmada_api.resources import CLUSTERS
from kube_api.conditions import find_condition, set_condition
from kube_api.quantity import RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS, parse_quantity

from .cluster import CLUSTER_CONTROLLER_FINALIZER
from .modeling import node_summary, resource_summary

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "cluster-status-controller"

CONDITION_COMPLETE_API_ENABLEMENTS = "CompleteAPIEnablements"
CLUSTER_READY = "ClusterReady"
CLUSTER_HEALTHY = "cluster is healthy and ready to accept workloads"
CLUSTER_NOT_READY = "ClusterNotReady"
CLUSTER_UNHEALTHY = "cluster is reachable but health endpoint responded without ok"
CLUSTER_NOT_REACHABLE_REASON = "ClusterNotReachable"
CLUSTER_NOT_REACHABLE_MESSAGE = "cluster is not reachable"
STATUS_COLLECTION_FAILED = "StatusCollectionFailed"
API_ENABLEMENTS_COMPLETE = "Complete"
API_ENABLEMENTS_PARTIAL = "Partial"
API_ENABLEMENTS_EMPTY = "Empty"

NOT_SYNCED_RETRY = 1.0
"""Seconds before looking again at a cluster not ready to sync yet (member starting, caches syncing,
finalizer missing); capped by the period."""

_NETWORK_ERRORS = (ApiError, aiohttp.ClientError, TimeoutError, OSError, ValueError)

SYNC_DURATION = Histogram("cluster_sync_status_duration_seconds",
                          "Duration in seconds for syncing the status of the cluster once.", ["member_cluster"])
READY_STATE = Gauge("cluster_ready_state", "State of the cluster (1 if ready, 0 otherwise).", ["member_cluster"])
NODE_NUMBER = Gauge("cluster_node_number", "Number of nodes in the cluster.", ["member_cluster"])
READY_NODE_NUMBER = Gauge("cluster_ready_node_number", "Number of ready nodes in the cluster.", ["member_cluster"])
MEMORY_ALLOCATABLE = Gauge("cluster_memory_allocatable_bytes", "Allocatable cluster memory resource in bytes.",
                           ["member_cluster"])
CPU_ALLOCATABLE = Gauge("cluster_cpu_allocatable_number", "Number of allocatable CPU in the cluster.",
                        ["member_cluster"])
POD_ALLOCATABLE = Gauge("cluster_pod_allocatable_number", "Number of allocatable pods in the cluster.",
                        ["member_cluster"])
MEMORY_ALLOCATED = Gauge("cluster_memory_allocated_bytes", "Allocated cluster memory resource in bytes.",
                         ["member_cluster"])
CPU_ALLOCATED = Gauge("cluster_cpu_allocated_number", "Number of allocated CPU in the cluster.", ["member_cluster"])
POD_ALLOCATED = Gauge("cluster_pod_allocated_number", "Number of allocated pods in the cluster.", ["member_cluster"])
_CLUSTER_METRICS: tuple[Gauge | Histogram, ...] = (
    SYNC_DURATION, READY_STATE, NODE_NUMBER, READY_NODE_NUMBER, MEMORY_ALLOCATABLE, CPU_ALLOCATABLE,
    POD_ALLOCATABLE, MEMORY_ALLOCATED, CPU_ALLOCATED, POD_ALLOCATED)


# ----------------------------------------------------------------------------- pure rules


def _condition(ctype: str, status: str, reason: str, message: str) -> dict[str, Any]:
    """``util.NewCondition``: no observedGeneration; lastTransitionTime is set when it is stored."""
    return {"type": ctype, "status": status, "reason": reason, "message": message}


def ready_condition(online: bool, healthy: bool) -> dict[str, Any]:
    """``generateReadyCondition``."""
    if not online:
        return _condition(CONDITION_READY, "False", CLUSTER_NOT_REACHABLE_REASON, CLUSTER_NOT_REACHABLE_MESSAGE)
    if not healthy:
        return _condition(CONDITION_READY, "False", CLUSTER_NOT_READY, CLUSTER_UNHEALTHY)
    return _condition(CONDITION_READY, "True", CLUSTER_READY, CLUSTER_HEALTHY)


def api_enablements_condition(count: int, complete: bool) -> dict[str, Any]:
    """``CompleteAPIEnablements``: Empty (nothing collected), Partial (some group failed) or Complete."""
    if count == 0:
        return _condition(CONDITION_COMPLETE_API_ENABLEMENTS, "False", API_ENABLEMENTS_EMPTY,
                          "collected empty APIEnablements from the cluster")
    if not complete:
        return _condition(CONDITION_COMPLETE_API_ENABLEMENTS, "False", API_ENABLEMENTS_PARTIAL,
                          f"might collect partial APIEnablements({count}) from the cluster")
    return _condition(CONDITION_COMPLETE_API_ENABLEMENTS, "True", API_ENABLEMENTS_COMPLETE,
                      "collected complete APIEnablements from the cluster")


def build_api_enablements(resource_lists: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``getAPIEnablements``: one entry per APIResourceList, subresources dropped, both levels sorted."""
    enablements: list[dict[str, Any]] = []
    for resource_list in resource_lists:
        resources = [{"name": str(r.get("name") or ""), "kind": str(r.get("kind") or "")}
                     for r in resource_list.get("resources") or [] if "/" not in str(r.get("name") or "")]
        resources.sort(key=lambda r: r["name"])
        entry: dict[str, Any] = {"groupVersion": str(resource_list.get("groupVersion") or "")}
        if resources:
            entry["resources"] = resources
        enablements.append(entry)
    enablements.sort(key=lambda e: str(e["groupVersion"]))
    return enablements


@dataclass
class _Observation:
    status: str
    since: float  # -inf for the first observation: no threshold applies to it


class ReadyThresholds:
    """``clusterConditionStore``: holds a Ready flip back until it has lasted its threshold.

    The first observation of a cluster is taken as is. Afterwards a change of the observed status
    starts a timer; while it runs, an observation that would turn the current Ready=True into
    not-True (failure threshold), or a not-True into True (success threshold), yields the current
    condition instead. Unknown → False and the like pass at once.
    """

    def __init__(self, *, success_threshold: float, failure_threshold: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.success_threshold = success_threshold
        self.failure_threshold = failure_threshold
        self._clock = clock
        self._observed: dict[str, _Observation] = {}

    def adjust(self, name: str, conditions: list[dict[str, Any]] | None, observed: dict[str, Any]) -> dict[str, Any]:
        saved = self._observed.get(name)
        if saved is None:
            self._observed[name] = _Observation(str(observed["status"]), float("-inf"))
            return observed
        current = find_condition(conditions, CONDITION_READY)
        if current is None:
            return observed
        now = self._clock()
        if saved.status != observed["status"]:
            saved = self._observed[name] = _Observation(str(observed["status"]), now)
        observed_true = observed["status"] == "True"
        current_true = current.get("status") == "True"
        threshold = self.success_threshold if observed_true else self.failure_threshold
        if observed_true != current_true and now < saved.since + threshold:
            return dict(current)
        return observed

    def forget(self, name: str) -> None:
        self._observed.pop(name, None)


def is_push_cluster(cluster: Obj) -> bool:
    """The controller-manager syncs Push clusters with a Secret; Pull ones belong to karmada-agent."""
    spec = objects.spec(cluster)
    return spec.get("syncMode") == "Push" and bool(spec.get("secretRef"))


# ----------------------------------------------------------------------------- member calls


async def _status_of(client: KubeClient, path: str) -> int:
    # KubeClient.request parses JSON and raises on non-2xx; a health endpoint answers text, and the
    # probe needs the bare status code, so it goes one level down (same limiter, metrics, timeout).
    response = await client._send("GET", path)
    async with response:
        await response.read()
        return int(response.status)


async def probe_health(client: KubeClient) -> tuple[bool, bool]:
    """``getClusterHealthStatus``: (online, healthy) from ``/readyz``, or ``/healthz`` when that is 404."""
    try:
        status = await _status_of(client, "/readyz")
        if status == 404:
            status = await _status_of(client, "/healthz")
    except (aiohttp.ClientError, TimeoutError, OSError) as exc:
        log.debug("cluster health check failed", endpoint=client.host, error=f"{type(exc).__name__}: {exc}")
        return False, False
    if not 200 <= status <= 206:  # client-go: an error result, which Karmada reads as unreachable
        return False, False
    return True, status == 200


async def kubernetes_version(client: KubeClient) -> str:
    """``/version`` ``gitVersion``; "" when it cannot be read (the field is then cleared, as in Karmada)."""
    try:
        version = await client.request("GET", "/version")
    except _NETWORK_ERRORS as exc:
        log.warning("failed to get Kubernetes version", endpoint=client.host, error=str(exc))
        return ""
    return str((version or {}).get("gitVersion") or "") if isinstance(version, dict) else ""


async def discover_resource_lists(client: KubeClient) -> tuple[list[dict[str, Any]], bool]:
    """``ServerGroupsAndResources``: (the APIResourceLists read, whether every group version answered).

    ``/api`` or ``/apis`` failing yields nothing at all; a failing group version leaves it out.
    """
    try:
        core, groups = await asyncio.gather(client.request("GET", "/api"), client.request("GET", "/apis"))
    except _NETWORK_ERRORS as exc:
        log.warning("API discovery failed", endpoint=client.host, error=str(exc))
        return [], False
    paths = [f"/api/{version}" for version in (core or {}).get("versions") or []]
    for group in (groups or {}).get("groups") or []:
        paths.extend(f"/apis/{v['groupVersion']}" for v in group.get("versions") or [] if v.get("groupVersion"))
    results = await asyncio.gather(*(client.request("GET", path) for path in paths), return_exceptions=True)
    lists: list[dict[str, Any]] = []
    complete = True
    for path, result in zip(paths, results, strict=True):
        if isinstance(result, dict):
            lists.append(result)
        elif isinstance(result, _NETWORK_ERRORS):
            complete = False
            log.warning("API discovery of a group version failed", endpoint=client.host, path=path, error=str(result))
        elif isinstance(result, BaseException):
            raise result
        else:
            complete = False
    return lists, complete


# ----------------------------------------------------------------------------- metrics


def _amount(resources: Mapping[str, Any] | None, name: str) -> float:
    quantity = (resources or {}).get(name)
    if quantity is None:
        return 0.0
    try:
        return float(parse_quantity(quantity))
    except ValueError:
        return 0.0


def record_cluster_status(cluster: Obj) -> None:
    """``metrics.RecordClusterStatus``: the readiness, node and resource gauges of one cluster."""
    name = objects.name(cluster)
    status = objects.status(cluster)
    READY_STATE.labels(name).set(1.0 if is_ready(cluster) else 0.0)
    nodes = status.get("nodeSummary")
    if nodes is not None:
        NODE_NUMBER.labels(name).set(int(nodes.get("totalNum") or 0))
        READY_NODE_NUMBER.labels(name).set(int(nodes.get("readyNum") or 0))
    summary = status.get("resourceSummary")
    if summary is not None:
        allocatable, allocated = summary.get("allocatable"), summary.get("allocated")
        if allocatable is not None:
            MEMORY_ALLOCATABLE.labels(name).set(_amount(allocatable, RESOURCE_MEMORY))
            CPU_ALLOCATABLE.labels(name).set(_amount(allocatable, RESOURCE_CPU))
            POD_ALLOCATABLE.labels(name).set(_amount(allocatable, RESOURCE_PODS))
        if allocated is not None:
            MEMORY_ALLOCATED.labels(name).set(_amount(allocated, RESOURCE_MEMORY))
            CPU_ALLOCATED.labels(name).set(_amount(allocated, RESOURCE_CPU))
            POD_ALLOCATED.labels(name).set(_amount(allocated, RESOURCE_PODS))


def cleanup_cluster_metrics(name: str) -> None:
    """``metrics.CleanupMetricsForCluster``: a deleted cluster leaves no series behind."""
    for metric in _CLUSTER_METRICS:
        with contextlib.suppress(KeyError):
            metric.remove(name)


# ----------------------------------------------------------------------------- reconciler


@dataclass
class _Outcome:
    cluster: Obj | None = None  # as written or read back; None when nothing was read
    requeue_after: float | None = None  # None: the period


class ClusterStatusReconciler:
    """Computes and writes one Cluster's status from its member."""

    def __init__(self, client: KubeClient, clusters: Indexer, registry: MemberRegistry, *, period: float,
                 failure_threshold: float, modeling: bool = True) -> None:
        self.client = client
        self.clusters = clusters
        self.registry = registry
        self.period = period
        self.modeling = modeling
        self.thresholds = ReadyThresholds(success_threshold=failure_threshold, failure_threshold=failure_threshold)

    async def reconcile(self, request: Request) -> Result:
        name = request.name
        cluster = self.clusters.get(name)
        if cluster is None:
            self.thresholds.forget(name)
            cleanup_cluster_metrics(name)
            return Result()
        if not is_push_cluster(cluster):
            return Result()
        if CLUSTER_CONTROLLER_FINALIZER not in objects.finalizers(cluster):
            # Karmada requeues with backoff; a finalizer-only update does not pass the generation
            # predicate, so a fixed short retry keeps the first status from waiting on a long backoff.
            log.debug("waiting for the cluster controller's finalizer", cluster=name)
            return Result(requeue_after=min(NOT_SYNCED_RETRY, self.period))
        started = time.perf_counter()
        try:
            outcome = await self._sync(cluster)
        finally:
            SYNC_DURATION.labels(name).observe(time.perf_counter() - started)
        record_cluster_status(outcome.cluster or cluster)
        after = self.period if outcome.requeue_after is None else min(outcome.requeue_after, self.period)
        return Result(requeue_after=after)

    async def _sync(self, cluster: Obj) -> _Outcome:
        name = objects.name(cluster)
        member = self.registry.get(name)
        if member is None or member.closed:
            return _Outcome(requeue_after=NOT_SYNCED_RETRY)  # the registry has not started it yet
        client = member.client
        if client is None:
            if not member.error:
                return _Outcome(requeue_after=NOT_SYNCED_RETRY)
            failed = _condition(CONDITION_READY, "False", STATUS_COLLECTION_FAILED,
                                f"failed to create a ClusterClient: {member.error}")
            return _Outcome(await self._write(name, None, [failed]))
        online, healthy = await probe_health(client)
        conditions = objects.status(cluster).get("conditions")
        ready = self.thresholds.adjust(name, conditions, ready_condition(online, healthy))
        if not online and ready["status"] != "True":
            return _Outcome(await self._write(name, None, [ready]))
        if online and healthy and ready["status"] == "True":
            if not member.has_synced(NEED_CAPACITY):  # the Node and Pod caches the summaries read
                return _Outcome(requeue_after=NOT_SYNCED_RETRY)  # Karmada waits for the caches too
            fields, enablements_condition = await self._collect(cluster, member, client)
            return _Outcome(await self._write(name, fields, [enablements_condition, ready]))
        return _Outcome(await self._write(name, None, [ready]))

    async def _collect(self, cluster: Obj, member: MemberCluster,
                       client: KubeClient) -> tuple[dict[str, Any], dict[str, Any]]:
        """kubernetesVersion, apiEnablements (+ its condition), nodeSummary and resourceSummary."""
        version, (lists, complete) = await asyncio.gather(kubernetes_version(client),
                                                          discover_resource_lists(client))
        enablements = build_api_enablements(lists)
        nodes, pods = member.cache("nodes").list(), member.cache("pods").list()
        fields: dict[str, Any] = {"kubernetesVersion": version, "apiEnablements": enablements}
        if self.modeling:
            models = objects.spec(cluster).get("resourceModels")
            fields["nodeSummary"] = node_summary(nodes)
            fields["resourceSummary"] = resource_summary(nodes, pods, models)
        return fields, api_enablements_condition(len(enablements), complete)

    async def _write(self, name: str, fields: dict[str, Any] | None, conditions: list[dict[str, Any]]) -> Obj | None:
        """Set ``fields`` (empty string/list = omitted) and ``conditions`` on the latest status; write if changed."""
        async def attempt() -> Obj | None:
            latest = await self.client.get_or_none(CLUSTERS, name)
            if latest is None:
                return None
            old = objects.status(latest)
            status = objects.deep_copy(old)
            for key, value in (fields or {}).items():
                if value is None or value in ("", []):
                    status.pop(key, None)
                else:
                    status[key] = value
            for condition in conditions:
                status["conditions"] = set_condition(status.get("conditions") or [], condition)
            if status == old:
                return latest
            log.debug("updating cluster status", cluster=name)
            written: Obj = await self.client.update_status(CLUSTERS, {**latest, "status": status})
            return written

        return await retry_on_conflict_unless_gone(attempt)


# ----------------------------------------------------------------------------- wiring


PUSH_PREDICATE = FuncPredicate(on_create=is_push_cluster, on_update=lambda _old, new: is_push_cluster(new),
                               on_delete=lambda _obj: True)


def setup_cluster_status(manager: Manager, registry: MemberRegistry, *, period: float = 10.0,
                         failure_threshold: float = 30.0) -> list[Controller]:
    """Register ``cluster-status-controller``: every ``period`` s per Push cluster, and when its member changes."""
    if period <= 0:
        raise ValueError(f"cluster status update frequency must be positive, got {period}")
    clusters = manager.informer(CLUSTERS)
    reconciler = ClusterStatusReconciler(manager.client, clusters.store, registry, period=period,
                                         failure_threshold=failure_threshold)
    controller = Controller(CONTROLLER_NAME, reconciler, workers=5)
    controller.watches(clusters, predicates=[PUSH_PREDICATE, GenerationChangedPredicate()])
    registry.on_change(lambda name: controller.enqueue(Request("", name)))
    manager.add_controller(controller)
    return [controller]


__all__ = [
    "CONTROLLER_NAME",
    "SYNC_DURATION",
    "ClusterStatusReconciler",
    "ReadyThresholds",
    "api_enablements_condition",
    "build_api_enablements",
    "cleanup_cluster_metrics",
    "discover_resource_lists",
    "is_push_cluster",
    "kubernetes_version",
    "probe_health",
    "ready_condition",
    "record_cluster_status",
    "setup_cluster_status",
]
