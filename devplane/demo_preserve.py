"""``karmada-devplane demo preserve``: karmada-io/karmada#7662's user story, played with preserve mode.

A Deployment of 10 replicas of 1 CPU, dynamic weight over three members, runs member1 6 and member2 4
(member3's only node is cordoned, so it gets none). Two of member1's Pods then get stuck Pending
Unschedulable (their node is cordoned and they are recreated), and member3 gets room. The demo waits
past the unschedulable threshold, then ``karmada-rebalance create --preserve-available-replicas
--wait`` makes one WorkloadRebalancer. This project's rebalancer controller (``karmada-controller-manager
--enable-preserve-available-replicas``) lowers member1 to 4 in the binding. Karmada's scheduler (the
simulation) places the 2 missing replicas on member3. The other 8 Pods are untouched: same Pods, never
restarted. The demo's members are shaped for that story (``PRESERVE_MEMBERS``) and the threshold is 5s.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from controller_manager import objects
from controllers.preserve import ENABLE_FLAG
from estimator.unschedulable import pod_unschedulable
from karmada_api.rebalancers import PRESERVE_ANNOTATION
from karmada_api.resources import WORKLOAD_REBALANCERS

from .config import MemberShape, NodeShape
from .demo_bulk import deployment_manifest, karmada_rebalance
from .demo_session import (
    STEP_TIMEOUT,
    Session,
    StepFailed,
    demo_plane_options,
    distribution_is,
    eventually,
    hold,
)
from .plane import PlaneOptions

THRESHOLD_SECONDS = 5
PRESERVE_FLAGS = (ENABLE_FLAG, f"--preserve-unschedulable-threshold={THRESHOLD_SECONDS}s")
NAME = "web"
BINDING = f"{NAME}-deployment"
REBALANCER = "preserve-web"
STUCK_NODE = "member1-b"
ROOMY_NODE = "member3-a"


def _node(name: str, cpu: str, memory: str) -> NodeShape:
    return NodeShape(name, {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"})


# Memory in the same resource-model grade as the CPU, so that the general estimator (which counts a node by
# its grade's minimum) agrees with the accurate one: a 4-CPU node holds 4 replicas of 1 CPU, a 2-CPU node 2.
PRESERVE_MEMBERS = (
    MemberShape("member1", (_node("member1-a", "4", "40Gi"), _node(STUCK_NODE, "2", "20Gi"))),  # 6 replicas
    MemberShape("member2", (_node("member2-a", "4", "40Gi"),)),  # 4
    MemberShape("member3", (_node(ROOMY_NODE, "4", "40Gi"),)),  # 4 once uncordoned
)


def preserve_plane_options() -> PlaneOptions:
    """The demos' plane (scheduler estimator on, status every second) with the story's member shapes."""
    defaults = demo_plane_options()
    return PlaneOptions(members=PRESERVE_MEMBERS, enable_scheduler_estimator=defaults.enable_scheduler_estimator,
                        cluster_status_update_frequency=defaults.cluster_status_update_frequency)


MANIFESTS = deployment_manifest(NAME, 10, f"app: {NAME}", 'requests: {cpu: "1"}') + f"""\
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {NAME}-propagation}}
spec:
  resourceSelectors:
    - {{apiVersion: apps/v1, kind: Deployment, name: {NAME}}}
  placement:
    clusterAffinity:
      clusterNames: [member1, member2, member3]
    replicaScheduling:
      replicaDivisionPreference: Weighted
      replicaSchedulingType: Divided
      weightPreference: {{dynamicWeight: AvailableReplicas}}
"""


async def play_preserve(s: Session) -> None:
    """#7662's user story: only the 2 stuck replicas move; the 8 running ones stay where they are."""
    s.say.title("Preserve available replicas, step 1: 10 replicas over member1 and member2")
    s.say.note(f"karmada-controller-manager runs with {' '.join(PRESERVE_FLAGS)} (default threshold 5m0s)")
    await s.kubectl("--context", "member3", "cordon", ROOMY_NODE)
    s.write("web.yaml", MANIFESTS)
    await s.kubectl("--context", "karmada-apiserver", "apply", "-f", "web.yaml")
    await s.wait_distribution(NAME, {"member1": 6, "member2": 4}, "step 1: 6 replicas in member1 and 4 in member2")
    await s.karmadactl_get_deploy(NAME)

    s.say.title(f"Step 2: two of member1's replicas get stuck Pending (node {STUCK_NODE} cordoned)")
    await s.kubectl("--context", "member1", "cordon", STUCK_NODE)
    await s.kubectl("--context", "member1", "delete", "pod", "-l", f"app={NAME}",
                    "--field-selector", f"spec.nodeName={STUCK_NODE}")
    await eventually("step 2: 2 Pods of web Pending Unschedulable in member1", lambda: _stuck_count(s, 2))
    running = await _running_pods(s)
    if list(running.values()).count("member1") != 4 or len(running) != 8:
        raise StepFailed(f"step 2: expected 4 running Pods in member1 and 4 in member2, found {running}")
    await s.kubectl("--context", "member1", "get", "pod", "-l", f"app={NAME}", "-o", "wide")

    s.say.title("Step 3: member3 gets room; nothing moves by itself")
    await s.kubectl("--context", "member3", "uncordon", ROOMY_NODE)
    s.say.note("watching for 5 seconds: Karmada keeps a schedule as it is; the stuck replicas stay stuck")
    await hold("step 3: the binding keeps member1 6 and member2 4",
               lambda: distribution_is(s, NAME, {"member1": 6, "member2": 4}), seconds=5.0)
    await eventually(f"step 3: the stuck Pods have been Unschedulable for longer than {THRESHOLD_SECONDS}s",
                     lambda: _stuck_longer_than(s, THRESHOLD_SECONDS + 1))

    s.say.title("Step 4: one WorkloadRebalancer in preserve mode")
    await karmada_rebalance(s, "--context", "karmada-apiserver", "create", REBALANCER, "--kind", "deploy",
                            "--preserve-available-replicas", "--wait", "--timeout", f"{STEP_TIMEOUT:.0f}s")
    status = await karmada_rebalance(s, "--context", "karmada-apiserver", "status", REBALANCER)
    if not status.startswith("Mode: preserve available replicas") or "Successful" not in status:
        raise StepFailed(f"step 4: expected the preserve mode and a Successful result, status printed:\n{status}")
    rebalancer = await s.host_client.get(WORKLOAD_REBALANCERS, REBALANCER)
    if objects.annotations(rebalancer).get(PRESERVE_ANNOTATION) != "true":
        raise StepFailed(f"step 4: the rebalancer does not carry {PRESERVE_ANNOTATION}: \"true\"")

    s.say.title("Step 5: only the 2 stuck replicas moved, to member3")
    await s.kubectl("--context", "karmada-apiserver", "get", "rb", BINDING, "-o", "jsonpath={.spec.clusters}",
                    show=f"--context karmada-apiserver get rb {BINDING} -o jsonpath='{{.spec.clusters}}'")
    await s.wait_distribution(NAME, {"member1": 4, "member2": 4, "member3": 2},
                              "step 5: member1 4 and member2 4 as before the stuck Pods, member3 2")
    await s.karmadactl_get_deploy(NAME)
    binding = await s.binding(BINDING)
    if "rescheduleTriggeredAt" in objects.spec(binding):
        raise StepFailed("step 5: the binding has a rescheduleTriggeredAt: it was rescheduled in full")
    after = await _running_pods(s)
    kept = {uid: where for uid, where in after.items() if uid in running}
    restarts = [await _restarts(s, cluster) for cluster in ("member1", "member2")]
    if kept != running or any(restarts):
        raise StepFailed(f"step 5: the 8 running Pods were not all kept untouched: before {running}, after {after}")
    s.say.note("the 8 Pods that ran before are the same Pods, never restarted")
    await s.kubectl("--context", "karmada-apiserver", "get", "events", "--field-selector",
                    f"involvedObject.kind=WorkloadRebalancer,involvedObject.name={REBALANCER}")


async def _pods(s: Session, cluster: str) -> list[dict[str, Any]]:
    return await s.member_pods(cluster, f"app={NAME}")


async def _stuck_count(s: Session, want: int) -> bool:
    return sum(pod_unschedulable(p, timedelta(0)) for p in await _pods(s, "member1")) == want


async def _stuck_longer_than(s: Session, seconds: float) -> bool:
    stuck = [p for p in await _pods(s, "member1") if pod_unschedulable(p, timedelta(0))]
    return bool(stuck) and all(pod_unschedulable(p, timedelta(seconds=seconds)) for p in stuck)


async def _running_pods(s: Session) -> dict[str, str]:
    """uid → cluster of every Running Pod of the Deployment in member1 and member2."""
    found: dict[str, str] = {}
    for cluster in ("member1", "member2"):
        for pod in await _pods(s, cluster):
            if objects.status(pod).get("phase") == "Running":
                found[str(objects.metadata(pod).get("uid"))] = cluster
    return found


async def _restarts(s: Session, cluster: str) -> int:
    return sum(int(c.get("restartCount") or 0) for pod in await _pods(s, cluster)
               for c in objects.status(pod).get("containerStatuses") or [])
