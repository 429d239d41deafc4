"""The Kubernetes object parts the product reads, as ``TypedDict``s (after kopf's ``_cogs/structs/bodies``).

Objects stay parsed JSON dicts (the informer cache shares them); these types only tell mypy which keys a
part has and what their values are, so that a misspelt field or a wrong type is a type error, at no
runtime cost. Every key is optional (``total=False``): the server omits empty fields, so read with
``.get``. Field names are the API's, in camel case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict, cast


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


def _part(obj: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    value: Mapping[str, Any] = obj.get(field) or {}
    return value


def pod_status(pod: Mapping[str, Any]) -> PodStatus:
    """A Pod's ``status``, typed; ``{}`` when missing (a cast: the object's own part, not to be changed)."""
    return cast(PodStatus, _part(pod, "status"))


def node_spec(node: Mapping[str, Any]) -> NodeSpec:
    """A Node's ``spec``, typed; ``{}`` when missing."""
    return cast(NodeSpec, _part(node, "spec"))


def node_status(node: Mapping[str, Any]) -> NodeStatus:
    """A Node's ``status``, typed; ``{}`` when missing."""
    return cast(NodeStatus, _part(node, "status"))
