"""workload-rebalancer and ttl-cleaner against the dev API server, with real informers.

Rows of Karmada's ``pkg/controllers/workloadrebalancer/workloadrebalancer_controller_test.go`` and
the status examples of the Workload Rebalancer tutorial (its manifests: devplane/documents/). The rebalancer's
``creationTimestamp`` is set by the server (now), so "oneHourAgo" rebalancers of Karmada's
table become bindings whose triggers are newer than the rebalancer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import aiohttp
import pytest
from prometheus_client import REGISTRY

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.manager import Manager, ManagerOptions
from controller_manager.mutationcache import MutationCache
from controller_manager.ratelimiter import RateLimiterOptions
from controller_manager.reconcile import Request
from controller_manager.resource import Resource
from controllers import ttlcleaner, workloadrebalancer
from controllers.rebalancerstatus import summary_message
from controllers.workloadrebalancer import already_triggered, trigger_time
from devplane.apiserver.server import ApiServer
from karmada_api.resources import WORKLOAD_REBALANCERS
from kube_api.timeutil import format_time, now, parse_time
from tests.conftest import events_about, eventually, get_or_none, running

WR = "/apis/apps.karmada.io/v1alpha1/workloadrebalancers"
RB = "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings"
CRB = "/apis/work.karmada.io/v1alpha2/clusterresourcebindings"
HOUR_AGO = format_time(now() - timedelta(hours=1))


def controller_manager(kube: KubeClient) -> Manager:
    """A controller-manager running the workload-rebalancer and the ttl-cleaner, retrying fast."""
    mgr = Manager(kube, ManagerOptions(name="test-cm", metrics_bind_address="0", health_probe_bind_address="0"))
    fast = RateLimiterOptions(base_delay=0.05, max_delay=1.0)
    workloadrebalancer.setup(mgr, workers=2, rate_limiter_options=fast)
    ttlcleaner.setup(mgr, rate_limiter_options=fast)
    return mgr


@pytest.fixture
async def manager(kube: KubeClient) -> AsyncIterator[Manager]:
    async with running(controller_manager(kube)) as mgr:
        yield mgr


def deploy_ref(name: str, ns: str = "default") -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": ns}


async def make_binding(http: aiohttp.ClientSession, kind: str, name: str, ns: str = "default", *,
                       api_version: str = "apps/v1", triggered: str | None = HOUR_AGO,
                       scheduled: str | None = HOUR_AGO) -> dict[str, Any]:
    bname = f"{name.replace(':', '.')}-{kind}".lower()
    spec: dict[str, Any] = {"resource": {"apiVersion": api_version, "kind": kind, "name": name,
                                         **({"namespace": ns} if ns else {})}}
    if triggered:
        spec["rescheduleTriggeredAt"] = triggered
    body = {"metadata": {"name": bname}, "spec": spec}
    path = RB.format(ns=ns) if ns else CRB
    async with http.post(path, json=body) as r:
        assert r.status == 201, await r.text()
        created: dict[str, Any] = await r.json()
    if scheduled:
        async with http.patch(f"{path}/{bname}/status", json={"status": {"lastScheduledTime": scheduled}},
                              headers={"Content-Type": "application/merge-patch+json"}) as r:
            assert r.status == 200
            created = await r.json()
    return created



async def create_rebalancer(http: aiohttp.ClientSession, name: str, workloads: list[dict[str, str]],
                            ttl: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"workloads": workloads}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    async with http.post(WR, json={"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
                                   "metadata": {"name": name}, "spec": spec}) as r:
        assert r.status == 201, await r.text()
        created: dict[str, Any] = await r.json()
        return created


async def finished(http: aiohttp.ClientSession, name: str, timeout: float = 10.0) -> dict[str, Any]:
    async def done() -> dict[str, Any] | None:
        wr = await get_or_none(http, f"{WR}/{name}")
        if wr and (wr.get("status") or {}).get("finishTime") and \
                wr["status"].get("observedGeneration") == wr["metadata"]["generation"]:
            return wr
        return None

    result: dict[str, Any] = await eventually(done, timeout=timeout)
    return result


def observed(wr: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(i["workload"]["name"], i.get("result", ""), i.get("reason", ""))
            for i in wr["status"]["observedWorkloads"]]


# ----------------------------------------------------------------------------- controller test rows


async def test_a_name_no_binding_can_have_fails_as_not_found(manager: Manager, http: aiohttp.ClientSession) -> None:
    """A "/" or "%" in a workload's name or namespace: no object can have that name (sent, it would address
    another path and be answered ``404 page not found``, retried for ever), so the binding is not found, as
    Karmada's cached client finds none."""
    await make_binding(http, "Deployment", "fine")
    workloads = [deploy_ref("a/b"), deploy_ref("x%2Fy"), deploy_ref("fine"), deploy_ref("web", ns="a/b")]
    await create_rebalancer(http, "odd", workloads)
    done = await finished(http, "odd")
    assert sorted(observed(done)) == [("a/b", "Failed", "ReferencedBindingNotFound"),
                                      ("fine", "Successful", ""),
                                      ("web", "Failed", "ReferencedBindingNotFound"),
                                      ("x%2Fy", "Failed", "ReferencedBindingNotFound")]


async def test_pending_rebalancer_sorted_results_and_trigger(manager: Manager, http: aiohttp.ClientSession) -> None:
    await make_binding(http, "Deployment", "deploy1")
    wr = await create_rebalancer(http, "pending", [deploy_ref("deploy2"), deploy_ref("deploy1")])
    done = await finished(http, "pending")
    assert observed(done) == [("deploy1", "Successful", ""), ("deploy2", "Failed", "ReferencedBindingNotFound")]
    binding = await get_or_none(http, RB.format(ns="default") + "/deploy1-deployment")
    assert binding is not None
    assert binding["spec"]["rescheduleTriggeredAt"] == wr["metadata"]["creationTimestamp"]
    assert done["status"]["observedGeneration"] == 1


async def test_newer_trigger_is_never_overwritten(manager: Manager, http: aiohttp.ClientSession) -> None:
    future = format_time(now() + timedelta(hours=1))
    await make_binding(http, "Deployment", "deploy1", triggered=future)
    await create_rebalancer(http, "succeed", [deploy_ref("deploy1")])
    done = await finished(http, "succeed")
    assert observed(done) == [("deploy1", "Successful", "")]
    binding = await get_or_none(http, RB.format(ns="default") + "/deploy1-deployment")
    assert binding is not None and binding["spec"]["rescheduleTriggeredAt"] == future


async def test_failed_is_final_even_if_binding_appears_later(manager: Manager, http: aiohttp.ClientSession) -> None:
    await create_rebalancer(http, "notfound", [deploy_ref("deploy2")])
    done = await finished(http, "notfound")
    assert observed(done) == [("deploy2", "Failed", "ReferencedBindingNotFound")]
    await make_binding(http, "Deployment", "deploy2")
    async with http.patch(f"{WR}/notfound", json={"metadata": {"labels": {"poke": "1"}}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
    again = await get_or_none(http, f"{WR}/notfound")
    assert again is not None and observed(again) == [("deploy2", "Failed", "ReferencedBindingNotFound")]


async def test_retrying_then_successful(manager: Manager, server: ApiServer, http: aiohttp.ClientSession) -> None:
    """The seed's third example: a transient error leaves the item without result and no finishTime."""
    await make_binding(http, "Deployment", "demo-deploy")
    fault = server.inject_fault("PUT", "/resourcebindings/demo-deploy-deployment", code=429,
                                reason="TooManyRequests", times=1000)

    async def retrying() -> dict[str, Any] | None:
        wr = await get_or_none(http, f"{WR}/demo")
        return wr if wr and wr.get("status") else None

    await create_rebalancer(http, "demo", [deploy_ref("demo-deploy")])
    wr = await eventually(retrying)
    assert wr["status"] == {"observedGeneration": 1, "observedWorkloads": [{"workload": deploy_ref("demo-deploy")}]}
    fault.times = 0
    done = await finished(http, "demo")
    assert observed(done) == [("demo-deploy", "Successful", "")]


async def test_modification_example(manager: Manager, http: aiohttp.ClientSession) -> None:
    """The seed's example: deploy-1 + deploy-2 edited to deploy-3 → [deploy-1 Successful, deploy-3 Successful]."""
    await make_binding(http, "Deployment", "demo-deploy-1")
    await make_binding(http, "Deployment", "demo-deploy-3")
    await create_rebalancer(http, "demo", [deploy_ref("demo-deploy-1"), deploy_ref("demo-deploy-2")])
    first = await finished(http, "demo")
    assert observed(first) == [("demo-deploy-1", "Successful", ""),
                               ("demo-deploy-2", "Failed", "ReferencedBindingNotFound")]
    async with http.patch(f"{WR}/demo", json={"spec": {"workloads": [deploy_ref("demo-deploy-3")]}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200

    async def second_generation() -> dict[str, Any] | None:
        wr = await get_or_none(http, f"{WR}/demo")
        return wr if wr and wr["status"].get("observedGeneration") == 2 else None

    second = await eventually(second_generation)
    assert second["metadata"]["generation"] == 2
    assert observed(second) == [("demo-deploy-1", "Successful", ""), ("demo-deploy-3", "Successful", "")]
    assert parse_time(second["status"]["finishTime"]) >= parse_time(first["status"]["finishTime"])


async def test_batch_with_cluster_role_sorted(manager: Manager, http: aiohttp.ClientSession) -> None:
    await make_binding(http, "Deployment", "demo-deploy")
    await make_binding(http, "ConfigMap", "demo-config", api_version="v1")
    await make_binding(http, "ClusterRole", "demo-role", ns="", api_version="rbac.authorization.k8s.io/v1")
    workloads = [deploy_ref("demo-deploy"),
                 {"apiVersion": "v1", "kind": "ConfigMap", "name": "demo-config", "namespace": "default"},
                 {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "demo-role"}]
    wr = await create_rebalancer(http, "demo", workloads)
    done = await finished(http, "demo")
    assert [i["workload"]["kind"] for i in done["status"]["observedWorkloads"]] == \
        ["Deployment", "ClusterRole", "ConfigMap"]
    assert {i["result"] for i in done["status"]["observedWorkloads"]} == {"Successful"}
    crb = await get_or_none(http, f"{CRB}/demo-role-clusterrole")
    assert crb is not None and crb["spec"]["rescheduleTriggeredAt"] == wr["metadata"]["creationTimestamp"]


# ----------------------------------------------------------------------------- beyond Karmada


async def test_workload_results_are_events_in_status_order(manager: Manager, http: aiohttp.ClientSession) -> None:
    """A Warning for each workload without a binding; one Event for all those triggered (not one each)."""
    for name in ("b", "d", "e"):
        await make_binding(http, "Deployment", name)
    wr = await create_rebalancer(http, "told", [deploy_ref(n) for n in ("e", "d", "c", "b", "a")])
    done = await finished(http, "told")
    assert observed(done) == [("a", "Failed", "ReferencedBindingNotFound"), ("b", "Successful", ""),
                              ("c", "Failed", "ReferencedBindingNotFound"), ("d", "Successful", ""),
                              ("e", "Successful", "")]

    async def all_recorded() -> list[dict[str, Any]]:
        events = (await events_about(http, wr, "RescheduleTriggered")
                  + await events_about(http, wr, "ReferencedBindingNotFound"))
        assert len(events) == 3
        return sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"]))

    events = await eventually(all_recorded)
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [
        ("Warning", "ReferencedBindingNotFound", "apps/v1 Deployment default/a: its binding was not found "
         "(ResourceBinding default/a-deployment): check the workload's kind, name and namespace, and that a "
         "propagation policy propagates it"),
        ("Warning", "ReferencedBindingNotFound", "apps/v1 Deployment default/c: its binding was not found "
         "(ResourceBinding default/c-deployment): check the workload's kind, name and namespace, and that a "
         "propagation policy propagates it"),
        ("Normal", "RescheduleTriggered", "rescheduling triggered for 3 workload(s): apps/v1 Deployment default/b, "
                                          "apps/v1 Deployment default/d, apps/v1 Deployment default/e"),
    ]


def test_a_triggered_event_names_the_first_ten_workloads() -> None:
    described = [f"apps/v1 Deployment default/w{k:02d}" for k in range(12)]
    message = summary_message("rescheduling triggered", described)
    assert message.startswith("rescheduling triggered for 12 workload(s): apps/v1 Deployment default/w00, ")
    assert message.endswith("apps/v1 Deployment default/w09, and 2 more")
    one = summary_message("rescheduling triggered", described[:1])
    assert one == "rescheduling triggered for 1 workload(s): apps/v1 Deployment default/w00"


@pytest.mark.parametrize("fault", ["the status write fails twice", "the status write lands, its answer is lost"])
async def test_events_and_results_follow_the_stored_status_once(manager: Manager, server: ApiServer,
                                                                http: aiohttp.ClientSession, fault: str) -> None:
    """Events and the results metric follow the stored result, once. A failed status write is retried, and the
    retry does not write or count them again. A write stored with its answer lost (a 504 after it landed) is
    seen by the retry through the watch, every workload done: what the failed reconcile decided is recorded
    then."""
    await make_binding(http, "Deployment", "once")
    counted = {result: REGISTRY.get_sample_value("workload_rebalancer_workloads_total", {"result": result}) or 0.0
               for result in ("Successful", "Failed")}
    if fault == "the status write fails twice":
        injected = server.inject_fault("PATCH", "/workloadrebalancers/once/status", code=500, times=2)
    else:
        injected = server.inject_fault("PATCH", "/workloadrebalancers/once/status", code=504, reason="Timeout",
                                       after_dispatch=True)
    wr = await create_rebalancer(http, "once", [deploy_ref("once"), deploy_ref("missing")])
    done = await finished(http, "once")
    assert injected.times == 0
    assert observed(done) == [("missing", "Failed", "ReferencedBindingNotFound"), ("once", "Successful", "")]

    async def recorded() -> list[dict[str, Any]]:
        events = (await events_about(http, wr, "RescheduleTriggered")
                  + await events_about(http, wr, "ReferencedBindingNotFound"))
        assert len(events) == 2
        return events

    events = await eventually(recorded)
    assert sorted((e["reason"], e["count"]) for e in events) == [("ReferencedBindingNotFound", 1),
                                                                 ("RescheduleTriggered", 1)]
    assert {result: (REGISTRY.get_sample_value("workload_rebalancer_workloads_total", {"result": result}) or 0.0)
            - before for result, before in counted.items()} == {"Successful": 1.0, "Failed": 1.0}


class AskedEvents:
    """Stands in for the EventRecorder: what is checked here is which Events the reconciler asks for, and how often;
    how the recorder writes them is controller_manager's (tests/controller_manager/test_events.py)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []

    def event(self, obj: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        self.asked.append((event_type, reason))


async def test_a_status_stored_with_its_answer_lost_is_recorded_though_the_cache_is_behind_and_the_retry_fails(
        kube: KubeClient, server: ApiServer, http: aiohttp.ClientSession) -> None:
    """The status write lands and its answer is lost (a 504); the retry runs on a cache that does not show it yet
    (a restart broke the watch too) and fails before its own status write (a binding read times out). The stored
    results still get their Events and counts, once: the retry reads the rebalancer afresh before deciding. The
    caches here are filled once and never watched: they are the cache left behind."""
    binding = await make_binding(http, "Deployment", "kept")
    wr = await create_rebalancer(http, "behind", [deploy_ref("kept"), deploy_ref("absent")])
    rebalancers, bindings = Indexer(), Indexer()
    rebalancers.replace([wr])
    bindings.replace([binding])
    asked = AskedEvents()
    impatient = KubeClient(kube.api_client, qps=0, timeout=0.5)
    reconciler = workloadrebalancer.WorkloadRebalancerReconciler(
        impatient, MutationCache(rebalancers), bindings, Indexer(), asked)  # type: ignore[arg-type]
    counted = {result: REGISTRY.get_sample_value("workload_rebalancer_workloads_total", {"result": result}) or 0.0
               for result in ("Successful", "Failed")}
    request = Request("", "behind")
    server.inject_fault("PATCH", "/workloadrebalancers/behind/status", code=504, reason="Timeout", after_dispatch=True)
    with pytest.raises(ApiError):
        await reconciler.reconcile(request)
    stored = await get_or_none(http, f"{WR}/behind")
    assert stored is not None and observed(stored) == [("absent", "Failed", "ReferencedBindingNotFound"),
                                                       ("kept", "Successful", "")]
    assert asked.asked == []
    slow = server.slow_down("GET", "/resourcebindings/absent-deployment", 2.0, times=1_000)
    try:
        with contextlib.suppress(TimeoutError):  # the retry, which must not depend on that read
            await reconciler.reconcile(request)
    finally:
        slow.times = 0
    rebalancers.replace([stored])  # the watch back: nothing left to decide or to record
    await reconciler.reconcile(request)
    assert sorted(asked.asked) == [("Normal", "RescheduleTriggered"), ("Warning", "ReferencedBindingNotFound")]
    assert {result: (REGISTRY.get_sample_value("workload_rebalancer_workloads_total", {"result": result}) or 0.0)
            - before for result, before in counted.items()} == {"Successful": 1.0, "Failed": 1.0}


async def test_a_retry_after_the_scheduler_ran_does_not_trigger_a_second_reschedule(
        manager: Manager, server: ApiServer, http: aiohttp.ClientSession) -> None:
    """The trigger is written, the status write keeps failing, and meanwhile the scheduler consumes the trigger
    (lastScheduledTime now later than the rebalancer's creation). The retries find their own trigger there: the
    workload was rescheduled after the request, so no later trigger is written (a second fresh reschedule)."""
    await make_binding(http, "Deployment", "twice")
    fault = server.inject_fault("PATCH", "/workloadrebalancers/twice/status", code=503,
                                reason="ServiceUnavailable", times=1_000_000)
    wr = await create_rebalancer(http, "twice", [deploy_ref("twice")])
    created = wr["metadata"]["creationTimestamp"]
    path = RB.format(ns="default") + "/twice-deployment"

    async def triggered() -> bool:
        binding = await get_or_none(http, path)
        return binding is not None and binding["spec"].get("rescheduleTriggeredAt") == created

    await eventually(triggered)
    scheduled = format_time(now() + timedelta(seconds=1))  # the scheduler's stamp: a second after the creation
    async with http.patch(f"{path}/status", json={"status": {"lastScheduledTime": scheduled}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
    seen = fault.times
    await eventually(lambda: fault.times <= seen - 3, timeout=15)  # retried since, knowing the new schedule
    assert await triggered()
    fault.times = 0
    assert observed(await finished(http, "twice")) == [("twice", "Successful", "")]
    assert await triggered()


async def test_a_restarted_controller_does_not_trigger_an_edited_rebalancers_workload_twice(
        kube: KubeClient, server: ApiServer, http: aiohttp.ClientSession) -> None:
    """An edited rebalancer (generation 2) adds a workload: its trigger is written, the status write keeps failing,
    the scheduler consumes the trigger, and the controller-manager restarts before the result is stored. The new
    process remembers nothing; the binding's mark says the trigger there is this rebalancer's, so none is added."""
    await make_binding(http, "Deployment", "first")
    await make_binding(http, "Deployment", "added")
    path = RB.format(ns="default") + "/added-deployment"
    async with running(controller_manager(kube)):
        wr = await create_rebalancer(http, "edited", [deploy_ref("first")])
        await finished(http, "edited")
        fault = server.inject_fault("PATCH", "/workloadrebalancers/edited/status", code=503,
                                    reason="ServiceUnavailable", times=1_000_000)
        async with http.patch(f"{WR}/edited", json={"spec": {"workloads": [deploy_ref("first"), deploy_ref("added")]}},
                              headers={"Content-Type": "application/merge-patch+json"}) as r:
            assert r.status == 200
        written = await eventually(trigger_since(http, path, wr["metadata"]["creationTimestamp"]))
        scheduled = format_time(parse_time(written) + timedelta(seconds=1))  # the scheduler's stamp
        async with http.patch(f"{path}/status", json={"status": {"lastScheduledTime": scheduled}},
                              headers={"Content-Type": "application/merge-patch+json"}) as r:
            assert r.status == 200
        seen = fault.times
        await eventually(lambda: fault.times < seen)  # the result could not be stored
    fault.times = 0
    async with running(controller_manager(kube)):
        done = await finished(http, "edited")
    assert observed(done) == [("added", "Successful", ""), ("first", "Successful", "")]
    binding = await get_or_none(http, path)
    assert binding is not None and binding["spec"]["rescheduleTriggeredAt"] == written


def trigger_since(http: aiohttp.ClientSession, path: str, since: str) -> Callable[[], Awaitable[str | None]]:
    """A condition: the binding's rescheduleTriggeredAt once it is at or after ``since``."""
    async def check() -> str | None:
        binding = await get_or_none(http, path)
        trigger = binding["spec"].get("rescheduleTriggeredAt") if binding else None
        return trigger if trigger and parse_time(trigger) >= parse_time(since) else None

    return check


async def test_a_workload_added_later_gets_a_trigger_of_its_own(manager: Manager,
                                                                 http: aiohttp.ClientSession) -> None:
    """late's binding was triggered and scheduled after the rebalancer's creation (by someone else), then added to
    the rebalancer: that consumed trigger is no answer to the request, so late gets a new one, still pending."""
    await make_binding(http, "Deployment", "early")
    wr = await create_rebalancer(http, "grows", [deploy_ref("early")])
    await finished(http, "grows")
    since = format_time(parse_time(wr["metadata"]["creationTimestamp"]) + timedelta(seconds=1))
    await make_binding(http, "Deployment", "late", triggered=since, scheduled=since)
    async with http.patch(f"{WR}/grows", json={"spec": {"workloads": [deploy_ref("early"), deploy_ref("late")]}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
    assert ("late", "Successful", "") in observed(await finished(http, "grows"))
    late = await get_or_none(http, RB.format(ns="default") + "/late-deployment")
    assert late is not None
    assert parse_time(late["spec"]["rescheduleTriggeredAt"]) > parse_time(late["status"]["lastScheduledTime"])


class LaggingRebalancerWatch(KubeClient):
    """The rebalancers' watch delivers each rebalancer's creation, then holds back every later event until
    ``caught_up`` is set: an informer behind the controller's own status writes, for as long as a test needs.
    Counts the binding writes that succeeded, by binding name."""

    def __init__(self, base: KubeClient) -> None:
        super().__init__(base.api_client, qps=0)
        self.caught_up = asyncio.Event()
        self.binding_writes: Counter[str] = Counter()

    async def watch_events(self, resource: Resource, namespace: str = "",
                           **options: Any) -> AsyncIterator[tuple[dict[str, Any], bytes]]:
        async for event, line in super().watch_events(resource, namespace, **options):
            if resource == WORKLOAD_REBALANCERS and event.get("type") != "ADDED":
                await self.caught_up.wait()
            yield event, line

    async def update_unread(self, resource: Resource, obj: dict[str, Any], *, subresource: str = "") -> None:
        await super().update_unread(resource, obj, subresource=subresource)
        self.binding_writes[objects.name(obj)] += 1


class WriterInBetween(KubeClient):
    """Before its first binding write, another writer labels that binding (as cluster fail-back marks its batch's
    bindings in flight right after creating the batch): the write, made on the cache's older copy, gets a 409."""

    def __init__(self, base: KubeClient) -> None:
        super().__init__(base.api_client, qps=0)
        self.base = base
        self.conflicts = 0

    async def update_unread(self, resource: Resource, obj: dict[str, Any], *, subresource: str = "") -> None:
        if self.conflicts == 0:
            await self.base.patch(resource, objects.name(obj), {"metadata": {"labels": {"in-between": "yes"}}},
                                  namespace=objects.namespace(obj))
        try:
            await super().update_unread(resource, obj, subresource=subresource)
        except ApiError as exc:
            self.conflicts += exc.is_conflict
            raise


async def test_a_binding_changed_since_the_cache_saw_it_is_triggered_at_once_on_a_fresh_read(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """No backoff, no retry counted: the conflict is decided again on the API server's copy, which keeps the
    other writer's change."""
    client = WriterInBetween(kube)
    await make_binding(http, "Deployment", "busy")
    retries = REGISTRY.get_sample_value("workload_rebalancer_workloads_total", {"result": "Retry"}) or 0.0
    async with running(controller_manager(client)):
        await create_rebalancer(http, "conflict", [deploy_ref("busy")])
        done = await finished(http, "conflict")
    assert client.conflicts == 1
    assert observed(done) == [("busy", "Successful", "")]
    assert (REGISTRY.get_sample_value("workload_rebalancer_workloads_total", {"result": "Retry"}) or 0.0) == retries
    binding = await get_or_none(http, RB.format(ns="default") + "/busy-deployment")
    assert binding is not None and binding["metadata"]["labels"]["in-between"] == "yes"
    assert binding["spec"]["rescheduleTriggeredAt"]


def triggered_counts(events: list[dict[str, Any]]) -> Counter[str]:
    """How many times each workload was reported triggered, over the RescheduleTriggered Events and their counts."""
    counts: Counter[str] = Counter()
    for event in events:
        for described in event["message"].split(": ", 1)[1].split(", "):
            counts[described] += event.get("count", 1)
    return counts


async def test_a_retry_after_a_partial_success_reads_its_own_status_write(
        kube: KubeClient, server: ApiServer, http: aiohttp.ClientSession) -> None:
    """One workload triggered, the other failing once: the retry must start from the status it wrote (the
    first workload Successful), not from the informer's older copy, or it triggers and reports it again."""
    client = LaggingRebalancerWatch(kube)
    mgr = Manager(client, ManagerOptions(name="test-cm", metrics_bind_address="0", health_probe_bind_address="0"))
    workloadrebalancer.setup(mgr, rate_limiter_options=RateLimiterOptions(base_delay=0.005, max_delay=1.0))
    await make_binding(http, "Deployment", "steady")
    await make_binding(http, "Deployment", "flaky")
    fault = server.inject_fault("PUT", "/resourcebindings/flaky-deployment", code=500, times=1)
    async with running(mgr):
        wr = await create_rebalancer(http, "partial", [deploy_ref("steady"), deploy_ref("flaky")])
        done = await finished(http, "partial")
        await mgr.flush_events()
        client.caught_up.set()
    assert fault.times == 0
    assert observed(done) == [("flaky", "Successful", ""), ("steady", "Successful", "")]
    assert client.binding_writes == {"steady-deployment": 1, "flaky-deployment": 1}
    events = await events_about(http, wr, "RescheduleTriggered")
    assert triggered_counts(events) == {"apps/v1 Deployment default/steady": 1, "apps/v1 Deployment default/flaky": 1}


@pytest.mark.parametrize("page_not_found", [True, False], ids=["text-plain-404", "status-404-without-details"])
async def test_a_404_that_names_no_binding_never_fails_a_workload(manager: Manager, server: ApiServer,
                                                                  http: aiohttp.ClientSession,
                                                                  page_not_found: bool) -> None:
    """A restarting kube-apiserver answers text/plain ``404 page not found`` on custom resources for a
    moment; a Status 404 without details means the same ("not served"). The item stays pending and is
    retried; only a NotFound that names the binding fails one."""
    await make_binding(http, "Deployment", "kept")
    fault = server.inject_fault("PUT", "/resourcebindings/kept-deployment", code=404, reason="NotFound",
                                times=3, page_not_found=page_not_found)
    await create_rebalancer(http, "unserved", [deploy_ref("kept"), deploy_ref("gone")])
    done = await finished(http, "unserved")
    assert fault.times == 0
    assert observed(done) == [("gone", "Failed", "ReferencedBindingNotFound"), ("kept", "Successful", "")]


@pytest.mark.slow
async def test_a_restart_window_never_fails_a_workload(manager: Manager, server: ApiServer,
                                                       http: aiohttp.ClientSession) -> None:
    """The whole restart (503 server is starting, then the 404 window) while an item is being retried."""
    await make_binding(http, "Deployment", "kept")
    fault = server.inject_fault("PUT", "/resourcebindings/kept-deployment", code=500, times=1000)
    await create_rebalancer(http, "restart", [deploy_ref("kept")])

    async def pending() -> dict[str, Any] | None:
        wr = await get_or_none(http, f"{WR}/restart")
        return wr if wr and wr.get("status") else None

    await eventually(pending)
    server.simulate_restart(0.2, 1.0)
    fault.times = 0
    done = await finished(http, "restart", timeout=40)  # the 503 asks clients to wait 10 s, as kube's does
    assert observed(done) == [("kept", "Successful", "")]


async def test_many_workloads_are_all_triggered(manager: Manager, http: aiohttp.ClientSession) -> None:
    """More workloads than are written at once (TRIGGER_CONCURRENCY): every binding gets the trigger."""
    names = [f"app-{i:02d}" for i in range(4 * workloadrebalancer.TRIGGER_CONCURRENCY + 3)]
    for name in names:
        await make_binding(http, "Deployment", name)
    wr = await create_rebalancer(http, "many", [deploy_ref(n) for n in reversed(names)])
    done = await finished(http, "many")
    assert observed(done) == [(n, "Successful", "") for n in names]
    for name in names:
        binding = await get_or_none(http, RB.format(ns="default") + f"/{name}-deployment")
        assert binding is not None
        assert binding["spec"]["rescheduleTriggeredAt"] == wr["metadata"]["creationTimestamp"]


async def test_two_entries_for_one_binding_both_succeed(manager: Manager, http: aiohttp.ClientSession) -> None:
    """Two apiVersions of one Deployment name one binding: the writes race, the loser retries, both succeed."""
    await make_binding(http, "Deployment", "shared")
    wr = await create_rebalancer(http, "same-binding", [
        deploy_ref("shared"), {**deploy_ref("shared"), "apiVersion": "apps/v1beta1"}])
    done = await finished(http, "same-binding")
    assert [(i["workload"]["apiVersion"], i.get("result")) for i in done["status"]["observedWorkloads"]] == [
        ("apps/v1", "Successful"), ("apps/v1beta1", "Successful")]
    binding = await get_or_none(http, RB.format(ns="default") + "/shared-deployment")
    assert binding is not None
    assert binding["spec"]["rescheduleTriggeredAt"] == wr["metadata"]["creationTimestamp"]


# ----------------------------------------------------------------------------- bad input


async def test_bad_input_gets_documented_results(manager: Manager, http: aiohttp.ClientSession) -> None:
    await make_binding(http, "Role", "system:controller:tom", api_version="rbac.authorization.k8s.io/v1")
    workloads = [
        {"apiVersion": "example.io/v1", "kind": "NoSuchKind", "name": "x", "namespace": "default"},
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "no-namespace"},  # namespaced kind, no namespace
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "name": "system:controller:tom",
         "namespace": "default"},
        deploy_ref("twice"), deploy_ref("twice"),
    ]
    await create_rebalancer(http, "bad", workloads)
    done = await finished(http, "bad")
    assert observed(done) == [
        ("no-namespace", "Failed", "ReferencedBindingNotFound"),
        ("twice", "Failed", "ReferencedBindingNotFound"),
        ("x", "Failed", "ReferencedBindingNotFound"),
        ("system:controller:tom", "Successful", ""),
    ]


# ----------------------------------------------------------------------------- TTL


async def test_ttl_zero_deletes_right_after_finishing(manager: Manager, http: aiohttp.ClientSession) -> None:
    await make_binding(http, "Deployment", "foo")
    await create_rebalancer(http, "ttl0", [deploy_ref("foo")], ttl=0)

    async def gone() -> bool:
        return await get_or_none(http, f"{WR}/ttl0") is None

    await eventually(gone)
    binding = await get_or_none(http, RB.format(ns="default") + "/foo-deployment")
    assert binding is not None and binding["spec"]["rescheduleTriggeredAt"] != HOUR_AGO


@pytest.mark.slow
async def test_ttl_deletes_after_the_ttl_not_before(manager: Manager, http: aiohttp.ClientSession) -> None:
    await make_binding(http, "Deployment", "foo")
    await create_rebalancer(http, "ttl2", [deploy_ref("foo")], ttl=2)
    done = await finished(http, "ttl2")
    finish = parse_time(done["status"]["finishTime"])

    async def gone() -> bool:
        return await get_or_none(http, f"{WR}/ttl2") is None

    await eventually(gone, timeout=10)
    assert now() >= finish + timedelta(seconds=2)


async def test_unset_ttl_never_deletes(manager: Manager, http: aiohttp.ClientSession) -> None:
    await make_binding(http, "Deployment", "foo")
    await create_rebalancer(http, "keep", [deploy_ref("foo")])
    await finished(http, "keep")
    cleaner = next(c for c in manager.controllers if c.name == ttlcleaner.NAME)
    await eventually(lambda: _idle(cleaner.queue))  # the cleaner has looked at the finished rebalancer
    assert await get_or_none(http, f"{WR}/keep") is not None


def _idle(queue: Any) -> bool:
    return len(queue) == 0 and queue.processing() == 0


@pytest.mark.slow
async def test_editing_the_spec_restarts_the_clock(manager: Manager, http: aiohttp.ClientSession) -> None:
    await make_binding(http, "Deployment", "foo")
    await create_rebalancer(http, "clock", [deploy_ref("foo")])
    first = await finished(http, "clock")
    async with http.patch(f"{WR}/clock", json={"spec": {"ttlSecondsAfterFinished": 2}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200
        edited_at = now()

    async def refinished() -> dict[str, Any] | None:
        wr = await get_or_none(http, f"{WR}/clock")
        return wr if wr is None or wr["status"].get("observedGeneration") == 2 else None

    second = await eventually(refinished)
    if second is not None:
        assert parse_time(second["status"]["finishTime"]) >= edited_at.replace(microsecond=0) - timedelta(seconds=1)
        assert second["status"]["finishTime"] >= first["status"]["finishTime"]

    async def gone() -> bool:
        return await get_or_none(http, f"{WR}/clock") is None

    await eventually(gone, timeout=10)
    assert now() >= edited_at + timedelta(seconds=1)


@pytest.mark.slow
async def test_retrying_rebalancer_is_never_deleted(manager: Manager, server: ApiServer,
                                                    http: aiohttp.ClientSession) -> None:
    await make_binding(http, "Deployment", "stuck")
    fault = server.inject_fault("PUT", "/resourcebindings/stuck-deployment", code=500, times=1000)
    await create_rebalancer(http, "stuck", [deploy_ref("stuck")], ttl=0)

    async def failed_several_times() -> bool:
        return fault.times <= 995

    await eventually(failed_several_times)
    wr = await get_or_none(http, f"{WR}/stuck")
    assert wr is not None and "finishTime" not in wr["status"]
    fault.times = 0

    async def gone() -> bool:
        return await get_or_none(http, f"{WR}/stuck") is None

    await eventually(gone)


# ----------------------------------------------------------------------------- trigger rule


def test_already_triggered_rule() -> None:
    created = parse_time("2024-05-25T09:50:10Z")
    later, much_later = created + timedelta(seconds=2), created + timedelta(seconds=9)

    def rule(existing: datetime, last: datetime | None, *, first: bool = False, own: str | None = None) -> bool:
        return already_triggered(existing, last, created, trigger_time(created, last, much_later),
                                 first_generation=first, own=own)

    assert not rule(created - timedelta(hours=1), created - timedelta(hours=1))  # an older one: write ours
    assert rule(later, created - timedelta(hours=1))  # newer than ours and pending
    assert rule(later, created)  # since the creation, not consumed yet: a fresh schedule is coming
    assert rule(later, later, first=True)  # consumed, generation 1: Karmada's rule
    assert not rule(later, later)  # consumed, someone else's, the workload added since: one of its own
    assert rule(later, later, own=format_time(later))  # consumed, but ours: a retry must not write a second
    newer = later + timedelta(seconds=3)
    assert rule(newer, newer, own=format_time(later))  # consumed, newer than ours: ours was answered as well
    assert rule(created, None)  # never scheduled: the first schedule is fresh


def test_trigger_time_rule() -> None:
    created = parse_time("2024-05-25T09:49:51Z")
    assert trigger_time(created, None, created) == created
    assert trigger_time(created, parse_time("2024-05-25T09:49:50Z"), created) == created
    same_second = parse_time("2024-05-25T09:49:51Z")
    assert trigger_time(created, same_second, created + timedelta(milliseconds=300)) == \
        parse_time("2024-05-25T09:49:52Z")
    later = parse_time("2024-05-25T09:50:10Z")
    assert trigger_time(created, later, created) == parse_time("2024-05-25T09:50:11Z")


async def test_trigger_for_a_binding_scheduled_this_second_is_written_when_its_second_comes(
        manager: Manager, http: aiohttp.ClientSession) -> None:
    """A binding scheduled in the rebalancer's own second gets the next second as trigger, written no
    earlier than that second: the scheduler, stamping lastScheduledTime with its clock, then consumes it."""
    scheduled = format_time(now())
    await make_binding(http, "Deployment", "fresh", triggered=None, scheduled=scheduled)
    await create_rebalancer(http, "same-second", [deploy_ref("fresh")])
    wr = await finished(http, "same-second")
    rb = await get_or_none(http, RB.format(ns="default") + "/fresh-deployment")
    assert rb is not None
    trigger = parse_time(rb["spec"]["rescheduleTriggeredAt"])
    assert trigger > parse_time(scheduled)
    assert parse_time(wr["status"]["finishTime"]) >= trigger  # written once its second had come


# ----------------------------------------------------------------------------- e2e flow (rebalancer's part)


@pytest.mark.slow
async def test_e2e_flow_statuses_triggers_update_and_ttl(manager: Manager, http: aiohttp.ClientSession) -> None:
    """Karmada's e2e steps 3-5 as far as the rebalancer is concerned (the rescheduling itself is the
    scheduler's, simulated by the dev plane): exact status lists, triggers, a workload update, TTL."""
    async with http.post("/api/v1/namespaces", json={"metadata": {"name": "testns"}}) as r:
        assert r.status == 201
    await make_binding(http, "Deployment", "deploy", ns="testns")
    await make_binding(http, "Deployment", "newadded", ns="testns")
    await make_binding(http, "ClusterRole", "clusterrole", ns="", api_version="rbac.authorization.k8s.io/v1")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "clusterrole"}
    wr = await create_rebalancer(http, "e2e", [deploy_ref("deploy", "testns"), role,
                                               deploy_ref("notexist", "testns")])
    first = await finished(http, "e2e")
    assert observed(first) == [("deploy", "Successful", ""), ("notexist", "Failed", "ReferencedBindingNotFound"),
                               ("clusterrole", "Successful", "")]
    created = wr["metadata"]["creationTimestamp"]
    rb = await get_or_none(http, RB.format(ns="testns") + "/deploy-deployment")
    crb = await get_or_none(http, f"{CRB}/clusterrole-clusterrole")
    assert rb is not None and crb is not None
    assert rb["spec"]["rescheduleTriggeredAt"] == crb["spec"]["rescheduleTriggeredAt"] == created

    async with http.patch(f"{WR}/e2e", json={"spec": {"workloads": [role, deploy_ref("newadded", "testns")]}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200

    async def second() -> dict[str, Any] | None:
        current = await get_or_none(http, f"{WR}/e2e")
        return current if current and current["status"].get("observedGeneration") == 2 else None

    updated = await eventually(second)
    assert observed(updated) == [("deploy", "Successful", ""), ("newadded", "Successful", ""),
                                 ("clusterrole", "Successful", "")]

    async with http.patch(f"{WR}/e2e", json={"spec": {"ttlSecondsAfterFinished": 1}},
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200

    async def gone() -> bool:
        return await get_or_none(http, f"{WR}/e2e") is None

    await eventually(gone, timeout=10)
