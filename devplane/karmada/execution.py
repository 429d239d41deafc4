"""The simulated execution controller: Works in ``karmada-es-<cluster>`` applied to member clusters.

Karmada's ``execution-controller`` (``pkg/controllers/execution``): on a Work create or spec
change it creates or updates every
manifest in the member (an update keeps the member's resourceVersion, status and the fields its
controllers own, see :mod:`devplane.karmada.memberobjects`), stamps the member object with the
``work.karmada.io/name|namespace`` annotations, and sets the Work's ``Applied`` condition
(``AppliedSuccessful`` / ``AppliedFailed`` with ``Failed to apply all manifests (n/m): ...``). On
Work deletion it deletes the member objects this Work owns (or, with
``preserveResourcesOnDeletion``, strips Karmada's labels and annotations and leaves them), then
removes the finalizer ``karmada.io/execution-controller``. It never adds that finalizer: whoever
makes a Work sets it (the binding controller does), so a Work made by hand without it is applied
and, once deleted, gone at once with its member objects left behind, as in Karmada.

Nothing is applied while the member is not usable: no member client yet, or a Cluster whose
``Ready`` condition is not True. A Cluster without any status yet counts as usable as soon as
its member client exists (the cluster-status controller may not have run); Cluster Ready changes
and member (re)starts requeue the cluster's Works at once.

Conflicts: an existing member object Karmada does not manage is overwritten unless the manifest
carries ``work.karmada.io/conflict-resolution: abort`` (Karmada's default, Abort, comes from the
binding, which the Work contract does not carry). Events (recorder ``execution-controller``) go
on the Work: ``SyncSucceed`` per applied manifest, ``SyncFailed`` with the error.
"""

from __future__ import annotations

import aiohttp
import structlog

from clusteraccess.registry import MemberRegistry
from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING
from controller_manager.manager import Manager
from controller_manager.objects import Obj
from controller_manager.predicate import generation_or_deletion_changed
from controller_manager.reconcile import Request, Result
from karmada_api.labels import EXECUTION_CONTROLLER_FINALIZER
from karmada_api.names import cluster_of_execution_space
from karmada_api.resources import WORKS
from kube_api.validation import aggregate_messages

from ..runtime import error_text
from .memberobjects import (
    APPLIED_MESSAGE,
    SYNC_FAILED,
    SYNC_SUCCEED,
    ConflictError,
    UnknownKindError,
    WorkReconciler,
    cluster_accepts_work,
    desired_object,
    object_ref,
    set_applied_condition,
    work_controller,
    work_manifests,
    work_predicate,
)

log = structlog.get_logger(__name__)

EXECUTION_CONTROLLER = "execution-controller"
APPLIED_SUCCESSFUL = "AppliedSuccessful"
APPLIED_FAILED = "AppliedFailed"


class SyncError(Exception):
    """Some manifests could not be applied: retried with backoff."""


def applied_failed_message(succeeded: int, total: int, errors: list[str]) -> str:
    return f"Failed to apply all manifests ({succeeded}/{total}): {aggregate_messages(errors)}"


# Spec changes and deletions: status and finalizer writes (ours included) are not acted on.
WORK_PREDICATE = work_predicate(generation_or_deletion_changed)


class ExecutionReconciler(WorkReconciler):
    """Applies one Work's manifests to its member cluster, or cleans them up when it is deleted."""

    async def reconcile(self, request: Request) -> Result:
        work = self.works.get(str(request))
        if work is None:
            return Result()
        try:
            cluster = cluster_of_execution_space(request.namespace)
        except ValueError:
            return Result()
        cluster_obj = self.clusters.get(cluster)
        usable = cluster_accepts_work(cluster_obj) and self.shared.ready_member(cluster) is not None
        if objects.is_deleting(work):
            return await self._finalize(request, work, cluster, cluster_obj, usable)
        if not usable:
            log.debug("member not ready, Work not synced", work=str(request), cluster=cluster)
            return Result(requeue_after=self.shared.retry_delay(cluster))
        latest = await self._latest(request)
        if latest is None:
            return Result()  # gone, or being deleted: the deletion event brings it back
        if objects.spec(latest).get("suspendDispatching"):
            return Result()
        await self._sync(request, latest, cluster)
        return Result()

    # ---------------------------------------------------------------- apply

    async def _sync(self, request: Request, work: Obj, cluster: str) -> None:
        ready = self.shared.ready_member(cluster)
        if ready is None:
            raise SyncError(f"cluster({cluster}) not ready")
        member, client = ready
        manifests = work_manifests(work)
        errors: list[str] = []
        succeeded = 0
        for index, manifest in enumerate(manifests):
            if not isinstance(manifest, dict):
                errors.append(f"failed to unmarshal manifest {index}: not a JSON object")
                continue
            _api_version, _kind, namespace, name = object_ref(manifest)
            kobj = objects.join_key(namespace, name)
            try:
                await self.shared.watcher.apply(member, client, desired_object(manifest, request.namespace,
                                                                               request.name))
            except (ApiError, UnknownKindError, ConflictError, aiohttp.ClientError, TimeoutError, OSError) as exc:
                text = error_text(exc) or type(exc).__name__
                log.warning("failed to apply manifest", work=str(request), cluster=cluster, resource=kobj, error=text)
                self.events.event(WORKS.with_type_meta(work), WARNING, SYNC_FAILED,
                                  f"Failed to create or update resource({kobj}) in member cluster({cluster}): {text}")
                errors.append(text)
                continue
            self.events.event(WORKS.with_type_meta(work), NORMAL, SYNC_SUCCEED,
                              f"Successfully applied resource({namespace}/{name}) to cluster {cluster}")
            succeeded += 1
        if errors:
            message = applied_failed_message(succeeded, len(manifests), errors)
            await set_applied_condition(self.client, request, "False", APPLIED_FAILED, message)
            raise SyncError(message)
        await set_applied_condition(self.client, request, "True", APPLIED_SUCCESSFUL, APPLIED_MESSAGE)

    # ---------------------------------------------------------------- finalizer

    async def _latest(self, request: Request) -> Obj | None:
        """The Work as stored now; None when gone or being deleted (the deletion event brings it back)."""
        latest = await self.client.get_or_none(WORKS, request.name, request.namespace)
        if latest is None or objects.is_deleting(latest):
            return None
        return latest

    async def _finalize(self, request: Request, work: Obj, cluster: str, cluster_obj: Obj | None,
                        usable: bool) -> Result:
        """Deleting: clean the member up (when reachable), then drop our finalizer if the Work has it."""
        if usable:
            ready = self.shared.ready_member(cluster)
            assert ready is not None
            member, client = ready
            preserve = bool(objects.spec(work).get("preserveResourcesOnDeletion"))
            for manifest in work_manifests(work):
                if isinstance(manifest, dict):
                    await self.shared.watcher.delete(member, client, manifest,
                                                     owner=(request.namespace, request.name), preserve=preserve)
        elif cluster_obj is not None and not objects.is_deleting(cluster_obj):
            # Karmada keeps the Work until the member can be cleaned up, unless the cluster itself is going.
            return Result(requeue_after=self.shared.retry_delay(cluster))
        await self._remove_finalizer(request)
        return Result()

    async def _remove_finalizer(self, request: Request) -> None:
        async def attempt() -> None:
            latest = await self.client.get_or_none(WORKS, request.name, request.namespace)
            if latest is None:
                return
            finalizers = objects.finalizers(latest)
            if EXECUTION_CONTROLLER_FINALIZER not in finalizers:
                return
            remaining = [f for f in finalizers if f != EXECUTION_CONTROLLER_FINALIZER]
            try:
                await self.client.update(WORKS, {**latest, "metadata": {**objects.metadata(latest),
                                                                         "finalizers": remaining}})
            except ApiError as exc:
                if not exc.is_not_found:
                    raise

        await retry_on_conflict(attempt)


def setup_execution(manager: Manager, registry: MemberRegistry, *, workers: int = 5) -> list[Controller]:
    """The ``execution-controller`` on Works in the execution namespaces."""
    controller, _shared = work_controller(manager, registry, EXECUTION_CONTROLLER, ExecutionReconciler,
                                          WORK_PREDICATE, workers=workers)
    manager.add_controller(controller)
    return [controller]
