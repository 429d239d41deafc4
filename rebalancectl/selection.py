"""Which workloads the flags select, from their (Cluster)ResourceBindings; pure (no I/O).

A workload is selected when its binding is in scope (a namespace, or every namespace plus the
ClusterResourceBindings) and it passes every selector given: one of the ``--kind`` values, the
``-l`` label selector on its template, ``--cluster`` and the policy's permanent id. Each selector
is also checked alone, so that the command can say which one matched nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from controller_manager import objects
from controller_manager.objects import Obj
from karmada_api import shapes
from karmada_api.bindings import workload_reference
from karmada_api.placement import PlacementError, affinity_allows, applied_placement, target_contains

from .discovery import Discovered, GroupKind, group_of


@dataclass(frozen=True, order=True)
class Workload:
    """A resource template as a WorkloadRebalancer names it (``namespace`` "" for a cluster-scoped one)."""

    namespace: str
    kind: str
    name: str
    api_version: str

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(group_of(self.api_version), self.kind)

    def reference(self) -> shapes.Workload:
        """The ``spec.workloads`` item (``ObjectReference``)."""
        ref = shapes.Workload(apiVersion=self.api_version, kind=self.kind, name=self.name)
        if self.namespace:
            ref["namespace"] = self.namespace
        return ref

    def __str__(self) -> str:
        kind = str(self.group_kind)
        return f"{kind}/{self.namespace}/{self.name}" if self.namespace else f"{kind}/{self.name}"


def binding_workload(binding: Obj) -> Workload | None:
    """The template a binding propagates (:func:`~karmada_api.bindings.workload_reference`) as a
    :class:`Workload`; None when the binding names none."""
    reference = workload_reference(binding)
    if not (reference.get("apiVersion") and reference.get("kind") and reference.get("name")):
        return None
    return workload_from_reference(reference)


def workload_from_reference(ref: shapes.Workload) -> Workload:
    """A ``spec.workloads`` or ``observedWorkloads[].workload`` item as a :class:`Workload`."""
    return Workload(str(ref.get("namespace") or ""), str(ref.get("kind") or ""), str(ref.get("name") or ""),
                    str(ref.get("apiVersion") or ""))


def placement_allows(binding: Obj, cluster: Obj) -> bool:
    """Whether the binding's applied placement lets ``cluster`` be chosen: its ``clusterAffinity``, or
    any of its ``clusterAffinities`` terms. No (or an unreadable) applied placement allows nothing."""
    try:
        placement = applied_placement(binding)
    except PlacementError:
        return False
    if placement is None:
        return False
    return affinity_allows(shapes.as_placement(placement), cluster)


def belongs_on(binding: Obj, cluster: Obj) -> bool:
    """``--cluster``: the binding has the cluster in ``spec.clusters``, or its placement allows the
    cluster though ``spec.clusters`` has none there ("everything that should be back on C")."""
    return target_contains(shapes.binding_spec(binding), objects.name(cluster)) or placement_allows(binding, cluster)


@dataclass(frozen=True)
class Criteria:
    """The selection flags, resolved (kinds through discovery, the cluster and policy read)."""

    namespace: str | None
    """Only ResourceBindings of this namespace; None: every namespace and the ClusterResourceBindings."""
    kinds: Sequence[tuple[str, GroupKind]] = ()
    """``(flag text, kind)`` for each ``--kind``."""
    labelled: tuple[str, frozenset[Workload]] | None = None
    """``(-l text, the templates it matched)``."""
    cluster: Obj | None = None
    policy: tuple[str, str, str] | None = None
    """``(flag text, permanent-id label, its value)``."""
    discovered: Discovered | None = None
    """The API server's resources, when resolving the flags needed them (``--kind``, ``-l``)."""


@dataclass
class Selection:
    """The selected workloads (sorted, unique) and the selectors that alone matched no binding in scope."""

    workloads: list[Workload] = field(default_factory=list)
    unmatched: list[str] = field(default_factory=list)
    bindings: dict[Workload, tuple[str, str]] = field(default_factory=dict)
    """Each selected workload's binding as ``(namespace, name)`` (namespace "" for a ClusterResourceBinding):
    what ``--max-concurrent`` reads to know when a wave is healthy."""


def in_scope(binding: Obj, namespace: str | None) -> bool:
    return namespace is None or objects.namespace(binding) == namespace


Predicate = Callable[[Obj, Workload], bool]


def _kind_is(kind: GroupKind) -> Predicate:
    return lambda _binding, workload: workload.group_kind == kind


def _selectors(criteria: Criteria) -> tuple[list[Predicate], list[tuple[str, Predicate]]]:
    """The predicates a workload must all pass, and each selector alone by its flag text (``--kind``
    values are ORed into one predicate but reported one by one)."""
    selectors: list[tuple[str, Predicate]] = []
    required: list[Predicate] = []
    if criteria.kinds:
        wanted = {kind for _text, kind in criteria.kinds}
        required.append(lambda _b, w: w.group_kind in wanted)
        for text, kind in criteria.kinds:
            selectors.append((f"--kind {text}", _kind_is(kind)))
    if criteria.labelled is not None:
        text, matched = criteria.labelled
        selectors.append((f"-l {text}", lambda _b, w: w in matched))
    if criteria.cluster is not None:
        cluster = criteria.cluster
        selectors.append((f"--cluster {objects.name(cluster)}", lambda b, _w: belongs_on(b, cluster)))
    if criteria.policy is not None:
        text, label, value = criteria.policy
        selectors.append((text, lambda b, _w: objects.labels(b).get(label) == value))
    required.extend(accepts for text, accepts in selectors if not text.startswith("--kind "))
    return required, selectors


def select(bindings: Iterable[Obj], criteria: Criteria) -> Selection:
    """The workloads every selector admits; the selectors that alone admit none are listed as unmatched."""
    scoped: list[tuple[Obj, Workload]] = []
    for binding in bindings:
        workload = binding_workload(binding)
        if workload is not None and in_scope(binding, criteria.namespace) and not objects.is_deleting(binding):
            scoped.append((binding, workload))
    required, selectors = _selectors(criteria)
    unmatched = [text for text, accepts in selectors if not any(accepts(b, w) for b, w in scoped)]
    chosen: dict[Workload, tuple[str, str]] = {}
    for b, w in scoped:
        if all(accepts(b, w) for accepts in required):
            chosen.setdefault(w, (objects.namespace(b), objects.name(b)))
    return Selection(sorted(chosen), unmatched, chosen)


def describe_empty(selection: Selection, criteria: Criteria, *, bindings_in_scope: int) -> str:
    """The one line saying why nothing was selected."""
    where = "in any namespace" if criteria.namespace is None else f"in namespace {criteria.namespace}"
    if not bindings_in_scope:
        return f"no workload selected: no ResourceBinding {where}"
    if selection.unmatched:
        return f"no workload selected {where}: {', '.join(selection.unmatched)} matched nothing"
    return f"no workload selected {where}: each selector matches some workload, but none matches them all"


def count_in_scope(bindings: Iterable[Obj], namespace: str | None) -> int:
    return sum(1 for b in bindings if in_scope(b, namespace) and binding_workload(b) is not None)

