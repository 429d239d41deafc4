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

import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import anyio

from benchmarks.support import log_tail
from controller_manager import objects
from controller_manager.client import KubeClient
from controllers.failback.progress import (
    CLUSTER_LABEL,
    OPT_OUT_ANNOTATION,
    PAUSED_ANNOTATION,
    RESUME_ANNOTATION,
    failing_back,
)
from controllers.failback.reasons import EVENT_PAUSED, EVENT_RESUMED, EVENT_SKIPPED
from controllers.failback.recovery import EVICTED_FROM_ANNOTATION
from karmada_api.resources import CLUSTERS, PROPAGATION_POLICIES, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from kube_api.resources import DEPLOYMENTS
from tests.conftest import eventually
from tests.realplane.conftest import Ours, Program
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


TWO = ["first", "second"]
ONE_AT_A_TIME = ["--controllers=clusterFailback", "--failback-stabilization-window=3s", "--failback-rebalancer-ttl=0s",
                 "--failback-max-concurrent=1", "-v", "4"]
QUIET = 5.0  # seconds watched for a batch that must not start


@dataclass
class OneAtATime:
    """Two workloads (``first``, ``second``: 2 replicas each, static halves) in a fresh namespace, fail-back one at
    a time by ``program``, and what the watches saw of their bindings and fail-back rebalancers."""

    ours: Ours
    karmada: KubeClient
    program: Program
    ns: str = ""
    flights: Flights = field(default_factory=Flights)
    batches: Batches = field(default_factory=Batches)
    paused: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)
    """The readiness faker's pause, when the eviction was left running (:func:`evicted_two`)."""

    async def resume_faker(self) -> None:
        await self.paused.aclose()

    def key(self, name: str) -> str:
        return f"{self.ns}/{name}-deployment"

    async def not_started_for_a_while(self, name: str) -> None:
        """``name`` not put in flight while watched for :data:`QUIET` seconds."""
        with anyio.move_on_after(QUIET):
            await eventually(lambda: self.key(name) in self.flights.started, timeout=QUIET + 1)
        assert self.key(name) not in self.flights.started, self.flights

    async def failed_back(self, name: str) -> None:
        await eventually(lambda: _failed_back(self.karmada, self.ns, name), timeout=FAILED_BACK, interval=0.5)

    @contextlib.asynccontextmanager
    async def recovering_unhealthy(self) -> AsyncIterator[None]:
        """The taint removed with the readiness faker paused: what fails back to member1 does not get healthy
        until the faker runs again, when the block leaves."""
        async with faker_paused(self.ours.plane):
            await set_taint(self.karmada, CLUSTER, [])
            yield


@contextlib.asynccontextmanager
async def evicted_two(ours: Ours, karmada: KubeClient, lease: str, *flags: str,
                      settled: bool = True) -> AsyncIterator[OneAtATime]:
    """:class:`OneAtATime` led by a fail-back controller-manager of its own (``lease``, ``flags``), evicted from
    member1 by a NoExecute taint, the eviction over (member2's replicas healthy). ``settled`` False: the taint comes
    with the readiness faker paused (until :meth:`OneAtATime.resume_faker`), so member2's new replicas are not ready
    and Karmada's graceful-eviction tasks stay. It is paused before the workloads exist: member2's first replicas,
    had they become healthy, would leave that health on the binding when the eviction's schedule lands, and
    Karmada's graceful-eviction controller would take it for the new replicas' and end the task at once (an
    upstream race, karmada-io/karmada#7129). The watches run until the block leaves; then everything is taken
    away (the taint too); on failure the controller-manager's log is shown."""
    program = ours.launch("controller_manager", f"{lease}-controller-manager", *ONE_AT_A_TIME,
                          f"--leader-elect-resource-name={lease}", *flags)
    scene = OneAtATime(ours, karmada, program)
    try:
        await eventually(lambda: anyio.to_thread.run_sync(program.leads, lease), timeout=30, interval=0.25)
        scene.ns = await fresh_namespace(karmada, lease)
        if not settled:  # before the replicas exist, see the docstring
            await scene.paused.enter_async_context(faker_paused(ours.plane))
        await karmada.create(PROPAGATION_POLICIES, policy("halves", divided=STATIC_HALVES), scene.ns)
        for name in TWO:
            await karmada.create(DEPLOYMENTS, deployment(name, 2), scene.ns)
        for name in TWO:
            await wait_assigned(karmada, scene.ns, name, lambda a: a == HALVES)
        # one at a time, in binding order: an earlier test's binding still recorded for member1 would take the slot
        await eventually(lambda: _none_recorded(karmada), timeout=60, interval=0.5)
        async with watching(karmada, RESOURCE_BINDINGS, scene.flights.see), \
                watching(karmada, WORKLOAD_REBALANCERS, scene.batches.see,
                         label_selector=f"{CLUSTER_LABEL}={CLUSTER}"):
            await set_taint(karmada, CLUSTER, [{"key": lease, "effect": "NoExecute"}])
            for name in TWO:
                await eventually(lambda n=name: _evicted(karmada, scene.ns, n, settled=settled), timeout=60,
                                 interval=0.25)
            yield scene
    except AssertionError as exc:
        states = [await _binding_state(karmada, scene.ns, name) for name in TWO] if scene.ns else []
        raise AssertionError("\n".join([str(exc), *states, "fail-back controller-manager:", log_tail(program.log),
                                         "session controller-manager:",
                                         log_tail(ours.controller_manager.log, 40)])) from exc
    finally:
        await scene.resume_faker()
        program.stop()
        await set_taint(karmada, CLUSTER, [])
        await karmada.patch(CLUSTERS, CLUSTER, {"metadata": {"annotations": {RESUME_ANNOTATION: None}}})
        for name in scene.batches.listed:
            await delete_quietly(karmada, WORKLOAD_REBALANCERS, name)
        if scene.ns:
            for name in TWO:
                await delete_quietly(karmada, DEPLOYMENTS, name, scene.ns)


async def test_a_stuck_batch_pauses_the_fail_back_until_the_operator_resumes_it(ours: Ours,
                                                                                karmada: KubeClient) -> None:
    """The first batch never gets healthy on member1, so once the progress deadline has passed the cluster's
    fail-back pauses (annotation, Warning event) and the second workload waits; the operator's resume (the pause's
    own time) gives the first up and starts the second, which comes back once the faker runs again."""
    async with evicted_two(ours, karmada, "rp-failback-paused", "--failback-progress-deadline=5s") as scene:
        async with scene.recovering_unhealthy():
            cluster = await eventually(lambda: _paused(karmada), timeout=60, interval=0.25)
            paused_at = objects.annotations(cluster)[PAUSED_ANNOTATION]
            warning = await _event_naming(karmada, cluster, EVENT_PAUSED, f"{scene.ns}/first")
            assert warning["type"] == "Warning", warning
            assert scene.flights.started[scene.key("first")] == 1, scene.flights
            await scene.not_started_for_a_while("second")  # paused: it waits, however long

            # the operator resumes the pause that began at paused_at: the stuck one is given up, the next starts
            await karmada.patch(CLUSTERS, CLUSTER, {"metadata": {"annotations": {RESUME_ANNOTATION: paused_at}}})
            await _event_naming(karmada, cluster, EVENT_RESUMED, f"{scene.ns}/first")
        # the faker back: the second batch gets healthy; the one given up (its record and mark gone) is left as
        # Karmada's scheduler placed it, and gets healthy too
        await scene.failed_back("second")
        await scene.failed_back("first")
        assert scene.flights.most == 1 and scene.flights.started[scene.key("second")] == 1, scene.flights
        assert PAUSED_ANNOTATION not in objects.annotations(await karmada.get(CLUSTERS, CLUSTER))


async def test_a_fail_back_killed_in_the_middle_goes_on_where_it_stopped(ours: Ours, karmada: KubeClient) -> None:
    """SIGKILL while the first batch is in flight: the controller-manager started again (as a Pod's container is)
    finds the in-flight mark, keeps it as the one slot taken rather than starting the second workload, and each
    workload is failed back exactly once."""
    lease = "rp-failback-restart"
    timings = ("--failback-progress-deadline=120s", "--leader-elect-lease-duration=4s",
               "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s")
    async with evicted_two(ours, karmada, lease, *timings) as scene:
        async with scene.recovering_unhealthy():
            await eventually(lambda: scene.key("first") in scene.flights.now, timeout=60, interval=0.25)
            killed = scene.program.proc
            assert killed is not None
            killed.kill()  # no goodbye: its Lease runs out, its marks stay

            async def successor_leads() -> bool:
                return scene.program.proc is not killed and await anyio.to_thread.run_sync(scene.program.leads,
                                                                                           lease)

            await eventually(successor_leads, timeout=60, interval=0.25)
            await scene.not_started_for_a_while("second")
        await scene.failed_back("first")
        await scene.failed_back("second")
        flights = scene.flights
        assert flights.most == 1 and flights.started[scene.key("first")] == 1, flights
        assert flights.started[scene.key("second")] == 1, flights
        listed = [w for names in scene.batches.listed.values() for w in names]
        assert sorted(listed) == [f"{scene.ns}/first", f"{scene.ns}/second"], scene.batches  # no batch made twice


async def test_a_relapse_stops_the_fail_back_until_the_cluster_recovers_again(ours: Ours,
                                                                               karmada: KubeClient) -> None:
    """member1 tainted again while the first batch is in flight: Karmada evicts it again (our recorder makes it
    pending again) and nothing more starts while the cluster is tainted; once it recovers, both come back after a
    new window."""
    async with evicted_two(ours, karmada, "rp-failback-relapse", "--failback-progress-deadline=120s") as scene:
        async with scene.recovering_unhealthy():
            await eventually(lambda: scene.key("first") in scene.flights.now, timeout=60, interval=0.25)
            await set_taint(karmada, CLUSTER, [{"key": "rp-failback-relapse", "effect": "NoExecute"}])
            await eventually(lambda: _evicted(karmada, scene.ns, "first"), timeout=60, interval=0.25)
            await scene.not_started_for_a_while("second")
        # the faker back, the cluster still tainted: the eviction ends (member2's replicas healthy), nothing starts
        for name in TWO:
            await eventually(lambda n=name: _evicted(karmada, scene.ns, n, settled=True), timeout=60, interval=0.25)
        assert scene.key("second") not in scene.flights.started, scene.flights
        await set_taint(karmada, CLUSTER, [])
        await scene.failed_back("first")
        await scene.failed_back("second")
        flights = scene.flights
        assert flights.most == 1, flights
        assert flights.started[scene.key("first")] == 2 and flights.started[scene.key("second")] == 1, flights


async def test_a_fail_back_waits_until_karmadas_graceful_eviction_has_ended(ours: Ours, karmada: KubeClient) -> None:
    """member1 recovers while Karmada's graceful eviction from it still runs (member2's new replicas not ready), so
    its tasks stay on the bindings, and Karmada's scheduler would leave member1 out of a fresh schedule: nothing is
    failed back, though the window is over. Once the eviction has ended, both come back, each once."""
    async with evicted_two(ours, karmada, "rp-failback-evicting", settled=False) as scene:
        await set_taint(karmada, CLUSTER, [])
        await scene.not_started_for_a_while("first")  # 5 s, the 3-second window included
        for name in TWO:
            binding = await binding_of(karmada, scene.ns, name)
            assert binding is not None and binding["spec"].get("gracefulEvictionTasks"), binding  # still running
        await scene.resume_faker()
        await scene.failed_back("first")
        await scene.failed_back("second")
        assert scene.flights.started[scene.key("first")] == 1, scene.flights
        assert scene.flights.started[scene.key("second")] == 1, scene.flights


async def test_an_eviction_while_no_recorder_ran_is_failed_back_from_karmadas_event(ours: Ours,
                                                                                      karmada: KubeClient) -> None:
    """The fail-back controller-manager stopped for a whole eviction (Karmada's task added and removed): nothing on
    the bindings says so, but Karmada's EvictWorkloadFromClusterSucceed Events do; started again once member1
    has recovered, it records and fails both back."""
    lease = "rp-failback-away"
    async with evicted_two(ours, karmada, lease) as scene:
        scene.program.stop()  # no recorder from here on
        for name in TWO:
            binding = await binding_of(karmada, scene.ns, name)
            assert binding is not None
            await karmada.patch(RESOURCE_BINDINGS, objects.name(binding), namespace=scene.ns,  # as if never seen
                                patch={"metadata": {"annotations": {EVICTED_FROM_ANNOTATION: None}}})
        await set_taint(karmada, CLUSTER, [])
        successor = ours.launch("controller_manager", f"{lease}-successor", *ONE_AT_A_TIME,
                                f"--leader-elect-resource-name={lease}")
        try:
            await scene.failed_back("first")
            await scene.failed_back("second")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{log_tail(successor.log)}") from exc
        finally:
            successor.stop()
        listed = [w for names in scene.batches.listed.values() for w in names]
        assert sorted(listed) == [f"{scene.ns}/first", f"{scene.ns}/second"], scene.batches


async def _none_recorded(karmada: KubeClient) -> bool:
    """No binding recorded as evicted from member1 or in flight back to it."""
    bindings = (await karmada.list(RESOURCE_BINDINGS)).get("items") or []
    return not [objects.key(b) for b in bindings if CLUSTER in failing_back(b) or CLUSTER in objects.annotations(
        b).get(EVICTED_FROM_ANNOTATION, "").split(",")]


async def _event_naming(karmada: KubeClient, cluster: dict[str, Any], reason: str, text: str) -> dict[str, Any]:
    """The Cluster's Event of ``reason`` whose message names ``text`` (an earlier one, of an earlier test or run,
    may come first: the recorder writes Events after the annotations)."""

    async def found() -> dict[str, Any] | None:
        return next((e for e in await events_of(karmada, cluster, reason) if text in e["message"]), None)

    result: dict[str, Any] = await eventually(found, timeout=30, interval=0.5)
    return result


async def _paused(karmada: KubeClient) -> dict[str, Any] | None:
    cluster = await karmada.get(CLUSTERS, CLUSTER)
    return cluster if PAUSED_ANNOTATION in objects.annotations(cluster) else None


async def _binding_state(karmada: KubeClient, ns: str, name: str) -> str:
    """What a failure needs to tell of a binding: generation, schedule, eviction tasks, each cluster's health."""
    binding = await binding_of(karmada, ns, name)
    if binding is None:
        return f"{ns}/{name}: no binding"
    status = binding.get("status") or {}
    health = {item.get("clusterName"): (item.get("applied"), item.get("health"))
              for item in status.get("aggregatedStatus") or []}
    return (f"{ns}/{name}: generation {objects.metadata(binding).get('generation')} scheduled "
            f"{status.get('schedulerObservedGeneration')} clusters {assigned(binding)} tasks "
            f"{binding['spec'].get('gracefulEvictionTasks')} health {health} annotations "
            f"{ {k: v for k, v in objects.annotations(binding).items() if 'failback' in k} }")


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
