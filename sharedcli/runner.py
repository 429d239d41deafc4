"""Running a component as a process: its manager from the flags, logging, signals, exit codes.

The part of Karmada's ``cmd/*/app`` every component repeats, written once: each component's
``main`` builds its manager with :func:`new_manager` and ends in :func:`run_component`.
SIGTERM/SIGINT start a graceful shutdown (drain, release the lease, exit 0); a lost lease exits 1,
as Karmada's components do ("leaderelection lost"); a configuration error found at start exits 2.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable

import anyio
import structlog

from controller_manager.client import KubeClient
from controller_manager.leaderelection import LeaderElectionConfig, LeaderElectionLost, default_identity
from controller_manager.manager import ComponentFailed, Manager, ManagerOptions

from .gcpolicy import tune_for_large_heap
from .logs import configure_logging
from .options import CommonOptions

log = structlog.get_logger(__name__)

__all__ = ["EXIT_CONFIG", "EXIT_FAILED", "EXIT_LEASE_LOST", "EXIT_OK", "ConfigError", "leader_election_config",
           "new_manager", "run_component"]

EXIT_OK = 0
EXIT_LEASE_LOST = 1
EXIT_CONFIG = 2
EXIT_FAILED = 1


class ConfigError(Exception):
    """A problem with the configuration found at start (bad kubeconfig...): exit code 2."""


async def new_manager(component: str, options: CommonOptions, *, lease_name: str = "", master: str = "",
                      cache_sync_timeout: float = 120.0) -> Manager:
    """The API client, leader election and manager a component starts from.

    ``master`` overrides the kubeconfig's server (Karmada's ``--master``); the Lease is named
    ``lease_name`` (default: the component) in ``--leader-elect-resource-namespace``.
    Raises ConfigError (exit code 2) for an unusable kubeconfig or election timings.
    """
    if options.kubeconfig and not await anyio.Path(options.kubeconfig).exists():
        raise ConfigError(f"--kubeconfig {options.kubeconfig}: no such file")
    try:
        client = await KubeClient.from_kubeconfig(options.kubeconfig or None, qps=options.kube_api_qps,
                                                  burst=options.kube_api_burst)
    except Exception as exc:
        if options.kubeconfig:
            raise ConfigError(f"cannot load kubeconfig {options.kubeconfig!r}: {exc}") from exc
        paths = [await anyio.Path(p).expanduser()
                 for p in (os.environ.get("KUBECONFIG") or "~/.kube/config").split(os.pathsep) if p]
        default = os.pathsep.join(str(p) for p in paths)
        if not [p for p in paths if await p.exists()]:
            raise ConfigError(f"no --kubeconfig given, not running in a cluster (no service account), and no "
                              f"kubeconfig at {default}") from exc
        raise ConfigError(f"no --kubeconfig given and not running in a cluster (no service account); the "
                          f"kubeconfig at {default} cannot be used: {exc}") from exc
    if master:
        client.api_client.configuration.host = master
    election = None
    if options.leader_elect:
        election = leader_election_config(options, lease_name or component)
        try:
            election.validate()
        except ValueError as exc:
            await client.close()
            raise ConfigError(str(exc)) from exc
    return Manager(client, ManagerOptions(
        name=component, metrics_bind_address=options.metrics_bind_address,
        health_probe_bind_address=options.health_probe_bind_address, leader_election=election,
        cache_sync_timeout=cache_sync_timeout))


def leader_election_config(options: CommonOptions, lease_name: str) -> LeaderElectionConfig:
    """The election the ``--leader-elect-*`` flags describe, for the Lease ``lease_name`` (not validated)."""
    return LeaderElectionConfig(
        lease_name=lease_name, namespace=options.leader_namespace, identity=default_identity(),
        lease_duration=options.lease_duration, renew_deadline=options.renew_deadline,
        retry_period=options.retry_period)


def run_component(name: str, options: CommonOptions, build: Callable[[], Awaitable[Manager]]) -> int:
    """Configure logging, build the manager, run it until a signal; return the exit code."""
    configure_logging(options.logging_format, options.verbosity)
    tune_for_large_heap()  # informer caches are a large heap: see gcpolicy
    return anyio.run(_run, name, build)


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
    manager.request_shutdown()  # before the log line: nothing may stand between a signal and the shutdown
    log.info("shutdown requested", signal=signal.Signals(signum).name)
