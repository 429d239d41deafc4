"""kube 1.20's ``validateAffinity`` and ``validateTopologySpreadConstraints``: where a Pod may be placed.

Karmada propagates a workload's template as written, so a Deployment whose node affinity has no term, or whose
spread constraint has no topology key, is refused by the Karmada API server (and by every member): the dev server
refuses it too, with kube's paths and messages, quirks included (each checked on the refplane):

- a pod affinity term's label selector is checked under ``<term>.matchExpressions`` (kube passes that path to
  ``ValidateLabelSelector``, which adds its own ``matchLabels``/``matchExpressions``), and its namespaces under
  ``<term>.namespace``, without an index;
- an empty topology key of a pod affinity term gets three causes: required, then both of the qualified-name rule's
  messages for an empty name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kube_api.validation import go_quote, is_dns1123_label, is_dns1123_subdomain, is_qualified_name

from .errors import Cause
from .validation import bad_operator, child, entries, go_int, label_selector_causes, requirement_causes

WHEN_UNSATISFIABLE: Final = ("DoNotSchedule", "ScheduleAnyway")
NODE_NAME_FIELD: Final = "metadata.name"
"""The one key a node field selector may name (``nodeFieldSelectorValidators``)."""


def _values(requirement: Mapping[str, Any]) -> list[Any]:
    values = requirement.get("values")
    return values if isinstance(values, list) else []


def affinity_causes(pod: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateAffinity`` for the Pod spec at ``field``: node affinity, pod affinity, pod anti-affinity."""
    affinity = pod.get("affinity")
    if not isinstance(affinity, Mapping):
        return []
    at = f"{field}.affinity"
    causes: list[Cause] = []
    node = affinity.get("nodeAffinity")
    if isinstance(node, Mapping):
        required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(required, Mapping):
            causes.extend(_node_selector(required, f"{at}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"))
        for i, term in entries(node, "preferredDuringSchedulingIgnoredDuringExecution"):
            term_at = f"{at}.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            causes.extend(_weight(term, term_at))
            causes.extend(_node_selector_term(child(term, "preference"), f"{term_at}.preference"))
    for key in ("podAffinity", "podAntiAffinity"):
        pods = affinity.get(key)
        if not isinstance(pods, Mapping):
            continue
        for i, term in entries(pods, "requiredDuringSchedulingIgnoredDuringExecution"):
            causes.extend(_pod_affinity_term(term, f"{at}.{key}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"))
        for i, weighted in entries(pods, "preferredDuringSchedulingIgnoredDuringExecution"):
            weighted_at = f"{at}.{key}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            causes.extend(_weight(weighted, weighted_at))
            causes.extend(_pod_affinity_term(child(weighted, "podAffinityTerm"), f"{weighted_at}.podAffinityTerm"))
    return causes


def _weight(term: Mapping[str, Any], field: str) -> list[Cause]:
    weight = go_int(term.get("weight"))
    return [] if 0 < weight <= 100 else [Cause.invalid(f"{field}.weight", str(weight), "must be in the range 1-100")]


def _node_selector(selector: Mapping[str, Any], field: str) -> list[Cause]:
    """``ValidateNodeSelector``: at least one term, each valid."""
    terms = entries(selector, "nodeSelectorTerms")
    if not terms:
        return [Cause.required(f"{field}.nodeSelectorTerms", "must have at least one node selector term")]
    return [cause for i, term in terms for cause in _node_selector_term(term, f"{field}.nodeSelectorTerms[{i}]")]


def _node_selector_term(term: Mapping[str, Any], field: str) -> list[Cause]:
    """``ValidateNodeSelectorTerm``: its label expressions, then its field expressions."""
    causes: list[Cause] = []
    for i, requirement in entries(term, "matchExpressions"):
        causes.extend(requirement_causes(requirement, f"{field}.matchExpressions[{i}]", numeric=True))
    for i, requirement in entries(term, "matchFields"):
        at = f"{field}.matchFields[{i}]"
        operator, values = requirement.get("operator"), _values(requirement)
        if operator in ("In", "NotIn"):
            if len(values) != 1:
                causes.append(Cause.required(f"{at}.values", "must be only one value when `operator` is 'In' or "
                                                             "'NotIn' for node field selector"))
        else:
            causes.append(bad_operator(at, operator))
        key = str(requirement.get("key") or "")
        if key != NODE_NAME_FIELD:
            causes.append(Cause.invalid(f"{at}.key", go_quote(key), "not a valid field selector key"))
            continue
        for j, value in enumerate(values):
            causes.extend(Cause.invalid(f"{at}.values[{j}]", go_quote(str(value)), msg)
                          for msg in is_dns1123_subdomain(str(value)))
    return causes


def _pod_affinity_term(term: Mapping[str, Any], field: str) -> list[Cause]:
    """``validatePodAffinityTerm``, its paths as kube 1.20 writes them (see the module docstring)."""
    causes = label_selector_causes(child(term, "labelSelector"), f"{field}.matchExpressions")
    namespaces = term.get("namespaces")
    for name in namespaces if isinstance(namespaces, list) else []:
        causes.extend(Cause.invalid(f"{field}.namespace", go_quote(str(name)), msg)
                      for msg in is_dns1123_label(str(name)))
    key = str(term.get("topologyKey") or "")
    if not key:
        causes.append(Cause.required(f"{field}.topologyKey", "can not be empty"))
    causes.extend(Cause.invalid(f"{field}.topologyKey", go_quote(key), msg) for msg in is_qualified_name(key))
    return causes


def topology_spread_causes(pod: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateTopologySpreadConstraints``: a positive skew, a topology key, a known action, and no two
    constraints with the same (topology key, action): the first of such a pair is the one reported."""
    constraints = entries(pod, "topologySpreadConstraints")
    causes: list[Cause] = []
    for position, (i, constraint) in enumerate(constraints):
        at = f"{field}.topologySpreadConstraints[{i}]"
        skew = go_int(constraint.get("maxSkew"))
        if skew <= 0:
            causes.append(Cause.invalid(f"{at}.maxSkew", str(skew), "must be greater than zero"))
        key, action = str(constraint.get("topologyKey") or ""), str(constraint.get("whenUnsatisfiable") or "")
        if not key:
            causes.append(Cause.required(f"{at}.topologyKey", "can not be empty"))
        if action not in WHEN_UNSATISFIABLE:
            causes.append(Cause.not_supported(f"{at}.whenUnsatisfiable", go_quote(action), WHEN_UNSATISFIABLE))
        if any(str(other.get("topologyKey") or "") == key and str(other.get("whenUnsatisfiable") or "") == action
               for _, other in constraints[position + 1:]):
            causes.append(Cause.duplicate(f"{at}.{{topologyKey, whenUnsatisfiable}}", go_quote(f"{{{key}, {action}}}")))
    return causes
