"""The fail-back controller's Prometheus metrics (docs/failback.md, "Events and metrics"), by cluster."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

REBALANCERS_CREATED = Counter("failback_rebalancers_created_total",
                              "WorkloadRebalancers created by the cluster-failback controller, by cluster.",
                              ["cluster"])
WORKLOADS_FAILED_BACK = Counter("failback_workloads_total",
                                "Workloads listed in fail-back WorkloadRebalancers, by cluster.", ["cluster"])
BATCHES = Counter("failback_batches_total", "Fail-back batches started, by cluster.", ["cluster"])
IN_FLIGHT = Gauge("failback_in_flight_workloads",
                  "Workloads being failed back to a cluster and not healthy yet, by cluster.", ["cluster"])
PAUSES = Counter("failback_pauses_total", "Times a cluster's fail-back paused on a missed deadline.", ["cluster"])
PAUSED_CLUSTERS = Gauge("failback_paused_clusters", "Clusters whose fail-back is paused now.")
