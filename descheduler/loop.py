"""The descheduling cycle: every ``--descheduling-interval``, shrink bindings' stuck replicas.

Karmada's loop (``pkg/descheduler/descheduler.go``) over the ResourceBindings cache: filter (Deployments
with a dynamically divided applied placement; here also StatefulSets, ReplicaSets and the operator-declared
kinds) and enqueue the bindings' keys in a work queue named ``descheduler``; a single worker takes them one
at a time, asks the estimator for unschedulable replicas of the undesired clusters, plans the new
``spec.clusters`` and writes it with the binding's resourceVersion; events
``DescheduleBindingSucceed``/``DescheduleBindingFailed`` go on the binding and its template. The queue is
what gives the descheduler Karmada's ``workqueue_*{name="descheduler",controller="descheduler"}`` series
(Karmada's e2e test checks ``workqueue_queue_duration_seconds_sum`` on it).
Beyond Karmada: ``dry_run`` computes and logs but writes nothing; a per-binding, per-cluster cool-down; the
``descheduler_*`` metrics; workloads of a kind the estimator cannot judge are skipped with one log line per
binding and counted in ``descheduler_unsupported_workloads``; a cycle ends once its keys are processed, so
the next one never starts while bindings of the previous one are still queued; optional budgets
(:mod:`descheduler.budget`) bound the replicas moved per cycle and per workload, and what they hold back is
logged and counted in ``descheduler_replicas_held_back_total{reason}``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import aiohttp
import structlog
from prometheus_client import Counter, Gauge, Histogram

from controller_manager import objects
from controller_manager.apierrors import ApiError, may_have_landed
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.events import RBAC_RULES as EVENT_RULES
from controller_manager.objects import Obj
from controller_manager.rbac import PolicyRule, for_resources
from controller_manager.workqueue import WorkQueue
from estimator.eligibility import partition_bindings
from estimator.podselectors import BUILTIN_KINDS
from karmada_api.resources import RESOURCE_BINDINGS

from .budget import CycleBudget
from .core import (
    COOL_DOWN_ANNOTATION,
    EVENT_REASON_DESCHEDULE_FAILED,
    EVENT_REASON_DESCHEDULE_SUCCEED,
    CoolDown,
    Plan,
    fill_unschedulable,
    plan,
    rows_for,
    undesired,
)

log = structlog.get_logger(__name__)

DESCHEDULED = Counter("descheduler_descheduled_replicas_total",
                      "Replicas the descheduler removed from a member cluster's assignment.", ["cluster"])
UNSUPPORTED = Gauge("descheduler_unsupported_workloads",
                    "Dynamically divided bindings of the last cycle skipped because the estimator cannot judge "
                    "their kind (declare it with --unschedulable-pod-selectors).", ["api_version", "kind"])
HELD_BACK = Counter("descheduler_replicas_held_back_total",
                    "Unschedulable replicas a budget kept from being descheduled in a cycle (taken in later "
                    "cycles), by reason: cycle-budget or workload-budget.", ["reason"])
CYCLE_DURATION = Histogram("descheduler_cycle_duration_seconds", "Duration of one descheduling cycle.",
                           buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120))

QUEUE_NAME = "descheduler"
"""Karmada's queue name; controller-runtime's workqueue metrics provider sets ``controller`` to it as well."""

RBAC_RULES: list[PolicyRule] = [
    *for_resources((RESOURCE_BINDINGS,), "update"),  # _deschedule(): PUT of the shrunk spec.clusters
    *for_resources((RESOURCE_BINDINGS,), "get"),  # _settle(): a fresh read after an update of unknown result
    *EVENT_RULES,  # DescheduleBindingSucceed / DescheduleBindingFailed on the binding and its template
]
"""What the cycle writes on the Karmada API server; it reads bindings from the informer (app.py)."""

# (clusters, workload reference, threshold) -> unschedulable replicas of the clusters that answered
UnschedulableEstimate = Callable[[list[str], dict[str, Any], timedelta], Awaitable[dict[str, int]]]


@dataclass(frozen=True)
class Outcome:
    binding: str
    plan: Plan
    written: bool


@dataclass(frozen=True)
class Unsettled:
    """An update whose result is unknown (:meth:`Descheduler._unknown_result`): the resourceVersion it was
    conditional on, the cool-down annotation it carried (None: the cool-down is off), the ``spec.clusters`` it
    wrote, and its plan (what it lowered, what its Event said)."""

    resource_version: str
    stamp: str | None
    written: list[Any]
    plan: Plan

    def stored_in(self, fresh: Obj) -> bool:
        """Whether ``fresh`` (read after it) shows this update stored: changed since, and carrying its cool-down
        stamp; without a cool-down, its ``spec.clusters`` (a best guess: a reschedule since hides it)."""
        if objects.resource_version(fresh) == self.resource_version:
            return False
        if self.stamp is not None:
            return objects.annotations(fresh).get(COOL_DOWN_ANNOTATION) == self.stamp
        return objects.spec(fresh).get("clusters") == self.written

    @property
    def clusters(self) -> tuple[str, ...]:
        return tuple(self.plan.descheduled)


class Descheduler:
    """One descheduling pass per interval while leading; owned by the manager as a runnable."""

    def __init__(self, client: KubeClient, bindings: Indexer, estimate: UnschedulableEstimate,
                 events: EventRecorder, *, interval: float, threshold: float, dry_run: bool = False,
                 cool_down: CoolDown | None = None,
                 gvks: Collection[tuple[str, str]] = BUILTIN_KINDS, budget: CycleBudget | None = None) -> None:
        self.client = client
        self.gvks = frozenset(gvks)  # (apiVersion, kind) the estimator can judge
        self._reported: set[str] = set()  # unsupported bindings already logged
        self._unsupported_kinds: set[tuple[str, str]] = set()
        self.bindings = bindings
        self.estimate = estimate
        self.events = events
        self.interval = interval
        self.threshold = timedelta(seconds=threshold)
        self.dry_run = dry_run
        self.cool_down = cool_down
        self.budget = budget or CycleBudget()  # unlimited unless configured
        self.queue: WorkQueue[str] = WorkQueue(QUEUE_NAME)  # binding keys (namespace/name)
        self._unsettled: dict[str, Unsettled] = {}  # binding key -> its update of unknown result

    async def run(self) -> None:
        """Karmada's ``wait.Until``: a cycle at once, then one every interval after the previous ends."""
        while True:
            await self.cycle()
            await asyncio.sleep(self.interval)

    async def cycle(self) -> list[Outcome]:
        """Enqueue the eligible bindings' keys (Karmada's ``descheduleOnce``), then work the queue empty."""
        started = time.perf_counter()
        try:
            bindings = partition_bindings(self.bindings.list(), self.gvks)
            self._report_unsupported(bindings.unsupported)
            await self._settle_unjudged({objects.key(b) for b in bindings.eligible})
            for key in self.budget.start(objects.key(b) for b in bindings.eligible):
                self.queue.add(key)
            outcomes = await self._work()
            self.budget.finish()
        finally:
            CYCLE_DURATION.observe(time.perf_counter() - started)
        held = self.budget.held
        if outcomes or held:
            log.info("descheduling cycle", bindings=len(outcomes), dry_run=self.dry_run,
                     replicas=sum(o.plan.total for o in outcomes), held_back=held.total(),
                     **{f"held_back_{reason.replace('-', '_')}": n for reason, n in sorted(held.items())})
        return outcomes

    async def _settle_unjudged(self, eligible: set[str]) -> None:
        """Read back the updates of unknown result of bindings this cycle does not judge (not eligible now, e.g. a
        placement changed): a landed one still gets its Event and count (:meth:`_settle`; a read that fails is
        tried again next cycle). Those of bindings gone from the cache are forgotten: their clusters' cool-down
        simply runs out."""
        for key in [key for key in self._unsettled if key not in eligible]:
            if self.bindings.get(key) is None:
                del self._unsettled[key]
            else:
                await self._settle(key)

    def _report_unsupported(self, unsupported: dict[tuple[str, str], list[str]]) -> None:
        """One log line per skipped binding (until it stops being skipped), and the gauge per kind."""
        keys: set[str] = set()
        for (api_version, kind), bindings in unsupported.items():
            UNSUPPORTED.labels(api_version, kind).set(len(bindings))
            for key in bindings:
                keys.add(key)
                if key not in self._reported:
                    log.info("workload skipped: its kind is not supported", binding=key, api_version=api_version,
                             kind=kind, reason=f"no way to find the Pods of {kind} ({api_version}); declare it in "
                                           "--unschedulable-pod-selectors")
        for gone in self._unsupported_kinds - set(unsupported):
            UNSUPPORTED.labels(*gone).set(0)
        self._unsupported_kinds = set(unsupported)
        self._reported = keys

    async def _work(self) -> list[Outcome]:
        """The single worker: every queued key, in order, each marked done even if it fails.

        The cycle itself is the worker (cycles never overlap, so there is exactly one), which keeps
        ``cycle()`` returning its outcomes to the caller, as the tests and the benchmark use it.
        A binding that fails unexpectedly is logged and left to the next cycle, as controller-runtime
        recovers a reconciler's panic. A cycle that ends early (cancelled at shutdown or on a lost lease)
        drops the keys it did not reach: they passed the filter in this cycle's listing, and only
        the next cycle's listing says whether they still do.
        """
        outcomes: list[Outcome] = []
        try:
            while (key := self.queue.get_nowait()) is not None:
                try:
                    outcome = await self._process(key)
                except Exception:  # one binding's unexpected failure must not end the cycle (or the process)
                    log.exception("descheduling a binding failed, the next cycle retries", binding=key)
                    outcome = None
                finally:
                    self.queue.done(key)
                if outcome is not None:
                    outcomes.append(outcome)
        finally:
            while (key := self.queue.get_nowait()) is not None:
                self.queue.done(key)
        return outcomes

    async def _process(self, key: str) -> Outcome | None:
        """Karmada's worker: the binding as the cache has it now (a lister GET); gone → nothing to do. After an
        update of unknown result, the binding as the API server has it (:meth:`_settle`)."""
        binding = self.bindings.get(key)
        if key in self._unsettled:
            binding = await self._settle(key)
        if binding is None:
            return None
        return await self._deschedule(binding)

    async def _settle(self, key: str) -> Obj | None:
        """Find out, with a fresh read, whether the update of unknown result landed; the binding to judge now.

        Until then the cool-down holds its clusters as if it had (:meth:`_unknown_result`). A landed update
        changed the resourceVersion and wrote its cool-down annotation; one that did not left the binding as it
        was. Either way the clusters' cool-down is then the binding's own annotation, read from the fresh copy,
        which this cycle judges instead of the cache (maybe behind): an update that did not land is made again
        now, not one cool-down later. That it did not land may still be a guess (a 500 whose write etcd commits
        after this read): the next update is conditional on the resourceVersion read here, so it cannot lower
        the binding a second time. A failed read settles nothing, and the binding is left for the next cycle
        (None): judged on the cache, maybe behind, another update would replace the stamp the read-back looks
        for, and a landed update would never get its Event and count."""
        unsettled = self._unsettled[key]
        namespace, name = objects.split_key(key)
        try:
            fresh = await self.client.get_or_none(RESOURCE_BINDINGS, name, namespace)
        except (ApiError, aiohttp.ClientError, TimeoutError, OSError) as exc:
            log.warning("deschedule result still unknown, the binding is left for the next cycle", binding=key,
                        error=_describe_error(exc))
            return None
        del self._unsettled[key]
        if self.cool_down is not None:
            self.cool_down.forget(key, unsettled.clusters)
        if fresh is None:
            return None
        stored = unsettled.stored_in(fresh)
        log.info("deschedule result settled", binding=key, stored=stored,
                 binding_changed=objects.resource_version(fresh) != unsettled.resource_version,
                 clusters=list(unsettled.clusters))
        if stored:  # the Warning said "result unknown": the Event and the count of a made update follow now
            self._succeeded(fresh, unsettled.plan, f"{unsettled.plan.message} (the update of unknown result was "
                                                   f"stored, read back)")
        return fresh

    async def _deschedule(self, binding: Obj) -> Outcome | None:
        key = objects.key(binding)
        if objects.is_deleting(binding):
            return None
        rows = rows_for(binding)
        if not undesired(rows):
            return None
        resource = objects.spec(binding)["resource"]

        async def estimate(clusters: list[str]) -> dict[str, int]:
            return await self.estimate(clusters, resource, self.threshold)

        await fill_unschedulable(rows, estimate)
        new = plan(binding, rows, self.cool_down, self.budget.for_binding())
        if new is None:
            return None
        if new.held_back:
            self._held_back(key, new)
        if new.total == 0:
            return None
        if self.dry_run:
            self.budget.spend(new.total)
            log.info("would deschedule (dry run)", binding=key, message=new.message)
            return Outcome(key, new, written=False)
        update = new.apply(binding)
        if self.cool_down is not None:
            self.cool_down.stamp(update, new)
        try:
            await self.client.update(RESOURCE_BINDINGS, update)
        except (ApiError, aiohttp.ClientError, TimeoutError, OSError) as exc:
            if may_have_landed(exc):
                self._unknown_result(binding, update, new, _describe_error(exc))
            else:
                self._failed(binding, (exc.message or str(exc)) if isinstance(exc, ApiError) else _describe_error(exc))
            return None
        self.budget.spend(new.total)
        self._succeeded(binding, new, new.message)
        if self.cool_down is not None:
            self.cool_down.record_plan(key, new)
        log.info("descheduled", binding=key, message=new.message)
        return Outcome(key, new, written=True)

    def _succeeded(self, binding: Obj, new: Plan, message: str) -> None:
        """An update known to be stored: Karmada's success Event, and the replicas counted as descheduled."""
        self._record(binding, NORMAL, EVENT_REASON_DESCHEDULE_SUCCEED, message)
        for cluster, replicas in new.descheduled.items():
            DESCHEDULED.labels(cluster).inc(replicas)

    def _failed(self, binding: Obj, error: str) -> None:
        self._record(binding, WARNING, EVENT_REASON_DESCHEDULE_FAILED, error)
        log.warning("deschedule failed, next cycle retries", binding=objects.key(binding), error=error)

    def _unknown_result(self, binding: Obj, update: Obj, new: Plan, error: str) -> None:
        """The write may have landed (:func:`may_have_landed`: a 5xx, a dropped connection, a client timeout).

        Counted as if it did for the budget and the cool-down, so that nothing takes the same replicas again
        before the next cycle finds out with a fresh read (:meth:`_settle`). A Warning says the result is unknown;
        counted as descheduled, with a success Event, only once that read shows the update stored.
        """
        key = objects.key(binding)
        self.budget.spend(new.total)
        if self.cool_down is not None:
            self.cool_down.record_plan(key, new)
        self._unsettled[key] = Unsettled(objects.resource_version(binding),
                                         objects.annotations(update).get(COOL_DOWN_ANNOTATION),
                                         objects.spec(update).get("clusters") or [], new)
        self._record(binding, WARNING, EVENT_REASON_DESCHEDULE_FAILED,
                     f"result unknown, the update may have been stored ({error}): {new.message}")
        log.warning("deschedule result unknown, the update may have been stored; counted as written", binding=key,
                    error=error)

    def _held_back(self, key: str, new: Plan) -> None:
        """Count what a budget kept from moving; the cycle's log line has the totals, this one the detail."""
        self.budget.hold(key, new.held_back)
        for reason, replicas in new.held_back.items():
            HELD_BACK.labels(reason).inc(replicas)
        log.debug("budget held replicas back", binding=key, held_back=new.held_back, clusters=new.held_by_cluster,
                  descheduled=new.total)

    def _record(self, binding: Obj, event_type: str, reason: str, message: str) -> None:
        """Karmada records the result on the binding and on its resource template."""
        self.events.event(binding, event_type, reason, message)
        ref = objects.spec(binding)["resource"]
        template = {"apiVersion": ref.get("apiVersion", ""), "kind": ref.get("kind", ""),
                    "metadata": {"name": ref.get("name", ""), "namespace": ref.get("namespace", ""),
                                 "uid": ref.get("uid", "")}}
        self.events.event(template, event_type, reason, message)


def _describe_error(exc: BaseException) -> str:
    if isinstance(exc, ApiError):
        return f"{exc.status} {exc.reason}: {exc.message}"
    return f"{type(exc).__name__}: {exc}"
