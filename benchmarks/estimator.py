"""Speed of the scheduler-estimator's max-available-replicas estimate (``estimator.accurate.NodeUsage``).

Builds ``--nodes`` Node dicts (100 cpu, 200Gi, 110 pods, 200Gi ephemeral storage; every tenth node
labelled ``tier=gpu`` and tainted ``dedicated=gpu:NoSchedule``) and ``--pods`` bound Pod dicts spread
round-robin (2 containers: 500m/1Gi and 250m/512Mi requests, one with only limits), as parsed JSON
like an informer cache holds them. Measures, each as the median of ``--repeats`` runs:

1. snapshot   ``NodeUsage(nodes, pods)``: parse every allocatable and pod request once;
2. estimate   ``max_available_replicas`` for 1 cpu / 2Gi with no node claim (a new request each run,
              so the quantities are parsed and the filter cache is warm as in steady state);
3. claim      the same with a node claim (nodeSelector ``tier=gpu`` + a toleration) on a fresh
              snapshot each run, so the node filters run uncached (the worst case);
4. events     ``add_pod`` + ``remove_pod`` of one pod (the informer handler's cost).

Goal: an estimate for 2,000 nodes / 40,000 pods under 20 ms.

    .venv/bin/python benchmarks/estimator.py
    .venv/bin/python benchmarks/estimator.py --nodes 5000 --pods 100000 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

# The repository root goes first: this script's own name would otherwise shadow the package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller_manager.objects import MutableObj
from estimator.accurate import NodeUsage


def make_node(index: int) -> MutableObj:
    node: MutableObj = {"apiVersion": "v1", "kind": "Node",
                        "metadata": {"name": f"node-{index:05d}", "uid": f"node-uid-{index}",
                                     "labels": {"kubernetes.io/hostname": f"node-{index:05d}",
                                                "zone": f"z{index % 3}"}},
                        "spec": {},
                        "status": {"allocatable": {"cpu": "100", "memory": "200Gi", "pods": "110",
                                                   "ephemeral-storage": "200Gi"}}}
    if index % 10 == 0:
        node["metadata"]["labels"]["tier"] = "gpu"
        node["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    return node


def make_pod(index: int, node_count: int) -> MutableObj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{index}", "namespace": f"ns-{index % 50}", "uid": f"pod-uid-{index}"},
            "spec": {"nodeName": f"node-{index % node_count:05d}",
                     "containers": [
                         {"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                         {"name": "sidecar", "resources": {"limits": {"cpu": "250m", "memory": "512Mi"}}}]},
            "status": {"phase": "Running"}}


def median_ms(action: Callable[[], object], repeats: int) -> tuple[float, object]:
    times = []
    result: object = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=40000)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()

    nodes = [make_node(i) for i in range(args.nodes)]
    pods = [make_pod(i, args.nodes) for i in range(args.pods)]
    plain = {"resourceRequest": {"cpu": "1", "memory": "2Gi"}}
    claim = {"resourceRequest": {"cpu": "1", "memory": "2Gi"},
             "nodeClaim": {"nodeSelector": {"tier": "gpu"},
                           "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu",
                                            "effect": "NoSchedule"}]}}

    snapshot_ms, usage = median_ms(lambda: NodeUsage(nodes, pods), max(3, args.repeats // 3))
    assert isinstance(usage, NodeUsage)
    usage.max_available_replicas(plain)  # warm the filter cache, as steady state has it
    estimate_ms, replicas = median_ms(lambda: usage.max_available_replicas(
        {"resourceRequest": dict(plain["resourceRequest"])}), args.repeats)

    def uncached_claim() -> int:
        usage._filter_cache.clear()  # measure the filters too
        return usage.max_available_replicas(claim)

    claim_ms, claim_replicas = median_ms(uncached_claim, args.repeats)
    extra = make_pod(args.pods + 1, args.nodes)

    def event() -> None:
        usage.add_pod(extra)
        usage.remove_pod(extra)

    event_ms, _ = median_ms(event, args.repeats * 100)

    print(f"{args.nodes} nodes, {args.pods} pods (Python {sys.version.split()[0]})")
    print(f"  snapshot build (NodeUsage(nodes, pods)):   {snapshot_ms:8.1f} ms")
    print(f"  estimate, no node claim (filters cached):  {estimate_ms:8.2f} ms  -> {replicas} replicas")
    print(f"  estimate, node claim, filters uncached:    {claim_ms:8.2f} ms  -> {claim_replicas} replicas")
    print(f"  pod add + remove event:                    {event_ms * 1000:8.1f} us")


if __name__ == "__main__":
    main()
