"""The real kubectl against ``karmada-devplane up``: explain, auth can-i, version.

``kubectl explain`` reads the OpenAPI v3 documents (kube's published schemas for built-in
kinds, the CRDs' for Karmada's); ``kubectl auth can-i`` creates SelfSubjectAccessReviews and
SelfSubjectRulesReviews, answered by the server's authorizer (AlwaysAllow by default, RBAC
with ``--authorization-mode RBAC``); ``kubectl version`` must not warn about version skew.
One devplane per authorization mode serves its tests; every wait has a deadline.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.devplane.test_kubectl import (
    READY_TIMEOUT,
    Devplane,
    Kubectl,
    Lines,
    devplane_command,
    kubectl_binary,
)

pytestmark = pytest.mark.kubectl

USER_TOKEN = "alice-token"  # a plain user, bound below to a Role in "default" only
ADMIN_TOKEN = "admin-token"  # system:masters, to set up the Role and RoleBinding


def start(workdir: Path, *flags: str) -> Devplane:
    """``karmada-devplane up`` with one member and ``flags``; returns once it printed its ready line."""
    kube = workdir / "kube"
    log = workdir / "devplane.log"
    with log.open("w") as stderr:
        process = subprocess.Popen([*devplane_command(), "up", "--members", "1", "--kubeconfig-dir", str(kube),
                                    *flags], stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=workdir)
    plane = Devplane(process, kube, "", log)
    try:
        assert process.stdout is not None
        line = Lines(process.stdout).next(time.monotonic() + READY_TIMEOUT)
        assert "ready" in line, f"unexpected first line {line!r}; log:\n{log.read_text()}"
    except BaseException:
        plane.stop(signal.SIGTERM)
        raise
    return plane


def kubectl_for(plane: Devplane, home: Path) -> Kubectl:
    env = {**os.environ, "KUBECONFIG": str(plane.kubeconfig_dir / "karmada.config"), "HOME": str(home),
           "KUBECACHEDIR": str(home / "cache")}
    return Kubectl(kubectl_binary(), env)


def stopped(plane: Devplane) -> None:
    code = plane.stop(signal.SIGTERM)
    assert code == 0, f"karmada-devplane exited {code} on SIGTERM; log:\n{plane.log.read_text()}"


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """kubectl against a devplane that authorizes everything (the default)."""
    plane = start(tmp_path_factory.mktemp("devplane"))
    yield kubectl_for(plane, tmp_path_factory.mktemp("home"))
    stopped(plane)


@pytest.fixture(scope="module")
def rbac_kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """kubectl against a devplane with RBAC; ``alice`` may get/list/create deployments and pods in default."""
    workdir = tmp_path_factory.mktemp("devplane-rbac")
    tokens = workdir / "tokens.csv"
    tokens.write_text(f'{ADMIN_TOKEN},admin,1000,"system:masters"\n{USER_TOKEN},alice,1001\n')
    plane = start(workdir, "--token-auth-file", str(tokens), "--authorization-mode", "RBAC")
    kubectl = kubectl_for(plane, tmp_path_factory.mktemp("home"))
    admin = f"--token={ADMIN_TOKEN}"
    kubectl.run("create", "role", "dev", "-n", "default", "--verb=get,list,create",
                "--resource=deployments.apps,pods", admin)
    kubectl.run("create", "rolebinding", "dev", "-n", "default", "--role=dev", "--user=alice", admin)
    yield kubectl
    stopped(plane)


def explain(kubectl: Kubectl, *args: str) -> str:
    done = kubectl.run("explain", *args)
    assert not done.stderr, done.stderr
    return done.stdout


# ---------------------------------------------------------------------------- explain


def test_explain_a_karmada_crd_field(kubectl: Kubectl) -> None:
    out = explain(kubectl, "workloadrebalancer.spec")
    assert "GROUP:      apps.karmada.io\nKIND:       WorkloadRebalancer\nVERSION:    v1alpha1\n" in out
    assert "FIELD: spec <Object>" in out
    assert "workloads\t<[]Object> -required-" in out
    assert "Workloads used to specify the list of expected resource." in out
    assert "ttlSecondsAfterFinished\t<integer>" in out


def test_explain_a_list_field_of_the_preferred_version(kubectl: Kubectl) -> None:
    out = explain(kubectl, "resourcebinding.spec.clusters")
    assert "KIND:       ResourceBinding\nVERSION:    v1alpha2\n" in out
    assert "FIELD: clusters <[]Object>" in out
    assert "name\t<string> -required-" in out
    assert "Name of target cluster." in out


def test_explain_a_builtin_field_shows_kubes_description(kubectl: Kubectl) -> None:
    out = explain(kubectl, "deployment.spec.replicas")
    assert "GROUP:      apps\nKIND:       Deployment\nVERSION:    v1\n" in out
    assert "FIELD: replicas <integer>" in out
    assert "Number of desired pods." in out


def test_explain_a_core_kind(kubectl: Kubectl) -> None:
    out = explain(kubectl, "pods")
    assert out.startswith("KIND:       Pod\nVERSION:    v1\n")
    assert "Pod is a collection of containers that can run on a host." in out
    for field in ("apiVersion\t<string>", "metadata\t<ObjectMeta>", "spec\t<PodSpec>", "status\t<PodStatus>"):
        assert field in out


@pytest.mark.parametrize(("resource", "kind"), [
    ("namespaces", "Namespace"), ("nodes", "Node"), ("configmaps", "ConfigMap"), ("secrets", "Secret"),
    ("services", "Service"), ("statefulsets", "StatefulSet"), ("jobs", "Job"), ("leases", "Lease"),
    ("clusterroles", "ClusterRole"), ("customresourcedefinitions", "CustomResourceDefinition"),
    ("propagationpolicies", "PropagationPolicy"), ("clusterpropagationpolicies", "ClusterPropagationPolicy"),
    ("clusterresourcebindings", "ClusterResourceBinding"), ("works", "Work"), ("clusters", "Cluster"),
    ("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
])
def test_explain_every_served_kind(kubectl: Kubectl, resource: str, kind: str) -> None:
    out = explain(kubectl, resource)
    assert f"KIND:       {kind}\n" in out
    assert "FIELDS:" in out


def test_explain_recursive_walks_the_references(kubectl: Kubectl) -> None:
    out = explain(kubectl, "deployment.spec.template.spec.containers", "--recursive")
    assert "FIELD: containers <[]Container>" in out
    assert "resources\t<ResourceRequirements>" in out
    assert "limits\t<map[string]Quantity>" in out


# ---------------------------------------------------------------------------- version


def test_version_reports_a_server_within_kubectls_skew(kubectl: Kubectl) -> None:
    done = kubectl.run("version")
    assert "WARNING" not in done.stdout + done.stderr
    server = next(line for line in done.stdout.splitlines() if line.startswith("Server Version:"))
    client = next(line for line in done.stdout.splitlines() if line.startswith("Client Version:"))
    server_minor = int(server.split(".")[1])
    client_minor = int(client.split(".")[1])
    assert abs(server_minor - client_minor) <= 1, done.stdout


# ---------------------------------------------------------------------------- auth can-i


def test_can_i_under_always_allow(kubectl: Kubectl) -> None:
    assert kubectl.out("auth", "can-i", "create", "deployments").strip() == "yes"
    assert kubectl.out("auth", "can-i", "delete", "workloadrebalancers").strip() == "yes"
    assert kubectl.out("auth", "can-i", "get", "/metrics").strip() == "yes"


def test_can_i_list_under_always_allow_is_everything(kubectl: Kubectl) -> None:
    rows = [line.split() for line in kubectl.out("auth", "can-i", "--list").splitlines()]
    assert rows[0] == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert ["*.*", "[]", "[]", "[*]"] in rows
    assert ["[*]", "[]", "[*]"] in rows


@pytest.mark.parametrize(("question", "expected"), [
    (("create", "deployments"), "yes"),
    (("list", "pods"), "yes"),
    (("get", "deployments", "-n", "default"), "yes"),
    (("delete", "deployments"), "no"),
    (("list", "pods", "-n", "kube-system"), "no"),
    (("create", "workloadrebalancers"), "no"),
    (("get", "/healthz"), "yes"),
    (("get", "/metrics"), "no"),
])
def test_can_i_under_rbac_answers_as_the_authorizer(rbac_kubectl: Kubectl, question: tuple[str, ...],
                                                    expected: str) -> None:
    done = rbac_kubectl.run("auth", "can-i", *question, f"--token={USER_TOKEN}", ok=False)
    assert done.stdout.strip() == expected, done.stdout + done.stderr
    assert done.returncode == (0 if expected == "yes" else 1)


def test_can_i_agrees_with_what_the_server_then_does(rbac_kubectl: Kubectl) -> None:
    as_user = f"--token={USER_TOKEN}"
    rbac_kubectl.run("create", "deployment", "alice-web", "--image=nginx", "-n", "default", as_user)
    denied = rbac_kubectl.run("delete", "deployment", "alice-web", "-n", "default", as_user, ok=False)
    assert denied.returncode != 0 and "Forbidden" in denied.stderr, denied.stderr
    assert rbac_kubectl.run("auth", "can-i", "delete", "deployments", as_user, ok=False).stdout.strip() == "no"


def test_can_i_list_under_rbac_lists_the_users_rules(rbac_kubectl: Kubectl) -> None:
    rows = [line.split() for line in rbac_kubectl.out("auth", "can-i", "--list", f"--token={USER_TOKEN}").splitlines()]
    assert ["deployments.apps", "[]", "[]", "[get", "list", "create]"] in rows
    assert ["pods", "[]", "[]", "[get", "list", "create]"] in rows
    assert ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"] in rows  # system:basic-user
    assert ["[/healthz]", "[]", "[get]"] in rows  # system:public-info-viewer
    assert not any(row[0] == "*.*" for row in rows)
    elsewhere = rbac_kubectl.out("auth", "can-i", "--list", "-n", "kube-system", f"--token={USER_TOKEN}")
    assert "deployments.apps" not in elsewhere  # the RoleBinding is in "default" only


def test_a_removed_binding_is_answered_at_once(rbac_kubectl: Kubectl) -> None:
    admin, as_user = f"--token={ADMIN_TOKEN}", f"--token={USER_TOKEN}"
    rbac_kubectl.run("create", "role", "reader", "-n", "kube-system", "--verb=get", "--resource=configmaps", admin)
    rbac_kubectl.run("create", "rolebinding", "reader", "-n", "kube-system", "--role=reader", "--user=alice", admin)
    question = ("auth", "can-i", "get", "configmaps", "-n", "kube-system", as_user)
    assert rbac_kubectl.run(*question, ok=False).stdout.strip() == "yes"
    rbac_kubectl.run("delete", "rolebinding", "reader", "-n", "kube-system", admin)
    assert rbac_kubectl.run(*question, ok=False).stdout.strip() == "no"


def test_the_admin_may_do_anything(rbac_kubectl: Kubectl) -> None:
    admin = f"--token={ADMIN_TOKEN}"
    assert rbac_kubectl.out("auth", "can-i", "delete", "clusterrolebindings", admin).strip() == "yes"
    rows = [line.split() for line in rbac_kubectl.out("auth", "can-i", "--list", admin).splitlines()]
    assert ["*.*", "[]", "[]", "[*]"] in rows  # cluster-admin, bound to system:masters
