"""The resource detector: resource template + (Cluster)PropagationPolicy → (Cluster)ResourceBinding.

Karmada's ``pkg/detector`` rewritten level-based on our framework:

* ``resource-detector`` reconciles one template (key ``<namespace>/<plural.group>/<name>``): it keeps
  the policy that claimed the template while that policy exists and still selects it (preemption
  ``Never``), else picks the best match — PropagationPolicies of the template's namespace first,
  then ClusterPropagationPolicies; highest ``spec.priority``, then the implicit priority (name >
  labelSelector > match-all), then the smaller name. It claims the template (policy permanent-id
  label, name/namespace annotations) and creates or updates the binding ``binding_name(kind,
  name)``: owned by the template, labelled for the scheduler, spec built from the policy with the
  mutating webhook's defaults. Only the fields the detector owns are written (never
  ``spec.clusters``, eviction tasks, ``rescheduleTriggeredAt`` or status). A template nobody
  selects any more loses its claim, and so does its binding (which then stays until the template
  goes, as in Karmada, but is invisible to the scheduler).
* ``propagation-policy-webhook`` / ``cluster-propagation-policy-webhook`` stand for the policy
  mutating webhooks: a policy without its permanent-id label gets one (uuid4).

Policy events re-sync the templates they select or have claimed; template events only when more
than status/resourceVersion changed (Karmada's ``SpecificationChanged``). Templates in Karmada's
reserved namespaces and in ``kube-*`` namespaces (``--skipped-propagating-namespaces``) are ignored.

Differences from Karmada: no policy finalizer (a deleted policy's templates are re-matched from
the informer's delete event), no preemption, lazy activation or dependent overrides; the
webhook's defaults are applied to the binding rather than stored on the policy.
"""

from __future__ import annotations

import copy
import re
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import structlog

from controller_manager.cache import IndexFunc, Obj
from controller_manager.client import ApiError, KubeClient, Resource, retry_on_conflict
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.informer import SharedInformer
from controller_manager.manager import Manager
from controller_manager.predicate import FuncPredicate
from controller_manager.reconcile import Request, Result
from interpreter.replicas import get_replicas
from karmada_api.bindings import CRB_KIND, RB_KIND
from karmada_api.labels import CPP_PERMANENT_ID, CRB_PERMANENT_ID, PP_PERMANENT_ID, RB_PERMANENT_ID
from karmada_api.names import binding_name, is_reserved_namespace
from karmada_api.resources import (
    CLUSTER_PROPAGATION_POLICIES,
    CLUSTER_RESOURCE_BINDINGS,
    PROPAGATION_POLICIES,
    RESOURCE_BINDINGS,
)
from kube_api.selectors import compile_label_selector

from .workloads import TEMPLATE_KINDS, TemplateKind, kind_by_key, kind_for, typed

log = structlog.get_logger(__name__)

CONTROLLER = "resource-detector"
PP_WEBHOOK = "propagation-policy-webhook"
CPP_WEBHOOK = "cluster-propagation-policy-webhook"

PP_NAME_ANNOTATION = "propagationpolicy.karmada.io/name"
PP_NAMESPACE_ANNOTATION = "propagationpolicy.karmada.io/namespace"
CPP_NAME_ANNOTATION = "clusterpropagationpolicy.karmada.io/name"

APPLY_POLICY_SUCCEED = "ApplyPolicySucceed"
APPLY_POLICY_FAILED = "ApplyPolicyFailed"
DEFAULT_SCHEDULER = "default-scheduler"
OWNER_MISMATCH = ("failed to update binding due to different owner reference UID, will try again later after "
                  "binding is garbage collected, see https://github.com/karmada-io/karmada/issues/2090")

SKIPPED_NAMESPACES = (re.compile(r"^kube-.*$"),)
"""``--skipped-propagating-namespaces`` default (``kube-.*``, anchored as Karmada compiles it)."""

PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False)

# Implicit priorities (pkg/util: ImplicitPriority).
PRIORITY_MISMATCH, PRIORITY_MATCH_ALL, PRIORITY_MATCH_LABEL_SELECTOR, PRIORITY_MATCH_NAME = 0, 1, 2, 3

_POLICY_ID_INDEX = "detector-policy-by-permanent-id"
_TEMPLATE_BY_PP_INDEX = "detector-template-by-pp-id"
_TEMPLATE_BY_CPP_INDEX = "detector-template-by-cpp-id"

# Binding spec fields copied from the policy on every apply (ApplyPolicy's CreateOrUpdate mutate func).
_COPIED_FIELDS = ("resource", "replicaRequirements", "replicas", "propagateDeps", "schedulerName", "placement",
                  "failover", "conflictResolution", "preserveResourcesOnDeletion", "schedulePriority")


class ApplyError(Exception):
    """A policy that cannot be applied as it is (retried with backoff, reported as ApplyPolicyFailed)."""


# ----------------------------------------------------------------------------- policy kinds


@dataclass(frozen=True)
class PolicyKind:
    """What differs between PropagationPolicy and ClusterPropagationPolicy claims."""

    resource: Resource
    id_label: str
    name_annotation: str
    namespace_annotation: str | None
    template_index: str

    @property
    def cluster(self) -> bool:
        return not self.resource.namespaced

    def claim_labels(self, policy: Obj) -> dict[str, str]:
        return {self.id_label: policy_id(policy, self)}

    def claim_annotations(self, policy: Obj) -> dict[str, str]:
        meta = policy.get("metadata") or {}
        annotations = {self.name_annotation: str(meta.get("name") or "")}
        if self.namespace_annotation:
            annotations[self.namespace_annotation] = str(meta.get("namespace") or "")
        return annotations

    @property
    def annotation_keys(self) -> tuple[str, ...]:
        return (self.name_annotation,) + ((self.namespace_annotation,) if self.namespace_annotation else ())

    def describe(self, policy: Obj) -> str:
        meta = policy.get("metadata") or {}
        if self.cluster:
            return f"cluster policy({meta.get('name')})"
        return f"policy({meta.get('namespace')}/{meta.get('name')})"


PP_KIND = PolicyKind(PROPAGATION_POLICIES, PP_PERMANENT_ID, PP_NAME_ANNOTATION, PP_NAMESPACE_ANNOTATION,
                     _TEMPLATE_BY_PP_INDEX)
CPP_KIND = PolicyKind(CLUSTER_PROPAGATION_POLICIES, CPP_PERMANENT_ID, CPP_NAME_ANNOTATION, None,
                      _TEMPLATE_BY_CPP_INDEX)
POLICY_KINDS = (PP_KIND, CPP_KIND)


def other_kind(kind: PolicyKind) -> PolicyKind:
    return CPP_KIND if kind is PP_KIND else PP_KIND


def policy_id(policy: Obj, kind: PolicyKind) -> str:
    return str(((policy.get("metadata") or {}).get("labels") or {}).get(kind.id_label) or "")


def _deleting(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


# ----------------------------------------------------------------------------- matching (pure)


def ignored_namespace(namespace: str) -> bool:
    """Karmada's detector event filter: reserved namespaces and ``--skipped-propagating-namespaces``."""
    return bool(namespace) and (is_reserved_namespace(namespace)
                                or any(p.match(namespace) for p in SKIPPED_NAMESPACES))


def selector_priority(template: Obj, selector: Obj) -> int:
    """``ResourceSelectorPriority``: how specifically a resourceSelector selects the template (0: not at all).

    apiVersion and kind must be equal and the namespace too when the selector sets one. A name
    decides alone (a labelSelector next to it is ignored, as in Karmada); else a labelSelector must
    match; else everything of that kind matches.
    """
    meta = template.get("metadata") or {}
    if (template.get("apiVersion") != selector.get("apiVersion") or template.get("kind") != selector.get("kind")
            or (selector.get("namespace") and meta.get("namespace") != selector.get("namespace"))):
        return PRIORITY_MISMATCH
    if selector.get("name"):
        return PRIORITY_MATCH_NAME if selector["name"] == meta.get("name") else PRIORITY_MISMATCH
    if selector.get("labelSelector") is None:
        return PRIORITY_MATCH_ALL
    try:
        matches = compile_label_selector(selector["labelSelector"])(meta.get("labels") or {})
    except (ValueError, AttributeError, TypeError):
        return PRIORITY_MISMATCH
    return PRIORITY_MATCH_LABEL_SELECTOR if matches else PRIORITY_MISMATCH


def defaulted_selectors(policy: Obj) -> list[dict[str, Any]]:
    """The policy's resourceSelectors with the webhook's default: a PP selector's empty namespace is the PP's."""
    meta = policy.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    selectors = []
    for selector in (policy.get("spec") or {}).get("resourceSelectors") or []:
        if not isinstance(selector, dict):
            continue
        selectors.append({**selector, "namespace": namespace} if namespace and not selector.get("namespace")
                         else selector)
    return selectors


def policy_match_priority(template: Obj, policy: Obj) -> int:
    """``ResourceMatchSelectorsPriority``: the best implicit priority over the policy's selectors."""
    return max((selector_priority(template, s) for s in defaulted_selectors(policy)), default=PRIORITY_MISMATCH)


def explicit_priority(policy: Obj) -> int:
    value = (policy.get("spec") or {}).get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def highest_priority_policy(policies: Iterable[Obj], template: Obj) -> Obj | None:
    """``getHighestPriority(Cluster)PropagationPolicy``: explicit priority, implicit priority, then name.

    Karmada's loop starts from explicit priority 0, so a policy with a negative ``spec.priority``
    never wins; that is kept.
    """
    best: Obj | None = None
    best_implicit, best_explicit = PRIORITY_MISMATCH, 0
    for policy in policies:
        implicit = policy_match_priority(template, policy)
        if implicit <= PRIORITY_MISMATCH:
            continue
        explicit = explicit_priority(policy)
        if best_explicit < explicit:
            best, best_implicit, best_explicit = policy, implicit, explicit
            continue
        if best_explicit == explicit:
            if implicit > best_implicit:
                best, best_implicit = policy, implicit
            elif implicit == best_implicit and (
                    best is None or str(policy["metadata"]["name"]) < str(best["metadata"]["name"])):
                best = policy
    return best


# ----------------------------------------------------------------------------- binding (pure)


def default_placement(placement: Obj | None) -> dict[str, Any]:
    """The policy mutating webhook's placement defaults (spec §1.6)."""
    result = copy.deepcopy(dict(placement or {}))
    for constraint in result.get("spreadConstraints") or []:
        if not isinstance(constraint, dict):
            continue
        if not constraint.get("spreadByField") and not constraint.get("spreadByLabel"):
            constraint["spreadByField"] = "cluster"
        if not constraint.get("minGroups"):
            constraint["minGroups"] = 1
    scheduling = result.get("replicaScheduling")
    if (isinstance(scheduling, dict) and scheduling.get("replicaSchedulingType") == "Divided"
            and not scheduling.get("replicaDivisionPreference")):
        scheduling["replicaDivisionPreference"] = "Weighted"
    return result


def default_failover(failover: Obj | None) -> dict[str, Any] | None:
    """The webhook's failover default: application failover ``Gracefully`` without a grace period gets 600s."""
    if not failover:
        return None
    result = copy.deepcopy(dict(failover))
    application = result.get("application")
    if (isinstance(application, dict) and application.get("purgeMode") == "Gracefully"
            and application.get("gracePeriodSeconds") is None):
        application["gracePeriodSeconds"] = 600
    return result


def merge_suspension(binding_suspension: Obj | None, policy_suspension: Obj | None) -> dict[str, Any] | None:
    """``MergePolicySuspension``: the policy's dispatching suspension, the binding's own ``scheduling`` kept."""
    result = {k: v for k, v in (binding_suspension or {}).items() if k not in ("dispatching", "dispatchingOnClusters")}
    for key in ("dispatching", "dispatchingOnClusters"):
        if (policy_suspension or {}).get(key) is not None:
            result[key] = copy.deepcopy(policy_suspension[key])  # type: ignore[index]
    return result or None


def owner_reference(template: Obj) -> dict[str, Any]:
    """``metav1.NewControllerRef(template)``: the GC deletes the binding with its template."""
    meta = template.get("metadata") or {}
    return {"apiVersion": template.get("apiVersion"), "kind": template.get("kind"), "name": meta.get("name"),
            "uid": meta.get("uid"), "controller": True, "blockOwnerDeletion": True}


def build_binding(template: Obj, kind: TemplateKind, policy: Obj, policy_kind: PolicyKind, *,
                  schedule_priority: int | None = None) -> dict[str, Any]:
    """``BuildResourceBinding`` / ``BuildClusterResourceBinding``: the binding the detector wants.

    Namespaced templates get a ResourceBinding (whatever the policy kind), cluster-scoped ones a
    ClusterResourceBinding. The binding's own permanent id is added at creation, not here.
    """
    meta = template.get("metadata") or {}
    namespaced = bool(meta.get("namespace"))
    policy_spec = policy.get("spec") or {}
    resource = {"apiVersion": template.get("apiVersion"), "kind": template.get("kind")}
    if namespaced:
        resource["namespace"] = meta["namespace"]
    resource.update({"name": meta.get("name"), "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")})
    spec: dict[str, Any] = {"resource": resource}
    replicas, requirements = get_replicas(template, kind)
    if requirements is not None:
        spec["replicaRequirements"] = requirements
    if replicas:
        spec["replicas"] = replicas
    if policy_spec.get("propagateDeps"):
        spec["propagateDeps"] = True
    spec["schedulerName"] = policy_spec.get("schedulerName") or DEFAULT_SCHEDULER
    spec["placement"] = default_placement(policy_spec.get("placement"))
    failover = default_failover(policy_spec.get("failover"))
    if failover is not None:
        spec["failover"] = failover
    if policy_spec.get("conflictResolution"):
        spec["conflictResolution"] = policy_spec["conflictResolution"]
    if policy_spec.get("preserveResourcesOnDeletion") is not None:
        spec["preserveResourcesOnDeletion"] = bool(policy_spec["preserveResourcesOnDeletion"])
    if schedule_priority is not None:
        spec["schedulePriority"] = {"priority": schedule_priority}
    suspension = merge_suspension(None, policy_spec.get("suspension"))
    if suspension is not None:
        spec["suspension"] = suspension
    binding_kind = RB_KIND if namespaced else CRB_KIND
    binding_meta: dict[str, Any] = {"name": binding_name(str(template.get("kind")), str(meta.get("name"))),
                                    "labels": policy_kind.claim_labels(policy),
                                    "annotations": policy_kind.claim_annotations(policy),
                                    "ownerReferences": [owner_reference(template)],
                                    "finalizers": [binding_kind.finalizer]}
    if namespaced:
        binding_meta["namespace"] = meta["namespace"]
    binding_resource = binding_kind.resource
    return {"apiVersion": binding_resource.api_version, "kind": binding_resource.kind, "metadata": binding_meta,
            "spec": spec}


def merge_binding(existing: Obj, desired: Obj, policy_kind: PolicyKind) -> dict[str, Any]:
    """What ApplyPolicy's CreateOrUpdate writes over an existing binding: the detector's fields only.

    Labels, annotations and finalizers are merged; the other policy kind's claim is dropped; spec
    fields the detector owns are replaced (or removed when the policy no longer sets them);
    ``spec.clusters``, eviction tasks, ``rescheduleTriggeredAt`` and status are left alone.
    """
    merged = copy.deepcopy(dict(existing))
    meta = merged.setdefault("metadata", {})
    want_meta = desired["metadata"]
    other = other_kind(policy_kind)
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != other.id_label}
    labels.update(want_meta["labels"])
    meta["labels"] = labels
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in other.annotation_keys}
    annotations.update(want_meta["annotations"])
    meta["annotations"] = annotations
    finalizers = list(meta.get("finalizers") or [])
    finalizers += [f for f in want_meta["finalizers"] if f not in finalizers]
    meta["finalizers"] = finalizers
    meta["ownerReferences"] = copy.deepcopy(want_meta["ownerReferences"])
    spec = merged.setdefault("spec", {})
    want_spec = desired["spec"]
    for field in _COPIED_FIELDS:
        if field in want_spec:
            spec[field] = copy.deepcopy(want_spec[field])
        else:
            spec.pop(field, None)
    suspension = merge_suspension(spec.get("suspension"), want_spec.get("suspension"))
    if suspension is None:
        spec.pop("suspension", None)
    else:
        spec["suspension"] = suspension
    return merged


def controller_owner_uid(obj: Obj) -> str | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid") or "")
    return None


def specification_changed(old: Obj, new: Obj) -> bool:
    """``eventfilter.SpecificationChanged``: anything but status, resourceVersion and managedFields."""

    def strip(obj: Obj) -> tuple[dict[str, Any], dict[str, Any]]:
        body = {k: v for k, v in obj.items() if k not in ("status", "metadata")}
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
        return body, meta

    return strip(old) != strip(new)


# ----------------------------------------------------------------------------- requests


def template_request(kind: TemplateKind, obj: Obj) -> Request:
    """A template's key: its namespace and ``<plural.group>/<name>`` (names never contain '/')."""
    meta = obj.get("metadata") or {}
    return Request(str(meta.get("namespace") or ""), f"{kind.resource.key}/{meta.get('name')}")


def parse_template_request(request: Request) -> tuple[TemplateKind, str] | None:
    key, _, name = request.name.rpartition("/")
    kind = kind_by_key(key)
    return (kind, name) if kind is not None and name else None


def _cache_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _label_index(label: str) -> IndexFunc:
    def index(obj: Obj) -> list[str]:
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(label)
        return [value] if value else []

    return index


def _ensure_index(informer: SharedInformer, name: str, func: IndexFunc) -> None:
    try:
        informer.store.index_values(name)
    except KeyError:
        informer.add_indexers({name: func})


def _merge_patch_metadata(labels: dict[str, str | None], annotations: dict[str, str | None]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta}


def _claim_delta(obj: Obj, want_labels: dict[str, str], want_annotations: dict[str, str],
                 drop_labels: Iterable[str], drop_annotations: Iterable[str]) -> dict[str, Any] | None:
    """A merge patch setting ``want_*`` and removing ``drop_*`` from the metadata, or None if nothing differs."""
    meta = obj.get("metadata") or {}
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    label_patch: dict[str, str | None] = {k: v for k, v in want_labels.items() if labels.get(k) != v}
    label_patch.update({k: None for k in drop_labels if k in labels})
    annotation_patch: dict[str, str | None] = {k: v for k, v in want_annotations.items() if annotations.get(k) != v}
    annotation_patch.update({k: None for k in drop_annotations if k in annotations})
    if not label_patch and not annotation_patch:
        return None
    return _merge_patch_metadata(label_patch, annotation_patch)


# ----------------------------------------------------------------------------- the detector


class Detector:
    """Reconciles resource templates (``resource-detector``)."""

    def __init__(self, manager: Manager) -> None:
        self.client: KubeClient = manager.client
        self.events: EventRecorder = manager.event_recorder(CONTROLLER)
        self.templates: dict[str, SharedInformer] = {}
        for kind in TEMPLATE_KINDS:
            informer = manager.informer(kind.resource)
            _ensure_index(informer, _TEMPLATE_BY_PP_INDEX, _label_index(PP_PERMANENT_ID))
            _ensure_index(informer, _TEMPLATE_BY_CPP_INDEX, _label_index(CPP_PERMANENT_ID))
            self.templates[kind.resource.key] = informer
        self.policies: dict[str, SharedInformer] = {}
        for policy_kind in POLICY_KINDS:
            informer = manager.informer(policy_kind.resource)
            _ensure_index(informer, _POLICY_ID_INDEX, _label_index(policy_kind.id_label))
            self.policies[policy_kind.id_label] = informer
        self.bindings = {True: manager.informer(RESOURCE_BINDINGS), False: manager.informer(CLUSTER_RESOURCE_BINDINGS)}

    # ------------------------------------------------------------- mapping

    def template_predicate(self) -> FuncPredicate:
        def wanted(obj: Obj) -> bool:
            return not ignored_namespace(str((obj.get("metadata") or {}).get("namespace") or ""))

        return FuncPredicate(on_create=wanted,
                             on_update=lambda old, new: wanted(new) and specification_changed(old, new),
                             on_delete=lambda _obj: False)

    def template_mapper(self, kind: TemplateKind) -> Callable[[Obj], list[Request]]:
        return lambda obj: [template_request(kind, obj)]

    def policy_mapper(self, policy_kind: PolicyKind) -> Callable[[Obj], list[Request]]:
        """A policy event → the templates it selects and those it has claimed."""

        def mapper(policy: Obj) -> list[Request]:
            requests: set[Request] = set()
            claimed = policy_id(policy, policy_kind)
            if claimed:
                for key, informer in self.templates.items():
                    kind = kind_by_key(key)
                    assert kind is not None
                    for obj in informer.store.by_index(policy_kind.template_index, claimed):
                        requests.add(template_request(kind, obj))
            for selector in defaulted_selectors(policy):
                kind = kind_for(str(selector.get("apiVersion") or ""), str(selector.get("kind") or ""))
                if kind is None:
                    continue
                store = self.templates[kind.resource.key].store
                namespace = str(selector.get("namespace") or "")
                candidates = store.by_index("namespace", namespace) if namespace and kind.namespaced else store.list()
                for obj in candidates:
                    if selector_priority(typed(obj, kind), selector) > PRIORITY_MISMATCH:
                        requests.add(template_request(kind, obj))
            return sorted(requests)

        return mapper

    # ------------------------------------------------------------- policy selection

    def _policy_by_id(self, policy_kind: PolicyKind, claimed: str, namespace: str) -> Obj | None:
        for policy in self.policies[policy_kind.id_label].store.by_index(_POLICY_ID_INDEX, claimed):
            if policy_kind.cluster or (policy.get("metadata") or {}).get("namespace") == namespace:
                return policy
        return None

    def select_policy(self, template: Obj) -> tuple[PolicyKind, Obj] | None:
        """The claiming policy while it exists and selects the template, else the best match (PP before CPP)."""
        meta = template.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        labels = meta.get("labels") or {}
        for policy_kind in POLICY_KINDS:
            claimed = labels.get(policy_kind.id_label)
            if not claimed or (not policy_kind.cluster and not namespace):
                continue
            policy = self._policy_by_id(policy_kind, str(claimed), namespace)
            if policy is not None and not _deleting(policy) and policy_match_priority(template, policy):
                return policy_kind, policy
        if namespace:
            candidates = [p for p in self.policies[PP_KIND.id_label].store.by_index("namespace", namespace)
                          if not _deleting(p)]
            best = highest_priority_policy(candidates, template)
            if best is not None:
                return PP_KIND, best
        candidates = [p for p in self.policies[CPP_KIND.id_label].store.list() if not _deleting(p)]
        best = highest_priority_policy(candidates, template)
        return (CPP_KIND, best) if best is not None else None

    # ------------------------------------------------------------- reconcile

    async def reconcile(self, request: Request) -> Result:
        parsed = parse_template_request(request)
        if parsed is None or ignored_namespace(request.namespace):
            return Result()
        kind, name = parsed
        cached = self.templates[kind.resource.key].store.get(_cache_key(request.namespace, name))
        if cached is None or _deleting(cached):
            return Result()  # the binding goes with its template (ownerReference)
        template = typed(cached, kind)
        choice = self.select_policy(template)
        if choice is None:
            await self._release(template)
            return Result()
        policy_kind, policy = choice
        if not policy_id(policy, policy_kind):
            return Result()  # the webhook simulation labels it first; that label change re-syncs us
        try:
            claimed = await self._claim(template, kind, policy_kind, policy)
            if claimed is None:
                return Result()  # the template is gone
            changed = await self._apply(claimed, kind, policy_kind, policy)
        except (ApiError, ApplyError) as exc:
            self.events.event(template, WARNING, APPLY_POLICY_FAILED,
                              f"Apply {policy_kind.describe(policy)} failed: {exc}")
            raise
        if changed:
            self.events.event(claimed, NORMAL, APPLY_POLICY_SUCCEED, f"Apply {policy_kind.describe(policy)} succeed")
        return Result()

    async def _claim(self, template: dict[str, Any], kind: TemplateKind, policy_kind: PolicyKind,
                     policy: Obj) -> dict[str, Any] | None:
        """``ClaimPolicyForObject``: mark the template as the policy's; returns the template as stored."""
        other = other_kind(policy_kind)
        patch = _claim_delta(template, policy_kind.claim_labels(policy), policy_kind.claim_annotations(policy),
                             (other.id_label,), other.annotation_keys)
        if patch is None:
            return template
        meta = template["metadata"]
        try:
            patched = await self.client.patch(kind.resource, meta["name"], patch, namespace=meta.get("namespace") or "")
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise
        return typed(patched, kind)

    async def _schedule_priority(self, policy: Obj) -> int | None:
        """The binding's ``schedulePriority.priority`` from the policy's PriorityClass reference."""
        reference = (policy.get("spec") or {}).get("schedulePriority")
        if not reference:
            return None
        source, name = reference.get("priorityClassSource"), str(reference.get("priorityClassName") or "")
        if source == "KubePriorityClass":
            try:
                priority_class = await self.client.get(PRIORITY_CLASSES, name)
            except ApiError as exc:
                raise ApplyError(f"failed to get Kube PriorityClass({name}): {exc}") from exc
            return int(priority_class.get("value") or 0)
        if source == "PodPriorityClass":
            raise ApplyError("priority class source is PodPriorityClass, but PodPriorityClass is not supported yet")
        if source == "FederatedPriorityClass":
            raise ApplyError("priority class source is FederatedPriorityClass, but FederatedPriorityClass is not "
                             "supported yet")
        raise ApplyError("unsupported priority class source")

    async def _apply(self, template: Obj, kind: TemplateKind, policy_kind: PolicyKind, policy: Obj) -> bool:
        """Create or update the binding (conflict retry); whether it was written."""
        desired = build_binding(template, kind, policy, policy_kind,
                                schedule_priority=await self._schedule_priority(policy))
        meta = desired["metadata"]
        namespaced = "namespace" in meta
        resource = RESOURCE_BINDINGS if namespaced else CLUSTER_RESOURCE_BINDINGS
        id_label = RB_PERMANENT_ID if namespaced else CRB_PERMANENT_ID
        template_uid = (template.get("metadata") or {}).get("uid")
        first = True

        async def attempt() -> bool:
            nonlocal first
            if first:
                first = False
                existing = self.bindings[namespaced].store.get(_cache_key(meta.get("namespace", ""), meta["name"]))
            else:
                existing = await self.client.get_or_none(resource, meta["name"], meta.get("namespace", ""))
            if existing is None:
                body = copy.deepcopy(desired)
                body["metadata"]["labels"][id_label] = str(uuid.uuid4())
                try:
                    await self.client.create(resource, body)
                except ApiError as exc:
                    if exc.is_already_exists:  # our cache was behind: read it and update instead
                        raise ApiError(409, "Conflict", str(exc)) from exc
                    raise
                log.info("binding created", binding=meta["name"], namespace=meta.get("namespace", ""))
                return True
            owner = controller_owner_uid(existing)
            if owner is not None and owner != template_uid:
                raise ApplyError(OWNER_MISMATCH)
            merged = merge_binding(existing, desired, policy_kind)
            if not (merged["metadata"].get("labels") or {}).get(id_label):
                merged["metadata"]["labels"][id_label] = str(uuid.uuid4())
            if merged == existing:
                return False
            written = await self.client.update(resource, merged)
            return bool(written["metadata"].get("resourceVersion") != existing["metadata"].get("resourceVersion"))

        return await retry_on_conflict(attempt)


    async def _release(self, template: Obj) -> None:
        """No policy selects the template: drop the claim from its binding first, then from the template.

        The binding goes first so that a failure leaves the template claimed and this is retried.
        """
        meta = template.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        all_labels = [k.id_label for k in POLICY_KINDS]
        all_annotations = [a for k in POLICY_KINDS for a in k.annotation_keys]
        resource = RESOURCE_BINDINGS if namespace else CLUSTER_RESOURCE_BINDINGS
        bname = binding_name(str(template.get("kind")), name)
        binding = self.bindings[bool(namespace)].store.get(_cache_key(namespace, bname))
        if binding is not None and not _deleting(binding):
            patch = _claim_delta(binding, {}, {}, all_labels, all_annotations)
            if patch is not None:
                try:
                    await self.client.patch(resource, bname, patch, namespace=namespace)
                except ApiError as exc:
                    if not exc.is_not_found:
                        raise
        patch = _claim_delta(template, {}, {}, all_labels, all_annotations)
        if patch is None:
            return
        kind = kind_for(str(template.get("apiVersion")), str(template.get("kind")))
        assert kind is not None
        try:
            await self.client.patch(kind.resource, name, patch, namespace=namespace)
        except ApiError as exc:
            if not exc.is_not_found:
                raise
        log.info("template released: no policy selects it", kind=kind.kind, namespace=namespace, name=name)


class PolicyWebhook:
    """Stands for the policy mutating webhook: a policy without its permanent-id label gets one."""

    def __init__(self, client: KubeClient, policy_kind: PolicyKind, informer: SharedInformer) -> None:
        self.client = client
        self.policy_kind = policy_kind
        self.store = informer.store

    async def reconcile(self, request: Request) -> Result:
        cached = self.store.get(str(request))
        if cached is None or _deleting(cached) or policy_id(cached, self.policy_kind):
            return Result()
        policy = copy.deepcopy(dict(cached))
        policy["metadata"]["labels"] = {**(policy["metadata"].get("labels") or {}),
                                        self.policy_kind.id_label: str(uuid.uuid4())}
        try:  # a conditional PUT: a stale cache must not relabel a policy that already has its id
            await self.client.update(self.policy_kind.resource, policy)
        except ApiError as exc:
            if exc.is_not_found:
                return Result()
            raise
        return Result()


# ----------------------------------------------------------------------------- wiring


def _policy_event_predicate(policy_kind: PolicyKind) -> FuncPredicate:
    """Creates and deletes; updates that change the spec, the permanent id or start the deletion."""

    def updated(old: Obj, new: Obj) -> bool:
        old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
        return bool(old_meta.get("generation") != new_meta.get("generation")
                    or policy_id(old, policy_kind) != policy_id(new, policy_kind)
                    or bool(old_meta.get("deletionTimestamp")) != bool(new_meta.get("deletionTimestamp")))

    return FuncPredicate(on_update=updated)


def setup_detector(manager: Manager, *, workers: int = 5) -> list[Controller]:
    """Register ``resource-detector`` (``--concurrent-resource-template-syncs`` workers) and the policy webhooks."""
    detector = Detector(manager)
    controller = Controller(CONTROLLER, detector, workers=workers)
    predicate = detector.template_predicate()
    for key, informer in detector.templates.items():
        kind = kind_by_key(key)
        assert kind is not None
        controller.watches(informer, map_func=detector.template_mapper(kind), predicates=[predicate])
    controllers = [controller]
    for policy_kind, webhook_name in ((PP_KIND, PP_WEBHOOK), (CPP_KIND, CPP_WEBHOOK)):
        informer = detector.policies[policy_kind.id_label]
        controller.watches(informer, map_func=detector.policy_mapper(policy_kind),
                           predicates=[_policy_event_predicate(policy_kind)])
        webhook = Controller(webhook_name, PolicyWebhook(manager.client, policy_kind, informer), workers=1)
        webhook.watches(informer, predicates=[FuncPredicate(on_delete=lambda _obj: False)])
        controllers.append(webhook)
    for each in controllers:
        manager.add_controller(each)
    return controllers
