"""What the estimator reads of one member cluster: its caches, their index and their readiness.

Karmada's ``karmada-scheduler-estimator`` answers from informer caches of its member
(``pkg/estimator/server`` at Karmada commit f8fdd02). Here the caches are kept by whoever reaches
the members (the descheduler wires in ``clusteraccess``); this module says what the estimator needs
of them — :class:`MemberView`, the resources each estimate reads, the controller-UID index — and
answers from such a view. No I/O: the caches are in memory.

Each workload kind reads its own caches, never a LIST per workload: a Deployment its ReplicaSets
and their Pods (Karmada's way), a StatefulSet or ReplicaSet its own Pods (by the controller-UID
index), an operator-declared kind its object and the Pods of its namespace that its selector
matches (by the namespace index); :mod:`estimator.kinds` says which kinds are supported and how.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Protocol

from controller_manager import objects
from controller_manager.cache import Indexer
from controller_manager.objects import Obj
from estimator.accurate import NodeUsage
from estimator.unschedulable import DEPLOYMENT_KIND, get_unschedulable_replicas

# What each estimate reads: readiness is judged on these only, so a failing resource only takes
# down the estimates that need it.
NEED_CAPACITY = ("nodes", "pods")
NEED_WORKLOADS = ("deployments", "replicasets", "pods")
"""A Deployment's unschedulable replicas."""
NEED_STATEFUL_SETS = ("statefulsets", "pods")
NEED_REPLICA_SETS = ("replicasets", "pods")

CONTROLLER_INDEX = "controller-uid"
"""The index of the ReplicaSet and Pod caches by their controller's UID
(:func:`kube_api.ownerrefs.controller_uid_index`)."""


class MemberView(Protocol):
    """One member cluster's caches as the estimator reads them, and whether they can be trusted yet."""

    @property
    def name(self) -> str: ...

    @property
    def usage(self) -> NodeUsage:
        """The accurate estimator's snapshot of the member's Nodes and Pods (raises when the member keeps none:
        a slim member, :mod:`estimator.slim`)."""

    def cache(self, resource: str) -> Indexer:
        """The cache of ``resource``, named by its plural (``nodes``, ``pods``, ``replicasets``,
        ``deployments``, ``statefulsets``; a declared kind's by its ``plural.group``); the ReplicaSet
        and Pod caches carry :data:`CONTROLLER_INDEX`."""

    def state(self, need: Iterable[str]) -> str:
        """``ready``, ``failed`` (answer "unknown" now) or ``pending`` (worth a wait) for the ``need`` caches."""

    def starting(self, need: Iterable[str]) -> bool:
        """The ``need`` caches are still on their first list, nothing failed: unknown now, answerable later."""

    async def wait_ready(self, need: Iterable[str], timeout: float) -> bool:
        """Wait up to ``timeout`` for the ``need`` caches; False at once when the member fails."""

    def errors(self) -> dict[str, str]:
        """Why the member (or each of its resources) is not usable right now, for logs."""


def unschedulable_replicas_in(member: MemberView, namespace: str, name: str, threshold: timedelta,
                              now: datetime | None = None) -> int:
    """Unschedulable pods of Deployment ``namespace/name`` (newest ReplicaSet only), from the member's caches.

    ReplicaSets and Pods are looked up by their controller's UID (an index), so the cost does not
    grow with the namespace; ``get_unschedulable_replicas`` applies Karmada's selector and owner
    checks on top. LookupError when the Deployment is not in this member.
    """
    deployment = member.cache("deployments").get(objects.join_key(namespace, name))
    if deployment is None:
        raise LookupError(f"deployments.apps {name!r} not found in namespace {namespace!r} of cluster {member.name}")
    if deployment.get("kind") != DEPLOYMENT_KIND:  # LIST items carry no kind
        deployment = {**deployment, "kind": DEPLOYMENT_KIND}
    uid = objects.uid(deployment)
    replica_sets = member.cache("replicasets").by_index(CONTROLLER_INDEX, uid) if uid else []
    pod_cache = member.cache("pods")
    pods: list[Obj] = []
    for rs in replica_sets:
        rs_uid = objects.uid(rs)
        if rs_uid:
            pods.extend(pod_cache.by_index(CONTROLLER_INDEX, rs_uid))
    return get_unschedulable_replicas(deployment, replica_sets, pods, threshold, now)


__all__ = ["CONTROLLER_INDEX", "NEED_CAPACITY", "NEED_REPLICA_SETS", "NEED_STATEFUL_SETS", "NEED_WORKLOADS",
           "MemberView", "unschedulable_replicas_in"]
