"""Member-object access shared by the execution and work-status controllers.

Three pieces, one set per :class:`~clusteraccess.registry.MemberRegistry` (see :func:`member_objects`):

- :class:`KindMapper`: apiVersion/kind → the member's REST resource, from the member's own
  discovery (``GET /api/v1``, ``/apis/<group>/<version>``), cached per member; a group version or
  kind the member does not serve is remembered for a few seconds only, so a CRD installed later is
  found (Karmada's RESTMapper answers ``no matches for kind ...`` the same way).
- :class:`ObjectWatcher`: create / update / delete of member objects as Karmada's
  ``objectwatcher`` does them: an update keeps the member's resourceVersion, status, finalizers,
  ownerReferences, labels and annotations it added, plus the fields member controllers own
  (``retainClusterFields`` with :mod:`interpreter.retain`); it records the generation it wrote so
  drift can be noticed later.
- :class:`MemberInformers`: per-cluster informers on the kinds Works reference, built from
  ``member.client``; an informer the registry already runs for that member (Deployments, Pods,
  ReplicaSets, Nodes) is shared instead of watching twice. A member replaced or closed by the
  registry gets its informers stopped; :meth:`MemberInformers.run` owns every task and stops them
  on shutdown.

Plus what both controllers share about Works: the reconciler's fields and the controller's wiring
(:class:`WorkReconciler`, :func:`work_controller`), the Work predicate and manifests, Applied
condition writes, Cluster readiness, the mapping of Clusters and member objects to Works.
"""

from __future__ import annotations

import asyncio
import copy
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog

from clusteraccess.cluster import MemberCluster
from clusteraccess.registry import MemberRegistry
from controller_manager import objects
from controller_manager.apierrors import ApiError, retry_on_conflict
from controller_manager.cache import NAMESPACE_INDEX, Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import EventRecorder
from controller_manager.informer import FuncHandler, SharedInformer
from controller_manager.manager import Manager
from controller_manager.objects import MutableObj, Obj
from controller_manager.predicate import FuncPredicate
from controller_manager.reconcile import Request, Result
from controller_manager.resource import Resource
from interpreter.retain import retain
from karmada_api.labels import (
    CONFLICT_RESOLUTION_ANNOTATION,
    CPP_PERMANENT_ID,
    CRB_NAME_ANNOTATION,
    CRB_PERMANENT_ID,
    MANAGED_LABEL,
    PP_PERMANENT_ID,
    RB_NAME_ANNOTATION,
    RB_NAMESPACE_ANNOTATION,
    RB_PERMANENT_ID,
    RESOURCE_TEMPLATE_GENERATION,
)
from karmada_api.names import EXECUTION_SPACE_PREFIX, execution_space
from karmada_api.resources import CLUSTERS, WORKS
from karmada_api.works import WORK_APPLIED
from kube_api.conditions import find_condition, set_condition
from kube_api.resources import NAMESPACES

from .policies import CPP_NAME_ANNOTATION, PP_NAME_ANNOTATION, PP_NAMESPACE_ANNOTATION

log = structlog.get_logger(__name__)


# Annotations the execution controller puts on member objects (pkg/apis/work/v1alpha2).
WORK_NAME_ANNOTATION = "work.karmada.io/name"
WORK_NAMESPACE_ANNOTATION = "work.karmada.io/namespace"

# What Karmada strips from a member object it leaves behind (preserveResourcesOnDeletion).
KARMADA_LABELS = (MANAGED_LABEL, RB_PERMANENT_ID, CRB_PERMANENT_ID, "work.karmada.io/permanent-id",
                  PP_PERMANENT_ID, CPP_PERMANENT_ID)
KARMADA_ANNOTATIONS = (WORK_NAME_ANNOTATION, WORK_NAMESPACE_ANNOTATION, RESOURCE_TEMPLATE_GENERATION,
                       "resourcetemplate.karmada.io/uid", RB_NAME_ANNOTATION, RB_NAMESPACE_ANNOTATION,
                       CRB_NAME_ANNOTATION, PP_NAME_ANNOTATION, PP_NAMESPACE_ANNOTATION, CPP_NAME_ANNOTATION,
                       CONFLICT_RESOLUTION_ANNOTATION)

APPLIED_MESSAGE = "Manifest has been successfully applied"
SYNC_SUCCEED, SYNC_FAILED = "SyncSucceed", "SyncFailed"  # events.EventReasonSyncWorkload{Succeed,Failed}

NOT_READY_RETRY = 5.0  # seconds; Cluster Ready changes and member (re)starts requeue Works sooner
STARTING_RETRY = 0.5  # a member whose client is being built (its Secret is being read)

NEGATIVE_TTL = 5.0  # seconds a "not served" discovery answer is trusted


class UnknownKindError(Exception):
    """The member does not serve this apiVersion/kind (RESTMapper's NoKindMatchError)."""

    def __init__(self, api_version: str, kind: str) -> None:
        super().__init__(f'no matches for kind "{kind}" in version "{api_version}"')
        self.api_version = api_version
        self.kind = kind


class ConflictError(Exception):
    """A member object exists, is not managed by Karmada, and the manifest says ``abort``."""


def api_version_parts(api_version: str) -> tuple[str, str]:
    """(group, version) of an apiVersion (``apps/v1`` → ``("apps", "v1")``, ``v1`` → ``("", "v1")``)."""
    group, _, version = api_version.rpartition("/")
    return group, version


def object_ref(manifest: Obj) -> tuple[str, str, str, str]:
    """(apiVersion, kind, namespace, name) of a manifest."""
    return (str(manifest.get("apiVersion") or ""), str(manifest.get("kind") or ""),
            objects.namespace(manifest), objects.name(manifest))


# ----------------------------------------------------------------------------- discovery


@dataclass
class _Discovered:
    kinds: dict[str, Resource]
    at: float


class KindMapper:
    """apiVersion/kind → member Resource from member discovery, cached per member (by identity)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._cache: weakref.WeakKeyDictionary[MemberCluster, dict[str, _Discovered]] = weakref.WeakKeyDictionary()
        self._clock = clock

    async def resource_for(self, member: MemberCluster, client: KubeClient, api_version: str,
                           kind: str) -> Resource:
        """The member's resource for the kind; UnknownKindError when it does not serve it."""
        per_member = self._cache.setdefault(member, {})
        entry = per_member.get(api_version)
        if entry is None or (kind not in entry.kinds and self._clock() - entry.at > NEGATIVE_TTL):
            entry = _Discovered(await _discover(client, api_version), self._clock())
            per_member[api_version] = entry
        resource = entry.kinds.get(kind)
        if resource is None:
            raise UnknownKindError(api_version, kind)
        return resource


async def _discover(client: KubeClient, api_version: str) -> dict[str, Resource]:
    """Kinds served in one group version (subresources left out); empty when the version is not served."""
    group, version = api_version_parts(api_version)
    if not version:
        return {}
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    try:
        answer = await client.request("GET", path)
    except ApiError as exc:
        if exc.is_not_found or exc.is_not_served:  # kube-apiserver: a plain "404 page not found"
            return {}
        raise
    kinds: dict[str, Resource] = {}
    for item in (answer or {}).get("resources") or []:
        name = str(item.get("name") or "")
        if not name or "/" in name or not item.get("kind"):
            continue
        kinds.setdefault(str(item["kind"]), Resource(group, version, name, str(item["kind"]),
                                                      bool(item.get("namespaced"))))
    return kinds


# ----------------------------------------------------------------------------- writes


def object_version(obj: Obj) -> str:
    """What Karmada records of an object it wrote: ``gen:<generation>``, or ``rv:<resourceVersion>``."""
    generation = objects.metadata(obj).get("generation")
    if generation:
        return f"gen:{generation}"
    return f"rv:{objects.resource_version(obj)}"


def retain_cluster_fields(desired: Obj, observed: Obj) -> MutableObj:
    """The object to PUT: ``desired`` plus what belongs to the member (Karmada's retainClusterFields).

    The member's resourceVersion (so the PUT is conditional), finalizers, ownerReferences and
    status; its labels and annotations merged under the desired ones; kind-specific fields set by
    member controllers. ``desired`` is not modified.
    """
    out = objects.deep_copy(desired)
    meta, seen = out.setdefault("metadata", {}), objects.metadata(observed)
    meta["resourceVersion"] = seen.get("resourceVersion")
    for key in ("finalizers", "ownerReferences"):
        if seen.get(key):
            meta[key] = copy.deepcopy(seen[key])
        else:
            meta.pop(key, None)
    for key in ("labels", "annotations"):
        merged = {**(seen.get(key) or {}), **(meta.get(key) or {})}
        if merged:
            meta[key] = merged
    if "status" in observed:
        out["status"] = copy.deepcopy(observed["status"])
    retain(out, observed)
    return out


def allow_update(desired: Obj, observed: Obj) -> bool:
    """Whether an existing member object may be overwritten.

    Karmada (objectwatcher ``allowUpdate``): yes when both carry ``karmada.io/managed: "true"``, or the
    manifest says ``overwrite``; otherwise it aborts. The binding's ``conflictResolution`` reaches us
    only through that annotation, so: ``abort`` refuses, ``overwrite`` or nothing applies (an object
    already claimed by this Work is adopted either way).
    """
    if objects.labels(desired).get(MANAGED_LABEL) == "true" and objects.labels(observed).get(MANAGED_LABEL) == "true":
        return True
    desired_annotations, observed_annotations = objects.annotations(desired), objects.annotations(observed)
    if (observed_annotations.get(WORK_NAME_ANNOTATION) == desired_annotations.get(WORK_NAME_ANNOTATION)
            and observed_annotations.get(WORK_NAMESPACE_ANNOTATION)
            == desired_annotations.get(WORK_NAMESPACE_ANNOTATION)):
        return True
    return str(desired_annotations.get(CONFLICT_RESOLUTION_ANNOTATION) or "").lower() != "abort"


def strip_karmada_metadata(obj: Obj) -> MutableObj | None:
    """A copy of ``obj`` without Karmada's labels and annotations, or None when it carries none."""
    labels = {k: v for k, v in objects.labels(obj).items() if k not in KARMADA_LABELS}
    annotations = {k: v for k, v in objects.annotations(obj).items() if k not in KARMADA_ANNOTATIONS}
    if labels == objects.labels(obj) and annotations == objects.annotations(obj):
        return None
    out = objects.deep_copy(obj)
    out["metadata"]["labels"] = labels
    out["metadata"]["annotations"] = annotations
    return out


class ObjectWatcher:
    """Creates, updates and deletes member objects; remembers the version of what it wrote."""

    def __init__(self, mapper: KindMapper) -> None:
        self.mapper = mapper
        self._versions: weakref.WeakKeyDictionary[MemberCluster, dict[tuple[str, str], str]] = \
            weakref.WeakKeyDictionary()

    def recorded_version(self, member: MemberCluster, resource: Resource, namespace: str, name: str) -> str | None:
        return self._versions.get(member, {}).get((resource.key, objects.join_key(namespace, name)))

    def _record(self, member: MemberCluster, resource: Resource, obj: Obj) -> None:
        key = (resource.key, objects.key(obj))
        self._versions.setdefault(member, {})[key] = object_version(obj)

    def _forget(self, member: MemberCluster, resource: Resource, namespace: str, name: str) -> None:
        self._versions.get(member, {}).pop((resource.key, objects.join_key(namespace, name)), None)

    async def apply(self, member: MemberCluster, client: KubeClient, desired: Obj) -> Obj:
        """Create the object, or update the existing one keeping the member's fields; the written object.

        A missing namespace is created first (Karmada's namespace-sync controller would have done it).
        Raises UnknownKindError, ConflictError or ApiError.
        """
        api_version, kind, namespace, name = object_ref(desired)
        resource = await self.mapper.resource_for(member, client, api_version, kind)
        for _attempt in range(5):
            try:
                observed = await client.get(resource, name, namespace)
            except ApiError as exc:
                if not exc.is_not_found:
                    raise
                created = await self._create(client, resource, desired, namespace)
                if created is None:
                    continue  # someone created it meanwhile: update that one
                self._record(member, resource, created)
                return created
            if not allow_update(desired, observed):
                raise ConflictError(
                    f"resource(kind={kind}, {namespace}/{name}) already exists in the cluster {member.name} and the "
                    f"{CONFLICT_RESOLUTION_ANNOTATION} strategy value is abort, Karmada will not manage this resource")
            try:
                written = await client.update(resource, retain_cluster_fields(desired, observed))
            except ApiError as exc:
                if exc.is_conflict or exc.is_not_found:
                    continue  # changed or deleted since the read: read again
                raise
            self._record(member, resource, written)
            return written
        raise ApiError(409, "Conflict", f"{kind} {namespace}/{name} in cluster {member.name} kept changing; "
                                        "will retry")

    async def create(self, member: MemberCluster, client: KubeClient, desired: Obj) -> Obj | None:
        """Create only (a re-creation): the created object, or None when it exists already."""
        api_version, kind, namespace, _name = object_ref(desired)
        resource = await self.mapper.resource_for(member, client, api_version, kind)
        created = await self._create(client, resource, desired, namespace)
        if created is not None:
            self._record(member, resource, created)
        return created

    async def _create(self, client: KubeClient, resource: Resource, desired: Obj, namespace: str) -> Obj | None:
        """POST; None when it already exists (lost a race)."""
        body = objects.deep_copy(desired)
        for key in ("resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"):
            body.get("metadata", {}).pop(key, None)
        body.pop("status", None)
        for _attempt in range(2):
            try:
                created: Obj = await client.create(resource, body, namespace)
                return created
            except ApiError as exc:
                if exc.is_already_exists:
                    return None
                missing_namespace = exc.is_not_found and (exc.body.get("details") or {}).get("kind") == "namespaces"
                if not (missing_namespace and resource.namespaced and namespace):
                    raise
            try:
                await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": namespace}})
            except ApiError as exc:
                if not exc.is_already_exists:
                    raise
        raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found',
                       {"details": {"name": namespace, "kind": "namespaces"}})

    async def delete(self, member: MemberCluster, client: KubeClient, manifest: Obj, *, owner: tuple[str, str],
                     preserve: bool = False) -> None:
        """Delete (or, ``preserve``, release) the member object of ``manifest`` if this Work owns it.

        ``owner`` is the Work's (namespace, name); an object claimed by another Work, or by nobody,
        is left alone, as Karmada's tryDeleteWorkload does.
        """
        api_version, kind, namespace, name = object_ref(manifest)
        try:
            resource = await self.mapper.resource_for(member, client, api_version, kind)
        except UnknownKindError:
            return  # never created
        for _attempt in range(5):
            try:
                observed = await client.get(resource, name, namespace)
            except ApiError as exc:
                if exc.is_not_found:
                    self._forget(member, resource, namespace, name)
                    return
                raise
            annotations = objects.annotations(observed)
            if (annotations.get(WORK_NAMESPACE_ANNOTATION), annotations.get(WORK_NAME_ANNOTATION)) != owner:
                log.info("member object not managed by this Work, left in place", cluster=member.name, kind=kind,
                         namespace=namespace, name=name)
                return
            try:
                if preserve:
                    released = strip_karmada_metadata(observed)
                    if released is not None:
                        await client.update(resource, released)
                else:
                    await client.delete(resource, name, namespace, uid=objects.uid(observed), propagation="Background")
            except ApiError as exc:
                if exc.is_not_found:
                    self._forget(member, resource, namespace, name)
                    return
                if exc.is_conflict:
                    continue
                raise
            self._forget(member, resource, namespace, name)
            return
        raise ApiError(409, "Conflict", f"{kind} {namespace}/{name} in cluster {member.name} kept changing; "
                                        "will retry")


# ----------------------------------------------------------------------------- informers


ObjectHandler = Callable[[str, Obj], None]  # (cluster name, member object) on add/update/delete


@dataclass
class _ClusterInformers:
    member: MemberCluster
    informers: dict[Resource, SharedInformer] = field(default_factory=dict)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)


class MemberInformers:
    """Informers on member objects, per cluster and resource, feeding one handler."""

    def __init__(self) -> None:
        self._clusters: dict[str, _ClusterInformers] = {}
        self._handlers: list[ObjectHandler] = []
        self._retired: list[asyncio.Task[None]] = []
        self._reap = asyncio.Event()
        self.closed = False

    def add_handler(self, handler: ObjectHandler) -> None:
        """Called for every add, update and delete of a watched member object (must not block)."""
        self._handlers.append(handler)

    def ensure(self, member: MemberCluster, client: KubeClient, resource: Resource) -> SharedInformer | None:
        """The informer on ``resource`` in ``member``, started if new; None once shut down."""
        if self.closed:
            return None
        entry = self._clusters.get(member.name)
        if entry is None or entry.member is not member:
            if entry is not None:
                self._retire(entry)
            entry = self._clusters[member.name] = _ClusterInformers(member)
        informer = entry.informers.get(resource)
        if informer is not None:
            return informer
        shared = member.informer(resource)
        informer = shared if shared is not None else SharedInformer(client, resource)
        cluster = member.name
        informer.add_event_handler(FuncHandler(add=lambda obj, _initial: self._notify(cluster, obj),
                                               update=lambda _old, new: self._notify(cluster, new),
                                               delete=lambda obj: self._notify(cluster, obj)))
        entry.informers[resource] = informer
        if shared is None:
            entry.tasks.append(asyncio.create_task(informer.run(), name=f"member {cluster} {resource.key} informer"))
            log.info("watching member objects", cluster=cluster, resource=resource.key)
        return informer

    def _notify(self, cluster: str, obj: Obj) -> None:
        for handler in self._handlers:
            try:
                handler(cluster, obj)
            except Exception:
                log.exception("member object handler failed", cluster=cluster)

    def member_changed(self, name: str, current: MemberCluster | None) -> None:
        """The registry started, replaced or closed ``name``: drop informers of a member that is gone."""
        entry = self._clusters.get(name)
        if entry is not None and entry.member is not current:
            del self._clusters[name]
            self._retire(entry)

    def _retire(self, entry: _ClusterInformers) -> None:
        for task in entry.tasks:
            task.cancel()
        self._retired.extend(entry.tasks)
        self._reap.set()

    async def run(self) -> None:
        """Own the informer tasks: reap retired ones; stop every one on cancel (shutdown)."""
        try:
            while True:
                await self._reap.wait()
                self._reap.clear()
                retired, self._retired = self._retired, []
                await asyncio.gather(*retired, return_exceptions=True)
        finally:
            self.closed = True
            entries = list(self._clusters.values())
            self._clusters.clear()
            for entry in entries:
                self._retire(entry)
            retired, self._retired = self._retired, []
            await asyncio.gather(*retired, return_exceptions=True)


# ----------------------------------------------------------------------------- one set per registry


@dataclass
class MemberObjects:
    """The mapper, object watcher and informers the execution and work-status controllers share."""

    registry: MemberRegistry
    mapper: KindMapper = field(default_factory=KindMapper)
    informers: MemberInformers = field(default_factory=MemberInformers)
    watcher: ObjectWatcher = field(init=False)
    runnable_added: bool = False

    def __post_init__(self) -> None:
        self.watcher = ObjectWatcher(self.mapper)
        self.registry.on_change(self._member_changed)

    def _member_changed(self, name: str) -> None:
        current = self.registry.get(name)
        self.informers.member_changed(name, current)

    def ready_member(self, name: str) -> tuple[MemberCluster, KubeClient] | None:
        """The member and its client, or None while there is no member or no client yet."""
        member = self.registry.get(name)
        if member is None or member.closed or member.client is None:
            return None
        return member, member.client

    def retry_delay(self, name: str) -> float:
        """When to look again at a Work whose member is not usable: soon while its client is being built."""
        member = self.registry.get(name)
        if member is not None and not member.closed and member.client is None and not member.error:
            return STARTING_RETRY
        return NOT_READY_RETRY


_SHARED: weakref.WeakKeyDictionary[MemberRegistry, MemberObjects] = weakref.WeakKeyDictionary()


def member_objects(registry: MemberRegistry) -> MemberObjects:
    """The one :class:`MemberObjects` of ``registry`` (created on first use)."""
    shared = _SHARED.get(registry)
    if shared is None:
        shared = _SHARED[registry] = MemberObjects(registry)
    return shared


# ----------------------------------------------------------------------------- helpers for both controllers


def desired_object(manifest: Obj, work_namespace: str, work_name: str) -> MutableObj:
    """The member object a Work's manifest asks for: the manifest plus the annotations naming the Work."""
    desired = objects.deep_copy(manifest)
    meta = desired.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), WORK_NAMESPACE_ANNOTATION: work_namespace,
                           WORK_NAME_ANNOTATION: work_name}
    return desired


def owning_work(obj: Obj) -> tuple[str, str] | None:
    """(namespace, name) of the Work a member object was applied from, from its annotations."""
    annotations = objects.annotations(obj)
    namespace, name = annotations.get(WORK_NAMESPACE_ANNOTATION), annotations.get(WORK_NAME_ANNOTATION)
    return (str(namespace), str(name)) if namespace and name else None


def ready_condition(cluster: Obj) -> str | None:
    """The status of the Cluster's Ready condition, or None when it has none yet."""
    condition = find_condition(objects.status(cluster).get("conditions"), "Ready")
    return str(condition.get("status") or "") if condition is not None else None


def cluster_accepts_work(cluster: Obj | None) -> bool:
    """Ready is True, or the Cluster has no Ready condition yet (then the member client decides)."""
    if cluster is None:
        return False
    return ready_condition(cluster) in (None, "True")


def _cluster_update(old: Obj, new: Obj) -> bool:
    return ready_condition(old) != ready_condition(new) or objects.is_deleting(old) != objects.is_deleting(new)


# Cluster events worth a look at its Works: created, Ready changed, deletion started, deleted.
CLUSTER_PREDICATE = FuncPredicate(on_update=_cluster_update)


def in_execution_space(work: Obj) -> bool:
    return objects.namespace(work).startswith(EXECUTION_SPACE_PREFIX)


def work_predicate(updated: Callable[[Obj, Obj], bool]) -> FuncPredicate:
    """Works in an execution space: created, or updated as ``updated`` says (a deletion shows as an update)."""
    return FuncPredicate(on_create=in_execution_space,
                         on_update=lambda old, new: in_execution_space(new) and updated(old, new),
                         on_delete=lambda _obj: False)


def work_manifests(work: Obj) -> list[Any]:
    """The Work's ``spec.workload.manifests``."""
    return list((objects.spec(work).get("workload") or {}).get("manifests") or [])


def works_of_cluster(works: Indexer) -> Callable[[Obj], list[Request]]:
    """Map a Cluster to the Works in its execution namespace."""

    def mapper(cluster: Obj) -> list[Request]:
        namespace = execution_space(objects.name(cluster))
        return [Request(namespace, objects.name(w)) for w in works.by_index(NAMESPACE_INDEX, namespace)]

    return mapper


@dataclass
class WorkReconciler:
    """What the execution and work-status reconcilers share: the host client, the member objects, the
    Work and Cluster caches and the controller's event recorder."""

    client: KubeClient
    shared: MemberObjects
    works: Indexer
    clusters: Indexer
    events: EventRecorder

    async def reconcile(self, request: Request) -> Result:
        raise NotImplementedError


def work_controller(manager: Manager, registry: MemberRegistry, name: str, reconciler: type[WorkReconciler],
                    works_predicate: FuncPredicate, *, workers: int) -> tuple[Controller, MemberObjects]:
    """The controller ``name`` of Works in the execution namespaces, not added to ``manager`` yet: Work
    events pass ``works_predicate``; a Cluster's Ready change or deletion and a member (re)start
    requeue the cluster's Works. Also the registry's shared :class:`MemberObjects`."""
    shared = member_objects(registry)
    works = manager.informer(WORKS)
    clusters = manager.informer(CLUSTERS)
    controller = Controller(name, reconciler(manager.client, shared, works.store, clusters.store,
                                             manager.event_recorder(name)), workers=workers)
    controller.watches(works, predicates=[works_predicate])
    controller.watches(clusters, map_func=works_of_cluster(works.store), predicates=[CLUSTER_PREDICATE])
    registry.on_change(enqueue_cluster_works(controller, works.store))
    return controller, shared


def enqueue_cluster_works(controller: Controller, works: Indexer) -> Callable[[str], None]:
    """A registry on_change callback: reconcile every Work of the member that changed."""
    mapper = works_of_cluster(works)

    def enqueue(cluster: str) -> None:
        for request in mapper({"metadata": {"name": cluster}}):
            controller.enqueue(request)

    return enqueue


async def set_applied_condition(client: KubeClient, request: Request, status: str, reason: str,
                                message: str) -> None:
    """The Work's Applied condition (status subresource, conflict retry), written only when it changes."""
    condition = {"type": WORK_APPLIED, "status": status, "reason": reason, "message": message}

    async def attempt() -> None:
        latest = await client.get_or_none(WORKS, request.name, request.namespace)
        if latest is None:
            return
        old = objects.status(latest)
        conditions = set_condition(old.get("conditions") or [], condition)
        if conditions == (old.get("conditions") or []):
            return
        await client.update_status(WORKS, {**latest, "status": {**old, "conditions": conditions}})

    await retry_on_conflict(attempt)
