"""Binding status aggregation: Works' statuses → binding ``status.aggregatedStatus`` → template status.

Two controllers with one reconciler (Karmada's ``pkg/controllers/status/rb_status_controller.go``
and ``crb_status_controller.go``): ``resource-binding-status-controller`` for ResourceBindings and
``cluster-resource-binding-status-controller`` for ClusterResourceBindings.

Triggers (the controllers' predicates): a binding create with ``status.lastScheduledTime``; a
binding update that has it and changed ``spec.resource.resourceVersion``; a Work status change or
a Work delete, mapped to its binding through the ``resourcebinding.karmada.io/namespace|name`` (or
``clusterresourcebinding.karmada.io/name``) annotations. Binding deletes and Work creates are
ignored.

Reconcile (``AggregateResourceBindingWorkStatus`` in ``pkg/util/helper/workstatus.go``, then
``updateResourceStatus``): inside one conflict-retry loop, take the binding (the informer's
copy, or our own last write of it while the informer has not caught up; after a 409, a live
read), list its Works from the cache (index on the permanent-id label), assemble one item
per cluster, set ``aggregatedStatus`` and the ``FullyApplied`` condition, and write the status
subresource only when it differs (a PUT carrying the binding's resourceVersion, so a stale
copy or a concurrent writer makes it a 409 and the whole computation runs again on fresh
data, the lesson of karmada#7320 and #4986). As Karmada, the steady state costs no GET of
the binding. Then fold the items into the resource template's status
with the kind's interpreter (:mod:`interpreter.aggregatestatus`; the template read from the API
server, #5285), written the same way. That read starts with the reconcile, alongside the binding's
write (two round trips instead of three); the template is still written only after the binding,
and a copy made stale in between costs a 409 and a live read.
Events are recorded only when something was written (#2334): ``AggregateStatusSucceed`` on
the binding and on the template, ``AggregateStatusFailed`` when a write fails.

Beyond Karmada: the ``binding_status_aggregations_total{result}`` counter (``updated`` when
the binding or template status was written, ``unchanged``, ``error``); a template reference
with an empty apiVersion, kind or name is a terminal error instead of an endless retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from prometheus_client import Counter

from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.events import RBAC_RULES as EVENT_RULES
from controller_manager.handler import MapFunc
from controller_manager.manager import Manager
from controller_manager.mutationcache import MutationCache
from controller_manager.objects import Obj
from controller_manager.predicate import FuncPredicate
from controller_manager.rbac import PolicyRule, for_resources, informer_rules
from controller_manager.reconcile import Request, Result, TerminalError
from controller_manager.resource import Resource
from interpreter.aggregatestatus import INTERPRETED_RESOURCES, aggregate_status, template_resource
from karmada_api.bindings import CRB_KIND, RB_KIND, BindingKind, existing_clusters, work_index
from karmada_api.labels import CRB_NAME_ANNOTATION, RB_NAME_ANNOTATION, RB_NAMESPACE_ANNOTATION
from karmada_api.names import cluster_of_execution_space
from karmada_api.resources import CLUSTER_RESOURCE_BINDINGS, RESOURCE_BINDINGS, WORKS
from karmada_api.shapes import (
    AggregatedStatusItem,
    BindingSpec,
    ObjectReference,
    ResourceIdentifier,
    binding_spec,
    binding_status,
    work_spec,
    work_status,
)
from karmada_api.works import WORK_APPLIED
from kube_api.conditions import find_condition, set_condition

log = structlog.get_logger(__name__)

FULLY_APPLIED = "FullyApplied"
FULLY_APPLIED_SUCCESS = "FullyAppliedSuccess"
FULLY_APPLIED_FAILED = "FullyAppliedFailed"
FULLY_APPLIED_SUCCESS_MESSAGE = "All works have been successfully applied"
FULLY_APPLIED_FAILED_MESSAGE = "Failed to apply all works, see status.aggregatedStatus for details"
HEALTH_UNKNOWN = "Unknown"

COALESCE_PERIOD = 1.0
"""``--binding-status-coalesce-period``'s default (seconds): see :mod:`controller_manager.coalescing`."""

AGGREGATE_STATUS_SUCCEED = "AggregateStatusSucceed"
AGGREGATE_STATUS_FAILED = "AggregateStatusFailed"
TEMPLATE_UPDATED_MESSAGE = "Update Resource with AggregatedStatus successfully."

AGGREGATIONS = Counter("binding_status_aggregations_total",
                       "Binding status aggregations by result: updated (binding or template status written), "
                       "unchanged, error.", ["result"])


class AssembleError(Exception):
    """A Work does not describe the binding's resource as expected: retried with backoff."""


# ----------------------------------------------------------------------------- pure rules


def manifest_index(manifests: list[Any], ref: ObjectReference) -> int:
    """Index of the first manifest with the reference's apiVersion, kind, namespace and name (GetManifestIndex)."""
    for index, manifest in enumerate(manifests):
        if not isinstance(manifest, dict):
            raise AssembleError(f"failed to unmarshal work manifest {index}: not a JSON object")
        meta = objects.metadata(manifest)
        if (manifest.get("apiVersion") == ref.get("apiVersion") and manifest.get("kind") == ref.get("kind")
                and (meta.get("namespace") or "") == (ref.get("namespace") or "")
                and meta.get("name") == ref.get("name")):
            return index
    raise AssembleError("no such manifest exist")


def _group_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def equal_identifier(identifier: ResourceIdentifier, index: int, ref: ObjectReference) -> bool:
    """Whether a manifestStatus identifier names the reference at ``index`` (``resource`` is not compared)."""
    group, version = _group_version(str(ref.get("apiVersion") or ""))
    return bool(identifier.get("ordinal", 0) == index and (identifier.get("group") or "") == group
                and (identifier.get("version") or "") == version and identifier.get("kind") == ref.get("kind")
                and (identifier.get("namespace") or "") == (ref.get("namespace") or "")
                and identifier.get("name") == ref.get("name"))


def _item(cluster: str, *, applied: bool, message: str = "", health: str = "",
          status: Any = None) -> AggregatedStatusItem:
    """An AggregatedStatusItem as Go serializes it: zero values omitted (``omitempty``)."""
    item = AggregatedStatusItem(clusterName=cluster)
    if status is not None:
        item["status"] = copy.deepcopy(status)
    if applied:
        item["applied"] = True
    if message:
        item["appliedMessage"] = message
    if health:
        item["health"] = health
    return item


def assemble_work_status(works: Iterable[Obj], ref: ObjectReference) -> list[AggregatedStatusItem]:
    """One aggregatedStatus item per Work not being deleted, sorted by cluster name (``assembleWorkStatus``)."""
    items: list[AggregatedStatusItem] = []
    for work in works:
        if objects.is_deleting(work):
            continue
        workload = work_spec(work).get("workload") or {}
        manifests = workload.get("manifests") or []
        index = manifest_index(manifests, ref)
        try:
            cluster = cluster_of_execution_space(objects.namespace(work))
        except ValueError as exc:
            raise AssembleError(str(exc)) from None
        status = work_status(work)
        applied = find_condition(status.get("conditions"), WORK_APPLIED)
        if applied is None or applied.get("status") != "True":
            message = str(applied.get("message") or "") if applied else ""
            items.append(_item(cluster, applied=False, message=message, health=HEALTH_UNKNOWN))
            continue
        item = _item(cluster, applied=True, health=HEALTH_UNKNOWN)
        for manifest_status in status.get("manifestStatuses") or []:
            if equal_identifier(manifest_status.get("identifier") or {}, index, ref):
                item = _item(cluster, applied=True, health=str(manifest_status.get("health") or ""),
                             status=manifest_status.get("status"))
                break
        items.append(item)
    items.sort(key=lambda i: str(i.get("clusterName")))
    return items


def works_fully_applied(items: list[AggregatedStatusItem], targets: set[str]) -> bool:
    """Every target has exactly one applied item (health does not matter)."""
    if not targets or len(items) != len(targets):
        return False
    return all(item.get("applied") and item.get("clusterName") in targets for item in items)


def fully_applied_condition(spec: BindingSpec, items: list[AggregatedStatusItem]) -> dict[str, Any]:
    """The ``FullyApplied`` condition (``generateFullyAppliedCondition``); no observedGeneration, as
    ``util.NewCondition``."""
    if works_fully_applied(items, existing_clusters(spec)):
        return {"type": FULLY_APPLIED, "status": "True", "reason": FULLY_APPLIED_SUCCESS,
                "message": FULLY_APPLIED_SUCCESS_MESSAGE}
    return {"type": FULLY_APPLIED, "status": "False", "reason": FULLY_APPLIED_FAILED,
            "message": FULLY_APPLIED_FAILED_MESSAGE}


def binding_status_with(binding: Obj, items: list[AggregatedStatusItem]) -> dict[str, Any]:
    """The binding's status with ``items`` and the FullyApplied condition; the binding is not modified."""
    status = objects.deep_copy(objects.status(binding))
    if items:
        status["aggregatedStatus"] = items
    else:
        status.pop("aggregatedStatus", None)  # an empty list is omitted (omitempty)
    condition = fully_applied_condition(binding_spec(binding), items)
    status["conditions"] = set_condition(status.get("conditions") or [], condition)
    return status


# ----------------------------------------------------------------------------- triggers


def _last_scheduled(binding: Obj) -> bool:
    return bool(binding_status(binding).get("lastScheduledTime"))


def _resource_version(binding: Obj) -> str | None:
    resource = binding_spec(binding).get("resource") or {}
    return resource.get("resourceVersion")


def binding_created(binding: Obj) -> bool:
    """A created binding is reconciled only once scheduled (mostly: everything, after a restart)."""
    return _last_scheduled(binding)


def binding_updated(old: Obj, new: Obj) -> bool:
    """Only a template change (``spec.resource.resourceVersion``) of a scheduled binding."""
    return _last_scheduled(new) and _resource_version(old) != _resource_version(new)


def work_status_changed(old: Obj, new: Obj) -> bool:
    return bool(old.get("status") != new.get("status"))


def work_to_resource_binding(work: Obj) -> list[Request]:
    annotations = objects.annotations(work)
    namespace, name = annotations.get(RB_NAMESPACE_ANNOTATION), annotations.get(RB_NAME_ANNOTATION)
    return [Request(namespace, name)] if namespace and name else []


def work_to_cluster_resource_binding(work: Obj) -> list[Request]:
    name = objects.annotations(work).get(CRB_NAME_ANNOTATION)
    return [Request("", name)] if name else []


BINDING_PREDICATE = FuncPredicate(on_create=binding_created, on_update=binding_updated,
                                  on_delete=lambda _obj: False)
WORK_PREDICATE = FuncPredicate(on_create=lambda _obj: False, on_update=work_status_changed)


# ----------------------------------------------------------------------------- reconciler


@dataclass(frozen=True)
class _Target:
    """A resource template this controller writes the status of."""

    resource: Resource
    name: str
    namespace: str


@dataclass
class _Prefetch:
    target: _Target
    task: asyncio.Task[Obj | Exception | None]


def _template_target(ref: ObjectReference) -> _Target | None:
    """The template ``spec.resource`` names; None for a kind without an AggregateStatus interpreter."""
    api_version, kind, name = (str(ref.get(k) or "") for k in ("apiVersion", "kind", "name"))
    if not (api_version and kind and name):
        raise TerminalError(f"resource reference {api_version!r} {kind!r} {name!r} cannot be mapped")
    resource = template_resource(api_version, kind)
    return None if resource is None else _Target(resource, name, str(ref.get("namespace") or ""))


@dataclass
class _BindingResult:
    binding: Obj | None = None  # None: gone or being deleted
    items: list[AggregatedStatusItem] | None = None
    written: bool = False


class BindingStatusReconciler:
    """Aggregates one binding's Works into its status, then its template's status."""

    def __init__(self, client: KubeClient, kind: BindingKind, bindings: MutationCache, works: Indexer,
                 events: EventRecorder) -> None:
        self.client = client
        self.kind = kind
        self.bindings = bindings
        """With our own status writes: a reconcile before the informer has seen one starts from what we wrote,
        not from the copy it replaced (comparing with that copy could skip a needed write)."""
        self.works = works
        self.events = events

    async def reconcile(self, request: Request) -> Result:
        binding = self.bindings.get(str(request))
        if binding is None or objects.is_deleting(binding):
            return Result()
        # The template's GET does not depend on the binding's write: it runs alongside it, so that a
        # reconcile waits for two round trips instead of three. It is still written after the binding.
        prefetch = self._prefetch_template(binding)
        try:
            outcome = await self._sync_binding(request, binding)
            template_written = False
            if outcome.binding is not None and outcome.items is not None:
                ref = binding_spec(outcome.binding).get("resource") or {}
                template_written = await self._sync_template(ref, outcome.items, prefetch)
        except Exception:
            AGGREGATIONS.labels("error").inc()
            raise
        finally:
            if prefetch is not None and not prefetch.task.done():
                prefetch.task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await prefetch.task
        written = outcome.written or template_written
        AGGREGATIONS.labels("updated" if written else "unchanged").inc()
        return Result()

    def _prefetch_template(self, binding: Obj) -> _Prefetch | None:
        """Start reading the binding's template, when it has one this controller writes."""
        try:
            target = _template_target(binding_spec(binding).get("resource") or {})
        except TerminalError:
            return None  # _sync_template reports it
        if target is None:
            return None
        return _Prefetch(target, asyncio.create_task(self._read_quietly(target)))

    async def _read_quietly(self, target: _Target) -> Obj | Exception | None:
        """The template, None when it is gone, or what the read raised (the caller then reads it again)."""
        try:
            return await self.client.get_or_none(target.resource, target.name, target.namespace)
        except Exception as exc:  # handed to the caller, which reads again and reports it
            return exc

    def _works_of(self, binding: Obj) -> Sequence[Obj]:
        permanent_id = objects.labels(binding).get(self.kind.id_label)
        return self.works.by_index(self.kind.work_index, permanent_id) if permanent_id else []

    async def _sync_binding(self, request: Request, cached: Obj) -> _BindingResult:
        """Write aggregatedStatus + FullyApplied, recomputed from fresh data on every conflict retry.

        The first attempt writes over the informer's copy with its resourceVersion, as Karmada's
        cache-backed client does: a stale copy only costs a 409, after which the binding is read live.
        The Works are read from the cache inside each attempt (karmada#7320).
        """
        resource = self.kind.resource
        known: Obj | None = cached

        async def attempt() -> _BindingResult:
            nonlocal known
            latest: Obj | None = known
            known = None  # a retry follows a 409: the copy it wrote over was stale
            if latest is None:
                latest = await self.client.get_or_none(resource, request.name, request.namespace)
            if latest is None or objects.is_deleting(latest):
                return _BindingResult()
            ref = binding_spec(latest).get("resource") or {}
            items = assemble_work_status(self._works_of(latest), ref)
            status = binding_status_with(latest, items)
            if status == objects.status(latest):
                return _BindingResult(latest, items, written=False)
            written = self.bindings.mutated(await self.client.update_status(resource, {**latest, "status": status}))
            return _BindingResult(written, items, written=True)

        try:
            outcome = await retry_on_conflict(attempt)
        except AssembleError:
            raise  # Karmada: an error, retried, with no event
        except ApiError as exc:
            if exc.is_not_found:  # deleted between the read and the write
                return _BindingResult()
            self.events.event(resource.with_type_meta(cached), WARNING, AGGREGATE_STATUS_FAILED, str(exc))
            raise
        if outcome.written and outcome.binding is not None:
            log.debug("binding status aggregated", controller=self.kind.status_controller, binding=str(request))
            self.events.event(resource.with_type_meta(outcome.binding), NORMAL, AGGREGATE_STATUS_SUCCEED,
                              f"Update {self.kind.describe(outcome.binding)} with AggregatedStatus successfully.")
        return outcome

    async def _sync_template(self, ref: ObjectReference, items: list[AggregatedStatusItem],
                             prefetch: _Prefetch | None = None) -> bool:
        """Fold ``items`` into the template's status (``updateResourceStatus``); whether it was written.

        The first attempt may use ``prefetch``, a read of the same template started with the reconcile:
        a copy older than a live read by one binding write, which a 409 corrects as for any stale copy.
        """
        target = _template_target(ref)
        if target is None:
            return False  # no AggregateStatus interpreter for this kind (ConfigMap, ClusterRole, CRs...)
        resource, name, namespace = target.resource, target.name, target.namespace
        early = prefetch.task if prefetch is not None and prefetch.target == target else None
        fetched: Obj | None = None

        async def attempt() -> bool:
            nonlocal fetched, early
            template: Obj | Exception | None
            if early is not None:  # the first attempt; a retry follows a 409 and reads live
                template, early = await early, None
                if isinstance(template, Exception):
                    template = await self.client.get_or_none(resource, name, namespace)
            else:
                template = await self.client.get_or_none(resource, name, namespace)
            if template is None:
                return False
            fetched = template
            status = aggregate_status(template, items)
            if status is None or status == objects.status(template):
                return False
            await self.client.update_status(resource, {**template, "status": status})
            return True

        try:
            written = await retry_on_conflict(attempt)
        except ApiError as exc:
            if exc.is_not_found:
                return False
            if fetched is not None:
                self.events.event(resource.with_type_meta(fetched), WARNING, AGGREGATE_STATUS_FAILED, str(exc))
            raise
        except ValueError as exc:  # a member status the interpreter cannot read
            if fetched is not None:
                self.events.event(resource.with_type_meta(fetched), WARNING, AGGREGATE_STATUS_FAILED, str(exc))
            raise
        if written and fetched is not None:
            self.events.event(resource.with_type_meta(fetched), NORMAL, AGGREGATE_STATUS_SUCCEED,
                              TEMPLATE_UPDATED_MESSAGE)
        return written


# ----------------------------------------------------------------------------- wiring

RBAC_RULES: list[PolicyRule] = [
    *informer_rules(RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, WORKS),  # _setup(): bindings and Works
    # _sync_binding(): a PUT of the status subresource; after a 409, the latest binding from the API server
    *for_resources((RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS), "get"),
    *for_resources((RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS), "update", subresource="status"),
    # _sync_template(): GET the resource template, PUT its status, for the kinds with an AggregateStatus
    # interpreter only: registering a kind there grants this access to it, and nothing else is touched
    *for_resources(INTERPRETED_RESOURCES.values(), "get"),
    *for_resources(INTERPRETED_RESOURCES.values(), "update", subresource="status"),
    *EVENT_RULES,  # AggregateStatusSucceed / AggregateStatusFailed
]
"""The permissions both binding-status controllers need on the Karmada API server."""


def _setup(manager: Manager, kind: BindingKind, map_func: MapFunc, *, workers: int,
           **controller_options: Any) -> Controller:
    bindings = manager.informer(kind.resource)
    works = manager.informer(WORKS)
    try:
        works.store.index_values(kind.work_index)
    except KeyError:
        works.add_indexers({kind.work_index: work_index(kind.id_label)})
    reconciler = BindingStatusReconciler(manager.client, kind, bindings.mutation_cache(), works.store,
                                         manager.event_recorder(kind.status_controller))
    controller = Controller(kind.status_controller, reconciler, workers=workers, **controller_options)
    controller.watches(bindings, predicates=[BINDING_PREDICATE])
    controller.watches(works, map_func=map_func, predicates=[WORK_PREDICATE])
    manager.add_controller(controller)
    return controller


def setup_resource_binding_status(manager: Manager, *, workers: int = 5, **controller_options: Any) -> Controller:
    """Register ``resource-binding-status-controller`` (``--concurrent-resourcebinding-syncs`` workers)."""
    return _setup(manager, RB_KIND, work_to_resource_binding, workers=workers, **controller_options)


def setup_cluster_resource_binding_status(manager: Manager, *, workers: int = 5,
                                          **controller_options: Any) -> Controller:
    """Register ``cluster-resource-binding-status-controller`` (``--concurrent-clusterresourcebinding-syncs``)."""
    return _setup(manager, CRB_KIND, work_to_cluster_resource_binding, workers=workers, **controller_options)
