"""PropagationPolicy and ClusterPropagationPolicy as the detector sees them: claims and matching.

Kept apart from the detector's reconciler (:mod:`devplane.karmada.detector`) because these are
pure rules about policies, shared by the reconciler, the binding it builds
(:mod:`devplane.karmada.policybinding`) and the unit tests. Karmada at commit f8fdd02:

* the claim a policy puts on a template (its permanent-id label, name/namespace annotations)
  and takes off again: ``pkg/detector/claim.go``;
* how specifically a resourceSelector selects a template (``ImplicitPriority``,
  ``ResourceSelectorPriority``): ``pkg/util/selector.go``;
* which of several policies wins: ``pkg/detector/compare.go``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from controller_manager.resource import Resource
from karmada_api.labels import CPP_PERMANENT_ID, PP_PERMANENT_ID
from karmada_api.resources import CLUSTER_PROPAGATION_POLICIES, PROPAGATION_POLICIES
from kube_api.selectors import compile_label_selector

PP_NAME_ANNOTATION = "propagationpolicy.karmada.io/name"
PP_NAMESPACE_ANNOTATION = "propagationpolicy.karmada.io/namespace"
CPP_NAME_ANNOTATION = "clusterpropagationpolicy.karmada.io/name"

# Implicit priorities (pkg/util/selector.go: ImplicitPriority).
PRIORITY_MISMATCH, PRIORITY_MATCH_ALL, PRIORITY_MATCH_LABEL_SELECTOR, PRIORITY_MATCH_NAME = 0, 1, 2, 3

# The detector's template indexes by claiming policy id, one per policy kind.
_TEMPLATE_BY_PP_INDEX = "detector-template-by-pp-id"
_TEMPLATE_BY_CPP_INDEX = "detector-template-by-cpp-id"


# ----------------------------------------------------------------------------- policy kinds and claims


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
        annotations = {self.name_annotation: objects.name(policy)}
        if self.namespace_annotation:
            annotations[self.namespace_annotation] = objects.namespace(policy)
        return annotations

    @property
    def annotation_keys(self) -> tuple[str, ...]:
        return (self.name_annotation,) + ((self.namespace_annotation,) if self.namespace_annotation else ())

    def describe(self, policy: Obj) -> str:
        if self.cluster:
            return f"cluster policy({objects.name(policy)})"
        return f"policy({objects.namespace(policy)}/{objects.name(policy)})"


PP_KIND = PolicyKind(PROPAGATION_POLICIES, PP_PERMANENT_ID, PP_NAME_ANNOTATION, PP_NAMESPACE_ANNOTATION,
                     _TEMPLATE_BY_PP_INDEX)
CPP_KIND = PolicyKind(CLUSTER_PROPAGATION_POLICIES, CPP_PERMANENT_ID, CPP_NAME_ANNOTATION, None,
                      _TEMPLATE_BY_CPP_INDEX)
POLICY_KINDS = (PP_KIND, CPP_KIND)


def other_kind(kind: PolicyKind) -> PolicyKind:
    """The other policy kind, whose claim a template loses when this kind claims it."""
    return CPP_KIND if kind is PP_KIND else PP_KIND


def policy_id(policy: Obj, kind: PolicyKind) -> str:
    """The policy's permanent id (set by the policy webhook), "" while it has none."""
    return str(objects.labels(policy).get(kind.id_label) or "")


def _merge_patch_metadata(labels: dict[str, str | None], annotations: dict[str, str | None]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    return {"metadata": meta}


def claim_delta(obj: Obj, want_labels: dict[str, str], want_annotations: dict[str, str],
                drop_labels: Iterable[str], drop_annotations: Iterable[str]) -> dict[str, Any] | None:
    """A merge patch setting ``want_*`` and removing ``drop_*`` from the metadata, or None if nothing differs."""
    labels, annotations = objects.labels(obj), objects.annotations(obj)
    label_patch: dict[str, str | None] = {k: v for k, v in want_labels.items() if labels.get(k) != v}
    label_patch.update({k: None for k in drop_labels if k in labels})
    annotation_patch: dict[str, str | None] = {k: v for k, v in want_annotations.items() if annotations.get(k) != v}
    annotation_patch.update({k: None for k in drop_annotations if k in annotations})
    if not label_patch and not annotation_patch:
        return None
    return _merge_patch_metadata(label_patch, annotation_patch)


# ----------------------------------------------------------------------------- matching


def selector_priority(template: Obj, selector: Obj) -> int:
    """``ResourceSelectorPriority``: how specifically a resourceSelector selects the template (0: not at all).

    apiVersion and kind must be equal and the namespace too when the selector sets one. A name
    decides alone (a labelSelector next to it is ignored, as in Karmada); else a labelSelector must
    match; else everything of that kind matches.
    """
    meta = objects.metadata(template)
    if (template.get("apiVersion") != selector.get("apiVersion") or template.get("kind") != selector.get("kind")
            or (selector.get("namespace") and meta.get("namespace") != selector.get("namespace"))):
        return PRIORITY_MISMATCH
    if selector.get("name"):
        return PRIORITY_MATCH_NAME if selector["name"] == meta.get("name") else PRIORITY_MISMATCH
    if selector.get("labelSelector") is None:
        return PRIORITY_MATCH_ALL
    try:
        matches = compile_label_selector(selector["labelSelector"])(objects.labels(template))
    except (ValueError, AttributeError, TypeError):
        return PRIORITY_MISMATCH
    return PRIORITY_MATCH_LABEL_SELECTOR if matches else PRIORITY_MISMATCH


def defaulted_selectors(policy: Obj) -> list[dict[str, Any]]:
    """The policy's resourceSelectors with the webhook's default: a PP selector's empty namespace is the PP's."""
    namespace = objects.namespace(policy)
    selectors = []
    for selector in objects.spec(policy).get("resourceSelectors") or []:
        if not isinstance(selector, dict):
            continue
        selectors.append({**selector, "namespace": namespace} if namespace and not selector.get("namespace")
                         else selector)
    return selectors


def policy_match_priority(template: Obj, policy: Obj) -> int:
    """``ResourceMatchSelectorsPriority``: the best implicit priority over the policy's selectors."""
    return max((selector_priority(template, s) for s in defaulted_selectors(policy)), default=PRIORITY_MISMATCH)


def explicit_priority(policy: Obj) -> int:
    value = objects.spec(policy).get("priority")
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
                    best is None or objects.name(policy) < objects.name(best)):
                best = policy
    return best
