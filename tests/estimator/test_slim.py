"""Slim member caches (``estimator.slim``): the estimates answer the same on slim and full objects."""

from __future__ import annotations

import copy
import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from benchmarks.descheduler import CachedMember
from controller_manager.cache import Indexer
from controller_manager.informer import strip_managed_fields
from controller_manager.objects import MutableObj
from controller_manager.resource import Resource
from estimator.accurate import NodeUsage
from estimator.caches import CONTROLLER_INDEX
from estimator.kinds import WorkloadKinds
from estimator.podselectors import parse_entry
from estimator.slim import slim_deployment, slim_node, slim_pod, slim_replica_set, transform_for
from estimator.unschedulable import TEMPLATE_DIGEST
from kube_api.ownerrefs import controller_uid_index
from kube_api.resources import DEPLOYMENTS, NODES, PODS, REPLICA_SETS, STATEFUL_SETS
from kube_api.timeutil import format_time

NOW = datetime(2025, 9, 23, 12, 0, 0, tzinfo=UTC)
FLINK = parse_entry({"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
                     "podSelector": "app={name},component=taskmanager"})
MANAGED = [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:conditions": {}}}}]
uids = itertools.count()


def meta(name: str, *, labels: dict[str, str] | None = None, owner: MutableObj | None = None,
         created: str = "2025-09-23T10:00:00Z") -> MutableObj:
    """Metadata as an API server returns it: uid, resourceVersion, managedFields and the rest."""
    out: MutableObj = {"name": name, "namespace": "default", "uid": f"uid-{next(uids)}", "resourceVersion": "7",
                       "generation": 1, "creationTimestamp": created, "labels": dict(labels or {}),
                       "annotations": {"note": "x" * 50}, "managedFields": copy.deepcopy(MANAGED)}
    if owner is not None:
        out["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "not-the-controller", "uid": "cm-uid"},
            {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
             "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    return out


def template(app: str, image: str = "nginx:1.27", cpu: str = "100m") -> MutableObj:
    return {"metadata": {"labels": {"app": app}, "creationTimestamp": None},
            "spec": {"containers": [{"name": "main", "image": image, "resources": {"requests": {"cpu": cpu}},
                                     "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
                     "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "securityContext": {}}}


def deployment(name: str, tmpl: MutableObj) -> MutableObj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name),
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}}, "template": tmpl,
                     "strategy": {"type": "RollingUpdate"}, "revisionHistoryLimit": 10},
            "status": {"replicas": 3, "readyReplicas": 1, "conditions": [{"type": "Available", "status": "False"}]}}


def replica_set(owner: MutableObj, pod_hash: str, tmpl: MutableObj, created: str) -> MutableObj:
    labels = {**tmpl["metadata"]["labels"], "pod-template-hash": pod_hash}
    tmpl = {**tmpl, "metadata": {**tmpl["metadata"], "labels": labels}}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": meta(f"{owner['metadata']['name']}-{pod_hash}", labels=labels, owner=owner, created=created),
            "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": tmpl},
            "status": {"replicas": 3}}


def workload(kind: str, name: str, api_version: str = "apps/v1", labels: dict[str, str] | None = None) -> MutableObj:
    return {"apiVersion": api_version, "kind": kind, "metadata": meta(name, labels=labels),
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}}, "template": template(name)},
            "status": {"replicas": 2}}


def pod(name: str, owner: MutableObj | None, labels: dict[str, str], *, conditions: Any = None,
        phase: str | None = "Pending", status: Any = "build") -> MutableObj:
    """A Pod with the spec an API server defaults; ``conditions`` as given (None: scheduled and ready)."""
    if conditions is None:
        conditions = [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"},
                      {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2025-09-23T09:00:00Z"}]
    out: MutableObj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, labels=labels, owner=owner),
                       "spec": {"nodeName": "node-a", "containers": [{"name": "main", "image": "nginx",
                                                                      "resources": {"requests": {"cpu": "1"}}}],
                                "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]}}
    if status == "build":
        out["status"] = {"conditions": conditions, "qosClass": "Burstable", "hostIP": "10.0.0.1",
                         **({"phase": phase} if phase is not None else {})}
    elif status is not None:
        out["status"] = status
    return out


def stuck(since: timedelta | None, *, reason: str = "Unschedulable", status: str = "False") -> list[MutableObj]:
    condition: MutableObj = {"type": "PodScheduled", "status": status, "reason": reason,
                             "message": "0/3 nodes are available: 3 Insufficient cpu.", "lastProbeTime": None}
    if since is not None:
        condition["lastTransitionTime"] = format_time(NOW - since)
    return [condition]


def pods_of(owner: MutableObj, labels: dict[str, str]) -> list[MutableObj]:
    """One Pod of every kind that counts or not, for ``owner``."""
    name = owner["metadata"]["name"]
    other = [{"type": "Ready", "status": "False"}]
    return [
        pod(f"{name}-running", owner, labels),
        pod(f"{name}-stuck-long", owner, labels, conditions=stuck(timedelta(minutes=10))),
        pod(f"{name}-stuck-long-2", owner, labels, conditions=[*other, *stuck(timedelta(minutes=30))]),
        pod(f"{name}-stuck-short", owner, labels, conditions=stuck(timedelta(minutes=1))),
        pod(f"{name}-stuck-ever", owner, labels, conditions=stuck(None)),  # no lastTransitionTime: zero time
        pod(f"{name}-scheduler-error", owner, labels, conditions=stuck(timedelta(minutes=10), reason="Other")),
        pod(f"{name}-scheduled-first", owner, labels,  # the first PodScheduled is the one read
            conditions=[*stuck(timedelta(minutes=10), status="True"), *stuck(timedelta(minutes=10))]),
        pod(f"{name}-failed", owner, labels, conditions=stuck(timedelta(minutes=10)), phase="Failed"),
        pod(f"{name}-succeeded", owner, labels, phase="Succeeded"),
        pod(f"{name}-no-phase", owner, labels, conditions=stuck(timedelta(minutes=10)), phase=None),
        pod(f"{name}-no-status", owner, labels, status=None),
        pod(f"{name}-empty-status", owner, labels, status={}),
        pod(f"{name}-other-labels", owner, {"app": "someone-else"}, conditions=stuck(timedelta(minutes=10))),
        pod(f"{name}-orphan", None, labels, conditions=stuck(timedelta(minutes=10))),
    ]


def member_objects() -> dict[Resource, list[MutableObj]]:
    """A member as an API server lists it: a Deployment in a rollout, a StatefulSet, a ReplicaSet of its
    own, a declared kind's object and their Pods of every sort, and a Node."""
    web = deployment("web", template("web", "nginx:1.27"))
    old = replica_set(web, "old", template("web", "nginx:1.25"), "2025-09-23T08:00:00Z")
    new = replica_set(web, "new", template("web", "nginx:1.27", cpu="0.1"), "2025-09-23T09:00:00Z")  # 0.1 == 100m
    newer = replica_set(web, "newer", template("web", "nginx:1.27"), "2025-09-23T11:00:00Z")
    stale = deployment("stale", template("stale", "nginx:2"))  # no ReplicaSet has its template yet
    stale_rs = replica_set(stale, "abc", template("stale", "nginx:1"), "2025-09-23T08:00:00Z")
    db = workload("StatefulSet", "db")
    batch = workload("ReplicaSet", "batch")
    flink = {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
             "metadata": meta("job", labels={"team": "a"}), "spec": {"image": "flink"}, "status": {"state": "RUNNING"}}
    pods = [*pods_of(old, old["metadata"]["labels"]), *pods_of(new, new["metadata"]["labels"]),
            *pods_of(newer, newer["metadata"]["labels"]), *pods_of(stale_rs, stale_rs["metadata"]["labels"]),
            *pods_of(db, {"app": "db"}), *pods_of(batch, {"app": "batch"}),
            *pods_of(flink, {"app": "job", "component": "taskmanager"})]
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a", "resourceVersion": "3", "uid": "n",
                                                             "labels": {"kubernetes.io/hostname": "node-a"}},
            "status": {"allocatable": {"cpu": "4"}, "images": [{"names": ["nginx"], "sizeBytes": 1}] * 50}}
    return {DEPLOYMENTS: [web, stale], REPLICA_SETS: [old, new, newer, stale_rs, batch], STATEFUL_SETS: [db],
            PODS: pods, NODES: [node], FLINK.resource: [flink]}


def cached(objects: dict[Resource, list[MutableObj]], transform: Callable[[Resource], Callable[..., MutableObj]],
           ) -> CachedMember:
    """The member's caches as clusteraccess keeps them, each object through ``transform(resource)``."""
    names = {DEPLOYMENTS: "deployments", REPLICA_SETS: "replicasets", STATEFUL_SETS: "statefulsets", PODS: "pods",
             NODES: "nodes", FLINK.resource: FLINK.resource.key}
    stores: dict[str, Indexer] = defaultdict(Indexer)
    for resource, items in objects.items():
        store = Indexer({CONTROLLER_INDEX: controller_uid_index} if resource in (PODS, REPLICA_SETS) else {})
        store.replace([transform(resource)(copy.deepcopy(item)) for item in items])
        stores[names[resource]] = store
    return CachedMember("member1", NodeUsage(), stores)


def answers(member: CachedMember, refs: Iterable[tuple[str, str, str]]) -> dict[tuple[Any, ...], int | str]:
    kinds = WorkloadKinds([FLINK])
    result: dict[tuple[Any, ...], int | str] = {}
    for (api_version, kind, name), minutes in itertools.product(refs, (-1, 0, 1, 5, 9, 20, 40)):
        found = kinds.lookup({"apiVersion": api_version, "kind": kind})
        assert found is not None
        try:
            answer: int | str = found.count(member, "default", name, timedelta(minutes=minutes), NOW)
        except LookupError as exc:
            answer = f"LookupError: {exc}"
        result[(kind, name, minutes)] = answer
    return result


REFS = [("apps/v1", "Deployment", "web"), ("apps/v1", "Deployment", "stale"), ("apps/v1", "Deployment", "absent"),
        ("apps/v1", "StatefulSet", "db"), ("apps/v1", "StatefulSet", "absent"), ("apps/v1", "ReplicaSet", "batch"),
        ("apps/v1", "ReplicaSet", "web-new"), ("flink.apache.org/v1beta1", "FlinkDeployment", "job")]


def test_the_estimates_answer_the_same_on_slim_and_full_objects() -> None:
    objects = member_objects()
    full = answers(cached(objects, lambda _resource: strip_managed_fields), REFS)
    slim = answers(cached(objects, transform_for), REFS)
    assert slim == full
    # the new ReplicaSet's (0.1 cpu == 100m): stuck-long, -long-2, -ever and no-phase; stuck-short with 0 too
    assert full[("Deployment", "web", 5)] == 4 and full[("Deployment", "web", -1)] == 5
    assert full[("Deployment", "web", 20)] == 2 and full[("Deployment", "stale", 5)] == 0
    assert full[("StatefulSet", "db", 5)] == full[("ReplicaSet", "batch", 5)] == full[("ReplicaSet", "web-new", 5)] == 4
    assert full[("FlinkDeployment", "job", 5)] == 5  # selected by labels: the orphan too
    assert str(full[("Deployment", "absent", 5)]).startswith("LookupError")


def test_slim_objects_keep_only_what_is_read() -> None:
    objects = member_objects()
    web, new = objects[DEPLOYMENTS][0], objects[REPLICA_SETS][1]
    running, long = next(p for p in objects[PODS] if p["metadata"]["name"] == "web-new-running"), next(
        p for p in objects[PODS] if p["metadata"]["name"] == "web-new-stuck-long-2")
    assert slim_pod(copy.deepcopy(running)) == {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-new-running", "namespace": "default",
                                                        "resourceVersion": "7"}}
    assert slim_pod(copy.deepcopy(long)) == {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-new-stuck-long-2", "namespace": "default", "resourceVersion": "7",
                     "labels": {"app": "web", "pod-template-hash": "new"},
                     "ownerReferences": [{"controller": True, "uid": new["metadata"]["uid"]}]},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                       "reason": "Unschedulable",
                                                       "lastTransitionTime": "2025-09-23T11:30:00Z"}]}}
    cannot_count = [p for p in objects[PODS] if p["metadata"]["name"].endswith(
        ("-running", "-scheduler-error", "-scheduled-first", "-failed", "-succeeded", "-no-status", "-empty-status"))]
    assert len(cannot_count) == 7 * 7
    assert all(set(slim_pod(copy.deepcopy(p))) == {"apiVersion", "kind", "metadata"} for p in cannot_count)
    slim_web, slim_new = slim_deployment(copy.deepcopy(web)), slim_replica_set(copy.deepcopy(new))
    assert slim_web == {"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {k: web["metadata"][k] for k in ("name", "namespace", "uid", "resourceVersion")},
                        "spec": {"selector": {"matchLabels": {"app": "web"}},
                                 TEMPLATE_DIGEST: slim_web["spec"][TEMPLATE_DIGEST]}}
    assert slim_new["spec"][TEMPLATE_DIGEST] == slim_web["spec"][TEMPLATE_DIGEST]  # 0.1 cpu == 100m, hash aside
    assert set(slim_new["metadata"]) == {"name", "namespace", "uid", "resourceVersion", "creationTimestamp", "labels",
                                         "ownerReferences"}
    assert slim_node(copy.deepcopy(objects[NODES][0])) == {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a", "resourceVersion": "3"}}
    assert transform_for(FLINK.resource)(copy.deepcopy(objects[FLINK.resource][0]))["metadata"] == {
        "name": "job", "namespace": "default", "resourceVersion": "7", "labels": {"team": "a"}}


def test_a_shape_no_api_server_sends_is_kept_as_it_is() -> None:
    """A transform never raises (that would stop the informer) and never hides an odd value from a reader."""
    odd_pod = {"metadata": {"name": "p", "namespace": "default", "ownerReferences": [1, 2], "labels": "odd"},
               "status": {"phase": ["x"], "conditions": {"type": "PodScheduled"}}}
    assert slim_pod(copy.deepcopy(odd_pod)) == odd_pod
    assert slim_pod({"metadata": "odd", "status": "odd"}) == {"metadata": "odd", "status": "odd"}
    assert slim_pod({"status": {"conditions": "odd"}}) == {"status": {"conditions": "odd"}}
    nan = {"spec": {"priority": float("nan")}}  # no digest: the template stays whole
    odd_deployment = {"metadata": {"name": "d", "namespace": "default"}, "spec": {"template": nan, "selector": None}}
    assert slim_deployment(odd_deployment)["spec"] == {"selector": None, "template": nan}
    assert slim_replica_set({"spec": {"template": "odd"}}) == {"spec": {"template": "odd"}}
    assert slim_replica_set({"spec": "odd"}) == {"spec": "odd"}
    for resource in (PODS, REPLICA_SETS, DEPLOYMENTS, STATEFUL_SETS, NODES, FLINK.resource):
        assert transform_for(resource)({}) == {}
