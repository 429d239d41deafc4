"""The (Cluster)ResourceBinding the detector makes of a template and the policy that claimed it.

Kept apart from the detector's reconciler (:mod:`devplane.karmada.detector`): these are pure rules,
what the binding should hold, while the reconciler decides when to write it. Karmada at commit
f8fdd02:

* ``BuildResourceBinding`` / ``BuildClusterResourceBinding`` and ``ApplyPolicy``'s
  ``CreateOrUpdate`` mutate function (``pkg/detector/detector.go``): the spec built from the policy
  and what an apply writes over an existing binding;
* the policy mutating webhooks' defaults (``pkg/webhook/propagationpolicy/mutating.go`` and its
  cluster-scoped twin), applied here to the binding rather than stored on the policy;
* ``MergePolicySuspension`` (``pkg/util/helper``): the policy's dispatching suspension.
"""

from __future__ import annotations

import copy
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from interpreter.replicas import get_replicas
from karmada_api.bindings import CRB_KIND, RB_KIND
from karmada_api.names import binding_name
from kube_api.ownerrefs import controller_reference

from .policies import PolicyKind, other_kind
from .workloads import TemplateKind

DEFAULT_SCHEDULER = "default-scheduler"

# Binding spec fields copied from the policy on every apply (ApplyPolicy's CreateOrUpdate mutate func).
_COPIED_FIELDS = ("resource", "replicaRequirements", "replicas", "propagateDeps", "schedulerName", "placement",
                  "failover", "conflictResolution", "preserveResourcesOnDeletion", "schedulePriority")


def default_placement(placement: Obj | None) -> dict[str, Any]:
    """The policy mutating webhook's placement defaults (``pkg/webhook/propagationpolicy/mutating.go``).

    A spread constraint without spreadByField or spreadByLabel spreads by cluster, with at least
    one group (``pkg/util/helper/policy.go``: ``SetDefaultSpreadConstraints``); a Divided replica
    scheduling without a division preference is Weighted.
    """
    result = copy.deepcopy(dict(placement or {}))
    for constraint in result.get("spreadConstraints") or []:
        if not isinstance(constraint, dict):
            continue
        if not constraint.get("spreadByField") and not constraint.get("spreadByLabel"):
            constraint["spreadByField"] = "cluster"
        if not constraint.get("minGroups"):
            constraint["minGroups"] = 1
    scheduling = result.get("replicaScheduling")
    if (isinstance(scheduling, dict) and scheduling.get("replicaSchedulingType") == "Divided"
            and not scheduling.get("replicaDivisionPreference")):
        scheduling["replicaDivisionPreference"] = "Weighted"
    return result


def default_failover(failover: Obj | None) -> dict[str, Any] | None:
    """The webhook's failover default: application failover ``Gracefully`` without a grace period gets 600s."""
    if not failover:
        return None
    result = copy.deepcopy(dict(failover))
    application = result.get("application")
    if (isinstance(application, dict) and application.get("purgeMode") == "Gracefully"
            and application.get("gracePeriodSeconds") is None):
        application["gracePeriodSeconds"] = 600
    return result


def merge_suspension(binding_suspension: Obj | None, policy_suspension: Obj | None) -> dict[str, Any] | None:
    """``MergePolicySuspension``: the policy's dispatching suspension, the binding's own ``scheduling`` kept."""
    result = {k: v for k, v in (binding_suspension or {}).items() if k not in ("dispatching", "dispatchingOnClusters")}
    for key in ("dispatching", "dispatchingOnClusters"):
        if (policy_suspension or {}).get(key) is not None:
            result[key] = copy.deepcopy(policy_suspension[key])  # type: ignore[index]
    return result or None


def build_binding(template: Obj, kind: TemplateKind, policy: Obj, policy_kind: PolicyKind, *,
                  schedule_priority: int | None = None) -> dict[str, Any]:
    """``BuildResourceBinding`` / ``BuildClusterResourceBinding``: the binding the detector wants.

    Namespaced templates get a ResourceBinding (whatever the policy kind), cluster-scoped ones a
    ClusterResourceBinding. The binding's own permanent id is added at creation, not here.
    """
    meta = objects.metadata(template)
    namespaced = bool(meta.get("namespace"))
    policy_spec = objects.spec(policy)
    resource = {"apiVersion": template.get("apiVersion"), "kind": template.get("kind")}
    if namespaced:
        resource["namespace"] = meta["namespace"]
    resource.update({"name": meta.get("name"), "uid": meta.get("uid"), "resourceVersion": meta.get("resourceVersion")})
    spec: dict[str, Any] = {"resource": resource}
    replicas, requirements = get_replicas(template, kind)
    if requirements is not None:
        spec["replicaRequirements"] = requirements
    if replicas:
        spec["replicas"] = replicas
    if policy_spec.get("propagateDeps"):
        spec["propagateDeps"] = True
    spec["schedulerName"] = policy_spec.get("schedulerName") or DEFAULT_SCHEDULER
    spec["placement"] = default_placement(policy_spec.get("placement"))
    failover = default_failover(policy_spec.get("failover"))
    if failover is not None:
        spec["failover"] = failover
    if policy_spec.get("conflictResolution"):
        spec["conflictResolution"] = policy_spec["conflictResolution"]
    if policy_spec.get("preserveResourcesOnDeletion") is not None:
        spec["preserveResourcesOnDeletion"] = bool(policy_spec["preserveResourcesOnDeletion"])
    if schedule_priority is not None:
        spec["schedulePriority"] = {"priority": schedule_priority}
    suspension = merge_suspension(None, policy_spec.get("suspension"))
    if suspension is not None:
        spec["suspension"] = suspension
    binding_kind = RB_KIND if namespaced else CRB_KIND
    binding_meta: dict[str, Any] = {"name": binding_name(str(template.get("kind")), str(meta.get("name"))),
                                    "labels": policy_kind.claim_labels(policy),
                                    "annotations": policy_kind.claim_annotations(policy),
                                    "ownerReferences": [controller_reference(template, kind.resource)],
                                    "finalizers": [binding_kind.finalizer]}
    if namespaced:
        binding_meta["namespace"] = meta["namespace"]
    binding_resource = binding_kind.resource
    return {"apiVersion": binding_resource.api_version, "kind": binding_resource.kind, "metadata": binding_meta,
            "spec": spec}


def merge_binding(existing: Obj, desired: Obj, policy_kind: PolicyKind) -> dict[str, Any]:
    """What ApplyPolicy's CreateOrUpdate writes over an existing binding: the detector's fields only.

    Labels, annotations and finalizers are merged; the other policy kind's claim is dropped; spec
    fields the detector owns are replaced (or removed when the policy no longer sets them);
    ``spec.clusters``, eviction tasks, ``rescheduleTriggeredAt`` and status are left alone.
    """
    merged = copy.deepcopy(dict(existing))
    meta = merged.setdefault("metadata", {})
    want_meta = desired["metadata"]
    other = other_kind(policy_kind)
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != other.id_label}
    labels.update(want_meta["labels"])
    meta["labels"] = labels
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in other.annotation_keys}
    annotations.update(want_meta["annotations"])
    meta["annotations"] = annotations
    finalizers = list(meta.get("finalizers") or [])
    finalizers += [f for f in want_meta["finalizers"] if f not in finalizers]
    meta["finalizers"] = finalizers
    meta["ownerReferences"] = copy.deepcopy(want_meta["ownerReferences"])
    spec = merged.setdefault("spec", {})
    want_spec = desired["spec"]
    for field in _COPIED_FIELDS:
        if field in want_spec:
            spec[field] = copy.deepcopy(want_spec[field])
        else:
            spec.pop(field, None)
    suspension = merge_suspension(spec.get("suspension"), want_spec.get("suspension"))
    if suspension is None:
        spec.pop("suspension", None)
    else:
        spec["suspension"] = suspension
    return merged
