"""``GetReplicas``: a workload's replicas and what one replica needs, for the binding the detector writes.

Karmada's ``pkg/resourceinterpreter/default/native/replica.go`` (Deployment, StatefulSet,
ReplicaSet: ``spec.replicas``; Job: ``spec.parallelism``) with ``GenerateReplicaRequirements``
(``pkg/util/helper/binding.go``): per-replica requests of the pod template (limits stand in for
missing requests, containers summed, init containers max, overhead added) rendered back as
canonical Quantity strings the way ``Resource.ResourceList()`` prints them (``10m``, ``10Mi``,
``1k``), the pod template's node claim, namespace and priority class.
"""

from __future__ import annotations

import copy
from typing import Protocol

from controller_manager import objects
from controller_manager.objects import Obj
from karmada_api.shapes import NodeClaim, ReplicaRequirements
from kube_api.quantity import RESOURCE_PODS, format_resource_amount, pod_requests
from kube_api.resources import DEPLOYMENTS, JOBS, REPLICA_SETS, STATEFUL_SETS
from kube_api.shapes import Affinity

from .kinds import KindTable

REPLICAS_FIELD = "replicas"
PARALLELISM_FIELD = "parallelism"

_REPLICA_FIELDS: KindTable[str] = KindTable()
_REPLICA_FIELDS.add(DEPLOYMENTS, REPLICAS_FIELD)
_REPLICA_FIELDS.add(STATEFUL_SETS, REPLICAS_FIELD)
_REPLICA_FIELDS.add(REPLICA_SETS, REPLICAS_FIELD)
_REPLICA_FIELDS.add(JOBS, PARALLELISM_FIELD)  # a Job's replicas are its parallelism


class Kind(Protocol):
    """What names a template's kind (a REST resource, the dev plane's template kinds...)."""

    @property
    def api_version(self) -> str: ...

    @property
    def kind(self) -> str: ...


def replica_field(api_version: str, kind: str) -> str | None:
    """The spec field holding a workload's replicas (also where ``ReviseReplica`` writes them); None
    for a kind without replicas."""
    return _REPLICA_FIELDS.get(api_version, kind)


def resource_request(pod_spec: Obj) -> dict[str, str] | None:
    """The per-replica ResourceList of a pod template (``AddPodTemplateRequest(...).ResourceList()``)."""
    units = pod_requests(pod_spec)
    result = {name: format_resource_amount(name, amount) for name, amount in sorted(units.items())
              if amount > 0 and name != RESOURCE_PODS}
    return result or None


def node_claim(pod_spec: Obj) -> NodeClaim | None:
    """``GenerateNodeClaimByPodSpec``: node selector, required node affinity and tolerations, if any."""
    claim = NodeClaim()
    pod_affinity: Affinity = pod_spec.get("affinity") or {}
    node_affinity = pod_affinity.get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required:
        claim["hardNodeAffinity"] = copy.deepcopy(required)
    if pod_spec.get("nodeSelector"):
        claim["nodeSelector"] = dict(pod_spec["nodeSelector"])
    if pod_spec.get("tolerations"):
        claim["tolerations"] = copy.deepcopy(pod_spec["tolerations"])
    return claim or None


def replica_requirements(template: Obj) -> ReplicaRequirements | None:
    """``GenerateReplicaRequirements`` of the template's pod template (with ResourceQuotaEstimate on)."""
    pod_template = objects.spec(template).get("template") or {}
    pod_spec = objects.spec(pod_template)
    claim = node_claim(pod_spec)
    request = resource_request(pod_spec)
    if claim is None and request is None:
        return None
    requirements = ReplicaRequirements()
    if claim is not None:
        requirements["nodeClaim"] = claim
    if request is not None:
        requirements["resourceRequest"] = request
    # The interpreter hands the pod template the workload's namespace (karmada e2e: RB namespace == Deployment's).
    namespace = objects.namespace(pod_template) or objects.namespace(template)
    if namespace:
        requirements["namespace"] = namespace
    if pod_spec.get("priorityClassName"):
        requirements["priorityClassName"] = pod_spec["priorityClassName"]
    return requirements


def get_replicas(template: Obj, kind: Kind) -> tuple[int, ReplicaRequirements | None]:
    """(replicas, replicaRequirements) of a template of ``kind`` (list items may lack their own
    ``apiVersion`` and ``kind``); (0, None) for a kind without replicas."""
    field = replica_field(kind.api_version, kind.kind)
    if field is None:
        return 0, None
    raw = objects.spec(template).get(field)
    replicas = raw if isinstance(raw, int) and not isinstance(raw, bool) else 0
    return replicas, replica_requirements(template)
