"""The simulated work-status controller: member objects' status reflected into their Works.

``status.manifestStatuses`` of every applied Work follows the member objects it describes:
one item per manifest ``{identifier, status, health}``, the status reflected and the health
interpreted with Karmada's default interpreters (``reflectstatus.go``, ``healthy.go``). This is
what the product's binding-status controller aggregates (``controllers/bindingstatus.py``).

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

import copy
import re
from collections.abc import Callable
from typing import Any

import structlog

from clusteraccess.cluster import MemberCluster
from clusteraccess.registry import MemberRegistry
from controller_manager.cache import Indexer, Obj
from controller_manager.client import ApiError, KubeClient, Resource, retry_on_conflict
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.manager import Manager
from controller_manager.predicate import FuncPredicate
from controller_manager.reconcile import Request, Result
from karmada_api.conditions import find_condition
from karmada_api.labels import RESOURCE_TEMPLATE_GENERATION
from karmada_api.names import cluster_of_execution_space, execution_space
from karmada_api.resources import CLUSTERS, WORKS

from .memberobjects import (
    APPLIED_MESSAGE,
    CLUSTER_PREDICATE,
    SYNC_FAILED,
    SYNC_SUCCEED,
    WORK_APPLIED,
    ConflictError,
    MemberObjects,
    UnknownKindError,
    api_version_parts,
    cache_key,
    cluster_accepts_work,
    desired_object,
    enqueue_cluster_works,
    error_text,
    in_execution_space,
    member_objects,
    object_ref,
    object_version,
    owning_work,
    set_applied_condition,
    typed_work,
    works_of_cluster,
)

log = structlog.get_logger(__name__)

WORK_STATUS_CONTROLLER = "work-status-controller"
HEALTHY, UNHEALTHY, UNKNOWN = "Healthy", "Unhealthy", "Unknown"
RECREATE_SUCCESSFUL = "ReCreateSuccessful"
RECREATE_FAILED = "ReCreateFailed"
REFLECT_STATUS_FAILED = "ReflectStatusFailed"
INTERPRET_HEALTH_FAILED = "InterpretHealthFailed"
PROPAGATION_INSTRUCTION = "propagation.karmada.io/instruction"  # "suppressed": never re-create

PENDING_RETRY = 0.5  # a member informer still listing


class ReflectError(ValueError):
    """A member object whose status cannot be read as its kind's (ConvertToTypedObject failed)."""


# ============================================================================= pure rules


def _int(source: Any, field: str) -> int:
    """An integer field (0 when absent), as Go's typed conversion reads it; ReflectError otherwise."""
    if not isinstance(source, dict):
        raise ReflectError(f"expected an object holding {field!r}, got {type(source).__name__}")
    value = source.get(field)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ReflectError(f"{field}: expected an integer, got {value!r}")
    return value


def _status_map(obj: Obj) -> dict[str, Any] | None:
    """``.status`` when present (NestedMap); ReflectError when it is not an object."""
    if "status" not in obj or obj["status"] is None:
        return None
    status = obj["status"]
    if not isinstance(status, dict):
        raise ReflectError(f".status accessor error: {status!r} is of the type {type(status).__name__}, "
                           "expected map[string]interface{}")
    return status


_INT64 = re.compile(r"[+-]?[0-9]+")


def template_generation(obj: Obj) -> int:
    """The ``resourcetemplate.karmada.io/generation`` annotation as int64 ("" → 0, like strconv)."""
    text = str(((obj.get("metadata") or {}).get("annotations") or {}).get(RESOURCE_TEMPLATE_GENERATION) or "")
    if not text:
        return 0
    if not _INT64.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
        raise ReflectError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    return int(text)


def _federated_generation(obj: Obj) -> dict[str, Any]:
    """FederatedGeneration (both omitempty): the member generation and the template generation."""
    out: dict[str, Any] = {}
    generation = _int(obj.get("metadata") or {}, "generation")
    if generation:
        out["generation"] = generation
    template = template_generation(obj)
    if template:
        out["resourceTemplateGeneration"] = template
    return out


def _fields(status: dict[str, Any], always: tuple[str, ...], omitempty: tuple[str, ...],
            order: tuple[str, ...]) -> dict[str, Any]:
    """Integer fields in Go's struct order; ``omitempty`` ones dropped when zero."""
    out: dict[str, Any] = {}
    for field in order:
        value = _int(status, field)
        if field in always or (field in omitempty and value):
            out[field] = value
    return out


def _reflect_deployment(obj: Obj) -> dict[str, Any] | None:
    status = _status_map(obj)
    if status is None:
        return None
    fields = ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
              "unavailableReplicas")
    template = _federated_generation(obj)
    out = {**template, **_fields(status, (), fields, fields)}
    return out or None  # "{}": the status has not been collected from the member yet


def _reflect_statefulset(obj: Obj) -> dict[str, Any] | None:
    status = _status_map(obj)
    if status is None:
        return None
    template = _federated_generation(obj)
    order = ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")
    return {**template, **_fields(status, ("replicas", "availableReplicas"),
                                  ("readyReplicas", "currentReplicas", "updatedReplicas"), order)}


def _reflect_daemonset(obj: Obj) -> dict[str, Any] | None:
    status = _status_map(obj)
    if status is None:
        return None
    template = _federated_generation(obj)
    always = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")
    omitempty = ("observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable")
    return {**template, **_fields(status, always, omitempty, always + omitempty)}


def _reflect_job(obj: Obj) -> dict[str, Any] | None:
    status = _status_map(obj)
    if status is None:
        return None
    out: dict[str, Any] = {}
    for field in ("conditions", "startTime", "completionTime"):
        if status.get(field):
            out[field] = copy.deepcopy(status[field])
    out.update(_fields(status, (), ("active", "succeeded", "failed"), ("active", "succeeded", "failed")))
    return out


def _load_balancer(status: dict[str, Any]) -> dict[str, Any]:
    balancer = status.get("loadBalancer") or {}
    if not isinstance(balancer, dict):
        raise ReflectError(f"loadBalancer: expected an object, got {balancer!r}")
    ingress = balancer.get("ingress") or []
    if not isinstance(ingress, list):
        raise ReflectError(f"loadBalancer.ingress: expected a list, got {ingress!r}")
    return {"ingress": copy.deepcopy(ingress)} if ingress else {}


def _reflect_service(obj: Obj) -> dict[str, Any] | None:
    """LoadBalancer Services only: ``{loadBalancer: ...}`` (not omitted: Go's omitempty keeps structs)."""
    if (obj.get("spec") or {}).get("type") != "LoadBalancer":
        return None
    status = _status_map(obj)
    if status is None:
        return None
    return {"loadBalancer": _load_balancer(status)}


def _reflect_pdb(obj: Obj) -> dict[str, Any] | None:
    status = _status_map(obj)
    if status is None:
        return None
    out: dict[str, Any] = {}
    if status.get("disruptedPods"):
        out["disruptedPods"] = copy.deepcopy(status["disruptedPods"])
    fields = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")
    out.update(_fields(status, fields, (), fields))
    return out


def _reflect_hpa(obj: Obj) -> dict[str, Any] | None:
    status = _status_map(obj)
    if status is None:
        return None
    return _fields(status, ("desiredReplicas",), ("currentReplicas",), ("currentReplicas", "desiredReplicas"))


def _reflect_whole(obj: Obj) -> dict[str, Any] | None:
    status = _status_map(obj)
    return copy.deepcopy(status) if status is not None else None


_REFLECTORS: dict[tuple[str, str], Callable[[Obj], dict[str, Any] | None]] = {
    ("apps/v1", "Deployment"): _reflect_deployment,
    ("v1", "Service"): _reflect_service,
    ("networking.k8s.io/v1", "Ingress"): _reflect_whole,
    ("batch/v1", "Job"): _reflect_job,
    ("apps/v1", "DaemonSet"): _reflect_daemonset,
    ("apps/v1", "StatefulSet"): _reflect_statefulset,
    ("policy/v1", "PodDisruptionBudget"): _reflect_pdb,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): _reflect_hpa,
}


def reflect_status(api_version: str, kind: str, obj: Obj) -> dict[str, Any] | None:
    """The status Karmada's default interpreter reflects for a member object (None: no status to report).

    Deployment: FederatedGeneration + replica counters + observedGeneration, every field
    ``omitempty`` (an all-zero result is None). StatefulSet/DaemonSet: FederatedGeneration +
    their counters (Go's non-omitempty fields kept at 0). Job: counters, conditions and times.
    Service: the load balancer of LoadBalancer Services only. PDB, HPA: their counters. Every
    other kind (ReplicaSet, Pod, Ingress, PVC, custom resources...): the whole ``.status``.
    Raises ReflectError when the object cannot be read as its kind.
    """
    reflect = _REFLECTORS.get((api_version, kind), _reflect_whole)
    return reflect(obj)


# ----------------------------------------------------------------------------- health


def _generation(obj: Obj) -> int:
    return _int(obj.get("metadata") or {}, "generation")


def _spec_replicas(obj: Obj) -> int | None:
    spec = obj.get("spec") or {}
    return None if spec.get("replicas") is None else _int(spec, "replicas")


def _deployment_healthy(obj: Obj) -> bool:
    status = obj.get("status") or {}
    if _int(status, "observedGeneration") != _generation(obj):
        return False
    replicas = _spec_replicas(obj)
    if replicas is not None and _int(status, "updatedReplicas") < replicas:
        return False
    return _int(status, "availableReplicas") >= _int(status, "updatedReplicas")


def _statefulset_healthy(obj: Obj) -> bool:
    status = obj.get("status") or {}
    if _int(status, "observedGeneration") != _generation(obj):
        return False
    replicas = _spec_replicas(obj)
    if replicas is not None:
        rolling = ((obj.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
        want_updated = replicas - (_int(rolling, "partition") if rolling.get("partition") is not None else 0)
        if _int(status, "updatedReplicas") < want_updated:
            return False
        if _int(status, "availableReplicas") < replicas:
            return False
    return _int(status, "availableReplicas") >= _int(status, "updatedReplicas")


def _replicaset_healthy(obj: Obj) -> bool:
    status = obj.get("status") or {}
    if _int(status, "observedGeneration") != _generation(obj):
        return False
    replicas = _spec_replicas(obj)
    return not (replicas is not None and _int(status, "availableReplicas") < replicas)


def _daemonset_healthy(obj: Obj) -> bool:
    status = obj.get("status") or {}
    if _int(status, "observedGeneration") != _generation(obj):
        return False
    if _int(status, "updatedNumberScheduled") < _int(status, "desiredNumberScheduled"):
        return False
    return _int(status, "numberAvailable") >= _int(status, "updatedNumberScheduled")


def _has_ingress_point(obj: Obj) -> bool:
    return any(isinstance(i, dict) and (i.get("hostname") or i.get("ip"))
               for i in _load_balancer(obj.get("status") or {}).get("ingress") or [])


def _service_healthy(obj: Obj) -> bool:
    if (obj.get("spec") or {}).get("type") != "LoadBalancer":
        return True
    return _has_ingress_point(obj)


def _pvc_healthy(obj: Obj) -> bool:
    return (obj.get("status") or {}).get("phase") == "Bound"


def _pod_healthy(obj: Obj) -> bool:
    status = obj.get("status") or {}
    if status.get("phase") == "Succeeded":
        return True
    ready = next((c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("type") == "Ready"),
                 None)
    return status.get("phase") == "Running" and ready is not None and ready.get("status") == "True"


def _pdb_healthy(obj: Obj) -> bool:
    status = obj.get("status") or {}
    return _int(status, "currentHealthy") >= _int(status, "desiredHealthy")


_HEALTH: dict[tuple[str, str], Callable[[Obj], bool]] = {
    ("apps/v1", "Deployment"): _deployment_healthy,
    ("apps/v1", "StatefulSet"): _statefulset_healthy,
    ("apps/v1", "ReplicaSet"): _replicaset_healthy,
    ("apps/v1", "DaemonSet"): _daemonset_healthy,
    ("v1", "Service"): _service_healthy,
    ("networking.k8s.io/v1", "Ingress"): _has_ingress_point,
    ("v1", "PersistentVolumeClaim"): _pvc_healthy,
    ("v1", "Pod"): _pod_healthy,
    ("policy/v1", "PodDisruptionBudget"): _pdb_healthy,
}


def interpret_health(api_version: str, kind: str, obj: Obj) -> str:
    """``Healthy``/``Unhealthy`` by the kind's rule; ``Healthy`` for kinds without one (Karmada's
    ``interpretHealth`` skips the assessment); ``Unknown`` when the object cannot be read."""
    rule = _HEALTH.get((api_version, kind))
    if rule is None:
        return HEALTHY
    try:
        return HEALTHY if rule(obj) else UNHEALTHY
    except (ReflectError, TypeError, AttributeError):
        return UNKNOWN


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


def _kobj(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def reflect_allowed(work: Obj) -> bool:
    """Applied True (IsResourceApplied), or a failed re-creation still to be retried."""
    applied = find_condition((work.get("status") or {}).get("conditions"), WORK_APPLIED)
    if applied is None:
        return False
    return applied.get("status") == "True" or applied.get("reason") == RECREATE_FAILED


def _applied_state(work: Obj) -> tuple[Any, Any]:
    applied = find_condition((work.get("status") or {}).get("conditions"), WORK_APPLIED) or {}
    return applied.get("status"), applied.get("reason")


def _work_update(old: Obj, new: Obj) -> bool:
    """Spec changes, the Applied condition moving, a deletion starting: not our own status writes."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    return (old_meta.get("generation") != new_meta.get("generation")
            or bool(old_meta.get("deletionTimestamp")) != bool(new_meta.get("deletionTimestamp"))
            or _applied_state(old) != _applied_state(new))


WORK_PREDICATE = FuncPredicate(on_create=in_execution_space,
                               on_update=lambda old, new: in_execution_space(new) and _work_update(old, new),
                               on_delete=lambda _obj: False)


class WorkStatusReconciler:
    """Reflects one Work's member objects into its ``status.manifestStatuses``."""

    def __init__(self, client: KubeClient, shared: MemberObjects, works: Indexer, clusters: Indexer,
                 events: EventRecorder) -> None:
        self.client = client
        self.shared = shared
        self.works = works
        self.clusters = clusters
        self.events = events

    async def reconcile(self, request: Request) -> Result:
        work = self.works.get(str(request))
        if work is None or (work.get("metadata") or {}).get("deletionTimestamp") or not reflect_allowed(work):
            return Result()
        try:
            cluster = cluster_of_execution_space(request.namespace)
        except ValueError:
            return Result()
        ready = self.shared.ready_member(cluster)
        if ready is None or not cluster_accepts_work(self.clusters.get(cluster)):
            return Result(requeue_after=self.shared.retry_delay(cluster))
        member, client = ready
        manifests = ((work.get("spec") or {}).get("workload") or {}).get("manifests") or []
        suspended = bool((work.get("spec") or {}).get("suspendDispatching"))
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
            observed = informer.store.get(cache_key(namespace, name))
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
                self.events.event(typed_work(work), WARNING, REFLECT_STATUS_FAILED,
                                  f"Reflect status for object({kind}/{namespace}/{name}) failed, err: {exc}.")
                errors.append(str(exc))
                continue
            health = interpret_health(api_version, kind, observed)
            if health == UNKNOWN:
                self.events.event(typed_work(work), WARNING, INTERPRET_HEALTH_FAILED,
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
        labels = (work.get("metadata") or {}).get("labels") or {}
        if labels.get(PROPAGATION_INSTRUCTION) == "suppressed":
            return
        cluster = member.name
        _api_version, _kind, namespace, name = object_ref(manifest)
        try:
            created = await self.shared.watcher.create(member, client,
                                                       desired_object(manifest, request.namespace, request.name))
        except (ApiError, UnknownKindError, ConflictError) as exc:
            text = error_text(exc)
            self.events.event(typed_work(work), WARNING, SYNC_FAILED,
                              f"Failed to create or update resource({_kobj(namespace, name)}) in member "
                              f"cluster({cluster}): {text}")
            await set_applied_condition(self.client, request, "False", RECREATE_FAILED, text)
            raise
        if created is None:
            return  # it exists: our cache is behind, its add event is on the way
        log.info("re-created member object deleted behind Karmada's back", cluster=cluster,
                 kind=manifest.get("kind"), namespace=namespace, name=name)
        self.events.event(typed_work(work), NORMAL, SYNC_SUCCEED,
                          f"Successfully applied resource({namespace}/{name}) to cluster {cluster}")
        await set_applied_condition(self.client, request, "True", RECREATE_SUCCESSFUL, APPLIED_MESSAGE)

    async def _correct_drift(self, request: Request, ordinal: int, *, member: MemberCluster, client: KubeClient,
                             resource: Resource, observed: Obj) -> str:
        """Apply the manifest again when the member object is not the version Karmada wrote; the error.

        The manifest is read from the cache again just before: a Work changed meanwhile is the one applied.
        """
        work = self.works.get(str(request))
        manifests = (((work or {}).get("spec") or {}).get("workload") or {}).get("manifests") or []
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
            self.events.event(typed_work(work), WARNING, SYNC_FAILED,
                              f"Failed to create or update resource({_kobj(namespace, name)}) in member "
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
            if (latest.get("metadata") or {}).get("deletionTimestamp"):
                return
            status = latest.get("status") or {}
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
    shared = member_objects(registry)
    works = manager.informer(WORKS)
    clusters = manager.informer(CLUSTERS)
    reconciler = WorkStatusReconciler(manager.client, shared, works.store, clusters.store,
                                      manager.event_recorder(WORK_STATUS_CONTROLLER))
    controller = Controller(WORK_STATUS_CONTROLLER, reconciler, workers=workers)
    controller.watches(works, predicates=[WORK_PREDICATE])
    controller.watches(clusters, map_func=works_of_cluster(works.store), predicates=[CLUSTER_PREDICATE])
    shared.informers.add_handler(_member_object_handler(controller))
    registry.on_change(enqueue_cluster_works(controller, works.store))
    if not shared.runnable_added:
        manager.add_runnable("member-object-informers", shared.informers.run, needs_leader=False)
        shared.runnable_added = True
    manager.add_controller(controller)
    return [controller]
