"""Member shapes (``up --config``) and the karmadactl-like ``ctl``: parsing, taint edits, the table."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from devplane.apiserver.kinds import default_resource_models
from devplane.cli import main
from devplane.config import DEFAULT_MEMBERS, ConfigError, load_config, member_shapes
from devplane.ctl import (
    DEPLOY_HEADER,
    CtlError,
    TaintChange,
    apply_taints,
    deployment_row,
    format_table,
    parse_taint,
)
from devplane.demo import DEMOS, DOCUMENTS, demos
from devplane.karmada.modeling import resource_summary
from estimator.general import GeneralEstimator

# ------------------------------------------------------------------------------------------ config


def test_default_members_are_the_documents_clusters() -> None:
    assert [m.name for m in DEFAULT_MEMBERS] == ["member1", "member2", "member3"]
    assert DEFAULT_MEMBERS[0].nodes[0].name == "member1-control-plane"  # the node the descheduler doc cordons


def test_member_count_pads_and_truncates() -> None:
    assert [m.name for m in member_shapes(2)] == ["member1", "member2"]
    assert [m.name for m in member_shapes(5)] == ["member1", "member2", "member3", "member4", "member5"]
    assert member_shapes(None) == DEFAULT_MEMBERS


def test_config_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "members.yaml"
    path.write_text("members:\n- name: east\n  nodes:\n  - name: east-1\n    allocatable: {cpu: '8', memory: 32Gi}\n"
                    "    labels: {zone: a}\n")
    (east,) = load_config(path)
    assert east.name == "east"
    node = east.nodes[0].node_object()
    assert node["status"]["allocatable"] == {"cpu": "8", "memory": "32Gi", "pods": "110"}
    assert node["metadata"]["labels"]["zone"] == "a"
    assert node["status"]["conditions"][0] == {"type": "Ready", "status": "True", "reason": "KubeletReady",
                                               "message": "kubelet is posting ready status"}


@pytest.mark.parametrize(("text", "message"), [
    ("nodes: []", "missing field 'members'"),
    ("members: []", "members must be a non-empty list"),
    ("members:\n- name: a\n  nodes: []", "members[0].nodes: must be a non-empty list"),
    ("members:\n- name: a\n  nodes:\n  - name: n\n    allocatable: {cpu: lots}", "'lots' is not a quantity"),
    ("members:\n- name: a\n  nodes:\n  - name: n\n    allocatable: {cpu: '1'}\n- name: a\n  nodes:\n"
     "  - name: m\n    allocatable: {cpu: '1'}", "duplicate member name 'a'"),
    ("members: [", "not valid YAML"),
])
def test_bad_config_is_rejected_naming_the_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")) as info:
        load_config(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("argv", [["up", "--config", "{missing}"], ["up", "--cluster-status-update-frequency=-5s"],
                                  ["up", "--graceful-eviction-timeout=0"]])
def test_bad_up_flags_exit_2_before_anything_starts(tmp_path: Path, argv: list[str],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    args = [a.replace("{missing}", str(tmp_path / "missing.yaml")) for a in argv]
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    assert "error:" in capsys.readouterr().err


def _cluster_of(shape_index: int) -> dict[str, object]:
    """A Cluster as the cluster-status controller would publish it for an empty member (default resource models)."""
    member = DEFAULT_MEMBERS[shape_index]
    nodes = [n.node_object() for n in member.nodes]
    models = default_resource_models()
    return {"metadata": {"name": member.name}, "spec": {"resourceModels": models},
            "status": {"resourceSummary": resource_summary(nodes, [], models)}}


def test_default_shapes_make_the_tutorial_division_deterministic() -> None:
    """member1 holds about twice member2's 10m/10Mi replicas, so Webster gives {member1: 2, member2: 1}."""
    requirements = {"resourceRequest": {"cpu": "10m", "memory": "10Mi"}}
    member1 = GeneralEstimator().max_available_replicas(_cluster_of(0), requirements)
    member2 = GeneralEstimator().max_available_replicas(_cluster_of(1), requirements)
    assert (member1, member2) == (210, 110)


def test_default_shapes_hold_one_two_cpu_replica_each() -> None:
    requirements = {"resourceRequest": {"cpu": "2"}}
    assert [GeneralEstimator().max_available_replicas(_cluster_of(i), requirements) for i in range(3)] == [1, 1, 1]


# ------------------------------------------------------------------------------------------ ctl taint


@pytest.mark.parametrize(("spec", "change"), [
    ("workload-rebalancer-test:NoExecute", TaintChange("workload-rebalancer-test", "", "NoExecute", False)),
    ("workload-rebalancer-test:NoExecute-", TaintChange("workload-rebalancer-test", "", "NoExecute", True)),
    ("key=value:NoSchedule", TaintChange("key", "value", "NoSchedule", False)),
    ("key-", TaintChange("key", "", "", True)),
])
def test_taint_specs_parse_as_kubectl_does(spec: str, change: TaintChange) -> None:
    assert parse_taint(spec) == change


@pytest.mark.parametrize(("spec", "message"), [
    ("key", "unknown taint effect"),
    ("key:Sometimes", "invalid taint effect: Sometimes"),
    ("=v:NoSchedule", "invalid taint spec"),
])
def test_bad_taint_specs_are_rejected(spec: str, message: str) -> None:
    with pytest.raises(CtlError, match=message):
        parse_taint(spec)


def test_taint_then_untaint() -> None:
    taints, verb = apply_taints("member1", [], [parse_taint("workload-rebalancer-test:NoExecute")], overwrite=False)
    assert (taints, verb) == ([{"key": "workload-rebalancer-test", "effect": "NoExecute"}], "tainted")
    stamped = [{**taints[0], "timeAdded": "2026-11-22T10:00:00Z"}]
    taints, verb = apply_taints("member1", stamped, [parse_taint("workload-rebalancer-test:NoExecute-")],
                                overwrite=False)
    assert (taints, verb) == ([], "untainted")


def test_existing_taint_needs_overwrite_and_missing_taint_cannot_be_removed() -> None:
    existing = [{"key": "k", "value": "a", "effect": "NoSchedule"}]
    with pytest.raises(CtlError, match="already has k taint"):
        apply_taints("member1", existing, [parse_taint("k=b:NoSchedule")], overwrite=False)
    taints, _ = apply_taints("member1", existing, [parse_taint("k=b:NoSchedule")], overwrite=True)
    assert taints == [{"key": "k", "value": "b", "effect": "NoSchedule"}]
    with pytest.raises(CtlError, match='taint "other:NoExecute" not found'):
        apply_taints("member1", existing, [parse_taint("other:NoExecute-")], overwrite=False)


# ------------------------------------------------------------------------------------------ ctl get


def test_deploy_table_is_karmadactls() -> None:
    deployment = {"metadata": {"name": "foo", "labels": {"karmada.io/managed": "true"},
                               "creationTimestamp": "2000-01-01T00:00:00Z"},
                  "spec": {"replicas": 2}, "status": {"readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2}}
    row = deployment_row("member1", deployment)
    assert row[:5] == ("foo", "member1", "2/2", "2", "2") and row[6] == "Y"
    unmanaged = deployment_row("member2", {"metadata": {"name": "foo"}, "spec": {"replicas": 1}})
    assert unmanaged[2:5] == ("0/1", "0", "0") and unmanaged[6] == "N"
    table = format_table(DEPLOY_HEADER, [("foo", "member1", "2/2", "2", "2", "20s", "Y")])
    assert table.splitlines() == ["NAME   CLUSTER   READY   UP-TO-DATE   AVAILABLE   AGE   ADOPTION",
                                  "foo    member1   2/2     2            2           20s   Y"]


def test_every_demo_name_the_command_offers_can_be_played() -> None:
    assert set(DEMOS) == set(demos()) and set(DOCUMENTS) <= set(DEMOS)


def test_apiserver_on_a_port_in_use_says_so_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        number = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            main(["apiserver", "--port", str(number)])
    assert exited.value.code == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"karmada-devplane apiserver: error: cannot listen on 127.0.0.1:{number} (--port): Address already in use")


def test_ctl_taint_of_a_name_no_cluster_can_have_is_one_line(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before any request (the kubeconfig's server is not even listening)."""
    config = tmp_path / "karmada.config"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: karmada-apiserver\n"
                      "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:1'}}]\n"
                      "users: [{name: u, user: {}}]\n"
                      "contexts: [{name: karmada-apiserver, context: {cluster: k, user: u}}]\n")
    assert main(["ctl", "--kubeconfig", str(config), "taint", "clusters", "a/b", "k:NoSchedule"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: invalid resource name \"a/b\": [may not contain '/']")
