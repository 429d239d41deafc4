"""Resource templates as Karmada's default interpreter sees them: kinds, replicas, requirements, manifests.

Pure functions over parsed JSON, shared by the detector (template → binding ``spec.replicas`` and
``spec.replicaRequirements``) and the binding controller (template → the manifest of each Work):

* :data:`TEMPLATE_KINDS` — the kinds the dev API server serves that the detector propagates;
* :func:`get_replicas` — ``GetReplicas`` of the native interpreter (Deployment, StatefulSet,
  ReplicaSet: ``spec.replicas``; Job: ``spec.parallelism``) with ``GenerateReplicaRequirements``:
  per-replica requests of the pod template (limits stand in for missing requests, containers
  summed, init containers max, overhead added) rendered back as canonical Quantity strings the way
  ``resource.NewMilliQuantity``/``NewQuantity`` print them (``10m``, ``10Mi``, ``1k``);
* :func:`render_manifest` — ``ensureWork``'s per-cluster copy of the template: server-populated
  fields pruned (``prune.RemoveIrrelevantFields``), binding labels and annotations merged in,
  replicas revised to the cluster's share (``ReviseReplica``), Job completions divided by Webster
  apportionment when the placement is Divided.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from controller_manager.client import Resource
from karmada_api.bindings import kind_of
from karmada_api.labels import (
    CRB_PERMANENT_ID,
    RB_PERMANENT_ID,
    RESOURCE_TEMPLATE_GENERATION,
)
from karmada_api.names import fnv32a
from kube_api.quantity import (
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    is_hugepage_resource_name,
    pod_requests,
)

Obj = Mapping[str, Any]

MANAGED_LABEL = "karmada.io/managed"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
REPLICAS_FIELD = "replicas"
PARALLELISM_FIELD = "parallelism"
COMPLETIONS_FIELD = "completions"
DIVIDED = "Divided"


@dataclass(frozen=True, slots=True)
class TemplateKind:
    """A propagatable kind; ``replica_field`` names the spec field holding its replicas (None: not a workload)."""

    resource: Resource
    replica_field: str | None = None

    @property
    def api_version(self) -> str:
        return self.resource.api_version

    @property
    def kind(self) -> str:
        return self.resource.kind

    @property
    def namespaced(self) -> bool:
        return self.resource.namespaced


def _kind(group: str, version: str, plural: str, kind: str, *, namespaced: bool = True,
          replica_field: str | None = None) -> TemplateKind:
    return TemplateKind(Resource(group, version, plural, kind, namespaced), replica_field)


TEMPLATE_KINDS: tuple[TemplateKind, ...] = (
    _kind("apps", "v1", "deployments", "Deployment", replica_field=REPLICAS_FIELD),
    _kind("apps", "v1", "statefulsets", "StatefulSet", replica_field=REPLICAS_FIELD),
    _kind("apps", "v1", "replicasets", "ReplicaSet", replica_field=REPLICAS_FIELD),
    _kind("apps", "v1", "daemonsets", "DaemonSet"),
    _kind("batch", "v1", "jobs", "Job", replica_field=PARALLELISM_FIELD),
    _kind("batch", "v1", "cronjobs", "CronJob"),
    _kind("", "v1", "configmaps", "ConfigMap"),
    _kind("", "v1", "secrets", "Secret"),
    _kind("", "v1", "services", "Service"),
    _kind("", "v1", "serviceaccounts", "ServiceAccount"),
    _kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
    _kind("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False),
    _kind("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    _kind("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
    _kind("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False),
    _kind("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False),
    _kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget"),
    _kind("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"),
    _kind("networking.k8s.io", "v1", "ingresses", "Ingress"),
)
"""What the detector watches: every namespaced or cluster-scoped kind of the dev API server a user
propagates (not Pods, Nodes, Events, Leases, Namespaces or CRDs)."""

_BY_GVK = {(k.api_version, k.kind): k for k in TEMPLATE_KINDS}
_BY_KEY = {k.resource.key: k for k in TEMPLATE_KINDS}


def kind_for(api_version: str, kind: str) -> TemplateKind | None:
    """The template kind of an ``apiVersion``/``kind`` pair (a binding's ``spec.resource``)."""
    return _BY_GVK.get((api_version, kind))


def kind_by_key(key: str) -> TemplateKind | None:
    """The template kind of a resource key (``deployments.apps``)."""
    return _BY_KEY.get(key)


def typed(template: Obj, kind: TemplateKind) -> dict[str, Any]:
    """The template with ``apiVersion`` and ``kind`` (list and watch items may lack them)."""
    obj = dict(template)
    obj.setdefault("apiVersion", kind.api_version)
    obj.setdefault("kind", kind.kind)
    return obj


# ----------------------------------------------------------------------------- quantities

_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = {0: "", 10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}


def format_decimal(mantissa: int, exponent: int = 0) -> str:
    """Canonical DecimalSI text of ``mantissa * 10**exponent`` (``Quantity.String()``): ``10m``, ``1k``, ``1500m``."""
    if mantissa == 0:
        return "0"
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    extra = exponent % 3  # Python's modulo is non-negative, as Go's "if extra < 0 { extra += 3 }"
    exponent -= extra
    mantissa *= 10**extra
    suffix = _DECIMAL_SUFFIXES.get(exponent)
    return f"{mantissa}{suffix}" if suffix is not None else f"{mantissa}e{exponent}"


def format_binary(value: int) -> str:
    """Canonical BinarySI text of an integer amount: ``10Mi``, ``1500``; below 1024 it prints as DecimalSI."""
    if -1024 < value < 1024:
        return format_decimal(value)
    exponent = 0
    while value % 1024 == 0 and exponent < 60:
        value //= 1024
        exponent += 10
    return f"{value}{_BINARY_SUFFIXES[exponent]}"


def format_quantity(name: str, units: int) -> str:
    """A resource amount in scheduler units as Karmada's ``Resource.ResourceList()`` prints it."""
    if name == RESOURCE_CPU:
        return format_decimal(units, -3)
    if name in (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE) or is_hugepage_resource_name(name):
        return format_binary(units)
    return format_decimal(units)


# ----------------------------------------------------------------------------- replicas and requirements


def resource_request(pod_spec: Obj) -> dict[str, str] | None:
    """The per-replica ResourceList of a pod template (``AddPodTemplateRequest(...).ResourceList()``)."""
    units = pod_requests(pod_spec)
    result = {name: format_quantity(name, amount) for name, amount in sorted(units.items())
              if amount > 0 and name != RESOURCE_PODS}
    return result or None


def node_claim(pod_spec: Obj) -> dict[str, Any] | None:
    """``GenerateNodeClaimByPodSpec``: node selector, required node affinity and tolerations, if any."""
    claim: dict[str, Any] = {}
    affinity = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if affinity:
        claim["hardNodeAffinity"] = copy.deepcopy(affinity)
    if pod_spec.get("nodeSelector"):
        claim["nodeSelector"] = dict(pod_spec["nodeSelector"])
    if pod_spec.get("tolerations"):
        claim["tolerations"] = copy.deepcopy(pod_spec["tolerations"])
    return claim or None


def replica_requirements(template: Obj) -> dict[str, Any] | None:
    """``GenerateReplicaRequirements`` of the template's pod template (with ResourceQuotaEstimate on)."""
    pod_template = (template.get("spec") or {}).get("template") or {}
    pod_spec = pod_template.get("spec") or {}
    claim = node_claim(pod_spec)
    request = resource_request(pod_spec)
    if claim is None and request is None:
        return None
    requirements: dict[str, Any] = {}
    if claim is not None:
        requirements["nodeClaim"] = claim
    if request is not None:
        requirements["resourceRequest"] = request
    # The interpreter hands the pod template the workload's namespace (karmada e2e: RB namespace == Deployment's).
    namespace = (pod_template.get("metadata") or {}).get("namespace") or (template.get("metadata") or {}).get(
        "namespace")
    if namespace:
        requirements["namespace"] = namespace
    if pod_spec.get("priorityClassName"):
        requirements["priorityClassName"] = pod_spec["priorityClassName"]
    return requirements


def get_replicas(template: Obj, kind: TemplateKind) -> tuple[int, dict[str, Any] | None]:
    """(replicas, replicaRequirements) of a workload; (0, None) for a kind without replicas."""
    if kind.replica_field is None:
        return 0, None
    raw = (template.get("spec") or {}).get(kind.replica_field)
    replicas = raw if isinstance(raw, int) and not isinstance(raw, bool) else 0
    return replicas, replica_requirements(template)


# ----------------------------------------------------------------------------- replica division


def webster(seats: int, votes: Iterable[tuple[str, int]], uid: str = "") -> dict[str, int]:
    """Sainte-Laguë apportionment of ``seats`` by ``votes`` with Karmada's UID tie-break (spec §3.5.4)."""
    parties = {name: [weight, 0] for name, weight in votes}
    descending = bool(uid) and fnv32a(uid.encode()) & 1 == 1

    def better(a: str, b: str) -> bool:
        (va, sa), (vb, sb) = parties[a], parties[b]
        pa, pb = va / (2 * sa + 1), vb / (2 * sb + 1)
        if pa != pb:
            return pa > pb
        if sa != sb:
            return sa < sb
        return a > b if descending else a < b

    for _ in range(seats if parties else 0):
        best: str | None = None
        for name in parties:
            if best is None or better(name, best):
                best = name
        assert best is not None
        parties[best][1] += 1
    return {name: seats_won for name, (_, seats_won) in parties.items()}


def spread_by_target_clusters(total: int, clusters: list[dict[str, Any]], uid: str = "") -> dict[str, int]:
    """``SpreadReplicasByTargetClusters``: ``total`` divided in proportion to each cluster's replicas."""
    weights = [(str(c.get("name")), int(c.get("replicas") or 0)) for c in clusters]
    if sum(w for _, w in weights) == 0:
        return {name: 0 for name, _ in weights}
    return webster(total, weights, uid)


def is_divided(placement: Obj | None) -> bool:
    """``Placement.ReplicaSchedulingType() == Divided`` (no replicaScheduling means Duplicated)."""
    scheduling = (placement or {}).get("replicaScheduling")
    return isinstance(scheduling, dict) and scheduling.get("replicaSchedulingType") == DIVIDED


# ----------------------------------------------------------------------------- manifests

_DROPPED_METADATA = ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
                     "managedFields", "resourceVersion", "selfLink", "uid", "ownerReferences", "finalizers")
_DEPLOYMENT_ANNOTATIONS = ("deployment.kubernetes.io/revision", "deployment.kubernetes.io/revision-history")
_JOB_GENERATED_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
_JOB_TEMPLATE_LABELS = ("controller-uid", "job-name", "batch.kubernetes.io/controller-uid",
                        "batch.kubernetes.io/job-name")
_SA_UID_ANNOTATION = "kubernetes.io/service-account.uid"
_SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"


def _prune_kind(manifest: dict[str, Any]) -> None:
    """The per-kind part of ``prune.RemoveIrrelevantFields``: fields a member cluster generates itself."""
    kind = manifest.get("kind")
    meta = manifest["metadata"]
    annotations: dict[str, str] = meta.get("annotations") or {}
    raw_spec = manifest.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    if kind == "Deployment":
        for key in _DEPLOYMENT_ANNOTATIONS:
            annotations.pop(key, None)
    elif kind == "Job" and not spec.get("manualSelector"):
        match_labels = (spec.get("selector") or {}).get("matchLabels")
        if isinstance(match_labels, dict):
            for key in _JOB_GENERATED_LABELS:
                match_labels.pop(key, None)
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        if isinstance(template_labels, dict):
            for key in _JOB_TEMPLATE_LABELS:
                template_labels.pop(key, None)
    elif kind == "Service":
        if "clusterIP" in spec and spec["clusterIP"] != "None":
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
    elif kind == "ServiceAccount":
        prefix = f"{meta.get('name')}-token-"
        secrets = manifest.get("secrets")
        if isinstance(secrets, list) and secrets:
            manifest["secrets"] = [s for s in secrets if not str((s or {}).get("name") or "").startswith(prefix)]
    elif kind == "Secret" and manifest.get("type") == "kubernetes.io/service-account-token":
        annotations.pop(_SA_UID_ANNOTATION, None)
        manifest["data"] = None
    elif kind == "PersistentVolumeClaim" and annotations.get(_SELECTED_NODE_ANNOTATION):
        annotations.pop(_SELECTED_NODE_ANNOTATION, None)


def _set_if_present(manifest: dict[str, Any], field: str, value: int) -> None:
    """``helper.ApplyReplica``: only a field the template sets is revised."""
    spec = manifest.get("spec")
    if isinstance(spec, dict) and field in spec:
        spec[field] = value


def binding_identity(binding: Obj) -> tuple[str, str]:
    """(permanent-id label key, its value) of a ResourceBinding or ClusterResourceBinding."""
    meta = binding.get("metadata") or {}
    key = RB_PERMANENT_ID if meta.get("namespace") else CRB_PERMANENT_ID
    return key, str((meta.get("labels") or {}).get(key) or "")


def binding_annotations(binding: Obj) -> dict[str, str]:
    """The annotations pointing a Work (and its manifest) back to its binding."""
    return kind_of(binding).work_annotations(binding)


def render_manifest(template: Obj, binding: Obj, replicas: int | None, *,
                    completions: int | None = None) -> dict[str, Any]:
    """The manifest of the Work for one cluster (the Work contract).

    ``replicas`` is the cluster's share (``spec.clusters[].replicas``), applied when the binding's
    ``spec.replicas > 0``; ``completions`` the Job's divided completions, when they were divided.
    """
    manifest = copy.deepcopy(dict(template))
    manifest.pop("status", None)
    meta = manifest.setdefault("metadata", {})
    generation = meta.get("generation")
    for key in _DROPPED_METADATA:
        meta.pop(key, None)
    labels = dict(meta.get("labels") or {})
    id_key, id_value = binding_identity(binding)
    labels[MANAGED_LABEL] = "true"
    labels[id_key] = id_value
    meta["labels"] = labels
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED_ANNOTATION}
    if isinstance(generation, int) and generation > 0:
        annotations[RESOURCE_TEMPLATE_GENERATION] = str(generation)
    annotations.update(binding_annotations(binding))
    meta["annotations"] = annotations
    _prune_kind(manifest)
    spec = binding.get("spec") or {}
    template_kind = kind_for(str(manifest.get("apiVersion") or ""), str(manifest.get("kind") or ""))
    field = template_kind.replica_field if template_kind is not None else None
    if int(spec.get("replicas") or 0) > 0 and replicas is not None and field is not None:
        _set_if_present(manifest, field, replicas)
    if completions is not None:
        _set_if_present(manifest, COMPLETIONS_FIELD, completions)
    if not annotations:
        meta.pop("annotations", None)
    return manifest


def job_completions(template: Obj, binding: Obj, clusters: list[dict[str, Any]]) -> dict[str, int] | None:
    """Each cluster's share of a Divided Job's ``spec.completions`` (None: not divided)."""
    spec = binding.get("spec") or {}
    completions = (template.get("spec") or {}).get(COMPLETIONS_FIELD)
    if (template.get("kind") != "Job" or int(spec.get("replicas") or 0) <= 0 or not is_divided(spec.get("placement"))
            or not isinstance(completions, int)):
        return None
    uid = str((template.get("metadata") or {}).get("uid") or "")
    return spread_by_target_clusters(completions, clusters, uid)
