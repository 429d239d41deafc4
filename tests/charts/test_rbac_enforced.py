"""A component missing one permission says so clearly, keeps running, and recovers once it is granted.

The API server enforces RBAC as kube-apiserver does; the chart's roles are applied with one verb
taken out of the controller-manager's ClusterRole, and the real process runs with its
ServiceAccount's token.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import secrets
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.support import free_port, stop_process
from controller_manager.client import KubeClient
from devplane.apiserver.authn import UserInfo
from devplane.apiserver.server import ApiServer
from devplane.kubeconfig import write_kubeconfig
from tests.charts.chart_rbac import (
    CLUSTER_ROLES,
    CONTROLLER_MANAGER,
    DESCHEDULER,
    apply,
    chart_rbac,
    write_component_kubeconfigs,
    write_token_file,
)
from tests.conftest import eventually
from tests.controllers.test_workloadrebalancer import WR, create_rebalancer, deploy_ref, finished, make_binding

FORBIDDEN = ('resourcebindings.work.karmada.io "web-deployment" is forbidden: User '
             '"system:serviceaccount:karmada-system:karmada-controller-manager" cannot update resource '
             '"resourcebindings" in API group "work.karmada.io" in the namespace "default"')


def without(docs: list[dict[str, Any]], component: str, resource: str, verbs: set[str],
            ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The chart's objects with ``verbs`` on ``resource`` taken out of ``component``'s ClusterRole; and that role."""
    docs = copy.deepcopy(docs)
    role = next(d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"].endswith(component))
    original = copy.deepcopy(role)
    rules = []
    for rule in role["rules"]:
        if resource in rule["resources"] and verbs & set(rule["verbs"]):
            rules.append({**rule, "resources": [r for r in rule["resources"] if r != resource]})
            rules.append({**rule, "resources": [resource], "verbs": [v for v in rule["verbs"] if v not in verbs]})
        else:
            rules.append(rule)
    role["rules"] = [r for r in rules if r["resources"] and r["verbs"]]
    assert role["rules"] != original["rules"], f"the chart no longer grants {verbs} on {resource} to {component}"
    return docs, original


async def healthy(port: int) -> bool:
    async with aiohttp.ClientSession() as probe, probe.get(f"http://127.0.0.1:{port}/healthz") as resp:
        return resp.status == 200


@dataclass
class Setup:
    """An RBAC-enforcing server with the chart's roles (one grant taken away) and the admin's access."""

    server: ApiServer
    admin: KubeClient
    admin_token: str
    kubeconfigs: dict[str, Path]
    full_role: dict[str, Any]


@contextlib.asynccontextmanager
async def rbac_server(tmp_path: Path, component: str, resource: str, verbs: set[str]) -> AsyncIterator[Setup]:
    tokens = write_token_file(tmp_path / "tokens.csv")
    admin_token = secrets.token_hex(16)
    server = ApiServer(token_auth_file=tmp_path / "tokens.csv", authorization_mode="RBAC",
                       extra_tokens={admin_token: UserInfo("admin", "", ("system:masters",))},
                       extra_namespaces=("karmada-system",))
    async with server:
        write_kubeconfig(tmp_path / "admin.kubeconfig", {"admin": server.url}, "admin", tokens={"admin": admin_token})
        admin = await KubeClient.from_kubeconfig(str(tmp_path / "admin.kubeconfig"))
        try:
            docs, full_role = without(chart_rbac(), component, resource, verbs)
            await apply(admin, docs)
            kubeconfigs = write_component_kubeconfigs(tmp_path, server.url, tokens, b"")
            yield Setup(server, admin, admin_token, kubeconfigs, full_role)
        finally:
            await admin.close()


@contextlib.asynccontextmanager
async def running(module: str, kubeconfig: Path, log: Path, *flags: str) -> AsyncIterator[tuple[Any, int]]:
    """``python -m module`` with its health endpoint on a free port; (process, port); always stopped."""
    health = free_port()
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", module, "--kubeconfig", str(kubeconfig), "--metrics-bind-address", "0",
            "--health-probe-bind-address", f"127.0.0.1:{health}", "--leader-elect-retry-period=500ms", *flags,
            stdout=out, stderr=out)
    try:
        yield proc, health
    finally:
        await stop_process(proc, grace=10.0)


async def test_a_missing_permission_is_reported_and_the_process_keeps_running(tmp_path: Path) -> None:
    log = tmp_path / "controller-manager.log"
    async with rbac_server(tmp_path, CONTROLLER_MANAGER, "resourcebindings", {"update"}) as setup, \
            running("controller_manager", setup.kubeconfigs[CONTROLLER_MANAGER], log,
                    "--rate-limiter-max-delay=1s") as (proc, health), \
            aiohttp.ClientSession(base_url=setup.server.url,
                                  headers={"Authorization": f"Bearer {setup.admin_token}"}) as http:
        await make_binding(http, "Deployment", "web")
        await create_rebalancer(http, "move-web", [deploy_ref("web")])

        def reported() -> bool:
            text = log.read_text(errors="replace")
            return FORBIDDEN in text and "reschedule trigger failed, will retry" in text

        await eventually(reported, timeout=30)
        async with http.get(f"{WR}/move-web") as resp:
            status = (await resp.json()).get("status") or {}
        assert "finishTime" not in status, "a forbidden trigger must not count as done"
        assert [item.get("result") for item in status.get("observedWorkloads", [])] in ([], [None])
        assert proc.returncode is None, "the process must keep running"
        assert await healthy(health)

        # Grant it again: the retrying rebalancer finishes without a restart.
        current = await setup.admin.get(CLUSTER_ROLES, setup.full_role["metadata"]["name"])
        await setup.admin.update(CLUSTER_ROLES, {**current, "rules": setup.full_role["rules"]})
        wr = await finished(http, "move-web")
        assert [item["result"] for item in wr["status"]["observedWorkloads"]] == ["Successful"]


async def test_a_descheduler_without_list_on_clusters_says_so_and_keeps_running(tmp_path: Path) -> None:
    log = tmp_path / "descheduler.log"
    message = ('clusters.cluster.karmada.io is forbidden: User "system:serviceaccount:karmada-system:'
               'karmada-descheduler" cannot list resource "clusters" in API group "cluster.karmada.io" '
               "at the cluster scope")
    async with rbac_server(tmp_path, DESCHEDULER, "clusters", {"list", "watch"}) as setup, \
            running("descheduler", setup.kubeconfigs[DESCHEDULER], log, "--descheduling-interval=1s") as (proc, health):
        await eventually(lambda: message in log.read_text(errors="replace"), timeout=30)
        assert proc.returncode is None, "the process must keep running"
        assert await healthy(health)
