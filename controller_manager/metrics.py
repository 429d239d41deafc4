"""Prometheus metrics with controller-runtime's exact names, types, labels and buckets.

Dashboards and alerts written for Go controllers work unchanged on ours. Everything is
registered in one registry (``REGISTRY``, prometheus_client's default, which also carries
the ``process_*`` collector); ``_created`` series are disabled because Go never emits them.
"""

from __future__ import annotations

import prometheus_client
from prometheus_client import Counter, Gauge, Histogram

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

REGISTRY = prometheus_client.REGISTRY

RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
                     0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
                     40, 50, 60)


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Go's prometheus.ExponentialBuckets: multiplied step by step, so the ``le`` labels match Go's."""
    buckets, value = [], start
    for _ in range(count):
        buckets.append(value)
        value *= factor
    return tuple(buckets)


# ExponentialBuckets(10e-9, 10, 12): 1e-8 ... 1e3 seconds.
WORKQUEUE_BUCKETS = exponential_buckets(10e-9, 10, 12)

RECONCILE_TOTAL = Counter("controller_runtime_reconcile_total", "Total number of reconciliations per controller",
                          ["controller", "result"])
RECONCILE_ERRORS = Counter("controller_runtime_reconcile_errors_total",
                           "Total number of reconciliation errors per controller", ["controller"])
TERMINAL_RECONCILE_ERRORS = Counter("controller_runtime_terminal_reconcile_errors_total",
                                    "Total number of terminal reconciliation errors per controller", ["controller"])
RECONCILE_PANICS = Counter("controller_runtime_reconcile_panics_total",
                           "Total number of reconciliation panics per controller", ["controller"])
RECONCILE_TIME = Histogram("controller_runtime_reconcile_time_seconds",
                           "Length of time per reconciliation per controller", ["controller"],
                           buckets=RECONCILE_BUCKETS)
MAX_CONCURRENT_RECONCILES = Gauge("controller_runtime_max_concurrent_reconciles",
                                  "Maximum number of concurrent reconciles per controller", ["controller"])
ACTIVE_WORKERS = Gauge("controller_runtime_active_workers", "Number of currently used workers per controller",
                       ["controller"])

WORKQUEUE_DEPTH = Gauge("workqueue_depth", "Current depth of workqueue", ["name", "controller", "priority"])
WORKQUEUE_ADDS = Counter("workqueue_adds_total", "Total number of adds handled by workqueue", ["name", "controller"])
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested",
    ["name", "controller"], buckets=WORKQUEUE_BUCKETS)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds", "How long in seconds processing an item from workqueue takes.",
    ["name", "controller"], buckets=WORKQUEUE_BUCKETS)
WORKQUEUE_UNFINISHED_WORK = Gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large "
    "values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this "
    "increases.", ["name", "controller"])
WORKQUEUE_LONGEST_RUNNING = Gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.", ["name", "controller"])
WORKQUEUE_RETRIES = Counter("workqueue_retries_total", "Total number of retries handled by workqueue",
                            ["name", "controller"])

LEADER_ELECTION_MASTER_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. "
    "'name' is the string used to identify the lease. Please make sure to group by name.", ["name"])
LEADER_ELECTION_SLOWPATH = Counter(
    "leader_election_slowpath_total",
    "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the "
    "lease. Please make sure to group by name.", ["name"])

REST_CLIENT_REQUESTS = Counter("rest_client_requests_total",
                               "Number of HTTP requests, partitioned by status code, method, and host.",
                               ["code", "method", "host"])


class ControllerMetrics:
    """One controller's labelled children, looked up once: ``labels()`` costs more than ``inc()``.

    Creating them starts every label combination at 0, as controller-runtime's initMetrics does.
    """

    def __init__(self, controller: str, max_concurrent: int) -> None:
        self.reconciles = {result: RECONCILE_TOTAL.labels(controller, result)
                           for result in ("success", "error", "requeue", "requeue_after")}
        self.errors = RECONCILE_ERRORS.labels(controller)
        self.terminal_errors = TERMINAL_RECONCILE_ERRORS.labels(controller)
        self.reconcile_time = RECONCILE_TIME.labels(controller)
        self.active_workers = ACTIVE_WORKERS.labels(controller)
        self.active_workers.set(0)
        RECONCILE_PANICS.labels(controller)  # exported at 0: a Python reconcile raises, it does not panic
        MAX_CONCURRENT_RECONCILES.labels(controller).set(max_concurrent)
