"""The Kubernetes object parts the product reads, as ``TypedDict``s (after kopf's ``_cogs/structs/bodies``).

Objects stay parsed JSON dicts (the informer cache shares them); these types only tell mypy which keys a
part has and what their values are, so that a misspelt field or a wrong type is a type error, at no
runtime cost. Every key is optional (``total=False``): the server omits empty fields, so read with
``.get``. Field names are the API's, in camel case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict, TypeVar, cast

T = TypeVar("T")


class OwnerReference(TypedDict, total=False):
    """``metav1.OwnerReference``."""

    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class Condition(TypedDict, total=False):
    """``metav1.Condition`` (and the older per-kind conditions, which have the same keys but ``observedGeneration``)."""

    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str
    lastUpdateTime: str
    observedGeneration: int


class LabelSelectorRequirement(TypedDict, total=False):
    """``metav1.LabelSelectorRequirement``."""

    key: str
    operator: str
    values: list[str]


class LabelSelector(TypedDict, total=False):
    """``metav1.LabelSelector``."""

    matchLabels: dict[str, str]
    matchExpressions: list[LabelSelectorRequirement]


class Toleration(TypedDict, total=False):
    """``corev1.Toleration``."""

    key: str
    operator: str
    value: str
    effect: str
    tolerationSeconds: int


class Taint(TypedDict, total=False):
    """``corev1.Taint``."""

    key: str
    value: str
    effect: str
    timeAdded: str


class NodeSelectorRequirement(TypedDict, total=False):
    """``corev1.NodeSelectorRequirement``."""

    key: str
    operator: str
    values: list[str]


class NodeSelectorTerm(TypedDict, total=False):
    """``corev1.NodeSelectorTerm``."""

    matchExpressions: list[NodeSelectorRequirement]
    matchFields: list[NodeSelectorRequirement]


class NodeSelector(TypedDict, total=False):
    """``corev1.NodeSelector``: the terms are ORed."""

    nodeSelectorTerms: list[NodeSelectorTerm]


ResourceList = dict[str, Any]
"""``corev1.ResourceList``: resource name to quantity (a string or a number, see ``kube_api.quantity``)."""


class NodeAffinity(TypedDict, total=False):
    """``corev1.NodeAffinity``, the required part (the preferred terms only score)."""

    requiredDuringSchedulingIgnoredDuringExecution: NodeSelector


class Affinity(TypedDict, total=False):
    """``corev1.Affinity``, the node part."""

    nodeAffinity: NodeAffinity


class PodStatus(TypedDict, total=False):
    """``corev1.PodStatus``, the parts the product reads."""

    phase: str
    conditions: list[Condition]


class NodeSpec(TypedDict, total=False):
    """``corev1.NodeSpec``, the parts the product reads."""

    unschedulable: bool
    taints: list[Taint]


class NodeStatus(TypedDict, total=False):
    """``corev1.NodeStatus``, the parts the product reads."""

    conditions: list[Condition]
    capacity: ResourceList
    allocatable: ResourceList


def part_view(shape: Callable[..., T], field: str, doc: str) -> Callable[[Mapping[str, Any]], T]:
    """A typed view of one part of an object (``spec``, ``status``): the object's own part as ``shape``,
    ``{}`` when missing. A cast: what it returns, like every part of a cached object, must not be changed."""

    def view(obj: Mapping[str, Any]) -> T:
        return cast(T, obj.get(field) or {})

    view.__doc__ = doc
    return view


pod_status = part_view(PodStatus, "status", "A Pod's ``status``, typed.")
node_spec = part_view(NodeSpec, "spec", "A Node's ``spec``, typed.")
node_status = part_view(NodeStatus, "status", "A Node's ``status``, typed.")
