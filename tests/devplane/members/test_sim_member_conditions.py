"""Pod conditions the member simulation writes keep what Kubernetes keeps.

``lastTransitionTime`` changes only when a condition's status changes (``podutil.UpdatePodCondition``),
and the kubelet leaves the conditions it does not own (``mergePodStatus``).
"""

from __future__ import annotations

from devplane.members.kubelet import running_status
from devplane.members.podscheduler import scheduled_condition, wants_scheduling

EARLIER, NOW = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"


def test_pod_scheduled_keeps_its_transition_time_while_true() -> None:
    current = {"type": "PodScheduled", "status": "True", "lastTransitionTime": EARLIER}
    assert scheduled_condition(current, NOW)["lastTransitionTime"] == EARLIER


def test_pod_scheduled_moves_its_transition_time_when_the_status_changes() -> None:
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "lastTransitionTime": EARLIER}
    assert scheduled_condition(unschedulable, NOW) == {"type": "PodScheduled", "status": "True",
                                                       "lastProbeTime": None, "lastTransitionTime": NOW}
    assert scheduled_condition(None, NOW)["lastTransitionTime"] == NOW


def test_kubelet_keeps_conditions_it_does_not_own() -> None:
    gate = {"type": "example.com/gate", "status": "True", "lastTransitionTime": EARLIER}
    pod = {"metadata": {"uid": "u1"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]},
           "status": {"conditions": [gate, {"type": "PodScheduled", "status": "True",
                                            "lastTransitionTime": EARLIER}]}}
    status = running_status(pod, host="172.18.0.2", pod_ip="10.244.0.2", moment=NOW)
    assert status["conditions"][0] == gate
    by_type = {c["type"]: c for c in status["conditions"]}
    assert by_type["PodScheduled"]["lastTransitionTime"] == EARLIER
    assert by_type["Ready"]["lastTransitionTime"] == NOW


def test_gated_pods_are_not_scheduled() -> None:
    """kube-scheduler's SchedulingGates PreEnqueue plugin: a gated pod waits, it is neither bound nor failed."""
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    assert wants_scheduling(pod)
    gated = {**pod, "spec": {**pod["spec"], "schedulingGates": [{"name": "example.com/wait"}]}}
    assert not wants_scheduling(gated)
