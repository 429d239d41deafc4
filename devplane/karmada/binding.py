"""The binding controllers: a (Cluster)ResourceBinding's scheduling result → one Work per cluster.

``binding-controller`` (ResourceBindings) and ``cluster-resource-binding-controller``
(ClusterResourceBindings), Karmada's ``pkg/controllers/binding``:

* targets are ``spec.clusters`` plus the clusters of ``spec.requiredBy``; each gets the Work
  ``work_name(kind, name, namespace)`` in ``karmada-es-<cluster>`` with the template rendered for
  it (the Work contract: :func:`devplane.karmada.workloads.render_manifest`);
* each Work carries the execution controller's finalizer ``karmada.io/execution-controller``;
* Works of clusters that are no target any more are deleted, except those of graceful eviction
  tasks whose purgeMode is not ``Directly`` (``obtainBindingSpecExistingClusters``): they are
  kept as they are until the task goes;
* a target with no Cluster object gets no Work: Karmada's override step reads the Cluster, so the
  sync stops there with the API's NotFound text (``clusters.cluster.karmada.io "<name>" not found``);
  the targets before it keep their Works, as in Karmada's ``ensureWork`` loop;
* the finalizer ``karmada.io/binding-controller`` (CRB: ``karmada.io/cluster-resource-binding-controller``)
  holds a deleted binding until its Works are deleted. The detector sets it on the bindings it
  makes; this controller only removes it, so a binding made by hand keeps the finalizers it was
  created with, and a binding that is gone (no finalizer held it) leaves its Works, as in Karmada.

A binding is re-rendered when its generation changes (scheduling, eviction tasks, and template
edits, which the detector records in ``spec.resource.resourceVersion``), when one of its Works is
deleted or changed by someone else, and when a missing execution namespace or Cluster appears. Events
``SyncWorkSucceed`` (only when a Work was written or deleted) and ``SyncWorkFailed`` go to the
binding and the template.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.manager import Manager
from controller_manager.objects import MutableObj, Obj
from controller_manager.predicate import AnyOf, FuncPredicate, GenerationChangedPredicate
from controller_manager.reconcile import Request, Result, TerminalError
from controller_manager.resource import Resource
from karmada_api.bindings import CRB_KIND, RB_KIND, BindingKind, existing_clusters, kind_of, work_index
from karmada_api.labels import (
    CONFLICT_RESOLUTION_ANNOTATION,
    CRB_NAME_ANNOTATION,
    EXECUTION_CONTROLLER_FINALIZER,
    MANAGED_LABEL,
    RB_NAME_ANNOTATION,
    RB_NAMESPACE_ANNOTATION,
)
from karmada_api.names import cluster_of_execution_space, execution_space, work_name
from karmada_api.resources import CLUSTERS, WORKS
from karmada_api.shapes import binding_spec
from kube_api.resources import NAMESPACES

from ..runtime import resource_version_number
from .workloads import (
    TEMPLATE_KINDS,
    job_completions,
    kind_for,
    render_manifest,
)

log = structlog.get_logger(__name__)

SYNC_WORK_SUCCEED = "SyncWorkSucceed"
SYNC_WORK_FAILED = "SyncWorkFailed"
CLEANUP_WORK_FAILED = "CleanupWorkFailed"


WORK_INDEX_BY_BINDING = "binding-controller-work-by-binding"
BINDING_INDEX_BY_CLUSTER = "binding-controller-binding-by-cluster"


# ----------------------------------------------------------------------------- pure rules


def merge_target_clusters(spec: Obj) -> list[dict[str, Any]]:
    """``mergeTargetClusters``: ``spec.clusters`` then the clusters only ``spec.requiredBy`` names."""
    clusters = [dict(c) for c in spec.get("clusters") or [] if c.get("name")]
    names = {c["name"] for c in clusters}
    for required in spec.get("requiredBy") or []:
        for cluster in required.get("clusters") or []:
            if cluster.get("name") and cluster["name"] not in names:
                names.add(cluster["name"])
                clusters.append(dict(cluster))
    return clusters


def suspend_dispatching(spec: Obj, cluster: str) -> bool:
    """``shouldSuspendDispatching``: all dispatching, or this cluster's."""
    suspension = spec.get("suspension") or {}
    if suspension.get("dispatching"):
        return True
    return cluster in ((suspension.get("dispatchingOnClusters") or {}).get("clusterNames") or [])


def conflict_resolution(template: Obj, spec: Obj) -> str:
    """``mergeConflictResolution``: the template's annotation if valid, else the binding's (Abort by default)."""
    from_template = objects.annotations(template).get(CONFLICT_RESOLUTION_ANNOTATION)
    if from_template in ("overwrite", "abort"):
        return str(from_template)
    return "overwrite" if spec.get("conflictResolution") == "Overwrite" else "abort"


def desired_work(template: Obj, binding: Obj, cluster: dict[str, Any],
                 completions: dict[str, int] | None) -> dict[str, Any]:
    """The Work of ``binding`` for ``cluster`` (the Work contract)."""
    spec = objects.spec(binding)
    name = str(cluster["name"])
    replicas = cluster.get("replicas")
    manifest = render_manifest(template, binding, int(replicas or 0),
                               completions=completions.get(name) if completions is not None else None)
    id_key = kind_of(binding).id_label
    id_value = str(objects.labels(binding).get(id_key) or "")
    annotations = kind_of(binding).work_annotations(binding)
    annotations[CONFLICT_RESOLUTION_ANNOTATION] = conflict_resolution(template, spec)
    work_spec: dict[str, Any] = {"workload": {"manifests": [manifest]}}
    if spec.get("preserveResourcesOnDeletion") is not None:
        work_spec["preserveResourcesOnDeletion"] = bool(spec["preserveResourcesOnDeletion"])
    if suspend_dispatching(spec, name):
        work_spec["suspendDispatching"] = True
    return {"apiVersion": WORKS.api_version, "kind": WORKS.kind,
            "metadata": {"name": work_name(str(template.get("kind")), objects.name(template),
                                           objects.namespace(template)),
                         "namespace": execution_space(name),
                         "finalizers": [EXECUTION_CONTROLLER_FINALIZER],  # ensureWork's workMeta
                         "labels": {id_key: id_value, MANAGED_LABEL: "true"},
                         "annotations": annotations},
            "spec": work_spec}


def merge_work(existing: Obj, desired: Obj) -> dict[str, Any]:
    """``CreateOrUpdateWork``: labels, annotations and finalizers merged, the spec replaced."""
    merged = objects.deep_copy(existing)
    meta = merged.setdefault("metadata", {})
    finalizers = list(meta.get("finalizers") or [])
    meta["finalizers"] = finalizers + [f for f in objects.finalizers(desired) if f not in finalizers]
    meta["labels"] = {**(meta.get("labels") or {}), **objects.labels(desired)}
    meta["annotations"] = {**(meta.get("annotations") or {}), **objects.annotations(desired)}
    merged["spec"] = copy.deepcopy(desired["spec"])
    return merged


def work_cluster(work: Obj) -> str:
    """The member a Work is for; ``""`` for a Work outside an execution space."""
    try:
        return cluster_of_execution_space(objects.namespace(work))
    except ValueError:
        return ""


# ----------------------------------------------------------------------------- indexes


def work_binding_ref(work: Obj) -> list[str]:
    """Index: the binding a Work points back to (``rb:<ns>/<name>`` or ``crb:<name>``)."""
    annotations = objects.annotations(work)
    if annotations.get(RB_NAMESPACE_ANNOTATION) and annotations.get(RB_NAME_ANNOTATION):
        return [f"rb:{annotations[RB_NAMESPACE_ANNOTATION]}/{annotations[RB_NAME_ANNOTATION]}"]
    if annotations.get(CRB_NAME_ANNOTATION):
        return [f"crb:{annotations[CRB_NAME_ANNOTATION]}"]
    return []


def binding_ref(kind: BindingKind, request: Request) -> str:
    return f"rb:{request.namespace}/{request.name}" if kind.resource.namespaced else f"crb:{request.name}"


def binding_clusters(binding: Obj) -> list[str]:
    """Index: every cluster a binding may hold a Work in (to react to its execution namespace appearing)."""
    return sorted(name for name in existing_clusters(binding_spec(binding)) if name)


def work_to_binding(kind: BindingKind) -> Callable[[Obj], list[Request]]:
    def mapper(work: Obj) -> list[Request]:
        refs = work_binding_ref(work)
        prefix = "rb:" if kind.resource.namespaced else "crb:"
        if not refs or not refs[0].startswith(prefix):
            return []
        namespace, _, name = refs[0][len(prefix):].rpartition("/")
        return [Request(namespace, name)]

    return mapper


def namespace_to_bindings(bindings: Indexer) -> Callable[[Obj], list[Request]]:
    def mapper(namespace: Obj) -> list[Request]:
        try:
            cluster = cluster_of_execution_space(objects.name(namespace))
        except ValueError:
            return []
        return [Request.for_object(b) for b in bindings.by_index(BINDING_INDEX_BY_CLUSTER, cluster)]

    return mapper


# ----------------------------------------------------------------------------- reconciler


class SyncError(Exception):
    """Some Works could not be synced (the others were): retried with backoff."""


class BindingReconciler:
    """Keeps one binding's Works equal to what its scheduling result and template say."""

    def __init__(self, client: KubeClient, kind: BindingKind, bindings: Indexer, works: Indexer, *,
                 templates: dict[Resource, Indexer], clusters: Indexer, events: EventRecorder) -> None:
        self.client = client
        self.kind = kind
        self.bindings = bindings
        self.works = works
        self.templates = templates
        self.clusters = clusters
        self.events = events

    async def reconcile(self, request: Request) -> Result:
        cached = self.bindings.get(str(request))
        if cached is None:
            return Result()  # gone: its finalizer, if it had one, already saw its Works deleted
        binding = self.kind.resource.with_type_meta(cached)
        if objects.is_deleting(binding):
            await self._finalize(binding)
            return Result()
        try:  # syncBinding: orphans first, so a failing target never keeps a stale Work elsewhere
            removed = await self._remove_orphan_works(binding)
        except ApiError as exc:
            self.events.event(binding, WARNING, CLEANUP_WORK_FAILED, str(exc))
            raise
        template = await self._template(binding)
        if template is None:
            return Result()  # the template is gone: the garbage collector deletes the binding
        try:
            written = removed + await self._sync_works(binding, template)
        except (ApiError, SyncError) as exc:
            self.events.event(binding, WARNING, SYNC_WORK_FAILED, str(exc))
            self.events.event(template, WARNING, SYNC_WORK_FAILED, str(exc))
            raise
        if written:
            message = f"Sync work of {self.kind.lower_noun}({self.kind.key(binding)}) successful."
            self.events.event(binding, NORMAL, SYNC_WORK_SUCCEED, message)
            self.events.event(template, NORMAL, SYNC_WORK_SUCCEED, message)
        return Result()

    # ------------------------------------------------------------- binding

    async def _finalize(self, binding: MutableObj) -> None:
        """A deleting binding: delete all its Works, then drop our finalizer if it holds one."""
        permanent_id = objects.labels(binding).get(self.kind.id_label)
        works = list(self.works.by_index(WORK_INDEX_BY_BINDING, binding_ref(self.kind, Request.for_object(binding))))
        if permanent_id:  # the API, not the cache: a Work written a moment ago must not be missed
            listed = await self.client.list(WORKS, label_selector=f"{self.kind.id_label}={permanent_id}")
            works += listed.get("items") or []
        await self._delete_works(works)

        async def attempt() -> None:
            name, namespace = objects.name(binding), objects.namespace(binding)
            latest = await self.client.get_or_none(self.kind.resource, name, namespace)
            if latest is None or self.kind.finalizer not in objects.finalizers(latest):
                return
            latest["metadata"]["finalizers"] = [f for f in objects.finalizers(latest) if f != self.kind.finalizer]
            await self.client.update(self.kind.resource, latest)

        await retry_on_conflict(attempt)

    async def _template(self, binding: MutableObj) -> dict[str, Any] | None:
        """The binding's resource template, from the cache unless the cache is older than the binding says."""
        ref = objects.spec(binding).get("resource") or {}
        kind = kind_for(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))
        if kind is None:
            message = (f"resource template kind {ref.get('apiVersion')}/{ref.get('kind')} "
                       "is not propagated by the dev plane")
            self.events.event(binding, WARNING, SYNC_WORK_FAILED, message)
            raise TerminalError(message)
        namespace, name = str(ref.get("namespace") or ""), str(ref.get("name") or "")
        cached = self.templates[kind.resource].get(objects.join_key(namespace, name))
        wanted_rv = int(ref.get("resourceVersion") or 0) if str(ref.get("resourceVersion") or "").isdigit() else 0
        if cached is not None and resource_version_number(cached) >= wanted_rv:
            return kind.resource.with_type_meta(cached)
        fetched = await self.client.get_or_none(kind.resource, name, namespace)
        return kind.resource.with_type_meta(fetched) if fetched is not None else None

    # ------------------------------------------------------------- works

    async def _sync_works(self, binding: Obj, template: Obj) -> int:
        """Create or update the Work of each target cluster in order, stopping at the first failure
        (``ensureWork``); how many were written."""
        clusters = merge_target_clusters(objects.spec(binding))
        completions = job_completions(template, binding, clusters)
        written = 0
        for cluster in clusters:
            name = str(cluster["name"])
            if self.clusters.get(name) is None:  # the override step's Get of the Cluster
                raise SyncError(f'{CLUSTERS.key} "{name}" not found')
            try:
                written += await self._ensure_work(desired_work(template, binding, cluster, completions))
            except ApiError as exc:
                raise SyncError(f"failed to sync work for cluster {name}: {exc}") from exc
        return written

    async def _ensure_work(self, desired: MutableObj) -> int:
        first = True

        async def attempt() -> int:
            nonlocal first
            if first:
                first = False
                existing = self.works.get(objects.key(desired))
            else:
                existing = await self.client.get_or_none(WORKS, objects.name(desired), objects.namespace(desired))
            if existing is None:
                try:
                    await self.client.create(WORKS, desired)
                except ApiError as exc:
                    if exc.is_already_exists:
                        raise ApiError(409, "Conflict", str(exc)) from exc
                    raise
                return 1
            if objects.is_deleting(existing):
                return 0  # being deleted: its delete event brings us back to create it anew
            merged = merge_work(existing, desired)
            if merged == existing:
                return 0
            written = await self.client.update(WORKS, merged)
            return int(resource_version_number(written) != resource_version_number(existing))

        return await retry_on_conflict(attempt)

    async def _remove_orphan_works(self, binding: MutableObj) -> int:
        """Delete the binding's Works in clusters it does not target (nor is still being evicted from).

        Its Works are found by permanent id; a binding without one (Karmada's binding webhook gives every
        binding one, the dev server has no such webhook) by the binding annotations on its Works.
        """
        permanent_id = objects.labels(binding).get(self.kind.id_label)
        if permanent_id:
            works = self.works.by_index(self.kind.work_index, str(permanent_id))
        else:
            works = self.works.by_index(WORK_INDEX_BY_BINDING, binding_ref(self.kind, Request.for_object(binding)))
        keep = existing_clusters(binding_spec(binding))
        return await self._delete_works([w for w in works if work_cluster(w) not in keep])

    async def _delete_works(self, works: Sequence[Obj]) -> int:
        deleted, seen = 0, set()
        for work in works:
            key = objects.key(work)
            if key in seen or objects.is_deleting(work):
                continue
            seen.add(key)
            try:
                await self.client.delete(WORKS, objects.name(work), objects.namespace(work))
            except ApiError as exc:
                if exc.is_not_found:
                    continue
                raise
            log.info("work deleted", work=key, controller=self.kind.binding_controller)
            deleted += 1
        return deleted



# ----------------------------------------------------------------------------- wiring


def _binding_predicate() -> AnyOf:
    """Generation changes, plus the metadata the controller acts on: deletion and the permanent-id label."""

    def metadata_changed(old: Obj, new: Obj) -> bool:
        old_meta, new_meta = objects.metadata(old), objects.metadata(new)
        return bool(bool(old_meta.get("deletionTimestamp")) != bool(new_meta.get("deletionTimestamp"))
                    or old_meta.get("labels") != new_meta.get("labels")
                    or old_meta.get("finalizers") != new_meta.get("finalizers"))

    return AnyOf([GenerationChangedPredicate(), FuncPredicate(on_update=metadata_changed)])


_WORK_PREDICATE = FuncPredicate(on_create=lambda _obj: False, on_update=GenerationChangedPredicate().update)
_NAMESPACE_PREDICATE = FuncPredicate(on_update=lambda _old, _new: False, on_delete=lambda _obj: False)
_CLUSTER_PREDICATE = _NAMESPACE_PREDICATE  # only a Cluster appearing unblocks a binding


def cluster_to_bindings(bindings: Indexer) -> Callable[[Obj], list[Request]]:
    """A Cluster that appears → the bindings that target it (their sync stopped at its NotFound)."""

    def mapper(cluster: Obj) -> list[Request]:
        name = objects.name(cluster)
        return [Request.for_object(b) for b in bindings.by_index(BINDING_INDEX_BY_CLUSTER, name)]

    return mapper


def _setup(manager: Manager, kind: BindingKind, *, workers: int) -> Controller:
    bindings = manager.informer(kind.resource)
    works = manager.informer(WORKS)
    works.ensure_indexer(kind.work_index, work_index(kind.id_label))
    works.ensure_indexer(WORK_INDEX_BY_BINDING, work_binding_ref)
    bindings.ensure_indexer(BINDING_INDEX_BY_CLUSTER, binding_clusters)
    templates = {k.resource: manager.informer(k.resource) for k in TEMPLATE_KINDS}
    clusters = manager.informer(CLUSTERS)
    reconciler = BindingReconciler(manager.client, kind, bindings.store, works.store,
                                   templates={resource: informer.store for resource, informer in templates.items()},
                                   clusters=clusters.store, events=manager.event_recorder(kind.binding_controller))
    controller = Controller(kind.binding_controller, reconciler, workers=workers)
    controller.wait_for_caches(*templates.values())  # read, not watched
    controller.watches(bindings, predicates=[_binding_predicate()])
    controller.watches(works, map_func=work_to_binding(kind), predicates=[_WORK_PREDICATE])
    controller.watches(manager.informer(NAMESPACES), map_func=namespace_to_bindings(bindings.store),
                       predicates=[_NAMESPACE_PREDICATE])
    controller.watches(clusters, map_func=cluster_to_bindings(bindings.store), predicates=[_CLUSTER_PREDICATE])
    manager.add_controller(controller)
    return controller


def setup_binding_controllers(manager: Manager, *, workers: int = 5) -> list[Controller]:
    """Register ``binding-controller`` and ``cluster-resource-binding-controller`` (``workers`` each)."""
    return [_setup(manager, RB_KIND, workers=workers), _setup(manager, CRB_KIND, workers=workers)]
