"""The Deployment controller's rollout rules, pure: no client, no cache, no asyncio.

They are kept apart from the reconciler (:mod:`devplane.members.deployments`) so that each rule can
be read next to its Kubernetes counterpart and tested without a server. They follow
kube-controller-manager's ``pkg/controller/deployment``:

* ``util/deployment_util.go``: ``maxSurge`` / ``maxUnavailable`` resolution (``ResolveFenceposts``),
  ``NewRSNewReplicas``, ``GetReplicaSetProportion``, the revision and replica annotations
  (``SetNewReplicaSetAnnotations``, ``SetDeploymentRevision``), the conditions
  (``SetDeploymentCondition``) and ``DeploymentComplete`` / ``DeploymentProgressing`` /
  ``DeploymentTimedOut``;
* ``sync.go``: ``calculateStatus``, ``isScalingEvent`` and the proportional sizes of ``scale()``;
* ``progress.go``: ``syncRolloutStatus`` and ``requeueStuckDeployment``;
* ``sync.go``'s ``getNewReplicaSet``: the new ReplicaSet named ``<deploy>-<pod-template-hash>``.

Objects are JSON dicts as the API server returns them; functions that change one say so.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from controller_manager import objects
from controller_manager.objects import Obj
from kube_api.conditions import find_condition
from kube_api.limits import MAX_INT32
from kube_api.ownerrefs import controller_reference
from kube_api.resources import DEPLOYMENTS
from kube_api.timeutil import format_time, parse_optional_time

from .hashing import DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, pod_template_hash

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
_NOT_COPIED = frozenset({LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS, ROLLBACK_TO})
MAX_REV_HISTORY_LENGTH = 2000

AVAILABLE = "Available"
PROGRESSING = "Progressing"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
FAILED_RS_CREATE = "ReplicaSetCreateError"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"

RECREATE = "Recreate"
ROLLING_UPDATE = "RollingUpdate"

R = TypeVar("R", bound=Obj)
"""A ReplicaSet as the caller holds it (read-only or a copy it changes), handed back as such."""


# ----------------------------------------------------------------------------- fields


def replicas_of(obj: Obj) -> int:
    """``*spec.replicas`` (the API server defaults it to 1)."""
    value = objects.spec(obj).get("replicas")
    return 1 if value is None else int(value)


# ----------------------------------------------------------------------------- surge, unavailability, sizes


def scaled_value(value: Any, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int, or ``"N%"`` of ``total`` rounded up or down."""
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        percent = int(text[:-1])
        return -(-percent * total // 100) if round_up else percent * total // 100
    return int(text)


def resolve_fenceposts(max_surge: Any, max_unavailable: Any, desired: int) -> tuple[int, int]:
    """(surge, unavailable); both resolving to 0 makes unavailable 1."""
    surge = scaled_value(0 if max_surge is None else max_surge, desired, round_up=True)
    unavailable = scaled_value(0 if max_unavailable is None else max_unavailable, desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def rolling_update(d: Obj) -> Obj | None:
    """``spec.strategy.rollingUpdate`` with the API server's 25%/25% default; None for ``Recreate``."""
    strategy = objects.spec(d).get("strategy") or {}
    if (strategy.get("type") or ROLLING_UPDATE) != ROLLING_UPDATE:
        return None
    return strategy.get("rollingUpdate") or {"maxSurge": "25%", "maxUnavailable": "25%"}


def max_surge(d: Obj) -> int:
    rolling = rolling_update(d)
    if rolling is None:
        return 0
    return resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas_of(d))[0]


def max_unavailable(d: Obj) -> int:
    rolling = rolling_update(d)
    desired = replicas_of(d)
    if rolling is None or desired == 0:
        return 0
    unavailable = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), desired)[1]
    return min(unavailable, desired)


def revision_of(rs: Obj) -> int:
    try:
        return int(objects.annotations(rs).get(REVISION) or 0)
    except ValueError:
        return 0


def max_revision(replica_sets: Iterable[Obj]) -> int:
    return max((revision_of(rs) for rs in replica_sets), default=0)


def is_active(rs: Obj | None) -> bool:
    return rs is not None and replicas_of(rs) > 0


def spec_total(replica_sets: Iterable[Obj | None]) -> int:
    """``GetReplicaCountForReplicaSets``: sum of spec.replicas."""
    return sum(replicas_of(rs) for rs in replica_sets if rs is not None)


def status_total(replica_sets: Iterable[Obj | None], key: str) -> int:
    """The sum of a status counter (``replicas``, ``availableReplicas``...) over the ReplicaSets."""
    return sum(int(objects.status(rs).get(key) or 0) for rs in replica_sets if rs is not None)


def new_rs_new_replicas(d: Obj, all_rss: Iterable[Obj | None],
                        new_rs: Obj) -> int:
    """``NewRSNewReplicas``: how far the new ReplicaSet may grow now."""
    desired = replicas_of(d)
    rolling = rolling_update(d)
    if rolling is None:
        return desired
    surge = scaled_value(rolling.get("maxSurge") if rolling.get("maxSurge") is not None else 0, desired,
                         round_up=True)
    current = spec_total(all_rss)
    max_total = desired + surge
    if current >= max_total:
        return replicas_of(new_rs)
    scale_up = min(max_total - current, desired - replicas_of(new_rs))
    return replicas_of(new_rs) + scale_up


def annotation_int(rs: Obj, key: str) -> int | None:
    """An integer annotation (``desired-replicas``, ``max-replicas``), None when absent or not a number."""
    raw = objects.annotations(rs).get(key)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def _go_round(value: float) -> int:
    """math.Round: halves away from zero."""
    return int(value + 0.5) if value >= 0 else -int(-value + 0.5)


def replica_set_proportion(rs: Obj, d: Obj, to_add: int, added: int) -> int:
    """``GetReplicaSetProportion`` for proportional scaling during a rollout."""
    size = replicas_of(rs)
    if size == 0 or to_add in (0, added):
        return 0
    desired = replicas_of(d)
    if desired == 0:
        fraction = -size
    else:
        before = annotation_int(rs, MAX_REPLICAS) or 0
        if before == 0:
            before = int(objects.status(d).get("replicas") or 0)
        fraction = 0 if before == 0 else _go_round(size * desired / before) - size
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def is_scaling_event(d: Obj, replica_sets: Iterable[Obj]) -> bool:
    """``isScalingEvent``: an active ReplicaSet's ``desired-replicas`` differs from ``spec.replicas``."""
    desired = replicas_of(d)
    for rs in replica_sets:
        if not is_active(rs):
            continue
        wanted = annotation_int(rs, DESIRED_REPLICAS)
        if wanted is not None and wanted != desired:
            return True
    return False


def creation_key(rs: Obj) -> tuple[str, str]:
    """Sort key: creation time, then name (``ReplicaSetsByCreationTimestamp``)."""
    return objects.creation_timestamp(rs), objects.name(rs)


def proportional_sizes(d: Obj, active: list[R]) -> list[tuple[R, int]]:
    """``scale()`` for a rolling Deployment with several active ReplicaSets: (rs, new size), largest first."""
    desired = replicas_of(d)
    allowed = desired + max_surge(d) if desired > 0 else 0
    to_add = allowed - spec_total(active)
    if to_add > 0:  # ReplicaSetsBySizeNewer: larger first, then newer first
        ordered = sorted(active, key=creation_key, reverse=True)
        ordered.sort(key=replicas_of, reverse=True)
    elif to_add < 0:  # ReplicaSetsBySizeOlder: larger first, then older first
        ordered = sorted(active, key=creation_key)
        ordered.sort(key=replicas_of, reverse=True)
    else:
        ordered = list(active)
    added = 0
    sizes: list[int] = []
    for rs in ordered:
        if to_add:
            proportion = replica_set_proportion(rs, d, to_add, added)
            sizes.append(replicas_of(rs) + proportion)
            added += proportion
        else:
            sizes.append(replicas_of(rs))
    if ordered and to_add:
        sizes[0] = max(sizes[0] + to_add - added, 0)
    return list(zip(ordered, sizes, strict=True))


# ----------------------------------------------------------------------------- conditions and status


def new_condition(ctype: str, status: str, reason: str, message: str, moment: datetime) -> dict[str, Any]:
    stamp = format_time(moment)
    return {"type": ctype, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def set_condition(status: dict[str, Any], condition: dict[str, Any]) -> None:
    """``SetDeploymentCondition``: same status and reason → unchanged; else replaced and moved last."""
    current = find_condition(status.get("conditions"), condition["type"])
    if current is not None and current.get("status") == condition["status"] \
            and current.get("reason") == condition["reason"]:
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
    status["conditions"].append(condition)


def remove_condition(status: dict[str, Any], ctype: str) -> None:
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != ctype]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


def calculate_status(all_rss: Sequence[Obj], new_rs: Obj | None, d: Obj,
                     moment: datetime) -> dict[str, Any]:
    """``calculateStatus``: counters from the ReplicaSets (zeros omitted) and the Available condition."""
    available = status_total(all_rss, "availableReplicas")
    unavailable = max(spec_total(all_rss) - available, 0)
    counters = {
        "observedGeneration": objects.generation(d),
        "replicas": status_total(all_rss, "replicas"),
        "updatedReplicas": status_total([new_rs], "replicas"),
        "readyReplicas": status_total(all_rss, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": unavailable,
    }
    status: dict[str, Any] = {k: v for k, v in counters.items() if v}
    conditions = objects.status(d).get("conditions")
    if conditions:
        status["conditions"] = [dict(c) for c in conditions]
    if objects.status(d).get("collisionCount") is not None:
        status["collisionCount"] = objects.status(d)["collisionCount"]
    if available >= replicas_of(d) - max_unavailable(d):
        set_condition(status, new_condition(AVAILABLE, "True", MIN_AVAILABLE, "Deployment has minimum availability.",
                                            moment))
    else:
        set_condition(status, new_condition(AVAILABLE, "False", MIN_UNAVAILABLE,
                                            "Deployment does not have minimum availability.", moment))
    return status


def has_progress_deadline(d: Obj) -> bool:
    deadline = objects.spec(d).get("progressDeadlineSeconds")
    return deadline is not None and int(deadline) != MAX_INT32


def deployment_complete(d: Obj, status: Obj) -> bool:
    desired = replicas_of(d)
    return (int(status.get("updatedReplicas") or 0) == desired and int(status.get("replicas") or 0) == desired
            and int(status.get("availableReplicas") or 0) == desired
            and int(status.get("observedGeneration") or 0) >= objects.generation(d))


def deployment_progressing(d: Obj, status: Obj) -> bool:
    old = objects.status(d)

    def count(source: Obj, key: str) -> int:
        return int(source.get(key) or 0)

    return (count(status, "updatedReplicas") > count(old, "updatedReplicas")
            or count(status, "replicas") - count(status, "updatedReplicas")
            < count(old, "replicas") - count(old, "updatedReplicas")
            or count(status, "readyReplicas") > count(old, "readyReplicas")
            or count(status, "availableReplicas") > count(old, "availableReplicas"))


def _deadline_from(condition: Obj, d: Obj) -> datetime | None:
    updated = parse_optional_time(condition.get("lastUpdateTime"))
    if updated is None:
        return None
    return updated + timedelta(seconds=int(objects.spec(d).get("progressDeadlineSeconds") or 0))


def deployment_timed_out(d: Obj, status: Obj, moment: datetime) -> bool:
    if not has_progress_deadline(d):
        return False
    condition = find_condition(status.get("conditions"), PROGRESSING)
    if condition is None or condition.get("reason") == NEW_RS_AVAILABLE:
        return False
    if condition.get("reason") == TIMED_OUT:
        return True
    deadline = _deadline_from(condition, d)
    return deadline is not None and deadline < moment


def rollout_status(d: Obj, all_rss: Sequence[Obj], new_rs: Obj | None,
                   moment: datetime) -> tuple[dict[str, Any], float]:
    """``syncRolloutStatus``: the new status and, when the rollout may get stuck, when to look again."""
    status = calculate_status(all_rss, new_rs, d, moment)
    if not has_progress_deadline(d):
        remove_condition(status, PROGRESSING)
    current = find_condition(objects.status(d).get("conditions"), PROGRESSING)
    complete = (status.get("replicas", 0) == status.get("updatedReplicas", 0) and current is not None
                and current.get("reason") == NEW_RS_AVAILABLE)
    name = objects.name(new_rs) if new_rs is not None else ""
    subject = f'ReplicaSet "{name}"' if name else f'Deployment "{objects.name(d)}"'
    if has_progress_deadline(d) and not complete:
        if deployment_complete(d, status):
            set_condition(status, new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE,
                                                f"{subject} has successfully progressed.", moment))
        elif deployment_progressing(d, status):
            condition = new_condition(PROGRESSING, "True", RS_UPDATED, f"{subject} is progressing.", moment)
            if current is not None:
                if current.get("status") == "True":
                    condition["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(status, PROGRESSING)
            set_condition(status, condition)
        elif deployment_timed_out(d, status, moment):
            set_condition(status, new_condition(PROGRESSING, "False", TIMED_OUT,
                                                f"{subject} has timed out progressing.", moment))
    return status, _recheck_after(d, status, moment)


def _recheck_after(d: Obj, status: Obj, moment: datetime) -> float:
    """``requeueStuckDeployment``: seconds until the progress deadline is worth checking, 0 if never."""
    condition = find_condition(status.get("conditions"), PROGRESSING)
    if not has_progress_deadline(d) or condition is None or deployment_complete(d, status) \
            or condition.get("reason") in (TIMED_OUT, PAUSED):
        return 0.0
    deadline = _deadline_from(condition, d)
    if deadline is None:
        return 0.0
    return max((deadline - moment).total_seconds(), 0.0) + 1.0


# ----------------------------------------------------------------------------- ReplicaSets and revisions


def set_replicas_annotations(rs: dict[str, Any], desired: int, max_replicas: int) -> bool:
    annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(max_replicas))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Obj, desired: int, max_replicas: int) -> bool:
    annotations = objects.annotations(rs)
    return annotations.get(DESIRED_REPLICAS) != str(desired) or annotations.get(MAX_REPLICAS) != str(max_replicas)


def set_new_replica_set_annotations(d: Obj, rs: dict[str, Any], new_revision: int, *,
                                    exists: bool) -> bool:
    """``SetNewReplicaSetAnnotations``: copy the Deployment's annotations, bump revision (keeping history)."""
    annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in objects.annotations(d).items():
        if key in _NOT_COPIED or annotations.get(key) == value:
            continue
        annotations[key] = value
        changed = True
    old_text = annotations.get(REVISION)
    try:
        old_revision = int(old_text) if old_text else 0
    except ValueError:
        return changed
    if old_revision < new_revision:
        annotations[REVISION] = str(new_revision)
        changed = True
        if old_text:
            history = annotations.get(REVISION_HISTORY) or ""
            revisions = [r for r in history.split(",") if r]
            total = len(history) + len(old_text) + 1
            while total > MAX_REV_HISTORY_LENGTH and revisions:
                total -= len(revisions.pop(0)) + 1
            if total <= MAX_REV_HISTORY_LENGTH:
                annotations[REVISION_HISTORY] = ",".join([*revisions, old_text])
    if not exists and set_replicas_annotations(rs, replicas_of(d), replicas_of(d) + max_surge(d)):
        changed = True
    return changed


def new_replica_set(d: Obj, collision_count: int | None) -> dict[str, Any]:
    """The new ReplicaSet of the Deployment's template (replicas and annotations still to be set)."""
    meta = objects.metadata(d)
    template = copy.deepcopy(objects.spec(d).get("template") or {})
    template_hash = pod_template_hash(objects.spec(d).get("template"), collision_count)
    template_meta = template.setdefault("metadata", {})
    hash_label = {DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: template_hash}
    template_meta["labels"] = {**(template_meta.get("labels") or {}), **hash_label}
    selector = copy.deepcopy(objects.spec(d).get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), **hash_label}
    spec: dict[str, Any] = {"replicas": 0, "selector": selector, "template": template}
    if objects.spec(d).get("minReadySeconds"):
        spec["minReadySeconds"] = objects.spec(d)["minReadySeconds"]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{meta.get('name')}-{template_hash}", "namespace": meta.get("namespace"),
                         "labels": dict(template_meta["labels"]),
                         "ownerReferences": [controller_reference(d, DEPLOYMENTS)]},
            "spec": spec}


def creation_order(replica_sets: Iterable[R]) -> list[R]:
    """Oldest first (``ReplicaSetsByCreationTimestamp``)."""
    return sorted(replica_sets, key=creation_key)


def set_revision(d: dict[str, Any], revision: str | None) -> None:
    """``SetDeploymentRevision``: put ``revision`` on the Deployment's annotations (changes ``d``)."""
    if revision is None:
        return
    annotations = d["metadata"].setdefault("annotations", {})
    if annotations.get(REVISION) != revision:
        annotations[REVISION] = revision
