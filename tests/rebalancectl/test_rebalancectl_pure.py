"""karmada-rebalance's pure parts: selection rules, --kind resolution, kubeconfig merging, output, chunking."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller_manager.apierrors import ApiError
from controller_manager.resource import Resource
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION, PP_PERMANENT_ID
from karmada_api.rebalancers import chunks
from rebalancectl import kubeconfig
from rebalancectl.cli import _ttl_seconds, build_parser
from rebalancectl.create import _kind, namespace_scope, rebalancers
from rebalancectl.discovery import ApiResource, GroupKind, discover, resolve_kind
from rebalancectl.errors import CommandError, UsageError
from rebalancectl.output import render, result_rows, table
from rebalancectl.retry import CREATE_ID_LABEL, Backoff, identified
from rebalancectl.selection import Criteria, Workload, belongs_on, select
from rebalancectl.status import transient


def binding(name: str, *, namespace: str = "default", kind: str = "Deployment", api_version: str = "apps/v1",
            clusters: dict[str, int] | None = None, placement: dict[str, Any] | None = None,
            labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"{name}-{kind.lower()}", "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    if placement is not None:
        meta["annotations"] = {APPLIED_PLACEMENT_ANNOTATION: json.dumps(placement)}
    resource = {"apiVersion": api_version, "kind": kind, "name": name,
                **({"namespace": namespace} if namespace else {})}
    return {"metadata": meta, "spec": {"resource": resource,
                                       "clusters": [{"name": c, "replicas": r} for c, r in (clusters or {}).items()]}}


MEMBER1 = {"metadata": {"name": "member1", "labels": {"zone": "a"}}, "spec": {}}
ANYWHERE = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}
ELSEWHERE = {"clusterAffinity": {"clusterNames": ["member2"]}}


def test_cluster_selects_replicas_there_or_placement_allowing_it() -> None:
    on = binding("on", clusters={"member1": 2}, placement=ELSEWHERE)
    back = binding("back", clusters={"member2": 3}, placement=ANYWHERE)
    never = binding("never", clusters={"member2": 3}, placement=ELSEWHERE)
    unplaced = binding("unplaced", clusters={"member2": 3})
    terms = {"clusterAffinities": [{"affinityName": "x", "labelSelector": {"matchLabels": {"zone": "a"}}}]}
    by_label = binding("label", clusters={"member2": 1}, placement=terms)
    assert [belongs_on(b, MEMBER1) for b in (on, back, never, unplaced, by_label)] == [True, True, False, False, True]
    chosen = select([on, back, never, unplaced, by_label], Criteria("default", cluster=MEMBER1))
    assert [w.name for w in chosen.workloads] == ["back", "label", "on"]
    assert chosen.unmatched == []


def test_selectors_are_anded_kinds_ored_and_unmatched_ones_named() -> None:
    deploy = binding("web", clusters={"member1": 1}, labels={PP_PERMANENT_ID: "id-1"})
    cm = binding("conf", kind="ConfigMap", api_version="v1", labels={PP_PERMANENT_ID: "id-1"})
    other_ns = binding("web", namespace="prod")
    kinds = [("deploy", GroupKind("apps", "Deployment")), ("cm", GroupKind("", "ConfigMap")),
             ("sts", GroupKind("apps", "StatefulSet"))]
    policy = ("--policy default/p", PP_PERMANENT_ID, "id-1")
    chosen = select([deploy, cm, other_ns], Criteria("default", kinds=kinds, policy=policy))
    assert [str(w) for w in chosen.workloads] == ["ConfigMap/default/conf", "Deployment.apps/default/web"]
    assert chosen.unmatched == ["--kind sts"]
    none = select([deploy, cm], Criteria("default", policy=("--policy default/q", PP_PERMANENT_ID, "other")))
    assert none.workloads == [] and none.unmatched == ["--policy default/q"]
    labelled = frozenset({Workload("default", "ConfigMap", "conf", "v1")})
    only_cm = select([deploy, cm], Criteria("default", labelled=("app=x", labelled)))
    assert [w.name for w in only_cm.workloads] == ["conf"]


def test_all_namespaces_includes_cluster_scoped_templates_and_skips_deleting_bindings() -> None:
    crb = binding("ns1", namespace="", kind="Namespace", api_version="v1")
    deleting = binding("gone")
    deleting["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    rb = binding("web", namespace="prod")
    assert [str(w) for w in select([crb, deleting, rb], Criteria(None)).workloads] == [
        "Namespace/ns1", "Deployment.apps/prod/web"]
    assert select([crb, rb], Criteria("default")).workloads == []


def test_namespace_scope_rules() -> None:
    def scope(**kw: Any) -> str | None:
        args = {"all_namespaces": False, "namespace": "", "policy": "", "cluster_policy": "", "context_namespace": ""}
        return namespace_scope(**{**args, **kw})
    assert scope() == "default"
    assert scope(context_namespace="team") == "team"
    assert scope(namespace="x", context_namespace="team") == "x"
    assert scope(policy="apps/pp") == "apps"
    assert scope(cluster_policy="cpp") is None
    assert scope(all_namespaces=True) is None
    with pytest.raises(UsageError, match="NAMESPACE/NAME"):
        scope(policy="pp")


RESOURCES = [
    ApiResource(Resource("apps", "v1", "deployments", "Deployment", True), "deployment", ("deploy",)),
    ApiResource(Resource("", "v1", "configmaps", "ConfigMap", True), "configmap", ("cm",)),
    ApiResource(Resource("extensions.example", "v1", "deployments", "Deployment", True), "deployment", ()),
    ApiResource(Resource("", "v1", "services", "Service", True), "service", ("svc",)),
]


@pytest.mark.parametrize(("text", "want"), [
    ("apps/v1/Deployment", GroupKind("apps", "Deployment")),
    ("v1/ConfigMap", GroupKind("", "ConfigMap")),
    ("Deployment.apps", GroupKind("apps", "Deployment")),
    ("deployments", GroupKind("apps", "Deployment")),
    ("deploy", GroupKind("apps", "Deployment")),
    ("deployments.apps", GroupKind("apps", "Deployment")),
    ("deployments.extensions.example", GroupKind("extensions.example", "Deployment")),
    ("CM", GroupKind("", "ConfigMap")),
    ("svc", GroupKind("", "Service")),
])
def test_kind_values(text: str, want: GroupKind) -> None:
    assert resolve_kind(text, RESOURCES) == want


@pytest.mark.parametrize(("text", "message"), [
    ("widgets", 'doesn\'t have a resource type "widgets"'),
    ("apps/v2/Deployment", "version v2 is not served"),
    ("batch/v1/Job", 'doesn\'t have a resource type "Job"'),
    ("deployments.batch", "doesn't have a resource type"),
])
def test_bad_kind_values(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        resolve_kind(text, RESOURCES)


def write(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def config(name: str, server: str, current: str = "", namespace: str = "") -> dict[str, Any]:
    context = {"cluster": name, "user": name, **({"namespace": namespace} if namespace else {})}
    return {"clusters": [{"name": name, "cluster": {"server": server, "certificate-authority": "ca.crt"}}],
            "users": [{"name": name, "user": {}}], "contexts": [{"name": name, "context": context}],
            **({"current-context": current} if current else {})}


def test_kubeconfig_merges_like_kubectl(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    first = write(tmp_path / "a", config("shared", "https://first", namespace="team"))
    second = write(tmp_path / "sub" / "b", {**config("shared", "https://second", current="shared"),
                                            "contexts": [{"name": "shared", "context": {"cluster": "shared"}},
                                                         {"name": "other", "context": {"cluster": "shared"}}]})
    env = {"KUBECONFIG": f"{first}:{tmp_path / 'missing'}:{second}"}
    target = kubeconfig.load(None, None, env)
    assert target.context == "shared" and target.namespace == "team"  # the first file's context wins
    clusters = target.config["clusters"]
    assert [c["cluster"]["server"] for c in clusters] == ["https://first"]
    assert clusters[0]["cluster"]["certificate-authority"] == str(tmp_path / "ca.crt")
    assert kubeconfig.load(None, "other", env).namespace == ""
    with pytest.raises(UsageError, match='context "nope" does not exist'):
        kubeconfig.load(None, "nope", env)
    only = kubeconfig.load(str(second), None, env)  # --kubeconfig: that file alone
    assert only.config["clusters"][0]["cluster"]["server"] == "https://second"
    with pytest.raises(UsageError, match="no such file"):
        kubeconfig.load(str(tmp_path / "missing"), None, env)
    with pytest.raises(UsageError, match="no current-context"):
        kubeconfig.load(None, None, {"KUBECONFIG": str(first)})


def test_chunks_names_and_ttl() -> None:
    workloads = [Workload("default", "ConfigMap", f"c{i}", "v1") for i in range(5)]
    assert [len(c) for c in chunks(workloads, 2)] == [2, 2, 1]
    named = rebalancers("bulk", workloads, size=2, ttl_seconds=1800)
    assert [r["metadata"] for r in named] == [{"name": "bulk-1"}, {"name": "bulk-2"}, {"name": "bulk-3"}]
    refs = [{"apiVersion": "v1", "kind": "ConfigMap", "name": f"c{i}", "namespace": "default"} for i in (0, 1)]
    assert named[0]["spec"] == {"workloads": refs, "ttlSecondsAfterFinished": 1800}
    single = rebalancers("", workloads, size=100, ttl_seconds=None)
    assert single[0]["metadata"] == {"generateName": "rebalance-"}
    assert "ttlSecondsAfterFinished" not in single[0]["spec"]
    assert rebalancers("one", workloads, size=5, ttl_seconds=1)[0]["metadata"] == {"name": "one"}
    assert _ttl_seconds(0) is None and _ttl_seconds(1800) == 1800
    with pytest.raises(UsageError, match="whole seconds"):
        _ttl_seconds(1.5)
    args = build_parser().parse_args(["create"])
    assert args.ttl == 1800 and args.max_per_rebalancer == 100


@pytest.mark.parametrize("argv", [
    ["--kubeconfig", "k", "--context", "c", "create"],
    ["create", "--kubeconfig", "k", "--context", "c"],
    ["--kubeconfig", "k", "create", "--context", "c"],
    ["--kubeconfig", "other", "--context", "c", "create", "--kubeconfig", "k"],
])
def test_connection_flags_go_before_or_after_the_command_as_with_kubectl(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert (args.kubeconfig, args.context) == ("k", "c")


def test_output_formats_and_table() -> None:
    objs = rebalancers("bulk", [Workload("default", "ConfigMap", "c", "v1")], size=1, ttl_seconds=None)
    assert render(objs, "name") == "workloadrebalancer.apps.karmada.io/bulk\n"
    assert yaml.safe_load(render(objs, "yaml")) == objs[0]
    two = objs + rebalancers("more", [Workload("", "Namespace", "n", "v1")], size=1, ttl_seconds=None)
    listed = json.loads(render(two, "json"))
    assert listed["kind"] == "List" and [i["metadata"]["name"] for i in listed["items"]] == ["bulk", "more"]
    rebalancer = {**two[0], "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "a",
                                                    "namespace": "default"},
                                                   {"apiVersion": "v1", "kind": "ConfigMap", "name": "b",
                                                    "namespace": "default"},
                                                   {"apiVersion": "v1", "kind": "ConfigMap", "name": "b",
                                                    "namespace": "default"}]},  # listed twice: one row
                  "status": {"observedWorkloads": [{"workload": {"apiVersion": "v1", "kind": "ConfigMap", "name": "b",
                                                                 "namespace": "default"},
                                                    "result": "Failed", "reason": "ReferencedBindingNotFound"}]}}
    assert table(result_rows(rebalancer)) == (
        "WORKLOAD                    RESULT    REASON\n"
        "Deployment.apps/default/a   Pending\n"
        "ConfigMap/default/b         Failed    ReferencedBindingNotFound\n")


def test_wait_outlives_what_a_restarting_server_answers() -> None:
    for status in (410, 429, 500, 503, 504):
        assert transient(ApiError(status, "x", "y"))
    assert transient(ApiError(404, "NotFound", "the server could not find the requested resource"))  # not served
    assert not transient(ApiError(404, "NotFound", 'workloadrebalancers.apps.karmada.io "a" not found',
                                   {"details": {"name": "a"}}))
    assert not transient(ApiError(403, "Forbidden", "no"))
    assert transient(ConnectionResetError()) and not transient(ValueError())
    assert transient(ApiError(409, "Conflict", "the object has been modified"))
    for status, reason in ((400, "BadRequest"), (409, "AlreadyExists"), (422, "Invalid"), (401, "Unauthorized")):
        assert not transient(ApiError(status, reason, "y")), status


def test_the_backoff_doubles_to_its_cap_and_waits_at_least_what_the_server_asks() -> None:
    backoff = Backoff()
    pauses = [backoff.next(ApiError(500, "InternalError", "x")) for _ in range(7)]
    assert pauses == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert isinstance(backoff.last, ApiError) and backoff.last.status == 500
    asked = Backoff().next(ApiError(429, "TooManyRequests", "x", retry_after=7))
    assert asked == 7
    assert Backoff().next(ApiError(503, "ServiceUnavailable", "x", retry_after=3600)) == 60  # the client's cap too
    assert Backoff().next(ConnectionResetError()) == 0.5


def test_each_create_names_itself_and_carries_an_id_of_its_own() -> None:
    generated = rebalancers("", [Workload("shop", "ConfigMap", "c", "v1")], size=1, ttl_seconds=None)[0]
    first, second = identified(generated), identified(generated)
    assert first["metadata"]["generateName"] == "rebalance-" and "name" not in generated["metadata"]  # a copy
    assert re.fullmatch(r"rebalance-[bcdfghjklmnpqrstvwxz2456789]{5}", first["metadata"]["name"])
    assert first["metadata"]["labels"][CREATE_ID_LABEL] != second["metadata"]["labels"][CREATE_ID_LABEL]
    named = identified(rebalancers("back", [Workload("shop", "ConfigMap", "c", "v1")], size=1, ttl_seconds=None)[0])
    assert named["metadata"]["name"] == "back" and set(named["metadata"]["labels"]) == {CREATE_ID_LABEL}


class _Discovery:
    """A stand-in for the API server's discovery answers, with one aggregated API down (503): the dev API
    server serves no aggregated APIs, so that answer cannot come from it here."""

    async def request(self, method: str, path: str) -> dict[str, Any]:
        if path == "/apis":
            return {"groups": [{"preferredVersion": {"groupVersion": "apps/v1"}},
                               {"preferredVersion": {"groupVersion": "metrics.k8s.io/v1beta1"}}]}
        if path == "/apis/metrics.k8s.io/v1beta1":
            raise ApiError(503, "ServiceUnavailable", "the server is currently unable to handle the request")
        if path == "/apis/apps/v1":
            return {"resources": [{"name": "deployments", "kind": "Deployment", "namespaced": True}]}
        return {"resources": [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True, "shortNames": ["cm"]}]}


async def test_an_unavailable_group_is_left_out_and_named() -> None:
    found = await discover(_Discovery())  # type: ignore[arg-type]
    assert found.unavailable == ("metrics.k8s.io/v1beta1",)
    assert _kind("deployments", found) == GroupKind("apps", "Deployment")
    with pytest.raises(CommandError, match=r"metrics\.k8s\.io/v1beta1 could not be read"):
        _kind("podmetrics", found)
