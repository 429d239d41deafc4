"""Unschedulable replicas per workload kind (beyond Karmada's Deployments) and the Pod-selectors file."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from benchmarks.descheduler import CachedMember
from controller_manager.cache import Indexer
from controller_manager.objects import MutableObj
from controllers import app as controller_manager_app
from descheduler import app as descheduler_app
from estimator.accurate import NodeUsage
from estimator.caches import CONTROLLER_INDEX, NEED_REPLICA_SETS, NEED_STATEFUL_SETS, NEED_WORKLOADS
from estimator.kinds import WorkloadKinds
from estimator.podselectors import PodSelectorsError, load_pod_selectors, parse_entry, render
from estimator.unschedulable import count_unschedulable, unschedulable_owned_pods, unschedulable_selected_pods
from kube_api.ownerrefs import controller_uid_index
from kube_api.selectors import parse_label_selector
from kube_api.timeutil import format_time

NOW = datetime(2025, 9, 23, 12, 0, 0, tzinfo=UTC)
THRESHOLD = timedelta(minutes=5)
STUCK = timedelta(minutes=10)
FLINK = {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
         "podSelector": "app={name},component=taskmanager"}


def workload(kind: str, name: str = "web", uid: str = "web-uid", labels: dict[str, str] | None = None) -> MutableObj:
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": name, "namespace": "default", "uid": uid, "labels": labels or {}},
            "spec": {"selector": {"matchLabels": {"app": name}}}}


def pod(name: str, *, owner_uid: str = "web-uid", labels: dict[str, str] | None = None, stuck: timedelta | None = STUCK,
        namespace: str = "default", phase: str = "Pending") -> MutableObj:
    condition: MutableObj = ({"type": "PodScheduled", "status": "True"} if stuck is None else
                             {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                              "lastTransitionTime": format_time(NOW - stuck)})
    labels = labels if labels is not None else {"app": "web"}
    meta: MutableObj = {"name": name, "namespace": namespace, "labels": labels}
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": owner_uid,
                                    "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "status": {"phase": phase, "conditions": [condition]}}


# ----------------------------------------------------------------------------------------------
# the predicate per kind, on plain lists


def test_a_statefulsets_own_pods_count() -> None:
    pods = [pod("web-0"), pod("web-1"), pod("web-2", stuck=timedelta(minutes=1)), pod("web-3", stuck=None),
            pod("other-owner", owner_uid="someone-else"), pod("no-owner", owner_uid=""),
            pod("other-labels", labels={"app": "api"}), pod("other-namespace", namespace="prod"),
            pod("failed", phase="Failed")]
    assert unschedulable_owned_pods(workload("StatefulSet"), pods, THRESHOLD, NOW) == 2
    assert unschedulable_owned_pods(workload("StatefulSet"), pods, timedelta(0), NOW) == 3
    assert unschedulable_owned_pods(workload("StatefulSet"), pods, timedelta(minutes=-1), NOW) == 3


def test_a_replica_sets_own_pods_count() -> None:
    assert unschedulable_owned_pods(workload("ReplicaSet"), [pod("a"), pod("b", stuck=None)], THRESHOLD, NOW) == 1


def test_selected_pods_count_in_the_namespace_only() -> None:
    selector = parse_label_selector("app=job,component=taskmanager")
    tm = {"app": "job", "component": "taskmanager"}
    pods = [pod("tm-1", owner_uid="", labels=tm), pod("tm-2", owner_uid="", labels=tm, stuck=None),
            pod("jm", owner_uid="", labels={"app": "job", "component": "jobmanager"}),
            pod("tm-prod", owner_uid="", labels=tm, namespace="prod")]
    assert unschedulable_selected_pods("default", selector, pods, THRESHOLD, NOW) == 1
    assert count_unschedulable([], THRESHOLD, NOW) == 0


# ----------------------------------------------------------------------------------------------
# through a member's caches


def member(**caches: Iterable[MutableObj]) -> CachedMember:
    """A member's caches as clusteraccess keeps them (Pods and ReplicaSets indexed by their controller)."""
    stores: dict[str, Indexer] = defaultdict(Indexer)
    for resource, items in caches.items():
        stores[resource] = Indexer({CONTROLLER_INDEX: controller_uid_index} if resource in ("pods", "replicasets")
                                   else {})
        stores[resource].replace(list(items))
    return CachedMember("member1", NodeUsage(), stores)


def ref(kind: str, api_version: str = "apps/v1", name: str = "web") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "namespace": "default", "name": name}


def test_kinds_read_their_own_caches() -> None:
    kinds = WorkloadKinds([parse_entry(FLINK)])
    flink = {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
             "metadata": {"name": "job", "namespace": "default", "uid": "job-uid"}}
    tm = {"app": "job", "component": "taskmanager"}
    cached = member(statefulsets=[workload("StatefulSet")], replicasets=[workload("ReplicaSet", uid="rs-uid")],
                    **{"flinkdeployments.flink.apache.org": [flink]},
                    pods=[pod("web-0"), pod("web-1"), pod("rs-a", owner_uid="rs-uid"),
                          pod("tm-1", owner_uid="", labels=tm), pod("tm-2", owner_uid="", labels=tm)])
    statefulset, replicaset = kinds.lookup(ref("StatefulSet")), kinds.lookup(ref("ReplicaSet"))
    declared = kinds.lookup(ref("FlinkDeployment", "flink.apache.org/v1beta1", "job"))
    assert statefulset is not None and statefulset.need == NEED_STATEFUL_SETS
    assert replicaset is not None and replicaset.need == NEED_REPLICA_SETS
    assert declared is not None and declared.need == ("flinkdeployments.flink.apache.org", "pods")
    assert statefulset.count(cached, "default", "web", THRESHOLD, NOW) == 2
    assert replicaset.count(cached, "default", "web", THRESHOLD, NOW) == 1
    assert declared.count(cached, "default", "job", THRESHOLD, NOW) == 2
    with pytest.raises(LookupError):  # not in this member: the cluster is left unknown
        statefulset.count(cached, "default", "api", THRESHOLD, NOW)
    with pytest.raises(LookupError):
        declared.count(cached, "default", "other", THRESHOLD, NOW)


def test_which_kinds_are_supported() -> None:
    kinds = WorkloadKinds([parse_entry(FLINK)])
    deployment = kinds.lookup(ref("Deployment"))
    assert deployment is not None and deployment.need == NEED_WORKLOADS
    assert kinds.gvks() == {("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "ReplicaSet"),
                            ("flink.apache.org/v1beta1", "FlinkDeployment")}
    assert kinds.lookup(ref("FlinkDeployment", "flink.apache.org/v1")) is None  # another version: not declared
    reason = kinds.unsupported_reason(ref("CloneSet", "apps.kruise.io/v1alpha1"))
    assert reason is not None and "CloneSet (apps.kruise.io/v1alpha1) is not supported" in reason
    assert kinds.unsupported_reason(ref("StatefulSet")) is None
    assert [r.key for r in kinds.member_resources()] == ["flinkdeployments.flink.apache.org"]
    assert WorkloadKinds().lookup(ref("FlinkDeployment", "flink.apache.org/v1beta1")) is None
    assert kinds.lookup(ref("StatefulSet", "apps.kruise.io/v1beta1")) is None  # OpenKruise's: another kind
    assert kinds.lookup(ref("Deployment", "extensions/v1beta1")) is deployment  # by kind alone, as Karmada


# ----------------------------------------------------------------------------------------------
# the file


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "selectors.yaml"
    path.write_text(text)
    return path


def test_a_valid_file(tmp_path: Path) -> None:
    path = write(tmp_path, """\
- apiVersion: flink.apache.org/v1beta1
  kind: FlinkDeployment
  podSelector: "app={name},component=taskmanager"
- apiVersion: example.io/v1
  kind: Widget
  resource: widgetz
  podSelector: "widget in ({name}), team={label:example.io/team}, !canary"
""")
    flink, widget = load_pod_selectors(path)
    assert (flink.api_version, flink.kind, flink.resource.key) == (
        "flink.apache.org/v1beta1", "FlinkDeployment", "flinkdeployments.flink.apache.org")
    assert widget.resource.key == "widgetz.example.io" and widget.resource.namespaced
    obj = {"metadata": {"name": "w1", "namespace": "ns", "labels": {"example.io/team": "blue"}}}
    selector = widget.selector_for(obj)
    assert selector({"widget": "w1", "team": "blue"}) and not selector({"widget": "w1", "team": "blue", "canary": ""})
    with pytest.raises(ValueError, match=r"no label 'example\.io/team'"):
        widget.selector_for({"metadata": {"name": "w1"}})
    assert load_pod_selectors(write(tmp_path, "")) == []


def test_render() -> None:
    assert render("app={name},ns={namespace},t={label:tier}", "web", "prod", {"tier": "db"}) == "app=web,ns=prod,t=db"


@pytest.mark.parametrize(("text", "message"), [
    ("a: [", r"not valid YAML: line 1, column 5: expected the node content"),
    ("kinds: []", r"expected a list of entries .*got dict"),
    ("- just-a-string", r"entry 1: expected a mapping"),
    ("- {apiVersion: x.io/v1, kind: X, podSelector: 'a={name}', selector: b}",
     r"entry 1 \(x.io/v1 X\): unknown field\(s\) selector"),
    ("- {apiVersion: x.io/v1, kind: X}", r"entry 1 \(x.io/v1 X\): podSelector is required"),
    ("- {apiVersion: v1, kind: X, podSelector: 'a=b'}", r"apiVersion 'v1' is not group/version"),
    ("- {apiVersion: x.io/v1, kind: 'X Y', podSelector: 'a=b'}", r"kind 'X Y' is not a kind name"),
    ("- {apiVersion: apps/v1, kind: StatefulSet, podSelector: 'a=b'}", r"StatefulSet is built in"),
    ("- {apiVersion: x.io/v1, kind: X, resource: Xs, podSelector: 'a=b'}", r"resource 'Xs' is not a resource name"),
    ("- {apiVersion: x.io/v1, kind: X, podSelector: 'app in ({name}'}",
     r"entry 1 \(x.io/v1 X\): podSelector 'app in \(\{name\}' is not a valid label selector"),
    ("- {apiVersion: x.io/v1, kind: X, podSelector: 'app={nam}'}", r"unknown placeholder \{nam\}"),
    ("- {apiVersion: x.io/v1, kind: X, podSelector: 'app={label:}'}", r"unknown placeholder \{label:\}"),
    ("- {apiVersion: x.io/v1, kind: X, podSelector: 'app={name'}", r"unbalanced brace"),
    ("- {apiVersion: x.io/v1, kind: X, podSelector: ' '}", r"podSelector is required \(a non-empty string\)"),
    ("- {apiVersion: x.io/v1, kind: X, podSelector: 'Bad Key=1'}", r"not a valid label selector"),
    ("- {apiVersion: x.io/v1, kind: X, podSelector: 'a=b'}\n- {apiVersion: x.io/v1, kind: X, podSelector: 'c=d'}",
     r"entry 2 \(x.io/v1 X\): declared twice \(first as entry 1\)"),
])
def test_an_unusable_file_names_the_entry_and_why(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(PodSelectorsError, match=f"^{path}: .*{message}") as failure:
        load_pod_selectors(path)
    assert "\n" not in str(failure.value)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PodSelectorsError, match="cannot be read"):
        load_pod_selectors(tmp_path / "absent.yaml")


@pytest.mark.parametrize(("component", "main"), [("karmada-descheduler", descheduler_app.main),
                                               ("karmada-controller-manager", controller_manager_app.main)])
def test_the_program_stops_at_start_with_exit_2_and_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             component: str, main: Callable[[list[str]], int]) -> None:
    path = write(tmp_path, "- {apiVersion: x.io/v1, kind: X, podSelector: 'app in (a'}")
    assert main(["--unschedulable-pod-selectors", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"{component}: error: --unschedulable-pod-selectors: {path}: entry 1 (x.io/v1 X): "
                          "podSelector 'app in (a' is not a valid label selector")
