"""The member's Deployment controller (kube-controller-manager's ``deployment-controller``).

Follows ``pkg/controller/deployment``: the new ReplicaSet is the oldest owned one whose template
equals the Deployment's ignoring ``pod-template-hash`` (the estimator's ``find_new_replica_set``);
when there is none it is created as ``<deploy>-<hash>`` with the hash label on its template, labels
and selector, a controller ownerReference (``blockOwnerDeletion``), the Deployment's annotations and
``deployment.kubernetes.io/revision|desired-replicas|max-replicas``. Then, as Kubernetes does:

* a scaling event (an active ReplicaSet's ``desired-replicas`` differs from ``spec.replicas``) or a
  paused Deployment only scales: the single active ReplicaSet takes ``spec.replicas``; during a
  rollout the replicas are spread proportionally (``GetReplicaSetProportion``);
* ``RollingUpdate`` scales the new ReplicaSet up within ``maxSurge`` and old ones down within
  ``maxUnavailable`` (unhealthy replicas first); ``Recreate`` scales old ones to 0 first and creates
  the new one once their pods are gone (judged from the old ReplicaSets' ``status.replicas``);
* old ReplicaSets beyond ``revisionHistoryLimit`` are deleted once the rollout completes;
* the status: ``observedGeneration``, ``replicas``, ``updatedReplicas``, ``readyReplicas``,
  ``availableReplicas``, ``unavailableReplicas`` (zeros omitted) and the ``Available``
  (MinimumReplicasAvailable / MinimumReplicasUnavailable) and ``Progressing`` (NewReplicaSetCreated,
  FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded,
  DeploymentPaused / DeploymentResumed) conditions with Kubernetes' messages.

The revision annotation is written to the Deployment's metadata with a merge patch (kube-apiserver
lets the status subresource carry it; the dev server's status writes ignore metadata). Rollbacks
through ``deprecated.deployment.rollback.to`` and orphan adoption are not simulated.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog

from controller_manager.cache import Indexer, Obj, object_key
from controller_manager.client import ApiError, KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.manager import Manager
from controller_manager.reconcile import Request, Result
from estimator.unschedulable import controller_ref, equal_ignore_hash, find_new_replica_set
from karmada_api.timeutil import format_time, now, parse_time
from kube_api.resources import DEPLOYMENTS, REPLICA_SETS

from .hashing import DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY, pod_template_hash
from .replicasets import (
    OWNER_INDEX,
    RecentWrites,
    controller_reference,
    controller_uid_index,
    ensure_index,
    owner_request,
    typed,
)

log = structlog.get_logger(__name__)

COMPONENT = "deployment-controller"

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
MAX_INT32 = 2**31 - 1


# ----------------------------------------------------------------------------- pure rules


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("status") or {}


def replicas_of(obj: Mapping[str, Any]) -> int:
    """``*spec.replicas`` (the API server defaults it to 1)."""
    value = _spec(obj).get("replicas")
    return 1 if value is None else int(value)


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


def _rolling(d: Mapping[str, Any]) -> Mapping[str, Any] | None:
    strategy = _spec(d).get("strategy") or {}
    if (strategy.get("type") or ROLLING_UPDATE) != ROLLING_UPDATE:
        return None
    return strategy.get("rollingUpdate") or {"maxSurge": "25%", "maxUnavailable": "25%"}


def max_surge(d: Mapping[str, Any]) -> int:
    rolling = _rolling(d)
    if rolling is None:
        return 0
    return resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas_of(d))[0]


def max_unavailable(d: Mapping[str, Any]) -> int:
    rolling = _rolling(d)
    desired = replicas_of(d)
    if rolling is None or desired == 0:
        return 0
    unavailable = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), desired)[1]
    return min(unavailable, desired)


def revision_of(rs: Mapping[str, Any]) -> int:
    try:
        return int((_meta(rs).get("annotations") or {}).get(REVISION) or 0)
    except ValueError:
        return 0


def max_revision(replica_sets: Iterable[Mapping[str, Any]]) -> int:
    return max((revision_of(rs) for rs in replica_sets), default=0)


def is_active(rs: Mapping[str, Any] | None) -> bool:
    return rs is not None and replicas_of(rs) > 0


def spec_total(replica_sets: Iterable[Mapping[str, Any] | None]) -> int:
    """``GetReplicaCountForReplicaSets``: sum of spec.replicas."""
    return sum(replicas_of(rs) for rs in replica_sets if rs is not None)


def _status_total(replica_sets: Iterable[Mapping[str, Any] | None], key: str) -> int:
    return sum(int(_status(rs).get(key) or 0) for rs in replica_sets if rs is not None)


def new_rs_new_replicas(d: Mapping[str, Any], all_rss: Iterable[Mapping[str, Any] | None],
                        new_rs: Mapping[str, Any]) -> int:
    """``NewRSNewReplicas``: how far the new ReplicaSet may grow now."""
    desired = replicas_of(d)
    rolling = _rolling(d)
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


def _annotation_int(rs: Mapping[str, Any], key: str) -> int | None:
    raw = (_meta(rs).get("annotations") or {}).get(key)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def _go_round(value: float) -> int:
    """math.Round: halves away from zero."""
    return int(value + 0.5) if value >= 0 else -int(-value + 0.5)


def replica_set_proportion(rs: Mapping[str, Any], d: Mapping[str, Any], to_add: int, added: int) -> int:
    """``GetReplicaSetProportion`` for proportional scaling during a rollout."""
    size = replicas_of(rs)
    if size == 0 or to_add in (0, added):
        return 0
    desired = replicas_of(d)
    if desired == 0:
        fraction = -size
    else:
        before = _annotation_int(rs, MAX_REPLICAS) or 0
        if before == 0:
            before = int(_status(d).get("replicas") or 0)
        fraction = 0 if before == 0 else _go_round(size * desired / before) - size
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _created(rs: Mapping[str, Any]) -> tuple[str, str]:
    return str(_meta(rs).get("creationTimestamp") or ""), str(_meta(rs).get("name") or "")


def proportional_sizes(d: Mapping[str, Any], active: list[Obj]) -> list[tuple[Obj, int]]:
    """``scale()`` for a rolling Deployment with several active ReplicaSets: (rs, new size), largest first."""
    desired = replicas_of(d)
    allowed = desired + max_surge(d) if desired > 0 else 0
    to_add = allowed - spec_total(active)
    if to_add > 0:  # ReplicaSetsBySizeNewer: larger first, then newer first
        ordered = sorted(active, key=_created, reverse=True)
        ordered.sort(key=replicas_of, reverse=True)
    elif to_add < 0:  # ReplicaSetsBySizeOlder: larger first, then older first
        ordered = sorted(active, key=_created)
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


def new_condition(ctype: str, status: str, reason: str, message: str, moment: datetime) -> dict[str, Any]:
    stamp = format_time(moment)
    return {"type": ctype, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def get_condition(status: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c.get("type") == ctype), None)


def set_condition(status: dict[str, Any], condition: dict[str, Any]) -> None:
    """``SetDeploymentCondition``: same status and reason → unchanged; else replaced and moved last."""
    current = get_condition(status, condition["type"])
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


def calculate_status(all_rss: list[Obj], new_rs: Obj | None, d: Mapping[str, Any],
                     moment: datetime) -> dict[str, Any]:
    """``calculateStatus``: counters from the ReplicaSets (zeros omitted) and the Available condition."""
    available = _status_total(all_rss, "availableReplicas")
    unavailable = max(spec_total(all_rss) - available, 0)
    counters = {
        "observedGeneration": int(_meta(d).get("generation") or 0),
        "replicas": _status_total(all_rss, "replicas"),
        "updatedReplicas": _status_total([new_rs], "replicas"),
        "readyReplicas": _status_total(all_rss, "readyReplicas"),
        "availableReplicas": available,
        "unavailableReplicas": unavailable,
    }
    status: dict[str, Any] = {k: v for k, v in counters.items() if v}
    conditions = _status(d).get("conditions")
    if conditions:
        status["conditions"] = [dict(c) for c in conditions]
    if _status(d).get("collisionCount") is not None:
        status["collisionCount"] = _status(d)["collisionCount"]
    if available >= replicas_of(d) - max_unavailable(d):
        set_condition(status, new_condition(AVAILABLE, "True", MIN_AVAILABLE, "Deployment has minimum availability.",
                                            moment))
    else:
        set_condition(status, new_condition(AVAILABLE, "False", MIN_UNAVAILABLE,
                                            "Deployment does not have minimum availability.", moment))
    return status


def has_progress_deadline(d: Mapping[str, Any]) -> bool:
    deadline = _spec(d).get("progressDeadlineSeconds")
    return deadline is not None and int(deadline) != MAX_INT32


def deployment_complete(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    desired = replicas_of(d)
    return (int(status.get("updatedReplicas") or 0) == desired and int(status.get("replicas") or 0) == desired
            and int(status.get("availableReplicas") or 0) == desired
            and int(status.get("observedGeneration") or 0) >= int(_meta(d).get("generation") or 0))


def deployment_progressing(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    old = _status(d)

    def count(source: Mapping[str, Any], key: str) -> int:
        return int(source.get(key) or 0)

    return (count(status, "updatedReplicas") > count(old, "updatedReplicas")
            or count(status, "replicas") - count(status, "updatedReplicas")
            < count(old, "replicas") - count(old, "updatedReplicas")
            or count(status, "readyReplicas") > count(old, "readyReplicas")
            or count(status, "availableReplicas") > count(old, "availableReplicas"))


def _deadline_from(condition: Mapping[str, Any], d: Mapping[str, Any]) -> datetime | None:
    try:
        updated = parse_time(str(condition.get("lastUpdateTime") or ""))
    except ValueError:
        return None
    return updated + timedelta(seconds=int(_spec(d).get("progressDeadlineSeconds") or 0))


def deployment_timed_out(d: Mapping[str, Any], status: Mapping[str, Any], moment: datetime) -> bool:
    if not has_progress_deadline(d):
        return False
    condition = get_condition(status, PROGRESSING)
    if condition is None or condition.get("reason") == NEW_RS_AVAILABLE:
        return False
    if condition.get("reason") == TIMED_OUT:
        return True
    deadline = _deadline_from(condition, d)
    return deadline is not None and deadline < moment


def rollout_status(d: Mapping[str, Any], all_rss: list[Obj], new_rs: Obj | None,
                   moment: datetime) -> tuple[dict[str, Any], float]:
    """``syncRolloutStatus``: the new status and, when the rollout may get stuck, when to look again."""
    status = calculate_status(all_rss, new_rs, d, moment)
    if not has_progress_deadline(d):
        remove_condition(status, PROGRESSING)
    current = get_condition(_status(d), PROGRESSING)
    complete = (status.get("replicas", 0) == status.get("updatedReplicas", 0) and current is not None
                and current.get("reason") == NEW_RS_AVAILABLE)
    name = _meta(new_rs).get("name") if new_rs is not None else None
    subject = f'ReplicaSet "{name}"' if name else f'Deployment "{_meta(d).get("name")}"'
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


def _recheck_after(d: Mapping[str, Any], status: Mapping[str, Any], moment: datetime) -> float:
    """``requeueStuckDeployment``: seconds until the progress deadline is worth checking, 0 if never."""
    condition = get_condition(status, PROGRESSING)
    if not has_progress_deadline(d) or condition is None or deployment_complete(d, status) \
            or condition.get("reason") in (TIMED_OUT, PAUSED):
        return 0.0
    deadline = _deadline_from(condition, d)
    if deadline is None:
        return 0.0
    return max((deadline - moment).total_seconds(), 0.0) + 1.0


def set_replicas_annotations(rs: dict[str, Any], desired: int, max_replicas: int) -> bool:
    annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(max_replicas))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: Mapping[str, Any], desired: int, max_replicas: int) -> bool:
    annotations = _meta(rs).get("annotations") or {}
    return annotations.get(DESIRED_REPLICAS) != str(desired) or annotations.get(MAX_REPLICAS) != str(max_replicas)


def set_new_replica_set_annotations(d: Mapping[str, Any], rs: dict[str, Any], new_revision: int, *,
                                    exists: bool) -> bool:
    """``SetNewReplicaSetAnnotations``: copy the Deployment's annotations, bump revision (keeping history)."""
    annotations = rs["metadata"].setdefault("annotations", {})
    changed = False
    for key, value in (_meta(d).get("annotations") or {}).items():
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


def new_replica_set(d: Mapping[str, Any], collision_count: int | None) -> dict[str, Any]:
    """The new ReplicaSet of the Deployment's template (replicas and annotations still to be set)."""
    meta = _meta(d)
    template = copy.deepcopy(_spec(d).get("template") or {})
    template_hash = pod_template_hash(_spec(d).get("template"), collision_count)
    template_meta = template.setdefault("metadata", {})
    hash_label = {DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY: template_hash}
    template_meta["labels"] = {**(template_meta.get("labels") or {}), **hash_label}
    selector = copy.deepcopy(_spec(d).get("selector") or {})
    selector["matchLabels"] = {**(selector.get("matchLabels") or {}), **hash_label}
    spec: dict[str, Any] = {"replicas": 0, "selector": selector, "template": template}
    if _spec(d).get("minReadySeconds"):
        spec["minReadySeconds"] = _spec(d)["minReadySeconds"]
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": f"{meta.get('name')}-{template_hash}", "namespace": meta.get("namespace"),
                         "labels": dict(template_meta["labels"]),
                         "ownerReferences": [controller_reference(d, "Deployment")]},
            "spec": spec}


def _creation_order(replica_sets: Iterable[Obj]) -> list[Obj]:
    return sorted(replica_sets, key=_created)


# ----------------------------------------------------------------------------- reconciler


class RequeueError(Exception):
    """Something changed under us (a hash collision, a conflict): sync again with backoff."""


@dataclass
class _Sync:
    """One reconcile's working copies: the Deployment as last read or written, its ReplicaSets."""

    d: dict[str, Any]
    replica_sets: list[dict[str, Any]]
    written: dict[str, Any] = field(default_factory=dict)  # the server's view of d (status and metadata)

    def __post_init__(self) -> None:
        self.written = copy.deepcopy(self.d)


class DeploymentReconciler:
    """Rolls a Deployment out through ReplicaSets and writes its status."""

    def __init__(self, client: KubeClient, deployments: Indexer, replica_sets: Indexer,
                 events: EventRecorder) -> None:
        self.client = client
        self.deployments = deployments
        self.replica_sets = replica_sets
        self.events = events
        self.written = RecentWrites()  # Deployments and ReplicaSets this controller wrote

    async def reconcile(self, request: Request) -> Result:
        cached = self.written.latest(str(request), self.deployments.get(str(request)))
        if cached is None:
            return Result()
        uid = str(_meta(cached).get("uid") or "")
        owned = [copy.deepcopy(rs) for rs in (self.written.latest(object_key(rs), rs)
                                              for rs in self.replica_sets.by_index(OWNER_INDEX, uid))
                 if rs is not None and not _meta(rs).get("deletionTimestamp")]
        state = _Sync(copy.deepcopy(typed(cached, "Deployment", "apps/v1")), owned)
        try:
            return await self._sync(state)
        except RequeueError:
            return Result(requeue=True)
        except ApiError as exc:
            if exc.is_conflict:
                return Result(requeue=True)  # a stale cache: the newer object is on its way
            if exc.is_not_found:
                return Result(requeue=True)  # a ReplicaSet or the Deployment went away: look again
            raise

    async def _sync(self, state: _Sync) -> Result:
        d = state.d
        if _meta(d).get("deletionTimestamp"):
            new_rs, old = await self._new_and_old(state, create=False)
            await self._write_status(state, calculate_status(self._all(new_rs, old), new_rs, d, now()))
            return Result()
        await self._check_paused_conditions(state)
        if _spec(d).get("paused") or self._is_scaling_event(state):
            await self._sync_scale(state)
            return Result()
        strategy = (_spec(d).get("strategy") or {}).get("type") or ROLLING_UPDATE
        if strategy == RECREATE:
            return await self._rollout_recreate(state)
        return await self._rollout_rolling(state)

    @staticmethod
    def _all(new_rs: Obj | None, old: list[Obj]) -> list[Obj]:
        return [*old, new_rs] if new_rs is not None else list(old)

    # ------------------------------------------------------------------ writes

    async def _flush(self, state: _Sync) -> None:
        """Write the Deployment's revision annotation and status if they changed in this sync."""
        d, written = state.d, state.written
        revision = (_meta(d).get("annotations") or {}).get(REVISION)
        if revision is not None and (_meta(written).get("annotations") or {}).get(REVISION) != revision:
            meta = _meta(d)
            patched = await self.client.patch(DEPLOYMENTS, str(meta.get("name")),
                                              {"metadata": {"annotations": {REVISION: revision}}},
                                              namespace=str(meta.get("namespace") or ""))
            if _meta(patched).get("generation") != meta.get("generation") \
                    or _meta(patched).get("uid") != meta.get("uid"):
                raise RequeueError("the Deployment changed during the sync")
            d["metadata"] = patched["metadata"]
            state.written = patched
            self.written.remember(patched)
        if _status(d) != _status(state.written):
            updated = await self.client.update_status(DEPLOYMENTS, d)
            d["metadata"] = updated["metadata"]
            state.written = updated
            self.written.remember(updated)

    async def _write_status(self, state: _Sync, status: dict[str, Any]) -> None:
        state.d["status"] = status
        await self._flush(state)

    async def _scale(self, state: _Sync, rs: dict[str, Any], size: int) -> bool:
        """``scaleReplicaSet``: set replicas and the replica annotations; an event when the size changed."""
        d = state.d
        desired, surge = replicas_of(d), max_surge(d)
        old_size = replicas_of(rs)
        if old_size == size and not replicas_annotations_need_update(rs, desired, desired + surge):
            return False
        changed = copy.deepcopy(rs)
        changed["spec"]["replicas"] = size
        set_replicas_annotations(changed, desired, desired + surge)
        updated = await self.client.update(REPLICA_SETS, changed)
        self.written.remember(updated)
        rs.clear()
        rs.update(updated)
        if old_size == size:
            return False
        direction = "up" if old_size < size else "down"
        self.events.event(d, NORMAL, "ScalingReplicaSet",
                          f"Scaled {direction} replica set {_meta(rs).get('name')} from {old_size} to {size}")
        return True

    # ------------------------------------------------------------------ new ReplicaSet

    async def _new_and_old(self, state: _Sync, *, create: bool) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """``getAllReplicaSetsAndSyncRevision``: the new ReplicaSet (created if asked) and the old ones."""
        d = state.d
        found = find_new_replica_set(d, state.replica_sets)
        new_rs = next((rs for rs in state.replica_sets if rs is found), None)
        old = [rs for rs in state.replica_sets if rs is not new_rs]
        new_revision = max_revision(old) + 1
        if new_rs is not None:
            await self._sync_existing(state, new_rs, new_revision)
            return new_rs, old
        if not create:
            return None, old
        return await self._create_new(state, old, new_revision), old

    async def _sync_existing(self, state: _Sync, new_rs: dict[str, Any], new_revision: int) -> None:
        d = state.d
        changed = copy.deepcopy(new_rs)
        annotations_updated = set_new_replica_set_annotations(d, changed, new_revision, exists=True)
        min_ready = _spec(d).get("minReadySeconds") or 0
        if annotations_updated or (_spec(new_rs).get("minReadySeconds") or 0) != min_ready:
            if min_ready:
                changed["spec"]["minReadySeconds"] = min_ready
            else:
                changed["spec"].pop("minReadySeconds", None)
            updated = await self.client.update(REPLICA_SETS, changed)
            self.written.remember(updated)
            new_rs.clear()
            new_rs.update(updated)
        _set_revision(d, (_meta(new_rs).get("annotations") or {}).get(REVISION))
        if has_progress_deadline(d) and get_condition(_status(d), PROGRESSING) is None:
            set_condition(d.setdefault("status", {}), new_condition(
                PROGRESSING, "True", FOUND_NEW_RS, f'Found new replica set "{_meta(new_rs).get("name")}"', now()))
        await self._flush(state)

    async def _create_new(self, state: _Sync, old: list[dict[str, Any]], new_revision: int) -> dict[str, Any]:
        d = state.d
        collision_count = _status(d).get("collisionCount")
        rs = new_replica_set(d, collision_count)
        size = new_rs_new_replicas(d, [*old, rs], rs)
        rs["spec"]["replicas"] = size
        set_new_replica_set_annotations(d, rs, new_revision, exists=False)
        name = str(_meta(rs)["name"])
        try:
            created = await self.client.create(REPLICA_SETS, rs)
            exists = False
        except ApiError as exc:
            if not exc.is_already_exists:
                message = f'Failed to create new replica set "{name}": {exc.message}'
                if has_progress_deadline(d):
                    set_condition(d.setdefault("status", {}),
                                  new_condition(PROGRESSING, "False", FAILED_RS_CREATE, message, now()))
                    await self._flush(state)
                self.events.event(d, WARNING, FAILED_RS_CREATE, message)
                raise
            created = await self.client.get(REPLICA_SETS, name, str(_meta(d).get("namespace") or ""))
            reference = controller_ref(created)
            if reference is None or reference.get("uid") != _meta(d).get("uid") or not equal_ignore_hash(
                    _spec(d).get("template"), _spec(created).get("template")):
                d.setdefault("status", {})["collisionCount"] = int(collision_count or 0) + 1
                await self._flush(state)
                raise RequeueError(f"hash collision on replica set {name}") from exc
            exists = True
        state.replica_sets.append(created)
        if not exists and size > 0:
            self.events.event(d, NORMAL, "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {size}")
        _set_revision(d, str(new_revision))
        if not exists and has_progress_deadline(d):
            set_condition(d.setdefault("status", {}), new_condition(
                PROGRESSING, "True", NEW_RS_CREATED, f'Created new replica set "{name}"', now()))
        await self._flush(state)
        return created

    # ------------------------------------------------------------------ scaling (paused / scaling event)

    def _is_scaling_event(self, state: _Sync) -> bool:
        desired = replicas_of(state.d)
        for rs in state.replica_sets:
            if not is_active(rs):
                continue
            wanted = _annotation_int(rs, DESIRED_REPLICAS)
            if wanted is not None and wanted != desired:
                return True
        return False

    async def _sync_scale(self, state: _Sync) -> None:
        """``sync``: scale without rolling out, then the status (no progress estimation)."""
        d = state.d
        new_rs, old = await self._new_and_old(state, create=False)
        await self._scale_all(state, new_rs, old)
        if _spec(d).get("paused"):
            await self._cleanup(state, old)
        await self._write_status(state, calculate_status(self._all(new_rs, old), new_rs, d, now()))

    async def _scale_all(self, state: _Sync, new_rs: dict[str, Any] | None, old: list[dict[str, Any]]) -> None:
        """``scale``: one active (or the latest) ReplicaSet takes it all; else saturate or spread proportionally."""
        d = state.d
        desired = replicas_of(d)
        newest_first = sorted(old, key=_created, reverse=True)
        active = [rs for rs in (*newest_first, new_rs) if rs is not None and is_active(rs)]
        target: dict[str, Any] | None = None
        if len(active) == 1:
            target = active[0]
        elif not active:
            target = new_rs if new_rs is not None else (newest_first[0] if newest_first else None)
        if target is not None:
            if replicas_of(target) != desired:
                await self._scale(state, target, desired)
            return
        if new_rs is not None and replicas_of(new_rs) == desired and _annotation_int(new_rs, DESIRED_REPLICAS) \
                == desired and int(_status(new_rs).get("availableReplicas") or 0) == desired:
            for rs in old:
                if is_active(rs):
                    await self._scale(state, rs, 0)
            return
        if _rolling(d) is None:
            return
        for rs, size in proportional_sizes(d, active):
            await self._scale(state, rs, size)

    async def _check_paused_conditions(self, state: _Sync) -> None:
        d = state.d
        if not has_progress_deadline(d):
            return
        condition = get_condition(_status(d), PROGRESSING)
        if condition is not None and condition.get("reason") == TIMED_OUT:
            return
        paused_exists = condition is not None and condition.get("reason") == PAUSED
        paused = bool(_spec(d).get("paused"))
        if paused and not paused_exists:
            set_condition(d.setdefault("status", {}),
                          new_condition(PROGRESSING, "Unknown", PAUSED, "Deployment is paused", now()))
        elif not paused and paused_exists:
            set_condition(d.setdefault("status", {}),
                          new_condition(PROGRESSING, "Unknown", RESUMED, "Deployment is resumed", now()))
        else:
            return
        await self._flush(state)

    # ------------------------------------------------------------------ rollouts

    async def _rollout_rolling(self, state: _Sync) -> Result:
        d = state.d
        new_rs, old = await self._new_and_old(state, create=True)
        assert new_rs is not None
        all_rss = self._all(new_rs, old)
        if not await self._reconcile_new(state, all_rss, new_rs) \
                and not await self._reconcile_old(state, all_rss, old, new_rs) \
                and deployment_complete(d, _status(d)):
            await self._cleanup(state, old)
        return await self._sync_rollout_status(state, all_rss, new_rs)

    async def _reconcile_new(self, state: _Sync, all_rss: list[Obj], new_rs: dict[str, Any]) -> bool:
        desired = replicas_of(state.d)
        if replicas_of(new_rs) == desired:
            return False
        if replicas_of(new_rs) > desired:
            return await self._scale(state, new_rs, desired)
        return await self._scale(state, new_rs, new_rs_new_replicas(state.d, all_rss, new_rs))

    async def _reconcile_old(self, state: _Sync, all_rss: list[Obj], old: list[dict[str, Any]],
                             new_rs: dict[str, Any]) -> bool:
        d = state.d
        if spec_total(old) == 0:
            return False
        min_available = replicas_of(d) - max_unavailable(d)
        new_unavailable = replicas_of(new_rs) - int(_status(new_rs).get("availableReplicas") or 0)
        max_scaled_down = spec_total(all_rss) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        scaled = 0
        for rs in _creation_order(old):  # cleanupUnhealthyReplicas
            if scaled >= max_scaled_down:
                break
            size, available = replicas_of(rs), int(_status(rs).get("availableReplicas") or 0)
            if size in (0, available):
                continue
            count = min(max_scaled_down - scaled, size - available)
            await self._scale(state, rs, size - count)
            scaled += count
        available_total = _status_total(all_rss, "availableReplicas")
        if available_total > min_available:  # scaleDownOldReplicaSetsForRollingUpdate
            budget, done = available_total - min_available, 0
            for rs in _creation_order(old):
                if done >= budget:
                    break
                if replicas_of(rs) == 0:
                    continue
                count = min(replicas_of(rs), budget - done)
                await self._scale(state, rs, replicas_of(rs) - count)
                done += count
            scaled += done
        return scaled > 0

    async def _rollout_recreate(self, state: _Sync) -> Result:
        d = state.d
        new_rs, old = await self._new_and_old(state, create=False)
        scaled_down = False
        for rs in old:
            if is_active(rs):
                scaled_down = await self._scale(state, rs, 0) or scaled_down
        if scaled_down or _status_total(old, "replicas") > 0:
            return await self._sync_rollout_status(state, self._all(new_rs, old), new_rs)
        if new_rs is None:
            new_rs, old = await self._new_and_old(state, create=True)
            assert new_rs is not None
        await self._scale(state, new_rs, replicas_of(d))
        if deployment_complete(d, _status(d)):
            await self._cleanup(state, old)
        return await self._sync_rollout_status(state, self._all(new_rs, old), new_rs)

    async def _cleanup(self, state: _Sync, old: list[dict[str, Any]]) -> None:
        """``cleanupDeployment``: delete the oldest idle ReplicaSets beyond ``revisionHistoryLimit``."""
        limit = _spec(state.d).get("revisionHistoryLimit")
        if limit is None:
            return
        cleanable = sorted((rs for rs in old if not _meta(rs).get("deletionTimestamp")),
                           key=lambda rs: (revision_of(rs), *_created(rs)))
        for rs in cleanable[:max(len(cleanable) - int(limit), 0)]:
            if int(_status(rs).get("replicas") or 0) or replicas_of(rs) \
                    or int(_meta(rs).get("generation") or 0) > int(_status(rs).get("observedGeneration") or 0):
                continue
            meta = _meta(rs)
            try:
                await self.client.delete(REPLICA_SETS, str(meta.get("name")), str(meta.get("namespace") or ""),
                                         uid=str(meta.get("uid") or ""))
            except ApiError as exc:
                if not exc.is_not_found:
                    raise

    async def _sync_rollout_status(self, state: _Sync, all_rss: list[Obj], new_rs: Obj | None) -> Result:
        status, recheck = rollout_status(state.d, all_rss, new_rs, now())
        await self._write_status(state, status)
        return Result(requeue_after=recheck) if recheck else Result()


def _set_revision(d: dict[str, Any], revision: str | None) -> None:
    """``SetDeploymentRevision``."""
    if revision is None:
        return
    annotations = d["metadata"].setdefault("annotations", {})
    if annotations.get(REVISION) != revision:
        annotations[REVISION] = revision


def setup_deployment_controller(manager: Manager, *, cluster_name: str, workers: int = 2) -> Controller:
    """Register ``<cluster>/deployment-controller`` (Deployments, and ReplicaSets mapped to their owner)."""
    deployment_informer = manager.informer(DEPLOYMENTS)
    rs_informer = manager.informer(REPLICA_SETS)
    ensure_index(rs_informer, OWNER_INDEX, controller_uid_index)
    reconciler = DeploymentReconciler(manager.client, deployment_informer.store, rs_informer.store,
                                      manager.event_recorder(COMPONENT))
    controller = Controller(f"{cluster_name}/{COMPONENT}", reconciler, workers=workers)
    controller.watches(deployment_informer)
    controller.watches(rs_informer, map_func=lambda rs: owner_request(rs, "Deployment"))
    manager.add_controller(controller)
    return controller
