"""Member caches that keep only what the unschedulable-replica estimates read (client-go's ``SetTransform``).

The controller-manager's preserve mode and the descheduler ask their member caches one thing: how many of a
workload's Pods have been unschedulable for too long (:mod:`estimator.kinds`). Their member informers
(``clusteraccess``, ``slim=True``) cache each object through :func:`transform_for`, as controller-runtime's cache
``TransformFunc`` does (:func:`controller_manager.informer.strip_managed_fields` is the same mechanism): a new,
smaller object with only what the estimates, the cache (key, resourceVersion) and its indexes (controller UID,
namespace) read.

=============  ==============================================================================================
Pods           metadata name, namespace, resourceVersion, labels, the controller ownerReference (uid);
               status.phase and the ``PodScheduled`` condition (type, status, reason, lastTransitionTime);
               only metadata name, namespace and resourceVersion of a Pod that cannot count: terminated,
               or its ``PodScheduled`` not False/Unschedulable (most Pods)
ReplicaSets    metadata name, namespace, uid, resourceVersion, creationTimestamp, labels, the controller
               ownerReference; spec.selector and the pod template's digest (``templateDigest``)
Deployments    metadata name, namespace, uid, resourceVersion; spec.selector and the template's digest
StatefulSets   metadata name, namespace, uid, resourceVersion; spec.selector
declared kinds metadata name, namespace, resourceVersion, labels (what their Pod selector is built from)
Nodes          metadata name, resourceVersion (the informer only says whether the member answers)
=============  ==============================================================================================

``apiVersion`` and ``kind`` stay when present. The template digest (:func:`~estimator.unschedulable.template_digest`)
is equal exactly when the templates are equal as :func:`~estimator.unschedulable.find_new_replica_set` compares
them; a template with no digest is kept whole. A value of a shape no API server sends (an ownerReferences that is
not a list of objects, say) is kept as it is: no transform ever fails, which would stop the informer. On objects
as API servers send them, the estimates answer the same slim and full (``tests/estimator/test_slim.py``).

Not for caches read otherwise: the accurate estimator's :class:`~estimator.accurate.NodeUsage` needs the Pods'
``nodeName`` and requests and the Nodes whole, and the dev plane's simulation lists Nodes and Pods; so a slim
member has no max-available estimate, and the dev plane keeps full objects.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller_manager.informer import Transform
from controller_manager.resource import Resource
from estimator.unschedulable import TEMPLATE_DIGEST, template_digest, unschedulable_condition
from kube_api.pods import TERMINAL_POD_PHASES
from kube_api.resources import DEPLOYMENTS, NODES, PODS, REPLICA_SETS, STATEFUL_SETS

_TYPE = ("apiVersion", "kind")
_POD_METADATA = ("name", "namespace", "resourceVersion", "labels", "ownerReferences")
_REPLICA_SET_METADATA = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp", "labels",
                         "ownerReferences")
_WORKLOAD_METADATA = ("name", "namespace", "uid", "resourceVersion")
_DECLARED_METADATA = ("name", "namespace", "resourceVersion", "labels")
_KEY_METADATA = ("name", "namespace", "resourceVersion")
_CONDITION = ("type", "status", "reason", "lastTransitionTime")


def _pick(source: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    return {key: source[key] for key in keys if key in source}


def _controller_reference(references: Any) -> Any:
    """The first ``controller: true`` reference, its ``controller`` and ``uid`` only (what ``controller_of`` and
    the controller-UID index read); None without one; anything but a list of objects as it is."""
    if not isinstance(references, list) or not all(isinstance(reference, dict) for reference in references):
        return references
    found = next((reference for reference in references if reference.get("controller")), None)
    return None if found is None else [_pick(found, ("controller", "uid"))]


def _with_metadata(obj: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """``obj``'s apiVersion, kind and the metadata ``keys``."""
    out = _pick(obj, _TYPE)
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        if "metadata" in obj:
            out["metadata"] = metadata
        return out
    kept = _pick(metadata, keys)
    if "ownerReferences" in kept:
        references = _controller_reference(kept.pop("ownerReferences"))
        if references is not None:
            kept["ownerReferences"] = references
    out["metadata"] = kept
    return out


def _with_spec(out: dict[str, Any], obj: Mapping[str, Any], *, template: bool) -> dict[str, Any]:
    """``out`` with ``obj``'s spec.selector and, with ``template``, its pod template's digest."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        if "spec" in obj:
            out["spec"] = spec
        return out
    kept = _pick(spec, ("selector",))
    if template:
        digest = template_digest(spec.get("template"))
        if digest is not None:
            kept[TEMPLATE_DIGEST] = sys.intern(digest)  # a Deployment's and its new ReplicaSet's: one string
        elif "template" in spec:
            kept["template"] = spec["template"]
    if kept:
        out["spec"] = kept
    return out


def slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """What :func:`~estimator.unschedulable.count_unschedulable` and the Pod selectors read of a Pod; only the
    cache's key and resourceVersion of one that cannot count whatever the threshold and the time (terminated,
    or its ``PodScheduled`` not False/Unschedulable): whether it is the workload's or not, it adds 0."""
    status = pod.get("status") or {}  # as objects.status reads it
    conditions = status.get("conditions") if isinstance(status, dict) else None
    phase = status.get("phase") if isinstance(status, dict) else None
    if not (isinstance(status, dict) and isinstance(conditions, list | None) and isinstance(phase, str | None)):
        return {**_with_metadata(pod, _POD_METADATA), "status": status}  # a shape no API server sends: as it is
    condition = unschedulable_condition(conditions)
    if phase in TERMINAL_POD_PHASES or condition is None:
        return _with_metadata(pod, _KEY_METADATA)
    kept = {"phase": phase} if "phase" in status else {}
    return {**_with_metadata(pod, _POD_METADATA), "status": {**kept, "conditions": [_pick(condition, _CONDITION)]}}


def slim_replica_set(replica_set: dict[str, Any]) -> dict[str, Any]:
    """A ReplicaSet as a Deployment's (``find_new_replica_set``) and as a workload of its own."""
    return _with_spec(_with_metadata(replica_set, _REPLICA_SET_METADATA), replica_set, template=True)


def slim_deployment(deployment: dict[str, Any]) -> dict[str, Any]:
    return _with_spec(_with_metadata(deployment, _WORKLOAD_METADATA), deployment, template=True)


def slim_stateful_set(stateful_set: dict[str, Any]) -> dict[str, Any]:
    return _with_spec(_with_metadata(stateful_set, _WORKLOAD_METADATA), stateful_set, template=False)


def slim_declared(workload: dict[str, Any]) -> dict[str, Any]:
    """An operator-declared kind's object: what :meth:`~estimator.podselectors.DeclaredKind.selector_for` reads."""
    return _with_metadata(workload, _DECLARED_METADATA)


def slim_node(node: dict[str, Any]) -> dict[str, Any]:
    return _with_metadata(node, _KEY_METADATA)


TRANSFORMS: dict[Resource, Callable[[dict[str, Any]], dict[str, Any]]] = {
    NODES: slim_node, PODS: slim_pod, REPLICA_SETS: slim_replica_set, DEPLOYMENTS: slim_deployment,
    STATEFUL_SETS: slim_stateful_set}


def transform_for(resource: Resource) -> Transform:
    """The transform of a member cache of ``resource``: an operator-declared kind's is :func:`slim_declared`."""
    return TRANSFORMS.get(resource, slim_declared)


__all__ = ["TRANSFORMS", "slim_declared", "slim_deployment", "slim_node", "slim_pod", "slim_replica_set",
           "slim_stateful_set", "transform_for"]
