"""The Karmada object parts the product reads, as ``TypedDict``s, and typed views of whole objects.

As in ``kube_api.shapes``: objects stay parsed JSON dicts, these types let mypy check the keys and the
value types of every read (``binding_spec(rb).get("clusters")`` is a ``list[TargetCluster]``), at no
runtime cost. Every key is optional (``total=False``) because the server omits empty fields. Field
names and comments follow Karmada's Go types at ``f8fdd02`` (``pkg/apis/work/v1alpha2/binding_types.go``,
``pkg/apis/policy/v1alpha1/propagation_types.go``, ``pkg/apis/apps/v1alpha1/workloadrebalancer_types.go``,
``pkg/apis/cluster/v1alpha1/types.go``, ``pkg/apis/work/v1alpha1/work_types.go``).

The views (:func:`binding_spec`, ...) are casts: they return the object's own part, which, like
every part read through ``controller_manager.objects``, must not be changed (copy first).
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from controller_manager.objects import Obj
from kube_api.shapes import (
    Condition,
    LabelSelector,
    NodeSelector,
    NodeSelectorRequirement,
    ResourceList,
    Taint,
    Toleration,
    part_view,
)


class ObjectReference(TypedDict, total=False):
    """``workv1alpha2.ObjectReference``: the resource template a binding is for."""

    apiVersion: str
    kind: str
    namespace: str
    name: str
    uid: str
    resourceVersion: str


class TargetCluster(TypedDict, total=False):
    """``workv1alpha2.TargetCluster``: a cluster a binding is scheduled to, with its share of the replicas."""

    name: str
    replicas: int


class GracefulEvictionTask(TypedDict, total=False):
    """``workv1alpha2.GracefulEvictionTask``: a cluster the workload is leaving, kept until it runs elsewhere."""

    fromCluster: str
    purgeMode: str
    replicas: int
    reason: str
    message: str
    producer: str
    gracePeriodSeconds: int
    suppressDeletion: bool
    creationTimestamp: str
    preservedLabelState: dict[str, str]
    clustersBeforeFailover: list[str]


class NodeClaim(TypedDict, total=False):
    """``workv1alpha2.NodeClaim``: where a replica may run in a member."""

    hardNodeAffinity: NodeSelector
    nodeSelector: dict[str, str]
    tolerations: list[Toleration]


class ReplicaRequirements(TypedDict, total=False):
    """``workv1alpha2.ReplicaRequirements``: what one replica needs."""

    nodeClaim: NodeClaim
    resourceRequest: ResourceList
    namespace: str
    priorityClassName: str


class StaticClusterWeight(TypedDict, total=False):
    """``policyv1alpha1.StaticClusterWeight``."""

    targetCluster: ClusterAffinity
    weight: int


class ClusterPreferences(TypedDict, total=False):
    """``policyv1alpha1.ClusterPreferences``: static weights, or a dynamic weight by a factor."""

    staticWeightList: list[StaticClusterWeight]
    dynamicWeight: str


class ReplicaSchedulingStrategy(TypedDict, total=False):
    """``policyv1alpha1.ReplicaSchedulingStrategy``: Duplicated or Divided, and how to divide."""

    replicaSchedulingType: str
    replicaDivisionPreference: str
    weightPreference: ClusterPreferences


class FieldSelector(TypedDict, total=False):
    """``policyv1alpha1.FieldSelector``: requirements on a cluster's provider, region and zones."""

    matchExpressions: list[NodeSelectorRequirement]


class ClusterAffinity(TypedDict, total=False):
    """``policyv1alpha1.ClusterAffinity``."""

    labelSelector: LabelSelector
    fieldSelector: FieldSelector
    clusterNames: list[str]
    exclude: list[str]


class ClusterAffinityTerm(ClusterAffinity, total=False):
    """``policyv1alpha1.ClusterAffinityTerm``: a named affinity of an ordered list."""

    affinityName: str


class SpreadConstraint(TypedDict, total=False):
    """``policyv1alpha1.SpreadConstraint``."""

    spreadByField: str
    spreadByLabel: str
    maxGroups: int
    minGroups: int


class Placement(TypedDict, total=False):
    """``policyv1alpha1.Placement``: a policy's placement, copied into each binding it makes."""

    clusterAffinity: ClusterAffinity
    clusterAffinities: list[ClusterAffinityTerm]
    clusterTolerations: list[Toleration]
    spreadConstraints: list[SpreadConstraint]
    replicaScheduling: ReplicaSchedulingStrategy


class BindingSnapshot(TypedDict, total=False):
    """``workv1alpha2.BindingSnapshot``: a binding that depends on this one, and where it is scheduled."""

    namespace: str
    name: str
    clusters: list[TargetCluster]


class Component(TypedDict, total=False):
    """``workv1alpha2.Component``: one part of a multi-component workload."""

    name: str
    replicas: int
    replicaRequirements: ReplicaRequirements


class Suspension(TypedDict, total=False):
    """``policyv1alpha1.Suspension``: scheduling or dispatching held back."""

    dispatching: bool
    scheduling: bool


class BindingSpec(TypedDict, total=False):
    """``workv1alpha2.ResourceBindingSpec`` (also ClusterResourceBinding's), the parts the product reads."""

    resource: ObjectReference
    replicas: int
    replicaRequirements: ReplicaRequirements
    clusters: list[TargetCluster]
    placement: Placement
    gracefulEvictionTasks: list[GracefulEvictionTask]
    rescheduleTriggeredAt: str
    schedulerName: str
    conflictResolution: str
    propagateDeps: bool
    preserveResourcesOnDeletion: bool
    requiredBy: list[BindingSnapshot]
    components: list[Component]
    failover: dict[str, Any]
    suspension: Suspension


class AggregatedStatusItem(TypedDict, total=False):
    """``workv1alpha2.AggregatedStatusItem``: one member's state of the workload."""

    clusterName: str
    status: dict[str, Any]
    applied: bool
    appliedMessage: str
    health: str


class BindingStatus(TypedDict, total=False):
    """``workv1alpha2.ResourceBindingStatus``."""

    schedulerObservedGeneration: int
    schedulerObservingAffinityName: str
    lastScheduledTime: str
    conditions: list[Condition]
    aggregatedStatus: list[AggregatedStatusItem]


class ClusterSpec(TypedDict, total=False):
    """``clusterv1alpha1.ClusterSpec``, the parts the product reads."""

    id: str
    syncMode: str
    apiEndpoint: str
    provider: str
    region: str
    zone: str
    zones: list[str]
    taints: list[Taint]


class ClusterStatus(TypedDict, total=False):
    """``clusterv1alpha1.ClusterStatus``, the parts the product reads."""

    kubernetesVersion: str
    conditions: list[Condition]


class WorkloadTemplate(TypedDict, total=False):
    """``workv1alpha1.WorkloadTemplate``: the manifests a Work applies to its member cluster."""

    manifests: list[dict[str, Any]]


class WorkSpec(TypedDict, total=False):
    """``workv1alpha1.WorkSpec``."""

    workload: WorkloadTemplate
    suspendDispatching: bool
    preserveResourcesOnDeletion: bool


class ResourceIdentifier(TypedDict, total=False):
    """``workv1alpha1.ResourceIdentifier``: which manifest (by its index, ``ordinal``) a status is of."""

    ordinal: int
    group: str
    version: str
    kind: str
    resource: str
    namespace: str
    name: str


class ManifestStatus(TypedDict, total=False):
    """``workv1alpha1.ManifestStatus``: one manifest's state in the member cluster."""

    identifier: ResourceIdentifier
    status: dict[str, Any]
    health: str


class WorkStatus(TypedDict, total=False):
    """``workv1alpha1.WorkStatus``."""

    conditions: list[Condition]
    manifestStatuses: list[ManifestStatus]


class Workload(TypedDict, total=False):
    """``appsv1alpha1.ObjectReference``: a workload a WorkloadRebalancer names (no uid, no resourceVersion)."""

    apiVersion: str
    kind: str
    namespace: str
    name: str


class ObservedWorkload(TypedDict, total=False):
    """``appsv1alpha1.ObservedWorkload``: one workload's result in a WorkloadRebalancer's status."""

    workload: Workload
    result: str
    reason: str


class RescheduleBehavior(TypedDict, total=False):
    """``appsv1alpha1.RescheduleBehavior`` as karmada-io/karmada#7662 proposes it (not in Karmada's CRD yet)."""

    preserveAvailableReplicas: bool


class RebalancerSpec(TypedDict, total=False):
    """``appsv1alpha1.WorkloadRebalancerSpec``; ``reschedule`` is #7662's proposed field (kept by a CRD that has it)."""

    workloads: list[Workload]
    reschedule: RescheduleBehavior
    ttlSecondsAfterFinished: int


class RebalancerStatus(TypedDict, total=False):
    """``appsv1alpha1.WorkloadRebalancerStatus``."""

    observedWorkloads: list[ObservedWorkload]
    observedGeneration: int
    finishTime: str


binding_spec = part_view(BindingSpec, "spec", "A (Cluster)ResourceBinding's ``spec``, typed; ``{}`` when missing.")
binding_status = part_view(BindingStatus, "status", "A (Cluster)ResourceBinding's ``status``, typed.")
rebalancer_spec = part_view(RebalancerSpec, "spec", "A WorkloadRebalancer's ``spec``, typed.")
rebalancer_status = part_view(RebalancerStatus, "status", "A WorkloadRebalancer's ``status``, typed.")
cluster_spec = part_view(ClusterSpec, "spec", "A Cluster's ``spec``, typed.")
cluster_status = part_view(ClusterStatus, "status", "A Cluster's ``status``, typed.")
work_spec = part_view(WorkSpec, "spec", "A Work's ``spec``, typed.")
work_status = part_view(WorkStatus, "status", "A Work's ``status``, typed.")


def as_placement(placement: Obj) -> Placement:
    """A placement read from elsewhere than a binding's spec (the applied-placement annotation), typed."""
    return cast(Placement, placement)
