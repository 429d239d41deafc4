"""The ``--rate-limiter-*`` flags of Karmada's controllers (``pkg/sharedcli/ratelimiterflag``).

Karmada builds every controller's workqueue limiter from these four flags, a zero or negative
value falling back to the default (``RateLimiterOptions.normalized``); the flags and their
defaults are Karmada's, the limiter itself is the runtime's (``controller_manager.ratelimiter``).
"""

from __future__ import annotations

import argparse

from controller_manager.ratelimiter import RateLimiterOptions

from .flagtypes import duration, non_negative_int


def add_rate_limiter_flags(parser: argparse.ArgumentParser) -> None:
    """``--rate-limiter-base-delay``, ``-max-delay``, ``-qps`` and ``-bucket-size``, Karmada's defaults."""
    add = parser.add_argument
    add("--rate-limiter-base-delay", type=duration, default=0.005, metavar="DURATION",
        help="The base delay for rate limiter. (default 5ms)")
    add("--rate-limiter-max-delay", type=duration, default=1000.0, metavar="DURATION",
        help="The max delay for rate limiter. (default 16m40s)")
    add("--rate-limiter-qps", type=non_negative_int, default=10, help="The QPS for rate limiter. (default 10)")
    add("--rate-limiter-bucket-size", type=non_negative_int, default=100,
        help="The bucket size for rate limiter. (default 100)")


def rate_limiter_options(args: argparse.Namespace) -> RateLimiterOptions:
    """The limiter the parsed flags describe, zero and negative values replaced by the defaults."""
    return RateLimiterOptions(base_delay=args.rate_limiter_base_delay, max_delay=args.rate_limiter_max_delay,
                              qps=float(args.rate_limiter_qps), bucket_size=args.rate_limiter_bucket_size).normalized()
