"""The ``--failback-*`` flags of karmada-controller-manager, and the options they make (docs/failback.md)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from sharedcli.flagtypes import duration, format_duration, positive_duration, positive_int, ttl_after_finished

from . import progress


@dataclass(frozen=True)
class FailbackOptions:
    """The ``--failback-*`` flags."""

    stabilization_window: float = 300.0
    max_workloads: int = 100
    rebalancer_ttl: float = 3600.0
    max_concurrent: int = 10
    progress_deadline: float = 600.0


def add_flags(parser: argparse.ArgumentParser) -> None:
    """The ``--failback-*`` flags of karmada-controller-manager (used only with ``clusterFailback`` on)."""
    defaults = FailbackOptions()
    add = parser.add_argument
    add("--failback-stabilization-window", type=duration, default=defaults.stabilization_window, metavar="DURATION",
        help="How long a recovered cluster must stay Ready and untainted before workloads evicted from it are "
             "rebalanced back (clusterFailback controller). "
             f"(default {format_duration(defaults.stabilization_window)})")
    add("--failback-max-workloads", type=positive_int, default=defaults.max_workloads,
        help="The most workloads one fail-back WorkloadRebalancer lists; more make several. "
             f"(default {defaults.max_workloads})")
    add("--failback-max-concurrent", type=positive_int, default=defaults.max_concurrent,
        help="The most workloads being failed back to one recovered cluster at a time; the next start as those "
             f"are healthy again. (default {defaults.max_concurrent})")
    add("--failback-progress-deadline", type=positive_duration, default=defaults.progress_deadline,
        metavar="DURATION",
        help="How long a workload being failed back may take to be healthy again; one that takes longer pauses "
             "the cluster's fail-back until it is healthy or the Cluster is annotated "
             f"{progress.RESUME_ANNOTATION}. (default {format_duration(defaults.progress_deadline)})")
    add("--failback-rebalancer-ttl", type=ttl_after_finished, default=defaults.rebalancer_ttl, metavar="DURATION",
        help="ttlSecondsAfterFinished of the fail-back WorkloadRebalancers; 0 keeps them. "
             f"(default {format_duration(defaults.rebalancer_ttl)})")


def options_from_args(args: argparse.Namespace) -> FailbackOptions:
    return FailbackOptions(stabilization_window=args.failback_stabilization_window,
                           max_workloads=args.failback_max_workloads, rebalancer_ttl=args.failback_rebalancer_ttl,
                           max_concurrent=args.failback_max_concurrent,
                           progress_deadline=args.failback_progress_deadline)
