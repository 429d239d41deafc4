"""GetUnschedulableReplicas: how many of a member Deployment's pods have been unschedulable too long.

The descheduler asks every member's estimator this for each dynamic-divided Deployment binding and
moves those replicas elsewhere. Karmada only counts the pods of the Deployment's *new* ReplicaSet:
the oldest ReplicaSet controlled by the Deployment (listed by the Deployment's selector) whose pod
template equals the Deployment's, ignoring the ``pod-template-hash`` label; pending pods of an older
ReplicaSet in a rollout are not seen. A pod counts when its ``PodScheduled`` condition is
``False``/``Unschedulable`` and ``lastTransitionTime + threshold`` is strictly before now.
:func:`get_unschedulable_replicas` is that, for Deployments only, as Karmada. Beyond Karmada the
same predicate serves other kinds, only the way their Pods are found differs:
:func:`unschedulable_owned_pods` (a StatefulSet's or a ReplicaSet's own Pods: controller
ownerReference = the workload, within its selector and namespace) and
:func:`unschedulable_selected_pods` (an operator-declared kind's Pods, by a label selector built
from the workload; :mod:`estimator.podselectors`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from kube_api.conditions import find_condition
from kube_api.ownerrefs import controller_of
from kube_api.pods import is_pod_terminated
from kube_api.quantity import parse_quantity
from kube_api.selectors import LabelPredicate, compile_label_selector
from kube_api.timeutil import parse_optional_time

DEPLOYMENT_KIND = "Deployment"
STATEFUL_SET_KIND = "StatefulSet"
REPLICA_SET_KIND = "ReplicaSet"
DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY = "pod-template-hash"
POD_SCHEDULED = "PodScheduled"
POD_REASON_UNSCHEDULABLE = "Unschedulable"
DEFAULT_UNSCHEDULABLE_THRESHOLD = timedelta(minutes=5)
"""The descheduler's ``--unschedulable-threshold`` default."""

_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)
_QUANTITY_MAPS = frozenset({"requests", "limits", "overhead"})


class UnsupportedWorkloadError(ValueError):
    """The workload kind has no unschedulable-replica estimation (anything but Deployment)."""


def _time(text: Any) -> datetime:
    """A metav1.Time; missing or unparsable is Go's zero time (earlier than everything)."""
    return parse_optional_time(text) or _ZERO_TIME


def threshold_from_nanoseconds(nanoseconds: int) -> timedelta:
    """The RPC's ``unschedulableThreshold`` (an int64 of nanoseconds) as a timedelta (µs resolution)."""
    return timedelta(microseconds=nanoseconds // 1000)


def pod_unschedulable(pod: Obj, threshold: timedelta, now: datetime | None = None) -> bool:
    """``PodScheduled`` is False/Unschedulable and ``lastTransitionTime + threshold < now``."""
    condition = find_condition(objects.status(pod).get("conditions"), POD_SCHEDULED)
    if condition is None or condition.get("status") != "False" or condition.get("reason") != POD_REASON_UNSCHEDULABLE:
        return False
    now = now or datetime.now(UTC)
    try:
        return _time(condition.get("lastTransitionTime")) + threshold < now
    except OverflowError:
        return False


def _is_controlled_by(obj: Obj, owner_uid: str) -> bool:
    reference = controller_of(obj)
    return reference is not None and bool(owner_uid) and reference.get("uid") == owner_uid


def _in_scope(obj: Obj, namespace: str, selector: Any) -> bool:
    return objects.namespace(obj) == namespace and bool(selector(objects.labels(obj)))


def list_replica_sets_by_deployment(deployment: Obj, replica_sets: Iterable[Obj]) -> list[Obj]:
    """ReplicaSets in the Deployment's namespace whose labels match its selector and that it controls."""
    selector = compile_label_selector(objects.spec(deployment).get("selector"))
    namespace, uid = objects.namespace(deployment), objects.uid(deployment)
    return [rs for rs in replica_sets if _in_scope(rs, namespace, selector) and _is_controlled_by(rs, uid)]


def _semantic(value: Any, key: str = "") -> Any:
    """Normalise JSON for ``equality.Semantic.DeepEqual``: empty == absent, quantities by value."""
    if isinstance(value, Mapping):
        result = {}
        for item_key, item in value.items():
            if key in _QUANTITY_MAPS and isinstance(item, str | int | float):
                try:
                    result[item_key] = parse_quantity(item)
                    continue
                except ValueError:
                    pass
            normalised = _semantic(item, item_key)
            if normalised is not None:
                result[item_key] = normalised
        return result or None
    if isinstance(value, list):
        items = [_semantic(item) for item in value]
        return items or None
    return value


def equal_ignore_hash(template1: Obj | None, template2: Obj | None) -> bool:
    """Pod templates equal once the ``pod-template-hash`` label is removed from both."""
    def strip(template: Obj | None) -> Any:
        copied = copy.deepcopy(dict(template or {}))
        labels = (copied.get("metadata") or {}).get("labels")
        if isinstance(labels, dict):
            labels.pop(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, None)
        return _semantic(copied)

    return bool(strip(template1) == strip(template2))


def find_new_replica_set(deployment: Obj, replica_sets: Iterable[Obj]) -> Obj | None:
    """The oldest ReplicaSet (creationTimestamp, then name) whose template matches the Deployment's."""
    template = objects.spec(deployment).get("template")
    ordered = sorted(replica_sets, key=lambda rs: (_time(objects.creation_timestamp(rs)), objects.name(rs)))
    for rs in ordered:
        if equal_ignore_hash(objects.spec(rs).get("template"), template):
            return rs
    return None


def list_pods_by_replica_sets(deployment: Obj, replica_sets: Iterable[Obj | None], pods: Iterable[Obj]) -> list[Obj]:
    """Pods in the Deployment's namespace matching its selector whose controller is one of ``replica_sets``."""
    selector = compile_label_selector(objects.spec(deployment).get("selector"))
    namespace = objects.namespace(deployment)
    owners = {objects.metadata(rs).get("uid") for rs in replica_sets if rs is not None}
    owners.discard(None)
    result = []
    for pod in pods:
        if not _in_scope(pod, namespace, selector):
            continue
        reference = controller_of(pod)
        if reference is not None and reference.get("uid") in owners:
            result.append(pod)
    return result


def get_unschedulable_replicas(workload: Obj, replica_sets: Iterable[Obj], pods: Iterable[Obj],
                               threshold: timedelta, now: datetime | None = None) -> int:
    """``GetUnschedulablePodsOfWorkload`` over member ReplicaSet and Pod dicts (any namespaces).

    A negative threshold counts as 0. Terminal pods are ignored (the estimator's pod informer
    never sees them). :class:`UnsupportedWorkloadError` for a kind other than Deployment;
    ``ValueError`` for an invalid Deployment selector.
    """
    kind = workload.get("kind") or ""
    if kind != DEPLOYMENT_KIND:
        # klog.KObj(workload): namespace/name, or name when cluster-scoped
        raise UnsupportedWorkloadError(f"kind({kind}) of workload({objects.key(workload)}) is not supported")
    new_rs = find_new_replica_set(workload, list_replica_sets_by_deployment(workload, replica_sets))
    if new_rs is None:
        return 0
    return count_unschedulable(list_pods_by_replica_sets(workload, [new_rs], pods), threshold, now)


def count_unschedulable(pods: Iterable[Obj], threshold: timedelta, now: datetime | None = None) -> int:
    """How many of ``pods`` are unschedulable for longer than ``threshold`` (negative: 0); terminal ones never."""
    threshold = max(threshold, timedelta(0))
    now = now or datetime.now(UTC)
    return sum(1 for pod in pods if not is_pod_terminated(pod) and pod_unschedulable(pod, threshold, now))


def unschedulable_owned_pods(workload: Obj, pods: Iterable[Obj], threshold: timedelta,
                             now: datetime | None = None) -> int:
    """A StatefulSet's or ReplicaSet's own unschedulable Pods: in its namespace, matching its selector,
    controlled by it (ownerReference uid). ``ValueError`` for an invalid selector."""
    selector = compile_label_selector(objects.spec(workload).get("selector"))
    namespace, uid = objects.namespace(workload), objects.uid(workload)
    owned = (pod for pod in pods if _in_scope(pod, namespace, selector) and _is_controlled_by(pod, uid))
    return count_unschedulable(owned, threshold, now)


def unschedulable_selected_pods(namespace: str, selector: LabelPredicate, pods: Iterable[Obj],
                                threshold: timedelta, now: datetime | None = None) -> int:
    """The unschedulable Pods of ``namespace`` that ``selector`` matches (an operator-declared kind)."""
    return count_unschedulable((pod for pod in pods if _in_scope(pod, namespace, selector)), threshold, now)
