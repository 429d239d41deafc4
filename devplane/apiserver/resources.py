"""What the server serves: one :class:`ResourceType` per (group, version, resource).

Built-in kinds are a data table here; custom resources are added when a CRD is stored
(see :mod:`devplane.apiserver.crds`). Objects are stored once per (group, resource), whatever
version a client uses, so a type also names its storage key.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

# Status written on create for kinds whose strategy resets it (kube's PrepareForCreate).
_POD_CREATE_STATUS: dict[str, Any] = {"phase": "Pending"}  # qosClass is computed by the defaulter

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
SUBRESOURCE_VERBS = ("get", "patch", "update")


@dataclass
class ResourceType:
    """One served resource in one API version."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    list_kind: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[str, ...] = ()  # "status", "scale", "finalize"
    has_generation: bool = False
    # What happens to .status on create: "keep", "reset" (to create_status) or "drop".
    status_on_create: str = "keep"
    create_status: dict[str, Any] | None = None
    field_selectors: tuple[str, ...] = ()
    name_rule: str = "subdomain"
    builtin: bool = True
    storage_version: str = ""
    schema: Any = None  # a compiled StructuralSchema for custom resources
    openapi_schema: dict[str, Any] | None = None  # the raw openAPIV3Schema of a custom resource, for /openapi/v3
    printer_columns: list[dict[str, Any]] = field(default_factory=list)
    crd_name: str = ""

    def __post_init__(self) -> None:
        if not self.list_kind:
            self.list_kind = self.kind + "List"
        if not self.storage_version:
            self.storage_version = self.version
        if not self.field_selectors:
            self.field_selectors = ("metadata.name", "metadata.namespace")

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_key(self) -> str:
        """Where objects live, independent of the version a client asked for."""
        return f"{self.group}/{self.plural}"

    @property
    def kind_key(self) -> str:
        return f"{self.group}/{self.kind}"

    @property
    def has_status_subresource(self) -> bool:
        return "status" in self.subresources


def _core(plural: str, kind: str, namespaced: bool = True, **kw: Any) -> ResourceType:
    return ResourceType(group="", version="v1", plural=plural, kind=kind, namespaced=namespaced, **kw)


_WORKLOAD: dict[str, Any] = {"has_generation": True, "subresources": ("status", "scale"), "status_on_create": "reset",
             "create_status": {}}

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _core("namespaces", "Namespace", False, short_names=("ns",), subresources=("status", "finalize"),
          status_on_create="reset", create_status={"phase": "Active"}, name_rule="label",
          field_selectors=("metadata.name", "status.phase")),
    _core("nodes", "Node", False, short_names=("no",), subresources=("status",),
          field_selectors=("metadata.name", "spec.unschedulable")),
    _core("pods", "Pod", short_names=("po",), categories=("all",), subresources=("status",),
          status_on_create="reset", create_status=_POD_CREATE_STATUS,
          field_selectors=("metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
                           "spec.schedulerName", "spec.serviceAccountName", "status.phase",
                           "status.podIP", "status.nominatedNodeName")),
    _core("secrets", "Secret", field_selectors=("metadata.name", "metadata.namespace", "type")),
    _core("configmaps", "ConfigMap", short_names=("cm",)),
    _core("events", "Event", short_names=("ev",),
          field_selectors=("metadata.name", "metadata.namespace", "involvedObject.kind",
                           "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
                           "involvedObject.apiVersion", "involvedObject.resourceVersion",
                           "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type")),
    _core("services", "Service", short_names=("svc",), categories=("all",), subresources=("status",),
          status_on_create="reset", create_status={"loadBalancer": {}}, name_rule="label"),
    _core("serviceaccounts", "ServiceAccount", short_names=("sa",)),
    _core("persistentvolumes", "PersistentVolume", False, short_names=("pv",), subresources=("status",)),
    _core("persistentvolumeclaims", "PersistentVolumeClaim", short_names=("pvc",), subresources=("status",)),
    ResourceType("apps", "v1", "deployments", "Deployment", True, short_names=("deploy",),
                 categories=("all",), **_WORKLOAD),
    ResourceType("apps", "v1", "replicasets", "ReplicaSet", True, short_names=("rs",), categories=("all",),
                 **_WORKLOAD),
    ResourceType("apps", "v1", "statefulsets", "StatefulSet", True, short_names=("sts",), categories=("all",),
                 **_WORKLOAD),
    ResourceType("apps", "v1", "daemonsets", "DaemonSet", True, short_names=("ds",), categories=("all",),
                 has_generation=True, subresources=("status",), status_on_create="reset", create_status={}),
    # authorization.k8s.io reviews: create-only, answered and never stored (access_review.py);
    # LocalSubjectAccessReview is not served.
    ResourceType("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False,
                 verbs=("create",)),
    ResourceType("authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False,
                 verbs=("create",)),
    ResourceType("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", False,
                 verbs=("create",)),
    ResourceType("batch", "v1", "jobs", "Job", True, categories=("all",), has_generation=True,
                 subresources=("status",), status_on_create="reset", create_status={}),
    ResourceType("batch", "v1", "cronjobs", "CronJob", True, short_names=("cj",), categories=("all",),
                 has_generation=True, subresources=("status",), status_on_create="reset", create_status={}),
    ResourceType("coordination.k8s.io", "v1", "leases", "Lease", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "roles", "Role", True, name_rule="path-segment"),
    ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True,
                 name_rule="path-segment"),
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False,
                 name_rule="path-segment"),
    ResourceType("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False,
                 name_rule="path-segment"),
    ResourceType("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, short_names=("pdb",),
                 has_generation=True, subresources=("status",), status_on_create="reset", create_status={}),
    ResourceType("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
                 short_names=("hpa",), categories=("all",), subresources=("status",),
                 status_on_create="reset", create_status={}),
    ResourceType("networking.k8s.io", "v1", "ingresses", "Ingress", True, short_names=("ing",),
                 has_generation=True, subresources=("status",), status_on_create="reset", create_status={}),
    ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False,
                 short_names=("crd", "crds"), has_generation=True, subresources=("status",),
                 status_on_create="reset", create_status={}),
)

# Preferred version per group, in the order /apis lists groups.
BUILTIN_GROUP_ORDER = ("apps", "authorization.k8s.io", "batch", "coordination.k8s.io", "rbac.authorization.k8s.io",
                       "policy", "autoscaling", "networking.k8s.io", "apiextensions.k8s.io")


class Registry:
    """Lookup of served resource types by URL coordinates, kind or short name."""

    def __init__(self) -> None:
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._group_versions: dict[str, list[str]] = {}
        self._group_order: list[str] = []

    def add(self, rtype: ResourceType) -> None:
        self._by_gvr[(rtype.group, rtype.version, rtype.plural)] = rtype
        versions = self._group_versions.setdefault(rtype.group, [])
        if rtype.group not in self._group_order:
            self._group_order.append(rtype.group)
        if rtype.version not in versions:
            versions.append(rtype.version)

    def remove_crd(self, crd_name: str) -> list[ResourceType]:
        gone = [t for t in self._by_gvr.values() if t.crd_name == crd_name]
        for t in gone:
            del self._by_gvr[(t.group, t.version, t.plural)]
        for t in gone:
            if not any(o.group == t.group and o.version == t.version for o in self._by_gvr.values()):
                versions = self._group_versions.get(t.group, [])
                if t.version in versions:
                    versions.remove(t.version)
            if not self._group_versions.get(t.group):
                self._group_versions.pop(t.group, None)
                if t.group in self._group_order:
                    self._group_order.remove(t.group)
        return gone

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def group_exists(self, group: str) -> bool:
        return group in self._group_versions

    def version_exists(self, group: str, version: str) -> bool:
        return version in self._group_versions.get(group, [])

    def groups(self) -> list[str]:
        return [g for g in self._group_order if g]

    def versions(self, group: str) -> list[str]:
        return list(self._group_versions.get(group, []))

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [t for t in self._by_gvr.values() if t.group == group and t.version == version]

    def by_storage_key(self, storage_key: str) -> list[ResourceType]:
        return [t for t in self._by_gvr.values() if t.storage_key == storage_key]

    def for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, _, version = api_version.rpartition("/")
        for t in self._by_gvr.values():
            if t.group == group and t.version == version and t.kind == kind:
                return t
        return None

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._by_gvr.values()))


def builtin_registry() -> Registry:
    registry = Registry()
    registry.add(BUILTIN_TYPES[0])  # core first, as /api lists it
    for t in BUILTIN_TYPES[1:]:
        registry.add(t)
    return registry
