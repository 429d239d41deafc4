"""karmada-rebalance against a dev API server over HTTP: every selection flag, --dry-run, -o, chunking,
status, --wait and the exit codes. Templates, policies and bindings are written by hand (no simulation);
--wait is answered by a task that sets the rebalancer's status as a rebalancer controller would."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller_manager.client import KubeClient
from devplane.apiserver.server import ApiServer
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION, CPP_PERMANENT_ID, PP_PERMANENT_ID
from karmada_api.rebalancers import PRESERVE_ANNOTATION
from karmada_api.resources import (
    CLUSTER_PROPAGATION_POLICIES,
    CLUSTER_RESOURCE_BINDINGS,
    CLUSTERS,
    PROPAGATION_POLICIES,
    RESOURCE_BINDINGS,
    WORKLOAD_REBALANCERS,
)
from kube_api.resources import CONFIGMAPS, DEPLOYMENTS, NAMESPACES
from rebalancectl import retry, status
from rebalancectl.cli import execute
from rebalancectl.create import create_all
from tests.conftest import cancel_and_wait, eventually

PLACEMENT_BOTH = {"clusterAffinity": {"clusterNames": ["member1", "member2"]}}
PLACEMENT_M2 = {"clusterAffinity": {"clusterNames": ["member2"]}}


def deployment(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def binding(template: dict[str, Any], clusters: dict[str, int], placement: dict[str, Any],
            labels: dict[str, str]) -> dict[str, Any]:
    meta = template["metadata"]
    resource = {"apiVersion": template["apiVersion"], "kind": template["kind"], "name": meta["name"]}
    metadata: dict[str, Any] = {"name": f"{meta['name']}-{template['kind'].lower()}", "labels": labels,
                                "annotations": {APPLIED_PLACEMENT_ANNOTATION: json.dumps(placement)}}
    if meta.get("namespace"):
        resource["namespace"] = metadata["namespace"] = meta["namespace"]
    return {"apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding" if meta.get("namespace") else "ClusterResourceBinding",
            "metadata": metadata, "spec": {"resource": resource, "placement": placement,
                                           "clusters": [{"name": c, "replicas": r} for c, r in clusters.items()]}}


@pytest.fixture
async def world(server: ApiServer, kube: KubeClient, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """Namespaces default/shop; two clusters; web and api Deployments, a ConfigMap, a Namespace template, with
    policies and bindings; returns the environment whose KUBECONFIG points at the server (namespace shop)."""
    await kube.create(NAMESPACES, {"metadata": {"name": "shop"}})
    for name in ("member1", "member2"):
        await kube.create(CLUSTERS, {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                     "metadata": {"name": name}, "spec": {"syncMode": "Push"}})
    await kube.create(PROPAGATION_POLICIES, {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "shop-pp", "namespace": "shop", "labels": {PP_PERMANENT_ID: "pp-id"}},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}})
    await kube.create(CLUSTER_PROPAGATION_POLICIES, {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
        "metadata": {"name": "everything", "labels": {CPP_PERMANENT_ID: "cpp-id"}},
        "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace"}]}})
    web = deployment("web", "shop", {"app.kubernetes.io/part-of": "shop"})
    api = deployment("api", "shop", {"app.kubernetes.io/part-of": "backend"})
    config = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "settings", "namespace": "shop", "labels": {"app.kubernetes.io/part-of": "shop"}},
              "data": {"a": "b"}}
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}
    await kube.create(DEPLOYMENTS, web)
    await kube.create(DEPLOYMENTS, api)
    await kube.create(CONFIGMAPS, config)
    pp = {PP_PERMANENT_ID: "pp-id"}
    # web: back on member1 wanted (placement allows it, none there); api: only member2 allowed; settings: on member1
    await kube.create(RESOURCE_BINDINGS, binding(web, {"member2": 1}, PLACEMENT_BOTH, pp))
    await kube.create(RESOURCE_BINDINGS, binding(api, {"member2": 1}, PLACEMENT_M2, pp))
    await kube.create(RESOURCE_BINDINGS, binding(config, {"member1": 0, "member2": 0}, PLACEMENT_BOTH,
                                                 {CPP_PERMANENT_ID: "cpp-id"}))
    await kube.create(CLUSTER_RESOURCE_BINDINGS, binding(ns, {"member2": 0}, PLACEMENT_M2,
                                                         {CPP_PERMANENT_ID: "cpp-id"}))
    yield kubeconfig_env(tmp_path, server.url)


def kubeconfig_env(directory: Path, url: str) -> dict[str, str]:
    """A kubeconfig for the server (context dev, namespace shop) in ``directory``; the environment naming it."""
    kubeconfig = directory / "config"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev",
        "clusters": [{"name": "dev", "cluster": {"server": url}}], "users": [{"name": "dev", "user": {}}],
        "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "dev", "namespace": "shop"}}]}))
    return {"KUBECONFIG": str(kubeconfig)}


async def cli(env: dict[str, str], *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await execute(list(argv), out, err, env)
    return code, out.getvalue(), err.getvalue()


async def selected(env: dict[str, str], *flags: str) -> set[str]:
    """The workloads a --dry-run selects, as Kind/namespace/name."""
    code, out, err = await cli(env, "create", "--dry-run", "-o", "json", *flags)
    assert code == 0, err
    obj = json.loads(out)
    items = obj["items"] if obj["kind"] == "List" else [obj]
    return {f"{w['kind']}/{w.get('namespace', '')}/{w['name']}" for item in items for w in item["spec"]["workloads"]}


@pytest.mark.slow
async def test_each_selection_flag(world: dict[str, str], kube: KubeClient) -> None:
    env = world
    assert await selected(env) == {"Deployment/shop/api", "ConfigMap/shop/settings", "Deployment/shop/web"}
    assert await selected(env, "-A") == {"Namespace//shop", "Deployment/shop/api", "ConfigMap/shop/settings",
                                         "Deployment/shop/web"}
    assert await selected(env, "-l", "app.kubernetes.io/part-of=shop") == {"ConfigMap/shop/settings",
                                                                           "Deployment/shop/web"}
    assert await selected(env, "-l", "app.kubernetes.io/part-of in (backend)") == {"Deployment/shop/api"}
    for kind in ("apps/v1/Deployment", "Deployment.apps", "deployments", "deploy", "deployments.apps"):
        assert await selected(env, "--kind", kind) == {"Deployment/shop/api", "Deployment/shop/web"}, kind
    assert await selected(env, "--kind", "deploy", "--kind", "cm") == {"Deployment/shop/api",
                                                                     "ConfigMap/shop/settings", "Deployment/shop/web"}
    assert await selected(env, "--cluster", "member1") == {"ConfigMap/shop/settings", "Deployment/shop/web"}
    assert await selected(env, "--policy", "shop/shop-pp") == {"Deployment/shop/api", "Deployment/shop/web"}
    assert await selected(env, "--cluster-policy", "everything") == {"Namespace//shop", "ConfigMap/shop/settings"}
    assert await selected(env, "--cluster-policy", "everything", "-n", "shop") == {"ConfigMap/shop/settings"}
    assert await selected(env, "--cluster", "member1", "--kind", "deploy", "-l", "app.kubernetes.io/part-of") == {
        "Deployment/shop/web"}
    code, _out, err = await cli(env, "create", "--dry-run", "--kind", "deploy", "--kind", "sts")
    assert code == 0 and err == "karmada-rebalance: --kind sts matched no workload\n"
    listed = await kube.list(WORKLOAD_REBALANCERS)
    assert listed["items"] == []  # --dry-run wrote nothing


async def test_bad_flags_and_empty_selections_exit_2_with_one_line(world: dict[str, str]) -> None:
    cases = [
        (("create", "-n", "x", "-A"), "karmada-rebalance create: error: argument -A/--all-namespaces: not allowed "
                                      "with argument -n/--namespace"),
        (("create", "--ttl", "5x"), 'invalid duration "5x"'),
        (("create", "--max-per-rebalancer", "0"), "must be at least 1"),
        (("create", "-o", "wide"), "invalid choice: 'wide'"),
        (("create", "Bad_Name"), 'invalid name "Bad_Name"'),
        (("create", "--kind", "widgets"), 'the server doesn\'t have a resource type "widgets"'),
        (("create", "--cluster", "member9"), "--cluster member9: no such cluster"),
        (("create", "--policy", "shop"), "--policy shop: use NAMESPACE/NAME"),
        (("create", "--policy", "shop/nope"), "--policy shop/nope: no such PropagationPolicy"),
        (("create", "-l", "a in (b"), "-l a in (b: "),
        (("create", "-n", "default"), "no workload selected: no ResourceBinding in namespace default"),
        (("create", "--kind", "sts"), "no workload selected in namespace shop: --kind sts matched nothing"),
        (("create", "--cluster", "member1", "--kind", "deploy", "-l", "app.kubernetes.io/part-of=backend"),
         "each selector matches some workload, but none matches them all"),
        (("--context", "nope", "status", "x"), 'context "nope" does not exist'),
        (("create", "--kind", "cm", "--ttl", "1000000h"), "whole seconds, at most 596523h14m7s (an int32)"),
    ]
    for argv, message in cases:
        code, out, err = await cli(world, *argv)
        assert (code, out) == (2, ""), (argv, err)
        assert err.count("\n") == 1 and message in err, (argv, err)


async def test_create_chunks_output_formats_and_status(world: dict[str, str], kube: KubeClient) -> None:
    code, out, _err = await cli(world, "create", "bulk", "--max-per-rebalancer", "2", "-o", "name")
    assert code == 0
    assert out == "workloadrebalancer.apps.karmada.io/bulk-1\nworkloadrebalancer.apps.karmada.io/bulk-2\n"
    first = await kube.get(WORKLOAD_REBALANCERS, "bulk-1")
    assert len(first["spec"]["workloads"]) == 2 and first["spec"]["ttlSecondsAfterFinished"] == 1800
    code, out, _err = await cli(world, "create", "--kind", "cm", "--ttl", "0", "-o", "yaml")
    created = yaml.safe_load(out)
    assert code == 0 and created["metadata"]["name"].startswith("rebalance-")
    assert "ttlSecondsAfterFinished" not in created["spec"]
    code, out, _err = await cli(world, "create", "one", "--kind", "cm", "--ttl", "1h")
    assert (code, out) == (0, "workloadrebalancer.apps.karmada.io/one created (1 workloads)\n")
    code, out, _err = await cli(world, "status", "one")
    assert (code, out) == (0, "WORKLOAD                  RESULT    REASON\nConfigMap/shop/settings   Pending\n")
    code, out, _err = await cli(world, "create", "one", "--kind", "cm", "-o", "json")
    assert code == 1 and out == ""
    assert _err == 'Error from server (AlreadyExists): workloadrebalancers.apps.karmada.io "one" already exists\n'
    code, _out, err = await cli(world, "status", "missing")
    assert (code, err) == (1, 'Error from server (NotFound): workloadrebalancers.apps.karmada.io "missing" not found\n')


async def finish(kube: KubeClient, results: dict[str, tuple[str, str]]) -> None:
    """Act as a rebalancer controller: once each rebalancer exists, write its results and finishTime."""
    async def one(name: str) -> None:
        rebalancer = await eventually(lambda: kube.get_or_none(WORKLOAD_REBALANCERS, name))
        observed = []
        for ref in rebalancer["spec"]["workloads"]:
            result, reason = results[ref["name"]]
            observed.append({"workload": ref, "result": result, **({"reason": reason} if reason else {})})
        rebalancer["status"] = {"observedWorkloads": observed, "finishTime": "2024-01-01T00:00:00Z",
                                "observedGeneration": rebalancer["metadata"]["generation"]}
        await kube.update_status(WORKLOAD_REBALANCERS, rebalancer)
    await asyncio.gather(one("back-1"), one("back-2"))


async def test_wait_prints_one_row_per_workload(world: dict[str, str], kube: KubeClient) -> None:
    results = {"web": ("Successful", ""), "settings": ("Failed", "ReferencedBindingNotFound")}
    controller = asyncio.create_task(finish(kube, results))
    try:
        code, out, err = await cli(world, "create", "back", "--cluster", "member1", "--max-per-rebalancer", "1",
                                   "--wait", "--timeout", "20s")
        assert code == 0, err
        await asyncio.wait_for(controller, 10)
    finally:
        await cancel_and_wait(controller)
    assert out.splitlines() == [
        "workloadrebalancer.apps.karmada.io/back-1 created (1 workloads)",
        "workloadrebalancer.apps.karmada.io/back-2 created (1 workloads)",
        "WORKLOAD                   RESULT       REASON",
        "ConfigMap/shop/settings    Failed       ReferencedBindingNotFound",
        "Deployment.apps/shop/web   Successful"]
    code, out, err = await cli(world, "create", "slow", "--kind", "cm", "--wait", "--timeout", "1s")
    assert code == 1 and out.endswith("created (1 workloads)\n")
    assert err == ("karmada-rebalance create: error: timed out after 1s waiting for workloadrebalancer(s) slow "
                   "to finish (is a WorkloadRebalancer controller running?)\n")


async def test_a_long_wait_says_what_it_is_waiting_for(world: dict[str, str], kube: KubeClient,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(status, "NOTICE_AFTER", 0.3)
    code, _out, err = await cli(world, "create", "quiet", "--kind", "cm", "--wait", "--timeout", "2s")
    assert code == 1
    assert err.splitlines() == [
        "karmada-rebalance: still waiting for workloadrebalancer(s) quiet to finish after 300ms (is a "
        "WorkloadRebalancer controller running?)",
        "karmada-rebalance create: error: timed out after 2s waiting for workloadrebalancer(s) quiet to finish (is a "
        "WorkloadRebalancer controller running?)"]


@pytest.mark.parametrize(("flags", "error"), [
    (("--wait", "--dry-run"), "--wait and --dry-run: a dry run creates nothing to wait for"),
    (("--wait", "--timeout", "0s"), "argument --timeout: "),
])
async def test_wait_flags_that_cannot_work_are_refused_before_anything_is_created(
        world: dict[str, str], kube: KubeClient, flags: tuple[str, ...], error: str) -> None:
    code, out, err = await cli(world, "create", "never", "--kind", "cm", *flags)
    assert (code, out) == (2, "")
    assert error in err
    assert await kube.get_or_none(WORKLOAD_REBALANCERS, "never") is None


async def test_creates_and_the_wait_ride_out_a_busy_or_restarting_server(
        world: dict[str, str], kube: KubeClient, server: ApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --max-concurrent too: 429 and 5xx answers to the creates, and to the wait's reads, are retried; a
    server that keeps failing is given up on within --timeout, saying what it answered."""
    monkeypatch.setattr(retry, "FIRST_PAUSE", 0.02)
    faults = [server.inject_fault("POST", "/workloadrebalancers", code=429, reason="TooManyRequests", times=2),
              server.inject_fault("POST", "/workloadrebalancers", code=500),
              server.inject_fault("POST", "/workloadrebalancers", code=504, reason="Timeout", after_dispatch=True),
              server.inject_fault("GET", "/workloadrebalancers", code=503, reason="ServiceUnavailable", times=2)]
    command = asyncio.create_task(cli(world, "create", "back", "--cluster", "member1", "--max-per-rebalancer", "1",
                                      "--wait", "--timeout", "20s"))
    try:
        await eventually(lambda: faults[-1].times == 0, what="the wait's reads failed")  # before the results exist
        await finish(kube, {"web": ("Successful", ""), "settings": ("Successful", "")})
        code, out, err = await asyncio.wait_for(command, 20)
    finally:
        await cancel_and_wait(command)
    assert code == 0, err
    assert [fault.times for fault in faults] == [0] * len(faults)
    assert out.splitlines()[:2] == ["workloadrebalancer.apps.karmada.io/back-1 created (1 workloads)",
                                    "workloadrebalancer.apps.karmada.io/back-2 created (1 workloads)"]
    assert sorted(r["metadata"]["name"] for r in (await kube.list(WORKLOAD_REBALANCERS))["items"]) == [
        "back-1", "back-2"]
    down = server.inject_fault("POST", "/workloadrebalancers", code=502, reason="BadGateway", times=1_000_000)
    code, out, err = await cli(world, "create", "late", "--kind", "cm", "--timeout", "1s")
    down.times = 0
    assert (code, out) == (1, "")
    assert err == ("karmada-rebalance create: error: gave up creating workloadrebalancer late within --timeout 1s: "
                   "the API server answered 502 BadGateway: injected failure\n")


async def test_a_create_given_up_but_stored_all_the_same_is_reported_created(
        world: dict[str, str], kube: KubeClient, server: ApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The create is stored but its answer lost (a 504) with a pause asked for longer than --timeout: the command
    stops retrying, and the one read by name finds the rebalancer, with this create's label: created, exit 0 (a
    second run would have made a second move)."""
    monkeypatch.setattr(retry, "FIRST_PAUSE", 0.02)
    lost = server.inject_fault("POST", "/workloadrebalancers", code=504, reason="Timeout", after_dispatch=True,
                               retry_after=30)
    code, out, err = await cli(world, "create", "landed", "--kind", "cm", "--timeout", "1s")
    assert lost.times == 0
    assert (code, out, err) == (0, "workloadrebalancer.apps.karmada.io/landed created (1 workloads)\n", "")


async def test_the_bound_is_on_each_create_not_on_all_of_them(kube: KubeClient,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A healthy server slower than the bound over the whole list: each create gets the whole bound for its own
    retries (what is bounded is how long a busy or restarting server is waited for), so none is given up unsent.
    Only the pacing is a test double here: ``retry.create`` is replaced by one that records its bound and takes
    0.3 s, as a busy server's answers would."""
    bounds: list[float] = []

    async def slow_create(_client: KubeClient, body: dict[str, Any], *, within: float, bound: str,
                          notice: Any = None) -> dict[str, Any]:
        bounds.append(within)
        await asyncio.sleep(0.3)
        return body

    monkeypatch.setattr(retry, "create", slow_create)
    created: list[dict[str, Any]] = []
    bodies = [{"metadata": {"name": f"each-{k}"}} for k in range(3)]
    await create_all(kube, bodies, created, retry_for=0.5, bound="--timeout 0.5s")
    assert bounds == [0.5, 0.5, 0.5] and created == bodies


async def test_a_resource_not_served_is_said_once_while_it_is_retried(
        world: dict[str, str], kube: KubeClient, server: ApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A text/plain 404 (a server starting, or no WorkloadRebalancer CRD) is retried, never the command's result,
    but the user is told once why the command waits."""
    monkeypatch.setattr(retry, "FIRST_PAUSE", 0.02)
    unserved = server.inject_fault("POST", "/workloadrebalancers", page_not_found=True, times=3)
    code, out, err = await cli(world, "create", "served", "--kind", "cm", "--timeout", "20s")
    assert unserved.times == 0
    assert (code, out) == (0, "workloadrebalancer.apps.karmada.io/served created (1 workloads)\n")
    assert err == ("karmada-rebalance: the API server does not serve workloadrebalancers.apps.karmada.io "
                   "right now (starting, or Karmada's WorkloadRebalancer CRD is not installed); retrying for up to "
                   "--timeout 20s\n")


async def test_a_server_that_does_not_serve_karmadas_api_is_named_as_such(
        world: dict[str, str], server: ApiServer) -> None:
    """A member cluster's context (an easy slip with a merged KUBECONFIG): the read ends at once, and the user is
    told what the answer most likely means."""
    server.inject_fault("GET", "/workloadrebalancers/one", page_not_found=True, times=1)
    code, out, err = await cli(world, "status", "one")
    assert (code, out) == (1, "")
    assert err.splitlines()[-2:] == [
        "Error from server (NotFound): 404 page not found",
        "karmada-rebalance status: error: the server does not serve workloadrebalancers.apps.karmada.io: is the "
        "context a Karmada API server (not a member cluster's)?"]


async def test_wait_ends_with_one_line_when_the_rebalancer_is_deleted(world: dict[str, str], kube: KubeClient) -> None:
    async def delete_once_created() -> None:
        await eventually(lambda: kube.get_or_none(WORKLOAD_REBALANCERS, "gone"))
        await kube.delete(WORKLOAD_REBALANCERS, "gone")

    deleter = asyncio.create_task(delete_once_created())
    try:
        code, out, err = await cli(world, "create", "gone", "--kind", "cm", "--wait", "--timeout", "20s")
        await asyncio.wait_for(deleter, 10)
    finally:
        await cancel_and_wait(deleter)
    assert (code, out) == (1, "workloadrebalancer.apps.karmada.io/gone created (1 workloads)\n")
    assert err == "karmada-rebalance create: error: workloadrebalancer gone was deleted before it finished\n"


async def test_wait_says_the_result_is_unknown_when_a_short_ttl_deleted_the_rebalancer_first(
        world: dict[str, str], kube: KubeClient, server: ApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The wait's first read meets a restarting server; meanwhile the controller finished the rebalancer and its
    1 s TTL deleted it. That is no failure of the rebalance, and the command says the result is unknown, and why."""
    monkeypatch.setattr(retry, "FIRST_PAUSE", 0.02)
    restarting = server.inject_fault("GET", "/workloadrebalancers/short", code=503, reason="ServiceUnavailable",
                                     times=1_000_000)

    async def created() -> dict[str, Any] | None:
        return next((r for r in (await kube.list(WORKLOAD_REBALANCERS))["items"] if r["metadata"]["name"] == "short"),
                    None)

    async def finish_and_expire() -> None:
        rebalancer = await eventually(created)
        rebalancer["status"] = {"finishTime": "2024-01-01T00:00:00Z",
                                "observedGeneration": rebalancer["metadata"]["generation"]}
        await kube.update_status(WORKLOAD_REBALANCERS, rebalancer)
        await kube.delete(WORKLOAD_REBALANCERS, "short")
        restarting.times = 0  # the server answers again

    controller = asyncio.create_task(finish_and_expire())
    try:
        code, out, err = await cli(world, "create", "short", "--kind", "cm", "--ttl", "1s", "--wait", "--timeout",
                                   "20s")
        await asyncio.wait_for(controller, 10)
    finally:
        await cancel_and_wait(controller)
    assert (code, out) == (1, "workloadrebalancer.apps.karmada.io/short created (1 workloads)\n")
    assert err == ("karmada-rebalance create: error: workloadrebalancer short was deleted before its result was "
                   "read, so its result is unknown (by its ttlSecondsAfterFinished once finished, if that is shorter "
                   "than the wait, or by someone else); use a longer --ttl\n")


async def test_a_failed_create_still_reports_the_rebalancers_made_before_it(world: dict[str, str],
                                                                           kube: KubeClient) -> None:
    await kube.create(WORKLOAD_REBALANCERS, {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
                                             "metadata": {"name": "part-2"},
                                             "spec": {"workloads": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                                     "name": "x", "namespace": "shop"}]}})
    code, out, err = await cli(world, "create", "part", "--cluster", "member1", "--max-per-rebalancer", "1")
    assert code == 1
    assert out == "workloadrebalancer.apps.karmada.io/part-1 created (1 workloads)\n"
    assert err == 'Error from server (AlreadyExists): workloadrebalancers.apps.karmada.io "part-2" already exists\n'


@pytest.mark.slow
def test_real_process_exit_codes(tmp_path: Path) -> None:
    """The installed command as a process: an unreachable server is exit 1, a bad flag exit 2, one line each."""
    config = tmp_path / "config"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "gone",
        "clusters": [{"name": "gone", "cluster": {"server": "http://127.0.0.1:9"}}],
        "users": [{"name": "gone", "user": {}}],
        "contexts": [{"name": "gone", "context": {"cluster": "gone", "user": "gone"}}]}))
    run = subprocess.run([sys.executable, "-m", "rebalancectl", "--kubeconfig", str(config), "status", "x"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.startswith("karmada-rebalance status: error: cannot reach the API server") and \
        run.stderr.count("\n") == 1, run.stderr
    run = subprocess.run([sys.executable, "-m", "rebalancectl", "create", "--ttl=-1s"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert (run.returncode, run.stderr) == (2, 'karmada-rebalance create: error: argument --ttl: invalid duration '
                                               '"-1s": must not be negative\n')


async def test_preserve_available_replicas_sets_the_annotation_and_status_shows_the_mode(
        world: dict[str, str], kube: KubeClient) -> None:
    code, out, err = await cli(world, "create", "keep", "--kind", "deploy", "--preserve-available-replicas")
    assert code == 0, err
    rebalancer = await kube.get(WORKLOAD_REBALANCERS, "keep")
    assert rebalancer["metadata"]["annotations"] == {PRESERVE_ANNOTATION: "true"}
    assert "reschedule" not in rebalancer["spec"]  # the annotation only: the stock CRD would prune the field
    code, out, _err = await cli(world, "status", "keep")
    assert (code, out.splitlines()[0]) == (
        0, "Mode: preserve available replicas (only replicas confirmed unschedulable move)")
    assert out.splitlines()[1].split() == ["WORKLOAD", "RESULT", "REASON"]
    rebalancer["metadata"]["annotations"] = {PRESERVE_ANNOTATION: "yes"}
    await kube.update(WORKLOAD_REBALANCERS, rebalancer)
    code, out, _err = await cli(world, "status", "keep")
    assert out.splitlines()[0] == (f'Mode: invalid, {PRESERVE_ANNOTATION}="yes", want "true" or "false" '
                                   "(every workload fails)")
