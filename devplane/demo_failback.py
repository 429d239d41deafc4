"""``karmada-devplane demo failback``: the Workload Rebalancer tutorial with ``clusterFailback`` on.

The tutorial's gap is that replicas stay on member2 after member1's taint is removed until someone
applies a WorkloadRebalancer. Here ``karmada-controller-manager`` runs with
``--controllers=*,clusterFailback`` (docs/failback.md): the same documents' Deployment goes
{member1:2, member2:1} → taint → {member2:3} → untaint → ``FailbackScheduled`` → after the window
``FailbackTriggered`` and {member1:2, member2:1} again, through a ``failback-member1-…`` rebalancer
nobody wrote, which its TTL then deletes. Window and TTL are shortened (and the demo says so).
"""

from __future__ import annotations

from typing import Any

import yaml

from controller_manager import objects
from controllers.failback.controller import EVENT_SCHEDULED, EVENT_TRIGGERED, FailbackOptions
from controllers.failback.recovery import EVICTED_FROM_ANNOTATION
from karmada_api.resources import WORKLOAD_REBALANCERS
from sharedcli.flagtypes import format_duration

from .demo import (
    STEP_TIMEOUT,
    Session,
    StepFailed,
    distribution_is,
    document,
    eventually,
    hold,
    no_eviction_tasks,
    rebalancer_gone,
    rebalancer_successful,
)

WINDOW_SECONDS = 10.0
TTL_SECONDS = 15.0  # long enough to show the finished rebalancer on a loaded machine
CONTROLLER_MANAGER_FLAGS = ("--controllers=*,clusterFailback",
                            f"--failback-stabilization-window={format_duration(WINDOW_SECONDS)}",
                            f"--failback-rebalancer-ttl={format_duration(TTL_SECONDS)}")
CLUSTER = "member1"
BINDING = "foo-deployment"


async def play_failback(s: Session) -> None:
    """The tutorial without its step 3: the controller-manager's fail-back puts the replicas back."""
    defaults = FailbackOptions()
    s.say.title("Fail-back, step 1: create a Deployment (the Workload Rebalancer tutorial's manifests)")
    s.say.note(f"karmada-controller-manager runs with {' '.join(CONTROLLER_MANAGER_FLAGS)}")
    s.say.note(f"the demo shortens the window to {format_duration(WINDOW_SECONDS)} (default "
               f"{format_duration(defaults.stabilization_window)}) and the rebalancers' TTL to "
               f"{format_duration(TTL_SECONDS)} (default {format_duration(defaults.rebalancer_ttl)})")
    s.write("deployment.yaml", document("deployment.yaml"))
    await s.kubectl("--context", "karmada-apiserver", "apply", "-f", "deployment.yaml")
    await s.wait_distribution("foo", {"member1": 2, "member2": 1}, "step 1: 2 replicas in member1 and 1 in member2")
    await s.karmadactl_get_deploy("foo")

    s.say.title(f"Step 2: add a NoExecute taint to {CLUSTER} to mock cluster failover")
    await s.karmadactl_taint(CLUSTER, "workload-rebalancer-test:NoExecute")
    await s.wait_distribution("foo", {"member2": 3}, "step 2: all 3 replicas moved to member2")
    await s.karmadactl_get_deploy("foo")
    await eventually(f"step 2: the binding records its eviction from {CLUSTER} ({EVICTED_FROM_ANNOTATION})",
                     lambda: _record_is(s, CLUSTER))
    jsonpath = f"{{.metadata.annotations.{_escaped(EVICTED_FROM_ANNOTATION)}}}"
    await s.kubectl("--context", "karmada-apiserver", "get", "rb", BINDING, "-o", f"jsonpath={jsonpath}",
                    show=f"--context karmada-apiserver get rb {BINDING} -o jsonpath='{jsonpath}'")
    await eventually(f"step 2: the graceful eviction of {CLUSTER} is finished", lambda: no_eviction_tasks(s, BINDING))

    s.say.title(f"Step 3: remove the taint; {CLUSTER} must stay recovered for the window")
    await s.karmadactl_taint(CLUSTER, "workload-rebalancer-test:NoExecute-")
    await eventually(f"step 3: a {EVENT_SCHEDULED} event on cluster {CLUSTER}",
                     lambda: _cluster_events(s, EVENT_SCHEDULED))
    await _show_events(s, EVENT_SCHEDULED)
    watch = WINDOW_SECONDS / 2
    s.say.note(f"during the window nothing moves: watching for {watch:.0f} seconds")
    await hold("step 3: replicas stay in member2 during the window",
               lambda: distribution_is(s, "foo", {"member2": 3}), seconds=watch)
    await s.karmadactl_get_deploy("foo")

    s.say.title("Step 4: after the window, clusterFailback creates a WorkloadRebalancer")
    triggered = await eventually(f"step 4: a {EVENT_TRIGGERED} event on cluster {CLUSTER}",
                                 lambda: _cluster_events(s, EVENT_TRIGGERED), timeout=WINDOW_SECONDS + STEP_TIMEOUT)
    # quick, before its TTL: the only WorkloadRebalancer there is, and its status
    await s.kubectl("--context", "karmada-apiserver", "get", "workloadrebalancers")
    name = await _only_rebalancer(s)
    if name not in triggered[0].get("message", ""):
        raise StepFailed(f"step 4: the {EVENT_TRIGGERED} event does not name the rebalancer {name}")
    await eventually(f"step 4: observedWorkloads of {name} reports deployment foo Successful",
                     lambda: rebalancer_successful(s, name))
    await s.kubectl("--context", "karmada-apiserver", "get", "workloadrebalancer", name, "-o", "yaml")
    await _show_events(s, EVENT_TRIGGERED)

    s.say.title("Step 5: the replicas are back, with no hand-made rebalancer")
    await s.wait_distribution("foo", {"member1": 2, "member2": 1},
                              "step 5: 2 replicas back in member1, 1 still in member2")
    await s.karmadactl_get_deploy("foo")
    await eventually(f"step 5: the record of {CLUSTER} is removed from the binding", lambda: _record_is(s, None))

    s.say.title(f"Step 6: the rebalancer is deleted {format_duration(TTL_SECONDS)} after it finished")
    await eventually(f"step 6: WorkloadRebalancer {name} is deleted by its TTL", lambda: rebalancer_gone(s, name),
                     timeout=TTL_SECONDS + STEP_TIMEOUT)
    await s.kubectl("--context", "karmada-apiserver", "get", "workloadrebalancer", name, check=False)


def _escaped(annotation: str) -> str:
    return annotation.replace(".", "\\.")


async def _record_is(s: Session, want: str | None) -> bool:
    annotations = objects.annotations(await s.binding(BINDING))
    return annotations.get(EVICTED_FROM_ANNOTATION) == want


def _event_selector(reason: str) -> str:
    return f"involvedObject.kind=Cluster,involvedObject.name={CLUSTER},reason={reason}"


async def _cluster_events(s: Session, reason: str) -> list[dict[str, Any]]:
    """The Events of ``reason`` about the Cluster (cluster-scoped: they live in ``default``)."""
    code, text = await s.kubectl_quiet("--context", "karmada-apiserver", "get", "events", "-n", "default",
                                       "--field-selector", _event_selector(reason), "-o", "yaml")
    return list((yaml.safe_load(text) or {}).get("items") or []) if code == 0 else []


async def _show_events(s: Session, reason: str) -> None:
    await s.kubectl("--context", "karmada-apiserver", "get", "events", "-n", "default",
                    "--field-selector", _event_selector(reason))


async def _only_rebalancer(s: Session) -> str:
    """The one WorkloadRebalancer there is: fail-back's, named ``failback-<cluster>-…``."""
    items = (await s.host_client.list(WORKLOAD_REBALANCERS)).get("items") or []
    names = [objects.name(item) for item in items]
    if len(names) != 1 or not names[0].startswith(f"failback-{CLUSTER}-"):
        raise StepFailed(f"step 4: expected one WorkloadRebalancer failback-{CLUSTER}-…, found {names}")
    return names[0]
