"""What the estimator reads of one member cluster: its caches, their index and their readiness.

Karmada's ``karmada-scheduler-estimator`` answers from informer caches of its member
(``pkg/estimator/server`` at Karmada commit f8fdd02). Here the caches are kept by whoever reaches
the members (the descheduler wires in ``clusteraccess``); this module says what the estimator needs
of them — :class:`MemberView`, the resources each estimate reads, the controller-UID index — and
answers from such a view. No I/O: the caches are in memory.

Each workload kind reads its own caches, never a LIST per workload: a Deployment its ReplicaSets
and their Pods (Karmada's way), a StatefulSet or ReplicaSet its own Pods (by the controller-UID
index), an operator-declared kind its object and the Pods of its namespace that its selector
matches (by the namespace index). :class:`WorkloadKinds` says which kinds are supported and how.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from controller_manager import objects
from controller_manager.cache import NAMESPACE_INDEX, Indexer
from controller_manager.client import Resource
from controller_manager.objects import Obj
from estimator.accurate import NodeUsage
from estimator.podselectors import DeclaredKind
from estimator.unschedulable import (
    DEPLOYMENT_KIND,
    REPLICA_SET_KIND,
    STATEFUL_SET_KIND,
    get_unschedulable_replicas,
    unschedulable_owned_pods,
    unschedulable_selected_pods,
)

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
        """The accurate estimator's snapshot of the member's Nodes and Pods."""

    def cache(self, resource: str) -> Indexer:
        """The cache of ``resource``, named by its plural (``nodes``, ``pods``, ``replicasets``,
        ``deployments``, ``statefulsets``; a declared kind's by its ``plural.group``); the ReplicaSet
        and Pod caches carry :data:`CONTROLLER_INDEX`."""

    def state(self, need: Iterable[str]) -> str:
        """``ready``, ``failed`` (answer "unknown" now) or ``pending`` (worth a wait) for the ``need`` caches."""

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


Count = Callable[[MemberView, str, str, timedelta, datetime | None], int]
"""(member, namespace, name, threshold, now) -> unschedulable replicas; LookupError when not in the member."""


def _workload(member: MemberView, cache: str, kind: str, namespace: str, name: str) -> Obj:
    workload = member.cache(cache).get(objects.join_key(namespace, name))
    if workload is None:
        raise LookupError(f"{kind} {namespace}/{name} not found in cluster {member.name}")
    return workload


def owned_unschedulable_in(cache: str, kind: str) -> Count:
    """The count of a kind whose Pods are its own (StatefulSet, ReplicaSet), read from ``cache``."""
    def count(member: MemberView, namespace: str, name: str, threshold: timedelta, now: datetime | None) -> int:
        workload = _workload(member, cache, kind, namespace, name)
        uid = objects.uid(workload)
        pods = member.cache("pods").by_index(CONTROLLER_INDEX, uid) if uid else []
        return unschedulable_owned_pods(workload, pods, threshold, now)

    return count


def selected_unschedulable_in(declared: DeclaredKind) -> Count:
    """The count of an operator-declared kind: the Pods of its namespace its Pod selector matches."""
    def count(member: MemberView, namespace: str, name: str, threshold: timedelta, now: datetime | None) -> int:
        workload = _workload(member, declared.resource.key, declared.kind, namespace, name)
        selector = declared.selector_for(workload)
        pods = member.cache("pods").by_index(NAMESPACE_INDEX, namespace)
        return unschedulable_selected_pods(namespace, selector, pods, threshold, now)

    return count


@dataclass(frozen=True)
class WorkloadKind:
    """How one kind's unschedulable replicas are counted: the caches it reads and the count itself."""

    api_version: str
    kind: str
    need: tuple[str, ...]
    count: Count


_BUILTIN = {
    DEPLOYMENT_KIND: WorkloadKind("apps/v1", DEPLOYMENT_KIND, NEED_WORKLOADS, unschedulable_replicas_in),
    STATEFUL_SET_KIND: WorkloadKind("apps/v1", STATEFUL_SET_KIND, NEED_STATEFUL_SETS,
                                    owned_unschedulable_in("statefulsets", STATEFUL_SET_KIND)),
    REPLICA_SET_KIND: WorkloadKind("apps/v1", REPLICA_SET_KIND, NEED_REPLICA_SETS,
                                   owned_unschedulable_in("replicasets", REPLICA_SET_KIND)),
}


class WorkloadKinds:
    """The kinds the estimator can judge: the built-in ``apps/v1`` ones plus the operator-declared ones."""

    def __init__(self, declared: Iterable[DeclaredKind] = ()) -> None:
        self.declared = list(declared)
        self._declared = {(d.api_version, d.kind): WorkloadKind(d.api_version, d.kind, (d.resource.key, "pods"),
                                                                 selected_unschedulable_in(d))
                          for d in self.declared}

    def lookup(self, resource: Obj) -> WorkloadKind | None:
        """The kind of a workload reference (``binding.spec.resource``), None when unsupported.

        Declared kinds match apiVersion and kind; the built-in ones match by kind, as Karmada's
        estimator reads its Deployments by kind whatever the reference's apiVersion.
        """
        api_version, kind = str(resource.get("apiVersion") or ""), str(resource.get("kind") or "")
        return self._declared.get((api_version, kind)) or _BUILTIN.get(kind)

    def gvks(self) -> frozenset[tuple[str, str]]:
        """(apiVersion, kind) of every supported kind: what the descheduler's filter lets through."""
        return frozenset({(k.api_version, k.kind) for k in _BUILTIN.values()} | set(self._declared))

    def unsupported_reason(self, resource: Obj) -> str | None:
        """Why the workload cannot be judged, for logs and results; None when it can."""
        if self.lookup(resource) is not None:
            return None
        return (f"kind {resource.get('kind') or ''!s} ({resource.get('apiVersion') or ''!s}) is not supported: "
                "the estimator knows apps/v1 Deployment, StatefulSet and ReplicaSet and the kinds declared in "
                "--unschedulable-pod-selectors")

    def member_resources(self) -> list[Resource]:
        """The declared kinds' resources: each member needs an informer on them."""
        return [d.resource for d in self.declared]


__all__ = ["CONTROLLER_INDEX", "NEED_CAPACITY", "NEED_REPLICA_SETS", "NEED_STATEFUL_SETS", "NEED_WORKLOADS",
           "Count", "MemberView", "WorkloadKind", "WorkloadKinds", "unschedulable_replicas_in"]
