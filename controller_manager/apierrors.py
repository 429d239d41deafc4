"""API errors typed by the answer's ``Status``, and the retries they call for.

Which 404 means "no such object" and which means "not served (yet)", which failed write may have been stored
all the same, how long the server asked to wait, and client-go's RetryOnConflict.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp

from .resource import RequestTarget

T = TypeVar("T")

MAX_RETRY_AFTER_RETRIES = 10  # client-go's default maxRetries for answers that carry Retry-After
MAX_RETRY_AFTER_SECONDS = 60.0  # a server asking for a longer pause is waited for this long, then asked again


class ApiError(Exception):
    """A non-2xx answer, carrying the ``Status`` reason (NotFound, Conflict, AlreadyExists, Invalid...).

    ``target`` is what the request named. A 404 means "this object does not exist" (``is_not_found``)
    only when it is a Status with reason NotFound whose ``details`` name that object (or the namespace
    it is in). Any other 404 (kube-apiserver's text/plain ``404 page not found``, or a Status without
    details) says the *resource* is not served right now: a missing CRD, or an API server that is
    still starting and has not installed its custom-resource handler yet. That is ``is_not_served``,
    and callers treat it as transient, never as a final result.
    """

    def __init__(self, status: int, reason: str, message: str, body: dict[str, Any] | None = None, *,
                 target: RequestTarget | None = None, retry_after: float | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}
        self.target = target
        self.retry_after = retry_after
        self.resent_into_conflict = False
        """A 5xx whose write this client sent again, and a 409 Conflict answered: the write's own, stored after
        all (:meth:`KubeClient.request`)."""

    @classmethod
    def from_body(cls, status: int, raw: bytes, *, target: RequestTarget | None = None,
                  retry_after_header: str | None = None) -> ApiError:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if isinstance(body, dict) and body.get("kind") == "Status":
            error = cls(status, str(body.get("reason") or ""), str(body.get("message") or ""), body, target=target)
        else:
            text = raw.decode("utf-8", "replace").strip()
            reason = {404: "NotFound", 401: "Unauthorized", 403: "Forbidden", 429: "TooManyRequests"}.get(status, "")
            error = cls(status, reason, text[:500], target=target)
        error.retry_after = _retry_after(status, retry_after_header, error.body)
        return error

    @property
    def is_not_found(self) -> bool:
        """The object (or the namespace it is in) does not exist: a Status that names it."""
        return self.status == 404 and self.reason == "NotFound" and _names_target(self.body, self.target)

    @property
    def is_not_served(self) -> bool:
        """A 404 that names no object: the resource is not served right now. Transient; retry with backoff."""
        return self.status == 404 and not self.is_not_found

    @property
    def is_conflict(self) -> bool:
        return self.status == 409 and self.reason == "Conflict"

    @property
    def met_newer_object(self) -> bool:
        """The write met an object newer than the one it was computed from: a 409 Conflict, or a 5xx whose resent
        write met one (its own, stored). Either way, read the object again and decide again."""
        return self.is_conflict or self.resent_into_conflict

    @property
    def is_already_exists(self) -> bool:
        return self.status == 409 and self.reason == "AlreadyExists"

    @property
    def is_invalid(self) -> bool:
        return self.status == 422

    @property
    def is_gone(self) -> bool:
        return self.status == 410

    @property
    def is_forbidden(self) -> bool:
        return self.status == 403


def may_have_landed(exc: BaseException) -> bool:
    """Whether a write that raised ``exc`` may have been stored all the same, so a retry must not take it for undone.

    Any 5xx: kube-apiserver answers 504 when it stops waiting ("may still be processing the request"), 500
    ``ServerTimeout`` or ``InternalError`` when etcd timed out on a write that can still commit, and a proxy in
    front of it a 502 or 503 after passing the request on. A lost answer (a dropped connection, a client timeout).
    Not a refused connection (nothing was sent), and not a 4xx (the server looked at it and refused).
    """
    if isinstance(exc, ApiError):
        return exc.status >= 500
    if isinstance(exc, aiohttp.ClientConnectorError):
        return False
    return isinstance(exc, (aiohttp.ClientError, TimeoutError, OSError))


def _names_target(body: dict[str, Any], target: RequestTarget | None) -> bool:
    """Whether a NotFound Status's ``details`` name what was requested.

    kube-apiserver names the object with its plural resource (``details.kind``, ``deployments/scale``
    for a subresource's own errors), its ``group`` (omitted for the core group) and ``name``; a create
    or list in a missing namespace names the namespace (``kind: namespaces``). Without a target (an
    error made by hand) a Status that names anything counts.
    """
    details = body.get("details")
    if not isinstance(details, dict):
        return False
    kind = str(details.get("kind") or "").lower()
    name = str(details.get("name") or "")
    if target is None:
        return bool(kind or name)
    if kind == "namespaces" and name and name == (target.namespace or
                                                  (target.name if target.resource == "namespaces" else "")):
        return True
    if kind not in (target.resource, f"{target.resource}/{target.subresource}"):
        return False
    group = details.get("group")
    if group is not None and str(group) != target.group:
        return False
    return name == target.name


def _retry_after(status: int, header: str | None, body: dict[str, Any]) -> float | None:
    """Seconds the server asked to wait before the same request (client-go's checkWait): a 429 or a 5xx
    with a ``Retry-After`` header, or a Status whose ``details.retryAfterSeconds`` says so. None: no ask."""
    if status != 429 and status < 500:
        return None
    if header is not None:
        try:
            return max(0.0, float(int(header.strip())))
        except ValueError:
            pass
    details = body.get("details")
    seconds = details.get("retryAfterSeconds") if isinstance(details, dict) else None
    if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds > 0:
        return float(seconds)
    return None


def is_not_found(exc: BaseException) -> bool:
    return isinstance(exc, ApiError) and exc.is_not_found


async def retry_on_conflict(operation: Callable[[], Awaitable[T]], *, steps: int = 5,
                            delay: float = 0.01, jitter: float = 0.1) -> T:
    """client-go's RetryOnConflict(DefaultRetry): re-run ``operation`` (which must re-read) on 409 Conflict, or on
    a 5xx whose resent write met a Conflict (:attr:`ApiError.met_newer_object`), as client-go, seeing that 409,
    would."""
    for attempt in range(steps):
        try:
            return await operation()
        except ApiError as exc:
            if not exc.met_newer_object or attempt == steps - 1:
                raise
        await asyncio.sleep(delay * (1 + jitter * random.random()))
    raise AssertionError("unreachable")


async def retry_on_conflict_unless_gone(operation: Callable[[], Awaitable[T]]) -> T | None:
    """:func:`retry_on_conflict`; None when the object is gone meanwhile (404 NotFound: deleted between the
    read and the write), which ends a read-modify-write with nothing left to write."""
    try:
        return await retry_on_conflict(operation)
    except ApiError as exc:
        if exc.is_not_found:
            return None
        raise
