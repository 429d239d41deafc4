"""``karmada-controller-manager``: the workloadRebalancer, ttlCleaner, bindingStatus and clusterFailback controllers.

Flags keep Karmada's names and defaults (``karmada-controller-manager --help``); flags of
Karmada controllers not implemented here are accepted so that an existing deployment's
arguments keep working.

One default differs on purpose: the leader-election Lease is :data:`LEASE_NAME`, not Karmada's
``karmada-controller-manager``. This process runs *next to* Karmada's own controller-manager
(which keeps every other controller, started with ``--controllers=*,-workloadRebalancer,-bindingStatus``),
and Karmada's has no flag to rename its Lease: sharing it would let whichever process took it
first run while the other waited forever.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import timedelta

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
from karmada_api.resources import CLUSTERS
from sharedcli.flagtypes import boolean, duration, format_duration, positive_int
from sharedcli.options import CommonOptions, add_common_flags, add_lease_name_flag
from sharedcli.ratelimiterflag import add_rate_limiter_flags, rate_limiter_options
from sharedcli.runner import EXIT_CONFIG, new_manager, run_component

from . import bindingstatus, ttlcleaner, workloadrebalancer
from .failback import options as failback_options
from .failback import wiring as failback
from .preserve import ENABLE_FLAG as PRESERVE_FLAG
from .preserve import PreserveOptions
from .registry import KARMADA_CONTROLLERS, Context, ControllerEntry, is_enabled, parse_selection, unknown_names

log = structlog.get_logger("karmada-controller-manager")

COMPONENT = "karmada-controller-manager"
LEASE_NAME = "karmada-rebalance-controller-manager"
"""The default ``--leader-elect-resource-name``: prefixed with this project's name (the chart's and
the image's), so it never collides with a Lease of Karmada's (``karmada-controller-manager``,
``karmada-scheduler``, ``karmada-descheduler``...) and ``kubectl get lease`` still says whose it is."""
HEALTH_PORT = 10357
REBALANCER_WORKERS = 5  # Karmada runs one worker and has no flag; the rebalancer benchmark needs more
ESTIMATOR_TIMEOUT = 3.0
"""How long preserve mode waits for a member's caches (the descheduler's ``--scheduler-estimator-timeout``)."""


def _rebalancer(manager: Manager, ctx: Context) -> None:
    workloadrebalancer.setup(manager, workers=REBALANCER_WORKERS, rate_limiter_options=ctx.rate_limiter,
                             preserve_options=_preserve_options(manager, ctx))


def _preserve_options(manager: Manager, ctx: Context) -> PreserveOptions:
    """Preserve mode's settings; with the flag on, member clusters read through clusteraccess/ as the
    descheduler does (informer caches of each member's Pods and workloads, started in standbys too)."""
    args = ctx.args
    threshold = timedelta(seconds=args.preserve_unschedulable_threshold)
    retry_timeout = timedelta(seconds=args.preserve_available_replicas_retry_timeout)
    if not args.enable_preserve_available_replicas:
        return PreserveOptions(None, threshold, retry_timeout)
    kinds = ctx.workload_kinds
    # slim: preserve mode only counts unschedulable replicas, so the members' objects are cached cut down to that
    registry = MemberRegistry(manager.client, manager.informer(CLUSTERS), workloads=kinds.member_resources(),
                              slim=True)
    manager.add_runnable("member clusters", registry.run, needs_leader=False)
    estimator = EstimatorClient(registry, timeout=ESTIMATOR_TIMEOUT, kinds=kinds)
    return PreserveOptions(estimator.unschedulable_replicas, threshold, retry_timeout, kinds.gvks(),
                           still_starting=estimator.still_starting)


def _ttl_cleaner(manager: Manager, ctx: Context) -> None:
    ttlcleaner.setup(manager, workers=REBALANCER_WORKERS, rate_limiter_options=ctx.rate_limiter)


def _binding_status(manager: Manager, ctx: Context) -> None:
    pace = ctx.args.binding_status_coalesce_period
    bindingstatus.setup_resource_binding_status(manager, workers=ctx.args.concurrent_resourcebinding_syncs,
                                                rate_limiter_options=ctx.rate_limiter, coalesce=pace)
    bindingstatus.setup_cluster_resource_binding_status(
        manager, workers=ctx.args.concurrent_clusterresourcebinding_syncs, rate_limiter_options=ctx.rate_limiter,
        coalesce=pace)


def _cluster_failback(manager: Manager, ctx: Context) -> None:
    failback.setup(manager, failback_options.options_from_args(ctx.args), rate_limiter_options=ctx.rate_limiter)


CONTROLLERS = (
    ControllerEntry("workloadRebalancer", _rebalancer, rules=workloadrebalancer.RBAC_RULES),
    ControllerEntry("ttlCleaner", _ttl_cleaner, rules=ttlcleaner.RBAC_RULES),
    ControllerEntry("bindingStatus", _binding_status, rules=bindingstatus.RBAC_RULES),
    # Off by default (Karmada's convention for opt-in controllers): --controllers=*,clusterFailback
    ControllerEntry("clusterFailback", _cluster_failback, enabled_by_default=False, rules=failback.RBAC_RULES),
)


def controller_manager_rules() -> list[PolicyRule]:
    """Cluster-wide rules (a ClusterRole on the Karmada API server) for every controller built here.

    All of them, enabled or not: ``--controllers`` is a runtime choice, and a role that followed it
    would turn a flag change into a permission change.
    """
    return merge(*(entry.rules for entry in CONTROLLERS))


def controller_manager_preserve_rules() -> list[PolicyRule]:
    """Cluster-wide rules added only with ``--enable-preserve-available-replicas`` (the chart follows its
    value): a GET of each Cluster's Secret, as the descheduler's estimator needs, and the Clusters informer (which
    the base rules grant already, for clusterFailback)."""
    return merge(informer_rules(CLUSTERS), HOST_RBAC_RULES)


def controller_manager_rules_with_preserve() -> list[PolicyRule]:
    """:func:`controller_manager_rules` and :func:`controller_manager_preserve_rules`: the ClusterRole's rules
    with preserve mode on."""
    return merge(controller_manager_rules(), controller_manager_preserve_rules())


def controller_manager_member_rules() -> list[PolicyRule]:
    """Rules in each member cluster for the Cluster Secret's identity, with preserve mode on."""
    return merge(MEMBER_RBAC_RULES)


def controller_manager_lease_rules(lease_name: str = LEASE_NAME) -> list[PolicyRule]:
    """Namespaced rules (a Role in ``--leader-elect-resource-namespace``) for leader election.

    For the default Lease name; the chart rewrites the name when its value changes the flag.
    """
    return lease_rules(lease_name)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=COMPONENT, description=(__doc__ or "").splitlines()[0])
    add_common_flags(parser, health_port=HEALTH_PORT)
    add_rate_limiter_flags(parser)
    add = parser.add_argument
    add("--master", default="", help="The address of the Karmada API server (overrides the kubeconfig's).")
    add("--controllers", type=parse_selection, default=["*"],
        help="A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the "
             "controller named 'foo', '-foo' disables the controller named 'foo'. Implemented here: "
             + ", ".join(c.name for c in CONTROLLERS) + "; disabled by default: "
             + ", ".join(c.name for c in CONTROLLERS if not c.enabled_by_default) + ". (default [*])")
    add("--concurrent-resourcebinding-syncs", type=positive_int, default=5,
        help="The number of ResourceBindings that are allowed to sync concurrently. (default 5)")
    add("--concurrent-clusterresourcebinding-syncs", type=positive_int, default=5,
        help="The number of ClusterResourceBindings that are allowed to sync concurrently. (default 5)")
    add("--binding-status-coalesce-period", type=duration, default=bindingstatus.COALESCE_PERIOD,
        metavar="DURATION",
        help="(beyond Karmada) A binding whose Works change in a stream (a rollout) is reconciled by the "
             "binding-status controllers once its events have stopped for this long (at most 5 periods after the "
             "first), so that its intermediate states make no binding and template writes; the first event after "
             "a quiet period is reconciled at once. 0 reconciles every event at once. "
             f"(default {format_duration(bindingstatus.COALESCE_PERIOD)})")
    add("--cluster-cache-sync-timeout", type=duration, default=120.0, metavar="DURATION",
        help="Timeout period waiting for caches to sync. (default 2m0s)")
    failback_options.add_flags(parser)
    add(PRESERVE_FLAG, type=boolean, nargs="?", const=True, default=False,
        help="Serve WorkloadRebalancers that ask to preserve available replicas (karmada-io/karmada#7662), reading "
             "member clusters through their Cluster secrets; off, such workloads fail closed. (default false)")
    add("--preserve-unschedulable-threshold", type=duration, default=300.0, metavar="DURATION",
        help="In preserve mode, how long a Pod must be unschedulable to be moved (the descheduler's "
             "--unschedulable-threshold). (default 5m0s)")
    add("--preserve-available-replicas-retry-timeout", type=duration, default=60.0, metavar="DURATION",
        help="In preserve mode, how long a workload that cannot be judged yet (scheduling under way, a graceful "
             "eviction, a member not answering) is retried before it fails, from the rebalancer's creation or "
             "last spec change. (default 1m0s)")
    add("--unschedulable-pod-selectors", default="", metavar="FILE",
        help="In preserve mode, a YAML list declaring custom workload kinds and how to find their Pods, as "
             "karmada-descheduler's flag of the same name (docs/compatibility.md); without it, the apps/v1 "
             "Deployment, StatefulSet and ReplicaSet.")
    add_lease_name_flag(parser, LEASE_NAME, why=(
        "Not karmada-controller-manager: Karmada's own controller-manager runs next to this one "
        "(--controllers=*,-workloadRebalancer,-bindingStatus) and cannot rename its Lease."))
    # Accepted for compatibility with Karmada's deployments; they configure controllers not built here.
    for flag in ("--concurrent-work-syncs", "--concurrent-cluster-syncs", "--concurrent-namespace-syncs",
                 "--concurrent-resource-template-syncs", "--concurrent-propagation-policy-syncs",
                 "--concurrent-cluster-propagation-policy-syncs", "--concurrent-dependent-resource-syncs"):
        add(flag, type=positive_int, default=None, help=argparse.SUPPRESS)
    for flag in ("--graceful-eviction-timeout", "--cluster-status-update-frequency", "--cluster-monitor-period",
                 "--cluster-monitor-grace-period", "--cluster-startup-grace-period", "--cluster-failure-threshold",
                 "--cluster-success-threshold", "--resync-period", "--federated-resource-quota-sync-period",
                 "--horizontal-pod-autoscaler-cpu-initialization-period", "--horizontal-pod-autoscaler-downscale-delay",
                 "--horizontal-pod-autoscaler-downscale-stabilization",
                 "--horizontal-pod-autoscaler-initial-readiness-delay", "--horizontal-pod-autoscaler-sync-period",
                 "--horizontal-pod-autoscaler-upscale-delay"):
        add(flag, type=duration, default=None, help=argparse.SUPPRESS)
    for flag in ("--feature-gates", "--skipped-propagating-namespaces", "--no-execute-taint-eviction-purge-mode",
                 "--profiling-bind-address", "--resource-eviction-rate", "--cluster-api-qps", "--cluster-api-burst",
                 "--enable-taint-manager", "--enable-no-execute-taint-eviction", "--enable-cluster-resource-modeling",
                 "--enable-pprof"):
        add(flag, default=None, nargs="?", const="true", help=argparse.SUPPRESS)
    for flag in ("--cluster-api-context", "--cluster-api-kubeconfig", "--skipped-propagating-apis"):
        add(flag, default=None, help=argparse.SUPPRESS)
    add("--horizontal-pod-autoscaler-tolerance", type=float, default=None, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if version_subcommand(COMPONENT, argv):
        return 0
    args = build_parser().parse_args(argv)
    try:
        kinds = load_workload_kinds(args.unschedulable_pod_selectors)
    except PodSelectorsError as exc:  # one line and exit 2, before anything starts (like a bad flag value)
        print(f"{COMPONENT}: error: --unschedulable-pod-selectors: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    options = CommonOptions.from_args(args)
    register_build_info()  # karmada_build_info, as every Karmada component exposes
    selected = [c for c in CONTROLLERS if is_enabled(c.name, args.controllers, enabled_by_default=c.enabled_by_default)]

    async def build() -> Manager:
        unknown = unknown_names(args.controllers, [c.name for c in CONTROLLERS])
        for name in unknown:
            why = "not implemented by this controller-manager" if name in KARMADA_CONTROLLERS else "unknown"
            log.warning("--controllers names a controller that is ignored", controller=name, reason=why)
        manager = await new_manager(COMPONENT, options, lease_name=args.leader_elect_resource_name,
                                    master=args.master, cache_sync_timeout=args.cluster_cache_sync_timeout)
        ctx = Context(args, rate_limiter_options(args), kinds)
        for entry in selected:
            entry.setup(manager, ctx)
        log.info("controllers enabled", controllers=[c.name for c in selected])
        return manager

    return run_component(COMPONENT, options, build)


if __name__ == "__main__":
    sys.exit(main())
