"""Speed of one descheduling cycle (``Descheduler.cycle()``) and of one accurate estimate, in-process.

No API server: the cycle reads a real ``Indexer`` of ResourceBindings (parsed, as
``descheduler/app.py`` builds it, and compact for comparison) and asks the real
:class:`estimator.client.EstimatorClient`, whose
registry hands out member views (:class:`estimator.caches.MemberView`) over filled caches (Deployments;
ReplicaSets and Pods indexed by controller UID, as the member informers index them) that report
"ready", as a synced member does. Every answer therefore runs
``estimator.caches.unschedulable_replicas_in`` → ``get_unschedulable_replicas`` over the member's objects.

Data (deterministic): ``--bindings`` Deployment bindings, each with a dynamic-divided applied-placement
annotation (Weighted / dynamicWeight ``AvailableReplicas``), ``spec.clusters`` over 2-3 of ``--members``
members (1-4 replicas each) and ``status.aggregatedStatus`` with readyReplicas. One binding in five
(``--stuck-every``) has 1..spec pods of its first cluster PodScheduled=False/Unschedulable for 10
minutes (threshold 5 minutes) and that many fewer ready replicas; the others are fully ready. Every
member Deployment has its current ReplicaSet and one Pod per assigned replica; every fourth also has
an old ReplicaSet (previous image, no pods).

Measured, each the median of ``--repeats`` runs:

1. cycle      ``await Descheduler.cycle()`` with ``dry_run=True``, so no binding is written (the writes
              are excluded); the logging is the process's (JSON, info level) into /dev/null, so the
              2,000 "would deschedule" lines are paid for. The result is checked: one outcome per stuck
              binding, replicas descheduled = pods stuck. Also the same with a parsed (non-compact) store.
2. estimate   the accurate estimator's ``max_available_replicas`` on a member with ``--nodes`` Nodes and
              ``--pods`` Pods (``benchmarks/estimator.py``'s objects), directly on ``NodeUsage`` and
              through ``EstimatorClient.max_available_replicas``.

Aims: a cycle over 10,000 bindings on 20 members under 2 s; an estimate under 20 ms.

    .venv/bin/python benchmarks/descheduler.py
    .venv/bin/python benchmarks/descheduler.py --profile 25   # + cProfile of one cycle, top 25 functions
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import io
import json
import os
import pstats
import random
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import cast

# The repository root goes first: this script's own name would otherwise shadow the package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.estimator import make_node, make_pod, median_ms
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.events import EventRecorder
from controller_manager.objects import MutableObj
from descheduler.loop import Descheduler, Outcome
from estimator.accurate import NodeUsage
from estimator.caches import CONTROLLER_INDEX
from estimator.client import EstimatorClient
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from kube_api.ownerrefs import controller_uid_index
from kube_api.timeutil import format_time
from sharedcli.logs import configure_logging

THRESHOLD_SECONDS = 300.0
STUCK_FOR = timedelta(minutes=10)
NOW = datetime.now(UTC)


# ------------------------------------------------------------------------------------------ members


@dataclass
class CachedMember:
    """A member's cached view (``estimator.caches.MemberView``) over filled stores, always ready."""

    name: str
    usage: NodeUsage
    caches: dict[str, Indexer]

    def cache(self, resource: str) -> Indexer:
        return self.caches[resource]

    def state(self, need: Iterable[str]) -> str:
        return "ready"

    def starting(self, need: Iterable[str]) -> bool:
        return False

    async def wait_ready(self, need: Iterable[str], timeout: float) -> bool:
        return True

    def errors(self) -> dict[str, str]:
        return {}


@dataclass
class MemberObjects:
    deployments: list[MutableObj] = field(default_factory=list)
    replica_sets: list[MutableObj] = field(default_factory=list)
    pods: list[MutableObj] = field(default_factory=list)


def new_member(name: str, objects: MemberObjects, usage: NodeUsage | None = None) -> CachedMember:
    """A member view whose stores hold ``objects``, indexed as the member informers index them."""
    caches = {"deployments": Indexer(), "replicasets": Indexer({CONTROLLER_INDEX: controller_uid_index}),
              "pods": Indexer({CONTROLLER_INDEX: controller_uid_index})}
    caches["deployments"].replace(objects.deployments)
    caches["replicasets"].replace(objects.replica_sets)
    caches["pods"].replace(objects.pods)
    return CachedMember(name, usage if usage is not None else NodeUsage(), caches)


class Registry:
    """``estimator.client.Members`` over a fixed set of members."""

    def __init__(self, members: dict[str, CachedMember]) -> None:
        self.members = members

    def get(self, name: str) -> CachedMember | None:
        return self.members.get(name)


def pod_template(app: str, image: str) -> MutableObj:
    return {"metadata": {"labels": {"app": app, "tier": "web"}},
            "spec": {"containers": [{"name": "main", "image": image,
                                     "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                     "resources": {"requests": {"cpu": "250m", "memory": "512Mi"},
                                                   "limits": {"cpu": "1", "memory": "1Gi"}}}]}}


def add_workload(objects: MemberObjects, namespace: str, app: str, index: int, *, replicas: int, stuck: int) -> None:
    """A member Deployment (as LIST items carry it: no kind), its ReplicaSet(s) and one Pod per replica."""
    deployment_uid = f"{app}-{index}-deploy"
    template = pod_template(app, "registry.example/web:1.27")
    objects.deployments.append({
        "apiVersion": "apps/v1",
        "metadata": {"name": app, "namespace": namespace, "uid": deployment_uid, "resourceVersion": "1",
                     "labels": {"app": app}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}}, "template": template},
        "status": {"replicas": replicas, "readyReplicas": replicas - stuck}})
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": app, "uid": deployment_uid,
             "controller": True, "blockOwnerDeletion": True}
    rs_sets = [("7d4b9c", template, replicas, "2026-01-02T00:00:00Z")]
    if index % 4 == 0:
        rs_sets.append(("5f6a1e", pod_template(app, "registry.example/web:1.26"), 0, "2026-01-01T00:00:00Z"))
    current_rs_uid = ""
    for pod_hash, rs_template, rs_replicas, created in rs_sets:
        labels = {**rs_template["metadata"]["labels"], "pod-template-hash": pod_hash}
        rs_uid = f"{app}-{index}-rs-{pod_hash}"
        current_rs_uid = current_rs_uid or rs_uid
        objects.replica_sets.append({
            "apiVersion": "apps/v1",
            "metadata": {"name": f"{app}-{pod_hash}", "namespace": namespace, "uid": rs_uid, "labels": labels,
                         "creationTimestamp": created, "ownerReferences": [owner]},
            "spec": {"replicas": rs_replicas, "selector": {"matchLabels": {"app": app, "pod-template-hash": pod_hash}},
                     "template": {**rs_template, "metadata": {"labels": labels}}}})
    labels = {"app": app, "tier": "web", "pod-template-hash": "7d4b9c"}
    pod_owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-7d4b9c", "uid": current_rs_uid,
                 "controller": True, "blockOwnerDeletion": True}
    for replica in range(replicas):
        pod: MutableObj = {"apiVersion": "v1",
                           "metadata": {"name": f"{app}-7d4b9c-{replica:05d}", "namespace": namespace,
                                        "uid": f"{current_rs_uid}-pod-{replica}", "labels": labels,
                                        "ownerReferences": [pod_owner]},
                           "spec": {"containers": template["spec"]["containers"]}}
        if replica < stuck:
            pod["status"] = {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/100 nodes are available: 100 Insufficient cpu.",
                "lastTransitionTime": format_time(NOW - STUCK_FOR)}]}
        else:
            pod["spec"] = {**pod["spec"], "nodeName": f"node-{replica % 100:05d}"}
            pod["status"] = {"phase": "Running", "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": format_time(NOW - STUCK_FOR)},
                {"type": "Ready", "status": "True", "lastTransitionTime": format_time(NOW - STUCK_FOR)}]}
        objects.pods.append(pod)


@dataclass
class Federation:
    bindings: list[MutableObj]
    members: dict[str, CachedMember]
    stuck_bindings: int
    stuck_pods: int
    member_pods: int


def build_federation(binding_count: int, member_count: int, stuck_every: int, seed: int = 7) -> Federation:
    rng = random.Random(seed)
    names = [f"member{i + 1:02d}" for i in range(member_count)]
    placement = json.dumps({
        "clusterAffinity": {"clusterNames": names},
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                              "weightPreference": {"dynamicWeight": "AvailableReplicas"}}})
    objects = {name: MemberObjects() for name in names}
    bindings: list[MutableObj] = []
    stuck_bindings = stuck_pods = 0
    for index in range(binding_count):
        namespace, app = f"ns-{index % 100:03d}", f"app-{index:05d}"
        clusters = {name: rng.randint(1, 4) for name in rng.sample(names, rng.choice((2, 3)))}
        stuck = {name: 0 for name in clusters}
        if index % stuck_every == 0:
            first = next(iter(clusters))
            stuck[first] = rng.randint(1, clusters[first])
            stuck_bindings += 1
            stuck_pods += stuck[first]
        for name, replicas in clusters.items():
            add_workload(objects[name], namespace, app, index, replicas=replicas, stuck=stuck[name])
        resource = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": namespace, "name": app,
                    "uid": f"{app}-{index}-template", "resourceVersion": "12345"}
        bindings.append({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": f"{app}-deployment", "namespace": namespace, "uid": f"rb-{index}",
                         "resourceVersion": str(100000 + index), "generation": 2,
                         "creationTimestamp": "2026-01-02T00:00:00Z",
                         "labels": {"propagationpolicy.karmada.io/permanent-id": f"pp-{index % 50}"},
                         "annotations": {APPLIED_PLACEMENT_ANNOTATION: placement,
                                         "policy.karmada.io/applied-placement-name": "web"},
                         "ownerReferences": [{**resource, "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"resource": resource, "replicas": sum(clusters.values()),
                     "replicaRequirements": {"resourceRequest": {"cpu": "250m", "memory": "512Mi"}},
                     "clusters": [{"name": name, "replicas": replicas} for name, replicas in clusters.items()],
                     "schedulerName": "default-scheduler"},
            "status": {"schedulerObservedGeneration": 2, "conditions": [
                {"type": "Scheduled", "status": "True", "reason": "Success", "message": "Binding has been scheduled",
                 "lastTransitionTime": "2026-01-02T00:00:00Z"}],
                "aggregatedStatus": [
                    {"clusterName": name, "applied": True, "health": "Healthy",
                     "status": {"replicas": replicas, "readyReplicas": replicas - stuck[name],
                                "availableReplicas": replicas - stuck[name], "updatedReplicas": replicas,
                                "observedGeneration": 1}}
                    for name, replicas in clusters.items()]}})
    members = {name: new_member(name, objects[name]) for name in names}
    member_pods = sum(len(o.pods) for o in objects.values())
    return Federation(bindings, members, stuck_bindings, stuck_pods, member_pods)


# ------------------------------------------------------------------------------------------ timing


class GcClock:
    """Total time spent in the cyclic garbage collector while installed (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.total = 0.0
        self.collections = 0
        self.longest = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            pause = time.perf_counter() - self._start
            self.total += pause
            self.longest = max(self.longest, pause)
            self.collections += 1


async def median_ms_async(action: Callable[[], Awaitable[object]], repeats: int,
                          clock: GcClock | None = None) -> tuple[list[float], object]:
    times = []
    result: object = None
    if clock is not None:
        gc.callbacks.append(clock)
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            result = await action()
            times.append((time.perf_counter() - start) * 1000)
    finally:
        if clock is not None:
            gc.callbacks.remove(clock)
    return times, result


@contextlib.contextmanager
def production_logging_to_devnull() -> Iterator[None]:
    """The process's logging (JSON lines, info level) but written to /dev/null instead of stderr."""
    saved = sys.stderr
    with open(os.devnull, "w") as devnull:
        sys.stderr = devnull
        try:
            configure_logging("json", 0)
        finally:
            sys.stderr = saved
        yield


def check(outcomes: list[Outcome], federation: Federation) -> None:
    replicas = sum(outcome.plan.total for outcome in outcomes)
    if len(outcomes) != federation.stuck_bindings or replicas != federation.stuck_pods or any(
            outcome.written for outcome in outcomes):
        raise SystemExit(f"unexpected cycle result: {len(outcomes)} bindings, {replicas} replicas "
                         f"(expected {federation.stuck_bindings}, {federation.stuck_pods}, none written)")


async def bench_cycle(federation: Federation, repeats: int,
                      profile_top: int) -> dict[str, tuple[list[float], GcClock]]:
    client = EstimatorClient(Registry(federation.members), timeout=3.0)
    results: dict[str, tuple[list[float], GcClock]] = {}
    for label, compact in (("compact", True), ("parsed", False)):
        store = Indexer(compact=compact)
        store.replace(json.loads(json.dumps(federation.bindings)))  # a private copy, as an informer holds
        descheduler = Descheduler(cast(KubeClient, None), store, client.unschedulable_replicas,
                                  cast(EventRecorder, None), interval=120.0, threshold=THRESHOLD_SECONDS,
                                  dry_run=True)
        await descheduler.cycle()  # warm-up (first-use caches: selectors, loggers, histogram children)
        clock = GcClock()
        times, outcomes = await median_ms_async(descheduler.cycle, repeats, clock)
        check(cast(list[Outcome], outcomes), federation)
        results[label] = (times, clock)
        if profile_top and compact:
            profiler = cProfile.Profile()
            profiler.enable()
            await descheduler.cycle()
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(profile_top)
            print(text.getvalue())
    return results


async def bench_estimate(node_count: int, pod_count: int, repeats: int) -> tuple[float, float, float, int]:
    nodes = [make_node(i) for i in range(node_count)]
    pods = [make_pod(i, node_count) for i in range(pod_count)]
    start = time.perf_counter()
    usage = NodeUsage(nodes, pods)
    snapshot_ms = (time.perf_counter() - start) * 1000
    request = {"resourceRequest": {"cpu": "1", "memory": "2Gi"}}
    usage.max_available_replicas(request)  # warm the filter cache, as steady state has it
    direct_ms, replicas = median_ms(
        lambda: usage.max_available_replicas({"resourceRequest": dict(request["resourceRequest"])}), repeats)
    member = new_member("big", MemberObjects(), usage)
    client = EstimatorClient(Registry({"big": member}), timeout=3.0)
    times, answer = await median_ms_async(
        lambda: client.max_available_replicas(["big"], {"resourceRequest": dict(request["resourceRequest"])}),
        repeats)
    if answer != {"big": replicas}:
        raise SystemExit(f"client answered {answer}, NodeUsage {replicas}")
    return snapshot_ms, direct_ms, statistics.median(times), cast(int, replicas)


async def main_async(args: argparse.Namespace) -> None:
    start = time.perf_counter()
    federation = build_federation(args.bindings, args.members, args.stuck_every)
    build_s = time.perf_counter() - start
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"{len(federation.bindings)} bindings on {len(federation.members)} members, "
          f"{federation.stuck_bindings} with unschedulable pods ({federation.stuck_pods} pods stuck); "
          f"{federation.member_pods} member pods; built in {build_s:.1f} s")
    cycles = await bench_cycle(federation, args.repeats, args.profile)
    for label, (times, clock) in cycles.items():
        store = "compact store              " if label == "compact" else "parsed store (as app.py)   "
        print(f"  cycle, dry run, {store}: median {statistics.median(times):7.1f} ms "
              f"(min {min(times):.1f}, max {max(times):.1f}, {len(times)} runs)  aim < 2000 ms")
        print(f"    of which cyclic GC: {clock.total * 1000 / len(times):.0f} ms per cycle "
              f"({clock.collections / len(times):.0f} collections per cycle, longest {clock.longest * 1000:.0f} ms)")
    snapshot_ms, direct_ms, client_ms, replicas = await bench_estimate(args.nodes, args.pods, args.repeats * 3)
    print(f"{args.nodes} nodes, {args.pods} pods (NodeUsage built in {snapshot_ms:.0f} ms)")
    print(f"  max-available estimate, NodeUsage:        {direct_ms:7.2f} ms  -> {replicas} replicas  aim < 20 ms")
    print(f"  max-available estimate, EstimatorClient:  {client_ms:7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bindings", type=int, default=10000)
    parser.add_argument("--members", type=int, default=20)
    parser.add_argument("--stuck-every", type=int, default=5, help="one binding in N has unschedulable pods")
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=40000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="cProfile one extra cycle and print the top N functions by own time")
    args = parser.parse_args()
    with production_logging_to_devnull():
        asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
