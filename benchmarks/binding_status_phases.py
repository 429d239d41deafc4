"""Binding status on the reference plane: the requests of Karmada's Go controller and ours, phase by phase.

Issue 23 reports, from an outside run it does not describe, 3 binding and template status writes per binding
for ours against 1 for Karmada (and half of Karmada's template GETs 404). ``side_by_side.py`` times one harness
(objects settled before the controller starts) and sees 1 write per binding for both. This one looks for the
harness that tells them apart: for each ``--setup`` it runs Karmada's ``karmada-controller-manager
--controllers=bindingStatus`` and then ours, each alone, and prints kube-apiserver's ``apiserver_request_total``
(binding status PUTs, template GETs and status PUTs, 404s and 409s) for three phases:

- ``setup``     what the harness makes (its own writes are counted too: the same in both runs);
- ``timed``     each binding's two Works set Applied, one right after the other (16 connections);
- ``teardown``  the run's namespaces deleted (kube-controller-manager deletes what they hold) and its Works
                deleted by name, with the controller still running.

Setups (all: N Deployments, their bindings scheduled an hour ago, two Works each):

- ``settled``          all made, statuses as a controller writes them for Works without status, then the
                       controller starts (``side_by_side.py``'s harness);
- ``raw``              all made, no statuses, then the controller starts;
- ``late-templates``   bindings and Works made, the controller starts, then the Deployments;
- ``live``             the controller starts first, then everything is made.

    .venv/bin/python benchmarks/binding_status_phases.py                        # 200 bindings, every setup
    .venv/bin/python benchmarks/binding_status_phases.py --bindings 500 --setup raw,live
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # as a script: the repository importable without installing it
    sys.path.insert(0, str(REPO))

from benchmarks import bindingstatus, rebalancer, side_by_side  # noqa: E402
from benchmarks.refplane import KARMADA_API, RefPlane, missing, started  # noqa: E402
from benchmarks.support import expect, pool_all, run_in_tmp, use_tls  # noqa: E402
from karmada_api.names import EXECUTION_SPACE_PREFIX  # noqa: E402
from kube_api.timeutil import format_time  # noqa: E402

SETUPS = ("settled", "raw", "late-templates", "live")
NAMESPACES = 4
CONCURRENCY = 16
SETTLE = 3.0
"""Seconds to let a phase's last events reach the controller before it is waited for until idle."""
SHOWN = ("resourcebindings/status PUT", "resourcebindings/status PUT 409", "deployments GET", "deployments GET 404",
         "deployments/status PUT", "deployments/status PUT 409")

Job = Callable[[int], Awaitable[None]]


def jobs(http: aiohttp.ClientSession, layout: bindingstatus.Layout, objs: bindingstatus.Objects,
         setup: str) -> tuple[Job | None, Job | None]:
    """What the harness makes per binding before the controller starts, and after (None: nothing)."""
    scheduled = json.dumps({"status": {"lastScheduledTime": format_time(datetime.now(UTC) - timedelta(hours=1))}})

    async def template(k: int) -> None:
        async with http.post(bindingstatus.DEPLOY_PATH.format(ns=layout.namespace(k)),
                             json=bindingstatus.deployment(layout, k)) as resp:
            objs.templates[k] = json.loads(await expect(resp, 201))

    async def binding_and_works(k: int) -> None:
        async with http.post(bindingstatus.RB_PATH.format(ns=layout.namespace(k)),
                             json=bindingstatus.binding(layout, k)) as resp:
            await expect(resp, 201)
        async with http.patch(f"{layout.binding_path(k)}/status", data=scheduled,
                              headers=rebalancer.MERGE_PATCH) as resp:
            objs.bindings[k] = json.loads(await expect(resp, 200))
        for cluster in bindingstatus.MEMBERS:
            body = bindingstatus.work(layout, k, cluster, objs.bindings[k])
            async with http.post(bindingstatus.WORK_PATH.format(ns=body["metadata"]["namespace"]), json=body) as resp:
                objs.works[k].append(json.loads(await expect(resp, 201)))

    async def everything(k: int) -> None:
        await template(k)
        await binding_and_works(k)
        if setup == "settled":
            await bindingstatus.write_statuses(http, layout, k, objs, {"PUT": 0})

    return {"settled": (everything, None), "raw": (everything, None), "late-templates": (binding_and_works, template),
            "live": (None, everything)}[setup]


async def run(system: str, setup: str, args: argparse.Namespace, *, plane: RefPlane, http: aiohttp.ClientSession,
              tmp: Path, tag: str) -> None:
    layout = bindingstatus.Layout(args.bindings, NAMESPACES, prefix=tag)
    for name in [layout.namespace(n) for n in range(NAMESPACES)] + [EXECUTION_SPACE_PREFIX + c
                                                                     for c in bindingstatus.MEMBERS]:
        async with http.post("/api/v1/namespaces", json={"metadata": {"name": name}}) as resp:
            await expect(resp, 201, 409)
    objs = bindingstatus.Objects([{}] * args.bindings, [{}] * args.bindings, [[] for _ in range(args.bindings)])
    before, after = jobs(http, layout, objs, setup)
    counts = [await side_by_side.api_requests(http)]
    if before is not None:
        await pool_all("setup", args.bindings, CONCURRENCY, args.phase_time, before)
    async with side_by_side.controller(system, plane=plane, work="bindingStatus", tmp=tmp, tag=tag, http=http,
                                       time_limit=args.phase_time) as process:

        async def idle() -> None:
            await asyncio.sleep(SETTLE)
            await rebalancer.wait_until_idle(http, process, args.phase_time, probe="/healthz")
            counts.append(await side_by_side.api_requests(http))

        if after is not None:
            await pool_all("setup", args.bindings, CONCURRENCY, args.phase_time, after)
        await idle()
        async with bindingstatus.all_seen(http, KARMADA_API, layout, args.phase_time) as finished:
            member = bindingstatus.member_writes(http, layout, objs, {"PATCH": 0, "PUT": 0, "POST": 0}, direct=False)
            await pool_all("Work writes", args.bindings, CONCURRENCY, args.phase_time, member)
            await finished()
        await idle()
        await side_by_side.clean(http, tag, argparse.Namespace(namespaces=NAMESPACES, concurrency=CONCURRENCY,
                                                               phase_time=args.phase_time))
        await idle()
    phases = []
    for phase, start, end in zip(("setup", "timed", "teardown"), counts[:-1], counts[1:], strict=True):
        changed = side_by_side.difference(end, start)
        shown = ", ".join(f"{key} {changed[key] / args.bindings:.2f}" for key in SHOWN if changed.get(key))
        phases.append(f"    {phase:9s} {shown or '-'}")
    print(f"  {setup} / {system} (per binding):", *phases, sep="\n", flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--bindings", type=int, default=200)
    parser.add_argument("--setup", default=",".join(SETUPS), help=f"comma-separated, of {', '.join(SETUPS)}")
    parser.add_argument("--phase-time", type=float, default=300.0, help="seconds a phase may take")
    parser.add_argument("--keep-logs", type=Path, default=None)
    args = parser.parse_args()
    args.setup = [s for s in args.setup.split(",") if s]
    unknown = sorted(set(args.setup) - set(SETUPS))
    if unknown or not args.setup:
        parser.error(f"--setup: {', '.join(unknown) or 'empty'}; want some of {', '.join(SETUPS)}")
    if args.bindings < 1 or args.phase_time <= 0:
        parser.error("--bindings must be at least 1 and --phase-time positive")
    return args


def main() -> int:
    args = parse_args()
    reason = missing()
    if reason:
        print(f"binding_status_phases: {reason}", file=sys.stderr)
        return 2

    async def bench(tmp: Path) -> None:
        plane = RefPlane(tmp / "refplane", {"API_ONLY": "1", "START_KUBE_CONTROLLER_MANAGER": "1"})
        async with started(plane):
            use_tls(plane.client_tls())
            async with rebalancer.session(KARMADA_API, CONCURRENCY) as http:
                for index, (setup, system) in enumerate((s, system) for s in args.setup
                                                        for system in ("karmada", "ours")):
                    await run(system, setup, args, plane=plane, http=http, tmp=tmp, tag=f"bsp{os.getpid()}r{index}")

    print(f"{os.cpu_count()} CPUs; reference plane: kube-apiserver v1.20.2 + etcd, Karmada f8fdd02; "
          f"{args.bindings} bindings x 2 Works", flush=True)
    return run_in_tmp(bench, "binding-status-phases-", args.keep_logs)


if __name__ == "__main__":
    sys.exit(main())
