"""What a restarting or busy API server answers is retried, never reported as the command's result.

kube-apiserver answers 429 when it throttles, 5xx while it restarts or when a request times out (504: the
write may still land), a text/plain 404 while its custom-resource handler is not serving yet, and drops
connections when it stops. None of them says anything about the request: :func:`retrying` sends it again after
a backoff (longer when the server asked for a pause with ``Retry-After``), bounded by the caller's deadline.
Only a permanent answer (400, 403, 404 naming the object, 409 AlreadyExists, 422...) ends the command.

A create is not idempotent: one whose answer was lost (a 504, a dropped connection) may have been stored. So
:func:`create` sends every rebalancer under a name of its own (it picks the random suffix of
``generateName: rebalance-`` itself) and a :data:`CREATE_ID_LABEL` unique to it: a later attempt that meets
``409 AlreadyExists`` reads the object, and one carrying its label is the earlier attempt's, not a second move.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import anyio

from controller_manager import objects
from controller_manager.apierrors import MAX_RETRY_AFTER_SECONDS, ApiError
from controller_manager.client import KubeClient
from controller_manager.objects import Obj
from karmada_api.resources import WORKLOAD_REBALANCERS

from .errors import CommandError

T = TypeVar("T")

TRANSIENT_STATUSES = frozenset({410, 429, 500, 502, 503, 504})
FIRST_PAUSE = 0.5
"""Seconds before the first retry; doubled after each failure up to :data:`MAX_PAUSE`."""
MAX_PAUSE = 10.0

CREATE_ID_LABEL = "rebalance.karmada-rebalance.io/create-id"
"""On each rebalancer the command creates: a random id of that create, to recognize it after a lost answer."""
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
"""The alphabet of kube-apiserver's generateName suffixes (``k8s.io/apimachinery/pkg/util/rand``)."""
NAME_SUFFIX_LENGTH = 5
STORED_CHECK_SECONDS = 5.0
"""How long the read that checks whether a given-up create was stored all the same may take."""


def transient(exc: BaseException) -> bool:
    """An error the command outlives: the server restarting or overloaded, a conflict, an expired watch, a
    resource not served yet, a dropped or timed-out connection."""
    if isinstance(exc, ApiError):
        return exc.status in TRANSIENT_STATUSES or exc.is_not_served or exc.is_conflict
    return isinstance(exc, (aiohttp.ClientError, OSError, TimeoutError))


@dataclass
class Backoff:
    """Pauses between retries: :data:`FIRST_PAUSE` doubling to :data:`MAX_PAUSE`, and at least what the server
    asked for (``Retry-After``); ``last`` is the latest transient error, for the message of a caller that gives up."""

    pause: float = field(default_factory=lambda: FIRST_PAUSE)
    last: BaseException | None = None

    def next(self, exc: BaseException) -> float:
        self.last = exc
        wait = self.pause
        self.pause = min(MAX_PAUSE, self.pause * 2)
        asked = exc.retry_after if isinstance(exc, ApiError) else None
        return max(wait, min(asked, MAX_RETRY_AFTER_SECONDS)) if asked is not None else wait


async def retrying(operation: Callable[[], Awaitable[T]], backoff: Backoff | None = None) -> T:
    """``operation`` until it succeeds or fails for good (its error is raised); a transient failure is retried
    after a pause. Never gives up by itself: the caller's cancel scope bounds it."""
    backoff = backoff or Backoff()
    while True:
        try:
            return await operation()
        except Exception as exc:
            if not transient(exc):
                raise
            pause = backoff.next(exc)
        await anyio.sleep(pause)


class CreateGaveUp(CommandError):
    """The API server did not take a create within the command's bound (exit 1)."""


def _suffixed(prefix: str) -> str:
    return prefix + "".join(secrets.choice(NAME_CHARS) for _ in range(NAME_SUFFIX_LENGTH))


def identified(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as the command sends it: with a name (``generateName`` plus a random suffix, as the server would
    pick; ``generateName`` stays, as the server keeps it) and a :data:`CREATE_ID_LABEL` of its own."""
    metadata = dict(body["metadata"])
    if not metadata.get("name"):
        metadata["name"] = _suffixed(str(metadata.get("generateName") or ""))
    metadata["labels"] = {**(metadata.get("labels") or {}), CREATE_ID_LABEL: secrets.token_hex(16)}
    return {**body, "metadata": metadata}


async def create(client: KubeClient, body: dict[str, Any], *, within: float, bound: str,
                 notice: Callable[[str], object] | None = None) -> dict[str, Any]:
    """Create the rebalancer ``body``, retrying transient answers for at most ``within`` seconds (this create's
    own bound, not shared with the others; ``bound`` says what set it, as ``--timeout 10m0s``, for the message);
    the rebalancer as stored.

    A ``409 AlreadyExists`` after an attempt that may have been stored is that attempt's rebalancer when it
    carries this create's :data:`CREATE_ID_LABEL`; another one by that name is the error it is (for a name the
    command picked, a new suffix is picked instead). When the bound passes, the last attempt may still have been
    stored (its answer lost, or cut by the bound): one read by name settles it, and CreateGaveUp says what is
    known. ``notice`` gets one line the first time the resource is not served (a server starting, or no CRD).
    """
    sent = identified(body)
    picked = not body["metadata"].get("name")
    noticed = False

    async def attempt() -> dict[str, Any]:
        nonlocal sent, noticed
        try:
            created = await client.create(WORKLOAD_REBALANCERS, sent)
            return created
        except ApiError as exc:
            if exc.is_not_served and notice is not None and not noticed:
                noticed = True
                notice(f"the API server does not serve {WORKLOAD_REBALANCERS.key} "
                       f"right now (starting, or Karmada's WorkloadRebalancer CRD is not installed); retrying for up "
                       f"to {bound}")
            if not exc.is_already_exists:
                raise
            # even on the first attempt: the client itself repeats a write the server asked to retry later
            earlier = await _earlier_attempt(client, sent)
            if earlier is not None:
                return earlier
            if not picked:
                raise
        taken, sent = objects.name(sent), identified(body)  # as kube-apiserver does for generateName: another
        raise ApiError(409, "Conflict", f"the generated name {taken} is taken")  # retried, under the new name

    backoff = Backoff()
    with anyio.move_on_after(within):
        return await retrying(attempt, backoff)
    last = f": {describe(backoff.last)}" if backoff.last is not None else ""
    name = objects.name(sent)
    try:
        with anyio.fail_after(STORED_CHECK_SECONDS):
            stored = await _earlier_attempt(client, sent)
    except Exception:  # unreadable too: say so rather than guess either way
        raise CreateGaveUp(f"gave up creating workloadrebalancer {name} within {bound}{last}; it may have been "
                           f"stored all the same: check with `karmada-rebalance status {name}` before running the "
                           "command again") from None
    if stored is not None:
        return stored
    raise CreateGaveUp(f"gave up creating workloadrebalancer {name} within {bound}{last}")


async def _earlier_attempt(client: KubeClient, sent: Obj) -> dict[str, Any] | None:
    """The rebalancer by ``sent``'s name if an earlier attempt of this create stored it (its label says so)."""
    existing = await client.get_or_none(WORKLOAD_REBALANCERS, objects.name(sent))
    mark = objects.labels(sent)[CREATE_ID_LABEL]
    return existing if existing is not None and objects.labels(existing).get(CREATE_ID_LABEL) == mark else None


def describe(exc: BaseException) -> str:
    """A transient error, for a message: the API server's answer, or why it could not be reached."""
    if isinstance(exc, ApiError):
        return f"the API server answered {exc.status} {exc.reason}: {exc.message}"
    return f"cannot reach the API server: {exc or type(exc).__name__}"
