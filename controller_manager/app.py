"""Running a component as a process: logging, signals, graceful shutdown, exit codes.

Every component's ``main`` ends in :func:`run_component`: SIGTERM/SIGINT start a graceful
shutdown (drain, release the lease, exit 0); a lost lease exits 1, as Karmada's components
do ("leaderelection lost"); a configuration error found at start exits 2.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable

import structlog

from .leaderelection import LeaderElectionLost, default_identity
from .logging import configure_logging
from .manager import ComponentFailed, Manager
from .options import CommonOptions

log = structlog.get_logger(__name__)

__all__ = ["EXIT_CONFIG", "EXIT_FAILED", "EXIT_LEASE_LOST", "EXIT_OK", "ConfigError", "default_identity",
           "run_component"]

EXIT_OK = 0
EXIT_LEASE_LOST = 1
EXIT_CONFIG = 2
EXIT_FAILED = 1


class ConfigError(Exception):
    """A problem with the configuration found at start (bad kubeconfig...): exit code 2."""


def run_component(name: str, options: CommonOptions, build: Callable[[], Awaitable[Manager]]) -> int:
    """Configure logging, build the manager, run it until a signal; return the exit code."""
    configure_logging(options.logging_format, options.verbosity)
    return asyncio.run(_run(name, build))


async def _run(name: str, build: Callable[[], Awaitable[Manager]]) -> int:
    try:
        manager = await build()
    except ConfigError as exc:
        log.error("invalid configuration", component=name, error=str(exc))
        return EXIT_CONFIG
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, _shutdown, manager, signum)
    try:
        await manager.run()
    except LeaderElectionLost as exc:
        log.error("leaderelection lost", component=name, error=str(exc))
        return EXIT_LEASE_LOST
    except ComponentFailed as exc:
        log.error("component failed", component=name, error=str(exc))
        return EXIT_FAILED
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        await manager.client.close()
    log.info("stopped", component=name)
    return EXIT_OK


def _shutdown(manager: Manager, signum: int) -> None:
    """First signal: graceful shutdown. Second: exit 1 at once (controller-runtime's SetupSignalHandler)."""
    if manager.shutdown_requested:
        log.warning("second signal, exiting now", signal=signal.Signals(signum).name)
        os._exit(EXIT_FAILED)
    log.info("shutdown requested", signal=signal.Signals(signum).name)
    manager.request_shutdown()
