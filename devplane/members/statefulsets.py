"""The member's StatefulSet controller (kube-controller-manager's ``statefulset-controller``).

A StatefulSet keeps one pod per ordinal ``start .. start + replicas - 1`` (``spec.ordinals.start``,
default 0), named ``<set>-<ordinal>`` and created from its template with a controller ownerReference,
the labels Kubernetes adds (``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index``,
``controller-revision-hash``), ``hostname`` = the pod name and ``subdomain`` = ``spec.serviceName``.
Pods of ordinals out of range are deleted highest ordinal first; a Failed or Succeeded pod is deleted
and made again under the same name.

Pod management, as ``stateful_set_control.go``:

* ``OrderedReady`` (the default): the next pod is created only when every lower ordinal is Running
  and Ready; scaling down deletes one pod at a time, and only when every pod in range is Running and
  Ready (the first unhealthy pod itself may go).
* ``Parallel``: every missing pod is created at once (slow-start batches) and every pod out of range
  deleted at once.

Status as the controller writes it: ``replicas`` (pods with a phase), ``readyReplicas``,
``availableReplicas`` (ready for ``minReadySeconds``), ``currentReplicas`` / ``updatedReplicas``
(pods of ``currentRevision`` / ``updateRevision``), the revisions, ``observedGeneration``.

The pods a StatefulSet counts are those it claims (:mod:`devplane.members.controllerref`) among the
pods named after it; the sync loop, with its expectations and the MutationCache of its own status
writes, is the one ReplicaSets use (:mod:`devplane.members.podowner`).

Simplifications: no ControllerRevision objects (a revision is ``<set>-<hash of the template>``, as
its name would be) and no rolling update: a template change applies to pods made afterwards, as with
``updateStrategy: OnDelete`` (delete a pod to update it); with ``RollingUpdate`` (the default)
``currentRevision`` becomes the update revision once every pod is updated and ready, as Kubernetes
does when a rolling update completes. No PersistentVolumeClaims from ``volumeClaimTemplates`` and
no ``persistentVolumeClaimRetentionPolicy``.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller_manager import objects
from controller_manager.controller import Controller
from controller_manager.manager import Manager
from controller_manager.objects import MutableObj, Obj
from kube_api.ownerrefs import controller_reference
from kube_api.pods import is_pod_terminated
from kube_api.resources import PODS, STATEFUL_SETS

from .hashing import pod_template_hash
from .podowner import BURST_REPLICAS, PodOwnerReconciler, raise_first, register_pod_owner
from .replicasets import count_available, is_pod_ready

COMPONENT = "statefulset-controller"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
PARALLEL = "Parallel"
_ORDINAL = re.compile(r"(.*)-([0-9]+)")


# ----------------------------------------------------------------------------- identity


def parent_and_ordinal(pod_name: str) -> tuple[str, int] | None:
    """``getParentNameAndOrdinal``: ``web-2`` → ("web", 2); None for a name without an ordinal."""
    match = _ORDINAL.fullmatch(pod_name)
    if match is None:
        return None
    return match.group(1), int(match.group(2))


def ordinal_of(sts: Obj, pod: Obj) -> int | None:
    """The pod's ordinal when it is named after ``sts`` (``isMemberOf``), else None."""
    parsed = parent_and_ordinal(objects.name(pod))
    if parsed is None or parsed[0] != objects.name(sts):
        return None
    return parsed[1]


def replica_range(sts: Obj) -> range:
    """The ordinals the StatefulSet keeps: ``spec.ordinals.start`` onwards, ``spec.replicas`` of them."""
    spec = objects.spec(sts)
    start = int((spec.get("ordinals") or {}).get("start") or 0)
    replicas = int(spec.get("replicas", 1) or 0)
    return range(start, start + max(replicas, 0))


def update_revision(sts: Obj) -> str:
    """The revision of the current template, named as its ControllerRevision would be: ``<set>-<hash>``."""
    template = objects.spec(sts).get("template") or {}
    collisions = int(objects.status(sts).get("collisionCount") or 0)  # hashed even when 0, as Kubernetes does
    return f"{objects.name(sts)}-{pod_template_hash(template, collisions)}"


def pod_revision(pod: Obj) -> str:
    return str(objects.labels(pod).get(REVISION_LABEL) or "")


def new_pod(sts: Obj, ordinal: int, revision: str) -> dict[str, Any]:
    """``newVersionedStatefulSetPod``: the template's pod with the ordinal's identity, its claims' volumes (named
    ``<claim>-<set>-<ordinal>``, as the controller names the claims it makes) and the revision label."""
    name = f"{objects.name(sts)}-{ordinal}"
    template = objects.spec(sts).get("template") or {}
    template_meta = objects.metadata(template)
    labels = {**(template_meta.get("labels") or {}), POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal),
              REVISION_LABEL: revision}
    meta: dict[str, Any] = {"name": name, "namespace": objects.namespace(sts), "labels": labels,
                            "ownerReferences": [controller_reference(sts, STATEFUL_SETS)]}
    for key in ("annotations", "finalizers"):
        if template_meta.get(key):
            meta[key] = copy.deepcopy(template_meta[key])
    spec: dict[str, Any] = copy.deepcopy(dict(objects.spec(template)))
    claims = [str(c["metadata"]["name"]) for c in objects.spec(sts).get("volumeClaimTemplates") or []
              if isinstance(c, dict) and isinstance(c.get("metadata"), dict) and c["metadata"].get("name")]
    if claims:  # updateStorage: a volume per claim template, on the ordinal's claim, before the template's others
        volumes = [{"name": claim, "persistentVolumeClaim": {"claimName": f"{claim}-{name}"}} for claim in claims]
        spec["volumes"] = volumes + [v for v in spec.get("volumes") or [] if not (
            isinstance(v, dict) and v.get("name") in claims)]
    spec["hostname"] = name
    service = objects.spec(sts).get("serviceName")
    if service:
        spec["subdomain"] = service
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


# ----------------------------------------------------------------------------- what to do


def is_running_and_ready(pod: Obj) -> bool:
    return objects.status(pod).get("phase") == "Running" and is_pod_ready(pod)


def _healthy(pod: Obj) -> bool:
    return is_running_and_ready(pod) and not objects.is_deleting(pod)


@dataclass
class Plan:
    """One sync's writes: the ordinals to create and the pods to delete."""

    create: list[int] = field(default_factory=list)
    delete: list[Obj] = field(default_factory=list)


def plan(sts: Obj, pods: list[Obj]) -> Plan:
    """What one sync does (``updateStatefulSet``'s replica and condemned passes), from the claimed pods."""
    wanted = replica_range(sts)
    ordered = objects.spec(sts).get("podManagementPolicy") != PARALLEL
    by_ordinal = {o: pod for pod in pods if (o := ordinal_of(sts, pod)) is not None}
    condemned = sorted((o for o in by_ordinal if o not in wanted), reverse=True)
    result = Plan()
    for ordinal in wanted:
        pod = by_ordinal.get(ordinal)
        if pod is None:
            result.create.append(ordinal)
            if ordered:
                return result
            continue
        if is_pod_terminated(pod) and not objects.is_deleting(pod):
            result.delete.append(pod)  # made again under the same name once it is gone
            if ordered:
                return result
            continue
        if ordered and not _healthy(pod):
            return result  # wait for this ordinal before creating the next
    first_unhealthy = next((by_ordinal[o] for o in sorted(by_ordinal) if not _healthy(by_ordinal[o])), None)
    for ordinal in condemned:
        pod = by_ordinal[ordinal]
        if objects.is_deleting(pod):
            if ordered:
                return result
            continue
        if ordered and not _healthy(pod) and pod is not first_unhealthy:
            return result
        result.delete.append(pod)
        if ordered:
            return result
    return result


# ----------------------------------------------------------------------------- status


def stateful_set_status(sts: Obj, pods: list[Obj], moment: datetime) -> tuple[dict[str, Any], float]:
    """(new status, seconds until a ready pod becomes available or 0), as ``computeReplicaStatus`` and
    ``completeRollingUpdate``; Go's omitempty drops zero counters except ``replicas`` and ``availableReplicas``."""
    spec, old = objects.spec(sts), objects.status(sts)
    min_ready = int(spec.get("minReadySeconds") or 0)
    updated_revision = update_revision(sts)
    current_revision = str(old.get("currentRevision") or updated_revision)
    counts = dict.fromkeys(("replicas", "readyReplicas", "currentReplicas", "updatedReplicas",
                            "availableReplicas"), 0)
    ready_pods = []
    for pod in pods:
        created = bool(objects.status(pod).get("phase"))
        counts["replicas"] += created
        if is_running_and_ready(pod):
            ready_pods.append(pod)
        if created and not objects.is_deleting(pod):
            counts["currentReplicas"] += pod_revision(pod) == current_revision
            counts["updatedReplicas"] += pod_revision(pod) == updated_revision
    counts["readyReplicas"] = len(ready_pods)
    counts["availableReplicas"], wait = count_available(ready_pods, min_ready, moment)
    rolling = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"
    if rolling and counts["updatedReplicas"] == counts["replicas"] == counts["readyReplicas"]:
        current_revision = updated_revision  # every pod updated and ready: the update is complete
        counts["currentReplicas"] = counts["updatedReplicas"]
    status: dict[str, Any] = {}
    generation = objects.generation(sts)
    if generation:
        status["observedGeneration"] = generation
    for name, count in counts.items():
        if count or name in ("replicas", "availableReplicas"):
            status[name] = count
    status["currentRevision"] = current_revision
    status["updateRevision"] = updated_revision
    status["collisionCount"] = int(old.get("collisionCount") or 0)
    if old.get("conditions"):
        status["conditions"] = copy.deepcopy(old["conditions"])
    return status, wait


# ----------------------------------------------------------------------------- reconciler


class StatefulSetReconciler(PodOwnerReconciler):
    """Creates and deletes a StatefulSet's pods and writes its status."""

    resource = STATEFUL_SETS
    created = "create Pod {pod} in StatefulSet {owner} successful"
    create_failed = "create Pod {pod} in StatefulSet {owner} failed error: {error}"
    deleted = "delete Pod {pod} in StatefulSet {owner} successful"
    delete_failed = "delete Pod {pod} in StatefulSet {owner} failed error: {error}"

    def candidates(self, owner: Obj) -> list[Obj]:
        """The pods of the namespace named after the StatefulSet (``getPodsForStatefulSet``'s filter)."""
        return [pod for pod in self.pods.by_index("namespace", objects.namespace(owner))
                if ordinal_of(owner, pod) is not None]

    def status(self, owner: Obj, pods: list[Obj], moment: datetime) -> tuple[dict[str, Any], float]:
        return stateful_set_status(owner, pods, moment)

    async def manage(self, key: str, owner: MutableObj, pods: list[Obj]) -> None:
        todo = plan(owner, pods)
        create = todo.create[:BURST_REPLICAS]
        if not create and not todo.delete:
            return
        self.expectations.expect(key, adds=len(create), deletes=[objects.key(pod) for pod in todo.delete])
        errors = await self.delete_pods(key, owner, todo.delete)
        revision = update_revision(owner)
        errors += await self.create_pods(key, owner, [new_pod(owner, ordinal, revision) for ordinal in create])
        raise_first(errors)



def setup_statefulset_controller(manager: Manager, *, cluster_name: str, workers: int = 4) -> Controller:
    """Register ``<cluster>/statefulset-controller`` (StatefulSets, and pods mapped to their controller)."""
    set_informer = manager.informer(STATEFUL_SETS)
    pod_informer = manager.informer(PODS)
    reconciler = StatefulSetReconciler(manager.client, set_informer.mutation_cache(), pod_informer.store,
                                       manager.event_recorder(COMPONENT))
    return register_pod_owner(manager, reconciler, owners=set_informer, pod_informer=pod_informer,
                              name=f"{cluster_name}/{COMPONENT}", workers=workers)
