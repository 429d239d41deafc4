"""Kubernetes placement matching: taints and tolerations, node selectors and node affinity.

Exact Kubernetes semantics on parsed JSON dicts (camelCase fields), shared by Karmada's cluster
taints, the scheduler-estimator's node filters and the dev plane's pod scheduler:

* :func:`tolerates` is ``Toleration.ToleratesTaint`` with the v1.35 comparison operators (Lt/Gt)
  disabled, as Karmada calls it; :func:`find_untolerated_taint` / :func:`tolerates_all` are
  ``FindMatchingUntoleratedTaint``; :func:`get_matching_tolerations` is Karmada's helper.
* :class:`RequiredNodeAffinity` is component-helpers' ``nodeaffinity.RequiredNodeAffinity``: a pod's
  ``nodeSelector`` map AND its required node affinity (terms ORed, expressions ANDed). A term that
  does not parse never matches (``LazyErrorNodeSelector``: errors only surface when nothing matched,
  and the scheduler ignores them).
* :func:`label_selector_matches` is ``metav1.LabelSelectorAsSelector(...).Matches``.

Selectors are compiled once (:class:`RequiredNodeAffinity`, :func:`compile_node_selector`) so that
matching thousands of nodes costs a few dict lookups each.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

Obj = Mapping[str, Any]

TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"
DO_NOT_SCHEDULE_EFFECTS = frozenset({TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE})
"""The effects a scheduler filter honours (PreferNoSchedule only scores)."""

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
UNSCHEDULABLE_TAINT: Mapping[str, str] = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": TAINT_EFFECT_NO_SCHEDULE}
"""The taint a cordoned node (``spec.unschedulable``) is treated as having."""

OBJECT_NAME_FIELD = "metadata.name"


# --------------------------------------------------------------------------------------------------
# Taints and tolerations


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """``Toleration.ToleratesTaint``: effect (empty = all), key (empty = all), then the operator.

    ``""``/``Equal`` compare values, ``Exists`` matches any value, any other operator never
    matches (Lt/Gt are disabled, as in Karmada). Empty key + ``Exists`` tolerates every taint.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or ""
    if operator in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def tolerations_tolerate_taint(tolerations: Iterable[Obj] | None, taint: Obj) -> bool:
    """True if any toleration tolerates ``taint``."""
    return any(tolerates(toleration, taint) for toleration in tolerations or ())


def find_untolerated_taint(taints: Iterable[Obj] | None, tolerations: Sequence[Obj] | None,
                           effects: Collection[str] | None = DO_NOT_SCHEDULE_EFFECTS) -> Obj | None:
    """The first taint (among those whose effect is in ``effects``; None = all) nothing tolerates."""
    for taint in taints or ():
        if effects is not None and (taint.get("effect") or "") not in effects:
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


def tolerates_all(tolerations: Sequence[Obj] | None, taints: Iterable[Obj] | None,
                  effects: Collection[str] | None = DO_NOT_SCHEDULE_EFFECTS) -> bool:
    """True if every taint with an effect in ``effects`` (None = all effects) is tolerated."""
    return find_untolerated_taint(taints, tolerations, effects) is None


def get_matching_tolerations(taints: Sequence[Obj] | None,
                             tolerations: Sequence[Obj] | None) -> tuple[bool, list[Obj]]:
    """Karmada's ``GetMatchingTolerations``: (all tolerated, the first tolerating toleration of each).

    No taints → (True, []); taints but no tolerations → (False, []); an untolerated taint → (False, []).
    """
    if not taints:
        return True, []
    if not tolerations:
        return False, []
    used: list[Obj] = []
    for taint in taints:
        match = next((toleration for toleration in tolerations if tolerates(toleration, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def node_tolerated(node: Obj, tolerations: Sequence[Obj] | None) -> bool:
    """The estimator's node taint filter: cordon (unless tolerated) and NoSchedule/NoExecute taints."""
    spec = node.get("spec") or {}
    if spec.get("unschedulable") and not tolerations_tolerate_taint(tolerations, UNSCHEDULABLE_TAINT):
        return False
    return tolerates_all(tolerations, spec.get("taints"))


# --------------------------------------------------------------------------------------------------
# Label syntax (labels.NewRequirement validates keys and values; an invalid requirement fails its term)

_LABEL_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def is_qualified_name(key: str) -> bool:
    """``validation.IsQualifiedName``: ``[prefix/]name``, name ≤ 63, prefix a DNS-1123 subdomain."""
    parts = key.split("/")
    if len(parts) == 2:
        prefix, name = parts
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return False
    elif len(parts) == 1:
        name = parts[0]
    else:
        return False
    return 0 < len(name) <= 63 and _LABEL_NAME.fullmatch(name) is not None


def is_label_value(value: str) -> bool:
    """``validation.IsValidLabelValue``: empty, or ≤ 63 alphanumerics with ``-_.`` inside."""
    return value == "" or (len(value) <= 63 and _LABEL_NAME.fullmatch(value) is not None)


def _parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: optional sign, digits only, in int64 range."""
    if not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


# --------------------------------------------------------------------------------------------------
# Compiled requirements

LabelPredicate = Callable[[Mapping[str, str]], bool]


def _compile_requirement(key: Any, operator: Any, values: Any) -> LabelPredicate:
    """One ``labels.Requirement`` as a predicate over a label map; ``ValueError`` if invalid."""
    if not isinstance(key, str) or not is_qualified_name(key):
        raise ValueError(f"invalid label key {key!r}")
    vals = list(values or [])
    if not all(isinstance(v, str) and is_label_value(v) for v in vals):
        raise ValueError(f"invalid label value in {vals!r}")
    if operator in ("In", "NotIn"):
        if not vals:
            raise ValueError(f"for 'in', 'notin' operators, values set can't be empty (key {key!r})")
        allowed = frozenset(vals)
        if operator == "In":
            return lambda labels: key in labels and labels[key] in allowed
        return lambda labels: key not in labels or labels[key] not in allowed
    if operator in ("Exists", "DoesNotExist"):
        if vals:
            raise ValueError(f"values set must be empty for exists and does not exist (key {key!r})")
        if operator == "Exists":
            return lambda labels: key in labels
        return lambda labels: key not in labels
    if operator in ("Gt", "Lt"):
        if len(vals) != 1:
            raise ValueError(f"for 'Gt', 'Lt' operators, exactly one value is required (key {key!r})")
        bound = _parse_int64(vals[0])
        if bound is None:
            raise ValueError(f"for 'Gt', 'Lt' operators, the value must be an integer (key {key!r})")

        def compare(labels: Mapping[str, str]) -> bool:
            if key not in labels:
                return False
            number = _parse_int64(labels[key])
            if number is None:
                return False
            return number > bound if operator == "Gt" else number < bound

        return compare
    raise ValueError(f"{operator!r} is not a valid node selector operator")


def _all_of(predicates: list[LabelPredicate]) -> LabelPredicate:
    if len(predicates) == 1:
        return predicates[0]
    return lambda labels: all(predicate(labels) for predicate in predicates)


def _compile_field_requirement(requirement: Obj) -> Callable[[Mapping[str, str]], bool]:
    """A ``matchFields`` requirement: In/NotIn with exactly one value (``fields.Set`` semantics)."""
    key = requirement.get("key") or ""
    operator = requirement.get("operator")
    values = list(requirement.get("values") or [])
    if operator not in ("In", "NotIn"):
        raise ValueError(f"{operator!r} is not a valid field selector operator")
    if len(values) != 1:
        raise ValueError(f"matchFields {key!r}: must have one element")
    wanted = values[0]
    if operator == "In":
        return lambda fields: fields.get(key, "") == wanted
    return lambda fields: fields.get(key, "") != wanted


class _Term:
    """A parsed ``NodeSelectorTerm``; ``valid`` False means it never matches."""

    __slots__ = ("fields", "labels", "valid")

    def __init__(self, term: Obj) -> None:
        self.labels: LabelPredicate | None = None
        self.fields: Callable[[Mapping[str, str]], bool] | None = None
        self.valid = True
        try:
            expressions = term.get("matchExpressions") or []
            if expressions:
                self.labels = _all_of([_compile_requirement(e.get("key"), e.get("operator"), e.get("values"))
                                       for e in expressions])
            field_requirements = term.get("matchFields") or []
            if field_requirements:
                compiled = [_compile_field_requirement(r) for r in field_requirements]
                self.fields = lambda fields: all(check(fields) for check in compiled)
        except (ValueError, AttributeError, TypeError):
            self.valid = False

    def match(self, labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
        if not self.valid:
            return False
        if self.labels is not None and not self.labels(labels):
            return False
        # Kubernetes skips matchFields for a node without fields (no name).
        return not (self.fields is not None and fields and not self.fields(fields))


class CompiledNodeSelector:
    """A parsed ``core.v1.NodeSelector``: terms ORed; empty terms are dropped and never match."""

    __slots__ = ("terms",)

    def __init__(self, terms: Iterable[Obj] | None) -> None:
        self.terms = [_Term(term) for term in terms or []
                      if term and (term.get("matchExpressions") or term.get("matchFields"))]

    def match(self, labels: Mapping[str, str], fields: Mapping[str, str]) -> bool:
        return any(term.match(labels, fields) for term in self.terms)


def compile_node_selector(node_selector_terms: Iterable[Obj] | None) -> CompiledNodeSelector:
    """Parse ``nodeSelectorTerms`` once for matching many nodes."""
    return CompiledNodeSelector(node_selector_terms)


def node_selector_matches(labels: Mapping[str, str] | None, fields: Mapping[str, str] | None,
                          node_selector_terms: Iterable[Obj] | None) -> bool:
    """Required node affinity: some term's expressions (and matchFields) all match. No terms → False.

    ``fields`` is the node's field set, i.e. ``{"metadata.name": name}`` (see :func:`node_fields`).
    """
    return CompiledNodeSelector(node_selector_terms).match(labels or {}, fields or {})


def node_selector_map_matches(node_selector: Mapping[str, str] | None, labels: Mapping[str, str] | None) -> bool:
    """A pod's ``nodeSelector`` map: every key present with exactly that value (empty map → True)."""
    if not node_selector:
        return True
    labels = labels or {}
    return all(key in labels and labels[key] == wanted for key, wanted in node_selector.items())


def node_fields(node: Obj) -> dict[str, str]:
    """The fields node affinity's ``matchFields`` sees: ``metadata.name`` when the node has a name."""
    name = (node.get("metadata") or {}).get("name") or ""
    return {OBJECT_NAME_FIELD: name} if name else {}


class RequiredNodeAffinity:
    """``nodeaffinity.RequiredNodeAffinity``: ``nodeSelector`` map AND required node affinity.

    ``required`` is a ``core.v1.NodeSelector`` (``{"nodeSelectorTerms": [...]}``), e.g. a pod's
    ``affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`` or a Karmada
    ``nodeClaim.hardNodeAffinity``; None means no constraint.
    """

    __slots__ = ("node_selector", "required")

    def __init__(self, node_selector: Mapping[str, str] | None = None, required: Obj | None = None) -> None:
        self.node_selector = dict(node_selector) if node_selector else None
        self.required = CompiledNodeSelector(required.get("nodeSelectorTerms")) if required is not None else None

    @classmethod
    def from_pod_spec(cls, spec: Obj) -> RequiredNodeAffinity:
        """From a pod spec's ``nodeSelector`` and ``affinity.nodeAffinity`` required terms."""
        node_affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        return cls(spec.get("nodeSelector"), node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))

    @property
    def is_empty(self) -> bool:
        """True if every node matches (lets callers skip the check)."""
        return self.node_selector is None and self.required is None

    def matches_labels(self, labels: Mapping[str, str] | None, name: str = "") -> bool:
        labels = labels or {}
        if self.node_selector is not None and not node_selector_map_matches(self.node_selector, labels):
            return False
        if self.required is not None:
            return self.required.match(labels, {OBJECT_NAME_FIELD: name} if name else {})
        return True

    def matches(self, node: Obj) -> bool:
        """Whether ``node`` (a Node dict) satisfies the affinity."""
        meta = node.get("metadata") or {}
        return self.matches_labels(meta.get("labels"), meta.get("name") or "")


# --------------------------------------------------------------------------------------------------
# metav1.LabelSelector


def compile_label_selector(selector: Obj | None) -> LabelPredicate:
    """``metav1.LabelSelectorAsSelector``: None selects nothing, ``{}`` everything; ``ValueError`` if invalid.

    matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist) are ANDed.
    """
    if selector is None:
        return lambda labels: False
    predicates: list[LabelPredicate] = []
    for key, wanted in (selector.get("matchLabels") or {}).items():
        predicates.append(_compile_requirement(key, "In", [wanted]))
    for expression in selector.get("matchExpressions") or []:
        operator = expression.get("operator")
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"{operator!r} is not a valid label selector operator")
        predicates.append(_compile_requirement(expression.get("key"), operator, expression.get("values")))
    if not predicates:
        return lambda labels: True
    return _all_of(predicates)


def label_selector_matches(selector: Obj | None, labels: Mapping[str, str] | None) -> bool:
    """Whether ``labels`` match a ``metav1.LabelSelector`` (see :func:`compile_label_selector`)."""
    return compile_label_selector(selector)(labels or {})
