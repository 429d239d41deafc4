"""Preserve mode (karmada-io/karmada#7662) on the real plane: our WorkloadRebalancer controller lowers a member's
unschedulable replicas only, and Karmada's own scheduler places that deficit again.

Our controller-manager runs with ``--enable-preserve-available-replicas`` (conftest's :data:`PRESERVE_FLAGS`)
and reads the members through their Cluster secrets. The stuck replicas are played as in test_descheduler.py
(faker paused, a ReplicaSet with Pending Pods the member's scheduler marked ``Unschedulable``), but stuck for
:data:`STUCK_FOR`: past preserve mode's threshold and short of the descheduler's 5 minutes, so that our
descheduler, running in the same tier on the same evidence, leaves them to the rebalancer.
"""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import anyio
import pytest

from benchmarks.refplane import RefPlane, listening
from controller_manager.client import KubeClient
from controllers.workloadrebalancer import NOTHING_TO_MOVE, PRESERVED
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from karmada_api.rebalancers import PRESERVE_ANNOTATION, rebalancer_body
from karmada_api.resources import CLUSTERS, PROPAGATION_POLICIES, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from karmada_api.shapes import Workload
from kube_api.conditions import find_condition
from kube_api.resources import DEPLOYMENTS, JOBS
from kube_api.timeutil import parse_time
from sharedcli.flagtypes import format_duration
from tests.conftest import eventually
from tests.realplane.conftest import PRESERVE_RETRY_TIMEOUT, PRESERVE_THRESHOLD, Ours, Program
from tests.realplane.support import (
    SCHEDULED,
    STATIC_HALVES,
    assigned,
    binding_of,
    delete_pod_now,
    delete_quietly,
    deployment,
    events_of,
    faker_paused,
    fresh_namespace,
    make_replicas_unschedulable,
    policy,
    propagate,
    set_taint,
    versions_seen,
    wait_assigned,
    wait_finished,
    wait_member_ready,
    wait_ready_reported,
)

REPLICAS = 10  # #7662's user story; the members' fake Nodes (2 x 110 Pods each) hold far more
STUCK = 2
STUCK_FOR = PRESERVE_THRESHOLD + timedelta(minutes=1)
MEMBER1_PORT = 6441  # member1's kube-apiserver (fixed by the kit)
RETRY_BOUND = f"(for longer than the retry timeout, {format_duration(PRESERVE_RETRY_TIMEOUT.total_seconds())})"


@dataclass
class Scene:
    """A test's namespace on Karmada and the rebalancers it made, all taken away after it (:func:`scene`)."""

    karmada: KubeClient
    ns: str
    rebalancers: list[str] = field(default_factory=list)

    def ref(self, name: str, kind: str = "Deployment", api_version: str = "apps/v1") -> Workload:
        return Workload(apiVersion=api_version, kind=kind, namespace=self.ns, name=name)

    async def rebalance(self, refs: list[Workload], annotation: str = "true",
                        name: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
        """A WorkloadRebalancer (named after the namespace unless ``name``) asking for preserve mode by the
        annotation (Karmada's CRD prunes the proposed field); it as created, and once finished."""
        name = name or self.ns
        created = await self.karmada.create(WORKLOAD_REBALANCERS, rebalancer_body(
            {"name": name, "annotations": {PRESERVE_ANNOTATION: annotation}}, refs, None))
        self.rebalancers.append(name)
        return created, await wait_finished(self.karmada, name)


@pytest.fixture
async def scene(karmada: KubeClient) -> AsyncIterator[Scene]:
    """A fresh namespace; afterwards its rebalancers and workloads deleted (Karmada then deletes the members'
    copies, and the faker their Pods). Left behind they would tilt the dynamic division of later workloads: the
    eviction test's NoExecute taint, like test_failback's, moves every workload on member1 to member2."""
    made = Scene(karmada, await fresh_namespace(karmada, "rp-preserve"))
    try:
        yield made
    finally:
        for name in made.rebalancers:
            await delete_quietly(karmada, WORKLOAD_REBALANCERS, name)
        for resource in (DEPLOYMENTS, JOBS):
            for obj in (await karmada.list(resource, made.ns)).get("items") or []:
                await delete_quietly(karmada, resource, obj["metadata"]["name"], made.ns)


def outcomes(obj: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """``namespace/name`` → (result, reason) of each observed workload."""
    return {f"{w['workload'].get('namespace', '')}/{w['workload']['name']}": (str(w.get("result")),
                                                                             str(w.get("reason") or ""))
            for w in (obj.get("status") or {}).get("observedWorkloads") or []}


async def assert_untouched(karmada: KubeClient, binding: dict[str, Any], *, karmada_edits_spec: bool = False) -> None:
    """Nothing of ours in the binding since ``binding``: no spec change (its ``generation``; Karmada's controllers
    keep writing its status, so not its resourceVersion), no trigger. ``karmada_edits_spec``: Karmada's own
    controllers may still change the spec (a graceful eviction under way: seen once in CI, generation 4 -> 5 with
    the same clusters and task), so only our kinds of change are checked: the assignment and the trigger."""
    resource = binding["spec"]["resource"]
    now = await binding_of(karmada, binding["metadata"]["namespace"], resource["name"], resource["kind"])
    assert now is not None
    if not karmada_edits_spec:
        assert now["metadata"]["generation"] == binding["metadata"]["generation"], (now["spec"], binding["spec"])
    assert assigned(now) == assigned(binding)
    assert "rescheduleTriggeredAt" not in now["spec"]


async def scheduled(karmada: KubeClient, ns: str, name: str) -> dict[str, Any]:
    """The Deployment's binding once both members have some of its replicas and report them all ready."""
    binding = await wait_assigned(karmada, ns, name, lambda a: a.get("member1", 0) > STUCK and a.get("member2", 0) > 0
                                  and sum(a.values()) == REPLICAS)
    for cluster, replicas in assigned(binding).items():
        binding = await wait_ready_reported(karmada, binding, cluster, replicas)
    return binding


# ---- what moves ---------------------------------------------------------------------------------------------


async def test_only_the_stuck_replicas_leave_and_karmada_places_them_again(
        ours: Ours, karmada: KubeClient, scene: Scene, member1: KubeClient) -> None:
    """#7662's user story: 10 replicas over member1 and member2, 2 of member1's stuck; the rebalancer lowers
    member1 by exactly those 2 and writes nothing else, and Karmada's scheduler (its scale-up path, by the
    policy's dynamic weight) assigns 2 again."""
    ns = scene.ns
    await propagate(karmada, ns, ["web"], REPLICAS)
    binding = await scheduled(karmada, ns, "web")
    before = assigned(binding)
    await wait_member_ready(member1, ns, "web", before["member1"])
    stuck: list[str] = []
    try:
        async with versions_seen(karmada, binding) as seen:
            async with faker_paused(ours.plane):
                stuck = await make_replicas_unschedulable(member1, ns, "web", STUCK, STUCK_FOR)
                # preserve mode never takes a cluster below its ready replicas as the binding reports them (the
                # descheduler's floor), so the rebalancer is created once the binding shows member1's stuck Pods
                await wait_ready_reported(karmada, binding, "member1", before["member1"] - STUCK)
                rebalancer, finished = await scene.rebalance([scene.ref("web")])
            assert outcomes(finished) == {f"{ns}/web": ("Successful", "")}
            events = await events_of(karmada, rebalancer, PRESERVED)
            assert [e["message"] for e in events] == [
                "unschedulable replicas released, the available ones kept, for 1 workload(s): "
                f"apps/v1 Deployment {ns}/web (member1 -{STUCK})"]
            refilled = await wait_assigned(karmada, ns, "web", lambda a: sum(a.values()) == REPLICAS)
            await eventually(lambda: any(assigned(v) == assigned(refilled) for v in seen), timeout=10)
        lowered = {**before, "member1": before["member1"] - STUCK}
        assignments = [assigned(v) for v in seen]
        assert lowered in assignments, assignments  # our write: member1 down by exactly the stuck ones
        # nothing lower than that on the way, member2 never lowered, no full reschedule asked
        assert all(a.get("member1", 0) >= lowered["member1"] and a.get("member2", 0) >= before["member2"]
                   and sum(a.values()) >= REPLICAS - STUCK for a in assignments), assignments
        assert not [v["spec"]["rescheduleTriggeredAt"] for v in seen if "rescheduleTriggeredAt" in v["spec"]]
        # Karmada's scheduler assigned the 2 again by available replicas (seen: 5/5, ours 3/5, then its 4/6, one
        # each): its estimators count Node capacity, where Pending Pods take nothing, so member1 may get some back
        # (with a third member, the story's "member3", some would go there); those stay Pending until member1
        # finds room. Karmada's scheduler bumps schedulerObservedGeneration once more after its own spec write.
        assert sum(assigned(refilled).values()) == REPLICAS
    finally:
        for pod in stuck:  # so the descheduler never finds them past its own threshold later in the tier
            await delete_pod_now(member1, ns, pod)


async def test_nothing_unschedulable_moves_nothing(ours: Ours, karmada: KubeClient, scene: Scene) -> None:
    ns = scene.ns
    await propagate(karmada, ns, ["web"], REPLICAS)
    binding = await scheduled(karmada, ns, "web")
    rebalancer, finished = await scene.rebalance([scene.ref("web")])
    assert outcomes(finished) == {f"{ns}/web": ("Successful", "")}
    events = await events_of(karmada, rebalancer, NOTHING_TO_MOVE)
    threshold = format_duration(PRESERVE_THRESHOLD.total_seconds())
    assert [e["message"] for e in events] == [
        f"nothing had to move, no replica unschedulable for longer than {threshold}, for 1 workload(s): "
        f"apps/v1 Deployment {ns}/web"]
    await assert_untouched(karmada, binding)


# ---- fail closed --------------------------------------------------------------------------------------------


def job(name: str, parallelism: int) -> dict[str, Any]:
    """A Job of ``parallelism`` Pods: Karmada's default interpreter gives its binding that many replicas, so a
    dynamic weight divides it, but no estimator counts a Job's unschedulable Pods."""
    template = deployment(name, parallelism)["spec"]["template"]
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"parallelism": parallelism,
                     "template": {**template, "spec": {**template["spec"], "restartPolicy": "Never"}}}}


async def test_what_preserve_mode_cannot_judge_fails_and_moves_nothing(
        ours: Ours, karmada: KubeClient, scene: Scene) -> None:
    ns = scene.ns
    await karmada.create(PROPAGATION_POLICIES, policy("halves", divided=STATIC_HALVES), ns)
    await karmada.create(PROPAGATION_POLICIES, policy("jobs", selector={"apiVersion": "batch/v1", "kind": "Job"}), ns)
    await karmada.create(DEPLOYMENTS, deployment("halves", 2), ns)
    await karmada.create(JOBS, job("batch", 4), ns)
    halves = await wait_assigned(karmada, ns, "halves", lambda a: a == {"member1": 1, "member2": 1})
    batch = await wait_assigned(karmada, ns, "batch", lambda a: sum(a.values()) == 4, kind="Job")
    refs = [scene.ref("halves"), scene.ref("batch", "Job", "batch/v1")]

    rebalancer, finished = await scene.rebalance(refs)
    assert outcomes(finished) == {
        f"{ns}/halves": ("Failed", "NotDynamicDivided: the placement is StaticWeight; preserve mode needs Divided "
                                   "with a dynamicWeight or Aggregated"),
        f"{ns}/batch": ("Failed", f"UnsupportedKind: batch/v1 Job has no unschedulable-replica estimate "
                                  f"{RETRY_BOUND}")}
    for reason in ("NotDynamicDivided", "UnsupportedKind"):
        assert (await events_of(karmada, rebalancer, reason))[0]["type"] == "Warning"

    # a value other than true/false: not a guess either way (a full reschedule would move what the user keeps)
    _, finished = await scene.rebalance(refs, annotation="yes", name=f"{ns}-yes")
    why = f'InvalidPreserveAnnotation: {PRESERVE_ANNOTATION}="yes", want "true" or "false"'
    assert outcomes(finished) == {f"{ns}/halves": ("Failed", why), f"{ns}/batch": ("Failed", why)}
    for binding in (halves, batch):
        await assert_untouched(karmada, binding)


async def test_a_binding_last_scheduled_by_another_placement_fails_at_once(ours: Ours, karmada: KubeClient,
                                                                           scene: Scene) -> None:
    """The applied-placement annotation (the placement of the binding's last schedule) no longer
    ``spec.placement``, the scheduler done with the binding's generation: as Karmada's scheduler would, preserve
    mode takes ``spec.clusters`` as computed for another placement, and refuses to lower it. Karmada's scheduler
    acts on spec changes only, so it leaves the edited annotation alone while the test runs."""
    ns = scene.ns
    await propagate(karmada, ns, ["web"], 4)
    binding = await wait_assigned(karmada, ns, "web", lambda a: sum(a.values()) == 4)
    written = binding["metadata"]["annotations"][APPLIED_PLACEMENT_ANNOTATION]  # as Karmada's scheduler wrote it
    applied = json.loads(written)
    other = {**applied, "replicaScheduling": {**applied["replicaScheduling"], "weightPreference": STATIC_HALVES}}
    edited = await karmada.patch(RESOURCE_BINDINGS, binding["metadata"]["name"], namespace=ns, patch={
        "metadata": {"annotations": {APPLIED_PLACEMENT_ANNOTATION: json.dumps(other)}}})
    try:
        assert edited["metadata"]["generation"] == binding["metadata"]["generation"]  # no spec change: no schedule
        _, finished = await scene.rebalance([scene.ref("web")])
        assert outcomes(finished) == {f"{ns}/web": (
            "Failed", "AppliedPlacementDiffers: the placement of the last schedule is not spec.placement")}
        await assert_untouched(karmada, edited)
        now = await binding_of(karmada, ns, "web")
        assert now is not None and now["metadata"]["annotations"][APPLIED_PLACEMENT_ANNOTATION] == json.dumps(other)
    finally:  # byte for byte as Karmada's scheduler wrote it, for whatever comes next in the namespace's short life
        await karmada.patch(RESOURCE_BINDINGS, binding["metadata"]["name"], namespace=ns, patch={
            "metadata": {"annotations": {APPLIED_PLACEMENT_ANNOTATION: written}}})


async def test_scheduling_not_complete_fails_after_the_retry_timeout(ours: Ours, karmada: KubeClient,
                                                                     scene: Scene) -> None:
    """A binding Karmada's scheduler cannot place (no cluster fits its affinity) is never judged: retried, then
    Failed once the retry timeout has passed."""
    ns = scene.ns
    nowhere = policy("nowhere")
    nowhere["spec"]["placement"]["clusterAffinity"] = {"clusterNames": ["member3"]}
    await propagate(karmada, ns, ["web"], 2, nowhere)

    async def tried() -> dict[str, Any] | None:
        binding = await binding_of(karmada, ns, "web")
        status = (binding or {}).get("status") or {}
        return binding if find_condition(status.get("conditions"), "Scheduled") else None

    # Karmada's scheduler writes Scheduled=False (NoClusterFit, "0/2 clusters are available: 2 cluster(s) did not
    # match the placement cluster affinity constraint.") and no schedulerObservedGeneration, which it sets only
    # on a successful schedule: the refusal reads "no schedulerObservedGeneration != generation 1"
    binding: dict[str, Any] = await eventually(tried, timeout=SCHEDULED, interval=0.25)
    rebalancer, finished = await scene.rebalance([scene.ref("web")])
    result, reason = outcomes(finished)[f"{ns}/web"]
    assert (result, reason.partition(":")[0], reason.endswith(RETRY_BOUND)) == (
        "Failed", "SchedulingNotComplete", True), reason
    waited = parse_time(finished["status"]["finishTime"]) - parse_time(rebalancer["metadata"]["creationTimestamp"])
    assert waited >= PRESERVE_RETRY_TIMEOUT - timedelta(seconds=1), waited  # both stamps are whole seconds
    await assert_untouched(karmada, binding)


async def test_a_graceful_eviction_in_progress_fails_after_the_retry_timeout(ours: Ours, karmada: KubeClient,
                                                                              scene: Scene) -> None:
    """A NoExecute taint on member1: Karmada's taint manager moves the workload to member2 through a graceful
    eviction task, which stays until the new replicas are healthy (the readiness faker paused keeps them not
    ready); while it lasts the workload is not judged: retried, then Failed.

    The faker is paused before the workload exists. Had member2's first replicas become healthy, that status would
    still be on the binding when the eviction's schedule lands, and Karmada's graceful-eviction controller would
    take it for the new replicas' health and end the task at once (seen in a CI run; karmada-io/karmada#7129)."""
    ns = scene.ns

    async def evicting() -> dict[str, Any]:
        binding = await binding_of(karmada, ns, "web")
        assert binding is not None
        status = binding.get("status") or {}
        # moved, the eviction task still there, and the scheduler done with the eviction's spec change
        assert (assigned(binding) == {"member2": 4} and binding["spec"].get("gracefulEvictionTasks")
                and status.get("schedulerObservedGeneration") == binding["metadata"]["generation"]), (
            binding["metadata"]["generation"], binding["spec"], {k: v for k, v in status.items()
                                                                 if k != "aggregatedStatus"})
        return binding

    async with faker_paused(ours.plane):
        await propagate(karmada, ns, ["web"], 4)
        await wait_assigned(karmada, ns, "web", lambda a: a.get("member1", 0) > 0 and sum(a.values()) == 4)
        await set_taint(karmada, "member1", [{"key": "rp-preserve", "effect": "NoExecute"}])
        try:
            # the taint evicts every binding on member1 that does not tolerate it, as in test_failback.py
            binding: dict[str, Any] = await eventually(evicting, timeout=SCHEDULED, interval=0.25)
            _, finished = await scene.rebalance([scene.ref("web")])
            # before the faker is back and Karmada ends the eviction
            await assert_untouched(karmada, binding, karmada_edits_spec=True)
        finally:
            await set_taint(karmada, "member1", [])
    assert outcomes(finished) == {f"{ns}/web": ("Failed", f"GracefulEvictionInProgress: evicting from member1 "
                                                          f"{RETRY_BOUND}")}


@pytest.mark.realplane_last
async def test_a_member_that_cannot_answer_fails_closed(ours: Ours, karmada: KubeClient, scene: Scene) -> None:
    """member1's kube-apiserver killed: the estimator has no answer for member1, so the workload, which has
    replicas there, is not judged from member2's alone; Failed after the retry timeout, the binding as it was.
    Back within seconds, well before Karmada's cluster-status controller would call member1 NotReady (30 s) and its
    NoExecute taint evict everything there."""
    ns = scene.ns
    await propagate(karmada, ns, ["web"], REPLICAS)
    binding = await scheduled(karmada, ns, "web")
    plane: RefPlane = ours.plane
    reachable = 'estimator_member_reachable{cluster="member1"}'
    plane.send_signal("apiserver-member1", signal.SIGKILL)
    try:
        # a hung member (SIGSTOP) would not do: the member's watches just wait (their read deadline is minutes
        # away) and the caches keep answering; a closed connection fails the relist at once
        await eventually(lambda: not listening(MEMBER1_PORT), timeout=10)
        await eventually(lambda: _sample(ours.controller_manager, reachable, 0.0), timeout=20, interval=0.25)
        _, finished = await scene.rebalance([scene.ref("web")])
        assert outcomes(finished) == {f"{ns}/web": (
            "Failed", f"EstimatorUnavailable: no unschedulable-replica estimate for member1 {RETRY_BOUND}")}
        await assert_untouched(karmada, binding)
    finally:
        await anyio.to_thread.run_sync(plane.restart, "apiserver-member1")
    # our estimator reads member1 again at once; Karmada's work-status controller reflected member1's workload
    # status only ~30 s after the restart (seen on this plane): hence this test runs last in the tier
    await eventually(lambda: _sample(ours.controller_manager, reachable, 1.0), timeout=SCHEDULED, interval=0.5)
    cluster = await karmada.get(CLUSTERS, "member1")
    assert (find_condition(cluster["status"]["conditions"], "Ready") or {}).get("status") == "True"
    assert not cluster["spec"].get("taints"), cluster["spec"]


async def _sample(program: Program, series: str, value: float) -> bool:
    return await anyio.to_thread.run_sync(program.sample, series) == value
