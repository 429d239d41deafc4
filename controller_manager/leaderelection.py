"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.

Why not kubernetes_asyncio's own ``leaderelection`` module: it GETs before every PUT, never
counts ``leaseTransitions``, has no release-on-cancel, judges expiry by the remote wall clock,
writes naive local times with a ``Z`` suffix, swallows 409s and never stops the leader's work
on loss. This module follows client-go's ``tools/leaderelection`` instead:

* **acquire**: every ``retry_period`` (jitter 1.2) try ``tryAcquireOrRenew`` until it succeeds;
* **lead**: run the caller's ``lead()`` concurrently with the renew loop;
* **renew**: every ``retry_period``; if no renewal succeeded within ``renew_deadline`` the
  leader's work is cancelled and :class:`LeaderElectionLost` is raised (by convention the
  process then exits non-zero: a lost lease is never "won back" in-process);
* **release**: when ``run()`` is cancelled or ``lead()`` ends, and ``release_on_cancel`` is set,
  the Lease is written back with an empty holder and ``leaseDurationSeconds=1`` so a standby
  takes over after one ``retry_period`` instead of a whole ``lease_duration``.

A missing namespace is not a transient failure: nobody can take the Lease until an operator
creates the namespace (or fixes ``--leader-elect-resource-namespace``). It is logged as a warning
once per episode (again every :data:`MISSING_NAMESPACE_REMINDER` while it lasts) and reported by
:attr:`LeaderElector.problem`, which the manager's ``/readyz`` shows. Only a NotFound whose Status
``details`` name the namespace counts (``ApiError.is_not_found``): a plain ``404 page not found``
or a Status without details means the Lease API is not served right now (an API server
restarting) and stays an ordinary failed round.

Expiry is always judged on the **local** clock (``clock``, monotonic by default): a record is
valid until ``observed_time + leaseDurationSeconds``, where ``observed_time`` is when this
process last saw the record change. Remote ``renewTime`` values are informational only, so
clock skew between pods cannot make two of them lead at once.

Safety argument (why two leaders never overlap): a standby may take over only after it has
seen the same record unchanged for ``leaseDurationSeconds``, and it saw the leader's last
renewal *after* that renewal was sent. The leader stops at most ``renew_deadline`` after the
*start* of its last successful renewal round (stricter than client-go, which counts from the
start of the current retry window). Config validation requires the whole seconds written to
the Lease to exceed ``renew_deadline``, so the leader has stopped before anyone can take over.
"""

from __future__ import annotations

import asyncio
import enum
import json
import math
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import anyio
import structlog
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from . import objects
from .apierrors import ApiError
from .leaselock import LeaseLock, micro_time, status_reason, with_spec
from .metrics import LEADER_ELECTION_MASTER_STATUS, LEADER_ELECTION_SLOWPATH
from .rbac import PolicyRule, rule

log = structlog.get_logger(__name__)

JITTER_FACTOR = 1.2
"""client-go's ``JitterFactor``: acquire retries wait ``retry_period * (1 + U[0, 1.2))``."""

MISSING_NAMESPACE_REMINDER = 300.0
"""Seconds between two warnings of one missing-namespace episode: not on every retry, never forgotten."""

_RELEASED_LEASE_SECONDS = 1
_NETWORK_ERRORS = (aiohttp.ClientError, OSError, TimeoutError, ValueError, ApiException)


def lease_rules(lease_name: str) -> list[PolicyRule]:
    """What the elector needs, granted by a Role in the Lease's namespace (never cluster-wide).

    It reads, creates and replaces (PUT) its Lease and watches it (``_watch_for_release``); it never
    patches, lists or deletes. CREATE cannot be limited by name (a POST names no object to the
    authorizer); the rest is limited to ``lease_name``: the API server authorizes a watch with
    ``fieldSelector=metadata.name=<name>`` as a request on that name.
    """
    return [rule("coordination.k8s.io", "leases", "create"),
            rule("coordination.k8s.io", "leases", ("get", "update", "watch"), resource_names=(lease_name,))]


def default_identity() -> str:
    """``hostname_uuid``, as Kubernetes' components build it: unique even for two pods on one host."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Where the lock lives (no default: the program decides), who we are, and the timings.

    The timings default to component-base's (15s lease, 10s renew deadline, 2s retry period).
    """

    lease_name: str
    namespace: str
    identity: str = field(default_factory=default_identity)
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    release_on_cancel: bool = True

    def validate(self) -> None:
        """Raise ``ValueError`` with a one-line reason unless the timings can keep leaders exclusive.

        client-go's rules (lease_duration > renew_deadline > 1.2 * retry_period > 0, identity set)
        plus one of ours: the Lease stores whole seconds (``int(lease_duration)``, as client-go
        truncates), and it is that stored figure standbys wait for, so it must also exceed
        ``renew_deadline``; otherwise e.g. 1.5 s / 1.2 s would let a standby take over while the
        leader still believes it leads.
        """
        if not self.lease_name:
            raise ValueError("leader election: lease_name must not be empty")
        if not self.namespace:
            raise ValueError("leader election: namespace must not be empty")
        if not self.identity.strip():
            raise ValueError("leader election: identity must not be empty")
        for name in ("lease_duration", "renew_deadline", "retry_period"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"leader election: {name} must be a positive number of seconds, got {value!r}")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(f"leader election: renew_deadline ({self.renew_deadline}s) must be greater than "
                             f"{JITTER_FACTOR} * retry_period ({JITTER_FACTOR * self.retry_period:g}s)")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(f"leader election: lease_duration ({self.lease_duration}s) must be greater than "
                             f"renew_deadline ({self.renew_deadline}s)")
        if self.lease_duration_seconds <= self.renew_deadline:
            raise ValueError(f"leader election: lease_duration is stored in whole seconds "
                             f"({self.lease_duration}s -> {self.lease_duration_seconds}s), which must be greater "
                             f"than renew_deadline ({self.renew_deadline}s)")

    @property
    def lease_duration_seconds(self) -> int:
        """``leaseDurationSeconds`` as written to the Lease (truncated, like client-go)."""
        return int(self.lease_duration)


class LeaderElectionLost(Exception):
    """The lease could not be renewed in time (or someone else took it); leading has stopped.

    By convention the process exits non-zero on this: in-process re-election would need every
    piece of leader-only state to be rebuilt, which is what a restart does reliably.
    """


class _Outcome(enum.Enum):
    ACQUIRED = "acquired"  # we hold the lease (created, renewed or taken over)
    HELD = "held"  # someone else holds a still-valid lease
    FAILED = "failed"  # network error, 5xx, 409 race...: try again next period


class LeaderElector:
    """Campaigns for one Lease and runs ``lead()`` only while holding it.

    One elector runs at most one ``run()`` at a time. ``clock`` drives every expiry decision and
    must be monotonic (seconds); it exists so that the logic is not tied to wall time.
    """

    def __init__(self, api_client: client.ApiClient, config: LeaderElectionConfig, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        config.validate()
        self.config = config
        self._lock = LeaseLock(api_client, config.namespace, config.lease_name)
        self._clock = clock
        self._gauge = LEADER_ELECTION_MASTER_STATUS.labels(name=config.lease_name)
        self._slowpath = LEADER_ELECTION_SLOWPATH.labels(name=config.lease_name)
        self._log = log.bind(lease=f"{config.namespace}/{config.lease_name}", identity=config.identity)
        # What this process last saw of the Lease: its spec, when that spec last changed (local
        # clock), and the whole object (its resourceVersion is the precondition of our next PUT).
        self._observed_spec: objects.Obj = {}
        self._observed_time = -math.inf
        self._lease: dict[str, Any] | None = None
        self._renewed_at = -math.inf  # clock() at the start of our last successful write round
        self._namespace_missing_since: float | None = None  # clock() when the episode began
        self._namespace_warned_at = -math.inf
        self._leading = False
        self._running = False
        self._holder_changed = asyncio.Event()

    # --- public surface -------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        """True from winning the lease until leading stops (loss, cancellation or ``lead()`` ending)."""
        return self._leading

    @property
    def observed_holder(self) -> str:
        """The holderIdentity this process last saw on the Lease ("" if free or never seen)."""
        return str(self._observed_spec.get("holderIdentity") or "")

    @property
    def problem(self) -> str | None:
        """Why no replica can lead right now (the Lease's namespace is missing), or None.

        Set only by a NotFound whose details name the namespace; cleared as soon as any Lease
        answer shows the namespace exists. Transient errors neither set nor clear it.
        """
        if self._namespace_missing_since is None:
            return None
        cfg = self.config
        return (f'namespace "{cfg.namespace}" not found: cannot create the leader-election Lease '
                f"{cfg.namespace}/{cfg.lease_name} (create the namespace or set --leader-elect-resource-namespace)")

    async def leader_changed(self) -> str:
        """Wait until the observed holder changes; return the new holder ("" when released).

        Observations happen only while ``run()`` is campaigning or renewing.
        """
        await self._holder_changed.wait()
        return self.observed_holder

    async def run(self, lead: Callable[[], Awaitable[None]]) -> None:
        """Acquire the lease, run ``lead()`` while renewing it, and stop cleanly.

        * ``lead()`` returns or raises: renewing stops, the lease is released (if
          ``release_on_cancel``) and ``run()`` returns or re-raises the same exception.
        * The lease is not renewed within ``renew_deadline``, or another holder is seen: ``lead()``
          is cancelled and awaited, then :class:`LeaderElectionLost` is raised.
        * ``run()`` is cancelled: ``lead()`` is cancelled and awaited, the lease is released if we
          hold it and ``release_on_cancel`` is set, then the cancellation propagates. The cleanup
          is shielded from anyio cancel scopes and bounded by ``renew_deadline`` per step; a
          second native ``Task.cancel()`` aborts it.
        """
        if self._running:
            raise RuntimeError("LeaderElector.run() is already running")
        self._running = True
        self._gauge.set(0)
        try:
            try:
                await self._acquire()
            except asyncio.CancelledError:
                # A cancelled round may still have won the lease: give it back if we know we hold it.
                with anyio.CancelScope(shield=True):
                    await self._release_if_holding()
                raise
            await self._lead_while_renewing(lead)
        finally:
            self._set_leading(False)
            self._running = False

    # --- the three phases ------------------------------------------------------------------

    async def _acquire(self) -> None:
        """Try every ``retry_period`` with jitter until we hold the lease (client-go's ``acquire``)."""
        self._log.info("attempting to acquire leader lease")
        while True:
            outcome = await self._round(self.config.renew_deadline)
            if outcome is _Outcome.ACQUIRED:
                self._set_leading(True)
                return
            if outcome is _Outcome.HELD:
                self._log.debug("lease is held by another and has not yet expired", holder=self.observed_holder)
            period = self.config.retry_period
            pause = period + random.random() * JITTER_FACTOR * period
            if self.observed_holder:  # don't sleep past the moment the holder's lease expires
                seconds = float(self._observed_spec.get("leaseDurationSeconds") or 0)
                pause = min(pause, max(self._observed_time + seconds - self._clock(), 0.0) + 0.05)
            await self._pause(pause)

    async def _pause(self, seconds: float) -> None:
        """Wait until the next attempt, but wake as soon as the holder releases the lease.

        client-go's standby only notices a release at its next jittered retry (2 to 4.4 s at the
        default timings), and a renewal only when it polls. Watching the Lease lets a standby take
        over within a fraction of a second of the leader's graceful shutdown (the hand-over target
        is 3 s), and, since every renewal it sees restarts its expiry clock exactly, within the
        lease duration of a leader that died.
        """
        deadline = self._clock() + seconds
        try:
            await asyncio.wait_for(self._watch_for_release(seconds), seconds)
        except TimeoutError:
            return
        except (*_NETWORK_ERRORS, _WatchEnded) as exc:
            self._log.debug("lease watch unavailable, waiting out the retry period", error=str(exc))
            await asyncio.sleep(max(0.0, deadline - self._clock()))

    async def _watch_for_release(self, seconds: float) -> None:
        """Return when the watched Lease has no holder (released) or is deleted."""
        rv = objects.resource_version(self._lease or {})
        async with await self._lock.watch(rv, seconds) as response:
            if response.status != 200:
                raise _WatchEnded(f"watch answered {response.status}")
            async for line in response.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    raise _WatchEnded(str(obj.get("message") or "watch error"))
                if event.get("type") == "DELETED" or not objects.spec(obj).get("holderIdentity"):
                    self._log.info("lease released by its holder, trying now")
                    return
                self._observe(obj, self._clock())  # a renewal: restart the expiry clock now
        raise _WatchEnded("watch ended")

    async def _lead_while_renewing(self, lead: Callable[[], Awaitable[None]]) -> None:
        async def lead_coro() -> None:
            await lead()

        lead_task = asyncio.create_task(lead_coro(), name=f"leader: {self.config.lease_name}")
        renew_task = asyncio.create_task(self._renew_loop(), name=f"lease renewal: {self.config.lease_name}")
        try:
            await asyncio.wait({lead_task, renew_task}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            await self._stop(lead_task, renew_task, lead_finished=False)
            raise
        if lead_task.done():
            await self._stop(lead_task, renew_task, lead_finished=True)
            lead_task.result()  # return, or re-raise what lead() raised
            return
        lost = renew_task.exception()
        await self._stop(lead_task, renew_task, lead_finished=False)
        assert lost is not None  # the renew loop only ends by raising
        raise lost

    async def _renew_loop(self) -> None:
        """Renew every ``retry_period``; raise :class:`LeaderElectionLost` past ``renew_deadline``.

        The deadline counts from the start of the last successful round, and every request of a
        round is bounded by the time left, so leading never outlives the deadline by more than
        scheduling latency.
        """
        cfg = self.config
        while True:
            deadline = self._renewed_at + cfg.renew_deadline
            await asyncio.sleep(max(0.0, min(cfg.retry_period, deadline - self._clock())))
            remaining = deadline - self._clock()
            if remaining <= 0:
                self._log.warning("failed to renew lease within the renew deadline", renew_deadline=cfg.renew_deadline)
                raise LeaderElectionLost(f"leader election lost: lease {cfg.namespace}/{cfg.lease_name} "
                                         f"not renewed within {cfg.renew_deadline:g}s")
            outcome = await self._round(remaining)
            if outcome is _Outcome.HELD:
                # client-go keeps polling until the deadline, but a valid foreign lease cannot expire
                # before it (lease_duration > renew_deadline): stop the work now rather than later.
                self._log.warning("lease taken by another holder", holder=self.observed_holder)
                raise LeaderElectionLost(f"leader election lost: lease {cfg.namespace}/{cfg.lease_name} "
                                         f"is now held by {self.observed_holder!r}")

    async def _stop(self, lead_task: asyncio.Task[None], renew_task: asyncio.Task[None], *,
                    lead_finished: bool) -> None:
        """Stop renewing and leading, wait for ``lead()`` to finish, then release if configured.

        Releasing is only safe once the leader's work has stopped, so if ``lead()`` ignores
        cancellation for longer than ``renew_deadline`` the lease is left to expire instead.
        """
        with anyio.CancelScope(shield=True):
            self._set_leading(False)
            renew_task.cancel()
            lead_task.cancel()
            with anyio.move_on_after(self.config.renew_deadline):
                await asyncio.wait({lead_task, renew_task})
            renew_task.add_done_callback(_retrieve_exception)
            if not lead_finished:  # otherwise run() re-raises what lead() raised
                lead_task.add_done_callback(_retrieve_exception)
            if not lead_task.done():
                self._log.error("lead() did not stop after cancellation; leaving the lease to expire",
                                timeout=self.config.renew_deadline)
                return
            await self._release_if_holding()

    # --- tryAcquireOrRenew ---------------------------------------------------------------------

    async def _round(self, timeout: float) -> _Outcome:
        """One ``tryAcquireOrRenew``, bounded by ``timeout``; I/O trouble is a failed round."""
        start = self._clock()
        try:
            async with asyncio.timeout(timeout):
                outcome = await self._try_acquire_or_renew(start, timeout)
        except _NETWORK_ERRORS as exc:
            self._log.warning("leader election round failed", error=repr(exc))
            return _Outcome.FAILED
        if outcome is _Outcome.ACQUIRED:
            self._renewed_at = start
        return outcome

    async def _try_acquire_or_renew(self, start: float, timeout: float) -> _Outcome:
        cfg = self.config
        now = micro_time()
        record: dict[str, Any] = {"holderIdentity": cfg.identity, "leaseDurationSeconds": cfg.lease_duration_seconds,
                                  "acquireTime": now, "renewTime": now, "leaseTransitions": 0}

        # 1. Fast path: we lead and our view is still valid -> optimistic PUT from the cached Lease.
        if self._holds_observed() and self._valid_at(start) and self._lease is not None:
            record["acquireTime"] = self._observed_spec.get("acquireTime") or now
            record["leaseTransitions"] = int(self._observed_spec.get("leaseTransitions") or 0)
            status, body, _ = await self._lock.call("replace", timeout, with_spec(self._lease, record))
            if status == 200 and body is not None:
                self._observe(body, start)
                return _Outcome.ACQUIRED
            self._log.info("optimistic lease update failed, falling back to slow path", status=status)

        # 2. Get the record, creating it when missing (a 404 that names no object is not "missing").
        status, body, error = await self._lock.call("read", timeout)
        if error is not None and error.is_not_found:
            lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                     "metadata": {"name": cfg.lease_name, "namespace": cfg.namespace}, "spec": record}
            status, body, error = await self._lock.call("create", timeout, lease)
            if status in (200, 201) and body is not None:
                self._observe(body, start)
                return _Outcome.ACQUIRED
            if error is not None and self._names_our_namespace(error):
                self._namespace_missing()
            else:
                self._log.info("creating the lease failed", status=status, reason=status_reason(body))
            return _Outcome.FAILED
        if status != 200 or body is None:
            self._log.info("reading the lease failed", status=status, reason=status_reason(body))
            return _Outcome.FAILED

        # 3. Someone else holds a record that has not expired by our clock -> not ours.
        old = objects.spec(body)
        self._observe(body, self._clock())
        if old.get("holderIdentity") and not self._holds_observed() and self._valid_at(start):
            return _Outcome.HELD

        # 4. Take it over (transitions + 1) or renew it on the slow path (keep acquireTime).
        if self._holds_observed():
            record["acquireTime"] = old.get("acquireTime") or now
            record["leaseTransitions"] = int(old.get("leaseTransitions") or 0)
            self._slowpath.inc()
        else:
            record["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
        status, body, _ = await self._lock.call("replace", timeout, with_spec(body, record))
        if status == 200 and body is not None:
            self._observe(body, start)
            return _Outcome.ACQUIRED
        self._log.info("updating the lease failed", status=status, reason=status_reason(body))
        return _Outcome.FAILED

    async def _release_if_holding(self) -> None:
        """Write back an empty holder (client-go's ``release``), only if the server says it is ours.

        Unlike client-go, the holder is checked on the fresh GET (not our cached view), and the PUT
        carries that GET's resourceVersion, so a lease someone else took is never overwritten.
        """
        cfg = self.config
        if not cfg.release_on_cancel or not self._holds_observed():
            return
        timeout = cfg.renew_deadline
        try:
            with anyio.fail_after(timeout):
                status, body, _ = await self._lock.call("read", timeout)
                if status != 200 or body is None:
                    self._log.warning("could not read the lease to release it", status=status,
                                      reason=status_reason(body))
                    return
                start = self._clock()
                self._observe(body, start)
                if not self._holds_observed():
                    return
                now = micro_time()
                record = {"holderIdentity": "", "leaseDurationSeconds": _RELEASED_LEASE_SECONDS,
                          "acquireTime": now, "renewTime": now,
                          "leaseTransitions": int(objects.spec(body).get("leaseTransitions") or 0)}
                status, body, _ = await self._lock.call("replace", timeout, with_spec(body, record))
                if status != 200 or body is None:
                    self._log.warning("failed to release the lease", status=status, reason=status_reason(body))
                    return
                self._observe(body, start)
                self._log.info("released the lease")
        except _NETWORK_ERRORS as exc:
            self._log.warning("failed to release the lease", error=repr(exc))

    # --- observed state ------------------------------------------------------------------------

    def _observe(self, lease: dict[str, Any], at: float) -> None:
        """Cache the Lease; restart the expiry clock only if its spec changed (client-go's raw compare).

        Any Lease seen also proves its namespace exists, which ends a missing-namespace episode.
        """
        self._lease = lease
        if self._namespace_missing_since is not None:
            self._log.info("leader election namespace exists now", namespace=self.config.namespace,
                           missing_for=round(self._clock() - self._namespace_missing_since, 1))
            self._namespace_missing_since = None
            self._namespace_warned_at = -math.inf
        spec = objects.spec(lease)
        if spec == self._observed_spec:
            return
        previous = self.observed_holder
        self._observed_spec = spec
        self._observed_time = at
        holder = self.observed_holder
        if holder != previous:
            if holder:
                self._log.info("new leader observed", holder=holder, is_self=holder == self.config.identity)
            event, self._holder_changed = self._holder_changed, asyncio.Event()
            event.set()

    def _names_our_namespace(self, error: ApiError) -> bool:
        """A NotFound whose Status details name the Lease's namespace (not a transient 404)."""
        details = error.body.get("details")
        return (error.is_not_found and isinstance(details, dict) and details.get("kind") == "namespaces"
                and details.get("name") == self.config.namespace)

    def _namespace_missing(self) -> None:
        """Start or continue a missing-namespace episode; warn at its start and then at a low rate."""
        now = self._clock()
        if self._namespace_missing_since is None:
            self._namespace_missing_since = now
        elif now - self._namespace_warned_at < MISSING_NAMESPACE_REMINDER:
            self._log.debug("leader election namespace still missing", namespace=self.config.namespace)
            return
        self._namespace_warned_at = now
        self._log.warning("leader election namespace does not exist: nobody can lead until it is created",
                          namespace=self.config.namespace,
                          missing_for=round(now - self._namespace_missing_since, 1),
                          fix=f"kubectl create namespace {self.config.namespace}, "
                              "or set --leader-elect-resource-namespace")

    def _holds_observed(self) -> bool:
        """client-go's ``IsLeader``: our last view of the record names us as holder."""
        return self.observed_holder == self.config.identity

    def _valid_at(self, now: float) -> bool:
        seconds = self._observed_spec.get("leaseDurationSeconds") or 0
        return bool(self._observed_time + float(seconds) > now)

    def _set_leading(self, leading: bool) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        self._gauge.set(1 if leading else 0)
        if leading:
            self._log.info("became leader")
        else:
            self._log.info("stopped leading")

class _WatchEnded(Exception):
    """The Lease watch ended or failed: fall back to waiting out the retry period."""


def _retrieve_exception(task: asyncio.Task[None]) -> None:
    """Mark a finished child's exception as seen, logging any that is not a cancellation."""
    if not task.cancelled() and (exc := task.exception()) is not None and not isinstance(exc, LeaderElectionLost):
        log.error("leader election child task failed", task=task.get_name(), error=repr(exc))
