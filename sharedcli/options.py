"""The flags every component shares: API access, leader election, endpoints, logging.

Karmada's components each declare the same options in their ``cmd/*/app/options``
(``--kubeconfig``, ``--kube-api-qps``, ``--leader-elect-*``, the bind addresses...); ours share
one declaration, with Karmada's names, help texts and defaults, so that a deployment's arguments
keep working. Each component adds its own flags next to these (``build_parser`` in its ``app``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from .flagtypes import bind_address, boolean, duration, format_duration, non_negative_int, object_name

LEADER_ELECT_NAMESPACE = "karmada-system"
"""Karmada's ``--leader-elect-resource-namespace`` default: its components' Leases live there."""
_ELECTION_TIMINGS = (  # --leader-elect-<timing>: Karmada's defaults and help texts, in seconds
    ("lease-duration", 15.0, "The duration that non-leader candidates will wait before taking over."),
    ("renew-deadline", 10.0, "The interval between attempts by the acting master to renew a leadership slot."),
    ("retry-period", 2.0, "The duration the clients should wait between attempts."),
)


@dataclass(frozen=True)
class CommonOptions:
    """What every component takes: API access, leader election, endpoints, logging."""

    kubeconfig: str
    kube_api_qps: float
    kube_api_burst: int
    leader_elect: bool
    lease_duration: float
    renew_deadline: float
    retry_period: float
    leader_namespace: str
    metrics_bind_address: str
    health_probe_bind_address: str
    logging_format: str
    verbosity: int

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CommonOptions:
        # client-go: QPS 0 means its default 5 (burst 10); a negative QPS disables client-side limiting.
        qps = 5.0 if args.kube_api_qps == 0 else (0.0 if args.kube_api_qps < 0 else args.kube_api_qps)
        burst = args.kube_api_burst or 10
        return cls(args.kubeconfig, qps, burst, args.leader_elect,
                   args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
                   args.leader_elect_retry_period, args.leader_elect_resource_namespace,
                   args.metrics_bind_address, args.health_probe_bind_address, args.logging_format, args.v)


def add_common_flags(parser: argparse.ArgumentParser, *, health_port: int, qps: float = 40.0,
                     burst: int = 60) -> None:
    """Karmada's shared flags; ``health_port`` and the API rate are each component's defaults."""
    add = parser.add_argument
    add("--kubeconfig", default="", help="Path to karmada control plane kubeconfig file.")
    add("--kube-api-qps", type=float, default=qps,
        help=f"QPS to use while talking with karmada-apiserver. (default {qps:g})")
    add("--kube-api-burst", type=non_negative_int, default=burst,
        help=f"Burst to use while talking with karmada-apiserver. (default {burst})")
    add("--leader-elect", type=boolean, nargs="?", const=True, default=True,
        help="Start a leader election client and gain leadership before executing the main loop. (default true)")
    for timing, default, text in _ELECTION_TIMINGS:
        add(f"--leader-elect-{timing}", type=duration, default=default, metavar="DURATION",
            help=f"{text} (default {format_duration(default)})")
    add("--leader-elect-resource-namespace", default=LEADER_ELECT_NAMESPACE,
        help=f'The namespace of the Lease used for leader election. (default "{LEADER_ELECT_NAMESPACE}")')
    add("--metrics-bind-address", type=bind_address, default=":8080",
        help='The TCP address to serve Prometheus metrics on ("0" disables). (default ":8080")')
    add("--health-probe-bind-address", type=bind_address, default=f":{health_port}",
        help=f'The TCP address to serve /healthz and /readyz on ("0" disables). (default ":{health_port}")')
    add("--logging-format", choices=("text", "json"), default="text",
        help='Sets the log format: "text" or "json". (default "text")')
    add("-v", "--v", type=non_negative_int, default=0, metavar="LEVEL",
        help="number for the log level verbosity")
    add_klog_flags(parser)


_KLOG_SWITCHES = ("--add-dir-header", "--alsologtostderr", "--legacy-stderr-threshold-behavior",
                  "--log-text-split-stream", "--logtostderr", "--one-output", "--skip-headers", "--skip-log-headers")
_KLOG_VALUES = ("--alsologtostderrthreshold", "--log-backtrace-at", "--log-dir", "--log-file",
                "--log-text-info-buffer-size", "--stderrthreshold", "--vmodule")


def add_klog_flags(parser: argparse.ArgumentParser) -> None:
    """klog's flags, which every Karmada component takes: accepted (their values checked where Go checks the
    type) and ignored, so that a deployment's arguments keep working. Logs here are structlog's: ``--v`` and
    ``--logging-format`` apply, the rest has nothing to configure (no log files, no per-file levels)."""
    add = parser.add_argument
    for flag in _KLOG_SWITCHES:
        add(flag, type=boolean, nargs="?", const=True, default=None, help=argparse.SUPPRESS)
    for flag in _KLOG_VALUES:
        add(flag, default=None, help=argparse.SUPPRESS)
    add("--log-file-max-size", type=non_negative_int, default=None, help=argparse.SUPPRESS)
    add("--log-flush-frequency", type=duration, default=None, help=argparse.SUPPRESS)


def add_lease_name_flag(parser: argparse.ArgumentParser, default: str, *, why: str = "",
                        hidden: bool = False) -> None:
    """``--leader-elect-resource-name``, as karmada-scheduler has it (same name, help and default form).

    Not in :func:`add_common_flags`: each component picks its own default (and says ``why``), and a
    component whose Karmada counterpart has no such flag can keep it out of ``--help`` (``hidden``).
    """
    help_text = ("The name of resource object that is used for locking during leader election. "
                 + (f"{why} " if why else "") + f'(default "{default}")')
    parser.add_argument("--leader-elect-resource-name", type=object_name, default=default, metavar="NAME",
                        help=argparse.SUPPRESS if hidden else help_text)
