"""Command-line options shared by the components, with Karmada's names and defaults.

Durations parse Go-style (``2m0s``, ``5ms``, ``16m40s``, ``1h30m``); bind addresses take Go's
forms (``:8080`` = all interfaces, ``127.0.0.1:8080``, ``0`` = off). A bad value is an argparse
error: one line and exit code 2, before anything starts.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from .ratelimiter import RateLimiterOptions

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration, in seconds: ``2m0s`` → 120.0; a bare ``0`` is allowed."""
    value = text.strip()
    sign = -1.0 if value.startswith("-") else 1.0
    if value[:1] in ("+", "-"):
        value = value[1:]
    if value == "0":
        return 0.0
    total, pos = 0.0, 0
    for match in _PART.finditer(value):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not value or pos != len(value):
        raise argparse.ArgumentTypeError(f'invalid duration "{text}": use forms like 5ms, 2m0s, 16m40s')
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's Duration.String() for whole and fractional seconds: 120 → ``2m0s``, 0.005 → ``5ms``."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        ms = seconds * 1000
        return f"{ms:g}ms" if ms >= 1 else f"{seconds * 1e6:g}µs"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = f"{int(hours)}h" if hours else ""
    if hours or minutes:
        out += f"{int(minutes)}m"
    return out + f"{secs:g}s"


def duration(text: str) -> float:
    seconds = parse_duration(text)
    if seconds < 0:
        raise argparse.ArgumentTypeError(f'invalid duration "{text}": must not be negative')
    return seconds


def positive_duration(text: str) -> float:
    """A Go duration greater than zero (periods and timeouts)."""
    seconds = duration(text)
    if seconds == 0:
        raise argparse.ArgumentTypeError(f'invalid duration "{text}": must be greater than zero')
    return seconds


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def port(text: str) -> int:
    """A TCP port, 0-65535 (0: any free port, where a command allows it)."""
    value = non_negative_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"port out of range 0-65535: {value}")
    return value


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value:g}")
    return value


def bind_address(text: str) -> str:
    """``0`` (off), ``:PORT``, ``HOST:PORT`` or ``[IPv6]:PORT``."""
    if text == "0":
        return text
    _, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f'invalid bind address "{text}": use HOST:PORT, :PORT or 0 to disable')
    return text


def split_bind_address(address: str) -> tuple[str, int] | None:
    """(host, port) to listen on, or None when disabled; ``:8080`` listens on every interface."""
    if address in ("0", ""):
        return None
    host, _, port = address.rpartition(":")
    return (host.strip("[]") or "0.0.0.0"), int(port)


_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def object_name(text: str) -> str:
    """An object name (DNS-1123 subdomain): refused here rather than by a 422 on every election round."""
    if len(text) > 253 or not _SUBDOMAIN.fullmatch(text):
        raise argparse.ArgumentTypeError(f'invalid name "{text}": use lowercase letters, digits, "-" and "." '
                                         "(at most 253 characters, starting and ending with a letter or digit)")
    return text


def boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "t", "1", "yes"):
        return True
    if lowered in ("false", "f", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean: {text!r}")


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
    add = parser.add_argument
    add("--kubeconfig", default="", help="Path to karmada control plane kubeconfig file.")
    add("--kube-api-qps", type=float, default=qps,
        help=f"QPS to use while talking with karmada-apiserver. (default {qps:g})")
    add("--kube-api-burst", type=non_negative_int, default=burst,
        help=f"Burst to use while talking with karmada-apiserver. (default {burst})")
    add("--leader-elect", type=boolean, nargs="?", const=True, default=True,
        help="Start a leader election client and gain leadership before executing the main loop. (default true)")
    add("--leader-elect-lease-duration", type=duration, default=15.0, metavar="DURATION",
        help="The duration that non-leader candidates will wait before taking over. (default 15s)")
    add("--leader-elect-renew-deadline", type=duration, default=10.0, metavar="DURATION",
        help="The interval between attempts by the acting master to renew a leadership slot. (default 10s)")
    add("--leader-elect-retry-period", type=duration, default=2.0, metavar="DURATION",
        help="The duration the clients should wait between attempts. (default 2s)")
    add("--leader-elect-resource-namespace", default="karmada-system",
        help='The namespace of the Lease used for leader election. (default "karmada-system")')
    add("--metrics-bind-address", type=bind_address, default=":8080",
        help='The TCP address to serve Prometheus metrics on ("0" disables). (default ":8080")')
    add("--health-probe-bind-address", type=bind_address, default=f":{health_port}",
        help=f'The TCP address to serve /healthz and /readyz on ("0" disables). (default ":{health_port}")')
    add("--logging-format", choices=("text", "json"), default="text",
        help='Sets the log format: "text" or "json". (default "text")')
    add("-v", "--v", type=non_negative_int, default=0, metavar="LEVEL",
        help="number for the log level verbosity")


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


def add_rate_limiter_flags(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--rate-limiter-base-delay", type=duration, default=0.005, metavar="DURATION",
        help="The base delay for rate limiter. (default 5ms)")
    add("--rate-limiter-max-delay", type=duration, default=1000.0, metavar="DURATION",
        help="The max delay for rate limiter. (default 16m40s)")
    add("--rate-limiter-qps", type=non_negative_int, default=10, help="The QPS for rate limiter. (default 10)")
    add("--rate-limiter-bucket-size", type=non_negative_int, default=100,
        help="The bucket size for rate limiter. (default 100)")


def rate_limiter_options(args: argparse.Namespace) -> RateLimiterOptions:
    return RateLimiterOptions(base_delay=args.rate_limiter_base_delay, max_delay=args.rate_limiter_max_delay,
                              qps=float(args.rate_limiter_qps), bucket_size=args.rate_limiter_bucket_size).normalized()
