"""The member's Deployment controller (kube-controller-manager's ``deployment-controller``).

The reconciler of ``pkg/controller/deployment`` (``deployment_controller.go``, ``sync.go``,
``rolling.go``, ``recreate.go``, ``progress.go``): it reads a Deployment and the ReplicaSets it
controls from the informers and writes the changes the rules of :mod:`devplane.members.rollout`
call for. The new ReplicaSet is the oldest owned one whose template equals the Deployment's
ignoring ``pod-template-hash`` (the estimator's ``find_new_replica_set``); when there is none it is
created (when its name is taken by a ReplicaSet of another owner or template,
``status.collisionCount`` is bumped, which changes the hash). Then, as Kubernetes does:

* a scaling event or a paused Deployment only scales: the single active ReplicaSet takes
  ``spec.replicas``; during a rollout the replicas are spread proportionally;
* ``RollingUpdate`` scales the new ReplicaSet up within ``maxSurge`` and old ones down within
  ``maxUnavailable`` (unhealthy replicas first); ``Recreate`` scales old ones to 0 first and creates
  the new one once their pods are gone (judged from the old ReplicaSets' ``status.replicas``);
* old ReplicaSets beyond ``revisionHistoryLimit`` are deleted once the rollout completes;
* the status and its ``Available`` / ``Progressing`` conditions are written, and the Deployment is
  looked at again when its progress deadline may pass.

The revision annotation is written to the Deployment's metadata with a merge patch (kube-apiserver
lets the status subresource carry it; the dev server's status writes ignore metadata). Rollbacks
through ``deprecated.deployment.rollback.to`` and orphan adoption are not simulated.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.manager import Manager
from controller_manager.mutationcache import MutationCache
from controller_manager.objects import MutableObj
from controller_manager.reconcile import Request, Result
from estimator.unschedulable import equal_ignore_hash, find_new_replica_set
from kube_api.conditions import find_condition
from kube_api.ownerrefs import controller_of, controller_uid_index
from kube_api.resources import DEPLOYMENTS, REPLICA_SETS
from kube_api.timeutil import now

from .podowner import owner_request
from .replicasets import OWNER_INDEX
from .rollout import (
    DESIRED_REPLICAS,
    FAILED_RS_CREATE,
    FOUND_NEW_RS,
    NEW_RS_CREATED,
    PAUSED,
    PROGRESSING,
    RECREATE,
    RESUMED,
    REVISION,
    ROLLING_UPDATE,
    TIMED_OUT,
    annotation_int,
    calculate_status,
    creation_key,
    creation_order,
    deployment_complete,
    has_progress_deadline,
    is_active,
    is_scaling_event,
    max_revision,
    max_surge,
    max_unavailable,
    new_condition,
    new_replica_set,
    new_rs_new_replicas,
    proportional_sizes,
    replicas_annotations_need_update,
    replicas_of,
    revision_of,
    rolling_update,
    rollout_status,
    set_condition,
    set_new_replica_set_annotations,
    set_replicas_annotations,
    set_revision,
    spec_total,
    status_total,
)

log = structlog.get_logger(__name__)

COMPONENT = "deployment-controller"


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

    def __init__(self, client: KubeClient, deployments: MutationCache, replica_sets: MutationCache,
                 events: EventRecorder) -> None:
        self.client = client
        # Both with our own writes: a sync before the informers have seen one would write from a stale
        # resourceVersion and get a 409.
        self.deployments = deployments
        self.replica_sets = replica_sets
        self.events = events

    async def reconcile(self, request: Request) -> Result:
        cached = self.deployments.get(str(request))
        if cached is None:
            return Result()
        uid = objects.uid(cached)
        owned = [objects.deep_copy(rs) for rs in self.replica_sets.by_index(OWNER_INDEX, uid)
                 if not objects.is_deleting(rs)]
        state = _Sync(copy.deepcopy(DEPLOYMENTS.with_type_meta(cached)), owned)
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
        if objects.is_deleting(d):
            new_rs, old = await self._new_and_old(state, create=False)
            await self._write_status(state, calculate_status(self._all(new_rs, old), new_rs, d, now()))
            return Result()
        await self._check_paused_conditions(state)
        if objects.spec(d).get("paused") or is_scaling_event(d, state.replica_sets):
            await self._sync_scale(state)
            return Result()
        strategy = (objects.spec(d).get("strategy") or {}).get("type") or ROLLING_UPDATE
        if strategy == RECREATE:
            return await self._rollout_recreate(state)
        return await self._rollout_rolling(state)

    @staticmethod
    def _all(new_rs: MutableObj | None, old: list[MutableObj]) -> list[MutableObj]:
        return [*old, new_rs] if new_rs is not None else list(old)

    # ------------------------------------------------------------------ writes

    async def _flush(self, state: _Sync) -> None:
        """Write the Deployment's revision annotation and status if they changed in this sync."""
        d, written = state.d, state.written
        revision = objects.annotations(d).get(REVISION)
        if revision is not None and objects.annotations(written).get(REVISION) != revision:
            patched = await self.client.patch(DEPLOYMENTS, objects.name(d),
                                              {"metadata": {"annotations": {REVISION: revision}}},
                                              namespace=objects.namespace(d))
            if objects.generation(patched) != objects.generation(d) or objects.uid(patched) != objects.uid(d):
                raise RequeueError("the Deployment changed during the sync")
            d["metadata"] = patched["metadata"]
            state.written = self.deployments.mutated(patched)
        if objects.status(d) != objects.status(state.written):
            updated = await self.client.update_status(DEPLOYMENTS, d)
            d["metadata"] = updated["metadata"]
            state.written = self.deployments.mutated(updated)

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
        self.replica_sets.mutated(updated)
        rs.clear()
        rs.update(updated)
        if old_size == size:
            return False
        direction = "up" if old_size < size else "down"
        self.events.event(d, NORMAL, "ScalingReplicaSet",
                          f"Scaled {direction} replica set {objects.name(rs)} from {old_size} to {size}")
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
        min_ready = objects.spec(d).get("minReadySeconds") or 0
        if annotations_updated or (objects.spec(new_rs).get("minReadySeconds") or 0) != min_ready:
            if min_ready:
                changed["spec"]["minReadySeconds"] = min_ready
            else:
                changed["spec"].pop("minReadySeconds", None)
            updated = await self.client.update(REPLICA_SETS, changed)
            self.replica_sets.mutated(updated)
            new_rs.clear()
            new_rs.update(updated)
        set_revision(d, objects.annotations(new_rs).get(REVISION))
        if has_progress_deadline(d) and find_condition(objects.status(d).get("conditions"), PROGRESSING) is None:
            set_condition(d.setdefault("status", {}), new_condition(
                PROGRESSING, "True", FOUND_NEW_RS, f'Found new replica set "{objects.name(new_rs)}"', now()))
        await self._flush(state)

    async def _create_new(self, state: _Sync, old: list[dict[str, Any]], new_revision: int) -> dict[str, Any]:
        d = state.d
        collision_count = objects.status(d).get("collisionCount")
        rs = new_replica_set(d, collision_count)
        size = new_rs_new_replicas(d, [*old, rs], rs)
        rs["spec"]["replicas"] = size
        set_new_replica_set_annotations(d, rs, new_revision, exists=False)
        name = objects.name(rs)
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
            created = await self.client.get(REPLICA_SETS, name, objects.namespace(d))
            reference = controller_of(created)
            if reference is None or reference.get("uid") != objects.uid(d) or not equal_ignore_hash(
                    objects.spec(d).get("template"), objects.spec(created).get("template")):
                d.setdefault("status", {})["collisionCount"] = int(collision_count or 0) + 1
                await self._flush(state)
                raise RequeueError(f"hash collision on replica set {name}") from exc
            exists = True
        state.replica_sets.append(created)
        if not exists and size > 0:
            self.events.event(d, NORMAL, "ScalingReplicaSet", f"Scaled up replica set {name} from 0 to {size}")
        set_revision(d, str(new_revision))
        if not exists and has_progress_deadline(d):
            set_condition(d.setdefault("status", {}), new_condition(
                PROGRESSING, "True", NEW_RS_CREATED, f'Created new replica set "{name}"', now()))
        await self._flush(state)
        return created

    # ------------------------------------------------------------------ scaling (paused / scaling event)

    async def _sync_scale(self, state: _Sync) -> None:
        """``sync``: scale without rolling out, then the status (no progress estimation)."""
        d = state.d
        new_rs, old = await self._new_and_old(state, create=False)
        await self._scale_all(state, new_rs, old)
        if objects.spec(d).get("paused"):
            await self._cleanup(state, old)
        await self._write_status(state, calculate_status(self._all(new_rs, old), new_rs, d, now()))

    async def _scale_all(self, state: _Sync, new_rs: dict[str, Any] | None, old: list[dict[str, Any]]) -> None:
        """``scale``: one active (or the latest) ReplicaSet takes it all; else saturate or spread proportionally."""
        d = state.d
        desired = replicas_of(d)
        newest_first = sorted(old, key=creation_key, reverse=True)
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
        if new_rs is not None and replicas_of(new_rs) == desired and annotation_int(new_rs, DESIRED_REPLICAS) \
                == desired and int(objects.status(new_rs).get("availableReplicas") or 0) == desired:
            for rs in old:
                if is_active(rs):
                    await self._scale(state, rs, 0)
            return
        if rolling_update(d) is None:
            return
        for rs, size in proportional_sizes(d, active):
            await self._scale(state, rs, size)

    async def _check_paused_conditions(self, state: _Sync) -> None:
        d = state.d
        if not has_progress_deadline(d):
            return
        condition = find_condition(objects.status(d).get("conditions"), PROGRESSING)
        if condition is not None and condition.get("reason") == TIMED_OUT:
            return
        paused_exists = condition is not None and condition.get("reason") == PAUSED
        paused = bool(objects.spec(d).get("paused"))
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
                and deployment_complete(d, objects.status(d)):
            await self._cleanup(state, old)
        return await self._sync_rollout_status(state, all_rss, new_rs)

    async def _reconcile_new(self, state: _Sync, all_rss: list[MutableObj], new_rs: dict[str, Any]) -> bool:
        desired = replicas_of(state.d)
        if replicas_of(new_rs) == desired:
            return False
        if replicas_of(new_rs) > desired:
            return await self._scale(state, new_rs, desired)
        return await self._scale(state, new_rs, new_rs_new_replicas(state.d, all_rss, new_rs))

    async def _reconcile_old(self, state: _Sync, all_rss: list[MutableObj], old: list[dict[str, Any]],
                             new_rs: dict[str, Any]) -> bool:
        d = state.d
        if spec_total(old) == 0:
            return False
        min_available = replicas_of(d) - max_unavailable(d)
        new_unavailable = replicas_of(new_rs) - int(objects.status(new_rs).get("availableReplicas") or 0)
        max_scaled_down = spec_total(all_rss) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        scaled = 0
        for rs in creation_order(old):  # cleanupUnhealthyReplicas
            if scaled >= max_scaled_down:
                break
            size, available = replicas_of(rs), int(objects.status(rs).get("availableReplicas") or 0)
            if size in (0, available):
                continue
            count = min(max_scaled_down - scaled, size - available)
            await self._scale(state, rs, size - count)
            scaled += count
        available_total = status_total(all_rss, "availableReplicas")
        if available_total > min_available:  # scaleDownOldReplicaSetsForRollingUpdate
            budget, done = available_total - min_available, 0
            for rs in creation_order(old):
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
        if scaled_down or status_total(old, "replicas") > 0:
            return await self._sync_rollout_status(state, self._all(new_rs, old), new_rs)
        if new_rs is None:
            new_rs, old = await self._new_and_old(state, create=True)
            assert new_rs is not None
        await self._scale(state, new_rs, replicas_of(d))
        if deployment_complete(d, objects.status(d)):
            await self._cleanup(state, old)
        return await self._sync_rollout_status(state, self._all(new_rs, old), new_rs)

    async def _cleanup(self, state: _Sync, old: list[dict[str, Any]]) -> None:
        """``cleanupDeployment``: delete the oldest idle ReplicaSets beyond ``revisionHistoryLimit``."""
        limit = objects.spec(state.d).get("revisionHistoryLimit")
        if limit is None:
            return
        cleanable = sorted((rs for rs in old if not objects.is_deleting(rs)),
                           key=lambda rs: (revision_of(rs), *creation_key(rs)))
        for rs in cleanable[:max(len(cleanable) - int(limit), 0)]:
            if int(objects.status(rs).get("replicas") or 0) or replicas_of(rs) \
                    or objects.generation(rs) > int(objects.status(rs).get("observedGeneration") or 0):
                continue
            try:
                await self.client.delete(REPLICA_SETS, objects.name(rs), objects.namespace(rs), uid=objects.uid(rs))
            except ApiError as exc:
                if not exc.is_not_found:
                    raise

    async def _sync_rollout_status(self, state: _Sync, all_rss: list[MutableObj], new_rs: MutableObj | None) -> Result:
        status, recheck = rollout_status(state.d, all_rss, new_rs, now())
        await self._write_status(state, status)
        return Result(requeue_after=recheck) if recheck else Result()

def setup_deployment_controller(manager: Manager, *, cluster_name: str, workers: int = 2) -> Controller:
    """Register ``<cluster>/deployment-controller`` (Deployments, and ReplicaSets mapped to their owner)."""
    deployment_informer = manager.informer(DEPLOYMENTS)
    rs_informer = manager.informer(REPLICA_SETS)
    rs_informer.ensure_indexer(OWNER_INDEX, controller_uid_index)
    reconciler = DeploymentReconciler(manager.client, deployment_informer.mutation_cache(),
                                      rs_informer.mutation_cache(), manager.event_recorder(COMPONENT))
    controller = Controller(f"{cluster_name}/{COMPONENT}", reconciler, workers=workers)
    controller.watches(deployment_informer)
    controller.watches(rs_informer, map_func=lambda rs: owner_request(rs, "Deployment"))
    manager.add_controller(controller)
    return controller
