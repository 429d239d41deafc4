"""``karmada-descheduler``: every ``--descheduling-interval``, move replicas stuck unschedulable.

Flags keep Karmada's names and defaults (``karmada-descheduler --help``). The estimator is
ours and gRPC-free: it reads each member cluster's Nodes, Pods, ReplicaSets, Deployments and StatefulSets
through the Cluster's ``apiEndpoint`` and ``secretRef``, so the gRPC estimator flags are
accepted (existing configurations keep working) and ignored with a warning.

Beyond Karmada's Deployments, it deschedules StatefulSets, ReplicaSets and the custom kinds an
operator declares in ``--unschedulable-pod-selectors FILE`` (:mod:`estimator.podselectors`); a
file that cannot be used stops the process at start with exit code 2 and one line naming the
file, the entry and why.

Budgets (beyond Karmada, off unless set): ``--max-descheduled-replicas-per-cycle N`` and
``--max-descheduled-replicas-per-workload M`` bound the replicas one cycle moves in total and per
binding (:mod:`descheduler.budget`). A value that is not a positive integer also exits 2 with one line.

The leader-election Lease keeps Karmada's name, ``karmada-descheduler``, on purpose (unlike the
controller-manager's): this program replaces Karmada's descheduler rather than running next to
it, and sharing the Lease makes it impossible for the two to deschedule at the same time. Karmada's
descheduler has no ``--leader-elect-resource-name``, so neither does ``--help`` here (the flag is
accepted, hidden, and the chart does not offer it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import structlog

from clusteraccess.cluster import MEMBER_RBAC_RULES
from clusteraccess.config import HOST_RBAC_RULES
from clusteraccess.registry import MemberRegistry
from controller_manager.leaderelection import lease_rules
from controller_manager.manager import Manager
from controller_manager.rbac import PolicyRule, informer_rules, merge
from estimator.client import EstimatorClient
from estimator.kinds import load_workload_kinds
from estimator.podselectors import PodSelectorsError
from karmada_api.buildinfo import register_build_info, version_subcommand
from karmada_api.resources import CLUSTERS, RESOURCE_BINDINGS
from sharedcli.flagtypes import boolean, duration, port
from sharedcli.options import CommonOptions, add_common_flags, add_lease_name_flag
from sharedcli.runner import EXIT_CONFIG, new_manager, run_component

from .budget import CycleBudget
from .core import CoolDown, default_cool_down
from .loop import RBAC_RULES as LOOP_RULES
from .loop import Descheduler

log = structlog.get_logger("karmada-descheduler")

COMPONENT = "karmada-descheduler"
LEASE_NAME = COMPONENT
"""Karmada's descheduler's Lease: whichever of the two holds it, the other one waits (see the module doc)."""
HEALTH_PORT = 10358
GRPC_ONLY_FLAGS = ("--scheduler-estimator-port", "--scheduler-estimator-service-namespace",
                   "--scheduler-estimator-service-prefix", "--scheduler-estimator-ca-file",
                   "--scheduler-estimator-cert-file", "--scheduler-estimator-key-file",
                   "--insecure-skip-estimator-verify")
BUDGET_FLAGS = ("--max-descheduled-replicas-per-cycle", "--max-descheduled-replicas-per-workload")


def descheduler_rules() -> list[PolicyRule]:
    """Cluster-wide rules (a ClusterRole on the Karmada API server): main()'s informers on bindings and
    Clusters, the cycle's binding writes and events, the member Secrets the estimator reads."""
    return merge(informer_rules(RESOURCE_BINDINGS, CLUSTERS), LOOP_RULES, HOST_RBAC_RULES)


def descheduler_lease_rules() -> list[PolicyRule]:
    """Namespaced rules (a Role in ``--leader-elect-resource-namespace``) for leader election."""
    return lease_rules(LEASE_NAME)


def descheduler_member_rules() -> list[PolicyRule]:
    """Rules in each member cluster for the Cluster Secret's identity (the estimator's informers).

    The kinds declared in ``--unschedulable-pod-selectors`` are known only at run time: the
    operator grants list/watch on them (docs/deploy.md)."""
    return merge(MEMBER_RBAC_RULES)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=COMPONENT, description=(__doc__ or "").splitlines()[0])
    add_common_flags(parser, health_port=HEALTH_PORT)
    add = parser.add_argument
    add("--master", default="", help="The address of the Karmada API server (overrides the kubeconfig's).")
    add("--descheduling-interval", type=duration, default=120.0, metavar="DURATION",
        help="Time interval between two consecutive descheduler executions. (default 2m0s)")
    add("--unschedulable-threshold", type=duration, default=300.0, metavar="DURATION",
        help="The period of pod unschedulable condition; pods pending longer are descheduled. (default 5m0s)")
    add("--scheduler-estimator-timeout", type=duration, default=3.0, metavar="DURATION",
        help="Specifies the timeout period of calling the scheduler estimator service. (default 3s)")
    add("--unschedulable-pod-selectors", default="", metavar="FILE",
        help="A YAML list declaring custom workload kinds and how to find their Pods, e.g. "
             "'- {apiVersion: flink.apache.org/v1beta1, kind: FlinkDeployment, "
             "podSelector: \"app={name},component=taskmanager\"}' (optional 'resource:' plural, default "
             "lower-case kind + 's'). In podSelector, {name}, {namespace} and {label:KEY} become the workload's "
             "name, namespace and label KEY. apps/v1 Deployments, StatefulSets and ReplicaSets need no entry. "
             "The member clusters' tokens must be allowed to list and watch the declared kinds. "
             "An unusable file stops the process with exit code 2.")
    add("--dry-run", type=boolean, nargs="?", const=True, default=False,
        help="Compute and log what would be descheduled, write nothing. (default false)")
    add("--descheduling-cool-down", type=duration, default=None, metavar="DURATION",
        help="After descheduling replicas of a binding from a cluster, leave that pair alone this long "
             "(default: twice --descheduling-interval; 0 disables).")
    add(BUDGET_FLAGS[0], type=int, default=None, metavar="N",
        help="At most N replicas are descheduled per cycle, all bindings together; the rest are descheduled in "
             "the next cycles, starting where this one stopped. (default: no limit, as Karmada)")
    add(BUDGET_FLAGS[1], type=int, default=None, metavar="M",
        help="At most M replicas of one binding are descheduled per cycle; the rest in the next cycles. "
             "(default: no limit, as Karmada)")
    add_lease_name_flag(parser, LEASE_NAME, hidden=True)  # Karmada's descheduler has no such flag
    add("--scheduler-estimator-port", type=port, default=None,
        help="Accepted for compatibility; the built-in estimator reads member clusters directly.")
    for flag in GRPC_ONLY_FLAGS[1:]:
        add(flag, default=None, nargs="?", const="true",
            help="Accepted for compatibility; the built-in estimator reads member clusters directly.")
    for flag in ("--enable-pprof", "--profiling-bind-address"):
        add(flag, default=None, nargs="?", const="true", help=argparse.SUPPRESS)
    return parser


def budget_error(args: argparse.Namespace) -> str | None:
    """The one-line complaint about a budget flag that is not a positive integer (absent is fine: no limit)."""
    for flag in BUDGET_FLAGS:
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value is not None and value < 1:
            return f"{COMPONENT}: error: {flag}: must be a positive integer, got {value}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if version_subcommand(COMPONENT, argv):
        return 0
    args = build_parser().parse_args(argv)
    if error := budget_error(args):
        print(error, file=sys.stderr)
        return EXIT_CONFIG
    try:
        kinds = load_workload_kinds(args.unschedulable_pod_selectors)
    except PodSelectorsError as exc:  # one line and exit 2, before anything starts (like a bad flag value)
        print(f"{COMPONENT}: error: --unschedulable-pod-selectors: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    options = CommonOptions.from_args(args)
    register_build_info()  # karmada_build_info, as every Karmada component exposes

    async def build() -> Manager:
        for flag in GRPC_ONLY_FLAGS:
            if getattr(args, flag.lstrip("-").replace("-", "_")) is not None:
                log.warning("flag ignored: the estimator reads member clusters directly, not over gRPC", flag=flag)
        manager = await new_manager(COMPONENT, options, lease_name=args.leader_elect_resource_name,
                                    master=args.master)
        client = manager.client
        # Parsed, not compact: decoding 10,000 bindings every cycle triggers full GC pauses (benchmarks).
        bindings = manager.informer(RESOURCE_BINDINGS, compact=False)
        # slim: the descheduler only counts unschedulable replicas, so the members' objects are cached cut down to that
        registry = MemberRegistry(client, manager.informer(CLUSTERS), workloads=kinds.member_resources(), slim=True)
        estimator = EstimatorClient(registry, timeout=args.scheduler_estimator_timeout, kinds=kinds)
        cool_down_seconds = (args.descheduling_cool_down if args.descheduling_cool_down is not None
                             else default_cool_down(args.descheduling_interval))
        descheduler = Descheduler(client, bindings.store, estimator.unschedulable_replicas,
                                  manager.event_recorder(COMPONENT), interval=args.descheduling_interval,
                                  threshold=args.unschedulable_threshold, dry_run=args.dry_run,
                                  cool_down=CoolDown(cool_down_seconds) if cool_down_seconds > 0 else None,
                                  gvks=kinds.gvks(),
                                  budget=CycleBudget(args.max_descheduled_replicas_per_cycle,
                                                     args.max_descheduled_replicas_per_workload))
        manager.add_runnable("member clusters", registry.run, needs_leader=False)  # warm in standbys too
        manager.add_runnable("descheduler", _after_sync(manager, descheduler))
        log.info("descheduler configured", interval=args.descheduling_interval,
                 threshold=args.unschedulable_threshold, dry_run=args.dry_run, cool_down=cool_down_seconds,
                 max_per_cycle=args.max_descheduled_replicas_per_cycle,
                 max_per_workload=args.max_descheduled_replicas_per_workload,
                 kinds=sorted(f"{api_version} {kind}" for api_version, kind in kinds.gvks()))
        return manager

    return run_component(COMPONENT, options, build)


def _after_sync(manager: Manager, descheduler: Descheduler) -> Callable[[], Coroutine[Any, Any, None]]:
    """Karmada starts its loop once the informer caches synced."""

    async def run() -> None:
        await manager.informers.wait_for_sync(timeout=float("inf"))
        await descheduler.run()

    return run


if __name__ == "__main__":
    sys.exit(main())
