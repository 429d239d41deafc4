"""A member cluster's simulation (deployments, replica sets, pod scheduler, kubelet) over real HTTP.

Each test runs one plain Kubernetes dev API server (``karmada=False``) with its own Nodes and the
member's Manager from :func:`setup_member_simulation`, and checks what a user sees with kubectl:
Deployment status, ReplicaSets, pod phases and conditions (``kubectl get pods`` reads the server's
Table rendering, which these tests read too). Every wait is a deadline (``eventually``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import aiohttp

from estimator.unschedulable import find_new_replica_set, get_unschedulable_replicas
from kube_api.ownerrefs import controller_uid_index
from kube_api.resources import DEPLOYMENTS, NODES, PODS, REPLICA_SETS
from kube_api.timeutil import now_text, parse_time
from tests.conftest import eventually
from tests.devplane.members.simulated import NS, Member, add_node, condition, events_for

TIMEOUT = 15.0
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


# ----------------------------------------------------------------------------------------- helpers


def deployment(name: str, replicas: int, *, cpu: str = "500m", image: str = "nginx:1.27",
               tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "nginx", "image": image,
                                                "resources": {"requests": {"cpu": cpu, "memory": "128Mi"}}}]}
    if tolerations:
        pod_spec["tolerations"] = tolerations
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec}}}


async def pods_of(member: Member, app: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await member.client.list(PODS, NS, label_selector=f"app={app}"))["items"]
    return items


async def replica_sets_of(member: Member, app: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await member.client.list(REPLICA_SETS, NS, label_selector=f"app={app}"))["items"]
    return items


async def get_deployment(member: Member, name: str) -> dict[str, Any]:
    return await member.client.get(DEPLOYMENTS, name, NS)


async def pod_table(member: Member) -> dict[str, tuple[str, str]]:
    """``kubectl get pods``: name → (READY, STATUS), from the server's Table rendering."""
    async with aiohttp.ClientSession() as session, \
            session.get(f"{member.server.url}/api/v1/namespaces/{NS}/pods", headers={"Accept": TABLE}) as response:
        table = await response.json()
    names = [c["name"] for c in table["columnDefinitions"]]
    return {row["cells"][0]: (row["cells"][names.index("Ready")], row["cells"][names.index("Status")])
            for row in table["rows"]}


async def rolled_out(member: Member, name: str, replicas: int) -> dict[str, Any]:
    """The Deployment once every replica is updated and available and Kubernetes says so."""
    d = await get_deployment(member, name)
    status = d.get("status") or {}
    progressing = condition(d, "Progressing") or {}
    assert status.get("observedGeneration") == d["metadata"]["generation"]
    assert status.get("updatedReplicas", 0) == replicas and status.get("replicas", 0) == replicas
    assert status.get("availableReplicas", 0) == replicas and status.get("readyReplicas", 0) == replicas
    assert progressing.get("reason") == "NewReplicaSetAvailable"
    return d


async def unschedulable_pod(member: Member, app: str) -> dict[str, Any]:
    pending = [p for p in await pods_of(member, app) if not p["spec"].get("nodeName")
               and not p["metadata"].get("deletionTimestamp")]
    assert len(pending) == 1
    scheduled = condition(pending[0], "PodScheduled")
    assert scheduled is not None and scheduled["status"] == "False" and scheduled["reason"] == "Unschedulable"
    return pending[0]


# ----------------------------------------------------------------------------------------- tests


async def test_deployment_becomes_running_pods_and_available_status(member: Member) -> None:
    await add_node(member, "node-a")
    await add_node(member, "node-b")
    await member.client.create(DEPLOYMENTS, deployment("web", 3))

    d = await eventually(lambda: rolled_out(member, "web", 3), timeout=TIMEOUT)
    assert "unavailableReplicas" not in d["status"]  # zero is omitted, as Go's omitempty does
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    available = condition(d, "Available")
    assert available is not None and (available["status"], available["reason"], available["message"]) == (
        "True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
    assert [c["type"] for c in d["status"]["conditions"]] == ["Available", "Progressing"]

    [rs] = await replica_sets_of(member, "web")
    template_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{template_hash}"
    assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "web", "pod-template-hash": template_hash}
    assert rs["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": template_hash}
    owner = rs["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"], owner["blockOwnerDeletion"]) == (
        "Deployment", "web", d["metadata"]["uid"], True, True)
    assert rs["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1",
                                             "deployment.kubernetes.io/desired-replicas": "3",
                                             "deployment.kubernetes.io/max-replicas": "4"}
    assert rs["status"] == {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                            "observedGeneration": 1}
    progressing = condition(d, "Progressing")
    assert progressing is not None and progressing["message"] == f'ReplicaSet "{rs["metadata"]["name"]}" has ' \
                                                                 "successfully progressed."
    assert find_new_replica_set(d, [rs]) is not None  # the estimator recognises it as the new ReplicaSet

    pods = await pods_of(member, "web")
    assert len(pods) == 3
    for pod in pods:
        assert pod["metadata"]["name"].startswith(f"web-{template_hash}-")
        assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
        assert pod["metadata"]["labels"]["pod-template-hash"] == template_hash
        status = pod["status"]
        assert status["phase"] == "Running"
        assert {c["type"]: c["status"] for c in status["conditions"]} == {
            "PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True", "ContainersReady": "True",
            "PodScheduled": "True"}
        assert status["podIP"].startswith("10.") and status["hostIP"] and status["startTime"]
        [container] = status["containerStatuses"]
        assert container["ready"] and container["started"] and "running" in container["state"]
    assert {p["spec"]["nodeName"] for p in pods} == {"node-a", "node-b"}  # least allocated: spread
    assert len({p["status"]["podIP"] for p in pods}) == 3
    table = await pod_table(member)
    assert sorted(table.values()) == [("1/1", "Running")] * 3
    scheduled = [e for e in await events_for(member, pods[0]["metadata"]["name"]) if e["reason"] == "Scheduled"]
    assert scheduled and scheduled[0]["message"] == \
        f"Successfully assigned {NS}/{pods[0]['metadata']['name']} to {pods[0]['spec']['nodeName']}"


async def test_scaling_down_removes_pods_and_updates_status(member: Member) -> None:
    await add_node(member, "node-a")
    await member.client.create(DEPLOYMENTS, deployment("web", 3))
    await eventually(lambda: rolled_out(member, "web", 3), timeout=TIMEOUT)

    await member.client.patch(DEPLOYMENTS, "web", {"spec": {"replicas": 1}}, namespace=NS)

    async def scaled() -> bool:
        await rolled_out(member, "web", 1)
        pods = await pods_of(member, "web")
        assert len(pods) == 1 and pods[0]["status"]["phase"] == "Running"
        [rs] = await replica_sets_of(member, "web")
        assert rs["spec"]["replicas"] == 1 and rs["status"]["replicas"] == 1
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "1"
        return True

    await eventually(scaled, timeout=TIMEOUT)
    [deploy_events] = [[e for e in await events_for(member, "web") if e["reason"] == "ScalingReplicaSet"]]
    messages = {e["message"] for e in deploy_events}
    rs_name = (await replica_sets_of(member, "web"))[0]["metadata"]["name"]
    assert f"Scaled up replica set {rs_name} from 0 to 3" in messages
    assert f"Scaled down replica set {rs_name} from 3 to 1" in messages


async def test_template_change_rolls_out_a_new_replica_set(member: Member) -> None:
    await add_node(member, "node-a")
    await member.client.create(DEPLOYMENTS, deployment("web", 2))
    await eventually(lambda: rolled_out(member, "web", 2), timeout=TIMEOUT)
    [old] = await replica_sets_of(member, "web")

    await member.client.patch(DEPLOYMENTS, "web", {"spec": {"template": {"spec": {"containers": [
        {"name": "nginx", "image": "nginx:1.28", "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}}}]}}}},
        namespace=NS)

    async def rolled() -> dict[str, Any]:
        d = await rolled_out(member, "web", 2)
        replica_sets = {rs["metadata"]["name"]: rs for rs in await replica_sets_of(member, "web")}
        assert len(replica_sets) == 2
        assert replica_sets[old["metadata"]["name"]]["spec"]["replicas"] == 0
        pods = await pods_of(member, "web")
        assert len(pods) == 2 and all(p["spec"]["containers"][0]["image"] == "nginx:1.28" for p in pods)
        assert all(p["status"]["phase"] == "Running" for p in pods)
        return d

    d = await eventually(rolled, timeout=TIMEOUT)
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    new = next(rs for rs in await replica_sets_of(member, "web") if rs["metadata"]["name"] != old["metadata"]["name"])
    assert new["metadata"]["labels"]["pod-template-hash"] != old["metadata"]["labels"]["pod-template-hash"]
    assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    progressing = condition(d, "Progressing")
    assert progressing is not None and new["metadata"]["name"] in progressing["message"]
    found = find_new_replica_set(d, await replica_sets_of(member, "web"))
    assert found is not None and found["metadata"]["name"] == new["metadata"]["name"]


async def test_cordoned_node_leaves_the_replacement_pending_until_uncordoned(member: Member) -> None:
    await add_node(member, "node-a")
    await member.client.create(DEPLOYMENTS, deployment("web", 2))
    await eventually(lambda: rolled_out(member, "web", 2), timeout=TIMEOUT)
    await member.client.patch(NODES, "node-a", {"spec": {"unschedulable": True}})
    victim = (await pods_of(member, "web"))[0]
    await member.client.delete(PODS, victim["metadata"]["name"], NS)

    pending = await eventually(lambda: unschedulable_pod(member, "web"), timeout=TIMEOUT)
    scheduled = condition(pending, "PodScheduled")
    assert scheduled is not None
    assert scheduled["message"] == ("0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes "
                                    "are available: 1 Preemption is not helpful for scheduling.")
    assert pending["status"]["phase"] == "Pending"
    assert (await pod_table(member))[pending["metadata"]["name"]] == ("0/1", "Pending")
    assert victim["metadata"]["name"] not in {p["metadata"]["name"] for p in await pods_of(member, "web")}

    async def degraded() -> dict[str, Any]:
        d = await get_deployment(member, "web")
        assert d["status"]["availableReplicas"] == 1 and d["status"]["unavailableReplicas"] == 1
        return d

    d = await eventually(degraded, timeout=TIMEOUT)

    async def failed_scheduling() -> bool:
        events = await events_for(member, pending["metadata"]["name"])
        failed = [e for e in events if e["reason"] == "FailedScheduling"]
        assert failed and failed[0]["type"] == "Warning" and failed[0]["message"] == scheduled["message"]
        return True

    await eventually(failed_scheduling, timeout=TIMEOUT)

    # The descheduler's view: one replica unschedulable for longer than the threshold.
    since = parse_time(scheduled["lastTransitionTime"])
    replica_sets = await replica_sets_of(member, "web")
    pods = await pods_of(member, "web")
    assert get_unschedulable_replicas(d, replica_sets, pods, timedelta(0), since + timedelta(seconds=1)) == 1
    assert get_unschedulable_replicas(d, replica_sets, pods, timedelta(minutes=5), since + timedelta(minutes=1)) == 0

    # A node change is a retry: a second cordoned node changes the message, not the transition time.
    await eventually(lambda: now_text() != scheduled["lastTransitionTime"], timeout=3)
    await add_node(member, "node-b", unschedulable=True)

    async def retried() -> dict[str, Any]:
        pod = await unschedulable_pod(member, "web")
        current = condition(pod, "PodScheduled")
        assert current is not None and current["message"].startswith("0/2 nodes are available: 2 node(s) were "
                                                                      "unschedulable.")
        return current

    current = await eventually(retried, timeout=TIMEOUT)
    assert current["lastTransitionTime"] == scheduled["lastTransitionTime"]

    await member.client.patch(NODES, "node-a", {"spec": {"unschedulable": None}})

    async def running_again() -> bool:
        pods = await pods_of(member, "web")
        assert len(pods) == 2 and all(p["status"]["phase"] == "Running" for p in pods)
        assert all(p["spec"]["nodeName"] == "node-a" for p in pods)
        await rolled_out(member, "web", 2)
        return True

    await eventually(running_again, timeout=TIMEOUT)


async def test_requests_larger_than_any_node_are_unschedulable(member: Member) -> None:
    await add_node(member, "node-a", cpu="4")
    await member.client.create(DEPLOYMENTS, deployment("big", 1, cpu="8"))

    pod = await eventually(lambda: unschedulable_pod(member, "big"), timeout=TIMEOUT)
    scheduled = condition(pod, "PodScheduled")
    assert scheduled is not None and scheduled["message"] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not "
        "helpful for scheduling.")
    d = await get_deployment(member, "big")
    available = condition(d, "Available")
    assert available is not None and (available["status"], available["reason"]) == (
        "False", "MinimumReplicasUnavailable")
    assert d["status"]["unavailableReplicas"] == 1 and "availableReplicas" not in d["status"]

    # A node large enough joins: the pending pod is retried and runs there.
    await add_node(member, "node-big", cpu="16")
    await eventually(lambda: rolled_out(member, "big", 1), timeout=TIMEOUT)
    [running] = await pods_of(member, "big")
    assert running["spec"]["nodeName"] == "node-big"


async def test_untolerated_taints_block_and_tolerations_admit(member: Member) -> None:
    await add_node(member, "gpu-node", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    await member.client.create(DEPLOYMENTS, deployment("web", 1))

    pod = await eventually(lambda: unschedulable_pod(member, "web"), timeout=TIMEOUT)
    scheduled = condition(pod, "PodScheduled")
    assert scheduled is not None and scheduled["message"] == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}. preemption: 0/1 nodes are "
        "available: 1 Preemption is not helpful for scheduling.")

    toleration = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    await member.client.patch(DEPLOYMENTS, "web", {"spec": {"template": {"spec": {"tolerations": [toleration]}}}},
                              namespace=NS)

    async def tolerated() -> bool:
        await rolled_out(member, "web", 1)
        [running] = await pods_of(member, "web")
        assert running["spec"]["nodeName"] == "gpu-node" and running["spec"]["tolerations"] == [toleration]
        return True

    await eventually(tolerated, timeout=TIMEOUT)
    old = [rs for rs in await replica_sets_of(member, "web") if rs["spec"]["replicas"] == 0]
    assert len(old) == 1  # the unschedulable revision was scaled away


async def test_deleting_the_deployment_removes_replica_sets_and_pods(member: Member) -> None:
    await add_node(member, "node-a")
    await member.client.create(DEPLOYMENTS, deployment("web", 2))
    await eventually(lambda: rolled_out(member, "web", 2), timeout=TIMEOUT)

    await member.client.delete(DEPLOYMENTS, "web", NS)

    async def gone() -> bool:
        assert await replica_sets_of(member, "web") == []
        assert await pods_of(member, "web") == []
        return True

    await eventually(gone, timeout=TIMEOUT)


async def test_recreate_strategy_replaces_every_pod(member: Member) -> None:
    await add_node(member, "node-a")
    recreate = deployment("web", 2)
    recreate["spec"]["strategy"] = {"type": "Recreate"}
    await member.client.create(DEPLOYMENTS, recreate)
    await eventually(lambda: rolled_out(member, "web", 2), timeout=TIMEOUT)
    [old] = await replica_sets_of(member, "web")

    await member.client.patch(DEPLOYMENTS, "web", {"spec": {"template": {"metadata": {"labels": {"app": "web",
                                                                                             "rev": "2"}}}}},
                              namespace=NS)

    async def replaced() -> bool:
        await rolled_out(member, "web", 2)
        pods = await pods_of(member, "web")
        assert len(pods) == 2 and all(p["metadata"]["labels"].get("rev") == "2" for p in pods)
        return True

    await eventually(replaced, timeout=TIMEOUT)
    messages = [e["message"] for e in await events_for(member, "web") if e["reason"] == "ScalingReplicaSet"]
    scale_down = messages.index(f"Scaled down replica set {old['metadata']['name']} from 2 to 0")
    new_name = next(rs["metadata"]["name"] for rs in await replica_sets_of(member, "web")
                    if rs["metadata"]["name"] != old["metadata"]["name"])
    assert messages.index(f"Scaled up replica set {new_name} from 0 to 2") > scale_down  # old first, then new


async def test_pods_of_a_removed_node_are_replaced_and_wait_for_a_node(member: Member) -> None:
    await add_node(member, "node-a")
    await member.client.create(DEPLOYMENTS, deployment("web", 1))
    await eventually(lambda: rolled_out(member, "web", 1), timeout=TIMEOUT)
    [first] = await pods_of(member, "web")

    await member.client.delete(NODES, "node-a")

    pending = await eventually(lambda: unschedulable_pod(member, "web"), timeout=TIMEOUT)
    assert pending["metadata"]["name"] != first["metadata"]["name"]
    scheduled = condition(pending, "PodScheduled")
    assert scheduled is not None and scheduled["message"] == "no nodes available to schedule pods"
    assert [p["metadata"]["name"] for p in await pods_of(member, "web")] == [pending["metadata"]["name"]]


# ----------------------------------------------------------------------------------------- pod adoption


def bare_pod(name: str, app: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "labels": {"app": app}}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}


def replica_set(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}}}


async def settled(member: Member, name: str, replicas: int) -> dict[str, Any]:
    """The ReplicaSet once its status, for this generation, counts ``replicas`` ready pods."""
    rs = await member.client.get(REPLICA_SETS, name, NS)
    status = rs.get("status") or {}
    assert status.get("observedGeneration") == rs["metadata"]["generation"]
    assert status.get("replicas") == replicas and status.get("readyReplicas") == replicas
    return rs


async def test_replica_set_adopts_orphan_pods_and_leaves_others_alone(member: Member) -> None:
    """Pods made before their ReplicaSet are adopted (ClaimPods), not duplicated; a pod another controller
    owns is neither adopted nor counted."""
    await add_node(member, "node-a")
    secret = await member.client.request("POST", f"/api/v1/namespaces/{NS}/secrets",
                                         body={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "owner"}})
    foreign = {"apiVersion": "v1", "kind": "Secret", "name": "owner", "uid": secret["metadata"]["uid"],
               "controller": True}
    for name in ("orphan-a", "orphan-b"):
        await member.client.create(PODS, bare_pod(name, "adopt"))
    await member.client.create(PODS, bare_pod("foreign", "adopt", foreign))
    await member.client.create(REPLICA_SETS, replica_set("adopt", 2))

    rs = await eventually(lambda: settled(member, "adopt", 2), timeout=TIMEOUT)
    pods = {p["metadata"]["name"]: p for p in await pods_of(member, "adopt")}
    assert set(pods) == {"orphan-a", "orphan-b", "foreign"}  # nothing created, nothing deleted
    for name in ("orphan-a", "orphan-b"):
        [ref] = pods[name]["metadata"]["ownerReferences"]
        assert ref == {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "adopt",
                       "uid": rs["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    assert pods["foreign"]["metadata"]["ownerReferences"] == [foreign]


async def test_replica_set_releases_a_pod_that_stops_matching(member: Member) -> None:
    """A pod relabelled out of the selector loses its ownerReference and is replaced."""
    await add_node(member, "node-a")
    await member.client.create(REPLICA_SETS, replica_set("keep", 2))
    rs = await eventually(lambda: settled(member, "keep", 2), timeout=TIMEOUT)
    leaving = (await pods_of(member, "keep"))[0]["metadata"]["name"]
    await member.client.patch(PODS, leaving, {"metadata": {"labels": {"app": "left"}}}, namespace=NS)

    async def released() -> bool:
        pod = await member.client.get(PODS, leaving, NS)
        assert not pod["metadata"].get("ownerReferences")
        owned = [p for p in await pods_of(member, "keep") if controller_uid_index(p) == [rs["metadata"]["uid"]]]
        assert len(owned) == 2 and leaving not in {p["metadata"]["name"] for p in owned}
        return True

    await eventually(released, timeout=TIMEOUT)
    await eventually(lambda: settled(member, "keep", 2), timeout=TIMEOUT)
