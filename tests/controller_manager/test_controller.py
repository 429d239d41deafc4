"""Controllers and the manager against the dev API server: retries, results, metrics, probes."""

from __future__ import annotations

import asyncio
import itertools
import time

import aiohttp
from kubernetes_asyncio import client
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString

from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.manager import Manager, ManagerOptions
from controller_manager.metrics import WORKQUEUE_BUCKETS
from controller_manager.predicate import GenerationChangedPredicate
from controller_manager.ratelimiter import RateLimiterOptions
from controller_manager.reconcile import Request, Result
from kube_api.resources import CONFIGMAPS, DEPLOYMENTS
from tests.conftest import eventually

# controller-runtime's metric names (controller_manager/metrics.py), as exposed: counters carry _total,
# histograms _bucket...
ARCHITECTURE_METRICS = [
    "controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total",
    "controller_runtime_reconcile_time_seconds", "workqueue_depth", "workqueue_adds_total",
    "workqueue_queue_duration_seconds", "workqueue_work_duration_seconds", "workqueue_retries_total",
    "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor_seconds",
    "leader_election_master_status", "rest_client_requests_total",
]


def make_manager(kube: KubeClient, name: str, **options: object) -> Manager:
    return Manager(kube, ManagerOptions(name=name, metrics_bind_address="127.0.0.1:0",
                                        health_probe_bind_address="127.0.0.1:0", **options))  # type: ignore[arg-type]


async def run_in_background(manager: Manager) -> asyncio.Task[None]:
    task = asyncio.create_task(manager.run())
    await eventually(lambda: _ready(manager, task))
    return task


async def _ready(manager: Manager, task: asyncio.Task[None]) -> bool:
    if task.done():
        task.result()
    return "health" in manager.bound and "metrics" in manager.bound


async def run_noop_controller(kube: KubeClient, name: str) -> tuple[Manager, asyncio.Task[None]]:
    """A running manager with one controller, ``name``, that reconciles ConfigMaps doing nothing."""

    async def reconcile(request: Request) -> None:
        return None

    manager = make_manager(kube, name)
    controller = Controller(name, reconcile)
    controller.watches(manager.informer(CONFIGMAPS))
    manager.add_controller(controller)
    return manager, await run_in_background(manager)


async def stop(manager: Manager, task: asyncio.Task[None]) -> None:
    manager.request_shutdown()
    await asyncio.wait_for(task, 10)


async def test_raising_reconcile_is_retried_with_growing_delay_and_worker_survives(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    attempts: list[float] = []
    others: list[str] = []

    async def reconcile(request: Request) -> Result:
        if request.name == "flaky":
            attempts.append(time.monotonic())
            if len(attempts) < 5:
                raise RuntimeError("boom")
        else:
            others.append(request.name)
        return Result()

    manager = make_manager(kube, "retry-test")
    informer = manager.informer(CONFIGMAPS, "default")
    controller = Controller("retry-test", reconcile, workers=1,
                            rate_limiter_options=RateLimiterOptions(base_delay=0.05, max_delay=10.0))
    controller.watches(informer)
    manager.add_controller(controller)
    task = await run_in_background(manager)
    try:
        async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "flaky"}}) as r:
            assert r.status == 201
        await eventually(lambda: len(attempts) >= 5, timeout=10)
        gaps = [b - a for a, b in itertools.pairwise(attempts)]
        assert all(later > earlier for earlier, later in itertools.pairwise(gaps)), gaps
        assert gaps[0] >= 0.04  # base delay 50 ms, then 100, 200, 400
        # the same single worker still serves other keys
        async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": "calm"}}) as r:
            assert r.status == 201
        await eventually(lambda: "calm" in others)
        body = await _scrape(manager)
        assert _sample(body, "controller_runtime_reconcile_errors_total", controller="retry-test") == 4
        assert _sample(body, "controller_runtime_reconcile_total", controller="retry-test", result="error") == 4
        assert _sample(body, "workqueue_retries_total", name="retry-test") >= 4
    finally:
        await stop(manager, task)




async def test_requeue_after_and_generation_predicate(kube: KubeClient, http: aiohttp.ClientSession) -> None:
    runs: list[str] = []

    async def reconcile(request: Request) -> Result:
        runs.append(request.name)
        return Result(requeue_after=0.2) if runs.count(request.name) == 1 else Result()

    manager = make_manager(kube, "requeue-test")
    controller = Controller("requeue-test", reconcile)
    controller.watches(manager.informer(DEPLOYMENTS, "default"), predicates=[GenerationChangedPredicate()])
    manager.add_controller(controller)
    task = await run_in_background(manager)
    try:
        deploy = {"metadata": {"name": "web"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                                                         "template": {"metadata": {"labels": {"a": "b"}},
                                                                      "spec": {"containers": [{"name": "c",
                                                                                              "image": "x"}]}}}}
        async with http.post("/apis/apps/v1/namespaces/default/deployments", json=deploy) as r:
            assert r.status == 201
        await eventually(lambda: runs.count("web") >= 2)  # once for the add, once after requeue_after
        async with http.patch("/apis/apps/v1/namespaces/default/deployments/web/status",
                              json={"status": {"replicas": 1}},
                              headers={"Content-Type": "application/merge-patch+json"}) as r:
            assert r.status == 200
        async with http.patch("/apis/apps/v1/namespaces/default/deployments/web",
                              json={"spec": {"replicas": 2}},
                              headers={"Content-Type": "application/merge-patch+json"}) as r:
            assert r.status == 200
        await eventually(lambda: runs.count("web") >= 3)
        body = await _scrape(manager)
        assert runs.count("web") == 3  # the status-only write did not trigger a reconcile
        assert _sample(body, "controller_runtime_reconcile_total", controller="requeue-test",
                       result="requeue_after") == 1
    finally:
        await stop(manager, task)



async def test_metrics_parse_and_carry_every_architecture_name(kube: KubeClient) -> None:
    manager, task = await run_noop_controller(kube, "metrics-test")
    try:
        body = await _scrape(manager)
        names = {m.name for m in text_string_to_metric_families(body)}
        exposed = set()
        for family in text_string_to_metric_families(body):
            exposed.update(s.name for s in family.samples)
        for name in ARCHITECTURE_METRICS:
            assert name in exposed or name.removesuffix("_total") in names, name
        assert not any(s.endswith("_created") for s in exposed)
        assert _sample(body, "controller_runtime_max_concurrent_reconciles", controller="metrics-test") == 1
    finally:
        await stop(manager, task)


async def test_readyz_is_not_ready_before_caches_sync(tmp_path: object) -> None:
    # A server that is not there yet: the manager serves probes but cannot sync.
    kube = KubeClient(client.ApiClient(client.Configuration(host="http://127.0.0.1:9")), qps=0)
    manager = make_manager(kube, "ready-test")
    controller = Controller("ready-test", lambda r: asyncio.sleep(0))  # type: ignore[arg-type,return-value]
    controller.watches(manager.informer(CONFIGMAPS))
    manager.add_controller(controller)
    task = await run_in_background(manager)
    try:
        host, port = manager.bound["health"]
        async with aiohttp.ClientSession() as h:
            async with h.get(f"http://{host}:{port}/readyz") as r:
                assert r.status == 500
                assert "[-]informer-sync failed: reason withheld" in await r.text()
            async with h.get(f"http://{host}:{port}/healthz") as r:
                assert r.status == 200
                assert await r.text() == "ok"
    finally:
        await stop(manager, task)
        await kube.close()


async def test_readyz_turns_ready_after_sync(kube: KubeClient) -> None:
    manager = make_manager(kube, "ready-later")
    controller = Controller("ready-later", lambda r: asyncio.sleep(0))  # type: ignore[arg-type,return-value]
    controller.watches(manager.informer(CONFIGMAPS))
    manager.add_controller(controller)
    task = await run_in_background(manager)
    try:
        host, port = manager.bound["health"]
        async with aiohttp.ClientSession() as h:
            async def ready() -> bool:
                async with h.get(f"http://{host}:{port}/readyz") as r:
                    return r.status == 200 and await r.text() == "ok"

            await eventually(ready)
    finally:
        await stop(manager, task)


async def _scrape(manager: Manager) -> str:
    host, port = manager.bound["metrics"]
    async with aiohttp.ClientSession() as h, h.get(f"http://{host}:{port}/metrics") as r:
        assert r.status == 200
        return await r.text()


def _sample(body: str, metric: str, **labels: str) -> float:
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            if sample.name == metric and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    raise AssertionError(f"no sample {metric}{labels}")


async def test_a_bad_reconcile_return_value_is_an_error_and_the_worker_survives(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    seen: list[str] = []

    async def reconcile(request: Request) -> Result:
        seen.append(request.name)
        if request.name == "bad":
            return True  # type: ignore[return-value]
        return Result()

    manager = make_manager(kube, "bad-return")
    controller = Controller("bad-return", reconcile, workers=1,
                            rate_limiter_options=RateLimiterOptions(base_delay=5.0, max_delay=5.0))
    controller.watches(manager.informer(CONFIGMAPS, "default"))
    manager.add_controller(controller)
    task = await run_in_background(manager)
    try:
        for name in ("bad", "fine"):
            async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": name}}) as r:
                assert r.status == 201
        await eventually(lambda: "fine" in seen)
        body = await _scrape(manager)
        assert _sample(body, "controller_runtime_reconcile_errors_total", controller="bad-return") == 1
    finally:
        await stop(manager, task)


async def test_shutdown_drops_the_backlog_and_waits_only_for_running_reconciles(
        kube: KubeClient, http: aiohttp.ClientSession) -> None:
    running: list[str] = []

    async def slow(request: Request) -> None:
        running.append(request.name)
        await asyncio.sleep(0.05)

    for i in range(60):
        async with http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": f"c{i}"}}) as r:
            assert r.status == 201
    manager = make_manager(kube, "backlog")
    controller = Controller("backlog", slow, workers=2)
    controller.watches(manager.informer(CONFIGMAPS, "default"))
    manager.add_controller(controller)
    task = await run_in_background(manager)
    await eventually(lambda: len(running) >= 2)
    started = time.monotonic()
    await stop(manager, task)
    assert time.monotonic() - started < 1.0  # 60 x 50 ms / 2 workers would take 1.5 s
    assert len(running) < 60



async def test_metric_types_labels_and_buckets_match_controller_runtime(kube: KubeClient) -> None:
    manager, task = await run_noop_controller(kube, "types-test")
    try:
        families = {f.name: f for f in text_string_to_metric_families(await _scrape(manager))}
        expected = {
            "controller_runtime_reconcile": ("counter", {"controller", "result"}),
            "controller_runtime_reconcile_errors": ("counter", {"controller"}),
            "controller_runtime_reconcile_time_seconds": ("histogram", {"controller"}),
            "controller_runtime_max_concurrent_reconciles": ("gauge", {"controller"}),
            "controller_runtime_active_workers": ("gauge", {"controller"}),
            "workqueue_depth": ("gauge", {"name", "controller", "priority"}),
            "workqueue_adds": ("counter", {"name", "controller"}),
            "workqueue_queue_duration_seconds": ("histogram", {"name", "controller"}),
            "workqueue_retries": ("counter", {"name", "controller"}),
        }
        for name, (kind, labels) in expected.items():
            family = families[name]
            assert family.type == kind, name
            sample = next(s for s in family.samples if s.labels.get("controller") == "types-test")
            assert set(sample.labels) - {"le"} == labels, name
        reconcile_le = [s.labels["le"] for s in families["controller_runtime_reconcile_time_seconds"].samples
                        if s.name.endswith("_bucket") and s.labels["controller"] == "types-test"]
        assert reconcile_le[:3] == ["0.005", "0.01", "0.025"] and reconcile_le[-2:] == ["60.0", "+Inf"]
        queue_le = [s.labels["le"] for s in families["workqueue_queue_duration_seconds"].samples
                    if s.name.endswith("_bucket") and s.labels["controller"] == "types-test"]
        assert queue_le == [floatToGoString(b) for b in WORKQUEUE_BUCKETS] + ["+Inf"]
        assert WORKQUEUE_BUCKETS[3] == 9.999999999999999e-06  # multiplied step by step, as Go does
    finally:
        await stop(manager, task)
