"""ttl-cleaner: delete a finished WorkloadRebalancer ``ttlSecondsAfterFinished`` seconds after it finished.

Its own controller, watching every rebalancer change (status included), so that it fires
when a rebalancer *finishes* and not only when its spec is edited (Karmada bug #5985).
Finished means: ``finishTime`` set, ``observedGeneration`` equal to ``generation`` and every
observed workload has a result. A rebalancer still retrying is never deleted. Unset TTL:
never; 0 (or negative): at once; otherwise requeue for the remaining time. Editing the spec
makes the rebalancer controller reset ``finishTime``, so a TTL counts from the last change.
Before deleting it re-reads the rebalancer from the API server and deletes with a
resourceVersion precondition, so a concurrent edit is never lost.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.manager import Manager
from controller_manager.objects import Obj
from controller_manager.predicate import FuncPredicate
from controller_manager.rbac import PolicyRule, for_resources, informer_rules
from controller_manager.reconcile import Request, Result
from karmada_api.resources import WORKLOAD_REBALANCERS
from karmada_api.shapes import rebalancer_spec, rebalancer_status
from kube_api.timeutil import now, parse_time

log = structlog.get_logger(__name__)

NAME = "workload-rebalancer-ttl-cleaner"


def finished_at(rebalancer: Obj) -> str | None:
    """``finishTime`` if the rebalancer has finished its current generation, else None."""
    status = rebalancer_status(rebalancer)
    if status.get("observedGeneration") != objects.generation(rebalancer):
        return None
    items = status.get("observedWorkloads") or []
    if any(not item.get("result") for item in items):
        return None
    return status.get("finishTime")


def seconds_left(rebalancer: Obj) -> float | None:
    """Seconds until deletion is due (≤ 0: due now), or None when it must not be deleted."""
    ttl = rebalancer_spec(rebalancer).get("ttlSecondsAfterFinished")
    if ttl is None:
        return None
    finish = finished_at(rebalancer)
    if finish is None:
        return None
    due = parse_time(finish) + timedelta(seconds=ttl)
    return (due - now()).total_seconds()


class TTLCleaner:
    def __init__(self, client: KubeClient, rebalancers: Indexer) -> None:
        self.client = client
        self.rebalancers = rebalancers

    async def reconcile(self, request: Request) -> Result:
        cached = self.rebalancers.get(request.name)
        if cached is None:
            return Result()
        left = seconds_left(cached)
        if left is None:
            return Result()
        if left > 0:
            return Result(requeue_after=left)
        fresh = await self.client.get_or_none(WORKLOAD_REBALANCERS, request.name)
        if fresh is None:
            return Result()
        left = seconds_left(fresh)
        if left is None:
            return Result()
        if left > 0:
            return Result(requeue_after=left)
        try:
            await self.client.delete(WORKLOAD_REBALANCERS, request.name, uid=objects.uid(fresh),
                                     resource_version=objects.resource_version(fresh))
        except ApiError as exc:
            if exc.is_not_found:
                return Result()
            raise  # 409: it changed meanwhile; the retry re-reads it
        log.info("deleted finished rebalancer", rebalancer=request.name,
                 ttl=rebalancer_spec(fresh).get("ttlSecondsAfterFinished"))
        return Result()


RBAC_RULES: list[PolicyRule] = [
    *informer_rules(WORKLOAD_REBALANCERS),  # setup()
    # reconcile(): a fresh GET before deciding, then a DELETE with uid/resourceVersion preconditions
    *for_resources((WORKLOAD_REBALANCERS,), ("get", "delete")),
]
"""The permissions this controller needs on the Karmada API server (see controller_manager.rbac)."""


def setup(manager: Manager, *, workers: int = 1, **controller_options: Any) -> Controller:
    rebalancers = manager.informer(WORKLOAD_REBALANCERS)
    controller = Controller(NAME, TTLCleaner(manager.client, rebalancers.store), workers=workers,
                            **controller_options)
    controller.watches(rebalancers, predicates=[FuncPredicate(on_delete=lambda _obj: False)])
    manager.add_controller(controller)
    return controller
