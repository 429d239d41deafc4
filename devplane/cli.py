"""``karmada-devplane``: the local Karmada-compatible control plane.

Subcommands: ``apiserver`` (one bare API server with Karmada's CRDs) and ``up`` (a host API
server plus N member API servers, with kubeconfigs as hack/local-up-karmada.sh writes them).
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path

import anyio
import structlog

from controller_manager.logging import configure_logging
from controller_manager.options import port, positive_int

from .apiserver.server import DEFAULT_WATCH_HISTORY, ApiServer, ApiServerConfig
from .kubeconfig import write_kubeconfig

log = structlog.get_logger("karmada-devplane")

HOST_CONTEXT = "karmada-apiserver"


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

    up = sub.add_parser("up", help="serve the host and member API servers until interrupted")
    up.add_argument("--members", type=positive_int, default=3)
    up.add_argument("--kubeconfig-dir", type=Path, default=Path(".devplane/kube"))
    up.add_argument("--data-dir", type=Path, default=None, help="SQLite storage root (default: in memory)")
    up.add_argument("--watch-history", type=positive_int, default=DEFAULT_WATCH_HISTORY)
    return parser


def _stop_signals() -> AbstractContextManager[AsyncIterator[int]]:
    """SIGINT/SIGTERM, caught from before startup: one arriving just after "ready" is printed
    must still mean a clean stop (exit 0), not Python's default KeyboardInterrupt or death."""
    return anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM)


async def _wait_for_signal(signals: AsyncIterator[int]) -> None:
    async for signum in signals:
        log.info("stopping", signal=signal.Signals(signum).name)
        return


async def run_apiserver(args: argparse.Namespace) -> None:
    config = ApiServerConfig(port=args.port, data_dir=args.data_dir, watch_history=args.watch_history,
                             karmada=not args.no_karmada)
    with _stop_signals() as signals:
        async with ApiServer(config) as server:
            if args.kubeconfig:
                write_kubeconfig(args.kubeconfig, {HOST_CONTEXT: server.url}, HOST_CONTEXT)
            print(f"apiserver ready at {server.url}", flush=True)
            await _wait_for_signal(signals)


async def run_up(args: argparse.Namespace) -> None:
    def data(name: str) -> Path | None:
        return args.data_dir / name if args.data_dir else None

    host = ApiServer(ApiServerConfig(data_dir=data("host"), watch_history=args.watch_history,
                                     extra_namespaces=("karmada-system", "karmada-cluster")))
    members = [ApiServer(ApiServerConfig(data_dir=data(f"member{i}"), watch_history=args.watch_history,
                                         karmada=False)) for i in range(1, args.members + 1)]
    with _stop_signals() as signals:
        async with host:
            started: list[ApiServer] = []
            try:
                for member in members:
                    await member.start()
                    started.append(member)
                write_kubeconfig(args.kubeconfig_dir / "karmada.config", {HOST_CONTEXT: host.url}, HOST_CONTEXT)
                member_urls = {f"member{i}": m.url for i, m in enumerate(members, start=1)}
                write_kubeconfig(args.kubeconfig_dir / "members.config", member_urls, "member1")
                kube = args.kubeconfig_dir.resolve()
                print(f"devplane ready: {HOST_CONTEXT} at {host.url}, {len(members)} members; "
                      f"export KUBECONFIG={kube}/karmada.config:{kube}/members.config", flush=True)
                await _wait_for_signal(signals)
            finally:
                for member in reversed(started):
                    await member.stop()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_logging(args.logging_format, args.verbosity)
    runner = {"apiserver": run_apiserver, "up": run_up}[args.command]
    try:
        anyio.run(runner, args, backend="asyncio")
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
