"""``karmada-devplane demo``: the user's documents, played end to end on a fresh dev plane.

For each document the demo starts a dev plane (host + members + Karmada simulation, with the
scheduler estimator on, as the descheduler document asks), starts the real product processes
``karmada-controller-manager`` and ``karmada-descheduler`` against it, then runs each step of
the document: the ``kubectl`` commands with the real kubectl and the kubeconfigs the plane wrote
(contexts ``karmada-apiserver``, ``member1``...), the ``karmadactl`` ones with
``karmada-devplane ctl``. It prints every command and its output as the documents show them
and checks every outcome the document states, each within a deadline. Exit 0 when all were
observed; otherwise 1, naming the step that failed. Timings are shortened for a demo (status
every second, descheduling every 5 s with a 5 s threshold, a TTL of 5 s instead of 300) and
the demo says so where it differs from the document.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TextIO

import yaml

from controller_manager import objects
from estimator.unschedulable import pod_unschedulable
from karmada_api.resources import CLUSTERS
from kube_api.resources import STATEFUL_SETS

from .demo_bulk import play_bulk
from .demo_failback import CONTROLLER_MANAGER_FLAGS, play_failback
from .demo_preserve import PRESERVE_FLAGS, play_preserve, preserve_plane_options
from .demo_session import (
    DEMO_TTL_SECONDS,
    DESCHEDULING_INTERVAL,
    STEP_TIMEOUT,
    UNSCHEDULABLE_THRESHOLD,
    Narrator,
    Session,
    StepFailed,
    demo_plane_options,
    distribution_is,
    document,
    eventually,
    hold,
    no_eviction_tasks,
    rebalancer_gone,
    rebalancer_successful,
    session,
)
from .plane import PlaneOptions

DOCUMENTS = ("rebalancer", "descheduler")
"""What ``demo`` and ``demo all`` play: the user's two documents, README's first command (about 45 s)."""
DEMOS = (*DOCUMENTS, "failback", "bulk", "preserve")
"""Every demo; those beyond the documents (fail-back, bulk rebalancing, preserve mode) are asked for by name."""


# ------------------------------------------------------------------------------------------ documents


async def play_rebalancer(s: Session) -> None:
    """The Workload Rebalancer tutorial, steps 1 to 6."""
    s.say.title("Workload Rebalancer, step 1: create a Deployment")
    s.write("deployment.yaml", document("deployment.yaml"))
    await s.kubectl("--context", "karmada-apiserver", "apply", "-f", "deployment.yaml")
    await s.wait_distribution("foo", {"member1": 2, "member2": 1},
                              "step 1: 2 replicas in member1 and 1 in member2")
    await s.karmadactl_get_deploy("foo")

    s.say.title("Step 2: add a NoExecute taint to member1 to mock cluster failover")
    await s.karmadactl_taint("member1", "workload-rebalancer-test:NoExecute")
    await s.wait_distribution("foo", {"member2": 3}, "step 2: all 3 replicas moved to member2")
    await s.karmadactl_get_deploy("foo")
    await eventually("step 2: the graceful eviction of member1 is finished",
                     lambda: no_eviction_tasks(s, "foo-deployment"))
    await s.karmadactl_taint("member1", "workload-rebalancer-test:NoExecute-")
    s.say.note("removing the taint does not move replicas back: watching for 5 seconds")
    await hold("step 2: replicas stay in member2 after the taint is removed",
                lambda: distribution_is(s, "foo", {"member2": 3}), seconds=5.0)
    await s.karmadactl_get_deploy("foo")

    s.say.title("Step 3: apply a WorkloadRebalancer to trigger rescheduling")
    s.write("workload-rebalancer.yaml", document("workload-rebalancer.yaml"))
    await s.kubectl("--context", "karmada-apiserver", "apply", "-f", "workload-rebalancer.yaml")

    s.say.title("Step 4: check the status of the WorkloadRebalancer")
    await eventually("step 4: observedWorkloads reports deployment foo Successful",
                     lambda: rebalancer_successful(s, "demo"))
    await s.kubectl("--context", "karmada-apiserver", "get", "workloadrebalancer", "demo", "-o", "yaml")

    s.say.title("Step 5: observe the real effect of the WorkloadRebalancer")
    await s.wait_distribution("foo", {"member1": 2, "member2": 1},
                              "step 5: 2 replicas back in member1, 1 still in member2")
    await s.karmadactl_get_deploy("foo")
    await eventually("step 5: events ScheduleBindingSucceed (Result: {member1:2, member2:1}) and "
                     "AggregateStatusSucceed on deployment foo", lambda: _tutorial_events(s))
    described = await s.kubectl("--context", "karmada-apiserver", "describe", "deployment", "foo")
    if "Binding has been scheduled successfully. Result: {member1:2, member2:1}" not in described:
        raise StepFailed("step 5: kubectl describe deployment foo does not show the schedule event")

    s.say.title("Step 6: update and auto-clean the WorkloadRebalancer")
    ttl_doc = document("workload-rebalancer-ttl.yaml")
    s.say.note(f"the document sets ttlSecondsAfterFinished: 300; the demo uses {DEMO_TTL_SECONDS} to stay short")
    s.write("workload-rebalancer.yaml", ttl_doc.replace("ttlSecondsAfterFinished: 300",
                                                        f"ttlSecondsAfterFinished: {DEMO_TTL_SECONDS}"))
    await s.kubectl("--context", "karmada-apiserver", "apply", "-f", "workload-rebalancer.yaml")
    await eventually("step 6: the WorkloadRebalancer is deleted after its TTL",
                     lambda: rebalancer_gone(s, "demo"), timeout=DEMO_TTL_SECONDS + STEP_TIMEOUT)
    await s.kubectl("--context", "karmada-apiserver", "get", "workloadrebalancer", "demo", check=False)


async def play_descheduler(s: Session) -> None:
    """The descheduler example: an unschedulable replica in member1 moves to member2."""
    s.say.title("Descheduler: a deployment with 3 replicas divided into 3 member clusters")
    s.write("nginx.yaml", document("nginx.yaml"))
    await s.kubectl("--context", "karmada-apiserver", "apply", "-f", "nginx.yaml")
    await s.wait_distribution("nginx", {"member1": 1, "member2": 1, "member3": 1},
                              "one nginx replica running in each member cluster")
    await s.karmadactl_get_deploy("nginx")

    s.say.title("Cordon member1's node and evict its replica")
    await s.kubectl("--context", "member1", "cordon", "member1-control-plane")
    await s.kubectl("--context", "member1", "delete", "pod", "-l", "app=nginx")
    await eventually("the new pod in member1 stays Pending (PodScheduled=False, Unschedulable)",
                     lambda: _pending_unschedulable(s, "member1", "app=nginx"))
    await s.kubectl("--context", "member1", "get", "pod")

    s.say.title("The descheduler moves the unschedulable replica to another cluster")
    s.say.note(f"the document waits 5 to 7 minutes; the demo runs the descheduler every {DESCHEDULING_INTERVAL} "
               f"with --unschedulable-threshold={UNSCHEDULABLE_THRESHOLD}")
    await s.wait_distribution("nginx", {"member2": 2, "member3": 1},
                              "the replica runs in member2 and member1 has none")
    await eventually("member1 has no nginx pod left", lambda: _no_pods(s, "member1", "app=nginx"))
    await s.kubectl("--context", "member1", "get", "pod")
    await s.kubectl("--context", "member2", "get", "pod")
    await play_descheduler_statefulset(s)


async def play_descheduler_statefulset(s: Session) -> None:
    """Not in the document (issue 25): a StatefulSet whose replicas stop fitting in member1, played the same way."""
    s.say.title("Descheduler for a StatefulSet: 4 replicas divided into 3 member clusters")
    s.say.note("not in the document: the descheduler moves a StatefulSet's stuck replicas too; the example's "
               "Deployment goes and member1's node is uncordoned, so every member has room again")
    await s.kubectl("--context", "karmada-apiserver", "delete", "-f", "nginx.yaml")
    await s.kubectl("--context", "member1", "uncordon", "member1-control-plane")
    await eventually("no nginx pod left, and Karmada sees no CPU allocated in any member", lambda: _members_free(s))
    s.write("web-statefulset.yaml", document("web-statefulset.yaml"))
    await s.kubectl("--context", "karmada-apiserver", "apply", "-f", "web-statefulset.yaml")
    await s.wait_distribution("web", {"member1": 2, "member2": 1, "member3": 1},
                              "statefulset web: 2 replicas running in member1, 1 in member2 and 1 in member3",
                              resource=STATEFUL_SETS)
    await eventually("statefulset web: Karmada reports 4/4 ready", lambda: _template_ready(s, "web", 4))
    await s.kubectl("--context", "karmada-apiserver", "get", "statefulset", "web")
    await _show_assignment(s, "web-statefulset")

    s.say.title("Cordon member1's node and evict the StatefulSet's replicas there")
    await s.kubectl("--context", "member1", "cordon", "member1-control-plane")
    await s.kubectl("--context", "member1", "delete", "pod", "-l", "app=web")
    await eventually("statefulset web: web-1 in member1 stays Pending (PodScheduled=False, Unschedulable) while "
                     "web-0 runs on member1-worker", lambda: _pending_unschedulable(s, "member1", "app=web"))
    await s.kubectl("--context", "member1", "get", "pod", "-l", "app=web", "-o", "wide")

    s.say.title("The descheduler moves the StatefulSet's unschedulable replica to another cluster")
    await eventually("statefulset web: member1 keeps 1 replica and the 4th runs in member2 or member3",
                     lambda: _statefulset_moved(s, "web"))
    await eventually("statefulset web: no Pending pod left in member1",
                     lambda: _all_running(s, "member1", "app=web"))
    await eventually("statefulset web: Karmada reports 4/4 ready again", lambda: _template_ready(s, "web", 4))
    await s.kubectl("--context", "member1", "get", "pod", "-l", "app=web")
    await _show_assignment(s, "web-statefulset")
    await s.kubectl("--context", "karmada-apiserver", "get", "statefulset", "web")


# ------------------------------------------------------------------------------------------ checks


async def _tutorial_events(s: Session) -> bool:
    code, text = await s.kubectl_quiet("--context", "karmada-apiserver", "get", "events", "-n", "default",
                                       "--field-selector", "involvedObject.kind=Deployment,involvedObject.name=foo",
                                       "-o", "yaml")
    if code != 0:
        return False
    events = (yaml.safe_load(text) or {}).get("items") or []
    reasons = {(e.get("reason"), (e.get("source") or {}).get("component"), e.get("message")) for e in events}
    scheduled = ("ScheduleBindingSucceed", "default-scheduler",
                 "Binding has been scheduled successfully. Result: {member1:2, member2:1}") in reasons
    aggregated = any(r == "AggregateStatusSucceed" for r, _c, _m in reasons)
    return scheduled and aggregated


async def _pending_unschedulable(s: Session, member: str, selector: str) -> bool:
    return any(pod_unschedulable(pod, timedelta(0)) for pod in await s.member_pods(member, selector))


async def _no_pods(s: Session, member: str, selector: str) -> bool:
    return not await s.member_pods(member, selector)


async def _show_assignment(s: Session, binding: str) -> None:
    """``kubectl get resourcebinding`` of the binding's ``spec.clusters``: the replicas per member."""
    await s.kubectl("--context", "karmada-apiserver", "get", "resourcebinding", binding,
                    "-o", "jsonpath={.spec.clusters}{\"\\n\"}",
                    show=f"--context karmada-apiserver get resourcebinding {binding} -o jsonpath='{{.spec.clusters}}'")


async def _members_free(s: Session) -> bool:
    """No member runs a pod of the example, and every Cluster's resource summary (what Karmada's general
    estimator reads) shows no CPU requested."""
    for cluster in (await s.host_client.list(CLUSTERS)).get("items") or []:
        allocated = (objects.status(cluster).get("resourceSummary") or {}).get("allocated") or {}
        if str(allocated.get("cpu") or "0") != "0" or not await _no_pods(s, objects.name(cluster), "app=nginx"):
            return False
    return True


async def _all_running(s: Session, member: str, selector: str) -> bool:
    pods = await s.member_pods(member, selector)
    return bool(pods) and all(objects.status(pod).get("phase") == "Running" for pod in pods)


async def _template_ready(s: Session, name: str, ready: int, namespace: str = "default") -> bool:
    """The Karmada template's aggregated status: ``readyReplicas`` as kubectl's READY column shows it."""
    template = await s.host_client.get(STATEFUL_SETS, name, namespace)
    return int(objects.status(template).get("readyReplicas") or 0) == ready


async def _statefulset_moved(s: Session, name: str) -> bool:
    """member1 runs 1 ready replica, the other 3 run ready in member2 and member3 (either may take the 4th)."""
    found = await s.ready_replicas(name, resource=STATEFUL_SETS)
    others = sorted(found.get(member, (0, 0))[0] for member in ("member2", "member3"))
    return found.get("member1") == (1, 1) and all(r == d for r, d in found.values()) and others == [1, 2]


# ------------------------------------------------------------------------------------------ running


@dataclass(frozen=True)
class Demo:
    """One demo: what it plays on a fresh plane, and how the product processes run for it."""

    play: Callable[[Session], Awaitable[None]]
    descheduler: bool = False
    controller_manager_flags: Sequence[str] = ()
    plane_options: Callable[[], PlaneOptions] = demo_plane_options
    """The plane it needs (default: :func:`demo_plane_options`, the documents' member shapes)."""


def demos() -> dict[str, Demo]:
    """Every demo by name; the ones beyond the documents live in their own modules, built on demo_session."""
    return {"rebalancer": Demo(play_rebalancer), "descheduler": Demo(play_descheduler, descheduler=True),
            "failback": Demo(play_failback, controller_manager_flags=CONTROLLER_MANAGER_FLAGS),
            "bulk": Demo(play_bulk),
            "preserve": Demo(play_preserve, controller_manager_flags=PRESERVE_FLAGS,
                             plane_options=preserve_plane_options)}


async def run_demo(which: str, out: TextIO = sys.stdout, workdir: Path | None = None) -> int:
    """Play the chosen documents; 0 when every outcome was observed, 1 otherwise."""
    names: Sequence[str] = DOCUMENTS if which == "all" else (which,)
    narrator = Narrator(out)
    started = time.monotonic()
    base = workdir or Path(tempfile.mkdtemp(prefix="karmada-demo-"))
    try:
        for name in names:
            directory = base / name
            directory.mkdir(parents=True, exist_ok=True)
            try:
                demo = demos()[name]
                async with session(directory, narrator, descheduler=demo.descheduler,
                                   controller_manager_flags=demo.controller_manager_flags,
                                   plane_options=demo.plane_options()) as s:
                    await demo.play(s)
            except StepFailed as exc:
                print(f"\nDEMO FAILED ({name}): {exc}\nFiles and product logs kept in {directory}", file=out,
                      flush=True)
                return 1
    except asyncio.CancelledError:  # Ctrl-C or SIGTERM: the session has stopped its programs on the way out
        if workdir is None:
            shutil.rmtree(base, ignore_errors=True)
            print("\nDemo interrupted. Its files and product logs were removed.", file=out, flush=True)
        else:
            print(f"\nDemo interrupted. Files and product logs kept in {base}.", file=out, flush=True)
        raise
    kept = f" Files and product logs kept in {base}."
    if workdir is None:
        shutil.rmtree(base, ignore_errors=True)
        kept = " Its files and product logs were removed (--workdir DIR keeps them)."
    print(f"\nDemo passed: every outcome of the {', '.join(names)} document(s) observed "
          f"in {time.monotonic() - started:.0f}s.{kept}", file=out, flush=True)
    return 0
