"""``karmada-devplane demo failback``: the Workload Rebalancer tutorial with ``clusterFailback`` on, and six more
workloads, two of which never get healthy.

The tutorial's gap is that replicas stay on member2 after member1's taint is removed until someone applies a
WorkloadRebalancer. Here ``karmada-controller-manager`` runs with ``--controllers=*,clusterFailback``
(docs/failback.md): seven Deployments are evicted from member1 by a NoExecute taint; once the taint is gone
and the window is over they fail back in batches, never more than ``--failback-max-concurrent`` (2) in flight.
``web-3`` and ``web-4`` ask for a node label only member2's nodes carry: on member2 alone they are ready (so
Karmada's graceful eviction from member1 ends, which fail-back waits for), back on member1 they never get ready:
after the progress deadline fail-back pauses (``FailbackPaused`` events naming them) and ``web-5``/``web-6`` wait,
until the operator resumes it with the Cluster annotation (a value it does not understand first: a Warning, nothing
changes). Window and deadline are shortened (and the demo says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import yaml

from controller_manager import objects
from controllers.failback.options import FailbackOptions
from controllers.failback.progress import FAILING_BACK_ANNOTATION, PAUSED_ANNOTATION, RESUME_ANNOTATION
from controllers.failback.reasons import (
    EVENT_PAUSED,
    EVENT_RESUME_INVALID,
    EVENT_RESUMED,
    EVENT_SCHEDULED,
    EVENT_TRIGGERED,
)
from controllers.failback.recovery import EVICTED_FROM_ANNOTATION
from karmada_api.resources import RESOURCE_BINDINGS
from sharedcli.flagtypes import format_duration

from .demo_session import (
    STEP_TIMEOUT,
    Session,
    StepFailed,
    distribution_is,
    document,
    eventually,
    hold,
    no_eviction_tasks,
)

WINDOW_SECONDS = 10.0
MAX_CONCURRENT = 2
DEADLINE_SECONDS = 15.0
CONTROLLER_MANAGER_FLAGS = ("--controllers=*,clusterFailback",
                            f"--failback-stabilization-window={format_duration(WINDOW_SECONDS)}",
                            f"--failback-max-concurrent={MAX_CONCURRENT}",
                            f"--failback-progress-deadline={format_duration(DEADLINE_SECONDS)}",
                            "--failback-rebalancer-ttl=0s")
CLUSTER = "member1"
WEB = tuple(f"web-{i}" for i in range(1, 7))
STUCK = ("web-3", "web-4")
STUCK_NODE_LABEL = "demo.karmada-rebalance.io/member2-only"
WORKLOADS = ("foo", *WEB)
"""In the order fail-back takes them (apiVersion, kind, namespace, name)."""


def web_manifests() -> str:
    """Six 2-replica Deployments split 1:1 over the members; the STUCK ones need a node label only member2 has."""
    docs: list[dict[str, Any]] = []
    for name in WEB:
        pod: dict[str, Any] = {"terminationGracePeriodSeconds": 0, "containers": [
            {"name": "web", "image": "nginx", "resources": {"limits": {"cpu": "10m", "memory": "10Mi"}}}]}
        if name in STUCK:
            pod["nodeSelector"] = {STUCK_NODE_LABEL: "true"}
        docs.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
                     "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                              "template": {"metadata": {"labels": {"app": name}}, "spec": pod}}})
    docs.append({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                 "metadata": {"name": "web-pp"},
                 "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                                                 "namespace": "default"} for name in WEB],
                          "placement": {
                              "clusterTolerations": [{"effect": "NoExecute", "key": "workload-rebalancer-test",
                                                      "operator": "Exists", "tolerationSeconds": 0}],
                              "clusterAffinity": {"clusterNames": ["member1", "member2"]},
                              "replicaScheduling": {
                                  "replicaDivisionPreference": "Weighted", "replicaSchedulingType": "Divided",
                                  "weightPreference": {"staticWeightList": [
                                      {"targetCluster": {"clusterNames": [c]}, "weight": 1}
                                      for c in ("member1", "member2")]}}}}})
    return yaml.safe_dump_all(docs, sort_keys=False)


async def play_failback(s: Session) -> None:
    """The tutorial without its step 3, for seven workloads: fail-back puts them back, two at a time."""
    defaults = FailbackOptions()
    s.say.title("Fail-back, step 1: the tutorial's Deployment foo, and web-1 … web-6")
    s.say.note(f"karmada-controller-manager runs with {' '.join(CONTROLLER_MANAGER_FLAGS)}")
    s.say.note(f"the demo shortens the window to {format_duration(WINDOW_SECONDS)} (default "
               f"{format_duration(defaults.stabilization_window)}) and the progress deadline to "
               f"{format_duration(DEADLINE_SECONDS)} (default {format_duration(defaults.progress_deadline)}); "
               f"at most {MAX_CONCURRENT} workloads in flight (default {defaults.max_concurrent})")
    s.say.note(f"{' and '.join(STUCK)} ask for a node label only member2's nodes carry: their replicas never get "
               f"ready on member1")
    s.write("deployment.yaml", document("deployment.yaml"))
    s.write("web.yaml", web_manifests())
    await s.kubectl("--context", "karmada-apiserver", "apply", "-f", "deployment.yaml")
    await s.kubectl("--context", "member2", "label", "nodes", "--all", f"{STUCK_NODE_LABEL}=true")
    await s.kubectl("--context", "karmada-apiserver", "apply", "-f", "web.yaml")
    await s.wait_distribution("foo", {"member1": 2, "member2": 1},
                              "step 1: foo runs 2 replicas in member1, 1 in member2")
    for name in WEB:
        await eventually(f"step 1: {name} is scheduled 1:1 on member1 and member2",
                         partial(distribution_is, s, name, {"member1": 1, "member2": 1}))
    await s.karmadactl_get_deploy("foo")

    s.say.title(f"Step 2: add a NoExecute taint to {CLUSTER} to mock cluster failover")
    await s.karmadactl_taint(CLUSTER, "workload-rebalancer-test:NoExecute")
    for name in WORKLOADS:
        await eventually(f"step 2: {name}'s binding records its eviction from {CLUSTER} ({EVICTED_FROM_ANNOTATION})",
                         partial(_record_is, s, name, CLUSTER))
    await s.wait_distribution("foo", {"member2": 3}, "step 2: all 3 replicas of foo moved to member2")
    await s.karmadactl_get_deploy("foo")
    await _show_records(s)
    for name in WORKLOADS:  # fail-back waits for it: Karmada's scheduler leaves out a cluster a task names
        await eventually(f"step 2: the graceful eviction of {name} from {CLUSTER} is finished (healthy on member2)",
                         partial(no_eviction_tasks, s, f"{name}-deployment"))

    s.say.title(f"Step 3: remove the taint; {CLUSTER} must stay recovered for the window")
    await s.karmadactl_taint(CLUSTER, "workload-rebalancer-test:NoExecute-")
    await eventually(f"step 3: a {EVENT_SCHEDULED} event on cluster {CLUSTER}",
                     lambda: _cluster_events(s, EVENT_SCHEDULED))
    await _show_events(s, EVENT_SCHEDULED)

    s.say.title(f"Step 4: batches, at most {MAX_CONCURRENT} workloads in flight, each next one when those are healthy")
    watch = Progress(s)
    await eventually(f"step 4: {EVENT_PAUSED} events on cluster {CLUSTER} naming {' and '.join(STUCK)} once they "
                     f"miss the {format_duration(DEADLINE_SECONDS)} deadline",
                     lambda: watch.until(lambda: _paused_naming(s, STUCK)),
                     timeout=WINDOW_SECONDS + DEADLINE_SECONDS + 2 * STEP_TIMEOUT)
    await _show_events(s, EVENT_TRIGGERED)
    await _show_events(s, EVENT_PAUSED)

    s.say.title("Step 5: paused: web-5 and web-6 wait")
    await hold("step 5: web-5 and web-6 are not failed back while paused",
               lambda: watch.until(lambda: _none_started(s, ("web-5", "web-6"))), seconds=5)
    jsonpath = f"{{.metadata.annotations.{_escaped(PAUSED_ANNOTATION)}}}"
    paused_at = (await s.kubectl("--context", "karmada-apiserver", "get", "cluster", CLUSTER, "-o",
                                 f"jsonpath={jsonpath}",
                                 show=f"--context karmada-apiserver get cluster {CLUSTER} -o jsonpath='{jsonpath}'"))
    paused_at = paused_at.strip()

    s.say.title("Step 6: the operator resumes it (a value it does not understand changes nothing)")
    await _annotate(s, "yes")
    await eventually(f"step 6: a {EVENT_RESUME_INVALID} Warning on cluster {CLUSTER}",
                     lambda: _cluster_events(s, EVENT_RESUME_INVALID))
    await _show_events(s, EVENT_RESUME_INVALID)
    if not await _none_started(s, ("web-5", "web-6")):
        raise StepFailed("step 6: a resume value that is not understood started a batch")
    await _annotate(s, paused_at)
    await eventually(f"step 6: a {EVENT_RESUMED} event on cluster {CLUSTER}", lambda: _cluster_events(s, EVENT_RESUMED))
    await eventually("step 6: every workload's fail-back is over (web-5 and web-6 too)",
                     lambda: watch.until(lambda: _all_done(s)), timeout=2 * STEP_TIMEOUT)
    await _show_events(s, EVENT_RESUMED)

    s.say.title("Step 7: the replicas are back, with no hand-made rebalancer")
    await s.wait_distribution("foo", {"member1": 2, "member2": 1}, "step 7: 2 replicas of foo back in member1")
    await s.karmadactl_get_deploy("foo")
    await s.kubectl("--context", "karmada-apiserver", "get", "workloadrebalancers")
    await _show_records(s)


class Progress:
    """Watches the bindings while something else is awaited: prints each change of what is in flight, and
    fails the step if more than ``--failback-max-concurrent`` ever are."""

    def __init__(self, s: Session) -> None:
        self.s = s
        self.last: tuple[tuple[str, ...], tuple[str, ...]] | None = None
        self.most = 0

    async def observe(self) -> None:
        items = (await self.s.host_client.list(RESOURCE_BINDINGS, "default")).get("items") or []
        by_name = {objects.name(b).removesuffix("-deployment"): objects.annotations(b) for b in items}
        flying = tuple(n for n in WORKLOADS if CLUSTER in _flight(by_name.get(n, {})))
        waiting = tuple(n for n in WORKLOADS if CLUSTER in (by_name.get(n, {}).get(EVICTED_FROM_ANNOTATION) or "")
                        and n not in flying)
        if len(flying) > MAX_CONCURRENT:
            raise StepFailed(f"{len(flying)} workloads in flight ({', '.join(flying)}), more than "
                             f"--failback-max-concurrent {MAX_CONCURRENT}")
        self.most = max(self.most, len(flying))
        if (flying, waiting) != self.last:
            self.last = (flying, waiting)
            done = [n for n in WORKLOADS if n not in flying and n not in waiting]
            self.s.say.note(f"in flight: {', '.join(flying) or '-'} | waiting: {', '.join(waiting) or '-'} | "
                            f"done: {', '.join(done) or '-'}")

    async def until(self, check: Any) -> Any:
        await self.observe()
        result = await check()
        if result:  # the check reads after the listing: what made it true may be newer than the last line
            await self.observe()
        return result


def _flight(annotations: Mapping[str, str]) -> dict[str, str]:
    text = annotations.get(FAILING_BACK_ANNOTATION) or "{}"
    value = yaml.safe_load(text)
    return value if isinstance(value, dict) else {}


async def _paused_naming(s: Session, names: tuple[str, ...]) -> bool:
    """The Cluster's FailbackPaused events (the pause, and "still paused" as more get stuck) name ``names``."""
    text = " ".join(e.get("message", "") for e in await _cluster_events(s, EVENT_PAUSED))
    return all(f"Deployment/default/{name}:" in text for name in names)


async def _record_is(s: Session, name: str, want: str | None) -> bool:
    binding = await s.host_client.get_or_none(RESOURCE_BINDINGS, f"{name}-deployment", "default")
    return binding is not None and objects.annotations(binding).get(EVICTED_FROM_ANNOTATION) == want


async def _none_started(s: Session, names: tuple[str, ...]) -> bool:
    for name in names:
        binding = await s.binding(f"{name}-deployment")
        annotations = objects.annotations(binding)
        if annotations.get(EVICTED_FROM_ANNOTATION) != CLUSTER or CLUSTER in _flight(annotations):
            return False
    return True


async def _all_done(s: Session) -> bool:
    for name in WORKLOADS:
        if not await _record_is(s, name, None):
            return False
    return True


async def _show_records(s: Session) -> None:
    columns = (f"NAME:.metadata.name,EVICTED-FROM:.metadata.annotations.{_escaped(EVICTED_FROM_ANNOTATION)},"
               f"FAILING-BACK:.metadata.annotations.{_escaped(FAILING_BACK_ANNOTATION)}")
    await s.kubectl("--context", "karmada-apiserver", "get", "rb", "-o", f"custom-columns={columns}")


async def _annotate(s: Session, value: str) -> None:
    await s.kubectl("--context", "karmada-apiserver", "annotate", "--overwrite", "cluster", CLUSTER,
                    f"{RESUME_ANNOTATION}={value}")


def _escaped(annotation: str) -> str:
    return annotation.replace(".", "\\.")


def _event_selector(reason: str) -> str:
    return f"involvedObject.kind=Cluster,involvedObject.name={CLUSTER},reason={reason}"


async def _cluster_events(s: Session, reason: str) -> list[dict[str, Any]]:
    """The Events of ``reason`` about the Cluster (cluster-scoped: they live in ``default``)."""
    code, text = await s.kubectl_quiet("--context", "karmada-apiserver", "get", "events", "-n", "default",
                                       "--field-selector", _event_selector(reason), "-o", "yaml")
    return list((yaml.safe_load(text) or {}).get("items") or []) if code == 0 else []


async def _show_events(s: Session, reason: str) -> None:
    await s.kubectl("--context", "karmada-apiserver", "get", "events", "-n", "default",
                    "--field-selector", _event_selector(reason), "--sort-by", ".metadata.creationTimestamp")
