"""Progressive fail-back on the real plane (issue 26): Karmada's taint manager evicts, ours brings the workloads back
at most ``--failback-max-concurrent`` at a time, and leaves the opted-out policy's workload where eviction put it.

A controller-manager of its own runs only ``clusterFailback`` on a Lease of its own, as in test_failback.py (the
session's controller-manager runs the rebalancer that executes what fail-back creates). The NoExecute taint evicts
every workload on member1 that does not tolerate it, the earlier tests' leftovers too: they are failed back with
ours, in binding order (namespace, then name), and share the budget; the bound is checked over every binding.
This file runs before test_failback.py (its name sorts first): that test stops its controller-manager once its own
workload is back, leaving the others' in-flight marks, which a later controller-manager inherits (restart safety) as
slots taken.

Seen on this plane: after the 3-second window a batch is healthy again about a second after it started (the
rebalancer, Karmada's fresh schedule by the static weights, its Work applied on member1, the readiness faker's Pods,
Karmada's status reflection and our binding-status aggregation), so the next batch starts then; five workloads and
the earlier tests' leftovers are back within some ten seconds of the taint's removal.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import anyio

from benchmarks.support import log_tail
from controller_manager import objects
from controller_manager.client import KubeClient
from controllers.failback.controller import EVENT_PAUSED, EVENT_RESUMED, EVENT_SKIPPED
from controllers.failback.progress import (
    CLUSTER_LABEL,
    OPT_OUT_ANNOTATION,
    PAUSED_ANNOTATION,
    RESUME_ANNOTATION,
    failing_back,
)
from controllers.failback.recovery import EVICTED_FROM_ANNOTATION
from karmada_api.resources import CLUSTERS, PROPAGATION_POLICIES, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from kube_api.resources import DEPLOYMENTS
from tests.conftest import eventually
from tests.realplane.conftest import Ours
from tests.realplane.support import (
    STATIC_HALVES,
    assigned,
    binding_of,
    delete_quietly,
    deployment,
    events_of,
    faker_paused,
    fresh_namespace,
    policy,
    set_taint,
    wait_assigned,
    watching,
)

CLUSTER = "member1"
LEASE = "rp-failback-progressive"
MAX_CONCURRENT = 2
WAVES = [f"wave-{k}" for k in range(1, 6)]
PINNED = "pinned"
HALVES = {"member1": 1, "member2": 1}
FAILED_BACK = 150.0  # seconds for every evicted workload, the earlier tests' ones included, to come back in batches


@dataclass
class Flights:
    """What a watch of every binding saw: those in flight to member1 now, the most in flight when one was put in
    flight (marks left by an earlier controller-manager are not its doing), and how many times each binding was."""

    now: set[str] = field(default_factory=set)
    most: int = 0
    started: Counter[str] = field(default_factory=Counter)

    def see(self, kind: str, binding: dict[str, Any]) -> None:
        key = objects.key(binding)
        if kind != "DELETED" and CLUSTER in failing_back(binding):
            if key not in self.now:
                self.started[key] += 1
                self.now.add(key)
                self.most = max(self.most, len(self.now))
        else:
            self.now.discard(key)


@dataclass
class Batches:
    """The workloads (``namespace/name``) each fail-back rebalancer for member1 listed, by rebalancer."""

    listed: dict[str, list[str]] = field(default_factory=dict)

    def see(self, kind: str, rebalancer: dict[str, Any]) -> None:
        if kind == "ADDED":
            self.listed[rebalancer["metadata"]["name"]] = [
                f"{w.get('namespace', '')}/{w['name']}" for w in rebalancer["spec"]["workloads"]]


async def test_a_recovered_cluster_gets_its_workloads_back_a_few_at_a_time(ours: Ours, karmada: KubeClient) -> None:
    failback = ours.launch("controller_manager", "failback-progressive-controller-manager",
                           "--controllers=clusterFailback", f"--leader-elect-resource-name={LEASE}",
                           "--failback-stabilization-window=3s", "--failback-rebalancer-ttl=0s",
                           f"--failback-max-concurrent={MAX_CONCURRENT}", "--failback-progress-deadline=60s",
                           "-v", "4")
    ns = ""
    flights, batches = Flights(), Batches()
    try:
        # it records evictions as they happen: it must lead before the taint
        await eventually(lambda: anyio.to_thread.run_sync(failback.leads, LEASE), timeout=30, interval=0.25)
        ns = await fresh_namespace(karmada, "rp-failback-waves")
        # static halves: Karmada's scheduler puts exactly one replica of each on member1, before the eviction and
        # after the fail-back's fresh schedule, whatever the earlier tests left on the members
        await karmada.create(PROPAGATION_POLICIES, policy("halves", divided=STATIC_HALVES), ns)
        pinned = policy("pinned", divided=STATIC_HALVES,
                        selector={"apiVersion": "apps/v1", "kind": "Deployment", "name": PINNED})
        pinned["metadata"]["annotations"] = {OPT_OUT_ANNOTATION: "true"}
        pinned["spec"]["priority"] = 1  # Karmada gives a workload the policy of highest priority that selects it
        await karmada.create(PROPAGATION_POLICIES, pinned, ns)
        for name in (*WAVES, PINNED):
            await karmada.create(DEPLOYMENTS, deployment(name, 2), ns)
        for name in (*WAVES, PINNED):
            await wait_assigned(karmada, ns, name, lambda a: a == HALVES)

        async with watching(karmada, RESOURCE_BINDINGS, flights.see), \
                watching(karmada, WORKLOAD_REBALANCERS, batches.see, label_selector=f"{CLUSTER_LABEL}={CLUSTER}"):
            await set_taint(karmada, CLUSTER, [{"key": "rp-failback-waves", "effect": "NoExecute"}])
            try:
                for name in (*WAVES, PINNED):
                    # Karmada's taint manager evicts (a graceful-eviction task from member1), its scheduler puts
                    # both replicas on member2, and our recorder notes member1 on the binding
                    await eventually(lambda n=name: _evicted(karmada, ns, n), timeout=60, interval=0.25)
            finally:
                await set_taint(karmada, CLUSTER, [])
            try:
                for name in WAVES:
                    await eventually(lambda n=name: _failed_back(karmada, ns, n), timeout=FAILED_BACK, interval=0.5)
            except AssertionError as exc:
                raise AssertionError(f"not all failed back: in flight {sorted(flights.now)}, batches "
                                     f"{batches.listed}\n{log_tail(failback.log)}") from exc

        assert flights.most <= MAX_CONCURRENT, flights
        assert flights.most == MAX_CONCURRENT, flights  # five of ours: the budget was used, not just never exceeded
        ours_listed = [w for listed in batches.listed.values() for w in listed if w.startswith(f"{ns}/")]
        assert sorted(ours_listed) == sorted(f"{ns}/{name}" for name in WAVES), batches  # each once, none repeated
        assert all(len(listed) <= MAX_CONCURRENT for listed in batches.listed.values()), batches
        assert all(flights.started[f"{ns}/{name}-deployment"] == 1 for name in WAVES), flights.started

        # the opted-out policy's workload: left on member2, told why, its record removed
        binding = await binding_of(karmada, ns, PINNED)
        assert binding is not None and assigned(binding) == {"member2": 2}, binding
        skipped = await events_of(karmada, binding, EVENT_SKIPPED)
        assert f"its PropagationPolicy {ns}/pinned opts out of fail-back" in skipped[0]["message"], skipped
        await eventually(lambda: _unrecorded(karmada, ns, PINNED), timeout=10, interval=0.25)
    finally:
        failback.stop()
        for name in batches.listed:
            await delete_quietly(karmada, WORKLOAD_REBALANCERS, name)
        if ns:  # left behind they would tilt the dynamic division of later tests' workloads
            for name in (*WAVES, PINNED):
                await delete_quietly(karmada, DEPLOYMENTS, name, ns)


PAUSE_LEASE = "rp-failback-paused"
STUCK = ["stuck-1", "stuck-2"]
PROGRESS_DEADLINE = 5  # seconds
QUIET_WHILE_PAUSED = 5.0  # seconds watched for a batch that must not start


async def test_a_stuck_batch_pauses_the_fail_back_until_the_operator_resumes_it(ours: Ours,
                                                                                karmada: KubeClient) -> None:
    """One workload at a time, the readiness faker paused after the eviction: the first batch never gets healthy on
    member1, so once the progress deadline has passed the cluster's fail-back pauses (annotation, Warning event)
    and the second workload waits; the operator's resume (the pause's own time) gives the first up and starts the
    second, which comes back once the faker runs again."""
    failback = ours.launch("controller_manager", "failback-paused-controller-manager",
                           "--controllers=clusterFailback", f"--leader-elect-resource-name={PAUSE_LEASE}",
                           "--failback-stabilization-window=3s", "--failback-rebalancer-ttl=0s",
                           "--failback-max-concurrent=1", f"--failback-progress-deadline={PROGRESS_DEADLINE}s",
                           "-v", "4")
    ns = ""
    flights, batches = Flights(), Batches()
    try:
        await eventually(lambda: anyio.to_thread.run_sync(failback.leads, PAUSE_LEASE), timeout=30, interval=0.25)
        ns = await fresh_namespace(karmada, "rp-failback-pause")
        await karmada.create(PROPAGATION_POLICIES, policy("halves", divided=STATIC_HALVES), ns)
        for name in STUCK:
            await karmada.create(DEPLOYMENTS, deployment(name, 2), ns)
        for name in STUCK:
            await wait_assigned(karmada, ns, name, lambda a: a == HALVES)
        first, second = (f"{ns}/{name}-deployment" for name in STUCK)

        async with watching(karmada, RESOURCE_BINDINGS, flights.see), \
                watching(karmada, WORKLOAD_REBALANCERS, batches.see, label_selector=f"{CLUSTER_LABEL}={CLUSTER}"):
            await set_taint(karmada, CLUSTER, [{"key": "rp-failback-pause", "effect": "NoExecute"}])
            try:
                for name in STUCK:  # evicted, and the eviction over (member2's replicas healthy: the faker runs)
                    await eventually(lambda n=name: _evicted(karmada, ns, n, settled=True), timeout=60, interval=0.25)
            except BaseException:
                await set_taint(karmada, CLUSTER, [])
                raise
            async with faker_paused(ours.plane):
                await set_taint(karmada, CLUSTER, [])
                cluster = await eventually(lambda: _paused(karmada), timeout=60, interval=0.25)
                paused_at = objects.annotations(cluster)[PAUSED_ANNOTATION]
                warning = (await events_of(karmada, cluster, EVENT_PAUSED))[-1]
                assert warning["type"] == "Warning" and f"{ns}/{STUCK[0]}" in warning["message"], warning
                assert flights.started[first] == 1 and second not in flights.started, flights
                # paused: the second workload waits, however long (watched for a few seconds)
                with anyio.move_on_after(QUIET_WHILE_PAUSED):
                    await eventually(lambda: second in flights.started, timeout=QUIET_WHILE_PAUSED + 1)
                assert second not in flights.started, flights

                # the operator resumes the pause that began at paused_at: the stuck one is given up
                await karmada.patch(CLUSTERS, CLUSTER, {"metadata": {"annotations": {RESUME_ANNOTATION: paused_at}}})
                resumed = (await events_of(karmada, cluster, EVENT_RESUMED))[-1]
                assert f"{ns}/{STUCK[0]}" in resumed["message"], resumed
            # the faker back: the second batch (started by the resume, or about to) gets healthy
            await eventually(lambda: _failed_back(karmada, ns, STUCK[1]), timeout=FAILED_BACK, interval=0.5)
        assert flights.most == 1 and flights.started[second] == 1, flights
        assert PAUSED_ANNOTATION not in objects.annotations(await karmada.get(CLUSTERS, CLUSTER))
        # the one given up: its record and mark gone, left as Karmada's scheduler placed it (it gets healthy too)
        await eventually(lambda: _failed_back(karmada, ns, STUCK[0]), timeout=FAILED_BACK, interval=0.5)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{log_tail(failback.log)}") from exc
    finally:
        failback.stop()
        await karmada.patch(CLUSTERS, CLUSTER, {"metadata": {"annotations": {RESUME_ANNOTATION: None}}})
        for name in batches.listed:
            await delete_quietly(karmada, WORKLOAD_REBALANCERS, name)
        if ns:
            for name in STUCK:
                await delete_quietly(karmada, DEPLOYMENTS, name, ns)


async def _paused(karmada: KubeClient) -> dict[str, Any] | None:
    cluster = await karmada.get(CLUSTERS, CLUSTER)
    return cluster if PAUSED_ANNOTATION in objects.annotations(cluster) else None


async def _evicted(karmada: KubeClient, ns: str, name: str, *, settled: bool = False) -> bool:
    """Off member1 and recorded; ``settled``: the graceful-eviction task gone too."""
    binding = await binding_of(karmada, ns, name)
    return (binding is not None and assigned(binding) == {"member2": 2} and CLUSTER in objects.annotations(
        binding).get(EVICTED_FROM_ANNOTATION, "").split(",")
        and not (settled and binding["spec"].get("gracefulEvictionTasks")))


async def _failed_back(karmada: KubeClient, ns: str, name: str) -> bool:
    """Back on member1 (Karmada's scheduler, asked by the rebalancer), healthy, its fail-back over."""
    binding = await binding_of(karmada, ns, name)
    return (binding is not None and assigned(binding) == HALVES and not failing_back(binding)
            and EVICTED_FROM_ANNOTATION not in objects.annotations(binding))


async def _unrecorded(karmada: KubeClient, ns: str, name: str) -> bool:
    binding = await binding_of(karmada, ns, name)
    return binding is not None and EVICTED_FROM_ANNOTATION not in objects.annotations(binding)
