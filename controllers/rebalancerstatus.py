"""A WorkloadRebalancer's status: what it says of each workload, and how a reconcile reports its results.

Karmada's ``syncWorkloadsFromSpecToStatus`` (:func:`sync_spec_to_status`), the results a status holds
(:func:`results`, :func:`decided`), and the one-Event-per-reconcile summaries (:func:`summary_message`).
"""

from __future__ import annotations

from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from karmada_api.rebalancers import workload_key
from karmada_api.shapes import ObservedWorkload, RebalancerStatus, Workload, rebalancer_spec, rebalancer_status

SUCCESSFUL = "Successful"
FAILED = "Failed"
TRIGGERED_SHOWN = 10  # workloads an Event names; the message stays well under an Event's 1 KiB note

Decided = dict[tuple[str, str, str, str], tuple[str, str]]
"""Per workload (:func:`workload_key`): the result and reason one reconcile decided for it."""


def _sort_key(item: ObservedWorkload) -> str:
    api_version, kind, namespace, name = workload_key(item.get("workload") or {})
    return f"{api_version} {kind} {namespace} {name}"


def sync_spec_to_status(rebalancer: Obj) -> RebalancerStatus:
    """The status a rebalancer should have before triggering (``syncWorkloadsFromSpecToStatus``); finishTime later.

    Each item is a new dict (the reconciler sets its result), sharing the rebalancer's ``workload``
    dicts, which nothing writes to: a deep copy of every item cost more than the rest of this function.
    """
    wanted: dict[tuple[str, str, str, str], Workload] = {}
    for workload in rebalancer_spec(rebalancer).get("workloads") or []:
        wanted.setdefault(workload_key(workload), workload)
    observed: list[ObservedWorkload] = []
    for item in rebalancer_status(rebalancer).get("observedWorkloads") or []:
        key = workload_key(item.get("workload") or {})
        if key in wanted:
            observed.append(item.copy())
            del wanted[key]
        elif item.get("result") == SUCCESSFUL:
            observed.append(item.copy())
    observed.extend(ObservedWorkload(workload=w) for w in wanted.values())
    observed.sort(key=_sort_key)
    return {"observedWorkloads": observed, "observedGeneration": objects.generation(rebalancer)}


def status_view(status: RebalancerStatus) -> dict[str, Any]:
    return {"observedWorkloads": status.get("observedWorkloads") or [],
            "observedGeneration": status.get("observedGeneration", 0), "finishTime": status.get("finishTime")}


def results(status: RebalancerStatus) -> Decided:
    """Per workload, its final result and reason in ``status`` (workloads without one left out)."""
    return {workload_key(item.get("workload") or {}): (str(item["result"]), str(item.get("reason", "")))
            for item in status.get("observedWorkloads") or [] if item.get("result") in (SUCCESSFUL, FAILED)}


def decided(rebalancer: Obj, status: RebalancerStatus) -> Decided:
    """The results ``status`` has and the rebalancer's stored status has not: what one reconcile decided."""
    before = results(rebalancer_status(rebalancer))
    return {key: result for key, result in results(status).items() if before.get(key) != result}


def summary_message(what: str, described: list[str]) -> str:
    """One Event for every workload a reconcile handled alike: their count and the first few, in status order.

    One per reconcile rather than one per workload: a rebalancer of a thousand workloads (``karmada-rebalance``,
    fail-back) would otherwise write a thousand Events, as many writes as its binding updates; each
    workload's own result is in ``status.observedWorkloads``.
    """
    shown = ", ".join(described[:TRIGGERED_SHOWN])
    more = f", and {len(described) - TRIGGERED_SHOWN} more" if len(described) > TRIGGERED_SHOWN else ""
    return f"{what} for {len(described)} workload(s): {shown}{more}"


def describe(workload: Workload) -> str:
    namespace = workload.get("namespace")
    target = f"{namespace}/{workload.get('name')}" if namespace else str(workload.get("name"))
    return f"{workload.get('apiVersion')} {workload.get('kind')} {target}"
