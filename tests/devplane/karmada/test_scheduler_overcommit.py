"""``SchedulingOvercommitProtection`` in the simulated scheduler (Karmada f8fdd02's alpha gate, off by default): what a
patched schedule assumes, how the general and accurate estimators deduct it, and when it is forgotten. Off, nothing
changes; on, the rules of ``pkg/scheduler/scheduler.go`` (``updateAssumptionsCache``), ``event_handler.go``,
``pkg/scheduler/cache`` and ``pkg/estimator/client/general.go`` / ``server/.../noderesource``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from kubernetes_asyncio import client as k8s

from controller_manager.client import KubeClient
from controller_manager.manager import Manager, ManagerOptions
from devplane import plane as devplane_plane
from devplane.cli import build_parser
from devplane.config import member_shapes
from devplane.karmada.scheduler import setup_scheduler
from devplane.karmada.scheduler.algorithm import Algorithm
from devplane.karmada.scheduler.assumptions import (
    AssumedWorkload,
    AssumptionCache,
    assumed_workload,
    newly_healthy_clusters,
    record_schedule,
    release_healthy,
)
from devplane.karmada.scheduler.controller import assumption_handler
from devplane.karmada.scheduler.overcommit import (
    accurate_replicas,
    deduct_from_summary,
    general_replicas,
    plane_available_replicas,
)
from devplane.plane import DevPlane, PlaneOptions
from estimator.accurate import NodeUsage
from estimator.general import max_available_replicas as general_max
from karmada_api.resources import RESOURCE_BINDINGS
from kube_api.timeutil import now_text
from tests.conftest import eventually
from tests.devplane.karmada.test_sim_scheduler import (
    DYNAMIC,
    Env,
    clusters_of,
    deployment,
    resource_binding,
    wait_clusters,
)

LARGE = {"resourceRequest": {"cpu": "500m", "memory": "10Mi"}}
MODELS = [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}, {"name": "memory", "min": "0",
                                                                             "max": "4Gi"}]},
          {"grade": 1, "ranges": [{"name": "cpu", "min": "1", "max": "2"}, {"name": "memory", "min": "4Gi",
                                                                             "max": "16Gi"}]}]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def modelled(name: str = "m1", *, nodes: int = 2, models: bool = True) -> dict[str, Any]:
    """A Cluster with ``nodes`` grade-1 nodes (1 CPU, 4Gi at the grade's minimum): 2 LARGE replicas each."""
    summary: dict[str, Any] = {"allocatable": {"cpu": str(8 * nodes), "memory": f"{16 * nodes}Gi",
                                               "pods": str(110 * nodes)},
                               "allocated": {"cpu": "0", "memory": "0", "pods": "0"}}
    if models:
        summary["allocatableModelings"] = [{"grade": 0, "count": 0}, {"grade": 1, "count": nodes}]
    return {"metadata": {"name": name}, "spec": {"resourceModels": MODELS if models else []},
            "status": {"resourceSummary": summary}}


def rb_obj(name: str = "a", *, replicas: int = 3, clusters: list[dict[str, Any]] | None = None,
           status: dict[str, Any] | None = None, requirements: dict[str, Any] | None = None,
           labelled: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns",
                                         "name": name}, "replicas": replicas,
                            "replicaRequirements": requirements or LARGE, "placement": DYNAMIC}
    if clusters is not None:
        spec["clusters"] = clusters
    labels = {"propagationpolicy.karmada.io/permanent-id": "p"} if labelled else {}
    return {"metadata": {"name": f"{name}-deployment", "namespace": "ns", "labels": labels}, "spec": spec,
            "status": status or {}}


def healthy(*clusters: str) -> dict[str, Any]:
    return {"aggregatedStatus": [{"clusterName": name, "health": "Healthy"} for name in clusters]}


def workload(replicas: int, requirements: dict[str, Any] | None = LARGE) -> AssumedWorkload:
    return AssumedWorkload("ns", "w", replicas, requirements)


# ----------------------------------------------------------------------------- the cache and its rules


def test_assume_replaces_per_cluster_and_expires_per_binding() -> None:
    clock = Clock()
    cache = AssumptionCache(ttl=300, clock=clock)
    cache.assume("ns/a", "m1", workload(3))
    cache.assume("ns/a", "m1", workload(5))
    cache.assume("ns/b", "m1", workload(1))
    assert [w.replicas for w in cache.workloads("m1")] == [5, 1]
    clock.now = 200
    cache.assume("ns/b", "m2", workload(2))  # renews b's whole entry, m1 included
    clock.now = 301
    assert [w.replicas for w in cache.workloads("m1")] == [1]  # a expired
    assert cache.by_cluster(["m1", "m2", "m3"]) == {"m1": [workload(1)], "m2": [workload(2)]}
    assert cache.gc() == 1 and not cache.exists("ns/a") and cache.exists("ns/b")
    cache.release_cluster("ns/b", "m1")
    cache.release_cluster("ns/b", "m2")
    assert not cache.exists("ns/b")


def test_record_schedule_assumes_whole_assignments_and_releases_dropped_clusters() -> None:
    cache = AssumptionCache()
    record_schedule(cache, rb_obj(replicas=6), [{"name": "m1", "replicas": 3}, {"name": "m2", "replicas": 3}])
    assert cache.by_cluster(["m1", "m2"]) == {"m1": [assumed_workload(rb_obj()["spec"], 3)],
                                              "m2": [assumed_workload(rb_obj()["spec"], 3)]}
    # scale to 7 from {m1: 3, m2: 3} keeping m2 only: m2 holds all 7 (not the increment), m1 is released
    record_schedule(cache, rb_obj(replicas=7, clusters=[{"name": "m1", "replicas": 3}, {"name": "m2", "replicas": 3}]),
                    [{"name": "m2", "replicas": 7}])
    assert [(name, [w.replicas for w in ws]) for name, ws in cache.by_cluster(["m1", "m2"]).items()] == [("m2", [7])]
    # a FitError patches the clusters away: everything is released
    record_schedule(cache, rb_obj(replicas=7, clusters=[{"name": "m2", "replicas": 7}]), None)
    assert not cache.exists("ns/a-deployment")


def test_non_workloads_assume_nothing() -> None:
    cache = AssumptionCache()
    binding = rb_obj(replicas=0)
    binding["spec"].pop("replicaRequirements")
    record_schedule(cache, binding, [{"name": "m1"}])
    assert len(cache) == 0


def test_healthy_clusters_are_forgotten_once_they_turn_healthy() -> None:
    assert newly_healthy_clusters(healthy("m1"), healthy("m1", "m2")) == ["m2"]
    cache = AssumptionCache()
    record_schedule(cache, rb_obj(), [{"name": "m1", "replicas": 1}, {"name": "m2", "replicas": 2}])
    release_healthy(cache, rb_obj(status=healthy("m1")), rb_obj(status=healthy("m1")))  # no transition
    assert set(cache.by_cluster(["m1", "m2"])) == {"m1", "m2"}
    release_healthy(cache, rb_obj(), rb_obj(status=healthy("m1")))
    assert set(cache.by_cluster(["m1", "m2"])) == {"m2"}


def test_the_binding_handler_forgets_deleted_and_filtered_out_bindings() -> None:
    cache = AssumptionCache()
    handler = assumption_handler(cache)
    record_schedule(cache, rb_obj("a"), [{"name": "m1", "replicas": 1}])
    record_schedule(cache, rb_obj("b"), [{"name": "m1", "replicas": 1}])
    record_schedule(cache, rb_obj("c"), [{"name": "m1", "replicas": 1}, {"name": "m2", "replicas": 1}])
    handler.on_update(rb_obj("c"), rb_obj("c", status=healthy("m2")))
    assert [w.replicas for w in cache.workloads("m2")] == []
    handler.on_delete(rb_obj("a"))
    suspended = rb_obj("b")
    suspended["spec"]["suspension"] = {"scheduling": True}
    handler.on_update(rb_obj("b"), suspended)  # leaves the intake's filter: a delete for Karmada's handlers
    assert (cache.exists("ns/a-deployment"), cache.exists("ns/b-deployment"), cache.exists("ns/c-deployment")) == \
        (False, False, True)


# ----------------------------------------------------------------------------- the estimators' deduction


def test_deduct_from_summary_adds_pods_and_requests_to_allocating() -> None:
    summary = {"allocatable": {"cpu": "4", "pods": "10"}, "allocating": {"cpu": "100m"}}
    deducted = deduct_from_summary(summary, [workload(3), workload(0), workload(2, {"resourceRequest": {
        "cpu": "1", "nvidia.com/gpu": "1"}})])
    assert deducted["allocating"] == {"cpu": "3600m", "pods": "5", "memory": "31457280", "nvidia.com/gpu": "2"}
    assert summary["allocating"] == {"cpu": "100m"}  # a copy


def test_general_estimator_places_assumed_workloads_on_the_model_nodes_first() -> None:
    cluster = modelled()
    assert general_replicas(cluster, LARGE, []) == general_max(cluster, LARGE) == 4
    assert general_replicas(cluster, LARGE, [workload(3)]) == 1  # 2 on the first node, 1 on the second
    assert general_replicas(cluster, LARGE, [workload(4)]) == 0
    assert general_replicas(cluster, LARGE, [workload(9)]) == 0  # what does not fit is not placed, nothing fails
    small = {"resourceRequest": {"cpu": "10m"}}
    # 3 small ones take 30m of the first node: it holds 1 large one, the second 2
    assert general_replicas(cluster, LARGE, [workload(3, small)]) == 3
    # free pods are deducted too: 219 of 220 assumed leave one
    assert general_replicas(cluster, {"resourceRequest": {"cpu": "1m"}}, [workload(219, None)]) == 1


def test_general_estimator_without_models_deducts_from_the_summary() -> None:
    cluster = modelled(models=False)
    assert general_replicas(cluster, LARGE, []) == 32
    assert general_replicas(cluster, LARGE, [workload(3)]) == 29
    assert general_replicas(cluster, None, [workload(3)]) == 217


def node(name: str, cpu: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {},
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}


def pod(name: str, node_name: str, cpu: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": name},
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Running"}}


def test_accurate_estimator_places_assumed_workloads_first_fit_on_matching_nodes() -> None:
    nodes = [node("n2", "2", {"pool": "b"}), node("n1", "2", {"pool": "a"})]
    pods = [pod("p", "n1", "500m")]
    assert accurate_replicas(NodeUsage(nodes, pods), LARGE, []) == 7  # 3 + 4
    assert accurate_replicas(NodeUsage(nodes, pods), LARGE, [workload(4)]) == 3  # n1 (first by name) 3, n2 1
    pinned = {**LARGE, "nodeClaim": {"nodeSelector": {"pool": "b"}}}
    assert accurate_replicas(NodeUsage(nodes, pods), LARGE, [workload(4, pinned)]) == 3  # all on n2
    assert accurate_replicas(NodeUsage(nodes, pods), pinned, [workload(3)]) == 4  # n1 took them; n2 still holds 4


# ----------------------------------------------------------------------------- the algorithm: off and on


def modelled_pair() -> Iterator[dict[str, Any]]:
    for name in ("m1", "m2"):
        cluster = modelled(name)
        cluster["metadata"]["generation"] = 1
        cluster["spec"]["syncMode"] = "Push"
        cluster["status"]["apiEnablements"] = [{"groupVersion": "apps/v1",
                                                "resources": [{"name": "deployments", "kind": "Deployment"}]}]
        yield cluster


async def test_the_gate_off_changes_nothing_and_on_deducts_what_is_assumed() -> None:
    clusters = list(modelled_pair())
    cache = AssumptionCache()
    record_schedule(cache, rb_obj("other"), [{"name": "m1", "replicas": 3}])
    spec = rb_obj("b", replicas=4)["spec"]
    off = await Algorithm(lambda: clusters, assumptions=cache).schedule(spec, {})
    assert off == await Algorithm(lambda: clusters).schedule(spec, {})
    on = await Algorithm(lambda: clusters, overcommit_protection=True, assumptions=cache).schedule(spec, {})
    assert {c["name"]: c["replicas"] for c in off} != {c["name"]: c["replicas"] for c in on} == {"m1": 1, "m2": 3}


def test_the_command_line_gate() -> None:
    parser = build_parser()
    assert parser.parse_args(["up"]).feature_gates == {"SchedulingOvercommitProtection": False}
    on = parser.parse_args(["up", "--feature-gates=SchedulingOvercommitProtection=true"])
    assert on.feature_gates == {"SchedulingOvercommitProtection": True}
    with pytest.raises(SystemExit):
        parser.parse_args(["up", "--feature-gates=NoSuchGate=true"])


# ----------------------------------------------------------------------------- the controller, against an API server


ASSUMED = AssumptionCache()


@pytest.fixture
async def gated(kube: KubeClient) -> AsyncIterator[Env]:
    """The scheduler with the gate on, its assumptions in :data:`ASSUMED` (emptied first)."""
    for key in [f"default/{name}-deployment" for name in ("first", "second")]:
        ASSUMED.release(key)
    manager = Manager(kube, ManagerOptions(name="test-scheduler", metrics_bind_address="127.0.0.1:0",
                                           health_probe_bind_address="127.0.0.1:0"))
    environment = Env(kube, manager, setup_scheduler(manager, overcommit_protection=True, assumptions=ASSUMED))
    yield environment
    if environment.task is not None:
        manager.request_shutdown()
        await asyncio.wait_for(environment.task, 10)


async def reschedule(kube: KubeClient, name: str) -> None:
    """A fresh schedule of the binding (``rescheduleTriggeredAt`` after its last schedule)."""
    current = await kube.get(RESOURCE_BINDINGS, name, "default")
    last = current["status"]["lastScheduledTime"]
    await eventually(lambda: now_text() > last, timeout=3)
    await kube.patch(RESOURCE_BINDINGS, name, {"spec": {"rescheduleTriggeredAt": now_text()}}, namespace="default")


async def test_the_scheduler_assumes_what_it_patched_until_the_binding_turns_healthy_or_goes(gated: Env) -> None:
    await gated.cluster("member1", pods=10)
    await gated.cluster("member2", pods=10)
    first, second = await deployment(gated.kube, "first"), await deployment(gated.kube, "second")
    await gated.start()
    only_member1 = {**DYNAMIC, "clusterAffinity": {"clusterNames": ["member1"]}}
    await resource_binding(gated.kube, first, only_member1, replicas=8)
    await wait_clusters(gated.kube, {"member1": 8}, name="first-deployment")
    # member1's 10 free pods less the 8 in flight: 2 against member2's 10
    await resource_binding(gated.kube, second, DYNAMIC, replicas=6)
    await wait_clusters(gated.kube, {"member1": 1, "member2": 5}, name="second-deployment")

    assert [w.replicas for w in ASSUMED.workloads("member1")] == [8, 1]
    held = await gated.kube.get(RESOURCE_BINDINGS, "first-deployment", "default")
    await gated.kube.update_status(RESOURCE_BINDINGS, {**held, "status": {**held.get("status", {}), **healthy(
        "member1")}})
    await eventually(lambda: not ASSUMED.exists("default/first-deployment"))
    # a fresh schedule of second deducts only its own {member1: 1, member2: 5}, and, as Karmada, adds back what it
    # holds: 10 against 10 (with first still assumed: 2 against 10, {member1: 1, member2: 5} again)
    await reschedule(gated.kube, "second-deployment")
    binding = await wait_clusters(gated.kube, {"member1": 3, "member2": 3}, name="second-deployment")
    assert clusters_of(binding) == {"member1": 3, "member2": 3}
    assert [w.replicas for w in ASSUMED.workloads("member1")] == [3]

    # moved off member1 (its placement edited): what it held there goes with the move, not 5 minutes later
    moved = await gated.kube.get(RESOURCE_BINDINGS, "second-deployment", "default")
    moved["spec"]["placement"] = {**DYNAMIC, "clusterAffinity": {"clusterNames": ["member2"]}}
    await gated.kube.update(RESOURCE_BINDINGS, moved)
    await wait_clusters(gated.kube, {"member2": 6}, name="second-deployment")
    assert ASSUMED.workloads("member1") == []
    assert [w.replicas for w in ASSUMED.workloads("member2")] == [6]

    await gated.kube.delete(RESOURCE_BINDINGS, "second-deployment", "default")
    await eventually(lambda: len(ASSUMED) == 0)


class MemberUsage:
    """A member as the registry hands it to the estimator: only its node usage is read here."""

    def __init__(self, usage: NodeUsage) -> None:
        self.usage = usage


class Members:
    def __init__(self, members: dict[str, MemberUsage]) -> None:
        self.members = members

    def get(self, name: str) -> MemberUsage | None:
        return self.members.get(name)


class MemberEstimates:
    """Stands in for the dev plane's EstimatorClient, whose member caches would need member API servers: the
    accurate answers come from each member's node usage, as the client computes them."""

    def __init__(self, members: dict[str, NodeUsage]) -> None:
        self.registry = Members({name: MemberUsage(usage) for name, usage in members.items()})

    async def max_available_replicas(self, names: list[str], requirements: dict[str, Any] | None) -> dict[str, int]:
        return {name: member.usage.max_available_replicas(requirements)
                for name in names if (member := self.registry.get(name)) is not None}


async def test_the_planes_accurate_estimate_deducts_what_is_assumed_on_each_member() -> None:
    """With the scheduler estimator on, a member holding assumed workloads answers from its node usage with them
    placed first; the general estimate (the Cluster's summary) is deducted too, and the two combine by minimum."""
    usage = NodeUsage([node("n1", "2")], [])  # 4 LARGE replicas; the Cluster's summary says far more
    clusters = [modelled("member1", nodes=2, models=False)]
    estimates = MemberEstimates({"member1": usage})
    answer = await plane_available_replicas(estimates, clusters, LARGE, 4,  # type: ignore[arg-type]
                                            {"member1": [workload(3)]}, accurate=True)
    assert answer == {"member1": 1}  # the member's 4 less the 3 assumed
    general_only = await plane_available_replicas(estimates, clusters, LARGE, 4,  # type: ignore[arg-type]
                                                  {"member1": [workload(3)]}, accurate=False)
    assert general_only["member1"] > 1


@pytest.mark.parametrize("gate", [False, True])
async def test_the_plane_option_is_the_schedulers_gate(monkeypatch: pytest.MonkeyPatch, gate: bool) -> None:
    """``--feature-gates=SchedulingOvercommitProtection=true`` reaches the scheduler the plane sets up (only its
    arguments are looked at here: the plane is wired, not started)."""
    given: dict[str, Any] = {}

    def recording(manager: Manager, **kwargs: Any) -> list[Any]:
        given.update(kwargs)
        return []

    monkeypatch.setattr(devplane_plane, "setup_scheduler", recording)
    plane = DevPlane(PlaneOptions(members=member_shapes(1), scheduling_overcommit_protection=gate))
    host = KubeClient(k8s.ApiClient(k8s.Configuration(host="http://127.0.0.1:9")), qps=0)
    try:
        plane._host_manager(host)
    finally:
        await host.close()
    assert given["overcommit_protection"] is gate
