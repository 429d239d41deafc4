"""The dev plane's simulation of Karmada against Karmada: the same inputs, the same answers.

The dev plane simulates Karmada's detector, cluster-status controller and scheduler (``devplane/karmada``) so that
the user's documents play out there as on a real Karmada. Here Karmada's own components do the work on the
reference plane, and the simulation's functions are given what Karmada's were given:

- the binding the detector makes of a template and its policy (``build_binding``);
- each Cluster's ``nodeSummary`` and ``resourceSummary``, from the member's Nodes and Pods (what the general
  estimator reads);
- karmada-scheduler's result for each case and each step of it (scale up, scale down, a fresh reschedule): the
  simulation's ``Algorithm`` gets the binding as the scheduler found it, the Clusters as Karmada's controller wrote
  them and the members' Nodes and Pods for the accurate estimator, and must answer the same ``spec.clusters`` and
  the same ``Scheduled`` condition, message included.

The reference plane's karmada-scheduler and estimators run with ``--feature-gates=AllAlpha=true``, so
``SchedulingOvercommitProtection`` is on there: each schedule Karmada patches is assumed in flight and deducted from
what the estimators find for the next ones (the faker paused, nothing turns Healthy, so nothing is forgotten before
the cases are deleted). The simulation runs with the gate on too, and its assumptions are its own: what it decided
for the earlier steps, in the same order, recorded as its scheduler records them (``record_schedule``), released as
Karmada releases them (``release_healthy``). Assumptions left by other tests' recent schedules would be deducted by
Karmada and not by the replay, so the scheduling test first waits for the plane to hold none.

The readiness faker is paused meanwhile, so that no Pod of a case changes what the next one is estimated against.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from benchmarks.refplane import RefPlane
from controller_manager import objects
from controller_manager.client import KubeClient
from controller_manager.objects import Obj
from devplane.karmada.modeling import node_summary, resource_summary
from devplane.karmada.policies import PP_KIND
from devplane.karmada.policybinding import build_binding
from devplane.karmada.scheduler.algorithm import Algorithm
from devplane.karmada.scheduler.assumptions import (
    DEFAULT_ASSUMPTION_TTL,
    AssumedWorkload,
    AssumptionCache,
    record_schedule,
    release_healthy,
)
from devplane.karmada.scheduler.controller import condition_for
from devplane.karmada.scheduler.division import SchedulingError, assignment_of
from devplane.karmada.scheduler.filters import FitError
from devplane.karmada.scheduler.overcommit import accurate_replicas, combined_estimate
from devplane.karmada.workloads import kind_for
from estimator.accurate import NodeUsage
from karmada_api.placement import applied_placement_text, placement_json
from karmada_api.resources import CLUSTERS, PROPAGATION_POLICIES, RESOURCE_BINDINGS
from karmada_api.shapes import BindingSpec, binding_spec
from kube_api.conditions import find_condition
from kube_api.resources import DEPLOYMENTS, NODES, PODS
from kube_api.timeutil import format_time, now, parse_time
from tests.conftest import eventually
from tests.realplane.conftest import Ours
from tests.realplane.support import SCHEDULED, binding_of, delete_quietly, deployment, faker_paused, fresh_namespace

MEMBERS = ("member1", "member2")
BOTH = {"clusterNames": list(MEMBERS)}
SMALL = {"cpu": "10m", "memory": "10Mi"}
LARGE = {"cpu": "500m", "memory": "10Mi"}
"""Capacity decides: Karmada's general estimator, on the resource models of the 8-CPU/16Gi Nodes, finds room for four
per member (and for 0 of 2 CPUs), far below the Nodes' own room."""


def divided(preference: dict[str, Any], affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"clusterAffinity": affinity or BOTH,
            "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                  "weightPreference": preference}}


def static(weight1: int, weight2: int) -> dict[str, Any]:
    return divided({"staticWeightList": [{"targetCluster": {"clusterNames": ["member1"]}, "weight": weight1},
                                         {"targetCluster": {"clusterNames": ["member2"]}, "weight": weight2}]})


DYNAMIC_WEIGHT = {"dynamicWeight": "AvailableReplicas"}
DYNAMIC = divided(DYNAMIC_WEIGHT)
DUPLICATED = {"clusterAffinity": BOTH, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
AGGREGATED = {"clusterAffinity": BOTH, "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                             "replicaDivisionPreference": "Aggregated"}}


@dataclass(frozen=True)
class Case:
    """A workload under a placement, then each step of ``then``: new replicas, or "reschedule" (a fresh one)."""

    name: str
    placement: dict[str, Any]
    replicas: int
    requests: dict[str, str] = field(default_factory=lambda: dict(SMALL))
    then: tuple[int | str, ...] = ()


CASES = (
    Case("duplicated", DUPLICATED, 2),
    Case("static-halves", static(1, 1), 3, then=(7, 2)),
    Case("static-two-to-one", static(2, 1), 5, then=("reschedule",)),
    Case("dynamic-small", DYNAMIC, 5, then=(9, 3, "reschedule")),
    Case("dynamic-beyond-the-models", DYNAMIC, 20, {"cpu": "3", "memory": "10Mi"}),
    Case("aggregated-small", AGGREGATED, 3),
    Case("member2-only", divided(DYNAMIC_WEIGHT, {"clusterNames": ["member2"]}), 4),
    Case("no-cluster-fits", divided(DYNAMIC_WEIGHT, {"clusterNames": ["member9"]}), 2),
    Case("dynamic-large", DYNAMIC, 6, LARGE, then=(7, 2, "reschedule")),
    Case("aggregated-large", AGGREGATED, 5, LARGE, then=(3, 6)),
    Case("duplicated-medium", DUPLICATED, 3, LARGE),
    Case("spread-one-cluster", {**DYNAMIC, "spreadConstraints": [
        {"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}]}, 4),
)
"""Played in this order, each on what the earlier ones left assumed. With capacity deciding (500m requests) the
assumptions leave no room after the first schedules ("Clusters available replicas 0"), and they decide which cluster
has more room for a one-cluster spread constraint."""


@pytest.fixture
async def members(ours: Ours) -> AsyncIterator[dict[str, KubeClient]]:
    clients = {name: await KubeClient.from_kubeconfig(str(ours.plane.member_kubeconfig(name)), qps=0)
               for name in MEMBERS}
    try:
        yield clients
    finally:
        for client in clients.values():
            await client.close()


async def scheduled(karmada: KubeClient, namespace: str, name: str, replicas: int,
                    triggered: datetime | None = None) -> Obj:
    """The binding once karmada-scheduler has judged its current generation with ``replicas`` (and, with
    ``triggered``, rescheduled it at or after that second). A failure is taken as it comes: a case's steps end at
    its first failure, so a failure seen is this step's."""

    async def judged() -> Obj | None:
        binding = await binding_of(karmada, namespace, name)
        if binding is None or objects.spec(binding).get("replicas") != replicas:
            return None
        status = objects.status(binding)
        condition = find_condition(status.get("conditions"), "Scheduled")
        if condition is None:
            return None
        # Karmada stamps the generation (and lastScheduledTime) only on success, leaving a failure to its retries
        observed = status.get("schedulerObservedGeneration") == objects.metadata(binding).get("generation")
        if condition.get("status") == "True" and not observed:
            return None
        if triggered is not None and parse_time(str(status.get("lastScheduledTime"))) < triggered:
            return None
        return binding

    found: Obj = await eventually(judged, timeout=SCHEDULED, interval=0.25,
                                  what=f"{namespace}/{name} scheduled with {replicas} replica(s)")
    return found


async def next_second(last_scheduled: datetime) -> datetime:
    """Now, once it is a second later than ``last_scheduled``: a trigger the scheduler takes once. One in the same
    second would not be after the schedule; one in the future would be taken again until a schedule reaches it."""
    await eventually(lambda: now() > last_scheduled, timeout=3, what="the next second")
    return now()


async def simulated(karmada: KubeClient, members: dict[str, KubeClient], before: Obj | None,
                    after: Obj, assumptions: AssumptionCache) -> tuple[dict[str, int], dict[str, Any]]:
    """What the simulation decides for the binding as karmada-scheduler found it: ``after``'s spec with
    ``before``'s clusters and ``before``'s status, on what ``assumptions`` holds (then recorded there as the
    simulated scheduler records a schedule it patches). Its assignment and Scheduled condition."""
    spec = BindingSpec(**binding_spec(after))
    previous = objects.spec(before).get("clusters") if before is not None else None
    spec.pop("clusters", None)
    if previous:
        spec["clusters"] = previous
    status = dict(objects.status(before)) if before is not None else {}
    clusters = (await karmada.list(CLUSTERS))["items"]
    usage = {name: ((await client.list(NODES))["items"], (await client.list(PODS))["items"])
             for name, client in members.items()}

    async def available(candidates: list[dict[str, Any]], requirements: dict[str, Any] | None, replicas: int,
                        assumed: dict[str, list[AssumedWorkload]] | None = None) -> dict[str, int]:
        names = [objects.name(c) for c in candidates]
        in_flight = assumed or {}
        accurate = {name: accurate_replicas(NodeUsage(*usage[name]), requirements, in_flight.get(name, ()))
                    for name in names if name in usage}
        return combined_estimate(candidates, requirements, replicas, in_flight, accurate)

    result: list[dict[str, Any]] | None = None
    error: BaseException | None = None
    algorithm = Algorithm(lambda: clusters, available, overcommit_protection=True, assumptions=assumptions)
    try:
        result = await algorithm.schedule(spec, status)
    except (SchedulingError, FitError) as exc:
        error = exc
    if error is None or isinstance(error, FitError):  # what the scheduler then patches (a FitError clears)
        found = {"metadata": {**objects.metadata(after),
                              "annotations": objects.metadata(before).get("annotations") if before else None},
                 "spec": spec}
        if (applied_placement_text(found) != placement_json(spec.get("placement"))
                or assignment_of(spec.get("clusters")) != assignment_of(result or None)):
            record_schedule(assumptions, found, result)
    condition, _ = condition_for(error)
    if error is not None and not isinstance(error, FitError):
        return placed(spec.get("clusters")), condition  # nothing is patched: the binding keeps what it had
    return placed(result), condition


SCHEDULER_FIELDS = ("clusters", "rescheduleTriggeredAt")


async def binding_spec_differences(karmada: KubeClient, binding: Obj, policy: str) -> list[str]:
    """Where the binding Karmada's detector made differs from the simulation's, for the same template and policy
    (what the scheduler writes left out, and the template's resourceVersion, which status writes move on)."""
    resource = objects.spec(binding)["resource"]
    template = await karmada.get(DEPLOYMENTS, resource["name"], resource["namespace"])
    pp = await karmada.get(PROPAGATION_POLICIES, policy, resource["namespace"])
    kind = kind_for(template["apiVersion"], template["kind"])
    assert kind is not None
    wanted = build_binding(template, kind, pp, PP_KIND)["spec"]
    theirs = dict(objects.spec(binding))
    for spec in (wanted, theirs):
        for name in SCHEDULER_FIELDS:
            spec.pop(name, None)
        spec["resource"] = {k: v for k, v in spec["resource"].items() if k != "resourceVersion"}
    return [f"spec.{key}: Karmada {theirs.get(key)}, the simulation {wanted.get(key)}"
            for key in sorted(set(wanted) | set(theirs)) if wanted.get(key) != theirs.get(key)]


def placed(clusters: list[dict[str, Any]] | None) -> dict[str, int]:
    return {str(c["name"]): int(c.get("replicas") or 0) for c in clusters or []}


def karmadas(binding: Obj) -> tuple[dict[str, int], dict[str, Any]]:
    condition = find_condition(objects.status(binding).get("conditions"), "Scheduled") or {}
    return placed(objects.spec(binding).get("clusters")), {k: condition.get(k) for k in
                                                           ("type", "status", "reason", "message")}


async def status_differences(karmada: KubeClient, members: dict[str, KubeClient]) -> list[str]:
    """Where the Clusters' ``nodeSummary`` and ``resourceSummary`` differ from the simulation's, computed from the
    members' Nodes and Pods now."""
    found = []
    for name, client in members.items():
        nodes, pods = (await client.list(NODES))["items"], (await client.list(PODS))["items"]
        cluster = await karmada.get(CLUSTERS, name)
        theirs = objects.status(cluster)
        models = objects.spec(cluster).get("resourceModels")
        simulation = {"nodeSummary": node_summary(nodes), "resourceSummary": resource_summary(nodes, pods, models)}
        for key, value in simulation.items():
            if theirs.get(key) != value:
                found.append(f"{name} {key}: Karmada {theirs.get(key)}, the simulation {value}")
    return found


async def status_settled(karmada: KubeClient, members: dict[str, KubeClient]) -> None:
    """Wait for Karmada's status refresh (every 10 s) to show the members as they are (the faker paused, nothing
    changes there), and fail with the differences if it never does."""

    async def same() -> bool:
        assert await status_differences(karmada, members) == []  # the last difference is the failure's cause
        return True

    await eventually(same, timeout=25, interval=1, what="Karmada's cluster status as simulated")


async def test_the_simulated_cluster_status_summarises_members_as_karmadas(ours: Ours, karmada: KubeClient,
                                                                          members: dict[str, KubeClient]) -> None:
    """What the general estimator reads: once Karmada has refreshed the Clusters, their summaries are what the
    simulation computes from the same Nodes and Pods."""
    async with faker_paused(ours.plane):
        await status_settled(karmada, members)


async def no_foreign_assumptions(karmada: KubeClient, namespace: str) -> None:
    """Wait until no ResourceBinding outside ``namespace`` may still hold an assumption in karmada-scheduler: each is
    gone (deleting one releases it) or was last scheduled longer ago than the assumptions live."""

    async def none_left() -> bool:
        horizon = now() - timedelta(seconds=DEFAULT_ASSUMPTION_TTL)
        recent = [f"{objects.namespace(b)}/{objects.name(b)}" for b in (await karmada.list(RESOURCE_BINDINGS))["items"]
                  if objects.namespace(b) != namespace and objects.spec(b).get("clusters")
                  and parse_time(str(objects.status(b).get("lastScheduledTime") or "1970-01-01T00:00:00Z")) > horizon]
        assert not recent, f"bindings other tests scheduled recently: {recent}"
        return True

    await eventually(none_left, timeout=DEFAULT_ASSUMPTION_TTL + 30, interval=1,
                     what="no other test's binding assumed in flight")


async def forget_healthy(karmada: KubeClient, namespace: str, seen: dict[str, Obj],
                         assumptions: AssumptionCache) -> None:
    """What karmada-scheduler's binding updates made it forget since the last look: clusters that turned Healthy."""
    for binding in (await karmada.list(RESOURCE_BINDINGS, namespace=namespace))["items"]:
        key = f"{namespace}/{objects.name(binding)}"
        if key in seen:
            release_healthy(assumptions, seen[key], binding)
        seen[key] = binding


async def test_the_simulated_scheduler_places_as_karmadas(ours: Ours, karmada: KubeClient,
                                                          members: dict[str, KubeClient]) -> None:
    plane: RefPlane = ours.plane
    namespace = await fresh_namespace(karmada, "fidelity")
    differences: list[str] = []
    assumptions = AssumptionCache()
    seen: dict[str, Obj] = {}
    async with faker_paused(plane):
        await status_settled(karmada, members)  # what karmada-scheduler reads from now on is what is replayed
        await no_foreign_assumptions(karmada, namespace)
        try:
            for case in CASES:
                workload = deployment(case.name, case.replicas)
                workload["metadata"]["labels"]["case"] = case.name
                workload["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = case.requests
                await karmada.create(PROPAGATION_POLICIES, {
                    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                    "metadata": {"name": case.name},
                    "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                    "name": case.name}],
                             "placement": case.placement}}, namespace)
                await karmada.create(DEPLOYMENTS, workload, namespace)
                before: Obj | None = None
                after = await scheduled(karmada, namespace, case.name, case.replicas)
                differences += [f"{case.name}: {difference}"
                                for difference in await binding_spec_differences(karmada, after, case.name)]
                steps: list[int | str] = [case.replicas, *case.then]
                for index, step in enumerate(steps):
                    if index:
                        before = after
                        replicas = int(objects.spec(before)["replicas"])
                        if step == "reschedule":
                            triggered = await next_second(parse_time(str(objects.status(before)["lastScheduledTime"])))
                            await karmada.patch(RESOURCE_BINDINGS, objects.name(before),
                                                {"spec": {"rescheduleTriggeredAt": format_time(triggered)}},
                                                namespace=namespace)
                            after = await scheduled(karmada, namespace, case.name, replicas, triggered)
                        else:
                            replicas = int(step)
                            await karmada.patch(DEPLOYMENTS, case.name, {"spec": {"replicas": replicas}},
                                                namespace=namespace)
                            after = await scheduled(karmada, namespace, case.name, replicas)
                    await forget_healthy(karmada, namespace, seen, assumptions)
                    ours_now = await simulated(karmada, members, before, after, assumptions)
                    theirs = karmadas(after)
                    if ours_now != theirs:
                        differences.append(f"{case.name}, step {index} ({step}): Karmada {theirs}, the "
                                           f"simulation {ours_now}")
                    if theirs[1]["status"] != "True":
                        break  # a failed schedule: what follows would wait on a condition that may not change
        finally:
            for case in CASES:
                await delete_quietly(karmada, DEPLOYMENTS, case.name, namespace)
    assert not differences, "the simulation differs from Karmada:\n" + "\n".join(differences)
