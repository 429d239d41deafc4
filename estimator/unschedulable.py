"""GetUnschedulableReplicas: how many of a member Deployment's pods have been unschedulable too long.

The descheduler asks every member's estimator this for each dynamic-divided Deployment binding and
moves those replicas elsewhere. Karmada only counts the pods of the Deployment's *new* ReplicaSet:
the oldest ReplicaSet controlled by the Deployment (listed by the Deployment's selector) whose pod
template equals the Deployment's, ignoring the ``pod-template-hash`` label; pending pods of an older
ReplicaSet in a rollout are not seen (a slim cache keeps each template's :func:`template_digest`, equal exactly
when the templates are, instead of the template). A pod counts when its ``PodScheduled`` condition is
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
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from fractions import Fraction
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


def unschedulable_condition(conditions: Any) -> Mapping[str, Any] | None:
    """The ``PodScheduled`` condition of a Pod's conditions when it is False/Unschedulable, else None."""
    condition = find_condition(conditions, POD_SCHEDULED)
    if condition is None or condition.get("status") != "False" or condition.get("reason") != POD_REASON_UNSCHEDULABLE:
        return None
    return condition


def pod_unschedulable(pod: Obj, threshold: timedelta, now: datetime | None = None) -> bool:
    """``PodScheduled`` is False/Unschedulable and ``lastTransitionTime + threshold < now``."""
    condition = unschedulable_condition(objects.status(pod).get("conditions"))
    if condition is None:
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


def _comparable(template: Obj | None) -> Any:
    """The template as :func:`equal_ignore_hash` compares it: without ``pod-template-hash``, normalised."""
    copied = copy.deepcopy(dict(template or {}))
    labels = (copied.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, None)
    return _semantic(copied)


def equal_ignore_hash(template1: Obj | None, template2: Obj | None) -> bool:
    """Pod templates equal once the ``pod-template-hash`` label is removed from both."""
    return bool(_comparable(template1) == _comparable(template2))


TEMPLATE_DIGEST = "templateDigest"
"""Not a Kubernetes field: where a slim cache (:mod:`estimator.slim`) keeps, in a Deployment's or ReplicaSet's
``spec``, the :func:`template_digest` of its pod template instead of the template."""


class _NoDigest(ValueError):
    """A value :func:`template_digest` cannot encode so that equal digests mean equal templates (a NaN)."""


def _encode(value: Any, out: list[str]) -> None:
    """Append ``value``'s canonical text: two values get the same text exactly when they are ``==``.

    Python's ``==`` is what :func:`equal_ignore_hash` applies: numbers compare by value whatever their type
    (``True == 1 == 1.0 == Fraction(1)``), mappings whatever their order. Each part is self-delimiting, so the
    text of a structure is unambiguous. A NaN (``==`` to nothing, not even itself) has no such text.
    """
    if value is None:
        out.append("z")
    elif isinstance(value, str):
        out.append(json.dumps(value))
    elif isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            raise _NoDigest("NaN")
        out.append("n+inf" if value > 0 else "n-inf")
    elif isinstance(value, int | float | Fraction):  # bool is an int
        number = Fraction(value)
        out.append(f"n{number.numerator}/{number.denominator}")
    elif isinstance(value, Mapping):
        out.append("{")
        for key in sorted(value):  # parsed JSON's keys are strings; anything else raises TypeError
            if not isinstance(key, str):
                raise _NoDigest(f"key {key!r}")
            out.append(json.dumps(key))
            out.append(":")
            _encode(value[key], out)
            out.append(",")
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for item in value:
            _encode(item, out)
            out.append(",")
        out.append("]")
    else:
        raise _NoDigest(type(value).__name__)


def template_digest(template: Obj | None) -> str | None:
    """A digest (SHA-256) of the pod template as :func:`equal_ignore_hash` compares it: two templates have the
    same digest exactly when ``equal_ignore_hash`` holds (a collision aside). None when the template holds a
    value with no canonical text (a NaN, which a template from an API server never holds)."""
    out: list[str] = []
    try:
        _encode(_comparable(template), out)
    except (ValueError, TypeError):  # _NoDigest; or a template that is not a mapping, which has no comparison
        return None
    return hashlib.sha256("".join(out).encode()).hexdigest()


def same_template(spec1: Obj, spec2: Obj) -> bool:
    """Whether two workload ``spec`` hold equal pod templates (:func:`equal_ignore_hash`), each given as its
    ``template`` or, from a slim cache, as its :data:`TEMPLATE_DIGEST`."""
    if TEMPLATE_DIGEST not in spec1 and TEMPLATE_DIGEST not in spec2:
        return equal_ignore_hash(spec1.get("template"), spec2.get("template"))
    digest1 = spec1[TEMPLATE_DIGEST] if TEMPLATE_DIGEST in spec1 else template_digest(spec1.get("template"))
    digest2 = spec2[TEMPLATE_DIGEST] if TEMPLATE_DIGEST in spec2 else template_digest(spec2.get("template"))
    return digest1 is not None and digest1 == digest2


def find_new_replica_set(deployment: Obj, replica_sets: Iterable[Obj]) -> Obj | None:
    """The oldest ReplicaSet (creationTimestamp, then name) whose template matches the Deployment's."""
    spec = objects.spec(deployment)
    ordered = sorted(replica_sets, key=lambda rs: (_time(objects.creation_timestamp(rs)), objects.name(rs)))
    for rs in ordered:
        if same_template(objects.spec(rs), spec):
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
