"""The simulated work-status controller: member objects' status reflected into their Works.

``status.manifestStatuses`` of every applied Work follows the member objects it describes:
one item per manifest ``{identifier, status, health}``, the status reflected and the health
interpreted with Karmada's default interpreters (:mod:`interpreter.reflectstatus`,
:mod:`interpreter.health`). This is what the product's binding-status controller aggregates
(``controllers/bindingstatus.py``).

Driven by member object events (informers per member and kind, built from ``member.client`` as
Works reference kinds; see :mod:`devplane.karmada.memberobjects`) and by Work events. A member
object deleted behind Karmada's back is re-created (``Applied`` becomes ``ReCreateSuccessful``
or ``ReCreateFailed``), and a member object whose generation moved away from the one Karmada
wrote is applied again, as Karmada's work status controller does (``NeedsUpdate``).

Differences from Karmada: keys are Works, not member objects (one reconcile reflects every
manifest of a Work; Karmada keeps only the last one, ``mergeStatus``); Karmada's per-sync
``ReflectStatusSucceed``/``InterpretHealthSucceed`` events are not recorded (only failures are).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import structlog

from clusteraccess.cluster import MemberCluster
from clusteraccess.registry import MemberRegistry
from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING
from controller_manager.manager import Manager
from controller_manager.objects import Obj
from controller_manager.predicate import generation_or_deletion_changed
from controller_manager.reconcile import Request, Result
from controller_manager.resource import Resource
from interpreter.goconvert import ReflectError
from interpreter.health import UNKNOWN, interpret_health
from interpreter.reflectstatus import reflect_status
from karmada_api.names import cluster_of_execution_space, execution_space
from karmada_api.resources import WORKS
from karmada_api.works import WORK_APPLIED
from kube_api.conditions import find_condition

from ..runtime import error_text
from .memberobjects import (
    APPLIED_MESSAGE,
    SYNC_FAILED,
    SYNC_SUCCEED,
    ConflictError,
    UnknownKindError,
    WorkReconciler,
    api_version_parts,
    cluster_accepts_work,
    desired_object,
    object_ref,
    object_version,
    owning_work,
    set_applied_condition,
    work_controller,
    work_manifests,
    work_predicate,
)

log = structlog.get_logger(__name__)

WORK_STATUS_CONTROLLER = "work-status-controller"
RECREATE_SUCCESSFUL = "ReCreateSuccessful"
RECREATE_FAILED = "ReCreateFailed"
REFLECT_STATUS_FAILED = "ReflectStatusFailed"
INTERPRET_HEALTH_FAILED = "InterpretHealthFailed"
PROPAGATION_INSTRUCTION = "propagation.karmada.io/instruction"  # "suppressed": never re-create

PENDING_RETRY = 0.5  # a member informer still listing


# ============================================================================= Work status items


def manifest_identifier(ordinal: int, resource: Resource | None, manifest: Obj) -> dict[str, Any]:
    """A ResourceIdentifier as Go serializes it (``group`` and ``namespace`` are omitempty)."""
    api_version, kind, namespace, name = object_ref(manifest)
    group, version = api_version_parts(api_version)
    identifier: dict[str, Any] = {"ordinal": ordinal}
    if group:
        identifier["group"] = group
    identifier.update({"version": version, "kind": kind, "resource": resource.plural if resource else ""})
    if namespace:
        identifier["namespace"] = namespace
    identifier["name"] = name
    return identifier


def manifest_status(identifier: dict[str, Any], status: dict[str, Any] | None, health: str) -> dict[str, Any]:
    """A ManifestStatus: no ``status`` key when nothing was reflected."""
    item: dict[str, Any] = {"identifier": identifier}
    if status is not None:
        item["status"] = status
    if health:
        item["health"] = health
    return item


# ============================================================================= controller


def reflect_allowed(work: Obj) -> bool:
    """Applied True (IsResourceApplied), or a failed re-creation still to be retried."""
    applied = find_condition(objects.status(work).get("conditions"), WORK_APPLIED)
    if applied is None:
        return False
    return applied.get("status") == "True" or applied.get("reason") == RECREATE_FAILED


def _applied_state(work: Obj) -> tuple[Any, Any]:
    applied = find_condition(objects.status(work).get("conditions"), WORK_APPLIED) or {}
    return applied.get("status"), applied.get("reason")


def _work_update(old: Obj, new: Obj) -> bool:
    """Spec changes, the Applied condition moving, a deletion starting: not our own status writes."""
    return generation_or_deletion_changed(old, new) or _applied_state(old) != _applied_state(new)


WORK_PREDICATE = work_predicate(_work_update)


class WorkStatusReconciler(WorkReconciler):
    """Reflects one Work's member objects into its ``status.manifestStatuses``."""

    async def reconcile(self, request: Request) -> Result:
        work = self.works.get(str(request))
        if work is None or objects.is_deleting(work) or not reflect_allowed(work):
            return Result()
        try:
            cluster = cluster_of_execution_space(request.namespace)
        except ValueError:
            return Result()
        ready = self.shared.ready_member(cluster)
        if ready is None or not cluster_accepts_work(self.clusters.get(cluster)):
            return Result(requeue_after=self.shared.retry_delay(cluster))
        member, client = ready
        manifests = work_manifests(work)
        suspended = bool(objects.spec(work).get("suspendDispatching"))
        items: dict[int, dict[str, Any] | None] = {}  # ordinal → new item; None: drop; absent: keep the old one
        errors: list[str] = []
        pending = False
        for ordinal, manifest in enumerate(manifests):
            if not isinstance(manifest, dict):
                items[ordinal] = None
                continue
            api_version, kind, namespace, name = object_ref(manifest)
            try:
                resource = await self.shared.mapper.resource_for(member, client, api_version, kind)
            except UnknownKindError:
                items[ordinal] = None  # never applied: the execution controller reports it
                continue
            informer = self.shared.informers.ensure(member, client, resource)
            if informer is None:
                return Result()  # shutting down
            if not informer.has_synced():
                pending = True
                continue
            observed = informer.store.get(objects.join_key(namespace, name))
            if observed is None:
                if not suspended:
                    await self._recreate(request, work, member, client, manifest)
                continue
            if owning_work(observed) != (request.namespace, request.name):
                items[ordinal] = None  # someone else's object: not reflected
                continue
            if not suspended:
                error = await self._correct_drift(request, ordinal, member=member, client=client, resource=resource,
                                                  observed=observed)
                if error:
                    errors.append(error)
            try:
                status = reflect_status(api_version, kind, observed)
            except ReflectError as exc:
                self.events.event(WORKS.with_type_meta(work), WARNING, REFLECT_STATUS_FAILED,
                                  f"Reflect status for object({kind}/{namespace}/{name}) failed, err: {exc}.")
                errors.append(str(exc))
                continue
            health = interpret_health(api_version, kind, observed)
            if health == UNKNOWN:
                self.events.event(WORKS.with_type_meta(work), WARNING, INTERPRET_HEALTH_FAILED,
                                  f"Interpret health of object({kind}/{namespace}/{name}) failed.")
            items[ordinal] = manifest_status(manifest_identifier(ordinal, resource, manifest), status, health)
        await self._write_statuses(request, items, len(manifests))
        if errors:
            raise RuntimeError("; ".join(errors))  # retried with backoff
        return Result(requeue_after=PENDING_RETRY) if pending else Result()

    # ---------------------------------------------------------------- member objects

    async def _recreate(self, request: Request, work: Obj, member: MemberCluster, client: KubeClient,
                        manifest: Obj) -> None:
        """The member object is gone while its Work is not: create it again (handleDeleteEvent)."""
        if objects.labels(work).get(PROPAGATION_INSTRUCTION) == "suppressed":
            return
        cluster = member.name
        _api_version, _kind, namespace, name = object_ref(manifest)
        try:
            created = await self.shared.watcher.create(member, client,
                                                       desired_object(manifest, request.namespace, request.name))
        except (ApiError, UnknownKindError, ConflictError) as exc:
            text = error_text(exc)
            self.events.event(WORKS.with_type_meta(work), WARNING, SYNC_FAILED,
                              f"Failed to create or update resource({objects.join_key(namespace, name)}) in member "
                              f"cluster({cluster}): {text}")
            await set_applied_condition(self.client, request, "False", RECREATE_FAILED, text)
            raise
        if created is None:
            return  # it exists: our cache is behind, its add event is on the way
        log.info("re-created member object deleted behind Karmada's back", cluster=cluster,
                 kind=manifest.get("kind"), namespace=namespace, name=name)
        self.events.event(WORKS.with_type_meta(work), NORMAL, SYNC_SUCCEED,
                          f"Successfully applied resource({namespace}/{name}) to cluster {cluster}")
        await set_applied_condition(self.client, request, "True", RECREATE_SUCCESSFUL, APPLIED_MESSAGE)

    async def _correct_drift(self, request: Request, ordinal: int, *, member: MemberCluster, client: KubeClient,
                             resource: Resource, observed: Obj) -> str:
        """Apply the manifest again when the member object is not the version Karmada wrote; the error.

        The manifest is read from the cache again just before: a Work changed meanwhile is the one applied.
        """
        work = self.works.get(str(request))
        manifests = work_manifests(work or {})
        if work is None or ordinal >= len(manifests) or not isinstance(manifests[ordinal], dict):
            return ""
        manifest = manifests[ordinal]
        cluster = member.name
        _api_version, _kind, namespace, name = object_ref(manifest)
        if self.shared.watcher.recorded_version(member, resource, namespace, name) == object_version(observed):
            return ""
        try:
            await self.shared.watcher.apply(member, client, desired_object(manifest, request.namespace, request.name))
        except (ApiError, UnknownKindError, ConflictError) as exc:
            text = error_text(exc)
            self.events.event(WORKS.with_type_meta(work), WARNING, SYNC_FAILED,
                              f"Failed to create or update resource({objects.join_key(namespace, name)}) in member "
                              f"cluster({cluster}): {text}")
            return text
        return ""

    # ---------------------------------------------------------------- Work status

    async def _write_statuses(self, request: Request, items: dict[int, dict[str, Any] | None], count: int) -> None:
        """Write manifestStatuses (status subresource, conflict retry) when they differ."""

        async def attempt() -> None:
            latest = await self.client.get_or_none(WORKS, request.name, request.namespace)
            if latest is None:
                return
            if objects.is_deleting(latest):
                return
            status = objects.status(latest)
            current = [s for s in status.get("manifestStatuses") or [] if isinstance(s, dict)]
            old_by_ordinal = {int((s.get("identifier") or {}).get("ordinal") or 0): s for s in current}
            wanted: list[dict[str, Any]] = []
            for ordinal in range(count):
                if ordinal in items:
                    item = items[ordinal]
                    if item is not None:
                        wanted.append(item)
                elif ordinal in old_by_ordinal:
                    wanted.append(old_by_ordinal[ordinal])
            if wanted == current:
                return
            new_status = {k: v for k, v in status.items() if k != "manifestStatuses"}
            if wanted:
                new_status["manifestStatuses"] = wanted
            await self.client.update_status(WORKS, {**latest, "status": new_status})

        await retry_on_conflict(attempt)


# ----------------------------------------------------------------------------- wiring


def _member_object_handler(controller: Controller) -> Callable[[str, Obj], None]:
    """Member object event → its Work (from the object's work annotations), in this cluster only."""

    def handle(cluster: str, obj: Obj) -> None:
        owner = owning_work(obj)
        if owner is not None and owner[0] == execution_space(cluster):
            controller.enqueue(Request(*owner))

    return handle


def setup_work_status(manager: Manager, registry: MemberRegistry, *, workers: int = 5) -> list[Controller]:
    """The ``work-status-controller``, plus the runnable that owns the member informers."""
    controller, shared = work_controller(manager, registry, WORK_STATUS_CONTROLLER, WorkStatusReconciler,
                                         WORK_PREDICATE, workers=workers)
    shared.informers.add_handler(_member_object_handler(controller))
    if not shared.runnable_added:
        manager.add_runnable("member-object-informers", shared.informers.run, needs_leader=False)
        shared.runnable_added = True
    manager.add_controller(controller)
    return [controller]
