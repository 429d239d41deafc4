"""The member's ReplicaSet controller (kube-controller-manager's ``replicaset-controller``).

A ReplicaSet keeps ``spec.replicas`` active pods: it creates pods from its template with
``generateName: <rs>-`` and a controller ownerReference (``blockOwnerDeletion``), and scales down
by deleting pods in Kubernetes' order (:func:`pods_to_delete`). Pods being deleted or terminal do
not count. Creations go in slow-start batches (1, 2, 4...), at most 500 per sync.

Like Kubernetes, the controller keeps *expectations*: after issuing creates or deletes it does not
manage the ReplicaSet again until the pod informer has seen them (or 5 minutes passed), so a
cache that lags behind the API server never doubles the pods.

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

import asyncio
import copy
import functools
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.cache import Indexer
from controller_manager.client import ApiError, KubeClient, Resource
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.informer import FuncHandler
from controller_manager.manager import Manager
from controller_manager.mutationcache import MutationCache
from controller_manager.objects import MutableObj, Obj
from controller_manager.reconcile import Request, Result
from kube_api.conditions import find_condition
from kube_api.ownerrefs import controller_of, controller_reference, controller_uid_index
from kube_api.pods import is_pod_terminated
from kube_api.resources import PODS, REPLICA_SETS
from kube_api.timeutil import now, parse_optional_time

from .controllerref import Claimer, orphan_requests

log = structlog.get_logger(__name__)

COMPONENT = "replicaset-controller"
OWNER_INDEX = "members/by-controller-uid"
BURST_REPLICAS = 500  # ReplicaSetController's burstReplicas
EXPECTATIONS_TIMEOUT = 300.0  # controller.ExpectationsTimeout
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


def owner_request(obj: Obj, kind: str) -> list[Request]:
    """The controller of ``obj`` when it is a ``kind`` of apps/v1, as a reconcile request."""
    reference = controller_of(obj)
    if reference is None or reference.get("kind") != kind or not reference.get("name"):
        return []
    if str(reference.get("apiVersion") or "").rpartition("/")[0] != "apps":
        return []
    return [Request(objects.namespace(obj), str(reference["name"]))]


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
    replicas = fully_labeled = ready = available = 0
    wait = 0.0
    for pod in pods:
        replicas += 1
        labels = objects.labels(pod)
        if all(labels.get(k) == v for k, v in template_labels.items()):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, moment):
                available += 1
            else:
                since = pod_ready_time(pod)
                if since is not None:
                    remaining = (since + timedelta(seconds=min_ready) - moment).total_seconds() + 1
                    wait = remaining if not wait else min(wait, remaining)
    status: dict[str, Any] = {"replicas": replicas}
    for name, count in (("fullyLabeledReplicas", fully_labeled), ("readyReplicas", ready),
                        ("availableReplicas", available)):
        if count:
            status[name] = count
    generation = objects.generation(rs)
    if generation:
        status["observedGeneration"] = generation
    conditions = objects.status(rs).get("conditions")
    if conditions:
        status["conditions"] = copy.deepcopy(conditions)
    return status, max(wait, 0.0)


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


# ----------------------------------------------------------------------------- expectations


@dataclass
class _Expectation:
    adds: int = 0
    deletes: set[str] = field(default_factory=set)
    stamp: float = field(default_factory=time.monotonic)


class Expectations:
    """``ControllerExpectations``: creates/deletes issued and not yet seen by the pod informer."""

    def __init__(self, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self._items: dict[str, _Expectation] = {}
        self._timeout = timeout

    def satisfied(self, key: str) -> bool:
        """True when nothing is pending, or the expectation is older than the timeout."""
        item = self._items.get(key)
        if item is None:
            return True
        if (item.adds <= 0 and not item.deletes) or time.monotonic() - item.stamp > self._timeout:
            del self._items[key]
            return True
        return False

    def expect(self, key: str, *, adds: int = 0, deletes: Iterable[str] = ()) -> None:
        self._items[key] = _Expectation(adds, set(deletes))

    def creation_observed(self, key: str, count: int = 1) -> None:
        item = self._items.get(key)
        if item is not None:
            item.adds -= count

    def deletion_observed(self, key: str, pod_key: str) -> None:
        item = self._items.get(key)
        if item is not None:
            item.deletes.discard(pod_key)

    def forget(self, key: str) -> None:
        self._items.pop(key, None)


class OwnedPodExpectations(Expectations):
    """The expectations of one owner kind, lowered as the pod informer sees that kind's pods come and go."""

    def __init__(self, kind: str, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        super().__init__(timeout)
        self.kind = kind

    def on_pod_add(self, pod: Obj, _initial: bool) -> None:
        for request in owner_request(pod, self.kind):
            if objects.is_deleting(pod):
                self.deletion_observed(str(request), objects.key(pod))
            else:
                self.creation_observed(str(request))

    def on_pod_update(self, old: Obj, new: Obj) -> None:
        if objects.is_deleting(new) and not objects.is_deleting(old):
            for request in owner_request(new, self.kind):
                self.deletion_observed(str(request), objects.key(new))

    def on_pod_delete(self, pod: Obj) -> None:
        for request in owner_request(pod, self.kind):
            self.deletion_observed(str(request), objects.key(pod))

    def handler(self) -> FuncHandler:
        """The pod informer handler that feeds these expectations."""
        return FuncHandler(add=self.on_pod_add, update=self.on_pod_update, delete=self.on_pod_delete)


StatusOf = Callable[[MutableObj], tuple[dict[str, Any], float]]


async def write_status(client: KubeClient, resource: Resource, cache: MutationCache, obj: MutableObj,
                       status_of: StatusOf) -> float | None:
    """Write ``obj``'s status from ``status_of`` if it changed, re-reading the object once on a conflict
    (as Kubernetes does); the write goes into ``cache`` so the next sync does not start from a stale object.

    Returns the seconds ``status_of`` asked to wait (0: none), None on a lasting conflict.
    """
    for attempt in range(2):
        status, wait = status_of(obj)
        if status == objects.status(obj):
            return wait
        updated = copy.deepcopy(obj)
        updated["status"] = status
        try:
            cache.mutated(await client.update_status(resource, updated))
            return wait
        except ApiError as exc:
            if exc.is_not_found:
                return 0.0
            if not exc.is_conflict:
                raise
        if attempt:
            return None
        uid = objects.uid(obj)
        try:
            obj = await client.get(resource, objects.name(obj), objects.namespace(obj))
        except ApiError as error:
            if error.is_not_found:
                return 0.0
            raise
        if objects.uid(obj) != uid:
            return 0.0
    return None


async def slow_start(count: int, create: Callable[[], Awaitable[Any]]) -> tuple[int, list[Exception]]:
    """``slowStartBatch``: batches of 1, 2, 4... in parallel; stop at the first batch with an error."""
    remaining, batch, successes = count, 1, 0
    while remaining > 0:
        size = min(batch, remaining)
        results = await asyncio.gather(*(create() for _ in range(size)), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result
        errors = [r for r in results if isinstance(r, Exception)]
        successes += size - len(errors)
        if errors:
            return successes, errors
        remaining -= size
        batch *= 2
    return successes, []


# ----------------------------------------------------------------------------- reconciler


class ReplicaSetReconciler:
    """Creates and deletes a ReplicaSet's pods and writes its status."""

    def __init__(self, client: KubeClient, replica_sets: MutationCache, pods: Indexer, events: EventRecorder) -> None:
        self.client = client
        self.replica_sets = replica_sets  # with our own status writes: a reconcile before the informer has
        # seen one would write from a stale resourceVersion and get a 409
        self.pods = pods
        self.events = events
        self.expectations = OwnedPodExpectations("ReplicaSet")

    async def reconcile(self, request: Request) -> Result:
        key = str(request)
        cached = self.replica_sets.get(key)
        if cached is None:
            self.expectations.forget(key)
            return Result()
        rs = REPLICA_SETS.with_type_meta(cached)
        active = await self._claim(rs)
        error: Exception | None = None
        if self.expectations.satisfied(key) and not objects.is_deleting(rs):
            try:
                await self._manage(key, rs, active)
            except ApiError as exc:
                error = exc
        wait = await self._write_status(rs, active)
        if wait is None:
            return Result(requeue=True)  # still conflicting: a newer ReplicaSet is on its way through the cache
        if error is not None:
            raise error
        return Result(requeue_after=wait) if wait else Result()

    async def _claim(self, rs: MutableObj) -> list[Obj]:
        """The active pods of the namespace the ReplicaSet owns once it has adopted and released (``claimPods``).

        A failed adoption or release fails the sync (retried with backoff), as in Kubernetes.
        """
        candidates = [pod for pod in self.pods.by_index("namespace", objects.namespace(rs)) if is_pod_active(pod)]
        claimer = Claimer(self.client, rs, REPLICA_SETS, controller_reference(rs, REPLICA_SETS), PODS)
        return await claimer.claim(candidates)

    async def _write_status(self, rs: MutableObj, active: list[Obj]) -> float | None:
        """Write the status if it changed (see :func:`write_status`)."""
        return await write_status(self.client, REPLICA_SETS, self.replica_sets, rs,
                                  lambda fresh: replica_set_status(fresh, active, now()))

    async def _manage(self, key: str, rs: MutableObj, active: list[Obj]) -> None:
        desired = int(objects.spec(rs).get("replicas", 1) or 0)
        diff = len(active) - desired
        if diff < 0:
            await self._create(key, rs, min(-diff, BURST_REPLICAS))
        elif diff > 0:
            victims = pods_to_delete(active, self._related_pods(rs, active), min(diff, BURST_REPLICAS))
            await self._delete(key, rs, victims)

    async def _create(self, key: str, rs: MutableObj, count: int) -> None:
        self.expectations.expect(key, adds=count)
        template = new_pod(rs)

        async def create_one() -> None:
            try:
                created = await self.client.create(PODS, copy.deepcopy(template))
            except ApiError as exc:
                self.events.event(rs, WARNING, "FailedCreate", f"Error creating: {exc.message}")
                raise
            self.events.event(rs, NORMAL, "SuccessfulCreate", f"Created pod: {objects.name(created)}")

        successes, errors = await slow_start(count, create_one)
        if successes < count:
            self.expectations.creation_observed(key, count - successes)  # never coming
        if errors:
            raise errors[0]

    async def _delete(self, key: str, rs: MutableObj, victims: list[Obj]) -> None:
        keys = [objects.key(pod) for pod in victims]
        self.expectations.expect(key, deletes=keys)

        async def delete_one(pod: Obj, pod_key: str) -> ApiError | None:
            try:
                await self.client.delete(PODS, objects.name(pod), objects.namespace(pod), uid=objects.uid(pod))
            except ApiError as exc:
                self.expectations.deletion_observed(key, pod_key)
                if exc.is_not_found or exc.status == 409:  # gone, or replaced by another pod of that name
                    return None
                self.events.event(rs, WARNING, "FailedDelete", f"Error deleting: {exc.message}")
                return exc
            self.events.event(rs, NORMAL, "SuccessfulDelete", f"Deleted pod: {objects.name(pod)}")
            return None

        results = await asyncio.gather(*(delete_one(pod, k) for pod, k in zip(victims, keys, strict=True)))
        failed = next((r for r in results if r is not None), None)
        if failed is not None:
            raise failed

    def _related_pods(self, rs: Obj, own: list[Obj]) -> list[Obj]:
        """Pods of every ReplicaSet controlled by the same owner (the ranking's "related pods")."""
        reference = controller_of(rs)
        if reference is None or not reference.get("uid"):
            return own
        pods: list[Obj] = []
        for sibling in self.replica_sets.by_index(OWNER_INDEX, str(reference["uid"])):
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
    pod_informer.add_event_handler(reconciler.expectations.handler())
    controller = Controller(f"{cluster_name}/{COMPONENT}", reconciler, workers=workers)
    controller.watches(rs_informer)
    orphans = orphan_requests(rs_informer.store)
    controller.watches(pod_informer, map_func=lambda pod: owner_request(pod, "ReplicaSet") + orphans(pod))
    manager.add_controller(controller)
    return controller
