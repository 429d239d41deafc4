"""Graceful eviction (Karmada's ``pkg/controllers/gracefuleviction``).

``resource-binding-graceful-eviction-controller`` and
``cluster-resource-binding-graceful-eviction-controller`` keep ``spec.gracefulEvictionTasks``
moving: a new task gets its ``creationTimestamp``; a task is dropped once the workload is safe
elsewhere (the scheduler observed the current generation and every scheduled cluster reports
``Healthy``), once it timed out (``gracePeriodSeconds`` or ``--graceful-eviction-timeout``), or
when ``suppressDeletion`` is false; ``suppressDeletion: true`` keeps it. Until then the evicted
cluster still counts as a target (its Work stays), which is what makes the eviction graceful.

Writes are a JSON merge patch of ``spec.gracefulEvictionTasks`` carrying
``metadata.resourceVersion`` (optimistic lock: a concurrent writer makes it a 409 and the key
runs again on fresh data). Each dropped task is announced with a Normal
``EvictWorkloadFromClusterSucceed`` event on the binding and on its template. The key comes
back at the next expiry of a task that can time out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, EventRecorder
from controller_manager.manager import Manager
from controller_manager.objects import Obj
from controller_manager.predicate import FuncPredicate
from controller_manager.reconcile import Request, Result
from controller_manager.resource import Resource
from karmada_api.resources import CLUSTER_RESOURCE_BINDINGS, RESOURCE_BINDINGS
from kube_api.timeutil import format_time, parse_optional_time

from .events import record_eviction_event

log = structlog.get_logger(__name__)

RB_GRACEFUL_EVICTION_NAME = "resource-binding-graceful-eviction-controller"
CRB_GRACEFUL_EVICTION_NAME = "cluster-resource-binding-graceful-eviction-controller"
DEFAULT_GRACEFUL_EVICTION_TIMEOUT = 600.0
"""``--graceful-eviction-timeout`` (10m)."""
WORKERS = 5  # --concurrent-(cluster)resourcebinding-syncs: Karmada sets concurrency per watched kind
EVICT_WORKLOAD_FROM_CLUSTER_SUCCEED = "EvictWorkloadFromClusterSucceed"
RESOURCE_HEALTHY = "Healthy"
_BOUNDARY_RETRY = 1.0  # a task due exactly now is looked at again after this long


# ----------------------------------------------------------------------------- pure rules


@dataclass(frozen=True)
class AssessmentOption:
    """What a task is judged against: the default timeout and the binding's scheduling and health."""

    timeout: float
    schedule_result: Sequence[Obj] = field(default_factory=list)
    observed_status: Sequence[Obj] = field(default_factory=list)
    has_scheduled: bool = False


def task_timeout(task: Obj, default: float) -> float:
    """The task's own ``gracePeriodSeconds`` when set, else the controller's timeout."""
    grace = task.get("gracePeriodSeconds")
    return float(grace) if isinstance(grace, int) and not isinstance(grace, bool) else default


def all_scheduled_resource_healthy(schedule_result: Sequence[Obj], observed_status: Sequence[Obj]) -> bool:
    """Every cluster in ``spec.clusters`` has an aggregatedStatus item, and it is Healthy."""
    health = {item.get("clusterName"): item.get("health") for item in reversed(observed_status)}
    return all(health.get(target.get("name")) == RESOURCE_HEALTHY for target in schedule_result)


def assess_single_task(task: Obj, option: AssessmentOption, now: datetime) -> bool:
    """``assessSingleTask`` for a task that has a creationTimestamp: True keeps it, False drops it (evicted)."""
    suppress = task.get("suppressDeletion")
    if suppress is not None:
        return bool(suppress)  # true: the user holds it; false: the user confirmed the deletion
    created = parse_optional_time(task.get("creationTimestamp"))
    if created is not None and now > created + timedelta(seconds=task_timeout(task, option.timeout)):
        return False
    return not (option.has_scheduled and all_scheduled_resource_healthy(option.schedule_result,
                                                                         option.observed_status))


def assess_eviction_tasks(spec: Obj, observed_status: Sequence[Obj] | None, *, timeout: float, now: datetime,
                          has_scheduled: bool) -> tuple[list[dict[str, Any]], list[str]]:
    """``assessEvictionTasks``: (tasks to keep, clusters whose task was dropped), tasks in order.

    A task without ``creationTimestamp`` gets ``now`` (whole seconds) and is kept this round.
    """
    option = AssessmentOption(timeout, spec.get("clusters") or [], observed_status or [], has_scheduled)
    kept: list[dict[str, Any]] = []
    evicted: list[str] = []
    for task in spec.get("gracefulEvictionTasks") or []:
        if parse_optional_time(task.get("creationTimestamp")) is None:
            kept.append({**task, "creationTimestamp": format_time(now)})
        elif assess_single_task(task, option, now):
            kept.append(dict(task))
        else:
            evicted.append(str(task.get("fromCluster")))
    return kept, evicted


def next_retry(tasks: Sequence[Obj], timeout: float, now: datetime) -> float:
    """``nextRetry``: seconds until the earliest expiry among tasks that can expire; 0 when none can."""
    waits = []
    for task in tasks:
        created = parse_optional_time(task.get("creationTimestamp"))
        if task.get("suppressDeletion") is True or created is None:
            continue
        deadline = created + timedelta(seconds=task_timeout(task, timeout))
        waits.append((deadline - now).total_seconds())
    return min(waits, default=0.0)


def has_scheduled(binding: Obj) -> bool:
    """The scheduler has observed the binding's current generation."""
    generation = objects.metadata(binding).get("generation")
    return generation is not None and objects.status(binding).get("schedulerObservedGeneration") == generation


def has_eviction_tasks(binding: Obj) -> bool:
    return bool(objects.spec(binding).get("gracefulEvictionTasks"))


TASKS_PREDICATE = FuncPredicate(on_create=has_eviction_tasks, on_update=lambda _old, new: has_eviction_tasks(new),
                                on_delete=lambda _obj: False)


# ----------------------------------------------------------------------------- reconciler


class GracefulEvictionReconciler:
    """Assess one binding's eviction tasks; patch what changed; come back at the next expiry."""

    def __init__(self, client: KubeClient, resource: Resource, bindings: Indexer, events: EventRecorder, *,
                 timeout: float) -> None:
        self.client = client
        self.resource = resource
        self.bindings = bindings
        self.events = events
        self.timeout = timeout

    async def reconcile(self, request: Request) -> Result:
        binding = self.bindings.get(str(request))
        if binding is None or objects.is_deleting(binding):
            return Result()
        spec = objects.spec(binding)
        tasks = spec.get("gracefulEvictionTasks") or []
        now = datetime.now(UTC)
        kept, evicted = assess_eviction_tasks(spec, objects.status(binding).get("aggregatedStatus"),
                                              timeout=self.timeout, now=now, has_scheduled=has_scheduled(binding))
        if kept != tasks:
            patch = {"metadata": {"resourceVersion": objects.resource_version(binding)},
                     "spec": {"gracefulEvictionTasks": kept or None}}
            try:
                await self.client.patch(self.resource, request.name, patch, namespace=request.namespace)
            except ApiError as exc:
                if exc.is_not_found:
                    return Result()
                if exc.is_conflict:  # the cache was behind a writer: the watch brings the new one
                    return Result(requeue=True)
                raise
            for cluster in evicted:
                log.info("graceful eviction task done", binding=str(request), cluster=cluster,
                         kind=self.resource.kind)
                record_eviction_event(self.events, binding, self.resource, cluster, event_type=NORMAL,
                                      reason=EVICT_WORKLOAD_FROM_CLUSTER_SUCCEED, outcome="succeed")
        retry = next_retry(kept, self.timeout, now)
        if retry <= 0 and any(t.get("suppressDeletion") is not True for t in kept):
            retry = _BOUNDARY_RETRY
        return Result(requeue_after=retry) if retry > 0 else Result()


# ----------------------------------------------------------------------------- wiring


def setup_graceful_eviction(manager: Manager, *, timeout: float = 600.0) -> list[Controller]:
    """Register both graceful eviction controllers; ``timeout`` is ``--graceful-eviction-timeout`` in seconds."""
    if timeout <= 0:
        raise ValueError(f"--graceful-eviction-timeout must be positive, got {timeout}")
    controllers = []
    for name, resource in ((RB_GRACEFUL_EVICTION_NAME, RESOURCE_BINDINGS),
                           (CRB_GRACEFUL_EVICTION_NAME, CLUSTER_RESOURCE_BINDINGS)):
        informer = manager.informer(resource)
        reconciler = GracefulEvictionReconciler(manager.client, resource, informer.store,
                                                manager.event_recorder(name), timeout=timeout)
        controller = Controller(name, reconciler, workers=WORKERS)
        controller.watches(informer, predicates=[TASKS_PREDICATE])
        manager.add_controller(controller)
        controllers.append(controller)
    return controllers
