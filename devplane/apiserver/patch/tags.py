"""What a strategic merge patch is driven by: the Go struct tags of the built-in kinds.

k8s.io/apimachinery ``strategicpatch`` reads the ``patchStrategy``/``patchMergeKey`` tags
of the k8s.io/api Go types to know which lists merge and by which key. The dev server has
no Go types, so the tags are kept here as a data table; it also names the ``$`` directive
keys a patch may carry and which kinds take a strategic merge patch at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Field:
    """Patch metadata of one field, as the ``patchStrategy``/``patchMergeKey`` Go tags say.

    ``strategy`` is ``merge`` (lists merge, by ``merge_key`` for lists of objects or as a set
    for primitives), ``replace`` (even a map is replaced whole) or empty (no tag: maps merge,
    lists are replaced whole). ``schema`` names the :data:`_SCHEMAS` entry describing the map
    value or list element, so nested tags apply. ``retain_keys`` mirrors the ``retainKeys``
    tag; it only changes how clients build patches, since a ``$retainKeys`` directive is
    honoured wherever it appears.
    """

    strategy: str = ""
    merge_key: str = ""
    schema: str = ""
    retain_keys: bool = False


_UNTAGGED: Final = Field()
_CONDITIONS: Final = Field("merge", "type")


def _object(*, spec: str = "", status: str = "") -> dict[str, Field]:
    """An object's (or a template's) fields: ObjectMeta metadata, and the structs of spec and status."""
    fields = {"metadata": Field(schema="ObjectMeta")}
    if spec:
        fields["spec"] = Field(schema=spec)
    if status:
        fields["status"] = Field(schema=status)
    return fields


# Struct name -> json field name -> tags. Only tagged fields and the fields leading to them
# are listed; anything else is untagged (maps merge, lists are replaced whole). Checked
# against k8s.io/api as compiled into kubectl 1.32.
_SCHEMAS: Final[dict[str, dict[str, Field]]] = {
    "ObjectMeta": {
        "ownerReferences": Field("merge", "uid"),
        "finalizers": Field("merge"),
    },
    "PodTemplateSpec": _object(spec="PodSpec"),
    "PodSpec": {
        "volumes": Field("merge", "name", retain_keys=True),
        "initContainers": Field("merge", "name", "Container"),
        "containers": Field("merge", "name", "Container"),
        # EphemeralContainerCommon carries the same tags as Container.
        "ephemeralContainers": Field("merge", "name", "Container"),
        "imagePullSecrets": Field("merge", "name"),
        "hostAliases": Field("merge", "ip"),
        "topologySpreadConstraints": Field("merge", "topologyKey"),
        "resourceClaims": Field("merge", "name", retain_keys=True),
        "schedulingGates": Field("merge", "name"),
        # tolerations, readinessGates: untagged, replaced whole.
    },
    "Container": {
        "ports": Field("merge", "containerPort"),
        "env": Field("merge", "name"),
        "volumeMounts": Field("merge", "mountPath"),
        "volumeDevices": Field("merge", "devicePath"),
        # envFrom, resizePolicy (listType=atomic): untagged, replaced whole.
    },
    "PodStatus": {
        "conditions": _CONDITIONS,
        "podIPs": Field("merge", "ip"),
        "hostIPs": Field("merge", "ip"),
        "resourceClaimStatuses": Field("merge", "name", retain_keys=True),
        # containerStatuses & co: untagged, replaced whole.
    },
    "Pod": _object(spec="PodSpec", status="PodStatus"),
    "NodeSpec": {
        "podCIDRs": Field("merge"),
        # taints: untagged, replaced whole.
    },
    "NodeStatus": {
        "conditions": _CONDITIONS,
        "addresses": Field("merge", "type"),
        # images, volumesAttached, volumesInUse: untagged.
    },
    "Node": _object(spec="NodeSpec", status="NodeStatus"),
    # Namespace, Service, PVC, workload, PDB and HPA statuses: only conditions are tagged.
    "ConditionedStatus": {"conditions": _CONDITIONS},
    "ObjectWithStatus": _object(status="ConditionedStatus"),
    "ServiceSpec": {"ports": Field("merge", "port")},
    "Service": _object(spec="ServiceSpec", status="ConditionedStatus"),
    "ServiceAccount": {
        **_object(),
        "secrets": Field("merge", "name"),
        # imagePullSecrets: untagged here (unlike PodSpec).
    },
    # ConfigMap, Secret, Event, PV, Lease, RBAC (rules/subjects untagged), Ingress.
    "ObjectMetaOnly": _object(),
    "DeploymentSpec": {
        "template": Field(schema="PodTemplateSpec"),
        "strategy": Field(retain_keys=True),
    },
    # ReplicaSet, StatefulSet, DaemonSet and Job specs reach the pod template the same way.
    "TemplatedSpec": {"template": Field(schema="PodTemplateSpec")},
    "Deployment": _object(spec="DeploymentSpec", status="ConditionedStatus"),
    "TemplatedWorkload": _object(spec="TemplatedSpec", status="ConditionedStatus"),
    "JobTemplateSpec": _object(spec="TemplatedSpec"),
    "CronJobSpec": {"jobTemplate": Field(schema="JobTemplateSpec")},
    "CronJob": _object(spec="CronJobSpec"),
    "PodDisruptionBudgetSpec": {"selector": Field("replace")},
    "PodDisruptionBudget": _object(spec="PodDisruptionBudgetSpec", status="ConditionedStatus"),
}

# ``group/Kind`` (core group empty) -> top-level schema. Kinds missing here (custom
# resources) get kube's 415: strategic merge needs Go struct tags.
STRATEGIC_MERGE_KINDS: Final[dict[str, str]] = {
    "/Pod": "Pod",
    "/Node": "Node",
    "/Namespace": "ObjectWithStatus",
    "/Service": "Service",
    "/ConfigMap": "ObjectMetaOnly",
    "/Secret": "ObjectMetaOnly",
    "/ServiceAccount": "ServiceAccount",
    "/Event": "ObjectMetaOnly",
    "/PersistentVolume": "ObjectMetaOnly",
    "/PersistentVolumeClaim": "ObjectWithStatus",
    "apps/Deployment": "Deployment",
    "apps/ReplicaSet": "TemplatedWorkload",
    "apps/StatefulSet": "TemplatedWorkload",
    "apps/DaemonSet": "TemplatedWorkload",
    "batch/Job": "TemplatedWorkload",
    "batch/CronJob": "CronJob",
    "coordination.k8s.io/Lease": "ObjectMetaOnly",
    "rbac.authorization.k8s.io/Role": "ObjectMetaOnly",
    "rbac.authorization.k8s.io/ClusterRole": "ObjectMetaOnly",
    "rbac.authorization.k8s.io/RoleBinding": "ObjectMetaOnly",
    "rbac.authorization.k8s.io/ClusterRoleBinding": "ObjectMetaOnly",
    "policy/PodDisruptionBudget": "PodDisruptionBudget",
    "autoscaling/HorizontalPodAutoscaler": "ObjectWithStatus",
    "networking.k8s.io/Ingress": "ObjectMetaOnly",
}


# What kube lists in its 415 answer to a strategic merge patch on a custom resource.
JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH: Final = "application/apply-patch+yaml"
PATCH_MEDIA_TYPES: Final = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)
"""What a PATCH may be sent as."""

NON_STRATEGIC_MEDIA_TYPES: Final = (
    "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
)

# The directive keys (``strategicpatch``'s ``directiveMarker`` and friends).
DIRECTIVE: Final = "$patch"
RETAIN_KEYS: Final = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList"
SET_ELEMENT_ORDER: Final = "$setElementOrder"


def supports_strategic_merge_patch(kind_key: str) -> bool:
    """Whether ``group/Kind`` accepts ``application/strategic-merge-patch+json``."""
    return kind_key in STRATEGIC_MERGE_KINDS


def lookup(schema: str, key: str) -> Field:
    """The tags of field ``key`` of struct ``schema`` (untagged when the table does not list it)."""
    return _SCHEMAS.get(schema, {}).get(key, _UNTAGGED)
