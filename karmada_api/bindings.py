"""ResourceBinding and ClusterResourceBinding: what differs between the two kinds, in one place.

:class:`BindingKind` carries the Karmada knowledge every component needs about a binding kind:
its resource, the permanent-id label it and its Works carry, the annotations that point a Work
back to it, the Work informer index on that label (``pkg/util/indexregistry``), the binding
controller's finalizer and the names of the controllers that handle it. :data:`RB_KIND` and
:data:`CRB_KIND` are the two instances.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from controller_manager.resource import Resource

from .labels import CRB_NAME_ANNOTATION, CRB_PERMANENT_ID, RB_NAME_ANNOTATION, RB_NAMESPACE_ANNOTATION, RB_PERMANENT_ID
from .resources import CLUSTER_RESOURCE_BINDINGS, RESOURCE_BINDINGS
from .shapes import BindingSpec, Workload, binding_spec

# pkg/util/indexregistry: indexes of the Work informer by the binding's permanent id.
WORK_INDEX_BY_RB_ID = "WorkIndexByLabelResourceBindingID"
WORK_INDEX_BY_CRB_ID = "WorkIndexByLabelClusterResourceBindingID"

SCHEDULED_CONDITION = "Scheduled"
"""The binding condition the scheduler sets: True once ``spec.clusters`` is the result of the last schedule."""

# A graceful-eviction task's purgeMode (policyv1alpha1.PurgeMode).
PURGE_MODE_DIRECTLY = "Directly"
PURGE_MODE_GRACEFULLY = "Gracefully"
PURGE_MODE_NEVER = "Never"


@dataclass(frozen=True)
class BindingKind:
    """What differs between a ResourceBinding and a ClusterResourceBinding."""

    resource: Resource
    id_label: str
    """The permanent-id label, on the binding and on each of its Works."""
    namespace_annotation: str | None
    """The Work annotation naming the binding's namespace (None: cluster-scoped, no such annotation)."""
    name_annotation: str
    """The Work annotation naming the binding."""
    work_index: str
    """The Work informer index on :attr:`id_label`."""
    finalizer: str
    """The binding controller's finalizer, holding a deleted binding until its Works are gone."""
    binding_controller: str
    """The controller that renders the binding's Works (``pkg/controllers/binding``)."""
    status_controller: str
    """The controller that aggregates the Works' statuses into the binding's (``pkg/controllers/status``)."""

    @property
    def cluster_scoped(self) -> bool:
        return not self.resource.namespaced

    @property
    def noun(self) -> str:
        """How Karmada names the kind in messages: ``ResourceBinding``."""
        return self.resource.kind

    @property
    def lower_noun(self) -> str:
        """The kind as Karmada's lower-camel messages name it: ``resourceBinding``."""
        return self.noun[0].lower() + self.noun[1:]

    def key(self, binding: Obj) -> str:
        """``namespace/name`` (``name`` for a ClusterResourceBinding), as messages print it."""
        return objects.key(binding)

    def describe(self, binding: Obj) -> str:
        """``ResourceBinding(namespace/name)`` or ``ClusterResourceBinding(name)``."""
        return f"{self.noun}({self.key(binding)})"

    def work_annotations(self, binding: Obj) -> dict[str, str]:
        """The annotations pointing a Work (and its manifest) back to ``binding``."""
        annotations = {self.name_annotation: objects.name(binding)}
        if self.namespace_annotation:
            annotations = {self.namespace_annotation: objects.namespace(binding), **annotations}
        return annotations


RB_KIND = BindingKind(RESOURCE_BINDINGS, RB_PERMANENT_ID, RB_NAMESPACE_ANNOTATION, RB_NAME_ANNOTATION,
                      WORK_INDEX_BY_RB_ID, "karmada.io/binding-controller",
                      binding_controller="binding-controller",
                      status_controller="resource-binding-status-controller")
CRB_KIND = BindingKind(CLUSTER_RESOURCE_BINDINGS, CRB_PERMANENT_ID, None, CRB_NAME_ANNOTATION,
                       WORK_INDEX_BY_CRB_ID, "karmada.io/cluster-resource-binding-controller",
                       binding_controller="cluster-resource-binding-controller",
                       status_controller="cluster-resource-binding-status-controller")


def kind_of(binding: Obj) -> BindingKind:
    """The kind of a binding object: one with a namespace is a ResourceBinding."""
    return RB_KIND if objects.namespace(binding) else CRB_KIND


def work_index(label: str) -> Callable[[Obj], list[str]]:
    """Index function: a Work's binding permanent id (``label``), when it has one."""

    def index(work: Obj) -> list[str]:
        value = objects.labels(work).get(label)
        return [value] if value else []

    return index


def spec_update(binding: Obj, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The body of a PUT that changes ``binding``'s spec to ``spec``: its metadata as read (the resourceVersion
    makes the update conditional), without its status. Both binding kinds have the status subresource, so the API
    server keeps the stored status whatever a PUT of the object says: sending it only costs encoding it here and
    decoding it there (a settled binding's status is about as large as the rest of it). Shallow: nothing of the
    (shared, read-only) cached ``binding`` is changed."""
    return {**{key: value for key, value in binding.items() if key != "status"}, "spec": spec}


def binding_cluster_names(spec: BindingSpec) -> list[str]:
    """``GetBindingClusterNames``: the names in ``spec.clusters`` (what the bindings-by-cluster index holds)."""
    return [str(target["name"]) for target in spec.get("clusters") or () if target.get("name")]


def existing_clusters(spec: BindingSpec) -> set[str]:
    """``ObtainBindingSpecExistingClusters``: every cluster a binding's Works may live in.

    The scheduled clusters, those its dependants require, and those a graceful eviction still keeps
    (all but ``purgeMode: Directly``, whose Works are orphans at once). A task without ``fromCluster``
    contributes Go's zero value ``""``, as Karmada does, so such a binding is never fully applied.
    """
    names = {str(c.get("name") or "") for c in spec.get("clusters") or []}
    for required in spec.get("requiredBy") or []:
        names.update(str(c.get("name") or "") for c in required.get("clusters") or [])
    for task in spec.get("gracefulEvictionTasks") or []:
        if task.get("purgeMode") != PURGE_MODE_DIRECTLY:
            names.add(str(task.get("fromCluster") or ""))
    return names


def workload_reference(binding: Obj) -> Workload:
    """The resource template a binding propagates (``spec.resource``) as an ``ObjectReference``: apiVersion,
    kind, name, and namespace when it has one (the shape of a WorkloadRebalancer's ``spec.workloads`` item)."""
    resource = binding_spec(binding).get("resource") or {}
    reference = Workload(apiVersion=str(resource.get("apiVersion") or ""), kind=str(resource.get("kind") or ""),
                         name=str(resource.get("name") or ""))
    if resource.get("namespace"):
        reference["namespace"] = str(resource.get("namespace"))
    return reference


def ready_replicas(binding: Obj) -> dict[str, int]:
    """Ready replicas per member cluster, from ``status.aggregatedStatus[*].status.readyReplicas`` (Karmada's
    descheduler, ``core/helper.go``).

    Items whose status is missing, not an object or lacks a numeric ``readyReplicas`` are
    left out, so their cluster counts as "unknown" rather than "0 ready".
    """
    result: dict[str, int] = {}
    for item in objects.status(binding).get("aggregatedStatus") or []:
        if not isinstance(item, dict):
            continue
        status = item.get("status")
        if not isinstance(status, dict):
            continue
        value = status.get("readyReplicas")
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        result[str(item.get("clusterName") or "")] = int(value)
    return result


def clusters_with_status(binding: Obj) -> set[str]:
    """The member clusters whose workload status the binding has collected (an ``aggregatedStatus`` item with a
    ``status`` object).

    For those, a missing ``readyReplicas`` is 0, as Go reads it (``omitempty`` drops a zero); for the others
    the ready count is unknown: the Work is not applied or its status not reported yet.
    """
    return {str(item.get("clusterName") or "") for item in objects.status(binding).get("aggregatedStatus") or []
            if isinstance(item, dict) and isinstance(item.get("status"), dict)}
