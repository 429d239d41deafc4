"""The workload kinds whose unschedulable replicas the estimator can count, and how for each.

Karmada's estimator knows only Deployments (``supportedGVKs``). Here every kind shares the
predicate (:func:`estimator.unschedulable.pod_unschedulable`) and differs only in how its Pods
are found in the member's caches: a Deployment's newest ReplicaSet's
(:func:`estimator.caches.unschedulable_replicas_in`, Karmada's), a StatefulSet's or ReplicaSet's
own (controller-UID index), an operator-declared kind's by its Pod selector (namespace index;
:mod:`estimator.podselectors`). :class:`WorkloadKinds` is the table the client and the
descheduler's filter consult.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from controller_manager import objects
from controller_manager.cache import NAMESPACE_INDEX
from controller_manager.objects import Obj
from controller_manager.resource import Resource
from estimator.caches import (
    CONTROLLER_INDEX,
    NEED_REPLICA_SETS,
    NEED_STATEFUL_SETS,
    NEED_WORKLOADS,
    MemberView,
    unschedulable_replicas_in,
)
from estimator.podselectors import DeclaredKind, load_pod_selectors
from estimator.unschedulable import (
    DEPLOYMENT_KIND,
    REPLICA_SET_KIND,
    STATEFUL_SET_KIND,
    unschedulable_owned_pods,
    unschedulable_selected_pods,
)

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

        Declared kinds match apiVersion and kind, and so do StatefulSets and ReplicaSets (``apps/v1``:
        OpenKruise's ``apps.kruise.io`` StatefulSet is another kind); a Deployment matches by kind
        alone, exactly as Karmada's estimator reads it whatever the reference's apiVersion.
        """
        api_version, kind = str(resource.get("apiVersion") or ""), str(resource.get("kind") or "")
        declared = self._declared.get((api_version, kind))
        if declared is not None:
            return declared
        builtin = _BUILTIN.get(kind)
        if builtin is not None and (kind == DEPLOYMENT_KIND or api_version == builtin.api_version):
            return builtin
        return None

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


def load_workload_kinds(path: str) -> WorkloadKinds:
    """The kinds of ``--unschedulable-pod-selectors FILE`` (``""``: the built-in ones only);
    :class:`~estimator.podselectors.PodSelectorsError` (file, entry, why) for an unusable file."""
    return WorkloadKinds(load_pod_selectors(path) if path else ())


__all__ = ["Count", "WorkloadKind", "WorkloadKinds", "load_workload_kinds"]
