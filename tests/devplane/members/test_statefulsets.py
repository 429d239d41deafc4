"""A StatefulSet on a simulated member: its Pods appear, scale and report status as kubectl shows them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from estimator.unschedulable import unschedulable_owned_pods
from kube_api.resources import PODS, STATEFUL_SETS
from tests.conftest import eventually
from tests.devplane.members.simulated import NS, Member, add_node, condition, events_for

TIMEOUT = 15.0


def stateful_set(name: str, replicas: int, *, cpu: str = "1", policy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "nginx", "image": "nginx",
                                              "resources": {"requests": {"cpu": cpu}}}]}}}
    if policy:
        spec["podManagementPolicy"] = policy
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": NS},
            "spec": spec}


async def pods_of(member: Member, app: str) -> dict[str, dict[str, Any]]:
    items = (await member.client.list(PODS, NS, label_selector=f"app={app}"))["items"]
    return {p["metadata"]["name"]: p for p in items}


async def running(member: Member, app: str, want: set[str]) -> dict[str, dict[str, Any]] | None:
    pods = await pods_of(member, app)
    live = {n: p for n, p in pods.items() if not p["metadata"].get("deletionTimestamp")}
    if set(live) != want or any(p["status"].get("phase") != "Running" for p in live.values()):
        return None
    return live


async def status_is(member: Member, name: str, **want: int) -> dict[str, Any] | None:
    sts = await member.client.get(STATEFUL_SETS, name, NS)
    status = sts.get("status") or {}
    if status.get("observedGeneration") != sts["metadata"]["generation"]:
        return None
    return sts if all(status.get(k, 0) == v for k, v in want.items()) else None


async def test_pods_are_made_in_order_scaled_and_reported(member: Member) -> None:
    await add_node(member, "node-a")
    created = await member.client.create(STATEFUL_SETS, stateful_set("web", 3))

    pods = await eventually(lambda: running(member, "web", {"web-0", "web-1", "web-2"}), timeout=TIMEOUT)
    sts = await eventually(lambda: status_is(member, "web", replicas=3, readyReplicas=3, availableReplicas=3,
                                             currentReplicas=3, updatedReplicas=3), timeout=TIMEOUT)
    revision = sts["status"]["updateRevision"]
    assert sts["status"]["currentRevision"] == revision and sts["status"]["collisionCount"] == 0
    for name, pod in pods.items():
        owner = pod["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("StatefulSet", created["metadata"]["uid"], True)
        assert pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == name
        assert pod["metadata"]["labels"]["controller-revision-hash"] == revision
        assert pod["spec"]["hostname"] == name and pod["spec"]["subdomain"] == "web"
    # OrderedReady: each pod was made only once the one before was Running and Ready
    messages = [e["message"] for e in await events_for(member, "web") if e["reason"] == "SuccessfulCreate"]
    assert messages == [f"create Pod web-{i} in StatefulSet web successful" for i in range(3)]

    sts["spec"]["replicas"] = 1
    await member.client.update(STATEFUL_SETS, sts)
    await eventually(lambda: running(member, "web", {"web-0"}), timeout=TIMEOUT)
    await eventually(lambda: status_is(member, "web", replicas=1, readyReplicas=1, availableReplicas=1),
                     timeout=TIMEOUT)
    deleted = [e["message"] for e in await events_for(member, "web") if e["reason"] == "SuccessfulDelete"]
    assert deleted == ["delete Pod web-2 in StatefulSet web successful",
                       "delete Pod web-1 in StatefulSet web successful"]  # highest ordinal first


async def test_a_deleted_pod_comes_back_under_its_name(member: Member) -> None:
    await add_node(member, "node-a")
    await member.client.create(STATEFUL_SETS, stateful_set("db", 2, policy="Parallel"))
    before = await eventually(lambda: running(member, "db", {"db-0", "db-1"}), timeout=TIMEOUT)
    await member.client.delete(PODS, "db-1", NS)

    async def replaced() -> dict[str, dict[str, Any]] | None:
        pods = await running(member, "db", {"db-0", "db-1"})
        return pods if pods and pods["db-1"]["metadata"]["uid"] != before["db-1"]["metadata"]["uid"] else None

    await eventually(replaced, timeout=TIMEOUT)


async def test_a_pod_that_does_not_fit_stays_pending_and_the_estimator_counts_it(member: Member) -> None:
    """The descheduler's case: a node with 2 CPUs and three 1-CPU replicas: the third waits Unschedulable."""
    await add_node(member, "node-a", cpu="2")
    await member.client.create(STATEFUL_SETS, stateful_set("big", 3))

    async def third_pending() -> dict[str, Any] | None:
        pods = await pods_of(member, "big")
        third = pods.get("big-2")
        scheduled = condition(third, "PodScheduled") if third else None
        if third is None or scheduled is None or scheduled["status"] != "False":
            return None
        return third

    pending = await eventually(third_pending, timeout=TIMEOUT)
    assert pending["status"]["phase"] == "Pending"
    assert condition(pending, "PodScheduled")["reason"] == "Unschedulable"  # type: ignore[index]
    sts = await eventually(lambda: status_is(member, "big", replicas=3, readyReplicas=2), timeout=TIMEOUT)
    assert sts["status"]["availableReplicas"] == 2
    # the estimator finds the StatefulSet's Pods by ownership and counts the stuck one
    pods = list((await pods_of(member, "big")).values())
    assert unschedulable_owned_pods(sts, pods, timedelta(0), None) == 1

    sts["spec"]["replicas"] = 2  # what a descheduled member gets: the stuck pod goes
    await member.client.update(STATEFUL_SETS, sts)
    await eventually(lambda: running(member, "big", {"big-0", "big-1"}), timeout=TIMEOUT)


async def test_pods_mount_the_claims_of_the_volume_claim_templates(member: Member) -> None:
    """The usual shape of a StatefulSet (its container mounts a claim template): each Pod gets a volume on its
    ordinal's claim, ``data-db-<ordinal>``, as the real controller gives it; without it kube refuses the Pod."""
    await add_node(member, "node-a")
    body = stateful_set("db", 2)
    body["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    body["spec"]["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    await member.client.create(STATEFUL_SETS, body)

    pods = await eventually(lambda: running(member, "db", {"db-0", "db-1"}), timeout=TIMEOUT)
    assert [pods[n]["spec"]["volumes"][0] for n in ("db-0", "db-1")] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": f"data-db-{i}"}} for i in (0, 1)]
