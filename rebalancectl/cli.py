"""``karmada-rebalance``: the flags, the two commands and the exit codes.

Exit codes: 0 success; 2 bad flags or an empty selection (one line on stderr saying why); 1 an API
error (kube's Status message) or an unreachable server; 3 a wave of ``--max-concurrent`` held back (a
workload not healthy within ``--progress-deadline``, or failed).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, TextIO

import aiohttp
import anyio
import anyio.to_thread

from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.resource import InvalidName
from sharedcli.flagtypes import (
    format_duration,
    object_name,
    positive_duration,
    positive_int,
    ttl_after_finished,
)

from . import create, kubeconfig, status
from .discovery import Discovered
from .errors import CommandError, UsageError, WaveHeldBack
from .output import FORMATS, mode_line, render, render_waves, result_rows, summary, table, wave_line
from .progname import PROG, program_name
from .rollout import WaveRunner, targets
from .selection import Selection
from .waves import Wave

DEFAULT_TTL = 1800.0
DEFAULT_TIMEOUT = 600.0
DEFAULT_PROGRESS_DEADLINE = 600.0


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (``karmada-rebalance create: error: ...``) and exit 2."""

    def error(self, message: str) -> NoReturn:
        raise FlagError(f"{self.prog}: error: {message}")


class FlagError(UsageError):
    """An argparse error, already worded as its one line."""


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """``prog``: the name it was invoked by (``kubectl karmada-rebalance`` as a kubectl plugin)."""
    parser = _Parser(prog=prog, description="Create Karmada WorkloadRebalancers for a selection of workloads.")
    _add_connection_flags(parser, default="")
    # as with kubectl, --kubeconfig and --context may also follow the command; there they only
    # override what was given before it (SUPPRESS: an absent flag leaves the earlier value)
    connection = _Parser(add_help=False)
    _add_connection_flags(connection, default=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    new = sub.add_parser("create", parents=[connection], help="create WorkloadRebalancers for the selected workloads")
    new.add_argument("name", nargs="?", default=None, type=object_name,
                     help="the rebalancer's name (default: rebalance- and a random suffix)")
    scope = new.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", default="",
                       help="the namespace (default: --policy's, every one for --cluster-policy, else the context's, "
                            "else default)")
    scope.add_argument("-A", "--all-namespaces", action="store_true",
                       help="every namespace, and the cluster-scoped templates of ClusterResourceBindings")
    new.add_argument("-l", "--selector", default="", help="label selector on the resource templates (app=web,tier!=db)")
    new.add_argument("--kind", action="append", default=[],
                     help="apps/v1/Deployment, Deployment.apps or a resource name (deploy); repeatable, ORed")
    new.add_argument("--cluster", default="",
                     help="workloads with replicas on this cluster, or that should be back on it")
    policies = new.add_mutually_exclusive_group()
    policies.add_argument("--policy", default="",
                          help="NAMESPACE/NAME of a PropagationPolicy: the templates it propagated")
    policies.add_argument("--cluster-policy", default="",
                          help="a ClusterPropagationPolicy: the templates it propagated")
    new.add_argument("--ttl", type=ttl_after_finished, default=DEFAULT_TTL,
                     help="ttlSecondsAfterFinished as a Go duration; 0 keeps the rebalancers (default 30m0s)")
    new.add_argument("--preserve-available-replicas", action="store_true",
                     help="move only the replicas confirmed unschedulable, keep the others where they run "
                          "(karmada-io/karmada#7662); needs this project's rebalancer controller with preserve "
                          "mode on, see docs/karmada-rebalance.md")
    new.add_argument("--max-per-rebalancer", type=positive_int, default=100,
                     help="workloads per rebalancer; more make several rebalancers (default 100)")
    new.add_argument("--max-concurrent", type=positive_int, default=None, metavar="N",
                     help="create the rebalancers in waves of N workloads, each once the previous wave's workloads "
                          "are healthy again (default: all at once)")
    new.add_argument("--progress-deadline", type=positive_duration, default=None, metavar="D",
                     help="with --max-concurrent: how long a wave may take to become healthy; then stop and exit 3 "
                          "(default 10m0s)")
    new.add_argument("--dry-run", action="store_true", help="print the rebalancers (YAML unless -o), write nothing")
    _add_wait_flags(new)
    new.add_argument("-o", "--output", choices=FORMATS, default="",
                     help="print the created rebalancers as name|yaml|json")

    show = sub.add_parser("status", parents=[connection], help="the result of each workload of a rebalancer")
    show.add_argument("name", type=object_name, help="the rebalancer's name (as create printed it)")
    return parser


def _add_connection_flags(parser: argparse.ArgumentParser, *, default: str) -> None:
    parser.add_argument("--kubeconfig", default=default,
                        help="the kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    parser.add_argument("--context", default=default, help="the kubeconfig context (default: its current-context)")


def _add_wait_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wait", action="store_true",
                        help="wait until each rebalancer has finished, then print WORKLOAD RESULT REASON (with "
                             "--max-concurrent: also until the last wave is healthy)")
    parser.add_argument("--timeout", type=positive_duration, default=None,
                        help="how long --wait waits, and how long each create is retried while the API server is "
                             "busy or restarting (default 10m0s); with --max-concurrent, a bound on the whole "
                             "command (default none: --progress-deadline bounds each wave)")


def _ttl_seconds(ttl: float) -> int | None:
    """``--ttl 0`` keeps the rebalancers: no ``ttlSecondsAfterFinished``; otherwise whole seconds (at least 1)."""
    if ttl == 0:
        return None
    if ttl != int(ttl):
        raise UsageError(f"--ttl {format_duration(ttl)}: use whole seconds")
    return int(ttl)


async def run_create(client: KubeClient, args: argparse.Namespace, context_namespace: str, out: TextIO,
                     err: TextIO) -> int:
    ttl = _ttl_seconds(args.ttl)
    _check_wave_flags(args)
    namespace = create.namespace_scope(all_namespaces=args.all_namespaces, namespace=args.namespace,
                                       policy=args.policy, cluster_policy=args.cluster_policy,
                                       context_namespace=context_namespace)
    flags = create.CreateFlags(namespace, tuple(args.kind), args.selector, args.cluster, args.policy,
                               args.cluster_policy)
    chosen, criteria = await create.selection(client, flags)
    for text in chosen.unmatched:
        print(f"{args.prog}: {text} matched no workload", file=err)
    if args.max_concurrent is not None:
        plan = create.wave_plan(args.name or "", chosen.workloads, per_wave=args.max_concurrent,
                                size=args.max_per_rebalancer, ttl_seconds=ttl,
                                preserve=args.preserve_available_replicas)
        if args.dry_run:
            out.write(render_waves(plan, args.output or "yaml"))
            return 0
        return await _run_waves(client, plan, chosen, criteria.discovered, args, out=out, err=err)
    objs = create.rebalancers(args.name or "", chosen.workloads, size=args.max_per_rebalancer, ttl_seconds=ttl,
                              preserve=args.preserve_available_replicas)
    if args.dry_run:
        out.write(render(objs, args.output or "yaml"))
        return 0
    created: list[dict[str, Any]] = []
    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    try:  # a busy or restarting API server's answers are retried, within --timeout
        await create.create_all(client, objs, created, retry_for=timeout, bound=f"--timeout {format_duration(timeout)}",
                                notice=lambda line: print(f"{args.prog}: {line}", file=err))
    finally:  # on a failure too: say which rebalancers exist before the error is reported
        if created:
            out.write(render(created, args.output) if args.output else summary(created))
    if args.wait:
        finished = await status.wait_finished(client, [str(o["metadata"]["name"]) for o in created], timeout,
                                              notice=lambda line: print(f"{args.prog}: {line}", file=err))
        out.write(table([row for rebalancer in finished for row in result_rows(rebalancer)]))
    return 0


def _check_wave_flags(args: argparse.Namespace) -> None:
    if args.progress_deadline is not None and args.max_concurrent is None:
        raise UsageError("--progress-deadline needs --max-concurrent")
    if args.wait and args.dry_run:
        raise UsageError("--wait and --dry-run: a dry run creates nothing to wait for")


async def _run_waves(client: KubeClient, plan: list[Wave], chosen: Selection, discovered: Discovered | None,
                     args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Create the waves (see :mod:`rebalancectl.rollout`); the wave lines go to stdout, or to stderr with ``-o``
    (stdout then holds only the rebalancers: names as each wave is created, YAML or JSON once at the end)."""
    deadline = DEFAULT_PROGRESS_DEADLINE if args.progress_deadline is None else args.progress_deadline

    def show(objs: Sequence[dict[str, Any]]) -> None:
        if args.output == "name":
            out.write(render(objs, "name"))
        elif not args.output and objs:
            out.write(summary(objs))

    found = await targets(client, chosen, discovered)
    runner = WaveRunner(client, plan, found, deadline, err if args.output else out, show)
    finished = None
    try:
        with anyio.move_on_after(args.timeout):  # None: no bound on the whole command
            finished = await runner.run(wait_last=args.wait)
    except anyio.get_cancelled_exc_class():  # Ctrl-C: say what exists before the exit
        print(f"{args.prog} create: {runner.stopped('interrupted')}", file=err)
        raise
    finally:
        if args.output in ("yaml", "json") and runner.created:
            out.write(render(runner.created, args.output))
    if finished is None:
        raise CommandError(runner.stopped(f"timed out after {format_duration(args.timeout)}"))
    if args.wait:
        out.write(table([row for rebalancer in finished for row in result_rows(rebalancer)]))
    return 0


async def run_status(client: KubeClient, args: argparse.Namespace, out: TextIO) -> int:
    rebalancer = await status.get(client, args.name)
    out.write(mode_line(rebalancer) + wave_line(rebalancer) + table(result_rows(rebalancer)))
    return 0


async def run(args: argparse.Namespace, out: TextIO, err: TextIO, environ: Mapping[str, str]) -> int:
    target = await anyio.to_thread.run_sync(kubeconfig.load, args.kubeconfig, args.context, environ)
    client = await kubeconfig.connect(target)
    try:
        if args.command == "create":
            return await run_create(client, args, target.namespace, out, err)
        return await run_status(client, args, out)
    finally:
        await client.close()


async def execute(argv: Sequence[str], out: TextIO, err: TextIO, environ: Mapping[str, str],
                  prog: str = PROG) -> int:
    """The whole command: parse, run, and map each failure to its exit code and one line on ``err``."""
    try:
        args = build_parser(prog).parse_args(argv)
        args.prog = prog  # the name the messages give: `kubectl karmada-rebalance` as the plugin
    except FlagError as exc:
        print(exc, file=err)
        return 2
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0)
    try:
        return await run(args, out, err, environ)
    except UsageError as exc:
        print(f"{prog} {args.command}: error: {exc}", file=err)
        return 2
    except WaveHeldBack as exc:
        print(f"{prog} {args.command}: error: {exc}", file=err)
        return 3
    except ApiError as exc:
        print(f"Error from server ({exc.reason or exc.status}): {exc.message}", file=err)
        if exc.is_not_served and exc.target is not None:
            print(f"{prog} {args.command}: error: the server does not serve {exc.target.key}: is the context a "
                  "Karmada API server (not a member cluster's)?", file=err)
        return 1
    except InvalidName as exc:  # a name no object can have, refused before it was sent
        print(f"{prog} {args.command}: error: {exc}", file=err)
        return 1
    except CommandError as exc:
        print(f"{prog} {args.command}: error: {exc}", file=err)
        return 1
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        print(f"{prog} {args.command}: error: cannot reach the API server: {exc or type(exc).__name__}", file=err)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return anyio.run(execute, sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr, dict(os.environ),
                         program_name(sys.argv[0]), backend="asyncio")
    except KeyboardInterrupt:
        return 130
