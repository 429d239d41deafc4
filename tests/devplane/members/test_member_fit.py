"""Pure rules of the member simulation: pod fit and kube-scheduler's messages, scale-down order,
Deployment rollout arithmetic and status, ReplicaSet status, the pod-template hash, kubelet status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devplane.members.hashing import pod_template_hash
from devplane.members.kubelet import running_status, runtime_image
from devplane.members.podowner import Expectations
from devplane.members.podscheduler import (
    NodeInfo,
    SchedulerCache,
    least_allocated_score,
    nonzero_requests,
    schedule,
)
from devplane.members.replicasets import pods_to_delete, rank_for_deletion, replica_set_status
from devplane.members.rollout import (
    calculate_status,
    new_replica_set,
    new_rs_new_replicas,
    proportional_sizes,
    resolve_fenceposts,
    rollout_status,
    set_condition,
    set_new_replica_set_annotations,
)
from estimator.unschedulable import equal_ignore_hash, find_new_replica_set

NOW = datetime(2025, 9, 23, 12, 0, 0, tzinfo=UTC)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# ----------------------------------------------------------------------------------------- fit


def node(name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110", ready: str | None = "True",
         unschedulable: bool = False, taints: list[dict[str, Any]] | None = None,
         labels: dict[str, str] | None = None, **extra: str) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **extra}
    status: dict[str, Any] = {"allocatable": allocatable, "capacity": allocatable}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": spec, "status": status}


def pod(name: str = "p", *, cpu: str | None = "1", memory: str | None = None, node_name: str = "",
        priority: int = 0, **spec: Any) -> dict[str, Any]:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": requests}}],
                            "priority": priority, **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": body,
            "status": {"phase": "Running" if node_name else "Pending"}}


def infos(*nodes: dict[str, Any], pods: tuple[dict[str, Any], ...] = ()) -> list[NodeInfo]:
    return [NodeInfo.of(n, [p for p in pods if p["spec"].get("nodeName") == n["metadata"]["name"]])
            for n in nodes]


NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


@pytest.mark.parametrize(("nodes", "bound", "incoming", "message"), [
    # the brief's example: a cordoned node and a node too small for the request
    ([node("a", unschedulable=True), node("b", cpu="2")], (), pod(cpu="3"),
     "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. preemption: 0/2 nodes are "
     f"available: 2 {NOT_HELPFUL}."),
    # room taken by pods of the same priority: preemption finds no victims
    ([node("a", cpu="2")], (pod("x", cpu="1500m", node_name="a"),), pod(cpu="1"),
     f"0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 {NO_VICTIMS}."),
    # both resources short on one node: both reasons count
    ([node("a", cpu="1", memory="1Gi")], (), pod(cpu="2", memory="2Gi"),
     "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory. preemption: 0/1 nodes are available: "
     f"1 {NOT_HELPFUL}."),
    ([node("a", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
      node("b", taints=[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}])], (), pod(),
     "0/2 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) had untolerated taint "
     f"{{node-role.kubernetes.io/control-plane: }}. preemption: 0/2 nodes are available: 2 {NOT_HELPFUL}."),
    # a node that is not Ready carries the node lifecycle controller's taint
    ([node("a", ready="False"), node("b", ready="Unknown"), node("c", ready=None)], (), pod(),
     "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 2 node(s) had "
     f"untolerated taint {{node.kubernetes.io/not-ready: }}. preemption: 0/3 nodes are available: 3 {NOT_HELPFUL}."),
    ([node("a", labels={"disk": "hdd"})], (), pod(nodeSelector={"disk": "ssd"}),
     "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are "
     f"available: 1 {NOT_HELPFUL}."),
    ([node("a", pods="1")], (pod("x", cpu=None, node_name="a"),), pod(cpu=None),
     f"0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 {NO_VICTIMS}."),
    ([node("a")], (), pod(cpu=None, containers=[{"name": "c", "resources": {"requests": {"example.com/gpu": "1"}}}]),
     f"0/1 nodes are available: 1 Insufficient example.com/gpu. preemption: 0/1 nodes are available: 1 {NOT_HELPFUL}."),
    ([node("a", cpu="1")], (), pod(cpu="2", preemptionPolicy="Never"),
     "0/1 nodes are available: 1 Insufficient cpu. not eligible due to preemptionPolicy=Never."),
    # the first failing plugin decides: a cordoned node too small only counts as unschedulable
    ([node("a", unschedulable=True, cpu="1")], (), pod(cpu="2"),
     f"0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: 1 {NOT_HELPFUL}."),
    # lower-priority pods that cannot make enough room: the shortage stays after removing them
    ([node("a", cpu="2")], (pod("low", cpu="500m", node_name="a", priority=-1),
                            pod("same", cpu="1500m", node_name="a")), pod(cpu="1"),
     "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu."),
    ([], (), pod(), "no nodes available to schedule pods"),
])
def test_unschedulable_messages(nodes: list[dict[str, Any]], bound: tuple[dict[str, Any], ...],
                                incoming: dict[str, Any], message: str) -> None:
    decision = schedule(incoming, infos(*nodes, pods=bound))
    assert decision.node is None
    assert decision.message == message


@pytest.mark.parametrize(("nodes", "bound", "incoming", "chosen"), [
    # the node with the most free resources wins
    ([node("a"), node("b")], (pod("x", cpu="2", node_name="a"),), pod(), "b"),
    ([node("a", cpu="2"), node("b", cpu="8")], (), pod(), "b"),
    # equal scores: the node name decides
    ([node("b"), node("a")], (), pod(), "a"),
    # a cordon is tolerated like any taint
    ([node("a", unschedulable=True)], (),
     pod(tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]), "a"),
    ([node("a", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])], (),
     pod(tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu"}]), "a"),
    # PreferNoSchedule only scores: the other node wins a tie
    ([node("a", taints=[{"key": "k", "effect": "PreferNoSchedule"}]), node("b")], (), pod(), "b"),
    ([node("a", taints=[{"key": "k", "effect": "PreferNoSchedule"}])], (), pod(), "a"),
    ([node("a", labels={"disk": "hdd"}), node("b", labels={"disk": "ssd"})], (), pod(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}}), "b"),
    # exactly full fits; terminal pods and pods elsewhere take nothing
    ([node("a", cpu="2")], (pod("x", cpu="1", node_name="a"),), pod(cpu="1"), "a"),
    # a pod without requests fits anywhere with a free pod slot
    ([node("a", cpu="1")], (pod("x", cpu="1", node_name="a"),), pod(cpu=None), "a"),
])
def test_feasible_node_choice(nodes: list[dict[str, Any]], bound: tuple[dict[str, Any], ...],
                              incoming: dict[str, Any], chosen: str) -> None:
    assert schedule(incoming, infos(*nodes, pods=bound)).node == chosen


def test_scheduler_cache_counts_bound_pods_until_they_end() -> None:
    cache = SchedulerCache()
    bound = pod("x", cpu="3", node_name="a")
    cache.update_pod(bound)
    [info] = cache.node_infos([node("a")])
    assert info.requested["cpu"] == 3000 and len(info.pods) == 1
    assert schedule(pod(cpu="2"), [info]).node is None
    cache.update_pod({**bound, "status": {"phase": "Succeeded"}})  # terminal: resources freed
    assert info.requested["cpu"] == 0 and not info.pods
    pending = pod("y", cpu="2")
    cache.assume(pending, "a")  # the scheduler's own binding counts before the informer reports it
    assert info.requested["cpu"] == 2000
    cache.update_pod({**pending, "spec": {**pending["spec"], "nodeName": "a"}})  # reported: counted once
    assert info.requested["cpu"] == 2000
    cache.remove_pod(pending)
    assert info.requested["cpu"] == 0


def test_scoring_uses_non_zero_default_requests() -> None:
    assert nonzero_requests(pod(cpu=None)["spec"]) == (100, 200 * 1024 * 1024)
    assert nonzero_requests(pod(cpu="0", memory="1Gi")["spec"]) == (0, 1024**3)
    [info] = infos(node("a", cpu="1", memory="1000Mi"))
    assert least_allocated_score(info, (500, 500 * 1024 * 1024)) == 50
    assert least_allocated_score(info, (2000, 0)) == 50  # over capacity: cpu scores 0


# ----------------------------------------------------------------------------------------- scale-down order


def member_pod(name: str, *, node_name: str = "n1", phase: str = "Running", ready: datetime | None = NOW,
               created: datetime = NOW, restarts: int = 0, cost: str | None = None) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": stamp(ready)}] if ready else []
    meta: dict[str, Any] = {"name": name, "namespace": "default", "creationTimestamp": stamp(created)}
    if cost is not None:
        meta["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    spec = {"nodeName": node_name} if node_name else {}
    return {"metadata": meta, "spec": spec,
            "status": {"phase": phase, "conditions": conditions,
                       "containerStatuses": [{"name": "c", "restartCount": restarts}]}}


@pytest.mark.parametrize(("first", "second"), [
    (member_pod("unassigned", node_name="", phase="Pending", ready=None), member_pod("assigned")),
    (member_pod("pending", phase="Pending", ready=None), member_pod("running")),
    (member_pod("unknown", phase="Unknown", ready=None), member_pod("running")),
    (member_pod("not-ready", ready=None), member_pod("ready")),
    (member_pod("cheap", cost="-10"), member_pod("dear", cost="10")),
    (member_pod("ready-recently", ready=NOW), member_pod("ready-long-ago", ready=NOW - timedelta(hours=1))),
    (member_pod("restarted", restarts=3), member_pod("steady")),
    (member_pod("newer", created=NOW), member_pod("older", created=NOW - timedelta(hours=1))),
])
def test_scale_down_order(first: dict[str, Any], second: dict[str, Any]) -> None:
    assert [p["metadata"]["name"] for p in rank_for_deletion([second, first], [])] == \
        [first["metadata"]["name"], second["metadata"]["name"]]
    assert [p["metadata"]["name"] for p in rank_for_deletion([first, second], [])] == \
        [first["metadata"]["name"], second["metadata"]["name"]]


def test_scale_down_prefers_crowded_nodes_and_takes_the_first_ones() -> None:
    crowded = [member_pod(f"c{i}", node_name="busy", created=NOW - timedelta(hours=2)) for i in range(3)]
    alone = member_pod("alone", node_name="quiet", created=NOW)
    pods = [alone, *crowded]
    ranked = rank_for_deletion(pods, pods)
    assert ranked[-1] is alone  # one related pod on its node, three on the others'
    assert pods_to_delete(pods, pods, 2) == ranked[:2]
    assert pods_to_delete(pods, pods, 9) == pods  # all of them: no sorting needed


def test_expectations_hold_until_observed_or_expired() -> None:
    expectations = Expectations(timeout=60)
    assert expectations.satisfied("ns/rs")
    expectations.expect("ns/rs", adds=2)
    expectations.creation_observed("ns/rs")
    assert not expectations.satisfied("ns/rs")
    expectations.creation_observed("ns/rs")
    assert expectations.satisfied("ns/rs")
    expectations.expect("ns/rs", deletes=["ns/p1"])
    assert not expectations.satisfied("ns/rs")
    expectations.deletion_observed("ns/rs", "ns/p1")
    assert expectations.satisfied("ns/rs")
    expired = Expectations(timeout=-1)
    expired.expect("ns/rs", adds=1)
    assert expired.satisfied("ns/rs")


# ----------------------------------------------------------------------------------------- ReplicaSet status


def test_replica_set_status_counts_and_omits_zeros() -> None:
    rs = {"metadata": {"generation": 4}, "spec": {"template": {"metadata": {"labels": {"app": "web"}}}}}
    labelled = member_pod("a")
    labelled["metadata"]["labels"] = {"app": "web"}
    status, wait = replica_set_status(rs, [labelled, member_pod("b", ready=None)], NOW)
    assert status == {"replicas": 2, "fullyLabeledReplicas": 1, "readyReplicas": 1, "availableReplicas": 1,
                      "observedGeneration": 4}
    assert wait == 0
    assert replica_set_status({"metadata": {}, "spec": {}}, [], NOW) == ({"replicas": 0}, 0.0)


def test_replica_set_availability_waits_for_min_ready_seconds() -> None:
    rs = {"metadata": {"generation": 1}, "spec": {"minReadySeconds": 30}}
    status, wait = replica_set_status(rs, [member_pod("a", ready=NOW - timedelta(seconds=10))], NOW)
    assert status == {"replicas": 1, "fullyLabeledReplicas": 1, "readyReplicas": 1, "observedGeneration": 1}
    assert wait == 21  # 20 s left, plus a second
    status, _ = replica_set_status(rs, [member_pod("a", ready=NOW - timedelta(seconds=31))], NOW)
    assert status["availableReplicas"] == 1


# ----------------------------------------------------------------------------------------- Deployment rules


def deployment(replicas: int = 3, *, strategy: dict[str, Any] | None = None, generation: int = 1,
               status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "web", "namespace": "default", "uid": "d-uid", "generation": generation,
                         "annotations": {"team": "a", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "strategy": strategy or {"type": "RollingUpdate",
                                              "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                     "progressDeadlineSeconds": 600, "revisionHistoryLimit": 10,
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}},
            "status": status or {}}


def rs(name: str, replicas: int, *, available: int = 0, ready: int | None = None, current: int | None = None,
       created: str = "2025-09-23T12:00:00Z", max_replicas: int | None = None) -> dict[str, Any]:
    annotations = {"deployment.kubernetes.io/max-replicas": str(max_replicas)} if max_replicas else {}
    return {"metadata": {"name": name, "creationTimestamp": created, "annotations": annotations},
            "spec": {"replicas": replicas},
            "status": {"replicas": replicas if current is None else current, "availableReplicas": available,
                       "readyReplicas": available if ready is None else ready}}


@pytest.mark.parametrize(("surge", "unavailable", "desired", "expected"), [
    ("25%", "25%", 3, (1, 0)),
    ("25%", "25%", 10, (3, 2)),
    (0, "25%", 3, (0, 1)),  # both resolving to 0: one may be unavailable
    (1, 0, 1, (1, 0)),
    ("50%", "50%", 0, (0, 1)),
])
def test_resolve_fenceposts(surge: Any, unavailable: Any, desired: int, expected: tuple[int, int]) -> None:
    assert resolve_fenceposts(surge, unavailable, desired) == expected


def test_new_replica_set_grows_within_max_surge() -> None:
    d = deployment(4)  # maxSurge 25% of 4 = 1
    new = rs("new", 0)
    assert new_rs_new_replicas(d, [rs("old", 4), new], new) == 1
    assert new_rs_new_replicas(d, [rs("old", 5), new], new) == 0
    assert new_rs_new_replicas(d, [new], new) == 4
    recreate = deployment(4, strategy={"type": "Recreate"})
    assert new_rs_new_replicas(recreate, [rs("old", 4), new], new) == 4


def test_proportional_scaling_during_a_rollout() -> None:
    # 10 replicas (max 13) rolling out: 8 old + 5 new; scaled to 20 (max 25): 12 more, each grows by
    # round(size * 20 / 13) - size (old +4, new +3) and the largest takes the 5 left over
    d = deployment(20)
    old, new = rs("old", 8, max_replicas=13), rs("new", 5, max_replicas=13, created="2025-09-23T12:05:00Z")
    sizes = {r["metadata"]["name"]: size for r, size in proportional_sizes(d, [old, new])}
    assert sizes == {"old": 17, "new": 8}
    down = {r["metadata"]["name"]: size for r, size in proportional_sizes(deployment(0), [old, new])}
    assert down == {"old": 0, "new": 0}


def test_new_replica_set_carries_hash_labels_owner_and_annotations() -> None:
    d = deployment(3)
    template_hash = pod_template_hash(d["spec"]["template"])
    created = new_replica_set(d, None)
    assert created["metadata"]["name"] == f"web-{template_hash}"
    assert created["spec"]["template"]["metadata"]["labels"] == {"app": "web", "pod-template-hash": template_hash}
    assert created["spec"]["selector"] == {"matchLabels": {"app": "web", "pod-template-hash": template_hash}}
    assert created["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                                       "uid": "d-uid", "controller": True,
                                                       "blockOwnerDeletion": True}]
    assert set_new_replica_set_annotations(d, created, 1, exists=False)
    assert created["metadata"]["annotations"] == {"team": "a", "deployment.kubernetes.io/revision": "1",
                                                  "deployment.kubernetes.io/desired-replicas": "3",
                                                  "deployment.kubernetes.io/max-replicas": "4"}
    # the estimator's view: its template equals the Deployment's once the hash label is ignored
    assert equal_ignore_hash(created["spec"]["template"], d["spec"]["template"])
    assert find_new_replica_set(d, [{**created, "metadata": {**created["metadata"], "uid": "rs"}}]) is not None
    # a rollback to this ReplicaSet keeps the revision it had
    assert set_new_replica_set_annotations(d, created, 3, exists=True)
    assert created["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"


def test_pod_template_hash_is_stable_and_short() -> None:
    template = deployment()["spec"]["template"]
    first = pod_template_hash(template)
    assert first == pod_template_hash({"spec": template["spec"], "metadata": template["metadata"]})
    assert first != pod_template_hash(template, 1)
    assert 1 <= len(first) <= 10
    assert set(first) <= set("bcdfghjklmnpqrstvwxz2456789")


def test_status_counts_omit_zeros_and_report_availability() -> None:
    d = deployment(3)
    new = rs("new", 3, available=2)
    status = calculate_status([new], new, d, NOW)
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2,
        "unavailableReplicas": 1}
    assert status["conditions"] == [{"type": "Available", "status": "False", "lastUpdateTime": stamp(NOW),
                                     "lastTransitionTime": stamp(NOW), "reason": "MinimumReplicasUnavailable",
                                     "message": "Deployment does not have minimum availability."}]
    empty = calculate_status([], None, deployment(0), NOW)
    assert "replicas" not in empty and "unavailableReplicas" not in empty
    assert empty["conditions"][0]["reason"] == "MinimumReplicasAvailable"


def test_rollout_status_progress_reasons() -> None:
    earlier = NOW - timedelta(minutes=1)
    created = {"type": "Progressing", "status": "True", "lastUpdateTime": stamp(earlier),
               "lastTransitionTime": stamp(earlier), "reason": "NewReplicaSetCreated",
               "message": 'Created new replica set "web-abc"'}
    new = rs("web-abc", 3, available=1, current=3)
    new["metadata"]["name"] = "web-abc"
    d = deployment(3, status={"conditions": [created]})
    status, recheck = rollout_status(d, [new], new, NOW)
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert (progressing["reason"], progressing["message"]) == (
        "ReplicaSetUpdated", 'ReplicaSet "web-abc" is progressing.')
    assert progressing["lastTransitionTime"] == stamp(earlier) and progressing["lastUpdateTime"] == stamp(NOW)
    assert recheck == 601
    assert [c["type"] for c in status["conditions"]] == ["Available", "Progressing"]

    done = rs("web-abc", 3, available=3)
    done["metadata"]["name"] = "web-abc"
    status, recheck = rollout_status(deployment(3, status=status), [done], done, NOW)
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert (progressing["reason"], progressing["message"]) == (
        "NewReplicaSetAvailable", 'ReplicaSet "web-abc" has successfully progressed.')
    assert recheck == 0

    stuck = deployment(3, status={"replicas": 3, "updatedReplicas": 3, "readyReplicas": 1, "availableReplicas": 1,
                                  "conditions": [
        {**created, "lastUpdateTime": stamp(NOW - timedelta(minutes=11))}]})
    status, _ = rollout_status(stuck, [new], new, NOW)
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "False", "ProgressDeadlineExceeded", 'ReplicaSet "web-abc" has timed out progressing.')


def test_set_condition_keeps_transition_time_when_status_holds() -> None:
    status: dict[str, Any] = {"conditions": [{"type": "Available", "status": "True", "reason": "A",
                                              "lastTransitionTime": "t0", "lastUpdateTime": "t0"}]}
    set_condition(status, {"type": "Available", "status": "True", "reason": "A", "lastTransitionTime": "t1",
                           "lastUpdateTime": "t1"})
    assert status["conditions"][0]["lastUpdateTime"] == "t0"  # same status and reason: untouched
    set_condition(status, {"type": "Available", "status": "True", "reason": "B", "lastTransitionTime": "t2",
                           "lastUpdateTime": "t2"})
    assert status["conditions"][0]["lastTransitionTime"] == "t0" and status["conditions"][0]["reason"] == "B"


# ----------------------------------------------------------------------------------------- kubelet


@pytest.mark.parametrize(("image", "reported"), [
    ("nginx", "docker.io/library/nginx:latest"),
    ("nginx:1.27", "docker.io/library/nginx:1.27"),
    ("bitnami/nginx:1.27", "docker.io/bitnami/nginx:1.27"),
    ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"),
    ("localhost:5000/app", "localhost:5000/app:latest"),
    ("nginx@sha256:abc", "docker.io/library/nginx@sha256:abc"),
])
def test_runtime_image(image: str, reported: str) -> None:
    assert runtime_image(image) == reported


def test_running_status_is_stable_across_rewrites() -> None:
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2025-09-23T11:00:00Z"}
    bound = {"metadata": {"uid": "u1"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}],
                                                  "initContainers": [{"name": "init", "image": "busybox"}]},
             "status": {"phase": "Pending", "conditions": [scheduled]}}
    status = running_status(bound, host="172.18.0.2", pod_ip="10.244.0.5", moment="2025-09-23T12:00:00Z")
    assert status["phase"] == "Running" and status["podIP"] == "10.244.0.5" and status["hostIP"] == "172.18.0.2"
    assert [c["type"] for c in status["conditions"]] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
    assert status["conditions"][-1]["lastTransitionTime"] == "2025-09-23T11:00:00Z"
    [container] = status["containerStatuses"]
    assert container["ready"] and container["started"] and container["state"]["running"]["startedAt"] == \
        "2025-09-23T12:00:00Z"
    [init] = status["initContainerStatuses"]
    assert init["state"]["terminated"]["reason"] == "Completed" and not init["started"]
    later = running_status({**bound, "status": status}, host="172.18.0.2", pod_ip="10.244.0.5",
                           moment="2025-09-23T12:05:00Z")
    assert later == status  # nothing to write the second time
