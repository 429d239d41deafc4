"""A simulated member cluster for tests: a plain Kubernetes dev API server with the member's Manager.

``member`` (the fixture in this package's conftest) runs :func:`setup_member_simulation` against
its own server; the helpers add Nodes and read what kubectl would show.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio.client import ApiClient, Configuration

from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.events import EVENTS
from controller_manager.manager import Manager, ManagerOptions
from devplane.apiserver.server import ApiServer
from devplane.members.setup import setup_member_simulation
from kube_api.resources import NODES
from tests.conftest import running

NS = "default"


@dataclass
class Member:
    server: ApiServer
    client: KubeClient
    manager: Manager
    controllers: list[Controller]


@contextlib.asynccontextmanager
async def simulated_member() -> AsyncIterator[Member]:
    async with ApiServer(karmada=False) as server:
        client = KubeClient(ApiClient(Configuration(host=server.url)), qps=0)
        manager = Manager(client, ManagerOptions(name="member1-simulation", metrics_bind_address="0"))
        controllers = setup_member_simulation(manager, cluster_name="member1")
        try:
            async with running(manager, stop_timeout=30):
                yield Member(server, client, manager, controllers)
        finally:
            await client.close()


async def add_node(member: Member, name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110",
                   unschedulable: bool = False, taints: list[dict[str, Any]] | None = None) -> None:
    spec: dict[str, Any] = {}
    if unschedulable:
        spec["unschedulable"] = True
    if taints:
        spec["taints"] = taints
    await member.client.create(NODES, {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                                       "spec": spec})
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    await member.client.patch_status(NODES, name, {"status": {
        "capacity": allocatable, "allocatable": allocatable,
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                        "message": "kubelet is posting ready status"}]}})


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), None)


async def events_for(member: Member, name: str) -> list[dict[str, Any]]:
    await member.manager.flush_events()
    items: list[dict[str, Any]] = (await member.client.list(
        EVENTS, NS, field_selector=f"involvedObject.name={name}"))["items"]
    return items
