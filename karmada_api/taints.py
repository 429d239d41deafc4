"""Cluster taints and graceful eviction on bindings (``pkg/util/helper/taint.go``, ``binding_types_helper.go``).

Pure functions on parsed JSON, shared by the taint manager, the graceful eviction controllers
and anything that reads a binding's eviction tasks:

* :func:`no_execute_taints` / :func:`has_no_execute_taints`: only NoExecute taints evict;
* :func:`get_min_toleration_time`: seconds until the first tolerated NoExecute taint stops being
  tolerated (``-1`` forever, ``0`` now). It takes the **earliest** trigger, whatever Karmada's comment says;
* :func:`generate_taints_message`: the message Karmada puts in taint-related conditions and events;
* :func:`get_applied_placement`: re-exported from :mod:`.placement`, the one applied-placement parser;
* :func:`graceful_evict_cluster`: ``ResourceBindingSpec.GracefulEvictCluster``.

Durations are float seconds; timestamps are RFC 3339 strings as stored (see :mod:`.timeutil`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from controller_manager.objects import Obj
from kube_api.shapes import Taint
from kube_api.timeutil import parse_optional_time
from kube_api.tolerations import TAINT_EFFECT_NO_EXECUTE, tolerates

from .placement import get_applied_placement, in_graceful_eviction_tasks
from .shapes import BindingSpec, GracefulEvictionTask

TOLERATE_FOREVER = -1.0
"""What :func:`get_min_toleration_time` returns when no tolerated taint ever expires."""

EVICTION_REASON_TAINT_UNTOLERATED = "TaintUntolerated"
EVICTION_REASON_APPLICATION_FAILURE = "ApplicationFailure"
EVICTION_PRODUCER_TAINT_MANAGER = "TaintManager"


# --------------------------------------------------------------------------------------------------
# Taints


def no_execute_taints(taints: Iterable[Taint] | None) -> list[Taint]:
    """``GetNoExecuteTaints``: the taints whose effect is NoExecute, in order."""
    return [taint for taint in taints or () if taint.get("effect") == TAINT_EFFECT_NO_EXECUTE]


def has_no_execute_taints(taints: Iterable[Taint] | None) -> bool:
    """``HasNoExecuteTaints``."""
    return any(taint.get("effect") == TAINT_EFFECT_NO_EXECUTE for taint in taints or ())


def get_min_toleration_time(taints: Sequence[Taint] | None, used_tolerations: Sequence[Obj] | None,
                            now: datetime) -> float:
    """``GetMinTolerationTimeWithCurrentTime``: seconds before the earliest trigger, at ``now``.

    No taints → -1 (forever); no used tolerations → 0 (now). A trigger is ``timeAdded +
    tolerationSeconds`` for every (toleration with seconds, taint with ``timeAdded``) pair the
    toleration tolerates; none → -1. A trigger at or before ``now`` → 0.
    """
    if not taints:
        return TOLERATE_FOREVER
    if not used_tolerations:
        return 0.0
    triggers: list[datetime] = []
    for toleration in used_tolerations:
        seconds = toleration.get("tolerationSeconds")
        if seconds is None or isinstance(seconds, bool) or not isinstance(seconds, int | float):
            continue
        for taint in taints:
            added = parse_optional_time(taint.get("timeAdded"))
            if added is not None and tolerates(toleration, taint):
                triggers.append(added + timedelta(seconds=int(seconds)))
    if not triggers:
        return TOLERATE_FOREVER
    earliest = min(triggers)
    return max(0.0, (earliest - now).total_seconds())


def generate_taints_message(taints: Sequence[Obj] | None) -> str:
    """``GenerateTaintsMessage``: ``cluster now has taints([{Key:k,Value:v,Effect:e},...])``, Value omitted if empty."""
    if not taints:
        return "cluster now does not have taints"
    parts = []
    for taint in taints:
        value = taint.get("value") or ""
        value_part = f"Value:{value}," if value else ""
        parts.append(f"{{Key:{taint.get('key') or ''},{value_part}Effect:{taint.get('effect') or ''}}}")
    return f"cluster now has taints([{','.join(parts)}])"


# --------------------------------------------------------------------------------------------------
# Bindings: scheduling result and graceful eviction tasks


def graceful_evict_cluster(spec: BindingSpec, cluster: str, *, purge_mode: str = "", reason: str = "",
                           message: str = "", producer: str = "", grace_period_seconds: int | None = None,
                           suppress_deletion: bool | None = None,
                           preserved_label_state: Mapping[str, str] | None = None,
                           clusters_before_failover: Sequence[str] | None = None) -> bool:
    """``GracefulEvictCluster`` on ``spec`` (mutated; pass a copy): whether it changed anything.

    No-op unless ``cluster`` is in ``spec.clusters``. Removes it from there; then, unless a task
    for it already exists, appends a task, with ``replicas`` only when the cluster had some. Zero
    values are left out (``omitempty``), so an emptied ``clusters`` disappears and no
    ``creationTimestamp`` is set (the graceful eviction controller stamps it).
    """
    targets = list(spec.get("clusters") or [])
    index = next((i for i, target in enumerate(targets) if target.get("name") == cluster), None)
    if index is None:
        return False
    evicted = targets.pop(index)
    if targets:
        spec["clusters"] = targets
    else:
        spec.pop("clusters", None)
    if in_graceful_eviction_tasks(spec, cluster):
        return True
    task = GracefulEvictionTask(fromCluster=cluster)
    if purge_mode:
        task["purgeMode"] = purge_mode
    replicas = evicted.get("replicas") or 0
    if isinstance(replicas, int) and replicas > 0:
        task["replicas"] = replicas
    task["reason"] = reason
    if message:
        task["message"] = message
    task["producer"] = producer
    if grace_period_seconds is not None:
        task["gracePeriodSeconds"] = grace_period_seconds
    if suppress_deletion is not None:
        task["suppressDeletion"] = suppress_deletion
    if preserved_label_state:
        task["preservedLabelState"] = dict(preserved_label_state)
    if clusters_before_failover:
        task["clustersBeforeFailover"] = list(clusters_before_failover)
    spec["gracefulEvictionTasks"] = [*(spec.get("gracefulEvictionTasks") or []), task]
    return True


__all__ = [
    "EVICTION_PRODUCER_TAINT_MANAGER",
    "EVICTION_REASON_APPLICATION_FAILURE",
    "EVICTION_REASON_TAINT_UNTOLERATED",
    "TOLERATE_FOREVER",
    "generate_taints_message",
    "get_applied_placement",  # re-exported: the one parser lives in .placement
    "get_min_toleration_time",
    "graceful_evict_cluster",
    "has_no_execute_taints",
    "no_execute_taints",
]
