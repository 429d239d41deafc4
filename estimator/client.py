"""The estimator client: per-cluster answers from the member caches, keeping whoever answered.

Karmada's ``SchedulerEstimator`` client asks each member's gRPC estimator concurrently within
``--scheduler-estimator-timeout`` and, when any one cluster fails, returns an aggregated error
that makes the caller discard every answer (#6815): one broken member blinds the descheduler
to all the others. Here each cluster is answered on its own from its member's caches (a
:class:`~estimator.caches.MemberView` from :class:`Members`); a cluster whose member is missing,
not synced within the timeout, unreachable or whose estimate raises is simply left out of the
result, and the caller treats it as unknown (the descheduler's
:func:`descheduler.core.fill_unschedulable` combines the answers with
:func:`estimator.merge.combine_unschedulable_replicas`, which turns it into 0; the scheduler's
:func:`estimator.merge.combine_available_replicas` into ``spec.replicas``).

A ready member is answered at once (its caches are in memory: no task, no wait), so a
descheduling cycle over thousands of bindings costs what the estimates cost; only members still
starting are awaited, concurrently, each for at most ``timeout``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import structlog
from prometheus_client import Counter, Histogram

from controller_manager import objects
from controller_manager.objects import Obj
from estimator.caches import NEED_CAPACITY, MemberView
from estimator.general import GeneralEstimator
from estimator.kinds import WorkloadKinds
from estimator.merge import combine_available_replicas

log = structlog.get_logger(__name__)

ESTIMATOR_ACCURATE = "accurate"
ESTIMATOR_UNSCHEDULABLE = "unschedulable"

REQUEST_DURATION = Histogram("estimator_request_duration_seconds",
                             "Time to answer one estimator request for one member cluster, waiting for its caches "
                             "included.", ["estimator", "cluster"])
UNSUPPORTED = Counter("estimator_unsupported_workloads_total",
                      "Unschedulable-replica requests for a workload whose kind the estimator cannot judge "
                      "(every cluster left unknown).", ["api_version", "kind"])


class Members(Protocol):
    """Where members come from: the process's member-cluster registry, or a test double."""

    def get(self, name: str) -> MemberView | None:
        """The member's cached view for a cluster name (None when unknown or deleted)."""


class EstimatorClient:
    """Max-available and unschedulable replicas per member cluster, omitting the clusters that cannot answer."""

    def __init__(self, registry: Members, *, timeout: float, kinds: WorkloadKinds | None = None) -> None:
        self.registry = registry
        self.timeout = timeout
        self.kinds = kinds or WorkloadKinds()
        self._histograms: dict[tuple[str, str], Any] = {}

    async def unschedulable_replicas(self, clusters: list[str], resource: Obj,
                                     threshold: timedelta) -> dict[str, int]:
        """The workload's Pods unschedulable for longer than ``threshold``, per cluster that could judge it.

        ``resource`` is an ObjectReference (``binding.spec.resource``). The Pods are found per kind
        (:class:`~estimator.kinds.WorkloadKinds`): a Deployment's newest ReplicaSet's (as Karmada), a
        StatefulSet's or ReplicaSet's own, an operator-declared kind's by its Pod selector. A cluster
        missing from the answer could not be judged (member unknown or not synced, workload not in it);
        a kind that is not supported answers ``{}`` (and logs
        :meth:`~estimator.kinds.WorkloadKinds.unsupported_reason`).
        """
        namespace, name = str(resource.get("namespace") or ""), str(resource.get("name") or "")
        workload_kind = self.kinds.lookup(resource)
        if workload_kind is None:
            api_version, kind = str(resource.get("apiVersion") or ""), str(resource.get("kind") or "")
            log.debug("unschedulable replicas not supported for this kind", kind=kind, api_version=api_version,
                      namespace=namespace, name=name, reason=self.kinds.unsupported_reason(resource))
            UNSUPPORTED.labels(api_version, kind).inc()
            return {}
        now = datetime.now(UTC)
        count = workload_kind.count

        def estimate(member: MemberView) -> int:
            return count(member, namespace, name, threshold, now)

        return await self._ask(ESTIMATOR_UNSCHEDULABLE, clusters, workload_kind.need, estimate)

    def still_starting(self, clusters: Iterable[str], resource: Obj) -> list[str]:
        """Of ``clusters``, those whose member caches for ``resource``'s kind are still on their first list with
        nothing failed (:meth:`~estimator.caches.MemberView.starting`): left out of an answer now, they will be
        judged once the list completes, however long that takes; a member that fails is not among them."""
        workload_kind = self.kinds.lookup(resource)
        if workload_kind is None:
            return []
        need = workload_kind.need
        return [name for name in clusters if (member := self.registry.get(name)) is not None and member.starting(need)]

    async def max_available_replicas(self, clusters: list[str],
                                     requirements: Obj | None) -> dict[str, int]:
        """How many more replicas of ``requirements`` (binding ``spec.replicaRequirements``) fit, per cluster."""
        def estimate(member: MemberView) -> int:
            return member.usage.max_available_replicas(requirements)

        return await self._ask(ESTIMATOR_ACCURATE, clusters, NEED_CAPACITY, estimate)

    # ------------------------------------------------------------------------------------------

    async def available_replicas(self, clusters: Sequence[Obj], requirements: Obj | None,
                                 replicas: int, *, accurate: bool = True) -> dict[str, int]:
        """Every estimator per cluster, combined by minimum (the scheduler's ``calAvailableReplicas``).

        The general estimator answers from each Cluster's ``status.resourceSummary``; with
        ``accurate`` (``--enable-scheduler-estimator``) the member caches answer too, each member on
        its own (a member that cannot answer just leaves the general estimate). A cluster no
        estimator could judge gets ``replicas``.
        """
        names = [str(objects.metadata(c)["name"]) for c in clusters]
        answers: list[Mapping[str, int] | None] = [
            GeneralEstimator().estimate([dict(c) for c in clusters], dict(requirements) if requirements else None)]
        if accurate:
            answers.append(await self.max_available_replicas(names, requirements))
        return combine_available_replicas(names, answers, replicas)

    async def _ask(self, estimator: str, clusters: Iterable[str], need: tuple[str, ...],
                   estimate: Callable[[MemberView], int]) -> dict[str, int]:
        call = _Call(estimator, need, estimate)
        waiting: list[tuple[MemberView, float]] = []
        names = list(dict.fromkeys(clusters))
        for name in names:
            member = self.registry.get(name)
            if member is None:
                continue
            started = time.perf_counter()
            state = member.state(need)
            if state == "ready":
                self._answer(call, member, started)
            elif state == "pending":
                waiting.append((member, started))
            else:
                self._observe(estimator, name, started)
        if waiting:
            await asyncio.gather(*(self._wait_and_answer(call, member, started) for member, started in waiting))
        return {name: call.results[name] for name in names if name in call.results}

    async def _wait_and_answer(self, call: _Call, member: MemberView, started: float) -> None:
        if await member.wait_ready(call.need, self.timeout):
            self._answer(call, member, started)
        else:
            log.debug("member cluster caches not ready in time, its answer is unknown", cluster=member.name,
                      estimator=call.estimator, timeout=self.timeout, errors=member.errors())
            self._observe(call.estimator, member.name, started)

    def _answer(self, call: _Call, member: MemberView, started: float) -> None:
        try:
            call.results[member.name] = call.estimate(member)
        except Exception as exc:  # one member's failure must not cost the others their answers
            log.debug("estimate failed, the member's answer is unknown", cluster=member.name,
                      estimator=call.estimator, error=f"{type(exc).__name__}: {exc}")
        finally:
            self._observe(call.estimator, member.name, started)

    def _observe(self, estimator: str, cluster: str, started: float) -> None:
        key = (estimator, cluster)
        child = self._histograms.get(key)
        if child is None:
            child = self._histograms[key] = REQUEST_DURATION.labels(estimator, cluster)
        child.observe(time.perf_counter() - started)


@dataclass(slots=True)
class _Call:
    """One client call: which estimator, the caches it needs, how to estimate, and the answers so far."""

    estimator: str
    need: tuple[str, ...]
    estimate: Callable[[MemberView], int]
    results: dict[str, int] = field(default_factory=dict)
