"""``--max-concurrent``: create the waves one after the other, each only once the previous one is healthy.

While a wave moves, the command reads just that wave's objects every :data:`POLL_INTERVAL` seconds: its
rebalancers until each workload has a result, then the binding and template of each ``Successful``
workload until it is healthy (a workload seen healthy stays counted as healthy). That is at most
rebalancers + 2 x workloads GETs per round for one wave, never a LIST. An error the API server gives
while restarting or busy skips the round; the progress deadline bounds the wave either way. The creates are
retried too (:mod:`.retry`), for at most the progress deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.objects import Obj
from controller_manager.resource import Resource
from karmada_api.bindings import CRB_KIND, RB_KIND
from karmada_api.health import workload_not_healthy
from karmada_api.resources import WORKLOAD_REBALANCERS
from karmada_api.shapes import rebalancer_spec, rebalancer_status
from sharedcli.flagtypes import format_duration

from .create import create_all
from .discovery import Discovered, GroupKind, discover, resource_for
from .errors import CommandError, WaveHeldBack
from .output import table
from .retry import CreateGaveUp, describe, transient
from .selection import Selection, Workload, workload_from_reference
from .status import gone_before_read
from .waves import FAILED, SUCCESSFUL, HeldBack, Verdict, Wave, held_back, named, verdict

POLL_INTERVAL = 2.0
"""Seconds between two reads of a wave's objects."""


@dataclass(frozen=True)
class Targets:
    """Where a workload's health is read: its binding ``(namespace, name)`` and its template kind's resource."""

    bindings: Mapping[Workload, tuple[str, str]]
    resources: Mapping[GroupKind, Resource]


async def targets(client: KubeClient, chosen: Selection, discovered: Discovered | None = None) -> Targets:
    """Each selected workload's binding, and the REST resource of each template kind (from discovery: the
    selection's own, ``discovered``, when it made one).

    A kind missing while some resource lists could not be read (a restarting server) stops here, before any
    wave, with "try again" (exit 1): its templates would read as not found until the deadline held a wave back.
    """
    found = discovered if discovered is not None else await discover(client)
    resources = {}
    for kind in {workload.group_kind for workload in chosen.workloads}:
        resource = resource_for(kind, found.resources)
        if resource is None:
            found.explain_missing(f"the template kind {kind}")
        else:
            resources[kind] = resource
    return Targets(chosen.bindings, resources)


class WaveWatch:
    """What is known of one wave: each workload's rebalancer result and latest health, the rebalancers last read."""

    def __init__(self, client: KubeClient, wave: Wave, created: Sequence[Obj], targets: Targets) -> None:
        self.client, self.wave, self.targets = client, wave, targets
        self.rebalancers: dict[str, Obj] = {objects.name(obj): obj for obj in created}
        self.results: dict[Workload, tuple[str, str]] = {}
        self.health: dict[Workload, str | None] = {}
        self.failing: BaseException | None = None
        """The transient error the latest round of reads met (None: it read everything it asked for)."""

    def holding(self) -> list[HeldBack]:
        return held_back(self.wave.workloads, self.results, self.health)

    async def check(self) -> list[HeldBack]:
        """Read what is still unknown, then the workloads that hold the wave back (none: it is healthy)."""
        try:
            await self._read_results()
            await self._read_health()
            self.failing = None
        except Exception as exc:
            if not transient(exc):
                raise
            self.failing = exc  # this round is skipped; the next one reads again, until the deadline
        return self.holding()

    def _has_results(self, rebalancer: Obj) -> bool:
        return all(workload_from_reference(ref) in self.results for ref in rebalancer_spec(rebalancer).get("workloads")
                   or [])

    async def _read_results(self) -> None:
        async def one(name: str) -> None:
            try:
                rebalancer = await self.client.get(WORKLOAD_REBALANCERS, name)
            except ApiError as exc:
                if exc.is_not_found:
                    raise gone_before_read(name) from None
                raise
            self.rebalancers[name] = rebalancer
            for item in rebalancer_status(rebalancer).get("observedWorkloads") or []:
                result = item.get("result")
                if result in (SUCCESSFUL, FAILED):  # both final: the controller never revisits them
                    workload = workload_from_reference(item.get("workload") or {})
                    self.results[workload] = (str(result), str(item.get("reason") or ""))

        await _all(one(name) for name, obj in self.rebalancers.items() if not self._has_results(obj))

    async def _read_health(self) -> None:
        async def one(workload: Workload) -> None:
            namespace, name = self.targets.bindings[workload]
            binding = await self.client.get_or_none(RB_KIND.resource if namespace else CRB_KIND.resource, name,
                                                    namespace)
            if binding is None:
                self.health[workload] = f"its binding {name} is not found"
                return
            resource = self.targets.resources.get(workload.group_kind)
            template = None
            if resource is not None:
                template = await self.client.get_or_none(resource, workload.name, workload.namespace)
            self.health[workload] = workload_not_healthy(binding, template)

        moved = [w for w in self.wave.workloads if self.results.get(w, ("", ""))[0] == SUCCESSFUL]
        await _all(one(w) for w in moved if w not in self.health or self.health[w] is not None)


async def _all(reads: Iterable[Awaitable[None]]) -> None:
    """Run the reads together and let each finish (none is left running into the next round); then raise the
    first error."""
    for outcome in await asyncio.gather(*reads, return_exceptions=True):
        if isinstance(outcome, BaseException):
            raise outcome


async def until_healthy(watch: WaveWatch, deadline: float) -> list[HeldBack]:
    """Look at the wave until it is healthy ([]), a workload failed, or ``deadline`` seconds have passed; the
    workloads holding it back then."""
    with anyio.move_on_after(deadline):
        while True:
            holding = await watch.check()
            if verdict(holding) is not Verdict.WAITING:
                return holding
            await anyio.sleep(POLL_INTERVAL)
    return watch.holding()


@dataclass
class WaveRunner:
    """Creates ``plan`` wave by wave; keeps what it created, for the report however the run ends."""

    client: KubeClient
    plan: Sequence[Wave]
    targets: Targets
    deadline: float
    progress: TextIO
    """The wave lines and the table of a held-back wave."""
    show: Callable[[Sequence[dict[str, Any]]], None]
    """Prints the rebalancers of a wave once created (also those created before a failure)."""
    created: list[dict[str, Any]] = field(default_factory=list)
    current: Wave | None = None
    waiting: bool = False
    finished: dict[str, Obj] = field(default_factory=dict)
    """The rebalancers as last read, by name (for ``--wait``'s table)."""

    async def run(self, *, wait_last: bool) -> list[Obj]:
        """Every wave; the rebalancers as last read. WaveHeldBack when a wave does not become healthy."""
        for wave in self.plan:
            self.current, self.waiting = wave, False
            self.progress.write(f"wave {wave.label}: {len(wave.workloads)} workloads\n")
            objs: list[dict[str, Any]] = []
            try:  # a busy or restarting API server's answers are retried, for at most the wave's deadline
                await create_all(self.client, wave.rebalancers, objs, retry_for=self.deadline,
                                 bound=f"--progress-deadline {format_duration(self.deadline)}",
                                 notice=lambda line: self.progress.write(line + "\n"))
            except CreateGaveUp as exc:
                raise CommandError(self.stopped(str(exc))) from None
            finally:
                self.created.extend(objs)
                self.show(objs)
            self.finished.update((objects.name(obj), obj) for obj in objs)
            if wave.number == wave.total and not wait_last:
                break
            await self._watch(wave, objs)
        return [self.finished[objects.name(obj)] for obj in self.created]

    async def _watch(self, wave: Wave, objs: Sequence[Obj]) -> None:
        self.waiting = True
        started = time.monotonic()
        watch = WaveWatch(self.client, wave, objs, self.targets)
        holding = await until_healthy(watch, self.deadline)
        self.finished.update(watch.rebalancers)
        if not holding:
            took = format_duration(round(time.monotonic() - started))
            self.progress.write(f"wave {wave.label}: healthy after {took}\n")
            return
        self.progress.write(f"wave {wave.label}: held back by {len(holding)} of {len(wave.workloads)} workloads\n")
        self.progress.write(table([(str(h.workload), h.state, h.reason) for h in holding],
                                  ("WORKLOAD", "STATE", "REASON")))
        if verdict(holding) is Verdict.FAILED:
            what = f"wave {wave.label} has a failed workload"
        else:
            what = f"wave {wave.label} not healthy within --progress-deadline {format_duration(self.deadline)}"
            if watch.failing is not None:  # what it held back by may be stale: say why it could not look
                what += f" (the last reads failed: {describe(watch.failing)})"
        raise WaveHeldBack(f"{what}: {named(holding)}{self._not_created(wave)}")

    def _not_created(self, wave: Wave) -> str:
        rest = wave.rest()
        return f"; {rest} not created" if rest else ""

    def stopped(self, why: str) -> str:
        """One line for a run that ``why`` ended early: where it was, what exists and what was not created."""
        wave = self.current
        if wave is None:
            return f"{why} before any wave was created"
        doing = "waiting for" if self.waiting else "creating"
        names = ", ".join(objects.name(obj) for obj in self.created) or "none"
        return f"{why} while {doing} wave {wave.label}; rebalancers created: {names}{self._not_created(wave)}"
