"""The descheduler's decisions, free of I/O (Karmada ``pkg/descheduler/core`` and the worker arithmetic).

Bindings are parsed JSON dicts as the API server returns them. The flow per binding is::

    rows = rows_for(binding)                  # one Row per spec.clusters entry, same order
    if undesired(rows):                        # ready < spec (unknown ready counts as undesired)
        await fill_unschedulable(rows, estimate)
        p = plan(binding, rows, cool_down, budget)  # None: nothing to do, no write, no event
        if p and p.total: PUT p.apply(binding); event p.message; cool_down.record_plan(key, p)

Deliberate departures from Karmada (all documented where they happen):

* Beyond ``apps/v1`` Deployments, StatefulSets, ReplicaSets and operator-declared kinds are
  descheduled (``filter_bindings``' ``gvks``), with the same arithmetic and ready-replicas floor:
  the ready count comes from ``aggregatedStatus[].status.readyReplicas`` whatever the kind, and a
  cluster without one has no floor (never more than its confirmed unschedulable replicas move).

* Estimator answers are kept per cluster: a cluster that failed to answer is "unknown"
  (treated as 0 unschedulable) instead of discarding every answer (Karmada #6815).
* A per-binding, per-cluster cool-down stops the same cluster of the same binding from being
  descheduled again right after it was, so replicas cannot ping-pong every cycle. It is written on the
  binding with the lowering itself (:data:`COOL_DOWN_ANNOTATION`), so a restart or a new leader keeps it.
* Optional budgets (:mod:`descheduler.budget`) bound how many replicas a plan takes: what they hold back is
  taken in the next cycles, which the cool-down lets through (see :meth:`CoolDown.allowance`).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.objects import MutableObj, Obj
from estimator.merge import UNAUTHENTIC, combine_unschedulable_replicas
from karmada_api.bindings import ready_replicas, spec_update
from kube_api.timeutil import format_time, now, parse_time

from .budget import Budget

log = structlog.get_logger(__name__)

Estimate = Callable[[list[str]], Awaitable[dict[str, int]]]

#: The ready count of a cluster that reported no ``readyReplicas``: the estimator's "cannot calculate".
UNKNOWN_READY = UNAUTHENTIC

DESCHEDULE_SUCCESS_MESSAGE = "Binding has been descheduled"
EVENT_REASON_DESCHEDULE_SUCCEED = "DescheduleBindingSucceed"
EVENT_REASON_DESCHEDULE_FAILED = "DescheduleBindingFailed"

#: Karmada's ``--descheduling-interval`` default (2m), in seconds.
DEFAULT_DESCHEDULING_INTERVAL = 120.0
#: The cool-down defaults to this many descheduling intervals; see ``default_cool_down``.
COOL_DOWN_INTERVALS = 2
COOL_DOWN_ANNOTATION = "rebalance.karmada-rebalance.io/descheduled"
"""On a binding: ``{"<cluster>": "<RFC 3339 time>/<replicas held back>"}`` (JSON), when the descheduler last
lowered each of its clusters still cooling down, written in the same update as the lowering. A descheduler that
did not make that write itself (restarted, or a new leader) keeps the cool-down from it: its first cycle comes at
once, when the member data may still count the replicas just released."""

@dataclass
class Row:
    """One target cluster: assigned (``spec``), ``ready`` (-1 unknown) and ``unschedulable`` replicas."""

    name: str
    spec: int
    ready: int
    unschedulable: int = 0


def rows_for(binding: Obj) -> list[Row]:
    """One row per ``spec.clusters`` entry, in that order (``plan`` matches rows to entries by index)."""
    ready = ready_replicas(binding)
    rows = []
    for target in objects.spec(binding).get("clusters") or []:
        name = str(target.get("name") or "")
        rows.append(Row(name, int(target.get("replicas") or 0), ready.get(name, UNKNOWN_READY)))
    return rows


def undesired(rows: Iterable[Row]) -> list[Row]:
    """Rows with fewer ready than assigned replicas; an unknown ready count (-1) is undesired too."""
    return [row for row in rows if row.ready < row.spec]


async def fill_unschedulable(rows: list[Row], estimate: Estimate) -> None:
    """Set ``unschedulable`` on the undesired rows from the estimator (rows are changed in place).

    ``estimate(names)`` returns unschedulable counts for the clusters that answered. A cluster
    missing from the answer or answering -1 is unknown and ends at 0 (= leave it alone), as
    :func:`estimator.merge.combine_unschedulable_replicas` combines it.
    Unlike Karmada (#6815) the answers of the clusters that did reply are kept when others
    failed; only an exception from ``estimate`` itself makes every row 0.
    """
    targets = undesired(rows)
    if not targets:
        return
    answers: Mapping[str, int] | None
    try:
        answers = await estimate([row.name for row in targets])
    except Exception as err:
        log.error(f"Max cluster unschedulable replicas error: {err}")
        answers = None  # a failed estimator is skipped: every row ends at 0
    combined = combine_unschedulable_replicas([row.name for row in targets], [answers])
    for row in targets:
        row.unschedulable = combined[row.name]
    log.debug("Target undesired cluster of unschedulable replica result", rows=targets)


# --------------------------------------------------------------------------------------------
# Cool-down (beyond Karmada)


def default_cool_down(descheduling_interval: float = DEFAULT_DESCHEDULING_INTERVAL) -> float:
    """Two descheduling intervals (4 min with the default 2 min interval).

    After a deschedule the lowered assignment must reach the member cluster (binding → Work →
    member Deployment) and the estimator and aggregated status must observe the result. The
    cycle right after the write can still see the old pending pods and would take the same
    replicas away a second time; waiting two intervals guarantees that the next decision for
    that cluster is based on data observed after the change, and it damps replicas bouncing
    back and forth when the scheduler puts them back on the same cluster.
    """
    return COOL_DOWN_INTERVALS * descheduling_interval


class CoolDown:
    """Remembers when a cluster was last descheduled for a binding and forbids repeating it too soon.

    ``seconds <= 0`` disables it. ``clock`` returns seconds on a monotonic scale (tests pass a
    fake one). Entries expire by themselves, so the memory stays bounded by the recent
    deschedules; ``forget`` drops a deleted binding early.

    A deschedule that a budget cut short also remembers how many replicas it held back: those
    may still be taken during the cool-down (they were confirmed unschedulable, and the budget,
    not the data, stopped them), but no more, so stale member data cannot take anything twice.
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], datetime] = now) -> None:
        self.seconds = seconds
        self._clock = clock
        self._wall = wall
        self._last: dict[tuple[str, str], tuple[float, int]] = {}  # -> (when, replicas held back)
        self._last_prune = clock()

    def allowance(self, binding_key: str, cluster: str, binding: Obj | None = None) -> int | None:
        """How many replicas ``cluster`` of ``binding_key`` may lose now: None when it is not cooling
        down (no limit), else the replicas a budget held back at its last deschedule (0: none). Without an
        entry of its own, the ``binding``'s :data:`COOL_DOWN_ANNOTATION` says (another process's write)."""
        state = self._state(binding_key, cluster, binding)
        if state is None:
            self._last.pop((binding_key, cluster), None)
            return None
        return state[1]

    def remaining(self, binding_key: str, cluster: str, binding: Obj | None = None) -> float:
        """Seconds until the cool-down of ``cluster`` of ``binding_key`` ends (0 when it is not cooling down);
        for log lines."""
        state = self._state(binding_key, cluster, binding)
        return 0.0 if state is None else state[0]

    def _state(self, binding_key: str, cluster: str, binding: Obj | None) -> tuple[float, int] | None:
        """(seconds left, replicas held back) while ``cluster`` of ``binding_key`` cools down, else None: from this
        process's own entry, or without one from the ``binding``'s :data:`COOL_DOWN_ANNOTATION`."""
        if self.seconds <= 0:
            return None
        entry = self._last.get((binding_key, cluster))
        if entry is not None:
            left, held = entry[0] + self.seconds - self._clock(), entry[1]
        else:
            written = persisted(binding, cluster) if binding is not None else None
            if written is None:
                return None
            left, held = self.seconds - (self._wall() - written[0]).total_seconds(), written[1]
        return (left, held) if left > 0 else None

    def stamp(self, update: MutableObj, plan: Plan) -> None:
        """Write into ``update`` (the binding about to be PUT with ``plan``) the :data:`COOL_DOWN_ANNOTATION`: the
        plan's clusters now, with what the budget held back there, and the entries still cooling down."""
        if self.seconds <= 0 or not plan.descheduled:
            return
        moment = self._wall()
        kept = {cluster: value for cluster, value in _persisted_entries(update).items()
                if (parsed := _parse_entry(value)) is not None
                and moment - parsed[0] < timedelta(seconds=self.seconds)}
        for cluster in plan.descheduled:
            kept[cluster] = f"{format_time(moment)}/{plan.held_by_cluster.get(cluster, 0)}"
        # new dicts: the update shares its metadata with the cached binding (spec_update is shallow)
        metadata = dict(update.get("metadata") or {})
        metadata["annotations"] = {**(metadata.get("annotations") or {}),
                                   COOL_DOWN_ANNOTATION: json.dumps(kept, sort_keys=True, separators=(",", ":"))}
        update["metadata"] = metadata

    def record(self, binding_key: str, cluster: str, held_back: int = 0) -> None:
        """Note that ``cluster`` of ``binding_key`` was just descheduled (call after the write succeeded),
        with ``held_back`` replicas a budget left for later."""
        if self.seconds <= 0:
            return
        now = self._clock()
        if now - self._last_prune >= self.seconds:
            self._last = {key: entry for key, entry in self._last.items() if now - entry[0] < self.seconds}
            self._last_prune = now
        self._last[(binding_key, cluster)] = (now, held_back)

    def record_plan(self, binding_key: str, plan: Plan) -> None:
        """``record`` every cluster the applied ``plan`` took replicas from, with what it held back there."""
        for cluster in plan.descheduled:
            self.record(binding_key, cluster, plan.held_by_cluster.get(cluster, 0))

    def forget(self, binding_key: str, clusters: Iterable[str] | None = None) -> None:
        """Drop the entries of a binding (e.g. when it is deleted), or of only these ``clusters``: the binding's
        own :data:`COOL_DOWN_ANNOTATION` then says whether they cool down."""
        if clusters is None:
            self._last = {key: entry for key, entry in self._last.items() if key[0] != binding_key}
            return
        for cluster in clusters:
            self._last.pop((binding_key, cluster), None)

    def __len__(self) -> int:
        return len(self._last)


def _persisted_entries(binding: Obj) -> dict[str, Any]:
    try:
        entries = json.loads(objects.annotations(binding).get(COOL_DOWN_ANNOTATION) or "{}")
    except ValueError:
        return {}  # not ours to trust: no cool-down from it
    return entries if isinstance(entries, dict) else {}


def _parse_entry(value: Any) -> tuple[datetime, int] | None:
    moment, _, held = str(value).partition("/")
    try:
        return parse_time(moment), max(0, int(held or 0))
    except ValueError:
        return None


def persisted(binding: Obj, cluster: str) -> tuple[datetime, int] | None:
    """When the binding's :data:`COOL_DOWN_ANNOTATION` says ``cluster`` was last lowered, and what a budget held
    back there then; None without a readable entry."""
    return _parse_entry(_persisted_entries(binding).get(cluster))


# --------------------------------------------------------------------------------------------
# Update (descheduler.go updateScheduleResult)


@dataclass(frozen=True)
class Plan:
    """The result of one descheduling decision for a binding.

    ``clusters`` is the complete new ``spec.clusters`` (same entries and order, some with lower
    ``replicas``, possibly 0); ``descheduled`` maps each cluster that lost replicas to how many;
    ``message`` is the event message; ``total`` the sum of ``descheduled``. ``held_back`` says how
    many more a budget kept from moving, per reason (:mod:`descheduler.budget`), and
    ``held_by_cluster`` per cluster. A plan with ``total`` 0 changes nothing (the budget held it
    all back): there is nothing to write.
    """

    clusters: list[dict[str, Any]]
    message: str
    descheduled: dict[str, int]
    total: int
    held_back: dict[str, int] = field(default_factory=dict)
    held_by_cluster: dict[str, int] = field(default_factory=dict)

    def apply(self, binding: Obj) -> MutableObj:
        """The update of ``binding`` to the new ``spec.clusters``; everything else (``spec.replicas``,
        ``metadata.resourceVersion`` for the conditional PUT) as it was (:func:`spec_update`)."""
        return spec_update(binding, {**objects.spec(binding), "clusters": copy.deepcopy(self.clusters)})


def plan(binding: Obj, rows: list[Row], cool_down: CoolDown | None = None,
         budget: Budget | None = None) -> Plan | None:
    """Lower each cluster's assignment by its unschedulable replicas, never below its ready ones.

    A row changes only when ``0 < unschedulable <= spec`` (a count above the assignment is
    inconsistent data and is left alone) and, with a ``cool_down``, when that cluster was not
    descheduled for this binding too recently (or only by as many as a budget held back then).
    Entries are never removed from ``spec.clusters`` and ``spec.replicas`` is never touched: the
    scheduler sees the shortfall and places the missing replicas elsewhere. A ``budget`` only
    lowers what moves, taking from the clusters in ``spec.clusters`` order. None when nothing
    would change and nothing was held back.
    ``rows`` must come from ``rows_for(binding)``: they are matched to entries by index.
    """
    clusters: list[dict[str, Any]] = copy.deepcopy(objects.spec(binding).get("clusters") or [])
    if len(rows) != len(clusters):
        raise ValueError(f"{len(rows)} rows for {len(clusters)} spec.clusters entries")
    key = objects.key(binding)  # the work-queue key, also used to key the cool-down
    left = budget.limit if budget is not None else None
    message = DESCHEDULE_SUCCESS_MESSAGE
    total = wanted = 0
    descheduled: dict[str, int] = {}
    held: dict[str, int] = {}
    for entry, row in zip(clusters, rows, strict=True):
        if entry.get("name") != row.name:
            raise ValueError(f"row {row.name!r} does not match spec.clusters entry {entry.get('name')!r}")
        if not (row.unschedulable > 0 and row.spec >= row.unschedulable):
            continue
        allowance = cool_down.allowance(key, row.name, binding) if cool_down is not None else None
        if cool_down is not None and allowance == 0:
            log.info("Skip descheduling cluster in cool-down", binding=key, cluster=row.name,
                     unschedulable=row.unschedulable,
                     remaining_seconds=round(cool_down.remaining(key, row.name, binding), 1))
            continue
        unschedulable = row.unschedulable if allowance is None else min(row.unschedulable, allowance)
        target = row.spec - unschedulable
        if target < row.ready <= row.spec:
            # Ready replicas are serving: never take away more than the ones that are not.
            target = row.ready
        want = row.spec - target
        count = want if left is None else min(want, left)
        if left is not None:
            left -= count
        wanted += want
        if want > count:
            held[row.name] = want - count
            if count == 0:
                continue  # untouched: only the budget stopped it, the message names what moved
        entry["replicas"] = row.spec - count
        total += count
        message += f", {count} replica(s) in cluster({row.name})"
        if count > 0:
            descheduled[row.name] = descheduled.get(row.name, 0) + count
    held_back = budget.held_back(wanted, total) if budget is not None else {}
    if total == 0 and not held_back:
        return None
    message += f", {total} total descheduled replica(s)"
    return Plan(clusters=clusters, message=message, descheduled=descheduled, total=total, held_back=held_back,
                held_by_cluster=held)
