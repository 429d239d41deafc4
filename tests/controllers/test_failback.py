"""clusterFailback against the dev API server, with hand-written Clusters and bindings over real HTTP.

The window is short (1 s) so that each test takes a few seconds; every wait is a condition with a deadline.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from prometheus_client import REGISTRY

from controller_manager.client import KubeClient, Resource
from controller_manager.manager import Manager, ManagerOptions
from controller_manager.ratelimiter import RateLimiterOptions
from controllers.app import main
from controllers.failback import controller as failback
from controllers.failback.recovery import EVICTED_FROM_ANNOTATION, RecoveryWindows
from devplane.apiserver.server import ApiServer
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from karmada_api.resources import WORKLOAD_REBALANCERS
from tests.conftest import events_about, eventually, get_or_none, running, send

CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
RB = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
WR = "/apis/apps.karmada.io/v1alpha1/workloadrebalancers"
NO_EXECUTE = {"key": "workload-rebalancer-test", "effect": "NoExecute"}
WINDOW = 1.0


@asynccontextmanager
async def controller(kube: KubeClient, *, max_workloads: int = 100, window: float = WINDOW) -> AsyncIterator[Manager]:
    mgr = Manager(kube, ManagerOptions(name="test-cm", metrics_bind_address="0", health_probe_bind_address="0"))
    options = failback.FailbackOptions(stabilization_window=window, max_workloads=max_workloads, rebalancer_ttl=60)
    failback.setup(mgr, options, rate_limiter_options=RateLimiterOptions(base_delay=0.05, max_delay=1.0))
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


async def make_binding(http: aiohttp.ClientSession, name: str, clusters: list[str],
                       placement: dict[str, Any] | None = None) -> dict[str, Any]:
    annotations = {APPLIED_PLACEMENT_ANNOTATION: json.dumps(placement)} if placement else {}
    body = {"metadata": {"name": f"{name}-deployment", "annotations": annotations},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": "default"},
                     "replicas": 3, "clusters": [{"name": c, "replicas": 1} for c in clusters]}}
    return await send(http, "POST", RB, body)


async def evict(http: aiohttp.ClientSession, binding: dict[str, Any], cluster: str, keep: list[str]) -> None:
    """What the taint manager does: the cluster leaves spec.clusters with a graceful-eviction task."""
    await send(http, "PATCH", f"{RB}/{binding['metadata']['name']}",
               {"spec": {"clusters": [{"name": c, "replicas": 1} for c in keep],
                         "gracefulEvictionTasks": [{"fromCluster": cluster, "reason": "TaintUntolerated",
                                                    "producer": "TaintManager"}]}})


def record_of(binding: dict[str, Any] | None) -> str | None:
    return ((binding or {}).get("metadata", {}).get("annotations") or {}).get(EVICTED_FROM_ANNOTATION)


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
        await eventually(recorded(http, "foo", None))
        triggered = await eventually(lambda: events_about(http, sick, "FailbackTriggered"))
        assert made[0]["metadata"]["name"] in triggered[0]["message"]
    assert counter("failback_rebalancers_created_total", "member1") == created_before + 1
    assert counter("failback_workloads_total", "member1") == workloads_before + 1


class LostCreateAnswer(KubeClient):
    """The first rebalancer create is stored by the server, but its answer is lost (as in a timeout)."""

    def __init__(self, base: KubeClient) -> None:
        super().__init__(base.api_client, qps=0)
        self.lost = False

    async def create(self, resource: Resource, obj: dict[str, Any], namespace: str = "") -> dict[str, Any]:
        created = await super().create(resource, obj, namespace)
        if resource == WORKLOAD_REBALANCERS and not self.lost:
            self.lost = True
            raise TimeoutError("the answer to the create was lost")
        return created


async def test_a_create_whose_answer_was_lost_is_not_made_twice(kube: KubeClient,
                                                                http: aiohttp.ClientSession) -> None:
    await make_cluster(http, "member1")
    foo = await make_binding(http, "foo", ["member1", "member2"])
    lossy = LostCreateAnswer(kube)
    async with controller(lossy):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        await evict(http, foo, "member1", ["member2"])
        await eventually(recorded(http, "foo", "member1"))
        await set_health(http, "member1", taints=[])
        await eventually(recorded(http, "foo", None), timeout=10)  # the retry found it, and cleared the record
    assert lossy.lost
    assert len(await rebalancers(http)) == 1


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
        await eventually(recorded(http, "foo", None))


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
        made = await eventually(lambda: rebalancers(http))
        assert sorted(len(r["spec"]["workloads"]) for r in made) == [1, 2]
        listed = sorted(w["name"] for r in made for w in r["spec"]["workloads"])
        assert listed == names  # "moved" is not listed
        await eventually(recorded(http, "moved", None))


async def test_a_failure_after_one_rebalancer_repeats_only_the_unfinished_part(
        server: ApiServer, kube: KubeClient, http: aiohttp.ClientSession) -> None:
    """Rebalancer, then its records: a failed write after the second rebalancer (chunks a,b | c) leaves
    a and b done; the retry finds c's rebalancer (its batch label) and clears c: no rebalancer is made twice."""
    await make_cluster(http, "member1")
    names = ["a", "b", "c"]
    bindings = [await make_binding(http, n, ["member1", "member2"]) for n in names]
    async with controller(kube, max_workloads=2):
        await set_health(http, "member1", taints=[NO_EXECUTE])
        for binding in bindings:
            await evict(http, binding, "member1", ["member2"])
        for n in names:
            await eventually(recorded(http, n, "member1"))
        # the re-read of c's record (after the rebalancer listing c) fails once
        fault = server.inject_fault("GET", "/resourcebindings/c-deployment")
        await set_health(http, "member1", taints=[])
        await eventually(lambda: fault.times == 0, timeout=10)
        for n in names:
            await eventually(recorded(http, n, None), timeout=10)
        listed = sorted(w["name"] for r in await rebalancers(http) for w in r["spec"]["workloads"])
        assert listed == ["a", "b", "c"]


@pytest.mark.parametrize("flag", ["--failback-max-workloads=0", "--failback-stabilization-window=5x",
                                  "--failback-rebalancer-ttl=-1s"])
def test_bad_flags_exit_2_with_one_line(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--kubeconfig", "/nonexistent", flag])
    assert exit_info.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(errors) == 1 and flag.split("=", maxsplit=1)[0] in errors[0]
