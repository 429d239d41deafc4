"""Kubernetes node selectors and required node affinity (component-helpers' ``nodeaffinity``).

Exact Kubernetes semantics on parsed JSON dicts (camelCase fields), shared by the
scheduler-estimator's node filters, the dev plane's pod scheduler and Karmada's cluster affinity:

* :class:`RequiredNodeAffinity` is ``nodeaffinity.RequiredNodeAffinity``: a pod's ``nodeSelector``
  map AND its required node affinity (terms ORed, expressions ANDed). A term that does not parse
  never matches (``LazyErrorNodeSelector``: errors only surface when nothing matched, and the
  scheduler ignores them).
* :func:`node_selector_matches` / :func:`compile_node_selector` match ``nodeSelectorTerms``
  (``matchExpressions`` and ``matchFields``).

Selectors are compiled once (:class:`RequiredNodeAffinity`, :func:`compile_node_selector`) so that
matching thousands of nodes costs a few dict lookups each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from controller_manager import objects
from controller_manager.objects import Obj

from .selectors import LabelPredicate, all_of, compile_requirement
from .shapes import Affinity

OBJECT_NAME_FIELD = "metadata.name"


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
                self.labels = all_of([compile_requirement(e.get("key"), e.get("operator"), e.get("values"))
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
    name = objects.name(node)
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
        affinity: Affinity = spec.get("affinity") or {}
        node_affinity = affinity.get("nodeAffinity") or {}
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
        return self.matches_labels(objects.labels(node), objects.name(node))
