"""Binding status during real rollouts on the whole reference plane: the writes of Karmada's controller and ours.

Where ``side_by_side.py`` and ``binding_status_phases.py`` write the Works' statuses themselves, this one lets
all of Karmada run (``../shared/refplane``: scheduler, binding and execution controllers, work-status
controller, two members whose Deployments the readiness faker makes Ready): ``--bindings`` Deployments of 2
replicas, split over member1 and member2 by a static-weight PropagationPolicy, each Work's status then changing
several times as the member's Deployment rolls out. It is what shows the outside "3x" of issue 23: ours, alone in
its process, reconciled every Work event at once and wrote every intermediate state, while Karmada's
controller-manager, whose client-side rate limit all its controllers share, coalesced them.

Runs, each on a fresh plane: Karmada's own ``bindingStatus``, then ours in its place (``karmada-controller-manager
--controllers=...,-bindingStatus`` and ``python -m controller_manager --controllers=bindingStatus``) once per
``--coalesce-period``. Printed per run, per binding, from kube-apiserver's ``apiserver_request_total`` (from just
before the Deployments are created until 20 s after all are Ready, every client counted: the scheduler's status
PATCHes and the work-status controller's PUTs are the same in every run): binding status PUTs, template GETs and
status PUTs, Work status PUTs, and the seconds until every template reported its replicas ready.

    .venv/bin/python benchmarks/binding_status_rollout.py                          # 60 Deployments; 0s and 1s
    .venv/bin/python benchmarks/binding_status_rollout.py --bindings 100 --coalesce-period 0s,1s,2s
    .venv/bin/python benchmarks/binding_status_rollout.py --coalesce-period 1s --rounds 3    # medians of 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # as a script: the repository importable without installing it
    sys.path.insert(0, str(REPO))

from benchmarks import rebalancer, side_by_side  # noqa: E402
from benchmarks.refplane import KARMADA_API, OURS_IN_PLACE, RefPlane, missing, started  # noqa: E402
from benchmarks.support import (  # noqa: E402
    BenchError,
    child_env,
    die_with_parent,
    expect,
    pool_all,
    rotated,
    run_in_tmp,
    stop_process,
    use_tls,
)
from sharedcli.flagtypes import parse_duration  # noqa: E402

NS = "rollout"
CONCURRENCY = 8
SETTLE = 20.0
"""Seconds after the last template is Ready: the members' last statuses reach the Works, bindings, templates."""
SHOWN = ("resourcebindings/status PUT", "resourcebindings/status PUT 409", "deployments GET",
         "deployments/status PUT", "deployments/status PUT 409", "works/status PUT")
POLICY = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "halves"},
          "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                   "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                                 "replicaScheduling": {
                                     "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                     "weightPreference": {"staticWeightList": [
                                         {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                                         {"targetCluster": {"clusterNames": ["member2"]}, "weight": 1}]}}}}}


def deployment(i: int) -> dict[str, Any]:
    labels = {"app": f"d{i}"}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"d{i:04d}"},
            "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                         {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "10m"}}}]}}}}


async def rollout(http: Any, bindings: int, time_limit: float) -> float:
    """Create the namespace, the policy and the Deployments; seconds until every template reports 2 ready."""
    async with http.post("/api/v1/namespaces", json={"metadata": {"name": NS}}) as resp:
        await expect(resp, 201)
    async with http.post(f"/apis/policy.karmada.io/v1alpha1/namespaces/{NS}/propagationpolicies",
                         json=POLICY) as resp:
        await expect(resp, 201)
    t0 = time.monotonic()

    async def create(i: int) -> None:
        async with http.post(f"/apis/apps/v1/namespaces/{NS}/deployments", json=deployment(i)) as resp:
            await expect(resp, 201)

    await pool_all("Deployments", bindings, CONCURRENCY, time_limit, create)
    while time.monotonic() - t0 < time_limit:
        async with http.get(f"/apis/apps/v1/namespaces/{NS}/deployments") as resp:
            items = json.loads(await expect(resp, 200))["items"]
        if sum(1 for d in items if (d.get("status") or {}).get("readyReplicas") == 2) == bindings:
            return time.monotonic() - t0
        await asyncio.sleep(1.0)
    raise BenchError(f"not every template Ready within {time_limit:.0f}s")


Figures = dict[str, float]
"""One run's: ``ready`` (seconds) and, per binding, the count of each of :data:`SHOWN`."""


def label_of(system: str, period: str) -> str:
    return "Karmada" if system == "karmada" else f"ours, --binding-status-coalesce-period={period}"


def show(label: str, rounds: list[Figures]) -> str:
    """One line of figures: each one's median over ``rounds``, with its range when there are several."""
    counts = ", ".join(f"{key} {rebalancer.spread([r[key] for r in rounds])}" for key in SHOWN)
    ready = rebalancer.spread([r["ready"] for r in rounds], "{:.1f}")
    return f"  {label}: all Ready in {ready} s; per binding: {counts}"


async def run(system: str, period: str, args: argparse.Namespace, tmp: Path, round_no: int) -> Figures:
    plane = RefPlane(tmp / f"refplane-{system}-{period}-{round_no}", OURS_IN_PLACE if system == "ours" else {})
    async with started(plane, purge=True):
        proc = None
        try:
            use_tls(plane.client_tls())
            if system == "ours":
                with (tmp / f"ours-{period}-{round_no}.log").open("wb") as log:
                    proc = await asyncio.create_subprocess_exec(
                        sys.executable, "-m", "controller_manager", f"--kubeconfig={plane.karmada_kubeconfig}",
                        "--controllers=bindingStatus", "--leader-elect=false",
                        f"--binding-status-coalesce-period={period}", "--metrics-bind-address=0",
                        "--health-probe-bind-address=0", stdout=log, stderr=log,
                        stdin=asyncio.subprocess.DEVNULL, cwd=REPO, env=child_env(), preexec_fn=die_with_parent)
            async with rebalancer.session(KARMADA_API, CONCURRENCY) as http:
                before = await side_by_side.api_requests(http)
                ready = await rollout(http, args.bindings, args.time_limit)
                await asyncio.sleep(SETTLE)  # a fixed observation window, the same in every run
                changed = side_by_side.difference(await side_by_side.api_requests(http), before)
            figures = {"ready": ready, **{key: changed.get(key, 0) / args.bindings for key in SHOWN}}
            print(show(label_of(system, period), [figures]), flush=True)
            return figures
        finally:
            if proc is not None:
                await stop_process(proc, grace=10.0)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--bindings", type=int, default=60, help="Deployments rolled out")
    parser.add_argument("--coalesce-period", default="0s,1s", help="ours' --binding-status-coalesce-period values")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of every run, in a rotating order; "
                        "more than one prints the medians")
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--keep-logs", type=Path, default=None)
    args = parser.parse_args()
    try:
        args.periods = [p for p in args.coalesce_period.split(",") if p and parse_duration(p) >= 0]
    except ValueError as exc:
        parser.error(f"--coalesce-period: {exc}")
    if not args.periods or args.bindings < 1 or args.rounds < 1 or args.time_limit <= 0:
        parser.error("want --bindings >= 1, --rounds >= 1, a positive --time-limit and at least one "
                     "--coalesce-period")
    return args


def main() -> int:
    args = parse_args()
    reason = missing()
    if reason:
        print(f"binding_status_rollout: {reason}", file=sys.stderr)
        return 2

    runs = [("karmada", "-"), *(("ours", period) for period in args.periods)]

    async def bench(tmp: Path) -> None:
        results: dict[tuple[str, str], list[Figures]] = {run_: [] for run_ in runs}
        for round_no in range(args.rounds):
            if args.rounds > 1:
                print(f"round {round_no + 1}", flush=True)
            for system, period in rotated(runs, round_no):
                results[(system, period)].append(await run(system, period, args, tmp, round_no))
        if args.rounds > 1:
            print(f"medians of {args.rounds} rounds (ranges in brackets):", flush=True)
            for (system, period), rounds in results.items():
                print(show(label_of(system, period), rounds), flush=True)

    print(f"{os.cpu_count()} CPUs; reference plane (all of Karmada f8fdd02, two members); {args.bindings} "
          "Deployments x 2 replicas over member1 and member2", flush=True)
    return run_in_tmp(bench, "binding-status-rollout-", args.keep_logs)


if __name__ == "__main__":
    sys.exit(main())
