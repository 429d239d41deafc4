"""``--max-concurrent``'s pure parts: splitting into waves, naming across waves, when a wave holds the next one
back; and what one look at a wave reads (against a fake API that answers GETs only)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.resource import Resource
from kube_api.resources import DEPLOYMENTS, NAMESPACES
from rebalancectl.cli import FlagError, build_parser
from rebalancectl.create import wave_plan
from rebalancectl.errors import CommandError
from rebalancectl.rollout import Targets, WaveWatch
from rebalancectl.selection import Workload
from rebalancectl.waves import (
    FAILED,
    NOT_HEALTHY,
    PENDING,
    SUCCESSFUL,
    WAVE_ANNOTATION,
    HeldBack,
    Verdict,
    held_back,
    named,
    verdict,
)


def deploy(name: str) -> Workload:
    return Workload("shop", "Deployment", name, "apps/v1")


def test_waves_of_n_workloads_each_split_by_max_per_rebalancer_and_named_across_waves() -> None:
    workloads = [deploy(n) for n in "abcde"]
    plan = wave_plan("back", workloads, per_wave=3, size=2, ttl_seconds=60)
    assert [(w.label, [x.name for x in w.workloads]) for w in plan] == [("1/2", ["a", "b", "c"]), ("2/2", ["d", "e"])]
    names = [[r["metadata"]["name"] for r in w.rebalancers] for w in plan]
    assert names == [["back-1", "back-2"], ["back-3"]]  # numbered in creation order across the waves
    assert [[len(r["spec"]["workloads"]) for r in w.rebalancers] for w in plan] == [[2, 1], [2]]
    assert {r["metadata"]["annotations"][WAVE_ANNOTATION] for r in plan[1].rebalancers} == {"2/2"}
    assert plan[0].rest() == "wave 2" and plan[1].rest() == ""
    one = wave_plan("", workloads, per_wave=1, size=100, ttl_seconds=None, preserve=True)
    assert len(one) == 5 and one[0].rest() == "waves 2-5"
    assert one[0].rebalancers[0]["metadata"]["generateName"] == "rebalance-"
    assert len(one[0].rebalancers[0]["metadata"]["annotations"]) == 2  # the wave and preserve mode
    single = wave_plan("solo", workloads[:2], per_wave=5, size=100, ttl_seconds=None)
    assert [r["metadata"]["name"] for r in single[0].rebalancers] == ["solo"]


def test_a_wave_is_healthy_only_when_every_workload_succeeded_and_is_healthy() -> None:
    a, b = deploy("a"), deploy("b")
    assert verdict(held_back([a, b], {}, {})) is Verdict.WAITING
    results = {a: (SUCCESSFUL, ""), b: (SUCCESSFUL, "")}
    holding = held_back([a, b], results, {a: None})
    assert holding == [HeldBack(b, NOT_HEALTHY, "health not read yet")] and verdict(holding) is Verdict.WAITING
    holding = held_back([a, b], results, {a: None, b: "0/3 replicas ready on member1"})
    assert [(h.workload.name, h.state, h.reason) for h in holding] == [("b", NOT_HEALTHY,
                                                                         "0/3 replicas ready on member1")]
    assert verdict(held_back([a, b], results, {a: None, b: None})) is Verdict.HEALTHY
    # a Failed result is final: the wave stops at once rather than waiting for the deadline
    holding = held_back([a, b], {a: (PENDING, ""), b: (FAILED, "ReferencedBindingNotFound")}, {})
    assert verdict(holding) is Verdict.FAILED
    assert named(holding) == ("Deployment.apps/shop/b (ReferencedBindingNotFound); "
                              "Deployment.apps/shop/a (no result from the rebalancer controller yet)")


def test_the_one_line_names_three_workloads_then_counts() -> None:
    holding = [HeldBack(deploy(n), NOT_HEALTHY, "x") for n in "abcde"]
    assert named(holding).endswith("Deployment.apps/shop/c (x); and 2 more")


@pytest.mark.parametrize(("argv", "message"), [
    (["--max-concurrent", "0"], "argument --max-concurrent: must be at least 1"),
    (["--max-concurrent", "-2"], "argument --max-concurrent: must not be negative: -2"),
    (["--max-concurrent", "two"], "argument --max-concurrent: invalid integer: 'two'"),
    (["--max-concurrent", "1", "--progress-deadline", "0s"],
     'argument --progress-deadline: invalid duration "0s": must be greater than zero'),
    (["--max-concurrent", "1", "--progress-deadline=-1m"],
     'argument --progress-deadline: invalid duration "-1m": must not be negative'),
])
def test_non_positive_wave_flags_are_refused_by_the_parser(argv: list[str], message: str) -> None:
    with pytest.raises(FlagError) as caught:
        build_parser().parse_args(["create", *argv])
    assert str(caught.value) == f"karmada-rebalance create: error: {message}"


class FakeApi:
    """Answers GETs from ``objects`` (by resource plural and name); records each; an error queued for a name is
    raised once. Any other call (a LIST) is an AttributeError."""

    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]]) -> None:
        self.objects = objects
        self.calls: list[tuple[str, str]] = []
        self.errors: dict[str, Exception] = {}

    async def get(self, resource: Resource, name: str, namespace: str = "") -> dict[str, Any]:
        self.calls.append((resource.plural, name))
        if name in self.errors:
            raise self.errors.pop(name)
        if (resource.plural, name) not in self.objects:
            raise ApiError(404, "NotFound", f'{resource.plural} "{name}" not found', {"details": {"name": name}})
        return self.objects[resource.plural, name]

    async def get_or_none(self, resource: Resource, name: str, namespace: str = "") -> dict[str, Any] | None:
        try:
            return await self.get(resource, name, namespace)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise


def healthy_binding(name: str, ready: int) -> dict[str, Any]:
    return {"metadata": {"name": f"{name}-deployment", "namespace": "shop", "generation": 1},
            "spec": {"replicas": 1, "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "clusters": [{"name": "member1", "replicas": 1}]},
            "status": {"schedulerObservedGeneration": 1, "aggregatedStatus": [
                {"clusterName": "member1", "applied": True, "status": {"readyReplicas": ready}}]}}


def template(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "generation": 1},
            "spec": {"replicas": 1}, "status": {"readyReplicas": 1, "observedGeneration": 1}}


async def test_a_wave_is_read_by_gets_of_its_own_objects_a_busy_server_skips_a_round() -> None:
    a, b = deploy("a"), deploy("b")
    plan = wave_plan("w", [a, b], per_wave=2, size=100, ttl_seconds=None)
    rebalancer = {**plan[0].rebalancers[0], "status": {"observedWorkloads": [
        {"workload": a.reference(), "result": "Successful"}, {"workload": b.reference(), "result": "Successful"}]}}
    api = FakeApi({("workloadrebalancers", "w"): rebalancer,
                   ("resourcebindings", "a-deployment"): healthy_binding("a", 1),
                   ("resourcebindings", "b-deployment"): healthy_binding("b", 0),
                   ("deployments", "a"): template("a"), ("deployments", "b"): template("b")})
    targets = Targets({a: ("shop", "a-deployment"), b: ("shop", "b-deployment")},
                      {a.group_kind: DEPLOYMENTS})
    watch = WaveWatch(cast(KubeClient, api), plan[0], plan[0].rebalancers, targets)
    api.errors["w"] = ApiError(503, "ServiceUnavailable", "restarting")
    assert [h.state for h in await watch.check()] == [PENDING, PENDING]  # the round is skipped, not fatal
    holding = await watch.check()
    assert [(h.workload.name, h.reason) for h in holding] == [("b", "0/1 replicas ready on member1")]
    api.calls.clear()
    api.objects["resourcebindings", "b-deployment"] = healthy_binding("b", 1)
    assert await watch.check() == []
    # the rebalancer's results and a's health were known: only b's binding and template were read again
    assert api.calls == [("resourcebindings", "b-deployment"), ("deployments", "b")]
    api.errors["w"] = ApiError(403, "Forbidden", "no")
    gone = WaveWatch(cast(KubeClient, api), plan[0], plan[0].rebalancers, targets)
    with pytest.raises(ApiError):  # any other error ends the command (exit 1)
        await gone.check()
    del api.objects["workloadrebalancers", "w"]
    with pytest.raises(CommandError, match="w was deleted before its result was read, so its result is unknown"):
        await gone.check()


async def test_a_cluster_scoped_workload_is_read_through_its_cluster_resource_binding() -> None:
    ns = Workload("", "Namespace", "shop", "v1")
    plan = wave_plan("w", [ns], per_wave=1, size=100, ttl_seconds=None)
    rebalancer = {**plan[0].rebalancers[0],
                  "status": {"observedWorkloads": [{"workload": ns.reference(), "result": "Successful"}]}}
    crb = {"metadata": {"name": "shop-namespace", "generation": 1},
           "spec": {"resource": {"apiVersion": "v1", "kind": "Namespace", "name": "shop"},
                    "clusters": [{"name": "member1"}]},
           "status": {"schedulerObservedGeneration": 1, "aggregatedStatus": [{"clusterName": "member1"}]}}
    api = FakeApi({("workloadrebalancers", "w"): rebalancer, ("clusterresourcebindings", "shop-namespace"): crb,
                   ("namespaces", "shop"): {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}})
    targets = Targets({ns: ("", "shop-namespace")}, {ns.group_kind: NAMESPACES})
    watch = WaveWatch(cast(KubeClient, api), plan[0], plan[0].rebalancers, targets)
    assert [h.reason for h in await watch.check()] == ["not applied on member1"]
    crb["status"]["aggregatedStatus"][0]["applied"] = True
    assert await watch.check() == []
    assert ("clusterresourcebindings", "shop-namespace") in api.calls and ("namespaces", "shop") in api.calls
