"""Member-cluster access (``clusteraccess``) and the estimator client against a host and three member
dev API servers.

The host serves Clusters and their token Secrets (namespace ``karmada-cluster``); each member is a
plain Kubernetes dev server on which the test creates Nodes, Deployments, ReplicaSets and Pods, with
``PodScheduled`` conditions and transition times set through ``/status``. Every wait is a deadline
(``eventually``); every server and task started here is stopped.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import shutil
import ssl
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
import structlog
from kubernetes_asyncio import client as k8s
from prometheus_client import REGISTRY

from benchmarks.support import free_port
from clusteraccess.client import member_configuration, new_member_client, server_url
from clusteraccess.config import (
    MemberConfigError,
    MemberCredentials,
    MemberSettings,
    credentials_from_secret,
    read_credentials,
)
from clusteraccess.registry import MemberRegistry
from controller_manager.client import KubeClient
from controller_manager.informer import SharedInformer
from controller_manager.manager import Manager
from controller_manager.ratelimiter import RateLimiterOptions
from controller_manager.resource import Resource
from controllers import app as controller_manager_app
from controllers.registry import Context
from descheduler import app as descheduler_app
from devplane.apiserver.server import ApiServer
from estimator.client import EstimatorClient
from estimator.kinds import WorkloadKinds
from estimator.unschedulable import TEMPLATE_DIGEST
from karmada_api.resources import CLUSTERS
from kube_api.resources import DEPLOYMENTS, NODES, PODS, REPLICA_SETS, SECRETS
from kube_api.timeutil import format_time
from tests.conftest import eventually

SECRET_NAMESPACE = "karmada-cluster"
NAMESPACE = "default"
THRESHOLD = timedelta(minutes=5)
REQUEST = {"resourceRequest": {"cpu": "1", "memory": "1Gi"}}

# ----------------------------------------------------------------------------------------- helpers


def plain_client(url: str) -> KubeClient:
    return KubeClient(k8s.ApiClient(k8s.Configuration(host=url)), qps=0)


def b64(value: str | bytes) -> str:
    return base64.b64encode(value.encode() if isinstance(value, str) else value).decode()


def token_of(name: str) -> str:
    return f"s3cr3t-token-of-{name}"


async def register(host: KubeClient, name: str, endpoint: str, *, token: str | None = None, ca: bytes = b"",
                   **spec: Any) -> dict[str, Any]:
    """A token Secret in karmada-cluster and a Push Cluster pointing at ``endpoint``."""
    data = {"token": b64(token if token is not None else token_of(name))}
    if ca:
        data["caBundle"] = b64(ca)
    await host.create(SECRETS, {"metadata": {"name": name, "namespace": SECRET_NAMESPACE}, "data": data})
    return await host.create(CLUSTERS, {
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
        "spec": {"syncMode": "Push", "apiEndpoint": endpoint,
                 "secretRef": {"namespace": SECRET_NAMESPACE, "name": name}, **spec}})


async def add_node(member: KubeClient, name: str, *, cpu: str = "4", memory: str = "8Gi", pods: str = "110",
                   unschedulable: bool = False) -> None:
    await member.create(NODES, {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                                "spec": {"unschedulable": unschedulable} if unschedulable else {}})
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    await member.patch_status(NODES, name, {"status": {"capacity": capacity, "allocatable": capacity}})


def pod_template(app: str, image: str = "nginx:1.27") -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "main", "image": image,
                                     "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}


def owner(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": obj.get("apiVersion") or "apps/v1", "kind": obj.get("kind") or "",
            "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"], "controller": True}


async def add_pod(member: KubeClient, name: str, rs: dict[str, Any] | None, *, app: str = "web",
                  node: str = "", unschedulable_since: datetime | None = None, cpu: str = "1",
                  owner_kind: str = "ReplicaSet", labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A pod owned by ``rs`` (a ``owner_kind``): bound to ``node`` (Running) or PodScheduled=False/Unschedulable
    since a time."""
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": {"app": app, **(labels or {})}}
    if rs is not None:
        meta["labels"].update(rs["spec"]["selector"]["matchLabels"])
        meta["ownerReferences"] = [{**owner(rs), "kind": owner_kind}]
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "nginx",
                                            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    if node:
        spec["nodeName"] = node
    await member.create(PODS, {"metadata": meta, "spec": spec})
    if unschedulable_since is not None:
        status = {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient cpu.",
            "lastTransitionTime": format_time(unschedulable_since)}]}
    else:
        status = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True",
                                                      "lastTransitionTime": format_time(datetime.now(UTC))}]}
    return await member.patch_status(PODS, name, {"status": status}, namespace=NAMESPACE)


async def add_deployment(member: KubeClient, name: str, *, replicas: int,
                         image: str = "nginx:1.27") -> tuple[dict[str, Any], dict[str, Any]]:
    """A Deployment and its current ReplicaSet (template = the Deployment's, plus pod-template-hash)."""
    deployment = await member.create(DEPLOYMENTS, {
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": pod_template(name, image)}})
    rs = await add_replica_set(member, deployment, f"{name}-7d4b9c", deployment["spec"]["template"])
    return deployment, rs


async def add_replica_set(member: KubeClient, deployment: dict[str, Any], name: str,
                          template: dict[str, Any]) -> dict[str, Any]:
    pod_hash = name.rsplit("-", 1)[-1]
    template = {**template, "metadata": {"labels": {**template["metadata"]["labels"], "pod-template-hash": pod_hash}}}
    return await member.create(REPLICA_SETS, {
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": template["metadata"]["labels"],
                     "ownerReferences": [{**owner(deployment), "kind": "Deployment"}]},
        "spec": {"replicas": deployment["spec"]["replicas"],
                 "selector": {"matchLabels": {"app": deployment["metadata"]["name"], "pod-template-hash": pod_hash}},
                 "template": template}})


def reachable_gauge(name: str) -> float | None:
    return REGISTRY.get_sample_value("estimator_member_reachable", {"cluster": name})


def request_count(estimator: str, cluster: str) -> float:
    return REGISTRY.get_sample_value("estimator_request_duration_seconds_count",
                                     {"estimator": estimator, "cluster": cluster}) or 0.0


@dataclass
class Plane:
    """A host, its Clusters informer and a running MemberRegistry; members started by the test."""

    host: ApiServer
    host_client: KubeClient
    registry: MemberRegistry
    members: dict[str, ApiServer] = field(default_factory=dict)
    clients: dict[str, KubeClient] = field(default_factory=dict)

    async def add_member(self, name: str, *, register_cluster: bool = True) -> KubeClient:
        server = ApiServer(karmada=False)
        await server.start()
        self.members[name] = server
        self.clients[name] = plain_client(server.url)
        if register_cluster:
            await register(self.host_client, name, server.url)
        return self.clients[name]

    async def wait_synced(self, *names: str) -> None:
        async def synced() -> bool:
            return all((m := self.registry.get(n)) is not None and m.reachable for n in names)
        await eventually(synced, timeout=15)


@contextlib.asynccontextmanager
async def control_plane(member_count: int = 3, **registry_options: Any) -> AsyncIterator[Plane]:
    async with contextlib.AsyncExitStack() as stack:
        host = await stack.enter_async_context(ApiServer(extra_namespaces=(SECRET_NAMESPACE,)))
        host_client = plain_client(host.url)
        stack.push_async_callback(host_client.close)
        clusters = SharedInformer(host_client, CLUSTERS)
        registry = MemberRegistry(host_client, clusters, **{"sync_timeout": 5.0, "client_timeout": 2.0,
                                                            **registry_options})
        plane = Plane(host, host_client, registry)

        async def stop_members() -> None:
            for member_client in plane.clients.values():
                await member_client.close()
            for server in plane.members.values():
                await server.stop()

        stack.push_async_callback(stop_members)
        tasks = [asyncio.create_task(clusters.run()), asyncio.create_task(registry.run())]

        async def stop_tasks() -> None:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        stack.push_async_callback(stop_tasks)
        for index in range(1, member_count + 1):
            await plane.add_member(f"member{index}")
        yield plane


async def seed_workloads(plane: Plane, now: datetime) -> None:
    """member1: 2 pods unschedulable 10 min + 1 for 1 min (+ an old ReplicaSet's stuck pod, not counted);
    member2: 1 unschedulable 10 min + 2 running; member3: 2 running."""
    m1, m2, m3 = plane.clients["member1"], plane.clients["member2"], plane.clients["member3"]
    for member in (m1, m2, m3):
        await add_node(member, "node-a")
    deployment, rs = await add_deployment(m1, "web", replicas=3)
    old_rs = await add_replica_set(m1, deployment, "web-5f6a1b", pod_template("web", "nginx:1.25"))
    await add_pod(m1, "web-1", rs, unschedulable_since=now - timedelta(minutes=10))
    await add_pod(m1, "web-2", rs, unschedulable_since=now - timedelta(minutes=10))
    await add_pod(m1, "web-3", rs, unschedulable_since=now - timedelta(minutes=1))
    await add_pod(m1, "web-old", old_rs, unschedulable_since=now - timedelta(minutes=30))
    _, rs = await add_deployment(m2, "web", replicas=3)
    await add_pod(m2, "web-1", rs, unschedulable_since=now - timedelta(minutes=10))
    await add_pod(m2, "web-2", rs, node="node-a")
    await add_pod(m2, "web-3", rs, node="node-a")
    _, rs = await add_deployment(m3, "web", replicas=2)
    await add_pod(m3, "web-1", rs, node="node-a")
    await add_pod(m3, "web-2", rs, node="node-a")


WEB = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NAMESPACE, "name": "web"}
ALL = ["member1", "member2", "member3"]


class Relay:
    """A TCP relay to a member (optionally terminating TLS); records what clients send through it."""

    def __init__(self, target_port: int, ssl_context: ssl.SSLContext | None = None, *, port: int = 0) -> None:
        self.target_port = target_port
        self.ssl_context = ssl_context
        self.seen = bytearray()
        self.port = port
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def __aenter__(self) -> Relay:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is None:
            return
        self._server.close()
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()
        self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, record: bool) -> None:
            try:
                while data := await src.read(65536):
                    if record and len(self.seen) < 1 << 20:
                        self.seen.extend(data)
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, ssl.SSLError, OSError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer, True), pipe(up_reader, writer, False))


def self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl CLI): (cert, key)."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


# ----------------------------------------------------------------------------------------- client config


def test_server_url_defaults_scheme_like_client_go() -> None:
    assert server_url("10.0.0.1:6443", tls_configured=True) == "https://10.0.0.1:6443"
    assert server_url("10.0.0.1:6443", tls_configured=False) == "http://10.0.0.1:6443"
    assert server_url("https://api.example.com/prefix/", tls_configured=False) == "https://api.example.com/prefix"
    with pytest.raises(MemberConfigError):
        server_url("ftp://example.com", tls_configured=False)
    with pytest.raises(MemberConfigError, match="user info") as userinfo:
        server_url("https://admin:hunter2@example.com", tls_configured=False)
    assert "hunter2" not in str(userinfo.value)


async def test_a_secret_ref_no_secret_can_have_is_a_permanent_configuration_error() -> None:
    """``spec.secretRef`` is not validated by the Cluster CRD; a "/" in it is refused before any request (no server
    here: nothing is sent), and said on the member instead of ending its task without a reason."""
    settings = MemberSettings.from_cluster({"metadata": {"uid": "u1"}, "spec": {
        "apiEndpoint": "https://m1.example.com:6443", "secretRef": {"namespace": "karmada-cluster", "name": "m1/x"}}})
    host = KubeClient(k8s.ApiClient(k8s.Configuration(host="http://127.0.0.1:1")), qps=0)
    try:
        with pytest.raises(MemberConfigError, match=r"spec\.secretRef: invalid resource name") as refused:
            await read_credentials(host, "m1", settings)
    finally:
        await host.close()
    assert refused.value.permanent


def test_member_configuration_is_push_mode() -> None:
    settings = MemberSettings.from_cluster({"metadata": {"uid": "u1"}, "spec": {
        "apiEndpoint": "https://m1.example.com:6443", "secretRef": {"namespace": "karmada-cluster", "name": "m1"},
        "proxyURL": "http://proxy.example.com:3128", "proxyHeader": {"X-Tenant": "a"}}})
    credentials = credentials_from_secret("m1", {"data": {"token": b64("abc\n"), "caBundle": b64("PEM")}})
    configuration = member_configuration("m1", settings, credentials)
    assert configuration.host == "https://m1.example.com:6443"
    assert configuration.api_key == {"BearerToken": "abc"}
    assert configuration.api_key_prefix == {"BearerToken": "Bearer"}
    assert configuration.verify_ssl is True
    assert configuration.proxy == "http://proxy.example.com:3128"
    assert configuration.proxy_headers == {"X-Tenant": "a"}
    insecure = MemberSettings.from_cluster({"spec": {"apiEndpoint": "m1:6443", "insecureSkipTLSVerification": True,
                                                     "secretRef": {"namespace": "n", "name": "s"}}})
    configuration = member_configuration("m1", insecure, MemberCredentials("abc", b""))
    assert configuration.verify_ssl is False
    assert configuration.host == "https://m1:6443"


def test_member_configuration_errors() -> None:
    with pytest.raises(MemberConfigError, match="missing a non-empty value for 'token'") as missing:
        credentials_from_secret("m1", {"data": {"caBundle": b64("x")}})
    assert not missing.value.permanent
    with pytest.raises(MemberConfigError, match="api endpoint of cluster m1 is empty") as empty:
        member_configuration("m1", MemberSettings.from_cluster({"spec": {}}), MemberCredentials("t", b""))
    assert empty.value.permanent
    socks = MemberSettings.from_cluster({"spec": {"apiEndpoint": "https://m1", "proxyURL": "socks5://p:1080"}})
    with pytest.raises(MemberConfigError, match="unsupported proxy scheme"):
        member_configuration("m1", socks, MemberCredentials("t", b""))
    assert "s3cr3t" not in repr(MemberCredentials("s3cr3t", b"ca"))


async def test_bad_ca_bundle_is_a_config_error_and_leaves_no_file(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    settings = MemberSettings.from_cluster({"spec": {"apiEndpoint": "https://127.0.0.1:1"}})
    with pytest.raises(MemberConfigError, match="caBundle of cluster m1 cannot be loaded"):
        new_member_client("m1", settings, MemberCredentials("t", b"not a certificate"), timeout=1)
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------------------- estimates


@pytest.mark.parametrize("slim", [False, True], ids=["full", "slim"])
async def test_unschedulable_replicas_per_member(slim: bool) -> None:
    async with control_plane(slim=slim) as plane:
        now = datetime.now(UTC)
        await seed_workloads(plane, now)
        await plane.wait_synced(*ALL)
        estimator = EstimatorClient(plane.registry, timeout=3)

        async def settled() -> dict[str, int]:
            result = await estimator.unschedulable_replicas(ALL, WEB, THRESHOLD)
            assert result == {"member1": 2, "member2": 1, "member3": 0}
            return result

        await eventually(settled)
        before = request_count("unschedulable", "member1")
        # threshold respected: with 0, the pod stuck for a minute counts too; with 20 min, none do
        assert await estimator.unschedulable_replicas(ALL, WEB, timedelta(0)) == {
            "member1": 3, "member2": 1, "member3": 0}
        assert await estimator.unschedulable_replicas(ALL, WEB, timedelta(minutes=20)) == dict.fromkeys(ALL, 0)
        assert request_count("unschedulable", "member1") == before + 2
        # a Deployment a member does not have, an unknown cluster, a kind that is not supported: omitted
        assert await estimator.unschedulable_replicas([*ALL, "nowhere"], {**WEB, "name": "api"}, THRESHOLD) == {}
        assert await estimator.unschedulable_replicas(ALL, {**WEB, "kind": "StatefulSet"}, THRESHOLD) == {}

        # a pod becoming schedulable is seen through the watch
        await plane.clients["member2"].patch_status(PODS, "web-1", {"status": {"phase": "Running", "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": format_time(now)}]}}, namespace=NAMESPACE)

        async def member2_cleared() -> bool:
            return (await estimator.unschedulable_replicas(["member2"], WEB, THRESHOLD)) == {"member2": 0}

        await eventually(member2_cleared)
        # and a running pod becoming unschedulable (a slim cache held only its key until then)
        await plane.clients["member3"].patch_status(PODS, "web-2", {"status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "lastTransitionTime": format_time(now - timedelta(minutes=6))}]}}, namespace=NAMESPACE)

        async def member3_stuck() -> bool:
            return (await estimator.unschedulable_replicas(["member3"], WEB, THRESHOLD)) == {"member3": 1}

        await eventually(member3_stuck)


async def test_a_slim_registry_caches_what_the_estimates_read_and_no_capacity() -> None:
    async with control_plane(slim=True) as plane:
        now = datetime.now(UTC)
        await seed_workloads(plane, now)
        await plane.wait_synced(*ALL)
        member = plane.registry.get("member2")
        assert member is not None and member.slim

        def pods() -> dict[str, Any]:
            return {p["metadata"]["name"]: p for p in member.cache("pods").list()}

        await eventually(lambda: len(pods()) == 3)
        stuck, running = pods()["web-1"], pods()["web-2"]
        assert set(running["metadata"]) == {"name", "namespace", "resourceVersion"} and "status" not in running
        assert set(stuck["metadata"]) == {"name", "namespace", "resourceVersion", "labels", "ownerReferences"}
        assert "spec" not in stuck and stuck["status"]["conditions"][0]["reason"] == "Unschedulable"
        deployment = member.cache("deployments").get(f"{NAMESPACE}/web")
        assert deployment is not None and set(deployment["spec"]) == {"selector", TEMPLATE_DIGEST}
        node = member.cache("nodes").get("node-a")
        assert node is not None and set(node) <= {"apiVersion", "kind", "metadata"}
        with pytest.raises(LookupError, match="slim"):
            _ = member.usage
        estimator = EstimatorClient(plane.registry, timeout=3)
        assert await estimator.max_available_replicas(ALL, REQUEST) == {}  # every member unknown, never a guess
        await eventually(lambda: _equals(estimator.unschedulable_replicas(ALL, WEB, THRESHOLD),
                                         {"member1": 2, "member2": 1, "member3": 0}))


async def test_max_available_replicas_per_member() -> None:
    async with control_plane() as plane:
        m1, m2 = plane.clients["member1"], plane.clients["member2"]
        await add_node(m1, "node-a")  # 4 cpu / 8Gi
        await add_pod(m1, "busy", None, node="node-a")  # 1 cpu used -> 3 left
        await add_node(m2, "node-a", cpu="2")
        await add_node(m2, "node-b", cpu="2")
        await add_node(m2, "node-c", cpu="16", unschedulable=True)  # cordoned: not counted
        await add_node(plane.clients["member3"], "node-a", pods="1")
        await add_pod(plane.clients["member3"], "one", None, node="node-a", cpu="100m")  # pod slots exhausted
        await plane.wait_synced(*ALL)
        estimator = EstimatorClient(plane.registry, timeout=3)

        async def answers(expected: dict[str, int]) -> bool:
            return await estimator.max_available_replicas(ALL, REQUEST) == expected

        await eventually(lambda: answers({"member1": 3, "member2": 4, "member3": 0}))
        assert await estimator.max_available_replicas(["member1"], None) == {"member1": 109}
        # pods and nodes changing at run time feed the NodeUsage through the informers
        await add_pod(m1, "busy-2", None, node="node-a")
        await m2.delete(NODES, "node-b")
        await eventually(lambda: answers({"member1": 2, "member2": 2, "member3": 0}))
        await m1.patch_status(PODS, "busy", {"status": {"phase": "Succeeded"}}, namespace=NAMESPACE)  # terminal
        await eventually(lambda: answers({"member1": 3, "member2": 2, "member3": 0}))
        assert request_count("accurate", "member2") > 0


class _Manager:
    """What the products' set-up asks of a Manager before it runs, recording the runnables."""

    client = None

    def __init__(self) -> None:
        self.runnables: dict[str, Any] = {}

    def informer(self, resource: Resource, **_options: Any) -> SharedInformer:
        return SharedInformer(cast(KubeClient, None), resource)

    def event_recorder(self, component: str) -> None:
        return None

    def add_runnable(self, name: str, run: Any, **_options: Any) -> None:
        self.runnables[name] = run


def test_the_controller_manager_and_the_descheduler_keep_slim_member_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both only count unschedulable replicas; the dev plane, which estimates capacity, keeps full objects."""
    manager = _Manager()
    args = controller_manager_app.build_parser().parse_args(["--enable-preserve-available-replicas"])
    context = Context(args, RateLimiterOptions(), WorkloadKinds())
    controller_manager_app._preserve_options(cast(Manager, manager), context)
    descheduler = _Manager()

    async def new_manager(*_args: Any, **_options: Any) -> _Manager:
        return descheduler

    monkeypatch.setattr(descheduler_app, "new_manager", new_manager)
    monkeypatch.setattr(descheduler_app, "run_component", lambda _name, _options, build: asyncio.run(build()) and 0)
    assert descheduler_app.main([]) == 0
    for built in (manager, descheduler):
        registry = built.runnables["member clusters"].__self__
        assert isinstance(registry, MemberRegistry) and registry.slim
    assert not MemberRegistry(cast(KubeClient, None), SharedInformer(cast(KubeClient, None), CLUSTERS)).slim


# ----------------------------------------------------------------------------------------- failures


async def test_unreachable_member_is_omitted_and_the_others_answer() -> None:
    async with control_plane() as plane:
        await seed_workloads(plane, datetime.now(UTC))
        await plane.wait_synced(*ALL)
        estimator = EstimatorClient(plane.registry, timeout=3)
        await eventually(lambda: _equals(estimator.unschedulable_replicas(ALL, WEB, THRESHOLD),
                                         {"member1": 2, "member2": 1, "member3": 0}))
        assert reachable_gauge("member2") == 1.0

        await plane.members["member2"].stop()
        await eventually(lambda: reachable_gauge("member2") == 0.0)
        started = time.monotonic()
        assert await estimator.unschedulable_replicas(ALL, WEB, THRESHOLD) == {"member1": 2, "member3": 0}
        assert set(await estimator.max_available_replicas(ALL, REQUEST)) == {"member1", "member3"}
        assert time.monotonic() - started < 1.0, "a failed member must not cost the caller its timeout"
        assert reachable_gauge("member1") == 1.0
        member2 = plane.registry.get("member2")
        assert member2 is not None and member2.errors()



@pytest.mark.slow
async def test_unreachable_member_is_retried_until_it_answers_again() -> None:
    """Behind a relay that goes away and comes back on the same port: the informers' backoff reconnects."""
    async with control_plane(member_count=0) as plane:
        m1 = await plane.add_member("member1", register_cluster=False)
        await add_node(m1, "node-a")
        port = free_port()
        relay = Relay(plane.members["member1"].port, port=port)
        await relay.__aenter__()
        try:
            await register(plane.host_client, "member1", f"http://127.0.0.1:{port}")
            await plane.wait_synced("member1")
            estimator = EstimatorClient(plane.registry, timeout=3)
            assert await estimator.max_available_replicas(["member1"], REQUEST) == {"member1": 4}
            await relay.__aexit__()
            await eventually(lambda: reachable_gauge("member1") == 0.0)
            assert await estimator.max_available_replicas(["member1"], REQUEST) == {}
            await add_node(m1, "node-b")  # changed while unreachable: seen after the reconnection
            relay = Relay(plane.members["member1"].port, port=port)
            await relay.__aenter__()
            await eventually(lambda: reachable_gauge("member1") == 1.0, timeout=30)
            await eventually(lambda: _equals(estimator.max_available_replicas(["member1"], REQUEST),
                                             {"member1": 8}))
        finally:
            await relay.__aexit__()


async def test_member_down_from_the_start_costs_nothing() -> None:
    async with control_plane(member_count=1) as plane:
        await register(plane.host_client, "member9", f"http://127.0.0.1:{free_port()}")
        await plane.wait_synced("member1")
        await eventually(lambda: plane.registry.get("member9") is not None)
        estimator = EstimatorClient(plane.registry, timeout=3)
        started = time.monotonic()
        assert await estimator.max_available_replicas(["member9", "member1"], REQUEST) == {"member1": 0}
        assert time.monotonic() - started < 2.5
        await eventually(lambda: reachable_gauge("member9") == 0.0)
        member9 = plane.registry.get("member9")
        assert member9 is not None and "nodes" in member9.errors()


async def test_one_resource_failing_leaves_the_other_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    """401 on Nodes only: max-available is unknown, unschedulable replicas still answered (#6683)."""
    async with control_plane(member_count=0) as plane:
        m1 = await plane.add_member("member1", register_cluster=False)
        plane.members["member1"].inject_fault("GET", "/api/v1/nodes", code=401, reason="Unauthorized", times=10**6)
        _, rs = await add_deployment(m1, "web", replicas=1)
        await add_pod(m1, "web-1", rs, unschedulable_since=datetime.now(UTC) - timedelta(minutes=10))
        with structlog.testing.capture_logs() as logs:
            await register(plane.host_client, "member1", plane.members["member1"].url)
            estimator = EstimatorClient(plane.registry, timeout=3)
            await eventually(lambda: _equals(estimator.unschedulable_replicas(["member1"], WEB, THRESHOLD),
                                             {"member1": 1}))
            assert await estimator.max_available_replicas(["member1"], REQUEST) == {}
            await eventually(lambda: reachable_gauge("member1") == 0.0)
        assert any("401" in str(entry.get("error", "")) for entry in logs)
        printed = capsys.readouterr()
        assert token_of("member1") not in repr(logs) + printed.out + printed.err


@pytest.mark.slow
async def test_missing_secret_is_retried_and_never_logs_the_token(capsys: pytest.CaptureFixture[str]) -> None:
    async with control_plane(member_count=0) as plane:
        m1 = await plane.add_member("member1", register_cluster=False)
        await add_node(m1, "node-a")
        with structlog.testing.capture_logs() as logs:
            await plane.host_client.create(CLUSTERS, {
                "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "member1"},
                "spec": {"syncMode": "Push", "apiEndpoint": plane.members["member1"].url,
                         "secretRef": {"namespace": SECRET_NAMESPACE, "name": "member1"}}})
            await eventually(lambda: (m := plane.registry.get("member1")) is not None and "not found" in m.error)
            estimator = EstimatorClient(plane.registry, timeout=1)
            assert await estimator.max_available_replicas(["member1"], REQUEST) == {}
            await plane.host_client.create(SECRETS, {"metadata": {"name": "member1", "namespace": SECRET_NAMESPACE},
                                                     "data": {"token": b64(token_of("member1"))}})
            await plane.wait_synced("member1")
            assert await estimator.max_available_replicas(["member1"], REQUEST) == {"member1": 4}
        printed = capsys.readouterr()
        assert token_of("member1") not in repr(logs) + printed.out + printed.err


# ----------------------------------------------------------------------------------------- membership


async def test_members_added_and_removed_at_run_time() -> None:
    async with control_plane(member_count=2) as plane:
        await plane.wait_synced("member1", "member2")
        estimator = EstimatorClient(plane.registry, timeout=3)
        assert plane.registry.get("member3") is None
        m3 = await plane.add_member("member3")
        await add_node(m3, "node-a", cpu="2")
        await plane.wait_synced("member3")
        await eventually(lambda: _equals(estimator.max_available_replicas(["member3"], REQUEST), {"member3": 2}))
        assert reachable_gauge("member3") == 1.0

        removed = plane.registry.get("member2")
        assert removed is not None
        await plane.host_client.delete(CLUSTERS, "member2")
        await eventually(lambda: plane.registry.get("member2") is None and removed.closed
                                       and not removed.running)
        assert plane.registry.get_by_uid(removed.uid) is None
        assert reachable_gauge("member2") is None
        assert set(await estimator.max_available_replicas(ALL, REQUEST)) == {"member1", "member3"}


async def test_recreated_cluster_gets_fresh_caches() -> None:
    async with control_plane() as plane:
        await add_node(plane.clients["member1"], "node-a", cpu="8")
        await add_node(plane.clients["member3"], "node-a", cpu="2")
        await plane.wait_synced(*ALL)
        estimator = EstimatorClient(plane.registry, timeout=3)
        await eventually(lambda: _equals(estimator.max_available_replicas(["member1"], REQUEST), {"member1": 8}))
        old = plane.registry.get("member1")
        assert old is not None and plane.registry.get_by_uid(old.uid) is old
        await plane.host_client.delete(CLUSTERS, "member1")
        # same name, another member's endpoint: nothing of the old caches may survive
        await plane.host_client.create(CLUSTERS, {
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "member1"},
            "spec": {"syncMode": "Push", "apiEndpoint": plane.members["member3"].url,
                     "secretRef": {"namespace": SECRET_NAMESPACE, "name": "member1"}}})

        async def fresh() -> bool:
            new = plane.registry.get("member1")
            return new is not None and new.uid != old.uid and new.reachable
        await eventually(fresh)
        assert old.closed and plane.registry.get_by_uid(old.uid) is None
        assert await estimator.max_available_replicas(["member1"], REQUEST) == {"member1": 2}


async def test_endpoint_change_repoints_the_member() -> None:
    async with control_plane(member_count=2) as plane:
        await add_node(plane.clients["member1"], "node-a", cpu="8")
        await add_node(plane.clients["member2"], "node-a", cpu="3")
        await plane.wait_synced("member1", "member2")
        estimator = EstimatorClient(plane.registry, timeout=3)
        await eventually(lambda: _equals(estimator.max_available_replicas(["member1"], REQUEST), {"member1": 8}))
        old = plane.registry.get("member1")
        assert old is not None
        await plane.host_client.patch(CLUSTERS, "member1", {"spec": {"apiEndpoint": plane.members["member2"].url}})

        async def repointed() -> bool:
            new = plane.registry.get("member1")
            return new is not None and new is not old and new.endpoint == plane.members["member2"].url
        await eventually(repointed)
        assert old.closed and not old.running
        await eventually(lambda: _equals(estimator.max_available_replicas(["member1"], REQUEST), {"member1": 3}))
        # an unrelated change (a label) keeps the member and its caches; member2's later proxy change
        # replaces member2, and once that is done the earlier label event has been handled too
        current = plane.registry.get("member1")
        previous2 = plane.registry.get("member2")
        await plane.host_client.patch(CLUSTERS, "member1", {"metadata": {"labels": {"env": "prod"}}})
        await plane.host_client.patch(CLUSTERS, "member2", {"spec": {"proxyURL": "http://127.0.0.1:9"}})
        await eventually(lambda: plane.registry.get("member2") is not previous2)
        assert plane.registry.get("member1") is current


async def test_rotated_secret_replaces_the_client() -> None:
    async with control_plane(member_count=1, secret_check_interval=0.2) as plane:
        await plane.wait_synced("member1")
        old = plane.registry.get("member1")
        assert old is not None
        await plane.host_client.patch(SECRETS, "member1", {"data": {"token": b64("rotated-token")}},
                                      namespace=SECRET_NAMESPACE)
        await eventually(lambda: (m := plane.registry.get("member1")) is not None and m is not old
                                       and m.reachable)
        new = plane.registry.get("member1")
        assert new is not None and new.client is not None
        assert new.client.api_client.configuration.api_key == {"BearerToken": "rotated-token"}
        assert old.closed


# ----------------------------------------------------------------------------------------- transport


async def test_token_is_sent_and_proxy_url_is_used() -> None:
    async with control_plane(member_count=0) as plane:
        m1 = await plane.add_member("member1", register_cluster=False)
        await add_node(m1, "node-a")
        async with Relay(plane.members["member1"].port) as proxy:
            await register(plane.host_client, "member1", plane.members["member1"].url,
                           proxyURL=f"http://127.0.0.1:{proxy.port}")
            await plane.wait_synced("member1")
            estimator = EstimatorClient(plane.registry, timeout=3)
            assert await estimator.max_available_replicas(["member1"], REQUEST) == {"member1": 4}
            sent = bytes(proxy.seen).decode("latin-1")
            assert f"GET {plane.members['member1'].url}/api/v1/nodes" in sent  # absolute form: via the proxy
            assert f"Bearer {token_of('member1')}" in sent


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl CLI")
async def test_tls_with_ca_bundle_insecure_and_wrong_ca(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path, "server")
    other, _ = self_signed(tmp_path, "other")
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    async with control_plane(member_count=0) as plane:
        m1 = await plane.add_member("member1", register_cluster=False)
        await add_node(m1, "node-a")
        async with Relay(plane.members["member1"].port, tls) as front:
            endpoint = f"https://127.0.0.1:{front.port}"
            await register(plane.host_client, "trusted", endpoint, ca=cert.read_bytes())
            await register(plane.host_client, "insecure", f"127.0.0.1:{front.port}", insecureSkipTLSVerification=True)
            await register(plane.host_client, "wrong-ca", endpoint, ca=other.read_bytes())
            await register(plane.host_client, "system-roots", endpoint)
            await plane.wait_synced("trusted", "insecure")
            estimator = EstimatorClient(plane.registry, timeout=3)
            clusters = ["trusted", "insecure", "wrong-ca", "system-roots"]
            assert await estimator.max_available_replicas(clusters, REQUEST) == {"trusted": 4, "insecure": 4}
            for name in ("wrong-ca", "system-roots"):
                async def tls_refused(name: str = name) -> bool:
                    member = plane.registry.get(name)
                    return (reachable_gauge(name) == 0.0 and member is not None
                            and "CERTIFICATE_VERIFY_FAILED" in member.errors().get("nodes", ""))
                await eventually(tls_refused)


# ----------------------------------------------------------------------------------------- small awaitables


async def _equals(answer: Any, expected: Any) -> bool:
    result = await answer
    assert result == expected, result
    return True



async def test_every_estimator_is_asked_and_combined_by_minimum() -> None:
    """General (resourceSummary) and accurate (member caches) estimates per cluster, minimum wins;
    a cluster that no estimator can judge gets spec.replicas."""
    async with control_plane() as plane:
        await add_node(plane.clients["member1"], "node-a")  # accurate: 4 cpu → 4 replicas of REQUEST
        await add_node(plane.clients["member2"], "node-a")
        await plane.wait_synced(*ALL)
        summary = {"allocatable": {"cpu": "2", "memory": "16Gi", "pods": "110"}}  # general: 2 replicas
        clusters = []
        for name in ("member1", "member2"):
            cluster = await plane.host_client.get(CLUSTERS, name)
            cluster["status"] = {"resourceSummary": summary}
            clusters.append(await plane.host_client.update_status(CLUSTERS, cluster))
        estimator = EstimatorClient(plane.registry, timeout=3)
        await eventually(lambda: _equals(estimator.max_available_replicas(["member1"], REQUEST), {"member1": 4}))
        assert await estimator.available_replicas(clusters, REQUEST, replicas=7) == {"member1": 2, "member2": 2}
        await plane.members["member2"].stop()  # accurate cannot answer for member2: general still does
        assert await estimator.available_replicas(clusters, REQUEST, replicas=7) == {"member1": 2, "member2": 2}
        no_summary = [{**c, "status": {}} for c in clusters]  # general says 0 without a summary (Karmada)
        assert await estimator.available_replicas(no_summary, REQUEST, replicas=7) == {"member1": 0, "member2": 0}
