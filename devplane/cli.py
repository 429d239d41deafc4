"""``karmada-devplane``: the local Karmada-compatible control plane.

Subcommands: ``apiserver`` (one bare API server with Karmada's CRDs), ``up`` (a host API
server plus N member API servers running the Karmada and member simulations, with kubeconfigs
as hack/local-up-karmada.sh writes them), ``demo`` (the user's documents, end to end) and
``ctl`` (the karmadactl steps of the documents).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import anyio
import structlog

from sharedcli.flagtypes import boolean, duration, port, positive_duration, positive_int
from sharedcli.gcpolicy import tune_for_large_heap
from sharedcli.logs import configure_logging

from .apiserver.auth import validate_authorization_mode
from .apiserver.authn import TokenFileError, load_token_file
from .apiserver.server import DEFAULT_WATCH_HISTORY, ApiServer, ApiServerConfig
from .config import ConfigError, load_config, member_shapes
from .ctl import add_ctl_parser, run_ctl
from .demo import DEMOS, run_demo
from .kubeconfig import write_kubeconfig
from .plane import HOST_CONTEXT, DevPlane, PlaneOptions, new_admin_token, secured

log = structlog.get_logger("karmada-devplane")


def authorization_mode(text: str) -> str:
    """kube's ``--authorization-mode``, limited to the modes served here."""
    try:
        return validate_authorization_mode(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


FEATURE_GATES = {"SchedulingOvercommitProtection": False}
"""The karmada-scheduler feature gates the simulation models, with Karmada's defaults (``pkg/features``)."""


def feature_gates(text: str) -> dict[str, bool]:
    """``--feature-gates`` as component-base parses it: ``Name=true|false`` pairs, comma separated; an unknown
    gate or a value that is not a boolean is an error. Gates not named keep their defaults."""
    gates = dict(FEATURE_GATES)
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise argparse.ArgumentTypeError(f"missing bool value for {name}")
        if name not in FEATURE_GATES:
            raise argparse.ArgumentTypeError(f"unrecognized feature gate: {name}")
        try:
            gates[name] = boolean(raw.strip())
        except (argparse.ArgumentTypeError, ValueError):
            raise argparse.ArgumentTypeError(f"invalid value of {name}={raw.strip()}, err: invalid syntax") from None
    return gates


def _add_security_flags(parser: argparse.ArgumentParser, scope: str) -> None:
    parser.add_argument("--token-auth-file", type=Path, default=None, metavar="FILE",
                        help=f"{scope}: bearer tokens, CSV token,user,uid[,\"group1,group2\"] "
                             "(default: no authentication)")
    parser.add_argument("--authorization-mode", type=authorization_mode, default="AlwaysAllow",
                        metavar="AlwaysAllow|RBAC", help=f"{scope}: how requests are authorized (default AlwaysAllow)")


def _check_token_file(command: str, path: Path | None) -> None:
    """A malformed token file is a bad flag value: one line, exit 2, before anything starts."""
    if path is None:
        return
    try:
        load_token_file(path)
    except TokenFileError as exc:
        print(f"karmada-devplane {command}: error: --token-auth-file: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def _add_restart_flags(parser: argparse.ArgumentParser) -> None:
    """Windows that reproduce what kube-apiserver answers just after a restart (docs/apiserver.md)."""
    parser.add_argument("--starting-window", type=duration, default=0.0, metavar="DURATION",
                        help="when started on a --data-dir that holds data: answer every request but /livez and "
                             "/healthz with kube's 503 \"server is starting\" (Retry-After: 10) for this long, "
                             "/readyz with 500 (default 0s: off)")
    parser.add_argument("--crd-unserved-window", type=duration, default=0.0, metavar="DURATION",
                        help="after --starting-window, answer the paths of CRD-served groups (/apis/<group>/...) "
                             "with text/plain \"404 page not found\" for this long, as kube does while its CRD "
                             "handler starts; built-in resources answer normally (default 0s: off)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="karmada-devplane", description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--logging-format", choices=("text", "json"), default="text")
    parser.add_argument("-v", "--v", dest="verbosity", type=int, default=0, help="log verbosity (klog-style)")
    sub = parser.add_subparsers(dest="command", required=True)

    api = sub.add_parser("apiserver", help="serve one API server with Karmada's CRDs installed")
    api.add_argument("--port", type=port, default=0, help="port on 127.0.0.1 (0 = any free port)")
    api.add_argument("--data-dir", type=Path, default=None, help="SQLite storage folder (default: in memory)")
    api.add_argument("--kubeconfig", type=Path, default=None, help="write a kubeconfig for it here")
    api.add_argument("--watch-history", type=positive_int, default=DEFAULT_WATCH_HISTORY,
                     help="watch events kept per resource type; older resourceVersions get 410 Expired")
    api.add_argument("--no-karmada", action="store_true", help="serve a plain Kubernetes API (no Karmada CRDs)")
    _add_security_flags(api, "the API server")
    _add_restart_flags(api)

    up = sub.add_parser("up", help="serve the host and member API servers and the simulations until interrupted")
    up.add_argument("--members", type=positive_int, default=None,
                    help="number of member clusters (default: 3, or every member of --config)")
    up.add_argument("--kubeconfig-dir", type=Path, default=Path(".devplane/kube"))
    up.add_argument("--data-dir", type=Path, default=None, help="SQLite storage root (default: in memory)")
    up.add_argument("--config", type=Path, default=None,
                    help="member shapes (YAML: members[].nodes[].allocatable); default: see devplane/config.py")
    up.add_argument("--enable-scheduler-estimator", type=boolean, nargs="?", const=True, default=False,
                    help="the scheduler also asks the accurate estimator (member Nodes and Pods) (default false)")
    up.add_argument("--scheduler-estimator-timeout", type=positive_duration, default=3.0,
                    help="how long to wait for a member's estimate (default 3s)")
    up.add_argument("--cluster-status-update-frequency", type=positive_duration, default=10.0,
                    help="how often Cluster status is refreshed from the members (default 10s)")
    up.add_argument("--graceful-eviction-timeout", type=positive_duration, default=600.0,
                    help="how long an evicted cluster keeps its workload at most (default 10m0s)")
    up.add_argument("--watch-history", type=positive_int, default=DEFAULT_WATCH_HISTORY)
    up.add_argument("--feature-gates", type=feature_gates, default=dict(FEATURE_GATES), metavar="Name=true|false,...",
                    help="karmada-scheduler's feature gates the simulation models: SchedulingOvercommitProtection "
                         "(ALPHA - default=false)")
    _add_security_flags(up, "the host API server (members are unchanged)")

    demo = sub.add_parser("demo", help="play the user's documents end to end and check every outcome")
    demo.add_argument("document", nargs="?", choices=(*DEMOS, "all"), default="all",
                      help="one demo, or all: the rebalancer and descheduler documents (default all)")
    demo.add_argument("--workdir", type=Path, default=None,
                      help="keep the manifests, kubeconfigs and product logs here (default: a temporary folder)")

    add_ctl_parser(sub)
    return parser


def _stop_signals() -> AbstractContextManager[AsyncIterator[int]]:
    """SIGINT/SIGTERM, caught from before startup: one arriving just after "ready" is printed
    must still mean a clean stop (exit 0), not Python's default KeyboardInterrupt or death."""
    return anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM)


async def _wait_for_signal(signals: AsyncIterator[int]) -> None:
    async for signum in signals:
        log.info("stopping", signal=signal.Signals(signum).name)
        return


def apiserver_config(args: argparse.Namespace) -> ApiServerConfig:
    """The ``apiserver`` command's flags as a server configuration."""
    tls = secured(args.token_auth_file, args.authorization_mode)
    admin = new_admin_token() if tls and args.kubeconfig else {}  # the kubeconfig's user, as `up` does
    return ApiServerConfig(port=args.port, data_dir=args.data_dir, watch_history=args.watch_history,
                           karmada=not args.no_karmada, token_auth_file=args.token_auth_file,
                           authorization_mode=args.authorization_mode, extra_tokens=admin, tls=tls,
                           starting_window=args.starting_window, crd_unserved_window=args.crd_unserved_window)


async def run_apiserver(args: argparse.Namespace) -> None:
    config = apiserver_config(args)
    admin = config.extra_tokens
    with _stop_signals() as signals:
        async with contextlib.AsyncExitStack() as stack:
            try:
                server = await stack.enter_async_context(ApiServer(config))
            except OSError as exc:  # the port taken: one line, as the products say it, not a traceback
                if exc.errno != errno.EADDRINUSE:
                    raise
                why = os.strerror(exc.errno)
                print(f"karmada-devplane apiserver: error: cannot listen on 127.0.0.1:{args.port} (--port): {why}",
                      file=sys.stderr)
                raise SystemExit(1) from None
            if args.kubeconfig:
                write_kubeconfig(args.kubeconfig, {HOST_CONTEXT: server.url}, HOST_CONTEXT,
                                 {HOST_CONTEXT: next(iter(admin), "")}, {HOST_CONTEXT: server.ca_pem})
            print(f"apiserver ready at {server.url}", flush=True)
            await _wait_for_signal(signals)


async def run_up(args: argparse.Namespace) -> None:
    try:
        configured = load_config(args.config) if args.config else None
    except ConfigError as exc:  # a bad flag value: exit 2 with a one-line reason, before anything starts
        print(f"karmada-devplane up: error: --config: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    options = PlaneOptions(
        members=member_shapes(args.members if args.members is not None or configured else 3, configured),
        data_dir=args.data_dir, watch_history=args.watch_history,
        enable_scheduler_estimator=args.enable_scheduler_estimator,
        scheduler_estimator_timeout=args.scheduler_estimator_timeout,
        cluster_status_update_frequency=args.cluster_status_update_frequency,
        graceful_eviction_timeout=args.graceful_eviction_timeout,
        token_auth_file=args.token_auth_file, authorization_mode=args.authorization_mode,
        scheduling_overcommit_protection=args.feature_gates["SchedulingOvercommitProtection"])
    with _kubeconfig_dir_lock(args.kubeconfig_dir), _stop_signals() as signals:
        async with DevPlane(options) as plane:
            plane.write_kubeconfigs(args.kubeconfig_dir)
            kube = args.kubeconfig_dir.resolve()
            print(f"devplane ready: {HOST_CONTEXT} at {plane.host.url}, {len(plane.members)} members "
                  f"({', '.join(plane.members)}); "
                  f"export KUBECONFIG={kube}/karmada.config:{kube}/members.config", flush=True)
            await _wait_for_signal(signals)


@contextlib.contextmanager
def _kubeconfig_dir_lock(directory: Path) -> Iterator[None]:
    """Hold ``directory``'s lock while the plane runs: a second ``up`` on the same directory would overwrite the
    kubeconfigs of the first, leaving it running but unreachable. The lock goes with the process (flock)."""
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"karmada-devplane up: error: a dev plane is already running with its kubeconfigs in {directory}; "
                  "stop it first, or give this one another --kubeconfig-dir", file=sys.stderr)
            raise SystemExit(2) from None
        yield


async def run_demo_command(args: argparse.Namespace) -> int:
    with _stop_signals() as signals:
        async with anyio.create_task_group() as group:
            outcome: list[int] = []

            async def play() -> None:
                outcome.append(await run_demo(args.document, workdir=args.workdir))
                group.cancel_scope.cancel()

            async def interrupted() -> None:
                await _wait_for_signal(signals)
                outcome.append(130)
                group.cancel_scope.cancel()

            group.start_soon(play)
            group.start_soon(interrupted)
    return outcome[0] if outcome else 1


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("apiserver", "up"):
        _check_token_file(args.command, args.token_auth_file)
        tune_for_large_heap()
    if args.command == "demo":
        configure_logging(args.logging_format, args.verbosity if args.verbosity else -1)
    else:
        configure_logging(args.logging_format, args.verbosity)
    try:
        if args.command == "ctl":
            return anyio.run(run_ctl, args, backend="asyncio")
        if args.command == "demo":
            return anyio.run(run_demo_command, args, backend="asyncio")
        runner = {"apiserver": run_apiserver, "up": run_up}[args.command]
        anyio.run(runner, args, backend="asyncio")
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
