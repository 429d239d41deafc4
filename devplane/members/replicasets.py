"""The member's ReplicaSet controller (kube-controller-manager's ``replicaset-controller``).

A ReplicaSet keeps ``spec.replicas`` active pods: it creates pods from its template with
``generateName: <rs>-`` and a controller ownerReference (``blockOwnerDeletion``), and scales down
by deleting pods in Kubernetes' order (:func:`pods_to_delete`). Pods being deleted or terminal do
not count. Creations go in slow-start batches (1, 2, 4...), at most 500 per sync.

Like Kubernetes, the controller keeps *expectations* (:mod:`devplane.members.podowner`, the sync
loop it shares with the StatefulSet controller).

Status: ``replicas`` (always written), ``fullyLabeledReplicas``, ``readyReplicas``,
``availableReplicas`` (ready for ``minReadySeconds``), ``observedGeneration``; zero values are
omitted as Go's ``omitempty`` does.

The pods a ReplicaSet counts are those it claims (:mod:`devplane.members.controllerref`): its own pods
that still match its selector, plus orphans that match, which it adopts; pods that stop matching
are released.

Simplifications: no ``ReplicaFailure`` condition, and scale-down ranks pods by creation and ready
time directly (Kubernetes' ``LogarithmicScaleDown`` buckets are not used).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.controller import Controller
from controller_manager.manager import Manager
from controller_manager.objects import MutableObj, Obj
from kube_api.conditions import find_condition
from kube_api.ownerrefs import controller_of, controller_reference, controller_uid_index
from kube_api.pods import is_pod_terminated
from kube_api.resources import PODS, REPLICA_SETS
from kube_api.timeutil import parse_optional_time

from .podowner import BURST_REPLICAS, PodOwnerReconciler, raise_first, register_pod_owner

log = structlog.get_logger(__name__)

COMPONENT = "replicaset-controller"
OWNER_INDEX = "members/by-controller-uid"
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


# ----------------------------------------------------------------------------- pod helpers


def is_pod_active(pod: Obj) -> bool:
    """``controller.IsPodActive``: not terminal and not being deleted."""
    return not is_pod_terminated(pod) and not objects.is_deleting(pod)


def is_pod_ready(pod: Obj) -> bool:
    condition = find_condition(objects.status(pod).get("conditions"), "Ready")
    return condition is not None and condition.get("status") == "True"


def pod_ready_time(pod: Obj) -> datetime | None:
    """When the pod became ready (the Ready condition's lastTransitionTime), None if not ready."""
    condition = find_condition(objects.status(pod).get("conditions"), "Ready")
    if condition is None or condition.get("status") != "True":
        return None
    return parse_optional_time(condition.get("lastTransitionTime"))


def is_pod_available(pod: Obj, min_ready_seconds: int, moment: datetime) -> bool:
    """``podutil.IsPodAvailable``: ready, and for at least ``minReadySeconds``."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    ready = pod_ready_time(pod)
    return ready is not None and ready + timedelta(seconds=min_ready_seconds) < moment


def count_available(ready_pods: Iterable[Obj], min_ready_seconds: int, moment: datetime) -> tuple[int, float]:
    """(how many of the ready pods are available, seconds until the next of the others becomes available or 0):
    the owner's status is written again then (a second late, so that the pod is available by then)."""
    available, wait = 0, 0.0
    for pod in ready_pods:
        if is_pod_available(pod, min_ready_seconds, moment):
            available += 1
        elif (since := pod_ready_time(pod)) is not None:
            remaining = (since + timedelta(seconds=min_ready_seconds) - moment).total_seconds() + 1
            wait = remaining if not wait else min(wait, remaining)
    return available, max(wait, 0.0)


# ----------------------------------------------------------------------------- scale-down order


def _after_or_zero(t1: datetime | None, t2: datetime | None) -> bool:
    """Kubernetes' ``afterOrZero``: a zero time sorts first, else the later time first."""
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _deletion_cost(pod: Obj) -> int:
    raw = objects.annotations(pod).get(POD_DELETION_COST)
    try:
        cost = int(str(raw)) if raw is not None else 0
    except ValueError:
        return 0
    return cost if -(2**31) <= cost < 2**31 else 0


def _max_restarts(pod: Obj) -> int:
    return max((int(c.get("restartCount") or 0) for c in objects.status(pod).get("containerStatuses") or []),
               default=0)


def _less(a: Obj, rank_a: int, b: Obj, rank_b: int) -> bool:
    """``ActivePodsWithRanks.Less``: whether ``a`` is deleted before ``b``."""
    node_a, node_b = objects.spec(a).get("nodeName") or "", objects.spec(b).get("nodeName") or ""
    if node_a != node_b and (not node_a or not node_b):
        return not node_a  # 1. unassigned before assigned
    phase_a = _PHASE_ORDINAL.get(objects.status(a).get("phase") or "", 0)
    phase_b = _PHASE_ORDINAL.get(objects.status(b).get("phase") or "", 0)
    if phase_a != phase_b:
        return phase_a < phase_b  # 2. Pending < Unknown < Running
    ready_a, ready_b = is_pod_ready(a), is_pod_ready(b)
    if ready_a != ready_b:
        return not ready_a  # 3. not ready before ready
    cost_a, cost_b = _deletion_cost(a), _deletion_cost(b)
    if cost_a != cost_b:
        return cost_a < cost_b  # 4. lower pod-deletion-cost first
    if rank_a != rank_b:
        return rank_a > rank_b  # 5. more colocated related pods first
    if ready_a and ready_b:
        time_a, time_b = pod_ready_time(a), pod_ready_time(b)
        if time_a != time_b:
            return _after_or_zero(time_a, time_b)  # 6. ready for less time first
    restarts_a, restarts_b = _max_restarts(a), _max_restarts(b)
    if restarts_a != restarts_b:
        return restarts_a > restarts_b  # 7. more restarts first
    created_a = parse_optional_time(objects.creation_timestamp(a))
    created_b = parse_optional_time(objects.creation_timestamp(b))
    if created_a != created_b:
        return _after_or_zero(created_a, created_b)  # 8. newer first
    return False


def rank_for_deletion(pods: Iterable[Obj], related: Iterable[Obj]) -> list[Obj]:
    """Pods in the order a ReplicaSet deletes them (first = first deleted).

    The rank of a pod is the number of active ``related`` pods (those of every ReplicaSet with the
    same owner) on its node: pods on crowded nodes go first.
    """
    on_node: dict[str, int] = {}
    for pod in related:
        if is_pod_active(pod):
            node = objects.spec(pod).get("nodeName") or ""
            on_node[node] = on_node.get(node, 0) + 1
    ranked = [(pod, on_node.get(objects.spec(pod).get("nodeName") or "", 0)) for pod in pods]

    def compare(x: tuple[Obj, int], y: tuple[Obj, int]) -> int:
        if _less(x[0], x[1], y[0], y[1]):
            return -1
        if _less(y[0], y[1], x[0], x[1]):
            return 1
        return 0

    ranked.sort(key=functools.cmp_to_key(compare))
    return [pod for pod, _ in ranked]


def pods_to_delete(pods: list[Obj], related: Iterable[Obj], count: int) -> list[Obj]:
    """``getPodsToDelete``: the first ``count`` pods of :func:`rank_for_deletion` (all: no sorting)."""
    if count >= len(pods):
        return list(pods)
    return rank_for_deletion(pods, related)[:count]


# ----------------------------------------------------------------------------- status


def replica_set_status(rs: Obj, pods: Iterable[Obj],
                       moment: datetime) -> tuple[dict[str, Any], float]:
    """(new status, seconds until a ready pod becomes available or 0) from the active pods.

    ``replicas`` is always present (it has no omitempty); the other counters are omitted when 0.
    """
    spec = objects.spec(rs)
    min_ready = int(spec.get("minReadySeconds") or 0)
    template_labels = objects.labels(spec.get("template") or {})
    replicas = fully_labeled = 0
    ready_pods = []
    for pod in pods:
        replicas += 1
        labels = objects.labels(pod)
        if all(labels.get(k) == v for k, v in template_labels.items()):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready_pods.append(pod)
    available, wait = count_available(ready_pods, min_ready, moment)
    status: dict[str, Any] = {"replicas": replicas}
    for name, count in (("fullyLabeledReplicas", fully_labeled), ("readyReplicas", len(ready_pods)),
                        ("availableReplicas", available)):
        if count:
            status[name] = count
    generation = objects.generation(rs)
    if generation:
        status["observedGeneration"] = generation
    conditions = objects.status(rs).get("conditions")
    if conditions:
        status["conditions"] = copy.deepcopy(conditions)
    return status, wait


def new_pod(rs: Obj) -> dict[str, Any]:
    """``GetPodFromTemplate``: a pod of the ReplicaSet's template, named ``<rs>-<random>`` by the server."""
    template = objects.spec(rs).get("template") or {}
    template_meta = objects.metadata(template)
    pod_meta: dict[str, Any] = {"generateName": f"{objects.name(rs)}-", "namespace": objects.namespace(rs)}
    for key in ("labels", "annotations", "finalizers"):
        if template_meta.get(key):
            pod_meta[key] = copy.deepcopy(template_meta[key])
    pod_meta["ownerReferences"] = [controller_reference(rs, REPLICA_SETS)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": copy.deepcopy(objects.spec(template))}


# ----------------------------------------------------------------------------- reconciler


class ReplicaSetReconciler(PodOwnerReconciler):
    """Creates and deletes a ReplicaSet's pods and writes its status."""

    resource = REPLICA_SETS
    created, create_failed = "Created pod: {pod}", "Error creating: {error}"
    deleted, delete_failed = "Deleted pod: {pod}", "Error deleting: {error}"

    def candidates(self, owner: Obj) -> list[Obj]:
        """The active pods of the namespace (``claimPods``)."""
        return [pod for pod in self.pods.by_index("namespace", objects.namespace(owner)) if is_pod_active(pod)]

    def status(self, owner: Obj, pods: list[Obj], moment: datetime) -> tuple[dict[str, Any], float]:
        return replica_set_status(owner, pods, moment)

    async def manage(self, key: str, owner: MutableObj, pods: list[Obj]) -> None:
        desired = int(objects.spec(owner).get("replicas", 1) or 0)
        diff = len(pods) - desired
        if diff < 0:
            count = min(-diff, BURST_REPLICAS)
            self.expectations.expect(key, adds=count)
            template = new_pod(owner)
            raise_first(await self.create_pods(key, owner, [copy.deepcopy(template) for _ in range(count)]))
        elif diff > 0:
            victims = pods_to_delete(pods, self._related_pods(owner, pods), min(diff, BURST_REPLICAS))
            self.expectations.expect(key, deletes=[objects.key(pod) for pod in victims])
            raise_first(await self.delete_pods(key, owner, victims))

    def _related_pods(self, rs: Obj, own: list[Obj]) -> list[Obj]:
        """Pods of every ReplicaSet controlled by the same owner (the ranking's "related pods")."""
        reference = controller_of(rs)
        if reference is None or not reference.get("uid"):
            return own
        pods: list[Obj] = []
        for sibling in self.owners.by_index(OWNER_INDEX, str(reference["uid"])):
            pods.extend(self.pods.by_index(OWNER_INDEX, objects.uid(sibling)))
        return pods


def setup_replicaset_controller(manager: Manager, *, cluster_name: str, workers: int = 4) -> Controller:
    """Register ``<cluster>/replicaset-controller`` (ReplicaSets, and pods mapped to their controller)."""
    rs_informer = manager.informer(REPLICA_SETS)
    pod_informer = manager.informer(PODS)
    rs_informer.ensure_indexer(OWNER_INDEX, controller_uid_index)
    pod_informer.ensure_indexer(OWNER_INDEX, controller_uid_index)
    reconciler = ReplicaSetReconciler(manager.client, rs_informer.mutation_cache(), pod_informer.store,
                                      manager.event_recorder(COMPONENT))
    return register_pod_owner(manager, reconciler, owners=rs_informer, pod_informer=pod_informer,
                              name=f"{cluster_name}/{COMPONENT}", workers=workers)
