"""``karmada-rebalance``: create WorkloadRebalancers for a selection of workloads (docs/karmada-rebalance.md)."""
