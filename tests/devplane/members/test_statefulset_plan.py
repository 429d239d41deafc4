"""The StatefulSet controller's pure parts: pod identity, what one sync does, the status it writes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from devplane.members.statefulsets import (
    REVISION_LABEL,
    new_pod,
    parent_and_ordinal,
    plan,
    stateful_set_status,
    update_revision,
)

MOMENT = datetime(2026, 1, 1, tzinfo=UTC)


def sts(replicas: int = 3, *, policy: str = "OrderedReady", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "default", "uid": "sts-uid", "generation": 2},
            "spec": {"replicas": replicas, "podManagementPolicy": policy, "serviceName": "web",
                     "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}, "annotations": {"a": "b"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}, **spec}}


def pod(ordinal: int, phase: str = "Running", *, ready: bool = True, deleting: bool = False,
        revision: str | None = None, ready_since: datetime = MOMENT - timedelta(minutes=1)) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if ready else "False",
                   "lastTransitionTime": ready_since.strftime("%Y-%m-%dT%H:%M:%SZ")}]
    meta: dict[str, Any] = {"name": f"web-{ordinal}", "namespace": "default", "uid": f"pod-{ordinal}",
                            "labels": {"app": "web", REVISION_LABEL: revision or update_revision(sts())}}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase, "conditions": conditions} if phase else {}}


def names(pods: list[dict[str, Any]]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_pod_names_parse_into_parent_and_ordinal() -> None:
    assert parent_and_ordinal("web-12") == ("web", 12)
    assert parent_and_ordinal("my-web-0") == ("my-web", 0)
    assert parent_and_ordinal("web") is None
    assert parent_and_ordinal("web-x") is None


def test_a_new_pod_has_the_ordinals_identity_and_the_owner() -> None:
    made = new_pod(sts(), 2, "web-abc")
    meta = made["metadata"]
    assert meta["name"] == "web-2" and "generateName" not in meta
    assert meta["labels"] == {"app": "web", "statefulset.kubernetes.io/pod-name": "web-2",
                              "apps.kubernetes.io/pod-index": "2", "controller-revision-hash": "web-abc"}
    assert meta["annotations"] == {"a": "b"}
    [owner] = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("StatefulSet", "web", "sts-uid", True)
    assert made["spec"]["hostname"] == "web-2" and made["spec"]["subdomain"] == "web"


def test_the_revision_follows_the_template() -> None:
    changed = sts()
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    assert update_revision(sts()).startswith("web-")
    assert update_revision(changed) != update_revision(sts())


def test_ordered_ready_creates_the_lowest_missing_ordinal_only() -> None:
    assert plan(sts(), []).create == [0]
    assert plan(sts(), [pod(0)]).create == [1]
    assert plan(sts(), [pod(0, ready=False)]).create == []  # web-0 not Ready: web-1 waits
    assert plan(sts(), [pod(0, "Pending", ready=False)]).create == []


def test_parallel_creates_every_missing_ordinal() -> None:
    assert plan(sts(policy="Parallel"), [pod(1, "Pending", ready=False)]).create == [0, 2]


def test_ordinals_start_moves_the_range() -> None:
    assert plan(sts(2, policy="Parallel", ordinals={"start": 5}), []).create == [5, 6]


def test_ordered_scale_down_removes_the_highest_ordinal_one_at_a_time() -> None:
    todo = plan(sts(1), [pod(0), pod(1), pod(2)])
    assert (todo.create, names(todo.delete)) == ([], ["web-2"])
    assert names(plan(sts(1), [pod(0), pod(1), pod(2, deleting=True)]).delete) == []  # wait until gone


def test_ordered_scale_down_removes_a_stuck_pod_when_it_is_the_first_unhealthy() -> None:
    """The descheduler's case: web-1 Pending on a full member, the replicas lowered to 1."""
    assert names(plan(sts(1), [pod(0), pod(1, "Pending", ready=False)]).delete) == ["web-1"]
    # but not while a lower ordinal is unhealthy
    assert names(plan(sts(1), [pod(0), pod(1, ready=False), pod(2, "Pending", ready=False)]).delete) == []
    assert names(plan(sts(1), [pod(0, ready=False), pod(1)]).delete) == []


def test_parallel_scale_down_removes_every_condemned_pod() -> None:
    todo = plan(sts(1, policy="Parallel"), [pod(0, ready=False), pod(1), pod(2, "Pending", ready=False)])
    assert names(todo.delete) == ["web-2", "web-1"]


def test_a_failed_pod_is_deleted_to_be_made_again() -> None:
    assert names(plan(sts(), [pod(0, "Failed", ready=False)]).delete) == ["web-0"]


def test_status_counts_pods_as_the_controller_writes_them() -> None:
    pods = [pod(0), pod(1, "Pending", ready=False), pod(2, "", ready=False), pod(3, deleting=True)]
    status, wait = stateful_set_status(sts(), pods, MOMENT)
    revision = update_revision(sts())
    assert status == {"observedGeneration": 2, "replicas": 3, "readyReplicas": 2, "currentReplicas": 2,
                      "updatedReplicas": 2, "availableReplicas": 2, "currentRevision": revision,
                      "updateRevision": revision, "collisionCount": 0}
    assert wait == 0.0


def test_status_omits_zero_counters_but_replicas_and_available() -> None:
    status, _ = stateful_set_status(sts(0), [], MOMENT)
    assert status["replicas"] == 0 and status["availableReplicas"] == 0
    assert "readyReplicas" not in status and "currentReplicas" not in status and "updatedReplicas" not in status


def test_min_ready_seconds_delays_availability() -> None:
    status, wait = stateful_set_status(sts(1, minReadySeconds=30), [pod(0, ready_since=MOMENT - timedelta(seconds=10))],
                                       MOMENT)
    assert status["readyReplicas"] == 1 and status["availableReplicas"] == 0
    assert 20 < wait <= 21


def test_current_revision_stays_until_every_pod_is_updated_and_ready() -> None:
    old = sts(2)
    old["status"] = {"currentRevision": "web-old"}
    status, _ = stateful_set_status(old, [pod(0, revision="web-old"), pod(1)], MOMENT)
    assert (status["currentRevision"], status["currentReplicas"], status["updatedReplicas"]) == ("web-old", 1, 1)
    status, _ = stateful_set_status(old, [pod(0), pod(1)], MOMENT)
    assert (status["currentRevision"], status["currentReplicas"]) == (update_revision(old), 2)
