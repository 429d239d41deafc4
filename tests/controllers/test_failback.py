"""clusterFailback against the dev API server, with hand-written Clusters and bindings over real HTTP.

The window is short (1 s) so that each test takes a few seconds; every wait is a condition with a deadline.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
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
from controller_manager.ratelimiter import RateLimiterOptions
from controller_manager.resource import Resource
from controllers.app import main
from controllers.failback import controller as failback
from controllers.failback import recovery, wiring
from controllers.failback.options import FailbackOptions
from controllers.failback.progress import (
    EVICTED_AT_ANNOTATION,
    FAILING_BACK_ANNOTATION,
    OPT_OUT_ANNOTATION,
    PAUSED_ANNOTATION,
    PP_NAME_ANNOTATION,
    PP_NAMESPACE_ANNOTATION,
    RESUME_ANNOTATION,
    ROUND_ANNOTATION,
    batch_body,
    skipped_change,
)
from controllers.failback.recorder import DecisionOutdated, rewrite
from controllers.failback.recovery import EVICTED_FROM_ANNOTATION, RecoveryWindows
from devplane.apiserver.server import ApiServer
from karmada_api.bindings import RB_KIND
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from karmada_api.resources import RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from karmada_api.shapes import Workload
from kube_api.timeutil import format_time, now, now_text
from tests.conftest import events_about, eventually, get_or_none, running, send

CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
RB = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
WR = "/apis/apps.karmada.io/v1alpha1/workloadrebalancers"
PP = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"
NO_EXECUTE = {"key": "workload-rebalancer-test", "effect": "NoExecute"}
WINDOW = 1.0


DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


@asynccontextmanager
async def controller(kube: KubeClient, *, max_workloads: int = 100, window: float = WINDOW, max_concurrent: int = 10,
                     deadline: float = 60.0) -> AsyncIterator[Manager]:
    mgr = Manager(kube, ManagerOptions(name="test-cm", metrics_bind_address="0", health_probe_bind_address="0"))
    options = FailbackOptions(stabilization_window=window, max_workloads=max_workloads, rebalancer_ttl=60,
                              max_concurrent=max_concurrent, progress_deadline=deadline)
    wiring.setup(mgr, options, rate_limiter_options=RateLimiterOptions(base_delay=0.05, max_delay=1.0))
    async with running(mgr):
        yield mgr


async def make_cluster(http: aiohttp.ClientSession, name: str) -> dict[str, Any]:
    await send(http, "POST", CLUSTERS, {"metadata": {"name": name}, "spec": {"syncMode": "Push"}})
    return await set_health(http, name, ready=True, taints=[])


async def set_health(http: aiohttp.ClientSession, name: str, *, ready: bool | None = None,
                     taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    if taints is not None:
        obj = await send(http, "PATCH", f"{CLUSTERS}/{name}", {"spec": {"taints": taints}})
    if ready is not None:
        condition = {"type": "Ready", "status": "True" if ready else "False", "reason": "Test", "message": "",
                     "lastTransitionTime": "2024-01-01T00:00:00Z"}
        obj = await send(http, "PATCH", f"{CLUSTERS}/{name}/status", {"status": {"conditions": [condition]}})
    return obj


async def make_template(http: aiohttp.ClientSession, name: str) -> None:
    """The Deployment the binding is for, reporting its 3 replicas ready (as Karmada aggregates them)."""
    labels = {"app": name}
    await send(http, "POST", DEPLOY, {
        "metadata": {"name": name}, "spec": {"replicas": 3, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    await send(http, "PATCH", f"{DEPLOY}/{name}/status",
                {"status": {"replicas": 3, "readyReplicas": 3, "observedGeneration": 1}})


async def make_healthy(http: aiohttp.ClientSession, name: str, clusters: list[str] | dict[str, int]) -> None:
    """What Karmada does after a fail-back rebalancer: the reschedule (triggered at the rebalancer's
    creationTimestamp) puts the workload on ``clusters`` (one replica each, or as many as given), whose members
    report its replicas ready."""
    listing = [r for r in await rebalancers(http) if any(w["name"] == name for w in r["spec"]["workloads"])]
    trigger = max(r["metadata"]["creationTimestamp"] for r in listing)
    assigned = clusters if isinstance(clusters, dict) else dict.fromkeys(clusters, 1)
    binding = await send(http, "PATCH", f"{RB}/{name}-deployment",
                         {"spec": {"rescheduleTriggeredAt": trigger,
                                   "clusters": [{"name": c, "replicas": n} for c, n in assigned.items()]}})
    items = [{"clusterName": c, "applied": True, "status": {"replicas": n, "readyReplicas": n}}
             for c, n in assigned.items()]
    await send(http, "PATCH", f"{RB}/{name}-deployment/status",
               {"status": {"schedulerObservedGeneration": binding["metadata"]["generation"],
                           "lastScheduledTime": trigger, "aggregatedStatus": items}})


async def make_binding(http: aiohttp.ClientSession, name: str, clusters: list[str],
                       placement: dict[str, Any] | None = None, policy: str | None = None) -> dict[str, Any]:
    await make_template(http, name)
    annotations = {APPLIED_PLACEMENT_ANNOTATION: json.dumps(placement)} if placement else {}
    if policy is not None:
        annotations |= {PP_NAME_ANNOTATION: policy, PP_NAMESPACE_ANNOTATION: "default"}
    body = {"metadata": {"name": f"{name}-deployment", "annotations": annotations},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": "default"},
                     "replicas": 3, "clusters": [{"name": c, "replicas": 1} for c in clusters]}}
    return await send(http, "POST", RB, body)


async def evict(http: aiohttp.ClientSession, binding: dict[str, Any], cluster: str, keep: list[str], *,
                over: bool = True) -> None:
    """What the taint manager does: the cluster leaves spec.clusters with a graceful-eviction task. ``over``: and
    what Karmada's graceful-eviction controller does once the workload is healthy on ``keep``: the task goes."""
    path = f"{RB}/{binding['metadata']['name']}"
    await send(http, "PATCH", path, {"spec": {"clusters": [{"name": c, "replicas": 1} for c in keep],
                                              "gracefulEvictionTasks": [{"fromCluster": cluster,
                                                                         "reason": "TaintUntolerated",
                                                                         "producer": "TaintManager"}]}})
    if over:
        await send(http, "PATCH", path, {"spec": {"gracefulEvictionTasks": None}})


def record_of(binding: dict[str, Any] | None) -> str | None:
    return ((binding or {}).get("metadata", {}).get("annotations") or {}).get(EVICTED_FROM_ANNOTATION)


def in_flight_of(binding: dict[str, Any] | None) -> list[str]:
    return sorted(json.loads(((binding or {}).get("metadata", {}).get("annotations") or {})
                             .get(FAILING_BACK_ANNOTATION) or "{}"))


def failing_back(http: aiohttp.ClientSession, name: str) -> Callable[[], Any]:
    async def check() -> bool:
        return in_flight_of(await get_or_none(http, f"{RB}/{name}-deployment")) == ["member1"]
    return check


async def rebalancers(http: aiohttp.ClientSession) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (await send(http, "GET", WR))["items"]
    return items


def failback_windows(mgr: Manager) -> RecoveryWindows:
    """The recovery windows of the running cluster-failback reconciler (to wait on its observations)."""
    reconciler = next(c for c in mgr.controllers if c.name == failback.FAILBACK_NAME)._reconcile
    windows: RecoveryWindows = reconciler.__self__.windows  # type: ignore[attr-defined]
    return windows


def counter(name: str, cluster: str) -> float:
    return REGISTRY.get_sample_value(name, {"cluster": cluster}) or 0.0


def recorded(http: aiohttp.ClientSession, name: str, value: str | None) -> Callable[[], Any]:
    async def check() -> bool:
        return record_of(await get_or_none(http, f"{RB}/{name}-deployment")) == value
    return check


async def test_eviction_is_recorded_and_fails_back_after_the_window(kube: KubeClient,
                                                                    http: aiohttp.ClientSession) -> None:
    await make_cluster(http, "member1")
    await make_cluster(http, "member2")
    foo = await make_binding(http, "foo", ["member1", "member2"])
    created_before = counter("failback_rebalancers_created_total", "member1")
    workloads_before = counter("failback_workloads_total", "member1")
    async with controller(kube):
        sick = await set_health(http, "member1", taints=[NO_EXECUTE])
        await evict(http, foo, "member1", ["member2"])
        await eventually(recorded(http, "foo", "member1"))
        healthy = await set_health(http, "member1", taints=[])
        assert await rebalancers(http) == []  # nothing before the window
        scheduled = await eventually(lambda: events_about(http, healthy, "FailbackScheduled"))
        assert "1 evicted workload(s)" in scheduled[0]["message"]
        made = await eventually(lambda: rebalancers(http), timeout=10)
        assert made[0]["metadata"]["name"].startswith("failback-member1-")
        assert made[0]["spec"] == {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo",
                                                  "namespace": "default"}], "ttlSecondsAfterFinished": 60}
        await eventually(failing_back(http, "foo"))
        assert record_of(await get_or_none(http, f"{RB}/foo-deployment")) == "member1"  # until it is healthy
        await make_healthy(http, "foo", ["member1", "member2"])
        await eventually(recorded(http, "foo", None))
        assert in_flight_of(await get_or_none(http, f"{RB}/foo-deployment")) == []
        triggered = await eventually(lambda: events_about(http, sick, "FailbackTriggered"))
        assert made[0]["metadata"]["name"] in triggered[0]["message"]
        assert await events_about(http, foo, "FailbackNotPlaced") == []  # back where it was evicted from
    assert counter("failback_rebalancers_created_total", "member1") == created_before + 1
    assert counter("failback_workloads_total", "member1") == workloads_before + 1


@pytest.mark.parametrize("placed", [{"member2": 1}, {"member1": 0, "member2": 1}])
async def test_a_fail_back_the_scheduler_placed_elsewhere_ends_with_a_warning(
        kube: KubeClient, http: aiohttp.ClientSession, placed: dict[str, int]) -> None:
    """The fresh schedule leaves member1 out (excluded for a moment the recovery check did not see), or lists it
    with no replica: the workload is healthy on member2 only, so its fail-back is over and its record goes, not
    tried again; a FailbackNotPlaced Warning on the binding says so instead of letting the move look done."""
    await make_cluster(http, "member1")
    await make_cluster(http, "member2")
    foo = await make_binding(http, "foo", ["member1", "member2"])
    async with controller(kube):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        await evict(http, foo, "member1", ["member2"])
        await eventually(recorded(http, "foo", "member1"))
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "foo"), timeout=10)
        await make_healthy(http, "foo", placed)
        await eventually(recorded(http, "foo", None))
        binding = await get_or_none(http, f"{RB}/foo-deployment")
        warned = await eventually(lambda: events_about(http, binding, "FailbackNotPlaced"))
    assert [(e["type"], e["message"]) for e in warned] == [(
        "Warning", "fail-back to cluster member1 is over without a replica there: Karmada's scheduler placed the "
                   "workload on member2; it is not failed back again (a WorkloadRebalancer asks for another fresh "
                   "schedule)")]


class BindingPatchFails(KubeClient):
    """The first merge patch of one binding gets a 500 before it reaches the server; the others go through."""

    def __init__(self, base: KubeClient, name: str) -> None:
        super().__init__(base.api_client, qps=0)
        self.name = name
        self.failed = False

    async def patch(self, resource: Resource, name: str, patch: Any, **kwargs: Any) -> dict[str, Any]:
        if resource == RESOURCE_BINDINGS and name == self.name and not self.failed:
            self.failed = True
            raise ApiError(500, "InternalError", "Internal error occurred: etcdserver: request timed out")
        return await super().patch(resource, name, patch, **kwargs)


class FinishAnswerLost(KubeClient):
    """The first merge patch that ends a binding's fail-back (its in-flight mark, written before, removed) is stored,
    and its answer lost (the connection drops), as in an API server restart; the other requests go through."""

    def __init__(self, base: KubeClient) -> None:
        super().__init__(base.api_client, qps=0)
        self.flying = self.lost = False
        self.cache: Indexer | None = None
        """The controller's binding cache: the answer is lost once the watch has brought the write there, so
        that the retry sees the binding no longer in flight."""

    async def patch(self, resource: Resource, name: str, patch: Any, **kwargs: Any) -> dict[str, Any]:
        written = await super().patch(resource, name, patch, **kwargs)
        annotations = (patch.get("metadata") or {}).get("annotations") or {}
        if resource == RESOURCE_BINDINGS and annotations.get(FAILING_BACK_ANNOTATION):
            self.flying = True
        elif resource == RESOURCE_BINDINGS and self.flying and not self.lost and FAILING_BACK_ANNOTATION in annotations:
            self.lost = True
            cache, key, version = self.cache, objects.key(written), int(objects.resource_version(written))

            async def cached() -> bool:
                seen = cache.get(key) if cache is not None else None
                return seen is not None and int(objects.resource_version(seen)) >= version

            await eventually(cached, what="the stored write in the controller's cache")
            raise aiohttp.ServerDisconnectedError()
        return written


async def test_a_fail_back_placed_elsewhere_whose_finishing_answer_was_lost_still_gets_its_warning(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """The write that ends the fail-back is stored, its answer lost. The retry sees the binding no longer in flight
    (the watch brought the write): the FailbackNotPlaced Warning is owed all the same, once."""
    await make_cluster(http, "member1")
    await make_cluster(http, "member2")
    foo = await make_binding(http, "foo", ["member1", "member2"])
    losing = FinishAnswerLost(kube)
    async with controller(losing) as mgr:
        losing.cache = mgr.informer(RESOURCE_BINDINGS).store
        await set_health(http, "member1", taints=[NO_EXECUTE])
        await evict(http, foo, "member1", ["member2"])
        await eventually(recorded(http, "foo", "member1"))
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "foo"), timeout=10)
        await make_healthy(http, "foo", {"member2": 1})
        await eventually(recorded(http, "foo", None))
        binding = await get_or_none(http, f"{RB}/foo-deployment")
        warned = await eventually(lambda: events_about(http, binding, "FailbackNotPlaced"))
        assert losing.lost
    assert [(e["type"], e.get("count", 1)) for e in warned] == [("Warning", 1)]


async def not_placed_warnings(http: aiohttp.ClientSession, names: list[str]) -> list[str] | None:
    """The names whose binding has a FailbackNotPlaced Event, once each has one."""
    warned = [n for n in names
              if await events_about(http, await get_or_none(http, f"{RB}/{n}-deployment"), "FailbackNotPlaced")]
    return sorted(warned) if len(warned) == len(names) else None


async def test_a_not_placed_warning_is_not_lost_when_another_write_of_the_reconcile_fails(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """foo and bar end their fail-back in one reconcile, both placed on member2 only. foo's record goes; bar's
    write fails, so the reconcile is retried, and that retry no longer sees foo as in flight: its Warning must
    come from the first reconcile all the same."""
    await evicted_from_member1(kube, http, ["foo", "bar"])
    async with controller(kube, window=QUICK):
        await set_health(http, "member1", taints=[])
        for name in ("foo", "bar"):
            await eventually(failing_back(http, name), timeout=10)
    for name in ("foo", "bar"):  # while no controller runs: its next start finds both over at once
        await make_healthy(http, name, ["member2"])
    flaky = BindingPatchFails(kube, "bar-deployment")
    async with controller(flaky, window=QUICK):
        for name in ("foo", "bar"):
            await eventually(recorded(http, name, None))
        warned = await eventually(lambda: not_placed_warnings(http, ["foo", "bar"]))
    assert flaky.failed
    assert warned == ["bar", "foo"]


async def eviction_event(http: aiohttp.ClientSession, binding: dict[str, Any], cluster: str, at: str) -> None:
    """The Event Karmada's graceful-eviction controller records on the binding when the eviction is over."""
    meta = binding["metadata"]
    await send(http, "POST", "/api/v1/namespaces/default/events", {
        "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}"},
        "involvedObject": {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", "namespace": "default",
                           "name": meta["name"], "uid": meta["uid"]},
        "reason": "EvictWorkloadFromClusterSucceed", "message": f"Evict from cluster {cluster} succeed.",
        "type": "Normal", "source": {"component": "graceful-eviction-controller"},
        "firstTimestamp": at, "lastTimestamp": at, "count": 1})


async def test_an_eviction_over_before_the_recorder_started_is_found_in_karmadas_event(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """The controller-manager down for a whole eviction (task added and removed): the binding shows nothing, but
    Karmada's EvictWorkloadFromClusterSucceed Event does; once started, it records member1 and fails it back. An
    older Event about a binding rescheduled since is left alone (its fail-back ran already)."""
    await make_cluster(http, "member1")
    await make_cluster(http, "member2")
    foo = await make_binding(http, "foo", ["member2"])  # member1's replica evicted while nothing of ours ran
    bar = await make_binding(http, "bar", ["member2"])
    await send(http, "PATCH", f"{RB}/bar-deployment", {"spec": {"rescheduleTriggeredAt": "2026-11-27T10:00:00Z"}})
    await eviction_event(http, foo, "member1", now_text())
    await eviction_event(http, bar, "member1", "2026-11-27T09:00:00Z")
    async with controller(kube):
        await eventually(recorded(http, "foo", "member1"))
        await eventually(lambda: rebalancers(http), timeout=10)  # member1 is healthy: after the window, back
        await eventually(failing_back(http, "foo"))
        assert record_of(await get_or_none(http, f"{RB}/bar-deployment")) is None
        assert [w["name"] for r in await rebalancers(http) for w in r["spec"]["workloads"]] == ["foo"]


LOST, TIMED_OUT, THROTTLED = "answer lost", "timed out", "throttled"


class RebalancerCreateFaults(KubeClient):
    """WorkloadRebalancer creates, counted from 1, that fail as ``faults`` says; the others go through.

    * LOST: the server stores it, but its answer is lost (a TimeoutError, as a timeout);
    * TIMED_OUT: it times out before the server stores it, and may still land later (the server was slow, not
      gone): its body is kept in :attr:`late` for the test to send;
    * THROTTLED: 429 before it reaches the server (which says nothing of an earlier create).

    ``meanwhile`` runs before a LOST or TIMED_OUT failure is raised: what changes while the controller waits
    to retry."""

    def __init__(self, base: KubeClient, faults: dict[int, str]) -> None:
        super().__init__(base.api_client, qps=0)
        self.faults = faults
        self.creates = 0
        self.injected: list[str] = []
        self.late: dict[str, Any] | None = None
        self.meanwhile: Callable[[], Any] | None = None

    @property
    def lost(self) -> bool:
        return LOST in self.injected

    async def create(self, resource: Resource, obj: dict[str, Any], namespace: str = "") -> dict[str, Any]:
        if resource != WORKLOAD_REBALANCERS:
            return await super().create(resource, obj, namespace)
        self.creates += 1
        fault = self.faults.get(self.creates)
        if fault is not None:
            self.injected.append(fault)
        if fault == THROTTLED:
            raise ApiError(429, "TooManyRequests", "the server has received too many requests")
        if fault == TIMED_OUT:
            self.late = obj
        else:
            created = await super().create(resource, obj, namespace)
            if fault is None:
                return created
        if self.meanwhile is not None:
            await self.meanwhile()
        raise TimeoutError(f"the create: {fault}")


async def test_a_create_whose_answer_was_lost_is_not_made_twice(kube: KubeClient,
                                                                http: aiohttp.ClientSession) -> None:
    await make_cluster(http, "member1")
    foo = await make_binding(http, "foo", ["member1", "member2"])
    lossy = RebalancerCreateFaults(kube, {1: LOST})
    async with controller(lossy):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        await evict(http, foo, "member1", ["member2"])
        await eventually(recorded(http, "foo", "member1"))
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "foo"), timeout=10)  # the retry met 409: it is the batch
    assert lossy.lost
    assert len(await rebalancers(http)) == 1


@asynccontextmanager
async def c_started_while_b_heals(kube: KubeClient, http: aiohttp.ClientSession,
                                  client: RebalancerCreateFaults) -> AsyncIterator[Manager]:
    """a, b, c, d evicted from member1, failed back 2 at a time by a controller using ``client``: [a, b], then c
    alone in the slot a frees. c's create fails, and meanwhile b gets healthy (seen by the controller's informer),
    so a batch decided afresh would be [c, d]. Yields once c is in flight."""
    await evicted_from_member1(kube, http, ["a", "b", "c", "d"])
    async with controller(client, window=QUICK, max_concurrent=2) as mgr:
        bindings = mgr.informer(RESOURCE_BINDINGS).store

        async def b_heals() -> None:
            await make_healthy(http, "b", ["member1", "member2"])
            await eventually(lambda: bool((bindings.get("default/b-deployment") or {}).get("status")))

        client.meanwhile = b_heals
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "b"))
        await make_healthy(http, "a", ["member1", "member2"])
        await eventually(failing_back(http, "c"), timeout=10)
        yield mgr


async def test_a_create_that_timed_out_is_sent_again_as_it_was_even_when_the_next_batch_would_differ(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """Batch [a, b], then c alone takes the slot a freed; its create times out, and meanwhile b is healthy too.
    A batch decided afresh would be [c, d] under another name, and when the timed-out create landed after all,
    c would be rescheduled twice. The retry sends the very same create, so the late one meets 409."""
    slow = RebalancerCreateFaults(kube, {2: TIMED_OUT})
    async with c_started_while_b_heals(kube, http, slow):
        assert slow.late is not None and [w["name"] for w in slow.late["spec"]["workloads"]] == ["c"]
        async with http.post(WR, json=slow.late) as late:  # the timed-out create lands now
            assert late.status == 409, await late.text()
        await eventually(failing_back(http, "d"))
    assert await listed_names(http) == ["a", "b", "c", "d"]  # each once


async def test_a_throttled_retry_of_a_lost_create_does_not_settle_it(kube: KubeClient,
                                                                     http: aiohttp.ClientSession) -> None:
    """c's create is stored, its answer lost, and the retry is throttled (429: this attempt was not stored, which
    says nothing of the first). The batch stays unsettled until a retry meets 409: c is never listed again."""
    lossy = RebalancerCreateFaults(kube, {2: LOST, 3: THROTTLED})
    async with c_started_while_b_heals(kube, http, lossy):
        await eventually(failing_back(http, "d"), timeout=10)
    assert lossy.creates >= 4
    assert await listed_names(http) == ["a", "b", "c", "d"]  # each once


async def test_a_timed_out_create_is_not_sent_again_once_its_workloads_need_no_fail_back(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """b's create times out; meanwhile b's record goes (it is back by other means). The retry only looks for
    b's batch (not there) instead of moving b again, and c comes next."""
    names = ["a", "b", "c"]
    await evicted_from_member1(kube, http, names)
    slow = RebalancerCreateFaults(kube, {2: TIMED_OUT})
    async with controller(slow, window=QUICK, max_concurrent=1) as mgr:
        bindings = mgr.informer(RESOURCE_BINDINGS).store

        async def b_needs_nothing() -> None:
            await send(http, "PATCH", f"{RB}/b-deployment", {"metadata": {"annotations": {
                EVICTED_FROM_ANNOTATION: None}}})
            await eventually(lambda: record_of(bindings.get("default/b-deployment")) is None)

        slow.meanwhile = b_needs_nothing
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "a"))
        await make_healthy(http, "a", ["member1", "member2"])
        await eventually(failing_back(http, "c"), timeout=10)
        assert slow.late is not None and [w["name"] for w in slow.late["spec"]["workloads"]] == ["b"]
    assert await listed_names(http) == ["a", "c"]


@pytest.mark.slow
async def test_a_flapping_cluster_never_triggers_anything(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    await make_cluster(http, "member1")
    await make_binding(http, "foo", ["member1"])
    async with controller(kube) as mgr:
        await set_health(http, "member1", ready=False)
        await send(http, "PATCH", f"{RB}/foo-deployment", {"spec": {"clusters": None}})  # dropped while not Ready
        await eventually(recorded(http, "foo", "member1"))
        windows = failback_windows(mgr)
        started = time.monotonic()
        while time.monotonic() - started < 3 * WINDOW:  # healthy, sick, healthy... for three windows
            healthy = await set_health(http, "member1", ready=True)
            await eventually(lambda: "member1" in windows.started)
            await set_health(http, "member1", ready=False)
            await eventually(lambda: "member1" not in windows.started)
        assert await events_about(http, healthy, "FailbackScheduled")
        assert await rebalancers(http) == []
        assert record_of(await get_or_none(http, f"{RB}/foo-deployment")) == "member1"


@pytest.mark.slow
async def test_a_restart_in_the_window_still_fails_back_after_a_full_window(kube: KubeClient,
                                                                            http: aiohttp.ClientSession) -> None:
    await make_cluster(http, "member1")
    foo = await make_binding(http, "foo", ["member1", "member2"])
    window = 3 * WINDOW  # the "nothing yet" checks below must not race the end of the window
    async with controller(kube, window=window):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        await evict(http, foo, "member1", ["member2"])
        await eventually(recorded(http, "foo", "member1"))
        healthy = await set_health(http, "member1", taints=[])
        await eventually(lambda: events_about(http, healthy, "FailbackScheduled"))
    assert await rebalancers(http) == []  # stopped within the window: nothing yet, the record is kept
    assert record_of(await get_or_none(http, f"{RB}/foo-deployment")) == "member1"

    async def scheduled_twice() -> bool:
        found = await events_about(http, healthy, "FailbackScheduled")
        return bool(len(found) == 2 or (len(found) == 1 and found[0].get("count", 1) == 2))

    async with controller(kube, window=window):
        await eventually(scheduled_twice)  # a new window
        assert await rebalancers(http) == []
        await eventually(lambda: rebalancers(http), timeout=10 + window)
        await eventually(failing_back(http, "foo"))


async def test_skipped_bindings_get_an_event_and_rebalancers_are_chunked(kube: KubeClient,
                                                                         http: aiohttp.ClientSession) -> None:
    await make_cluster(http, "member1")
    elsewhere = {"clusterAffinity": {"clusterNames": ["member2"]}}
    names = ["a", "b", "c"]
    bindings = [await make_binding(http, n, ["member1", "member2"]) for n in names]
    moved = await make_binding(http, "moved", ["member1", "member2"], placement=elsewhere)
    async with controller(kube, max_workloads=2):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        for binding in [*bindings, moved]:
            await evict(http, binding, "member1", ["member2"])
        for n in [*names, "moved"]:
            await eventually(recorded(http, n, "member1"))
        await set_health(http, "member1", taints=[])
        skipped = await eventually(lambda: events_about(http, moved, "FailbackSkipped"), timeout=10)
        assert "no longer matches cluster member1" in skipped[0]["message"]
        async def both() -> list[dict[str, Any]]:
            found = await rebalancers(http)
            return found if len(found) == 2 else []

        made = await eventually(both)
        assert sorted(len(r["spec"]["workloads"]) for r in made) == [1, 2]
        listed = sorted(w["name"] for r in made for w in r["spec"]["workloads"])
        assert listed == names  # "moved" is not listed
        await eventually(recorded(http, "moved", None))
        for n in names:
            await eventually(failing_back(http, n))


async def test_a_skip_stored_with_its_answer_lost_still_gets_its_warning(
        server: ApiServer, kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """The skip's write lands but its answer is lost (a 504 after the write). The retry finds the record gone (the
    watch brought the write), so nothing is left to decide there: the Warning of the decision that was stored is
    recorded then, once."""
    await make_cluster(http, "member1")
    moved = await make_binding(http, "moved", ["member1", "member2"],
                               placement={"clusterAffinity": {"clusterNames": ["member2"]}})
    async with controller(kube, window=QUICK):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        await evict(http, moved, "member1", ["member2"])
        await eventually(recorded(http, "moved", "member1"))
        lost = server.inject_fault("PATCH", "/resourcebindings/moved-deployment", code=504, reason="Timeout",
                                   after_dispatch=True)
        await set_health(http, "member1", taints=[])
        await eventually(recorded(http, "moved", None))
        warnings = await eventually(lambda: events_about(http, moved, "FailbackSkipped"))
        assert lost.times == 0
        assert [(e["message"], e.get("count", 1)) for e in warnings] == [
            ("not failed back to cluster member1: its placement's cluster affinity no longer matches cluster "
             "member1", 1)]


def recorder_reconciles() -> float:
    return sum(REGISTRY.get_sample_value("controller_runtime_reconcile_total",
                                         {"controller": failback.RECORDER_NAME, "result": result}) or 0.0
               for result in ("success", "error", "requeue", "requeue_after"))


async def test_a_skip_waits_for_karmadas_eviction_and_is_made_once_even_across_a_restart(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """The workload's placement no longer allows member1, so its fail-back is skipped, but not while Karmada's
    graceful-eviction task still names member1: its EvictWorkloadFromClusterSucceed Event, sent when the task ends,
    would postdate the decision and record the eviction again. Once the task is over: one skip. Neither that Event
    (kept an hour) nor a restarted controller-manager, which finds it again, records or skips it a second time."""
    await make_cluster(http, "member1")
    moved = await make_binding(http, "moved", ["member1", "member2"],
                               placement={"clusterAffinity": {"clusterNames": ["member2"]}})
    async with controller(kube, window=QUICK):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        await evict(http, moved, "member1", ["member2"], over=False)
        await eventually(recorded(http, "moved", "member1"))
        await set_health(http, "member1", taints=[])
        await eventually(lambda: events_about(http, moved, "FailbackWaiting"))
        assert await events_about(http, moved, "FailbackSkipped") == []
        assert await recorded(http, "moved", "member1")()
        await send(http, "PATCH", f"{RB}/moved-deployment", {"spec": {"gracefulEvictionTasks": None}})
        await eventually(lambda: events_about(http, moved, "FailbackSkipped"))
        await eventually(recorded(http, "moved", None))
        before = recorder_reconciles()
        await eviction_event(http, moved, "member1", now_text())  # Karmada's, as the task ended
        await eventually(lambda: recorder_reconciles() > before)
        assert await recorded(http, "moved", None)()
    before = recorder_reconciles()
    async with controller(kube, window=QUICK):
        await eventually(lambda: recorder_reconciles() > before)  # the restarted recorder has judged the Event
        assert await recorded(http, "moved", None)()
    warnings = await events_about(http, moved, "FailbackSkipped")
    assert sum(e.get("count", 1) for e in warnings) == 1


async def test_a_failure_after_one_rebalancer_repeats_only_the_unfinished_part(
        server: ApiServer, kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """Rebalancer, then its marks: a failed write after the second rebalancer (chunks a,b | c) leaves a and b
    in flight; the retry finds c's rebalancer (its round label) and marks c: no rebalancer is made twice."""
    await make_cluster(http, "member1")
    names = ["a", "b", "c"]
    bindings = [await make_binding(http, n, ["member1", "member2"]) for n in names]
    async with controller(kube, max_workloads=2):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        for binding in bindings:
            await evict(http, binding, "member1", ["member2"])
        for n in names:
            await eventually(recorded(http, n, "member1"))
        # the mark of c (after the rebalancer listing c) fails once
        fault = server.inject_fault("PATCH", "/resourcebindings/c-deployment")
        await set_health(http, "member1", taints=[])
        await eventually(lambda: fault.times == 0, timeout=10)
        for n in names:
            await eventually(failing_back(http, n), timeout=10)
        listed = sorted(w["name"] for r in await rebalancers(http) for w in r["spec"]["workloads"])
        assert listed == ["a", "b", "c"]


@pytest.mark.parametrize("flag", ["--failback-max-workloads=0", "--failback-stabilization-window=5x",
                                  "--failback-rebalancer-ttl=-1s", "--failback-rebalancer-ttl=1000000h",
                                  "--failback-rebalancer-ttl=1.5s", "--failback-max-concurrent=0",
                                  "--failback-max-concurrent=-3", "--failback-progress-deadline=0s",
                                  "--failback-progress-deadline=-1m"])
def test_bad_flags_exit_2_with_one_line(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--kubeconfig", "/nonexistent", flag])
    assert exit_info.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and flag.split("=", maxsplit=1)[0] in errors[0]


# ------------------------------------------------------------------------------------------ progressive fail-back

QUICK = 0.2
"""The window of the progressive tests: only the batches' pace matters there."""


async def evicted_from_member1(kube: KubeClient, http: aiohttp.ClientSession, names: list[str]) -> None:
    """``names`` placed on member1 and member2, then evicted from a tainted member1 (recorded by a controller
    that then stops: the records are on the bindings)."""
    await make_cluster(http, "member1")
    bindings = {n: await make_binding(http, n, ["member1", "member2"]) for n in names}
    async with controller(kube, window=3600):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        for binding in bindings.values():
            await evict(http, binding, "member1", ["member2"])
        for n in names:
            await eventually(recorded(http, n, "member1"))


async def in_flight_names(http: aiohttp.ClientSession) -> list[str]:
    items = (await send(http, "GET", RB))["items"]
    return sorted(b["spec"]["resource"]["name"] for b in items if "member1" in in_flight_of(b))


async def listed_names(http: aiohttp.ClientSession) -> list[str]:
    return sorted(w["name"] for r in await rebalancers(http) for w in r["spec"]["workloads"])


def cluster_event(http: aiohttp.ClientSession, cluster: dict[str, Any], reason: str, count: int = 1) -> Any:
    async def check() -> list[dict[str, Any]]:
        found = await events_about(http, cluster, reason)
        return found if sum(e.get("count", 1) for e in found) >= count else []
    return check


def cluster_annotation(http: aiohttp.ClientSession, name: str, key: str) -> Callable[[], Any]:
    async def read() -> str | None:
        value: str | None = ((await send(http, "GET", f"{CLUSTERS}/{name}"))["metadata"].get("annotations")
                             or {}).get(key)
        return value
    return read


@pytest.mark.slow
async def test_never_more_than_max_concurrent_in_flight(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    names = [f"w{i}" for i in range(7)]
    await evicted_from_member1(kube, http, names)
    most, healed = 0, set()
    async with controller(kube, window=QUICK, max_concurrent=2):
        await set_health(http, "member1", taints=[])

        async def karmada_heals_them() -> bool:  # what the members do, one workload at a time
            nonlocal most
            flying = await in_flight_names(http)
            most = max(most, len(flying))
            for name in flying:
                if name not in healed:
                    healed.add(name)
                    await make_healthy(http, name, ["member1", "member2"])
                    break
            records = [record_of(await get_or_none(http, f"{RB}/{n}-deployment")) for n in names]
            return records == [None] * len(names)

        await eventually(karmada_heals_them, timeout=30)
    assert most == 2  # the budget was used, and never exceeded
    assert await listed_names(http) == names  # each failed back once
    assert len(await rebalancers(http)) >= 4  # in batches


@pytest.mark.slow
async def test_a_stuck_batch_pauses_until_it_is_healthy(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    await evicted_from_member1(kube, http, ["a", "b"])
    async with controller(kube, window=QUICK, max_concurrent=1, deadline=0.5):
        healthy = await set_health(http, "member1", taints=[])
        paused = await eventually(cluster_event(http, healthy, "FailbackPaused"))
        assert "1 workload(s) not healthy within 500ms (Deployment/default/a: not scheduled yet" in paused[0]["message"]
        assert await eventually(cluster_annotation(http, "member1", PAUSED_ANNOTATION))
        assert REGISTRY.get_sample_value("failback_paused_clusters") == 1
        assert await in_flight_names(http) == ["a"] and await listed_names(http) == ["a"]  # b waits
        await make_healthy(http, "a", ["member1", "member2"])
        resumed = await eventually(cluster_event(http, healthy, "FailbackResumed"))
        assert "the workloads that held it are healthy" in resumed[0]["message"]
        await eventually(failing_back(http, "b"))
        assert await cluster_annotation(http, "member1", PAUSED_ANNOTATION)() is None
        assert await listed_names(http) == ["a", "b"]
        await make_healthy(http, "b", ["member1", "member2"])
        await eventually(recorded(http, "b", None))
        await eventually(lambda: REGISTRY.get_sample_value("failback_paused_clusters") == 0)


@pytest.mark.slow
async def test_the_resume_annotation_releases_a_pause_once_and_a_bad_one_changes_nothing(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    await evicted_from_member1(kube, http, ["a", "b"])
    async with controller(kube, window=QUICK, max_concurrent=1, deadline=0.5):
        healthy = await set_health(http, "member1", taints=[])
        await eventually(cluster_event(http, healthy, "FailbackPaused"))
        paused_at = await eventually(cluster_annotation(http, "member1", PAUSED_ANNOTATION))
        await send(http, "PATCH", f"{CLUSTERS}/member1", {"metadata": {"annotations": {RESUME_ANNOTATION: "now"}}})
        invalid = await eventually(cluster_event(http, healthy, "FailbackResumeInvalid"))
        assert invalid[0]["type"] == "Warning" and 'resume="now" is not understood' in invalid[0]["message"]
        assert await cluster_annotation(http, "member1", PAUSED_ANNOTATION)() == paused_at
        assert await in_flight_names(http) == ["a"]
        await send(http, "PATCH", f"{CLUSTERS}/member1", {"metadata": {"annotations": {RESUME_ANNOTATION: paused_at}}})
        resumed = await eventually(cluster_event(http, healthy, "FailbackResumed"))
        assert "given up: Deployment/default/a" in resumed[0]["message"]
        await eventually(recorded(http, "a", None))  # released: its fail-back is over
        await eventually(failing_back(http, "b"))
        # b is stuck too: a new pause, which the old resume value does not release
        await eventually(cluster_event(http, healthy, "FailbackPaused", count=2))
        assert await in_flight_names(http) == ["b"]


@pytest.mark.slow
async def test_a_relapse_stops_the_batches_not_started(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    await evicted_from_member1(kube, http, ["a", "b"])
    window = 1.0
    async with controller(kube, window=window, max_concurrent=1):
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "a"), timeout=10)
        assert await eventually(cluster_annotation(http, "member1", ROUND_ANNOTATION))
        await set_health(http, "member1", ready=False)  # a relapse
        round_of = cluster_annotation(http, "member1", ROUND_ANNOTATION)

        async def round_over() -> bool:
            return await round_of() is None

        await eventually(round_over)
        await make_healthy(http, "a", ["member1", "member2"])  # a's slot frees up, but member1 is sick
        await eventually(recorded(http, "a", None))
        await holds(lambda: b_waits(http), seconds=window + 0.5)  # longer than a window

        await set_health(http, "member1", ready=True)
        await eventually(failing_back(http, "b"), timeout=10)


async def test_an_eviction_while_going_back_keeps_the_record_and_the_workload_goes_back_in_a_new_round(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """a, in flight to member1, is placed there and evicted again (a new graceful-eviction task) so fast that the
    Cluster never looks unhealthy to the controller. Its move is undone: its record stays, it is not taken as
    still going (nor finished when it is healthy on member2 alone); the round ends, and after a new window a
    batch of another name takes it back."""
    await evicted_from_member1(kube, http, ["a", "b"])
    async with controller(kube, window=WINDOW, max_concurrent=1):
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "a"), timeout=10)
        first_round = await eventually(cluster_annotation(http, "member1", ROUND_ANNOTATION))
        trigger = (await rebalancers(http))[0]["metadata"]["creationTimestamp"]
        await rescheduled(http, "a", trigger, ["member1", "member2"], ready=False)  # back, not ready yet
        a = await send(http, "GET", f"{RB}/a-deployment")
        await evict(http, a, "member1", ["member2"])  # the relapse
        await eventually(lambda: undone_in(http, "a"))
        items = [{"clusterName": "member2", "applied": True, "status": {"replicas": 1, "readyReplicas": 1}}]
        await send(http, "PATCH", f"{RB}/a-deployment/status", {"status": {"aggregatedStatus": items}})
        # healthy on member2 alone: not a fail-back that is over; the round of the undone move ends
        await eventually(lambda: round_changed(http, first_round), timeout=10)
        assert record_of(await get_or_none(http, f"{RB}/a-deployment")) == "member1"
        await eventually(failing_back(http, "a"), timeout=10)
        assert await listed_names(http) == ["a", "a"]  # two batches of different names: b still waits
        assert await in_flight_names(http) == ["a"]


async def undone_in(http: aiohttp.ClientSession, name: str) -> bool:
    """Pending again after a relapse: recorded, not in flight, its eviction stamped no earlier than its batch."""
    binding = await get_or_none(http, f"{RB}/{name}-deployment")
    annotations = (binding or {}).get("metadata", {}).get("annotations") or {}
    stamp = json.loads(annotations.get(EVICTED_AT_ANNOTATION) or "{}").get("member1", "")
    began = min(r["metadata"]["creationTimestamp"] for r in await rebalancers(http))
    return record_of(binding) == "member1" and not in_flight_of(binding) and stamp >= began


async def test_a_relapse_before_the_move_landed_leaves_the_workload_to_go_back_later(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """member1 is tainted again before Karmada's scheduler acted on a's batch: the fresh schedule puts a on member2
    alone, healthy there, and no eviction ever happens. That is no finished fail-back: a is pending again, and
    goes back once member1 has recovered for a new window."""
    await evicted_from_member1(kube, http, ["a"])
    async with controller(kube, window=WINDOW, max_concurrent=1):
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "a"), timeout=10)
        await set_health(http, "member1", taints=[NO_EXECUTE])
        trigger = (await rebalancers(http))[0]["metadata"]["creationTimestamp"]
        await rescheduled(http, "a", trigger, ["member2"])  # healthy, on member2 alone
        await eventually(lambda: undone_in(http, "a"), timeout=10)
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "a"), timeout=10)
        assert await listed_names(http) == ["a", "a"]


async def test_a_fail_back_waits_until_karmadas_graceful_eviction_from_the_cluster_is_over(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """member1 recovers while Karmada's graceful eviction from it still runs (the replicas elsewhere not healthy
    yet: the task stays). Karmada's scheduler leaves member1 out while the task names it, so a fail-back then
    would only reschedule foo elsewhere and count as done. It waits for the task to go, then fails foo back."""
    await make_cluster(http, "member1")
    await make_cluster(http, "member2")
    foo = await make_binding(http, "foo", ["member1", "member2"])
    async with controller(kube):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        await evict(http, foo, "member1", ["member2"], over=False)
        await eventually(recorded(http, "foo", "member1"))
        healthy = await set_health(http, "member1", taints=[])
        await eventually(lambda: events_about(http, healthy, "FailbackScheduled"))
        await holds(lambda: nothing_listed(http), seconds=3 * WINDOW)  # the window is over: still nothing
        [waiting] = await eventually(lambda: events_about(http, foo, "FailbackWaiting"))
        assert waiting["message"] == ("not failed back to cluster member1 yet: Karmada's graceful eviction from it is "
                                      "not over (a task of spec.gracefulEvictionTasks names it)")
        assert waiting["count"] == 1  # said once, however often the cluster is looked at
        await send(http, "PATCH", f"{RB}/foo-deployment", {"spec": {"gracefulEvictionTasks": None}})
        await eventually(failing_back(http, "foo"), timeout=10)
        assert await listed_names(http) == ["foo"]


async def test_a_fail_back_waits_while_the_recovered_cluster_is_cordoned_and_goes_on_after(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """member1 comes back Ready but cordoned (``karmadactl cordon``: a NoSchedule taint foo's placement does not
    tolerate): the scheduler would leave it out. A cordon is lifted again, so foo waits, keeps its record and takes
    no slot, instead of being given up; once the cordon goes, foo fails back."""
    cordon = {"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule"}
    await make_cluster(http, "member1")
    await make_cluster(http, "member2")
    foo = await make_binding(http, "foo", ["member1", "member2"],
                             placement={"clusterAffinity": {"clusterNames": ["member1", "member2"]}})
    async with controller(kube):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        await evict(http, foo, "member1", ["member2"])
        await eventually(recorded(http, "foo", "member1"))
        await set_health(http, "member1", taints=[cordon])
        [waiting] = await eventually(lambda: events_about(http, foo, "FailbackWaiting"))
        assert waiting["message"] == ("not failed back to cluster member1 yet: its placement does not tolerate the "
                                      "taint cluster.karmada.io/unschedulable:NoSchedule of cluster member1; it fails "
                                      "back once the taint is removed (or tolerated)")
        await holds(lambda: nothing_listed(http), seconds=3 * WINDOW)
        assert await events_about(http, foo, "FailbackSkipped") == []
        await eventually(recorded(http, "foo", "member1"))  # kept
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "foo"), timeout=10)
        assert await listed_names(http) == ["foo"]


async def test_a_move_in_the_round_is_not_adopted_while_karmadas_eviction_goes_on(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """A round is going on and a, still being evicted from member1 (a task names it), was rescheduled by someone
    in the round: after a restart the round's adoption would take that for a's fail-back, and finish it once a is
    healthy elsewhere. Karmada's scheduler left member1 out, so it waits like any batch for the task to go."""
    await evicted_from_member1(kube, http, ["a"])
    round_start = now().replace(microsecond=0) - timedelta(seconds=5)
    await send(http, "PATCH", f"{CLUSTERS}/member1",
               {"metadata": {"annotations": {ROUND_ANNOTATION: format_time(round_start)}}})
    task = {"fromCluster": "member1", "reason": "TaintUntolerated", "producer": "TaintManager"}
    await send(http, "PATCH", f"{RB}/a-deployment", {"spec": {"rescheduleTriggeredAt": format_time(round_start),
                                                              "gracefulEvictionTasks": [task]}})
    await set_health(http, "member1", taints=[])
    async with controller(kube, window=QUICK):
        await holds(lambda: not_in_flight(http, "a"), seconds=3 * WINDOW)
        await send(http, "PATCH", f"{RB}/a-deployment", {"spec": {"gracefulEvictionTasks": None}})
        await eventually(failing_back(http, "a"), timeout=10)
        assert await listed_names(http) == ["a"]


async def test_a_move_in_the_round_is_not_adopted_while_the_cluster_is_cordoned(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """As above, with a cordon for the eviction: a, whose placement does not tolerate member1's cordon, was
    rescheduled by someone in the round. The scheduler left member1 out, so a restart's adoption must not take that
    move for a's fail-back (it would finish with a elsewhere and drop the record). a waits for the cordon to go."""
    await evicted_from_member1(kube, http, ["a"])
    placement = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}
    round_start = now().replace(microsecond=0) - timedelta(seconds=5)
    await send(http, "PATCH", f"{CLUSTERS}/member1",
               {"metadata": {"annotations": {ROUND_ANNOTATION: format_time(round_start)}}})
    await send(http, "PATCH", f"{RB}/a-deployment", {
        "metadata": {"annotations": {APPLIED_PLACEMENT_ANNOTATION: json.dumps(placement)}},
        "spec": {"rescheduleTriggeredAt": format_time(round_start)}})
    await set_health(http, "member1", taints=[{"key": "cluster.karmada.io/unschedulable", "effect": "NoSchedule"}])
    async with controller(kube, window=QUICK):
        await holds(lambda: not_in_flight(http, "a"), seconds=3 * WINDOW)
        await eventually(recorded(http, "a", "member1"))
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "a"), timeout=10)
        assert await listed_names(http) == ["a"]


async def not_in_flight(http: aiohttp.ClientSession, name: str) -> bool:
    return in_flight_of(await get_or_none(http, f"{RB}/{name}-deployment")) == []


async def nothing_listed(http: aiohttp.ClientSession) -> bool:
    return await rebalancers(http) == [] and in_flight_of(await get_or_none(http, f"{RB}/foo-deployment")) == []


async def in_flight_when_it_went_down(http: aiohttp.ClientSession) -> tuple[dict[str, Any], datetime]:
    """foo in flight back to member1 since a minute ago (its batch's trigger written; rescheduled since, onto member2
    alone, not healthy yet), as a controller-manager that went down left it; the binding and the move's start."""
    await make_cluster(http, "member1")
    await make_cluster(http, "member2")
    foo = await make_binding(http, "foo", ["member2"])
    began = now() - timedelta(seconds=60)
    await send(http, "PATCH", f"{RB}/foo-deployment", {
        "metadata": {"annotations": {EVICTED_FROM_ANNOTATION: "member1",
                                     FAILING_BACK_ANNOTATION: json.dumps({"member1": format_time(began)})}},
        "spec": {"rescheduleTriggeredAt": format_time(began)}})
    return foo, began


async def test_a_relapse_while_the_controller_manager_was_down_is_found_in_karmadas_event(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """foo was in flight back to member1 when the controller-manager went down; meanwhile member1 failed again,
    Karmada evicted foo from it (its task came and went), and member1 recovered. The binding shows no task, only
    Karmada's EvictWorkloadFromClusterSucceed Event, later than the move's start, tells. The move is undone (not
    judged finished once foo is healthy on member2), and foo goes back in a new round."""
    foo, began = await in_flight_when_it_went_down(http)
    await eviction_event(http, foo, "member1", format_time(began + timedelta(seconds=30)))
    async with controller(kube):
        await eventually(lambda: relapse_undone(http, began + timedelta(seconds=30)), timeout=10)
        await rescheduled(http, "foo", format_time(began), ["member2"])  # healthy, and not on member1
        await eventually(lambda: rebalancers(http), timeout=10)  # a new round, after a window
        await eventually(failing_back(http, "foo"), timeout=10)
        assert await listed_names(http) == ["foo"]


async def test_a_relapse_still_going_on_at_a_restart_undoes_the_move(kube: KubeClient,
                                                                      http: aiohttp.ClientSession) -> None:
    """As above, but the controller-manager is back while Karmada's graceful eviction of the relapse still runs:
    its task from member1 is on the binding of a move in flight to member1. No fail-back starts before its
    eviction has ended, so the task is a new eviction: the move is undone at once (not judged finished once foo is
    healthy on member2 and the task gone), and foo goes back in a new round."""
    foo, began = await in_flight_when_it_went_down(http)
    await evict(http, foo, "member1", ["member2"], over=False)  # the relapse, while the controller-manager was down
    async with controller(kube):
        await eventually(lambda: undone_since(http, began), timeout=10)
        await send(http, "PATCH", f"{RB}/foo-deployment", {"spec": {"gracefulEvictionTasks": None}})
        await rescheduled(http, "foo", format_time(began), ["member2"])  # healthy on member2: the eviction is over
        await eventually(failing_back(http, "foo"), timeout=10)  # a new round, after a window
        assert await listed_names(http) == ["foo"]


async def undone_since(http: aiohttp.ClientSession, began: datetime) -> bool:
    binding = await get_or_none(http, f"{RB}/foo-deployment")
    annotations = (binding or {}).get("metadata", {}).get("annotations") or {}
    stamp = json.loads(annotations.get(EVICTED_AT_ANNOTATION) or "{}").get("member1")
    return record_of(binding) == "member1" and not in_flight_of(binding) and stamp is not None and stamp > format_time(
        began)


async def relapse_undone(http: aiohttp.ClientSession, evicted: datetime) -> bool:
    binding = await get_or_none(http, f"{RB}/foo-deployment")
    annotations = (binding or {}).get("metadata", {}).get("annotations") or {}
    stamp = json.loads(annotations.get(EVICTED_AT_ANNOTATION) or "{}").get("member1")
    return record_of(binding) == "member1" and not in_flight_of(binding) and stamp == format_time(evicted)


async def round_changed(http: aiohttp.ClientSession, before: str) -> bool:
    return await cluster_annotation(http, "member1", ROUND_ANNOTATION)() != before


async def test_an_opted_out_policy_is_left_alone(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    await send(http, "POST", PP, {"metadata": {"name": "pinned", "annotations": {OPT_OUT_ANNOTATION: "true"}},
                                  "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}})
    await make_cluster(http, "member1")
    pinned = await make_binding(http, "pinned", ["member1", "member2"], policy="pinned")
    free = await make_binding(http, "free", ["member1", "member2"])
    async with controller(kube, window=QUICK):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        for binding in (pinned, free):
            await evict(http, binding, "member1", ["member2"])
        await eventually(recorded(http, "pinned", "member1"))
        await set_health(http, "member1", taints=[])
        skipped = await eventually(lambda: events_about(http, pinned, "FailbackSkipped"))
        assert "its PropagationPolicy default/pinned opts out of fail-back" in skipped[0]["message"]
        await eventually(failing_back(http, "free"))
        await eventually(recorded(http, "pinned", None))
    assert await listed_names(http) == ["free"]


@pytest.mark.slow
async def test_a_restart_in_the_middle_neither_forgets_nor_repeats_a_batch(kube: KubeClient,
                                                                          http: aiohttp.ClientSession) -> None:
    await evicted_from_member1(kube, http, ["a", "b", "c"])
    async with controller(kube, window=QUICK, max_concurrent=1):
        await set_health(http, "member1", taints=[])
        await eventually(failing_back(http, "a"))
    await make_healthy(http, "a", ["member1", "member2"])  # while it is down
    async with controller(kube, window=QUICK, max_concurrent=1):
        await eventually(recorded(http, "a", None))
        await eventually(failing_back(http, "b"))
    async with controller(kube, window=QUICK, max_concurrent=1):  # b still in flight: nothing new
        await eventually(lambda: failback_windows_idle(http))
        assert await in_flight_names(http) == ["b"]
        await make_healthy(http, "b", ["member1", "member2"])
        await eventually(failing_back(http, "c"))
        await make_healthy(http, "c", ["member1", "member2"])
        await eventually(recorded(http, "c", None))
    assert await listed_names(http) == ["a", "b", "c"]  # each once
    assert await cluster_annotation(http, "member1", ROUND_ANNOTATION)() is None  # the round is over


async def b_waits(http: aiohttp.ClientSession) -> bool:
    return await listed_names(http) == ["a"] and await in_flight_names(http) == []


async def holds(check: Callable[[], Any], *, seconds: float) -> None:
    """``check`` stays true for ``seconds`` (what "nothing happens" looks like), checked as often as it answers."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert await check()


async def failback_windows_idle(http: aiohttp.ClientSession) -> bool:
    return len(await rebalancers(http)) == 2


async def test_a_batch_made_before_a_crash_but_not_marked_is_adopted_not_repeated(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """The previous process created b's batch and died before marking it: b is in flight at once (before a,
    which comes first in order), and never listed again."""
    await evicted_from_member1(kube, http, ["a", "b"])
    round_value = "2026-01-01T00:00:00Z"
    await set_health(http, "member1", taints=[])
    await send(http, "PATCH", f"{CLUSTERS}/member1", {"metadata": {"annotations": {ROUND_ANNOTATION: round_value}}})
    b = Workload(apiVersion="apps/v1", kind="Deployment", namespace="default", name="b")
    await send(http, "POST", WR, batch_body("member1", round_value, [b], ttl_seconds=60))
    async with controller(kube, window=QUICK, max_concurrent=1):
        await eventually(failing_back(http, "b"))
        await holds(lambda: a_waits_for_b(http), seconds=2 * QUICK)  # b holds the only slot
        await make_healthy(http, "b", ["member1", "member2"])
        await eventually(failing_back(http, "a"))
    assert await listed_names(http) == ["a", "b"]


async def a_waits_for_b(http: aiohttp.ClientSession) -> bool:
    return await in_flight_names(http) == ["b"] and await listed_names(http) == ["b"]


async def test_a_batch_made_before_a_crash_and_deleted_by_its_ttl_is_not_made_again(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """The previous process created b's batch and died before marking it; the batch ran and its TTL deleted it,
    so no rebalancer names b any more. b's reschedule was triggered in this round (at its start: "at or after"),
    so b is in flight at once, from that trigger, and is not rescheduled again; a, whose last trigger is from
    before the round, is failed back after it."""
    await evicted_from_member1(kube, http, ["a", "b"])
    round_start = now().replace(microsecond=0) - timedelta(seconds=5)
    await set_health(http, "member1", taints=[])
    await send(http, "PATCH", f"{CLUSTERS}/member1",
               {"metadata": {"annotations": {ROUND_ANNOTATION: format_time(round_start)}}})
    await send(http, "PATCH", f"{RB}/a-deployment",
               {"spec": {"rescheduleTriggeredAt": format_time(round_start - timedelta(seconds=1))}})
    await send(http, "PATCH", f"{RB}/b-deployment", {"spec": {"rescheduleTriggeredAt": format_time(round_start)}})
    async with controller(kube, window=QUICK, max_concurrent=1):
        await eventually(failing_back(http, "b"))
        b = await get_or_none(http, f"{RB}/b-deployment")
        assert json.loads(b["metadata"]["annotations"][FAILING_BACK_ANNOTATION]) == {
            "member1": format_time(round_start)}  # since its trigger
        await holds(lambda: a_waits_for_b_alone(http), seconds=3 * QUICK)  # b holds the only slot
        await rescheduled(http, "b", format_time(round_start), ["member1", "member2"])
        await eventually(recorded(http, "b", None))
        await eventually(failing_back(http, "a"))
    assert await listed_names(http) == ["a"]  # b was never listed again


async def a_waits_for_b_alone(http: aiohttp.ClientSession) -> bool:
    return await in_flight_names(http) == ["b"] and await listed_names(http) == []


async def rescheduled(http: aiohttp.ClientSession, name: str, trigger: str, clusters: list[str], *,
                      ready: bool = True) -> None:
    """What Karmada does after the trigger ``trigger`` of the binding: :func:`make_healthy` without a rebalancer
    (``ready``: the members report its replicas ready; else applied, none ready yet)."""
    binding = await send(http, "PATCH", f"{RB}/{name}-deployment",
                         {"spec": {"rescheduleTriggeredAt": trigger,
                                   "clusters": [{"name": c, "replicas": 1} for c in clusters]}})
    items = [{"clusterName": c, "applied": True, "status": {"replicas": 1, "readyReplicas": int(ready)}}
             for c in clusters]
    await send(http, "PATCH", f"{RB}/{name}-deployment/status",
               {"status": {"schedulerObservedGeneration": binding["metadata"]["generation"],
                           "lastScheduledTime": trigger, "aggregatedStatus": items}})


@pytest.mark.parametrize("placement_now", ["member2 only", "member1 allowed again", "member2 only, evicting again"])
async def test_a_skip_decided_on_a_copy_behind_is_made_only_if_the_binding_still_calls_for_it(
        kube: KubeClient, http: aiohttp.ClientSession, placement_now: str) -> None:
    """A skip is final: the record goes for good. Decided on a cache copy that was behind (the binding changed
    since), its conditional write meets a 409, and the binding read afresh is judged again: still to be skipped,
    the skip is made; allowing the cluster again, or with an eviction from it going on again (a skip waits for
    its end), nothing is written and the decision is made again."""
    member1 = await make_cluster(http, "member1")
    stale = await make_binding(http, "moved", ["member2"], placement={"clusterAffinity": {"clusterNames": ["member2"]}})
    path = f"{RB}/moved-deployment"
    stale = await send(http, "PATCH", path, {"metadata": {"annotations": {EVICTED_FROM_ANNOTATION: "member1"}}})
    names = ["member2"] if placement_now == "member2 only" else ["member1", "member2"]
    await send(http, "PATCH", path, {"metadata": {"annotations": {
        APPLIED_PLACEMENT_ANNOTATION: json.dumps({"clusterAffinity": {"clusterNames": names}})}}})
    if "evicting again" in placement_now:
        await send(http, "PATCH", path, {"spec": {"gracefulEvictionTasks": [
            {"fromCluster": "member1", "reason": "TaintUntolerated", "producer": "TaintManager"}]}})
    assert recovery.skip_stands(stale, member1)  # what the copy behind says

    async def skip() -> dict[str, Any] | None:
        return await rewrite(kube, RB_KIND, "default", "moved-deployment",
                             skipped_change("member1", now()), cached=stale,
                             only_if=lambda fresh: recovery.skip_stands(fresh, member1))

    if placement_now == "member2 only":
        written = await skip()
        assert written is not None and "member1" not in recovery.recorded_clusters(written)
    else:
        with pytest.raises(DecisionOutdated):
            await skip()
        binding = await send(http, "GET", path)
        assert recovery.recorded_clusters(binding) == ["member1"]  # kept: it may still fail back
