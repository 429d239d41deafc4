"""The cluster controller (``cluster-controller``): execution spaces, finalizer and condition taints.

Written from Karmada's ``pkg/controllers/cluster/cluster_controller.go``. For every Cluster:

* its execution space, the namespace ``karmada-es-<cluster>`` where its Works live, exists on the
  host (created with the label ``karmada.io/system=true``; event ``CreateExecutionSpaceSucceed``);
* its scheduling taints follow its ``Ready`` condition (``taintClusterByCondition``): False →
  ``cluster.karmada.io/not-ready:NoSchedule``; Unknown → ``cluster.karmada.io/unreachable:NoSchedule``;
  True → neither; no condition yet (a cluster just joined) → not-ready. The other taints are left
  alone, added ones get ``timeAdded``, and every change is an event ``TaintClusterSucceed``;
* the finalizer ``karmada.io/cluster-controller`` is present, so that a deletion first removes the
  execution space: the namespace is deleted (for a Pull cluster that is not ready, its Works'
  execution finalizer is dropped first, since no agent will ever clean up) and the namespace
  controller deletes the Works in it; the Cluster's finalizer goes once the namespace is gone
  (re-checked every ``CLEANUP_CHECK_INTERVAL``).

Not simulated: the health monitor of Pull clusters (``--cluster-monitor-period``: Push clusters,
the only kind the dev plane has, return before it does anything) and the wait for bindings to drop
the cluster before the finalizer is removed (it needs the taint-manager's terminating taint chain).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.manager import Manager
from controller_manager.objects import MutableObj, Obj
from controller_manager.reconcile import Request, Result
from karmada_api.clusters import CONDITION_READY, TAINT_NOT_READY, TAINT_UNREACHABLE, is_ready
from karmada_api.labels import EXECUTION_CONTROLLER_FINALIZER
from karmada_api.names import execution_space
from karmada_api.resources import CLUSTERS, WORKS
from karmada_api.taints import generate_taints_message
from kube_api.conditions import find_condition
from kube_api.resources import NAMESPACES
from kube_api.timeutil import now_text

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "cluster-controller"
CLUSTER_CONTROLLER_FINALIZER = "karmada.io/cluster-controller"
KARMADA_SYSTEM_LABEL = "karmada.io/system"
KARMADA_SYSTEM_LABEL_VALUE = "true"
NOT_READY_TAINT: dict[str, str] = {"key": TAINT_NOT_READY, "effect": "NoSchedule"}
UNREACHABLE_TAINT: dict[str, str] = {"key": TAINT_UNREACHABLE, "effect": "NoSchedule"}

CLEANUP_CHECK_INTERVAL = 1.0
"""Seconds between checks that a deleted cluster's execution space is gone (Karmada's fixed interval)."""


EVENT_CREATE_EXECUTION_SPACE_SUCCEED = "CreateExecutionSpaceSucceed"
EVENT_CREATE_EXECUTION_SPACE_FAILED = "CreateExecutionSpaceFailed"
EVENT_REMOVE_EXECUTION_SPACE_SUCCEED = "RemoveExecutionSpaceSucceed"
EVENT_REMOVE_EXECUTION_SPACE_FAILED = "RemoveExecutionSpaceFailed"
EVENT_TAINT_CLUSTER_SUCCEED = "TaintClusterSucceed"
EVENT_TAINT_CLUSTER_FAILED = "TaintClusterFailed"


# ----------------------------------------------------------------------------- pure rules


def _match_taint(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """``Taint.MatchTaint``: same key and effect (value and time do not matter)."""
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def _taint_exists(taints: list[dict[str, Any]], taint: Mapping[str, Any]) -> bool:
    return any(_match_taint(existing, taint) for existing in taints)


def set_current_cluster_taints(taints: list[dict[str, Any]] | None, to_add: list[dict[str, str]],
                               to_remove: list[dict[str, str]], now: str | None = None) -> list[dict[str, Any]]:
    """``helper.SetCurrentClusterTaints``: remove, then append the missing ones with ``timeAdded``.

    Returns the input list itself when nothing changes (so callers can tell by identity).
    """
    current = taints or []
    adding = [t for t in to_add if not _taint_exists(current, t)]
    removing = [t for t in to_remove if _taint_exists(current, t)]
    if not adding and not removing:
        return current
    result = [dict(t) for t in current if not _taint_exists(removing, t)]
    stamp = now or now_text()
    result.extend({**t, "timeAdded": stamp} for t in adding)
    return result


def taints_for_condition(cluster: Obj, now: str | None = None) -> list[dict[str, Any]]:
    """The taints the cluster should carry given its ``Ready`` condition (``taintClusterByCondition``)."""
    taints = list(objects.spec(cluster).get("taints") or [])
    ready = find_condition(objects.status(cluster).get("conditions"), CONDITION_READY)
    if ready is None:
        return set_current_cluster_taints(taints, [NOT_READY_TAINT], [], now)
    status = ready.get("status")
    if status == "False":
        return set_current_cluster_taints(taints, [NOT_READY_TAINT], [UNREACHABLE_TAINT], now)
    if status == "Unknown":
        return set_current_cluster_taints(taints, [UNREACHABLE_TAINT], [NOT_READY_TAINT], now)
    if status == "True":
        return set_current_cluster_taints(taints, [], [NOT_READY_TAINT, UNREACHABLE_TAINT], now)
    return taints


# ----------------------------------------------------------------------------- reconciler


class ClusterReconciler:
    """One Cluster: execution space, taints by condition and finalizer; cleanup on deletion."""

    def __init__(self, client: KubeClient, clusters: Indexer, events: EventRecorder) -> None:
        self.client = client
        self.clusters = clusters
        self.events = events

    async def reconcile(self, request: Request) -> Result:
        cluster = self.clusters.get(request.name)
        if cluster is None:
            return Result()
        if objects.is_deleting(cluster):
            return await self._remove(cluster)
        await self._create_execution_space(cluster)
        # The cache says whether a write is due; the write itself works on a fresh read.
        taints_due = taints_for_condition(cluster) != (objects.spec(cluster).get("taints") or [])
        if taints_due and await self._taint_by_condition(request.name) is None:
            return Result()  # deleted meanwhile
        if CLUSTER_CONTROLLER_FINALIZER not in objects.finalizers(cluster):
            await self._edit_finalizer(request.name, add=True)
        return Result()

    # ---- sync ------------------------------------------------------------------------------------

    async def _create_execution_space(self, cluster: Obj) -> None:
        name = objects.name(cluster)
        namespace = execution_space(name)
        try:
            await self.client.get(NAMESPACES, namespace)
            return
        except ApiError as exc:
            if not exc.is_not_found:
                self.events.event(CLUSTERS.with_type_meta(cluster), WARNING, EVENT_CREATE_EXECUTION_SPACE_FAILED,
                                  str(exc))
                raise
        try:
            await self.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": namespace, "labels": {KARMADA_SYSTEM_LABEL: KARMADA_SYSTEM_LABEL_VALUE}}})
        except ApiError as exc:
            if exc.is_already_exists:
                return
            self.events.event(CLUSTERS.with_type_meta(cluster), WARNING, EVENT_CREATE_EXECUTION_SPACE_FAILED, str(exc))
            raise
        log.info("created execution space", cluster=name, namespace=namespace)
        self.events.event(CLUSTERS.with_type_meta(cluster), NORMAL, EVENT_CREATE_EXECUTION_SPACE_SUCCEED,
                          f"Created execution space({namespace}) for cluster({name}).")

    async def _taint_by_condition(self, name: str) -> MutableObj | None:
        """Update ``spec.taints`` from the latest Cluster; the Cluster (None once it is gone)."""
        written: list[dict[str, Any]] | None = None

        async def attempt() -> MutableObj | None:
            nonlocal written
            latest = await self.client.get_or_none(CLUSTERS, name)
            if latest is None:
                return None
            current = objects.spec(latest).get("taints") or []
            taints = taints_for_condition(latest)
            if taints == current:
                return latest
            updated = copy.deepcopy(latest)
            updated.setdefault("spec", {})["taints"] = taints
            result = await self.client.update(CLUSTERS, updated)
            written = taints
            return result

        try:
            latest = await retry_on_conflict(attempt)
        except ApiError as exc:
            cached = self.clusters.get(name)
            if cached is not None:
                self.events.event(CLUSTERS.with_type_meta(cached), WARNING, EVENT_TAINT_CLUSTER_FAILED, str(exc))
            raise
        if written is not None and latest is not None:
            log.info("cluster taints updated", cluster=name, taints=generate_taints_message(written))
            self.events.event(CLUSTERS.with_type_meta(latest), NORMAL, EVENT_TAINT_CLUSTER_SUCCEED,
                              f"Taint cluster succeed: {generate_taints_message(written)}.")
        return latest

    async def _edit_finalizer(self, name: str, *, add: bool) -> None:
        async def attempt() -> None:
            latest = await self.client.get_or_none(CLUSTERS, name)
            if latest is None:
                return
            finalizers = list(objects.finalizers(latest))
            if (CLUSTER_CONTROLLER_FINALIZER in finalizers) == add:
                return
            if add:
                finalizers.append(CLUSTER_CONTROLLER_FINALIZER)
            else:
                finalizers = [f for f in finalizers if f != CLUSTER_CONTROLLER_FINALIZER]
            updated = copy.deepcopy(latest)
            updated["metadata"]["finalizers"] = finalizers
            await self.client.update(CLUSTERS, updated)

        try:
            await retry_on_conflict(attempt)
        except ApiError as exc:
            if not exc.is_not_found:
                raise

    # ---- deletion --------------------------------------------------------------------------------

    async def _remove(self, cluster: Obj) -> Result:
        name = objects.name(cluster)
        namespace = execution_space(name)
        try:
            await self._remove_execution_space(cluster, namespace)
        except ApiError as exc:
            self.events.event(CLUSTERS.with_type_meta(cluster), WARNING, EVENT_REMOVE_EXECUTION_SPACE_FAILED, str(exc))
            raise
        self.events.event(CLUSTERS.with_type_meta(cluster), NORMAL, EVENT_REMOVE_EXECUTION_SPACE_SUCCEED,
                          f"Removed execution space for cluster({name}).")
        try:
            await self.client.get(NAMESPACES, namespace)
        except ApiError as exc:
            if not exc.is_not_found:
                raise
        else:
            log.info("waiting for the execution space to be deleted", cluster=name, namespace=namespace)
            return Result(requeue_after=CLEANUP_CHECK_INTERVAL)
        await self._edit_finalizer(name, add=False)
        return Result()

    async def _remove_execution_space(self, cluster: Obj, namespace: str) -> None:
        """``removeExecutionSpace``: delete the namespace (NotFound is success); its Works go with it.

        Karmada deletes no Work itself; it only drops their execution finalizer when a Pull cluster
        is not ready (no agent will ever clean up).
        """
        if objects.spec(cluster).get("syncMode") == "Pull" and not is_ready(cluster):
            try:
                works = (await self.client.list(WORKS, namespace)).get("items") or []
            except ApiError as exc:
                if not exc.is_not_found:
                    raise
                works = []
            for work in works:
                if EXECUTION_CONTROLLER_FINALIZER in objects.finalizers(work):
                    await self._drop_work_finalizer(objects.name(work), namespace)
        try:
            await self.client.delete(NAMESPACES, namespace)
        except ApiError as exc:
            if not exc.is_not_found:
                raise

    async def _drop_work_finalizer(self, name: str, namespace: str) -> None:
        async def attempt() -> None:
            work = await self.client.get_or_none(WORKS, name, namespace)
            if work is None:
                return
            finalizers = objects.finalizers(work)
            if EXECUTION_CONTROLLER_FINALIZER not in finalizers:
                return
            updated = copy.deepcopy(work)
            updated["metadata"]["finalizers"] = [f for f in finalizers if f != EXECUTION_CONTROLLER_FINALIZER]
            await self.client.update(WORKS, updated)

        await retry_on_conflict(attempt)


# ----------------------------------------------------------------------------- wiring


def setup_cluster_controller(manager: Manager) -> list[Controller]:
    """Register ``cluster-controller`` (``--concurrent-cluster-syncs`` = 5 workers) on the Clusters informer."""
    clusters = manager.informer(CLUSTERS)
    reconciler = ClusterReconciler(manager.client, clusters.store, manager.event_recorder(CONTROLLER_NAME))
    controller = Controller(CONTROLLER_NAME, reconciler, workers=5)
    controller.watches(clusters)
    manager.add_controller(controller)
    return [controller]


__all__ = [
    "CLEANUP_CHECK_INTERVAL",
    "CLUSTER_CONTROLLER_FINALIZER",
    "CONTROLLER_NAME",
    "NOT_READY_TAINT",
    "UNREACHABLE_TAINT",
    "ClusterReconciler",
    "set_current_cluster_taints",
    "setup_cluster_controller",
    "taints_for_condition",
]
