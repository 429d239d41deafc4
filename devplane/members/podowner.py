"""What the member's pod-owning controllers (ReplicaSets, StatefulSets) share: the sync loop of
kube-controller-manager's ``replicaset-controller`` and ``statefulset-controller``.

Each sync claims the owner's pods (:mod:`devplane.members.controllerref`), changes them only when its
*expectations* are met, then writes the status. Expectations are Kubernetes': after issuing creates
or deletes the controller does not manage the owner again until the pod informer has seen them (or 5
minutes passed), so a cache that lags behind the API server never doubles the pods. Creations go in
slow-start batches (1, 2, 4...). Status writes go into a MutationCache, so a sync that runs before the
informer has seen the last write does not start from a stale resourceVersion and get a 409.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.informer import FuncHandler, SharedInformer
from controller_manager.manager import Manager
from controller_manager.mutationcache import MutationCache
from controller_manager.objects import MutableObj, Obj
from controller_manager.reconcile import Request, Result
from controller_manager.resource import Resource
from kube_api.ownerrefs import controller_of, controller_reference
from kube_api.resources import PODS
from kube_api.timeutil import now

from .controllerref import Claimer, orphan_requests

BURST_REPLICAS = 500  # ReplicaSetController's burstReplicas: pods created or deleted per sync at most
EXPECTATIONS_TIMEOUT = 300.0  # controller.ExpectationsTimeout


def owner_request(obj: Obj, kind: str) -> list[Request]:
    """The controller of ``obj`` when it is a ``kind`` of apps/v1, as a reconcile request."""
    reference = controller_of(obj)
    if reference is None or reference.get("kind") != kind or not reference.get("name"):
        return []
    if str(reference.get("apiVersion") or "").rpartition("/")[0] != "apps":
        return []
    return [Request(objects.namespace(obj), str(reference["name"]))]


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


# ----------------------------------------------------------------------------- the sync loop


class PodOwnerReconciler:
    """One sync of a pod owner of ``resource``: claim, manage (expectations permitting), write the status.

    A controller says which pods are candidates, what to change and what status follows from the pods,
    and how its events read (Kubernetes words them differently per controller).
    """

    resource: Resource
    # the events' messages, formatted with pod (its name), owner (its name) and error (the API's message)
    created: str
    create_failed: str
    deleted: str
    delete_failed: str

    def __init__(self, client: KubeClient, owners: MutationCache, pods: Indexer, events: EventRecorder) -> None:
        self.client = client
        self.owners = owners  # with our own status writes
        self.pods = pods
        self.events = events
        self.expectations = OwnedPodExpectations(self.resource.kind)

    # what each controller says
    def candidates(self, owner: Obj) -> list[Obj]:
        """The pods of the owner's namespace it may claim."""
        raise NotImplementedError

    async def manage(self, key: str, owner: MutableObj, pods: list[Obj]) -> None:
        """Create and delete pods (an ApiError fails the sync after the status is written)."""
        raise NotImplementedError

    def status(self, owner: Obj, pods: list[Obj], moment: datetime) -> tuple[dict[str, Any], float]:
        """(new status, seconds after which to sync again or 0)."""
        raise NotImplementedError

    # the loop
    async def reconcile(self, request: Request) -> Result:
        key = str(request)
        cached = self.owners.get(key)
        if cached is None:
            self.expectations.forget(key)
            return Result()
        owner = self.resource.with_type_meta(cached)
        claimer = Claimer(self.client, owner, self.resource, controller_reference(owner, self.resource), PODS)
        pods = await claimer.claim(self.candidates(owner))  # a failed adoption or release fails the sync
        error: Exception | None = None
        if self.expectations.satisfied(key) and not objects.is_deleting(owner):
            try:
                await self.manage(key, owner, pods)
            except ApiError as exc:
                error = exc
        wait = await write_status(self.client, self.resource, self.owners, owner,
                                  lambda fresh: self.status(fresh, pods, now()))
        if wait is None:
            return Result(requeue=True)  # still conflicting: a newer object is on its way through the cache
        if error is not None:
            raise error
        return Result(requeue_after=wait) if wait else Result()

    async def create_pods(self, key: str, owner: Obj, pods: list[dict[str, Any]]) -> list[Exception]:
        """Create ``pods`` in slow-start batches (the caller set the expectations); the errors, if any."""
        pending = iter(pods)

        async def create_one() -> None:
            pod = next(pending)
            try:
                created = await self.client.create(PODS, pod)
            except ApiError as exc:
                self.events.event(owner, WARNING, "FailedCreate", self._message(self.create_failed, owner, pod, exc))
                raise
            self.events.event(owner, NORMAL, "SuccessfulCreate", self._message(self.created, owner, created))

        successes, errors = await slow_start(len(pods), create_one)
        if successes < len(pods):
            self.expectations.creation_observed(key, len(pods) - successes)  # never coming
        return errors

    async def delete_pods(self, key: str, owner: Obj, victims: list[Obj]) -> list[Exception]:
        """Delete ``victims`` (the caller set the expectations); the errors, if any."""
        async def delete_one(pod: Obj) -> Exception | None:
            try:
                await self.client.delete(PODS, objects.name(pod), objects.namespace(pod), uid=objects.uid(pod))
            except ApiError as exc:
                self.expectations.deletion_observed(key, objects.key(pod))
                if exc.is_not_found or exc.status == 409:  # gone, or replaced by another pod of that name
                    return None
                self.events.event(owner, WARNING, "FailedDelete", self._message(self.delete_failed, owner, pod, exc))
                return exc
            self.events.event(owner, NORMAL, "SuccessfulDelete", self._message(self.deleted, owner, pod))
            return None

        results = await asyncio.gather(*(delete_one(pod) for pod in victims))
        return [r for r in results if r is not None]

    @staticmethod
    def _message(text: str, owner: Obj, pod: Obj, exc: ApiError | None = None) -> str:
        return text.format(pod=objects.name(pod), owner=objects.name(owner), error=exc.message if exc else "")


def register_pod_owner(manager: Manager, reconciler: PodOwnerReconciler, *, owners: SharedInformer,
                       pod_informer: SharedInformer, name: str, workers: int) -> Controller:
    """The controller of ``reconciler``: its owners, and pods mapped to their controller or, for orphans,
    to the owners whose selector matches them."""
    pod_informer.add_event_handler(reconciler.expectations.handler())
    controller = Controller(name, reconciler, workers=workers)
    controller.watches(owners)
    orphans = orphan_requests(owners.store)
    kind = reconciler.resource.kind
    controller.watches(pod_informer, map_func=lambda pod: owner_request(pod, kind) + orphans(pod))
    manager.add_controller(controller)
    return controller


def raise_first(errors: list[Exception]) -> None:
    if errors:
        raise errors[0]
