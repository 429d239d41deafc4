"""The workload-rebalancer's preserve mode against the dev API server, with real informers.

Most tests use a test double with ``EstimatorClient.unschedulable_replicas``'s signature (confirmed
unschedulable replicas per cluster; a cluster left out could not be judged): what the member clusters
hold is the estimator's business (tests/descheduler/test_descheduler.py covers it on dev members), here
only what the controller does with each answer. One test plays #7662's user story with the real
estimator reading two dev member API servers. No scheduler runs, so a binding changes only when the
controller writes it.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest
from prometheus_client import REGISTRY

from controller_manager.client import KubeClient
from controller_manager.manager import Manager, ManagerOptions
from controller_manager.objects import Obj
from controller_manager.ratelimiter import RateLimiterOptions
from controllers import workloadrebalancer
from controllers.preserve import RETRY_SINCE_ANNOTATION, PreserveOptions
from controllers.writemark import ANNOTATION
from devplane.apiserver.server import ApiServer
from estimator.client import EstimatorClient
from estimator.podselectors import BUILTIN_KINDS
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from karmada_api.rebalancers import PRESERVE_ANNOTATION, rebalancer_body
from tests.clusteraccess.test_clusteraccess import Plane, add_deployment, add_node, add_pod, control_plane, register
from tests.conftest import events_about, eventually, running, send
from tests.controllers.test_workloadrebalancer import WR, finished, observed

RB = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
DYNAMIC = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
STATIC = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}
LONG = timedelta(hours=1)
SHORT = timedelta(seconds=1)


class Estimator:
    """``EstimatorClient.unschedulable_replicas`` as a test double: fixed answers per workload name, the calls
    it got, and an optional hook run on each call (to change the binding while the controller decides)."""

    def __init__(self) -> None:
        self.answers: dict[str, dict[str, int]] = {}
        self.calls: list[tuple[list[str], str, timedelta]] = []
        self.on_call: Callable[[], Any] | None = None

    async def __call__(self, clusters: list[str], resource: Obj, threshold: timedelta) -> dict[str, int]:
        self.calls.append((list(clusters), str(resource.get("name")), threshold))
        if self.on_call is not None:
            await self.on_call()
        answers = self.answers.get(str(resource.get("name")), {})
        return {name: answers[name] for name in clusters if name in answers}


@contextlib.asynccontextmanager
async def start(kube: KubeClient, options: PreserveOptions) -> AsyncIterator[Manager]:
    mgr = Manager(kube, ManagerOptions(name="test-cm", metrics_bind_address="0", health_probe_bind_address="0"))
    workloadrebalancer.setup(mgr, workers=2, rate_limiter_options=RateLimiterOptions(base_delay=0.05, max_delay=0.5),
                             preserve_options=options)
    async with running(mgr):
        yield mgr


@pytest.fixture
def estimator() -> Estimator:
    return Estimator()


@pytest.fixture
async def manager(kube: KubeClient, estimator: Estimator) -> AsyncIterator[Manager]:
    """Preserve mode on; transient causes retried for an hour (never Failed within a test)."""
    async with start(kube, PreserveOptions(estimator, timedelta(minutes=5), LONG)) as mgr:
        yield mgr


@pytest.fixture
async def impatient(kube: KubeClient, estimator: Estimator) -> AsyncIterator[Manager]:
    """Preserve mode on, with no retry at all: a transient cause fails at once."""
    async with start(kube, PreserveOptions(estimator, timedelta(minutes=5), timedelta(0))) as mgr:
        yield mgr


@pytest.fixture
async def disabled(kube: KubeClient) -> AsyncIterator[Manager]:
    """The controller-manager without --enable-preserve-available-replicas (a short retry timeout)."""
    async with start(kube, PreserveOptions(retry_timeout=SHORT)) as mgr:
        yield mgr


def ref(name: str) -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": "default"}


async def scheduled_binding(http: aiohttp.ClientSession, name: str, *, clusters: dict[str, int] | None = None,
                            placement: dict[str, Any] | None = None, applied: dict[str, Any] | None = None,
                            kind: str = "Deployment", api_version: str = "apps/v1", observed_generation: int | None = 1,
                            evicting: str = "", reported: bool = True) -> dict[str, Any]:
    """A binding as Karmada's scheduler leaves it: #7662's user story by default (10 replicas, member1 6, member2 4).

    ``reported``: each assigned cluster's workload status collected, with no Pod ready (so no ready floor)."""
    clusters = {"member1": 6, "member2": 4} if clusters is None else clusters
    placement = DYNAMIC if placement is None else placement
    spec: dict[str, Any] = {
        "resource": {"apiVersion": api_version, "kind": kind, "namespace": "default", "name": name},
        "replicas": sum(clusters.values()), "placement": placement,
        "clusters": [{"name": n, "replicas": r} for n, r in clusters.items()]}
    if evicting:
        spec["gracefulEvictionTasks"] = [{"fromCluster": evicting, "reason": "TaintUntolerated",
                                          "producer": "TaintManager"}]
    body = {"metadata": {"name": f"{name}-{kind.lower()}",
                         "annotations": {APPLIED_PLACEMENT_ANNOTATION: json.dumps(applied or placement)}},
            "spec": spec}
    created = await send(http, "POST", RB, body)
    status: dict[str, Any] = {"conditions": [{"type": "Scheduled", "status": "True", "reason": "Success",
                                              "message": "Binding has been scheduled successfully.",
                                              "lastTransitionTime": "2026-11-27T10:00:00Z"}]}
    if observed_generation is not None:
        status["schedulerObservedGeneration"] = observed_generation
    if reported:
        status["aggregatedStatus"] = [{"clusterName": n, "applied": True, "status": {"replicas": r}}
                                      for n, r in clusters.items()]
    return await send(http, "PATCH", f"{RB}/{created['metadata']['name']}/status", {"status": status})


async def binding(http: aiohttp.ClientSession, name: str) -> dict[str, Any]:
    return await send(http, "GET", f"{RB}/{name}-deployment")


def assigned(rb: dict[str, Any]) -> dict[str, int]:
    return {c["name"]: c["replicas"] for c in rb["spec"]["clusters"]}


async def create(http: aiohttp.ClientSession, name: str, workloads: list[str | dict[str, str]],
                 annotation: str = "true") -> dict[str, Any]:
    """A rebalancer with the preserve annotation (``annotation`` its value) for ``workloads`` (names of Deployments
    in default, or references)."""
    refs = [ref(w) if isinstance(w, str) else w for w in workloads]
    body = rebalancer_body({"name": name, "annotations": {PRESERVE_ANNOTATION: annotation}}, refs, None)
    return await send(http, "POST", WR, body)


def retries() -> float:
    return REGISTRY.get_sample_value("workload_rebalancer_workloads_total", {"result": "Retry"}) or 0.0


async def messages(http: aiohttp.ClientSession, wr: dict[str, Any], reason: str) -> list[str]:
    return [e["message"] for e in await events_about(http, wr, reason)]


# ---- what moves -------------------------------------------------------------------------------------------


async def test_the_user_story_lowers_only_the_unschedulable_replicas(manager: Manager, estimator: Estimator,
                                                                      http: aiohttp.ClientSession) -> None:
    before = await scheduled_binding(http, "web")
    estimator.answers["web"] = {"member1": 2, "member2": 0}
    wr = await create(http, "story", ["web"])
    done = await finished(http, "story")
    assert observed(done) == [("web", "Successful", "")]
    after = await binding(http, "web")
    assert assigned(after) == {"member1": 4, "member2": 4}
    assert after["spec"]["replicas"] == 10  # the scheduler places the 2 missing ones by its scale-up path
    assert "rescheduleTriggeredAt" not in after["spec"]
    assert {k: v for k, v in after["spec"].items() if k != "clusters"} == \
        {k: v for k, v in before["spec"].items() if k != "clusters"}
    # nothing but the mark of the write (controllers.writemark): which rebalancer lowered it, by how much
    assert after["metadata"]["annotations"] == {
        **before["metadata"]["annotations"],
        ANNOTATION: json.dumps([{"lowered": {"member1": 2}, "uid": wr["metadata"]["uid"]}], separators=(",", ":"))}
    assert estimator.calls == [(["member1", "member2"], "web", timedelta(minutes=5))]
    assert await messages(http, wr, workloadrebalancer.PRESERVED) == [
        "unschedulable replicas released, the available ones kept, for 1 workload(s): "
        "apps/v1 Deployment default/web (member1 -2)"]


@pytest.mark.parametrize("fault", ["the answer to the binding update is lost", "the status write fails"])
async def test_a_retry_never_lowers_a_binding_twice(manager: Manager, estimator: Estimator, server: ApiServer,
                                                    http: aiohttp.ClientSession, fault: str) -> None:
    """The lowering lands, but the controller does not learn it (a 504 after the write) or cannot store the result
    (the status write fails twice). The members still count the 2 released replicas as Pending (the estimator's
    answer is unchanged), so deciding again would take 2 more from member1's 4 running replicas."""
    await scheduled_binding(http, "web")
    estimator.answers["web"] = {"member1": 2, "member2": 0}
    if fault == "the answer to the binding update is lost":
        server.inject_fault("PUT", "/resourcebindings/web-deployment", code=504, reason="Timeout",
                            after_dispatch=True)
    else:
        server.inject_fault("PATCH", "/workloadrebalancers/twice/status", code=503, reason="ServiceUnavailable",
                            times=2)
    await create(http, "twice", ["web"])
    assert observed(await finished(http, "twice")) == [("web", "Successful", "")]
    assert assigned(await binding(http, "web")) == {"member1": 4, "member2": 4}


@pytest.mark.parametrize("fresh_read_fails", [False, True])
async def test_a_lost_answer_is_reported_as_the_lowering_it_was_even_from_a_cache_behind(
        manager: Manager, estimator: Estimator, server: ApiServer, http: aiohttp.ClientSession,
        fresh_read_fails: bool) -> None:
    """The lowering lands but its answer is lost (504), the bindings' watch is down so the informer's copy still
    shows the binding as before, and the released replicas are gone from member1 by the retry (the estimator
    answers 0). Deciding on that copy would write nothing and report "nothing had to move"; the retry reads the
    binding from the API server (again on the next retry, if that read fails too) and reports the lowering."""
    await scheduled_binding(http, "web")
    estimator.answers["web"] = {"member1": 2, "member2": 0}

    async def released_by_the_retry() -> None:
        if len(estimator.calls) > 1:
            estimator.answers["web"] = {"member1": 0, "member2": 0}

    estimator.on_call = released_by_the_retry
    # The cluster-wide path only: the bindings' LIST and WATCH fail, a GET of one binding is served.
    server.inject_fault("GET", "v1alpha2/resourcebindings", code=500, times=1_000_000)
    server.store.close_watchers()
    server.inject_fault("PUT", "/resourcebindings/web-deployment", code=504, reason="Timeout", after_dispatch=True)
    if fresh_read_fails:
        server.inject_fault("GET", "/resourcebindings/web-deployment", code=503, reason="ServiceUnavailable")
    wr = await create(http, "lost", ["web"])
    assert observed(await finished(http, "lost")) == [("web", "Successful", "")]
    assert assigned(await binding(http, "web")) == {"member1": 4, "member2": 4}
    assert await events_about(http, wr, "NothingToMove") == []
    assert len(await events_about(http, wr, "AvailableReplicasPreserved")) == 1


@pytest.mark.parametrize("meanwhile", ["the rebalancer is edited", "the scheduler puts one back on member1"])
async def test_a_lowering_whose_result_is_not_stored_yet_is_never_made_again(
        manager: Manager, estimator: Estimator, server: ApiServer, http: aiohttp.ClientSession, meanwhile: str) -> None:
    """The lowering lands while the status write keeps failing; meanwhile the rebalancer's spec is edited (a new
    generation) or the scheduler changes the binding's clusters. The members still count the 2 released replicas
    as Pending: the retry must recognise its own lowering by the binding's generation, not decide again."""
    await scheduled_binding(http, "web")
    await scheduled_binding(http, "api")
    estimator.answers["web"] = {"member1": 2, "member2": 0}
    estimator.answers["api"] = {"member1": 0, "member2": 0}
    failing = server.inject_fault("PATCH", "/workloadrebalancers/edited/status", code=503,
                                  reason="ServiceUnavailable", times=1_000_000)
    await create(http, "edited", ["web"])
    await eventually(lambda: lowered(http, "web"))
    if meanwhile == "the rebalancer is edited":
        await send(http, "PATCH", f"{WR}/edited", {"spec": {"workloads": [ref("web"), ref("api")]}})
        expected = {"member1": 4, "member2": 4}
    else:
        await send(http, "PATCH", f"{RB}/web-deployment", {"spec": {"clusters": [{"name": "member1", "replicas": 5},
                                                                                  {"name": "member2", "replicas": 5}]}})
        expected = {"member1": 5, "member2": 5}
    seen = failing.times
    await eventually(lambda: failing.times <= seen - 2, timeout=15)  # retried since
    failing.times = 0
    done = await finished(http, "edited")
    assert ("web", "Successful", "") in observed(done)
    assert assigned(await binding(http, "web")) == expected


async def test_a_restarted_controller_never_lowers_a_binding_twice(kube: KubeClient, estimator: Estimator,
                                                                   server: ApiServer,
                                                                   http: aiohttp.ClientSession) -> None:
    """The lowering lands, the status write fails, and the controller-manager restarts before the result is stored:
    the new process remembers nothing of its write, and the members still count the 2 released replicas as
    Pending. It finds its write in the binding (the mark) and reports it, without lowering again."""
    await scheduled_binding(http, "web")
    estimator.answers["web"] = {"member1": 2, "member2": 0}
    failing = server.inject_fault("PATCH", "/workloadrebalancers/restarted/status", code=503,
                                  reason="ServiceUnavailable", times=1_000_000)
    options = PreserveOptions(estimator, timedelta(minutes=5), LONG)
    async with start(kube, options):
        wr = await create(http, "restarted", ["web"])
        await eventually(lambda: lowered(http, "web"))
        seen = failing.times
        await eventually(lambda: failing.times < seen)  # the result could not be stored
    failing.times = 0
    async with start(kube, options):
        assert observed(await finished(http, "restarted")) == [("web", "Successful", "")]
        assert await eventually(lambda: messages(http, wr, workloadrebalancer.PRESERVED)) == [
            "unschedulable replicas released, the available ones kept, for 1 workload(s): "
            "apps/v1 Deployment default/web (member1 -2)"]
    assert assigned(await binding(http, "web")) == {"member1": 4, "member2": 4}


async def test_a_lowering_is_not_followed_by_a_trigger_when_preserve_mode_is_switched_off_before_its_result(
        manager: Manager, estimator: Estimator, server: ApiServer, http: aiohttp.ClientSession) -> None:
    """The lowering lands, the status write fails, and the user sets the annotation to "false" meanwhile (no new
    generation): the retry, now in the fresh-reschedule mode, finds this rebalancer's lowering on the binding and
    reports it, rather than trigger a full reschedule on top of it."""
    await scheduled_binding(http, "web")
    estimator.answers["web"] = {"member1": 2, "member2": 0}
    failing = server.inject_fault("PATCH", "/workloadrebalancers/switched/status", code=503,
                                  reason="ServiceUnavailable", times=1_000_000)
    wr = await create(http, "switched", ["web"])
    await eventually(lambda: lowered(http, "web"))
    await send(http, "PATCH", f"{WR}/switched", {"metadata": {"annotations": {PRESERVE_ANNOTATION: "false"}}})
    seen = failing.times
    await eventually(lambda: failing.times <= seen - 2, timeout=15)  # retried since, in the other mode
    failing.times = 0
    assert observed(await finished(http, "switched")) == [("web", "Successful", "")]
    after = await binding(http, "web")
    assert "rescheduleTriggeredAt" not in after["spec"]
    assert assigned(after) == {"member1": 4, "member2": 4}
    assert await eventually(lambda: messages(http, wr, workloadrebalancer.PRESERVED)) == [
        "unschedulable replicas released, the available ones kept, for 1 workload(s): "
        "apps/v1 Deployment default/web (member1 -2)"]


async def test_a_trigger_is_reported_even_if_the_preserve_annotation_turns_bad_before_its_result(
        manager: Manager, server: ApiServer, http: aiohttp.ClientSession) -> None:
    """A plain rebalancer's trigger lands, the status write fails, and the preserve annotation is then set to a bad
    value: the retry finds the trigger it wrote and reports it, rather than fail a workload it rescheduled."""
    await scheduled_binding(http, "web")
    failing = server.inject_fault("PATCH", "/workloadrebalancers/plain/status", code=503,
                                  reason="ServiceUnavailable", times=1_000_000)
    await send(http, "POST", WR, rebalancer_body({"name": "plain"}, [ref("web")], None))

    async def triggered() -> bool:
        return "rescheduleTriggeredAt" in (await binding(http, "web"))["spec"]

    await eventually(triggered)
    await send(http, "PATCH", f"{WR}/plain", {"metadata": {"annotations": {PRESERVE_ANNOTATION: "yes"}}})
    seen = failing.times
    await eventually(lambda: failing.times <= seen - 2, timeout=15)  # retried since, with the bad annotation
    failing.times = 0
    assert observed(await finished(http, "plain")) == [("web", "Successful", "")]
    assert assigned(await binding(http, "web")) == {"member1": 6, "member2": 4}


async def lowered(http: aiohttp.ClientSession, name: str) -> bool:
    return assigned(await binding(http, name))["member1"] < 6


async def seed_user_story(plane: Plane) -> None:
    """member1 runs 4 of its 6 replicas, 2 Pending Unschedulable for 10 minutes; member2 runs its 4."""
    stuck_since = datetime.now(UTC) - timedelta(minutes=10)
    for name, (serving, stuck) in {"member1": (4, 2), "member2": (4, 0)}.items():
        member = plane.clients[name]
        await add_node(member, "node-a")
        _, rs = await add_deployment(member, "web", replicas=serving + stuck)
        for i in range(serving + stuck):
            await add_pod(member, f"web-{i}", rs, app="web", node="node-a" if i < serving else "",
                          unschedulable_since=None if i < serving else stuck_since)


async def test_the_user_story_with_the_real_estimator_on_dev_members() -> None:
    async with control_plane(member_count=2, slim=True) as plane:  # as controllers/app.py reaches them
        await seed_user_story(plane)
        await plane.wait_synced("member1", "member2")
        options = PreserveOptions(EstimatorClient(plane.registry, timeout=3.0).unschedulable_replicas,
                                  timedelta(minutes=5), LONG)
        async with start(plane.host_client, options), aiohttp.ClientSession(base_url=plane.host.url) as http:
            await scheduled_binding(http, "web")
            await create(http, "story", ["web"])
            assert observed(await finished(http, "story")) == [("web", "Successful", "")]
            after = await binding(http, "web")
            assert assigned(after) == {"member1": 4, "member2": 4}
            assert "rescheduleTriggeredAt" not in after["spec"]


@contextlib.asynccontextmanager
async def restarted_on_members(first_list: Callable[[ApiServer], Any]) -> AsyncIterator[aiohttp.ClientSession]:
    """#7662's user story seen by a controller-manager that has just started (real estimator, dev members): its
    member caches list for the first time as it reconciles, member1's as ``first_list`` makes its server answer.
    The retry timeout is 0 s: any refusal the bound counts fails the workload at once."""
    # Each member is seeded before its Cluster exists, so the registry's first list of it is the one slowed
    # down; a member counts as failed after 0.2 s unsynced (sync_timeout) and the estimator waits 0.1 s at most.
    async with control_plane(member_count=0, slim=True, sync_timeout=0.2, client_timeout=5.0) as plane:
        for name in ("member1", "member2"):
            await plane.add_member(name, register_cluster=False)
        await seed_user_story(plane)
        first_list(plane.members["member1"])
        for name in ("member1", "member2"):
            await register(plane.host_client, name, plane.members[name].url)
        estimator = EstimatorClient(plane.registry, timeout=0.1)
        options = PreserveOptions(estimator.unschedulable_replicas, timedelta(minutes=5), timedelta(0),
                                  still_starting=estimator.still_starting)
        async with start(plane.host_client, options), aiohttp.ClientSession(base_url=plane.host.url) as http:
            await scheduled_binding(http, "web")
            await create(http, "story", ["web"])
            yield http


async def test_a_member_still_on_its_first_list_is_waited_for_past_the_retry_timeout() -> None:
    """A large member's first list (here 1.5 s for its Pods) can outlast the retry timeout after a restart; it
    ends by itself, so the workload waits for it instead of failing, then is lowered as it should be."""
    async with restarted_on_members(lambda member: member.slow_down("GET", "/api/v1/pods", 1.5)) as http:
        assert observed(await finished(http, "story")) == [("web", "Successful", "")]
        assert assigned(await binding(http, "web")) == {"member1": 4, "member2": 4}


async def test_a_member_whose_first_list_fails_still_fails_the_workload_at_the_bound() -> None:
    """The wait above is for a list that is progressing: one that fails counts against the retry timeout."""
    def forbidden(member: ApiServer) -> None:
        member.inject_fault("GET", "/api/v1/pods", code=403, reason="Forbidden", times=1000)

    async with restarted_on_members(forbidden) as http:
        assert observed(await finished(http, "story")) == [
            ("web", "Failed", "EstimatorUnavailable: no unschedulable-replica estimate for member1 "
                              "(for longer than the retry timeout, 0s)")]
        assert assigned(await binding(http, "web")) == {"member1": 6, "member2": 4}


async def test_nothing_unschedulable_is_successful_and_leaves_the_binding(manager: Manager, estimator: Estimator,
                                                                           http: aiohttp.ClientSession) -> None:
    before = await scheduled_binding(http, "calm")
    estimator.answers["calm"] = {"member1": 0, "member2": 0}
    wr = await create(http, "calm", ["calm"])
    assert observed(await finished(http, "calm")) == [("calm", "Successful", "")]
    after = await binding(http, "calm")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert await messages(http, wr, workloadrebalancer.NOTHING_TO_MOVE) == [
        "nothing had to move, no replica unschedulable for longer than 5m0s, for 1 workload(s): "
        "apps/v1 Deployment default/calm"]


async def test_a_binding_changed_meanwhile_is_decided_again_on_a_fresh_read(
        manager: Manager, estimator: Estimator, http: aiohttp.ClientSession) -> None:
    await scheduled_binding(http, "busy")
    estimator.answers["busy"] = {"member1": 2, "member2": 1}

    async def edit_once() -> None:  # another writer gets in between the read and the write: a 409, then a re-read
        estimator.on_call = None
        await send(http, "PATCH", f"{RB}/busy-deployment", {"metadata": {"labels": {"touched": "yes"}}})

    estimator.on_call = edit_once
    await create(http, "busy", ["busy"])
    assert observed(await finished(http, "busy")) == [("busy", "Successful", "")]
    after = await binding(http, "busy")
    assert assigned(after) == {"member1": 4, "member2": 3}
    assert after["metadata"]["labels"] == {"touched": "yes"}
    assert len(estimator.calls) == 2


async def test_the_stock_crd_prunes_the_proposed_field_which_is_why_the_annotation_exists(
        http: aiohttp.ClientSession) -> None:
    body = rebalancer_body({"name": "field"}, [ref("web")], None)
    body["spec"]["reschedule"] = {"preserveAvailableReplicas": True}
    created = await send(http, "POST", WR, body)
    assert "reschedule" not in created["spec"]


# ---- fail closed ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "reason"), [
    ({"placement": STATIC}, "NotDynamicDivided: the placement is StaticWeight; preserve mode needs Divided with a "
                            "dynamicWeight or Aggregated"),
    ({"applied": STATIC}, "AppliedPlacementDiffers: the placement of the last schedule is not spec.placement"),
])
async def test_a_permanent_cause_fails_at_once_and_leaves_the_binding(
        manager: Manager, estimator: Estimator, http: aiohttp.ClientSession, kwargs: dict[str, Any],
        reason: str) -> None:
    before = await scheduled_binding(http, "web", **kwargs)
    workload = {**ref("web"), "kind": str(kwargs.get("kind", "Deployment")),
                "apiVersion": str(kwargs.get("api_version", "apps/v1"))}
    wr = await create(http, "closed", [workload])
    assert observed(await finished(http, "closed")) == [("web", "Failed", reason)]
    after = await send(http, "GET", f"{RB}/{before['metadata']['name']}")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert estimator.calls == []
    assert len(await events_about(http, wr, reason.split(":", maxsplit=1)[0])) == 1


async def test_nothing_to_move_judged_on_a_cache_behind_an_edit_is_judged_again_on_a_fresh_read(
        manager: Manager, estimator: Estimator, server: ApiServer, http: aiohttp.ClientSession) -> None:
    """The applied placement is edited just before the rebalancer, and the informer has not seen the edit (the
    bindings' watch is down here): on its copy nothing is stuck, a final answer that writes nothing, so it is
    judged again on a fresh read, which refuses."""
    before = await scheduled_binding(http, "web")
    estimator.answers["web"] = {"member1": 0, "member2": 0}
    server.inject_fault("GET", "v1alpha2/resourcebindings", code=500, times=1_000_000)  # LIST and WATCH only
    server.store.close_watchers()
    await send(http, "PATCH", f"{RB}/{before['metadata']['name']}",
               {"metadata": {"annotations": {APPLIED_PLACEMENT_ANNOTATION: json.dumps(STATIC)}}})
    await create(http, "edited", ["web"])
    assert observed(await finished(http, "edited")) == [
        ("web", "Failed", "AppliedPlacementDiffers: the placement of the last schedule is not spec.placement")]


@pytest.mark.parametrize("kwargs", [{"observed_generation": None}, {"evicting": "member3"}])
async def test_a_transient_cause_is_retried_without_a_result(
        manager: Manager, estimator: Estimator, http: aiohttp.ClientSession, kwargs: dict[str, Any]) -> None:
    before = await scheduled_binding(http, "web", **kwargs)
    start = retries()
    await create(http, "waiting", ["web"])
    await eventually(lambda: retries() >= start + 3)  # retried with backoff, no result meanwhile
    wr = await send(http, "GET", f"{WR}/waiting")
    assert [i.get("result") for i in wr["status"]["observedWorkloads"]] == [None]
    assert (await binding(http, "web"))["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert estimator.calls == []


async def test_a_controller_clock_ahead_of_the_api_servers_does_not_spend_the_bound_at_once(
        kube: KubeClient, estimator: Estimator, http: aiohttp.ClientSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller's clock 70 s ahead of the API server's, a 60 s bound, a controller up for an hour: its first
    look at a new rebalancer would find ``now - creationTimestamp`` past the bound and fail a transient cause at
    once. The bound starts no earlier than this process's first look at it: retried, no result."""
    monkeypatch.setattr(workloadrebalancer, "now", lambda: datetime.now(UTC) + timedelta(seconds=70))
    options = PreserveOptions(estimator, timedelta(minutes=5), timedelta(seconds=60),
                              started=datetime.now(UTC) - timedelta(hours=1))
    async with start(kube, options):
        before = await scheduled_binding(http, "web", observed_generation=None)
        start_count = retries()
        await create(http, "skewed", ["web"])
        await eventually(lambda: retries() >= start_count + 3)
        wr = await send(http, "GET", f"{WR}/skewed")
    assert [i.get("result") for i in wr["status"]["observedWorkloads"]] == [None]
    assert (await binding(http, "web"))["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


@pytest.mark.parametrize(("kwargs", "reason"), [
    ({"observed_generation": None}, "SchedulingNotComplete: no schedulerObservedGeneration != generation 1"),
    ({"evicting": "member3"}, "GracefulEvictionInProgress: evicting from member3"),
    ({"kind": "Widget", "api_version": "example.io/v1"},
     "UnsupportedKind: example.io/v1 Widget has no unschedulable-replica estimate"),
])
async def test_a_transient_cause_past_the_bound_fails(impatient: Manager, http: aiohttp.ClientSession,
                                                      kwargs: dict[str, Any], reason: str) -> None:
    before = await scheduled_binding(http, "web", **kwargs)
    await create(http, "late", [{**ref("web"), "kind": str(kwargs.get("kind", "Deployment")),
                                 "apiVersion": str(kwargs.get("api_version", "apps/v1"))}])
    assert observed(await finished(http, "late")) == [
        ("web", "Failed", f"{reason} (for longer than the retry timeout, 0s)")]
    after = await send(http, "GET", f"{RB}/{before['metadata']['name']}")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_an_estimator_failing_for_one_cluster_changes_nothing_until_it_answers(
        manager: Manager, estimator: Estimator, http: aiohttp.ClientSession) -> None:
    before = await scheduled_binding(http, "web")
    estimator.answers["web"] = {"member1": 2}  # member2 cannot be judged
    await create(http, "partial", ["web"])
    await eventually(lambda: len(estimator.calls) >= 3)
    wr = await send(http, "GET", f"{WR}/partial")
    assert [i.get("result") for i in wr["status"]["observedWorkloads"]] == [None]
    assert (await binding(http, "web"))["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    estimator.answers["web"] = {"member1": 2, "member2": 0}  # member2 is back
    assert observed(await finished(http, "partial")) == [("web", "Successful", "")]
    assert assigned(await binding(http, "web")) == {"member1": 4, "member2": 4}


async def test_an_estimator_failing_past_the_bound_fails_the_workload(impatient: Manager, estimator: Estimator,
                                                                      http: aiohttp.ClientSession) -> None:
    before = await scheduled_binding(http, "web")
    estimator.answers["web"] = {"member1": 2}
    await create(http, "partial", ["web"])
    assert observed(await finished(http, "partial")) == [
        ("web", "Failed", "EstimatorUnavailable: no unschedulable-replica estimate for member2 "
                          "(for longer than the retry timeout, 0s)")]
    assert (await binding(http, "web"))["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_a_transient_cause_is_judged_again_before_it_fails(impatient: Manager, estimator: Estimator,
                                                                  http: aiohttp.ClientSession) -> None:
    await scheduled_binding(http, "web")
    estimator.answers["web"] = {"member1": 2}  # member2 cannot be judged on the first try...

    async def member2_back() -> None:  # from the second call on
        if len(estimator.calls) > 1:
            estimator.answers["web"] = {"member1": 2, "member2": 0}

    estimator.on_call = member2_back  # ...and can by the time the bound (0s here) would fail it
    await create(http, "recovered", ["web"])
    assert observed(await finished(http, "recovered")) == [("web", "Successful", "")]
    assert assigned(await binding(http, "web")) == {"member1": 4, "member2": 4}
    assert len(estimator.calls) == 2


async def test_the_last_judgement_before_failing_reads_the_binding_from_the_api_server(
        impatient: Manager, estimator: Estimator, http: aiohttp.ClientSession, server: ApiServer) -> None:
    """The controller's cache held behind (its bindings watch ended, and re-watching fails) while the binding's
    status is collected on the server: judged on the cache, member1's ready count is unknown, a transient refusal
    that the 0 s bound would turn Failed; the fresh read before that finds the status and the workload is
    lowered."""
    await scheduled_binding(http, "web", reported=False)
    estimator.answers["web"] = {"member1": 2, "member2": 0}
    # every cluster-wide list/watch of bindings (the informer's) fails from now; GETs by name still answer
    stuck = server.inject_fault("GET", "v1alpha2/resourcebindings", code=500, times=1_000_000)
    server.store.close_watchers()
    reported = [{"clusterName": n, "applied": True, "status": {"replicas": r}} for n, r in (("member1", 6),
                                                                                            ("member2", 4))]
    await send(http, "PATCH", f"{RB}/web-deployment/status", {"status": {"aggregatedStatus": reported}})
    try:
        await create(http, "stale", ["web"])
        assert observed(await finished(http, "stale")) == [("web", "Successful", "")]
        assert stuck.times < 1_000_000  # the informer did try to list or watch again, and failed
    finally:
        stuck.times = 0
    assert assigned(await binding(http, "web")) == {"member1": 4, "member2": 4}


async def test_a_cluster_whose_status_is_not_collected_yet_is_never_lowered(
        impatient: Manager, estimator: Estimator, http: aiohttp.ClientSession) -> None:
    before = await scheduled_binding(http, "web", reported=False)
    estimator.answers["web"] = {"member1": 2, "member2": 0}
    await create(http, "unknown", ["web"])
    assert observed(await finished(http, "unknown")) == [
        ("web", "Failed", "ReadyReplicasUnknown: no workload status collected from member1 yet: its ready replicas "
                          "are unknown (for longer than the retry timeout, 0s)")]
    assert (await binding(http, "web"))["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_a_later_generation_marks_when_its_retries_started(manager: Manager, estimator: Estimator,
                                                                 http: aiohttp.ClientSession) -> None:
    await scheduled_binding(http, "web")
    estimator.answers["web"] = {"member1": 0, "member2": 0}
    await create(http, "edited", ["web"])
    await finished(http, "edited")
    await scheduled_binding(http, "api", evicting="member1")
    await send(http, "PATCH", f"{WR}/edited", {"spec": {"workloads": [ref("web"), ref("api")]}})

    async def marked() -> str:
        wr = await send(http, "GET", f"{WR}/edited")
        return str(wr["metadata"].get("annotations", {}).get(RETRY_SINCE_ANNOTATION, ""))

    assert (await eventually(marked)).startswith("2/")


# ---- bad input and a disabled mode ------------------------------------------------------------------------


async def test_a_bad_annotation_value_fails_every_workload_naming_the_value(
        manager: Manager, estimator: Estimator, http: aiohttp.ClientSession) -> None:
    a, b = await scheduled_binding(http, "a"), await scheduled_binding(http, "b")
    await create(http, "bad", ["a", "b"], annotation="yes")
    reason = f'InvalidPreserveAnnotation: {PRESERVE_ANNOTATION}="yes", want "true" or "false"'
    assert observed(await finished(http, "bad")) == [("a", "Failed", reason), ("b", "Failed", reason)]
    assert estimator.calls == []
    for before in (a, b):
        after = await send(http, "GET", f"{RB}/{before['metadata']['name']}")
        assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_without_the_flag_a_preserve_rebalancer_fails_closed_naming_it(
        disabled: Manager, http: aiohttp.ClientSession) -> None:
    before = await scheduled_binding(http, "web")
    await create(http, "off", ["web"])
    assert observed(await finished(http, "off")) == [
        ("web", "Failed", "PreserveModeDisabled: karmada-controller-manager runs without "
                          "--enable-preserve-available-replicas (for longer than the retry timeout, 1s)")]
    after = await binding(http, "web")
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert "rescheduleTriggeredAt" not in after["spec"]  # no fallback to a full reschedule


async def test_a_rollout_turning_the_flag_on_does_not_fail_what_the_old_leader_saw(
        kube: KubeClient, estimator: Estimator, http: aiohttp.ClientSession) -> None:
    """The leader without the flag sees the rebalancer first (the user enabled the mode, then asked for it, while
    the rollout was under way): it leaves the workload without a result, and the new leader, with the flag,
    lowers the binding."""
    await scheduled_binding(http, "web")
    estimator.answers["web"] = {"member1": 2, "member2": 0}
    async with start(kube, PreserveOptions()):  # the old leader: the flag off, the default retry timeout

        async def looked_at() -> bool:
            status = (await send(http, "GET", f"{WR}/rollout")).get("status") or {}
            return [item.get("result") for item in status.get("observedWorkloads") or []] == [None]

        await create(http, "rollout", ["web"])
        await eventually(looked_at)
    async with start(kube, PreserveOptions(estimator, timedelta(minutes=5), LONG)):  # the new leader
        done = await finished(http, "rollout")
    assert observed(done) == [("web", "Successful", "")]
    assert [c["replicas"] for c in (await binding(http, "web"))["spec"]["clusters"]] == [4, 4]


async def test_a_rollout_declaring_a_kind_does_not_fail_what_the_old_leader_saw(
        kube: KubeClient, estimator: Estimator, http: aiohttp.ClientSession) -> None:
    """As above, for a kind the new leader's ``--unschedulable-pod-selectors`` declares and the old one's does
    not: no result from the old leader, the binding lowered by the new one."""
    widget = {**ref("web"), "apiVersion": "example.io/v1", "kind": "Widget"}
    await scheduled_binding(http, "web", kind="Widget", api_version="example.io/v1")
    estimator.answers["web"] = {"member1": 2, "member2": 0}
    async with start(kube, PreserveOptions(estimator, timedelta(minutes=5))):  # the old leader: built-in kinds

        async def looked_at() -> bool:
            status = (await send(http, "GET", f"{WR}/kinds")).get("status") or {}
            return [item.get("result") for item in status.get("observedWorkloads") or []] == [None]

        await create(http, "kinds", [widget])
        await eventually(looked_at)
    assert estimator.calls == []
    declared = {*BUILTIN_KINDS, ("example.io/v1", "Widget")}
    async with start(kube, PreserveOptions(estimator, timedelta(minutes=5), LONG, gvks=declared)):
        done = await finished(http, "kinds")
    assert observed(done) == [("web", "Successful", "")]
    lowered = await send(http, "GET", f"{RB}/web-widget")
    assert [c["replicas"] for c in lowered["spec"]["clusters"]] == [4, 4]


async def test_annotation_false_is_a_fresh_reschedule(disabled: Manager, http: aiohttp.ClientSession) -> None:
    await scheduled_binding(http, "web")
    await create(http, "fresh", ["web"], annotation="false")
    assert observed(await finished(http, "fresh")) == [("web", "Successful", "")]
    assert "rescheduleTriggeredAt" in (await binding(http, "web"))["spec"]


