"""Preserve mode against fresh rescheduling: the WorkloadRebalancer at 1,000 workloads over 2 member clusters.

Issue 25 asks that a rebalancer which keeps the available replicas (karmada-io/karmada#7662) cost at most 1.5x
(``AIM``) the time and memory of the fresh mode (``rescheduleTriggeredAt`` on every binding) at the same size,
and that the member Pods come from informer caches, never from a LIST per workload.

Set up once for the whole benchmark:

members   two dev API servers (``python -m devplane apiserver --port 0 --no-karmada``) in child processes,
          each behind a counting proxy in this process (``benchmarks/faultproxy.py``, no fault injected) that
          counts requests by verb and resource as kube-apiserver's ``apiserver_request_total`` does (LIST and
          WATCH told apart). Per member: a Node, and for each of the ``--rebalancers`` x ``--workloads``
          Deployments (1,000 by default) the Deployment, its current ReplicaSet and ``--replicas`` Pods (2).
          Every ``--stuck-every``-th workload (4th) has one Pod on member1 ``PodScheduled=False/Unschedulable``
          for 10 minutes (over the 5m0s threshold: preserve mode moves it); the workload after it has one on
          member2 unschedulable for 1 minute (under the threshold: nothing moves). The members never change,
          so every run reads the same state.

Each run, both modes alike, on a fresh host (``python -m devplane apiserver --port 0``): the Clusters
``member1`` and ``member2`` (Push, their token Secrets in ``karmada-cluster``) pointing at the proxies, and one
ResourceBinding per Deployment as Karmada's scheduler leaves it (dynamic-divided, ``--replicas`` on each
member, the applied-placement annotation, ``Scheduled`` and ``schedulerObservedGeneration``); then
``python -m controller_manager --kubeconfig F --leader-elect=false --kube-api-qps=-1
--enable-preserve-available-replicas`` (the same flags in both modes, so that the fresh run carries the
member informers too and the memory compares like with like; ``--fresh-without-flag`` runs the fresh mode
without the flag), waited for until ready, its member clusters reachable and its queues idle, and ``--warm-up``
rebalancers (on workloads of their own) finished, untimed. Timed: from the first POST of the rebalancers (16
connections; with the preserve annotation in preserve mode, without it in fresh mode) until a watch has seen
``status.finishTime`` on every one. Measured: the time, the controller-manager's peak RSS (``VmHWM``, start-up
included: the member caches are most of it) and CPU, its requests to the host, and the members' requests in
the timed window (none expected: the Pods come from the informer caches). Checked (untimed): every item
``Successful``; in preserve mode exactly the stuck workloads lowered on member1 and no binding triggered, in
fresh mode every binding triggered. Rounds alternate which mode runs first. Bounded by ``--phase-time``
and ``--time-limit``; the children are always stopped, the temp dir removed.

    .venv/bin/python benchmarks/preserve.py                        # 10 x 100 workloads, 3 rounds
    .venv/bin/python benchmarks/preserve.py --rebalancers 100 --workloads 10
    .venv/bin/python benchmarks/preserve.py --rounds 1 --profile DIR   # py-spy the controller-manager
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import aiohttp

SCRIPT = Path(__file__).resolve()
REPO = SCRIPT.parent.parent
if str(REPO) not in sys.path:  # run as a script: make devplane importable without installing
    sys.path.insert(0, str(REPO))

from benchmarks.faultproxy import FaultProxy, Upstream  # noqa: E402
from benchmarks.rebalancer import (  # noqa: E402
    MERGE_PATCH,
    RB_GROUP,
    WR_PATH,
    ControllerProcess,
    Layout,
    check_results,
    counted_by,
    finishes_seen,
    list_items,
    profiled,
    run_controller_manager,
    scrape,
    session,
    spread,
    wait_until_idle,
)
from benchmarks.support import (  # noqa: E402
    BenchError,
    cpu_seconds,
    expect,
    pool_all,
    prepare_profile_dir,
    require_at_least_one,
    run_in_tmp,
    run_server,
    status_kib,
)
from controllers.bindingstatus import fully_applied_condition  # noqa: E402
from devplane.kubeconfig import write_kubeconfig  # noqa: E402
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION  # noqa: E402
from karmada_api.rebalancers import rebalancer_body  # noqa: E402
from karmada_api.shapes import BindingSpec  # noqa: E402
from kube_api.timeutil import format_time  # noqa: E402

AIM = 1.5  # preserve / fresh, time and memory (issue 25)
MEMBERS = ("member1", "member2")
SECRET_NAMESPACE = "karmada-cluster"
PLACEMENT = {"clusterAffinity": {"clusterNames": list(MEMBERS)},
             "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                   "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
STUCK_LONG = timedelta(minutes=10)  # over the controller-manager's default threshold (5m0s): moved
STUCK_SHORT = timedelta(minutes=1)  # under it: not moved
POD_SPEC = {"containers": [{"name": "main", "image": "nginx:1.27",
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}
PRESERVE_FLAG = "--enable-preserve-available-replicas"
# An experiment (--member-caches compact): the controller-manager's main() with the member clusters' informers
# keeping deflated JSON (controller_manager.cache.Indexer's compact store) instead of parsed objects.
COMPACT_MEMBERS_PROGRAM = ("-c", "import functools, sys; import clusteraccess.cluster as c; "
                           "c.SharedInformer = functools.partial(c.SharedInformer, compact=True); "
                           "import controllers.app as app; sys.exit(app.main(sys.argv[1:]))")
# For comparison (--member-caches full): the controller-manager's main() with whole member objects (and the NodeUsage
# they feed), as it cached them before its members were slim (clusteraccess MemberCluster(slim=False)).
FULL_MEMBERS_PROGRAM = ("-c", "import sys; import clusteraccess.registry as r; member = r.MemberCluster; "
                        "r.MemberCluster = lambda *a, **k: member(*a, **{**k, 'slim': False}); "
                        "import controllers.app as app; sys.exit(app.main(sys.argv[1:]))")
MEMBER_CACHES_PROGRAMS = {"parsed": (), "compact": COMPACT_MEMBERS_PROGRAM, "full": FULL_MEMBERS_PROGRAM}


# ------------------------------------------------------------------------------------------ member state


def stuck_on(args: argparse.Namespace, k: int) -> tuple[str, timedelta] | None:
    """Workload ``k``'s one unschedulable Pod: on which member, for how long (None: every Pod running)."""
    if k % args.stuck_every == 0:
        return MEMBERS[0], STUCK_LONG
    if k % args.stuck_every == 1:
        return MEMBERS[1], STUCK_SHORT
    return None


def moved(args: argparse.Namespace, k: int) -> bool:
    """Whether preserve mode lowers workload ``k`` (by one replica on member1)."""
    stuck = stuck_on(args, k)
    return stuck is not None and stuck[1] > timedelta(minutes=5)


async def populate_member(http: aiohttp.ClientSession, member: str, layout: Layout,
                          args: argparse.Namespace) -> None:
    """``layout``'s namespaces and, per workload, a Deployment, its current ReplicaSet and its Pods."""
    for n in range(layout.namespaces):
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": layout.namespace(n)}}
        async with http.post("/api/v1/namespaces", json=ns) as resp:
            await expect(resp, 201)
    now = datetime.now(UTC)

    async def create(k: int) -> None:
        name, namespace = layout.deployment(k), layout.namespace(k)
        labels = {"app": name}
        template = {"metadata": {"labels": labels}, "spec": POD_SPEC}
        body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
                "spec": {"replicas": args.replicas, "selector": {"matchLabels": labels}, "template": template}}
        async with http.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", json=body) as resp:
            deployment = json.loads(await expect(resp, 201))
        rs_labels = {**labels, "pod-template-hash": "7d4b9c"}
        rs_body = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": f"{name}-7d4b9c", "namespace": namespace, "labels": rs_labels,
                                "ownerReferences": [owner(deployment, "Deployment")]},
                   "spec": {"replicas": args.replicas, "selector": {"matchLabels": rs_labels},
                            "template": {"metadata": {"labels": rs_labels}, "spec": POD_SPEC}}}
        async with http.post(f"/apis/apps/v1/namespaces/{namespace}/replicasets", json=rs_body) as resp:
            rs = json.loads(await expect(resp, 201))
        stuck = stuck_on(args, k)
        for j in range(args.replicas):
            pending = stuck is not None and stuck[0] == member and j == args.replicas - 1
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": f"{name}-7d4b9c-{j}", "namespace": namespace, "labels": rs_labels,
                                "ownerReferences": [owner(rs, "ReplicaSet")]},
                   "spec": POD_SPEC if pending else {**POD_SPEC, "nodeName": "node-a"}}
            pods = f"/api/v1/namespaces/{namespace}/pods"
            async with http.post(pods, json=pod) as resp:
                await expect(resp, 201)
            if stuck is not None and pending:
                await set_pod_status(http, f"{pods}/{name}-7d4b9c-{j}", unschedulable_since=now - stuck[1])
            else:
                await set_pod_status(http, f"{pods}/{name}-7d4b9c-{j}", unschedulable_since=None)

    await pool_all(f"{member}: workloads", layout.bindings, args.concurrency, args.phase_time, create)


def owner(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": kind, "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"],
            "controller": True}


async def set_pod_status(http: aiohttp.ClientSession, path: str, *, unschedulable_since: datetime | None) -> None:
    """Running on its node, or Pending with ``PodScheduled=False/Unschedulable`` since the given time."""
    if unschedulable_since is None:
        status = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
    else:
        status = {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient cpu.",
            "lastTransitionTime": format_time(unschedulable_since)}]}
    async with http.patch(f"{path}/status", data=json.dumps({"status": status}), headers=MERGE_PATCH) as resp:
        await expect(resp, 200)


async def add_node(http: aiohttp.ClientSession) -> None:
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}
    async with http.post("/api/v1/nodes", json=body) as resp:
        await expect(resp, 201)
    capacity = {"cpu": "1000", "memory": "4000Gi", "pods": "5000"}
    async with http.patch("/api/v1/nodes/node-a/status", headers=MERGE_PATCH,
                          data=json.dumps({"status": {"capacity": capacity, "allocatable": capacity}})) as resp:
        await expect(resp, 200)


@contextlib.asynccontextmanager
async def running_members(args: argparse.Namespace, layouts: list[Layout], tmp: Path
                          ) -> AsyncIterator[dict[str, FaultProxy]]:
    """The member servers, populated, each behind its counting proxy (by member name) until the block ends."""
    async with contextlib.AsyncExitStack() as stack:
        proxies: dict[str, FaultProxy] = {}
        for member in MEMBERS:
            server = await stack.enter_async_context(run_server(tmp / f"{member}.log", "--no-karmada"))
            proxies[member] = await stack.enter_async_context(FaultProxy(Upstream(server.url)).running())
            http = await stack.enter_async_context(session(server.url, args.concurrency))
            await add_node(http)
            for layout in layouts:
                await populate_member(http, member, layout, args)
        yield proxies


# ------------------------------------------------------------------------------------------ host state


async def populate_host(http: aiohttp.ClientSession, proxies: dict[str, FaultProxy], layouts: list[Layout],
                        args: argparse.Namespace) -> None:
    """The Clusters and their Secrets, then ``layouts``' namespaces and scheduled bindings."""
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SECRET_NAMESPACE}}
    async with http.post("/api/v1/namespaces", json=ns) as resp:
        await expect(resp, 201)
    for member, proxy in proxies.items():
        secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": member, "namespace": SECRET_NAMESPACE},
                  "data": {"token": "YmVuY2gtdG9rZW4="}}
        async with http.post(f"/api/v1/namespaces/{SECRET_NAMESPACE}/secrets", json=secret) as resp:
            await expect(resp, 201)
        cluster = {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": member},
                   "spec": {"syncMode": "Push", "apiEndpoint": proxy.url,
                            "secretRef": {"namespace": SECRET_NAMESPACE, "name": member}}}
        async with http.post("/apis/cluster.karmada.io/v1alpha1/clusters", json=cluster) as resp:
            await expect(resp, 201)
    hour_ago = format_time(datetime.now(UTC) - timedelta(hours=1))
    spec: dict[str, Any] = {"replicas": args.replicas * len(MEMBERS), "placement": PLACEMENT,
                            "clusters": [{"name": m, "replicas": args.replicas} for m in MEMBERS]}
    conditions = [{"type": "Scheduled", "status": "True", "reason": "Success", "lastTransitionTime": hour_ago,
                   "message": "Binding has been scheduled successfully."},
                  {**fully_applied_condition(cast(BindingSpec, spec), []), "lastTransitionTime": hour_ago}]
    # Each member's status collected (preserve mode refuses a cluster whose ready count is unknown), one replica
    # short of ready: the floor then never keeps a long-stuck replica (Go's omitempty drops a zero readyReplicas).
    ready = {"readyReplicas": args.replicas - 1} if args.replicas > 1 else {}
    aggregated = [{"clusterName": m, "applied": True, "status": {"replicas": args.replicas, **ready}} for m in MEMBERS]
    status = json.dumps({"status": {"conditions": conditions, "schedulerObservedGeneration": 1,
                                    "lastScheduledTime": hour_ago, "aggregatedStatus": aggregated}}).encode()
    for layout in layouts:
        for n in range(layout.namespaces):
            ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": layout.namespace(n)}}
            async with http.post("/api/v1/namespaces", json=ns) as resp:
                await expect(resp, 201)

        async def create(k: int, layout: Layout = layout) -> None:
            name, namespace = layout.deployment(k), layout.namespace(k)
            body = {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                    "metadata": {"name": f"{name}-deployment", "namespace": namespace,
                                 "annotations": {APPLIED_PLACEMENT_ANNOTATION: json.dumps(PLACEMENT)}},
                    "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                          "namespace": namespace}, **spec}}
            async with http.post(f"{RB_GROUP}/namespaces/{namespace}/resourcebindings", json=body) as resp:
                await expect(resp, 201)
            async with http.patch(f"{layout.binding_path(k)}/status", data=status, headers=MERGE_PATCH) as resp:
                await expect(resp, 200)

        await pool_all("bindings", layout.bindings, args.concurrency, args.phase_time, create)


async def create_rebalancers(http: aiohttp.ClientSession, layout: Layout, preserve: bool,
                             args: argparse.Namespace) -> None:
    async def create(i: int) -> None:
        body = rebalancer_body({"name": layout.rebalancer_name(i)}, layout.workload_refs(i), None, preserve=preserve)
        async with http.post(WR_PATH, json=body) as resp:
            await expect(resp, 201)

    await pool_all("rebalancers", layout.rebalancers, args.concurrency, args.phase_time, create)


async def check_preserved(http: aiohttp.ClientSession, layout: Layout, args: argparse.Namespace) -> None:
    """Every item Successful; exactly the workloads stuck for long lowered by one on member1; none triggered."""
    rebalancers = [wr for wr in await list_items(http, WR_PATH) if layout.owns(wr)]
    results = Counter(item.get("result") for wr in rebalancers
                      for item in (wr.get("status") or {}).get("observedWorkloads") or [])
    if len(rebalancers) != layout.rebalancers or results != Counter({"Successful": layout.bindings}):
        reasons = Counter(item.get("reason") for wr in rebalancers
                          for item in (wr.get("status") or {}).get("observedWorkloads") or [] if item.get("reason"))
        raise BenchError(f"{len(rebalancers)} rebalancers, results {dict(results)}, reasons {dict(reasons)}")
    wrong = []
    for k in range(layout.bindings):
        async with http.get(layout.binding_path(k)) as resp:
            spec = json.loads(await expect(resp, 200))["spec"]
        want = {m: args.replicas for m in MEMBERS}
        if moved(args, k):
            want[MEMBERS[0]] -= 1
        if {c["name"]: c["replicas"] for c in spec["clusters"]} != want or "rescheduleTriggeredAt" in spec:
            wrong.append(layout.deployment(k))
    if wrong:
        raise BenchError(f"{len(wrong)} bindings not as preserve mode leaves them: {wrong[:5]}")


# ------------------------------------------------------------------------------------------ a run


@dataclass
class Run:
    seconds: float
    peak_rss_kib: int
    cm_cpu: float
    host_cpu: float
    host_requests: dict[str, float] = field(default_factory=dict)
    member_requests: Counter[str] = field(default_factory=Counter)
    """What the members were asked in the timed window, by ``"<VERB> <resource>"`` (both members)."""
    member_requests_at_start: Counter[str] = field(default_factory=Counter)
    """What the members were asked from the controller-manager's start to the timing (both members)."""

    @property
    def member_lists(self) -> int:
        return sum(n for verb, n in self.member_requests.items() if verb.startswith("LIST "))


def member_counts(proxies: dict[str, FaultProxy]) -> Counter[str]:
    total: Counter[str] = Counter()
    for proxy in proxies.values():
        total.update(proxy.verbs)
    return total


async def wait_members_reachable(http: aiohttp.ClientSession, cm: ControllerProcess, time_limit: float) -> None:
    """Until the controller-manager's ``estimator_member_reachable`` gauge is 1 for every member."""
    deadline = time.monotonic() + time_limit
    metrics: list[tuple[str, str, float]] = []
    while time.monotonic() < deadline:
        with contextlib.suppress(aiohttp.ClientError):
            metrics = await scrape(http, cm.metrics)
        reachable = {labels for name, labels, value in metrics if name == "estimator_member_reachable" and value == 1}
        if all(any(f'cluster="{m}"' in labels for labels in reachable) for m in MEMBERS):
            return
        await asyncio.sleep(0.2)
    raise BenchError(f"the members were not reachable for the controller-manager within {time_limit:.0f}s")


# Without the binding-status controller: the host has no Works, so it would empty the bindings'
# aggregatedStatus, and preserve mode refuses a cluster whose ready count is unknown (both modes alike).
CM_FLAGS = ["--controllers=*,-bindingStatus"]


async def run_mode(args: argparse.Namespace, layout: Layout, proxies: dict[str, FaultProxy], tmp: Path,
                   tag: str, *, preserve: bool) -> Run:
    """One run of ``layout``'s rebalancers, preserve or fresh, on a fresh host and controller-manager."""
    warm_up = layout.warm_up(args.warm_up)
    layouts = [layout, warm_up] if warm_up.rebalancers else [layout]
    flag = preserve or not args.fresh_without_flag
    async with run_server(tmp / f"host-{tag}.log") as host, session(host.url, args.concurrency) as http:
        await populate_host(http, proxies, layouts, args)
        kubeconfig = tmp / f"kubeconfig-{tag}"
        write_kubeconfig(kubeconfig, {"karmada-apiserver": host.url}, "karmada-apiserver")
        members_before = member_counts(proxies)
        program = MEMBER_CACHES_PROGRAMS[args.member_caches]
        async with run_controller_manager(kubeconfig, tmp / f"controller-manager-{tag}.log",
                                          [*CM_FLAGS, PRESERVE_FLAG] if flag else CM_FLAGS, None,
                                          program=program) as cm:
            await wait_until_idle(http, cm, args.phase_time)
            if flag:
                await wait_members_reachable(http, cm, args.phase_time)
            if warm_up.rebalancers:  # untimed: created together, waited for until all finished
                async with finishes_seen(http, host.url, warm_up, args.phase_time) as warmed:
                    await create_rebalancers(http, warm_up, preserve, args)
                    await asyncio.wait_for(warmed, args.phase_time)
                await wait_until_idle(http, cm, args.phase_time)
            before = await scrape(http, cm.metrics)
            members_at_start = member_counts(proxies)
            async with (finishes_seen(http, host.url, layout, args.phase_time) as watcher,
                        profiled(args.profile, {f"controller-manager-{tag}": cm.proc.pid})):
                cm_cpu0, host_cpu0 = cpu_seconds(cm.proc.pid), cpu_seconds(host.proc.pid)
                t0 = time.monotonic()
                await create_rebalancers(http, layout, preserve, args)
                finished = await asyncio.wait_for(watcher, args.phase_time)
                cm_cpu, host_cpu = cpu_seconds(cm.proc.pid) - cm_cpu0, cpu_seconds(host.proc.pid) - host_cpu0
            members_after = member_counts(proxies)
            peak = status_kib("VmHWM", cm.proc.pid)
            requests = counted_by(await scrape(http, cm.metrics), "rest_client_requests_total", "method", before)
        if preserve:
            await check_preserved(http, layout, args)
        else:
            await check_results(http, layout)
    return Run(finished - t0, peak, cm_cpu, host_cpu, requests, members_after - members_at_start,
               members_at_start - members_before)


# ------------------------------------------------------------------------------------------ report


@dataclass
class Round:
    preserve: Run
    fresh: Run


def describe(requests: Counter[str] | dict[str, float]) -> str:
    return ", ".join(f"{count:,.0f} {what}" for what, count in sorted(requests.items()) if count) or "none"


def report(args: argparse.Namespace, layout: Layout, rounds: list[Round]) -> None:
    what = "median of " + (f"{len(rounds)} rounds, range in brackets" if len(rounds) > 1 else "1 round")
    stuck = sum(moved(args, k) for k in range(layout.bindings))
    fresh_flag = "without" if args.fresh_without_flag else "with"
    print(f"\n{layout.rebalancers:,} rebalancers x {layout.workloads} workloads ({layout.bindings:,} Deployments "
          f"x {len(MEMBERS)} members, {args.replicas} replicas on each; {stuck:,} moved by preserve mode), {what}:")
    for mode in ("preserve", "fresh"):
        runs: list[Run] = [getattr(r, mode) for r in rounds]
        flag = f"{'with' if mode == 'preserve' else fresh_flag} {PRESERVE_FLAG}"
        print(f"  {mode:<9} all finished in {spread([r.seconds for r in runs])} s; controller-manager peak RSS "
              f"{spread([r.peak_rss_kib / 1024 for r in runs], '{:.0f}')} MiB, CPU {spread([r.cm_cpu for r in runs])} s"
              f"; host server CPU {spread([r.host_cpu for r in runs])} s ({flag})")
        print(f"            requests to the host (last round): {describe(runs[-1].host_requests)}")
        print(f"            requests to the members in the timed window (all rounds): "
              f"{describe(sum((r.member_requests for r in runs), Counter()))}; from the start to the timing "
              f"(last round): {describe(runs[-1].member_requests_at_start)}")
    time_ratio = [r.preserve.seconds / r.fresh.seconds for r in rounds]
    rss_ratio = [r.preserve.peak_rss_kib / r.fresh.peak_rss_kib for r in rounds]
    for name, ratios in (("time", time_ratio), ("memory", rss_ratio)):
        verdict = "within" if statistics.median(ratios) <= AIM else "MISSES"
        print(f"  ratio     preserve / fresh {name} = {spread(ratios)}x ({verdict} {AIM}x)")
    # The CPU moves less with the load of other processes than the wall time of a sub-second window does.
    print(f"            preserve / fresh controller-manager CPU = "
          f"{spread([r.preserve.cm_cpu / r.fresh.cm_cpu for r in rounds])}x")
    lists = max(r.preserve.member_lists for r in rounds)
    print(f"  member LISTs in a timed preserve window: at most {lists} "
          f"({'none per workload' if lists == 0 else 'SOME'})", flush=True)


async def bench_all(args: argparse.Namespace, tmp: Path) -> None:
    layout = Layout(args.rebalancers, args.workloads, args.namespaces)
    warm_up = layout.warm_up(args.warm_up)
    try:
        async with asyncio.timeout(args.time_limit):
            t0 = time.monotonic()
            async with running_members(args, [layout, warm_up] if warm_up.rebalancers else [layout], tmp) as proxies:
                print(f"members populated in {time.monotonic() - t0:.1f} s", flush=True)
                rounds: list[Round] = []
                for index in range(1, args.rounds + 1):
                    print(f"--- round {index}, load average {os.getloadavg()[0]:.2f}", flush=True)
                    runs: dict[bool, Run] = {}
                    for preserve in ((False, True) if index % 2 == 0 else (True, False)):  # alternate the order
                        tag = f"r{index}-{'preserve' if preserve else 'fresh'}"
                        runs[preserve] = await run_mode(args, layout, proxies, tmp, tag, preserve=preserve)
                    rounds.append(Round(runs[True], runs[False]))
                    p, f = runs[True], runs[False]
                    print(f"  round {index}: preserve {p.seconds:.2f} s, {p.peak_rss_kib / 1024:.0f} MiB, "
                          f"CPU {p.cm_cpu:.2f} s; fresh {f.seconds:.2f} s, {f.peak_rss_kib / 1024:.0f} MiB, "
                          f"CPU {f.cm_cpu:.2f} s; member LISTs in the timed preserve window: {p.member_lists}",
                          flush=True)
                report(args, layout, rounds)
    except TimeoutError:
        raise BenchError(f"the benchmark passed --time-limit {args.time_limit:.0f}s") from None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--rebalancers", type=int, default=10, help="rebalancers per run (default 10)")
    p.add_argument("--workloads", type=int, default=100, help="workloads per rebalancer (default 100)")
    p.add_argument("--namespaces", type=int, default=4, help="namespaces the workloads are spread over")
    p.add_argument("--replicas", type=int, default=2, help="replicas (Pods) of each workload on each member")
    p.add_argument("--stuck-every", type=int, default=4, metavar="N",
                   help="every N-th workload has a Pod unschedulable on member1 for 10 minutes, the next one on "
                        "member2 for 1 minute (default 4; at least 2)")
    p.add_argument("--concurrency", type=int, default=16, help="connections of this process (setup and timing)")
    p.add_argument("--fresh-without-flag", action="store_true",
                   help=f"run the fresh mode's controller-manager without {PRESERVE_FLAG} (default: with it, as "
                        "the preserve run, so that the memory compares like with like)")
    p.add_argument("--member-caches", choices=tuple(MEMBER_CACHES_PROGRAMS), default="parsed",
                   help="an experiment: the member clusters' informer caches as the controller-manager keeps them "
                        "(parsed: slim objects, its default), deflated JSON (compact) or whole parsed objects as "
                        "before they were slim (full)")
    p.add_argument("--warm-up", type=int, default=2, metavar="N",
                   help="rebalancers (on workloads of their own) finished before each timed run, untimed (default 2)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of (preserve, fresh); medians reported (default 3)")
    p.add_argument("--phase-time", type=float, default=120.0, help="time limit of each phase, seconds")
    p.add_argument("--time-limit", type=float, default=1200.0, help="time limit of the whole benchmark, seconds")
    p.add_argument("--profile", type=Path, default=None, metavar="DIR",
                   help="sample the controller-manager with py-spy (GIL holder) during each timed run: collapsed "
                        "stacks in DIR/controller-manager-r<N>-<mode>.txt (slows the figures)")
    p.add_argument("--keep-logs", type=Path, default=None, metavar="DIR", help="copy the children's logs here")
    args = p.parse_args(argv)
    require_at_least_one(p, args, "rebalancers", "workloads", "namespaces", "replicas", "concurrency", "rounds")
    if args.stuck_every < 2:
        p.error("--stuck-every must be at least 2")
    if args.warm_up < 0:
        p.error("--warm-up must not be negative")
    if error := prepare_profile_dir(args.profile):
        p.error(error)
    return args


def main() -> int:
    args = parse_args()
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs, aiohttp {aiohttp.__version__}; "
          f"dev API servers in child processes, in-memory storage")
    return run_in_tmp(lambda tmp: bench_all(args, tmp), "preserve-bench-", args.keep_logs)


if __name__ == "__main__":
    sys.exit(main())
