"""What a restarted kube-apiserver answers before it serves normally.

Observed on kube-apiserver v1.20.2 + etcd after SIGKILL and restart (``kube-apiserver-observed.md``,
"Restart of kube-apiserver"): once the port is open, every request first gets a 503 "server is
starting" Status for a moment, then the paths of custom resources answer Go's plain-text
``404 page not found`` for another moment (the CRD handler is not serving them yet) while built-in
resources already answer. Clients must ride out both; this module lets the dev server reproduce them.

The windows are measured on the monotonic clock from when they start. ``Api`` holds a
:class:`StartupWindows` only while they last, so a server without them pays one attribute check.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable

from aiohttp import web

from .errors import StatusError
from .resources import Registry

RETRY_AFTER_SECONDS = 10
LIVENESS_PATHS = ("/livez", "/healthz")  # answered normally throughout: the process is alive
READYZ_PATH = "/readyz"
# kube's healthz handler lists every check, passed or not; an abridged list for a server still starting.
_READYZ_CHECKS = (
    ("ping", True), ("log", True), ("etcd", True), ("informer-sync", False),
    ("poststarthook/start-apiextensions-controllers", False), ("poststarthook/crd-informer-synced", False),
    ("poststarthook/rbac/bootstrap-roles", False),
)


class Phase(enum.Enum):
    STARTING = "starting"  # 503 "server is starting" for everything but liveness
    CRDS_UNSERVED = "crds-unserved"  # text/plain 404 on the paths of CRD-served groups
    SERVING = "serving"


def server_starting() -> StatusError:
    """kube's exact 503; its ``retryAfterSeconds`` also becomes a ``Retry-After`` header."""
    return StatusError(503, "ServiceUnavailable", "server is starting", {"retryAfterSeconds": RETRY_AFTER_SECONDS})


def readyz_not_ready() -> web.Response:
    """kube's healthz handler on failure: every check listed (reasons withheld), then the verdict, as 500."""
    lines = [f"[+]{name} ok" if passed else f"[-]{name} failed: reason withheld" for name, passed in _READYZ_CHECKS]
    body = "\n".join(lines) + "\nreadyz check failed\n"
    return web.Response(text=body, status=500, content_type="text/plain",
                        headers={"X-Content-Type-Options": "nosniff"})


def crd_served_group(path: str, registry: Registry) -> bool:
    """Whether ``path`` is under ``/apis/<group>`` of a group served by CustomResourceDefinitions."""
    parts = path.split("/", 4)  # "", "apis", group, ...
    if len(parts) < 3 or parts[1] != "apis" or not parts[2]:
        return False
    group = parts[2]
    return any(rtype.crd_name for rtype in registry if rtype.group == group)


class StartupWindows:
    """The two windows, back to back from the moment of creation."""

    def __init__(self, starting: float, crd_unserved: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if starting < 0 or crd_unserved < 0:
            raise ValueError("startup windows must not be negative")
        self._clock = clock
        self.starting_until = clock() + starting
        self.crd_unserved_until = self.starting_until + crd_unserved

    def phase(self) -> Phase:
        now = self._clock()
        if now < self.starting_until:
            return Phase.STARTING
        if now < self.crd_unserved_until:
            return Phase.CRDS_UNSERVED
        return Phase.SERVING

    @staticmethod
    def while_starting(path: str) -> web.Response | None:
        """The answer during the 503 window: None (serve it) for liveness, 500 for readiness, else raise 503."""
        path = path.rstrip("/") or "/"
        if path in LIVENESS_PATHS:
            return None
        if path == READYZ_PATH:
            return readyz_not_ready()
        raise server_starting()
