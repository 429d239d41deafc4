"""The resource templates of the dev plane and the Work manifest rendered from each for one cluster.

The detector propagates :data:`TEMPLATE_KINDS` (the kinds of the dev API server a user
propagates) and the binding controller writes one Work per target cluster with
:func:`render_manifest`, ``ensureWork``'s per-cluster copy of the template (Karmada's
``pkg/controllers/binding/common.go``): irrelevant fields pruned (:mod:`interpreter.prune`),
binding labels and annotations merged in, replicas revised to the cluster's share
(:mod:`interpreter.revisereplica`), Job completions divided by Webster apportionment when the
placement is Divided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller_manager import objects
from controller_manager.objects import MutableObj, Obj
from controller_manager.resource import Resource
from interpreter.prune import remove_irrelevant_fields
from interpreter.revisereplica import apply_replica, revise_replica
from karmada_api.bindings import kind_of
from karmada_api.labels import MANAGED_LABEL, RESOURCE_TEMPLATE_GENERATION
from karmada_api.placement import DIVIDED, replica_scheduling_type
from kube_api import resources as kube

from .scheduler.division import spread_replicas_by_target_clusters

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
COMPLETIONS_FIELD = "completions"


@dataclass(frozen=True, slots=True)
class TemplateKind:
    """A kind the detector propagates, by the REST resource its templates are served as."""

    resource: Resource

    @property
    def api_version(self) -> str:
        return self.resource.api_version

    @property
    def kind(self) -> str:
        return self.resource.kind

    @property
    def namespaced(self) -> bool:
        return self.resource.namespaced


TEMPLATE_KINDS: tuple[TemplateKind, ...] = tuple(TemplateKind(resource) for resource in (
    kube.DEPLOYMENTS, kube.STATEFUL_SETS, kube.REPLICA_SETS, kube.DAEMON_SETS, kube.JOBS, kube.CRON_JOBS,
    kube.CONFIGMAPS, kube.SECRETS, kube.SERVICES, kube.SERVICE_ACCOUNTS, kube.PERSISTENT_VOLUME_CLAIMS,
    kube.PERSISTENT_VOLUMES, kube.ROLES, kube.ROLE_BINDINGS, kube.CLUSTER_ROLES, kube.CLUSTER_ROLE_BINDINGS,
    kube.POD_DISRUPTION_BUDGETS, kube.HORIZONTAL_POD_AUTOSCALERS, kube.INGRESSES,
))
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


# ----------------------------------------------------------------------------- replica division


def spread_by_target_clusters(total: int, clusters: list[dict[str, Any]], uid: str = "") -> dict[str, int]:
    """``SpreadReplicasByTargetClusters`` (:func:`.division.spread_replicas_by_target_clusters`) over
    ``spec.clusters`` entries, their replicas the weights: each cluster's share by name, 0 for every
    cluster when none has replicas (where Karmada's Dispenser leaves its result empty)."""
    weights = [(str(c.get("name")), int(c.get("replicas") or 0)) for c in clusters]
    shares = dict(spread_replicas_by_target_clusters(total, weights, uid=uid))
    return {name: shares.get(name, 0) for name, _ in weights}


# ----------------------------------------------------------------------------- manifests


def render_manifest(template: Obj, binding: Obj, replicas: int | None, *,
                    completions: int | None = None) -> MutableObj:
    """The manifest of the Work for one cluster (the Work contract).

    ``replicas`` is the cluster's share (``spec.clusters[].replicas``), applied when the binding's
    ``spec.replicas > 0``; ``completions`` the Job's divided completions, when they were divided.
    """
    manifest = objects.deep_copy(template)
    meta = manifest.setdefault("metadata", {})
    generation = meta.get("generation")
    remove_irrelevant_fields(manifest)
    labels = dict(meta.get("labels") or {})
    binding_kind = kind_of(binding)
    labels[MANAGED_LABEL] = "true"
    labels[binding_kind.id_label] = str(objects.labels(binding).get(binding_kind.id_label) or "")
    meta["labels"] = labels
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != LAST_APPLIED_ANNOTATION}
    if isinstance(generation, int) and generation > 0:
        annotations[RESOURCE_TEMPLATE_GENERATION] = str(generation)
    annotations.update(binding_kind.work_annotations(binding))
    meta["annotations"] = annotations
    if int(objects.spec(binding).get("replicas") or 0) > 0 and replicas is not None:
        revise_replica(manifest, replicas)
    if completions is not None:
        apply_replica(manifest, completions, COMPLETIONS_FIELD)
    if not annotations:
        meta.pop("annotations", None)
    return manifest


def job_completions(template: Obj, binding: Obj, clusters: list[dict[str, Any]]) -> dict[str, int] | None:
    """Each cluster's share of a Divided Job's ``spec.completions`` (None: not divided)."""
    spec = objects.spec(binding)
    completions = objects.spec(template).get(COMPLETIONS_FIELD)
    if (template.get("kind") != "Job" or int(spec.get("replicas") or 0) <= 0
            or replica_scheduling_type(spec.get("placement")) != DIVIDED or not isinstance(completions, int)):
        return None
    return spread_by_target_clusters(completions, clusters, objects.uid(template))
