"""kubectl conformance: the installed kubectl against ``karmada-devplane up`` (issue 16, item 6).

Two parts:

* every ``kubectl``/``karmadactl`` command line of the user's documents (recorded in ``document_commands.txt``),
  run verbatim in a folder holding the documents' files, each checked for its exit code and for
  the effect the document states (``karmadactl`` → ``karmada-devplane ctl``, as README shows);
* a table of common verbs, one parametrized row each, checking exit code AND effect.

Planes (module scope, started once): plane A (``up --members 3 --enable-scheduler-estimator
--cluster-status-update-frequency 1s``, as the demo's Karmada) serves the rebalancer tutorial, the
feature page and the verb table, with the product's ``karmada-controller-manager`` running (the
WorkloadRebalancer, and the binding-status controller that aggregates member status into the
Karmada templates, as in real Karmada); plane B (same flags) serves the descheduler example with
the product's ``karmada-descheduler``. The two documents both use the ``default`` namespace and
member1's nodes, so they cannot share a plane. Each verb row makes its own objects (its own name,
namespace or Node), so rows are independent; every wait polls with a deadline.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import eventually
from tests.devplane.test_kubectl import (
    BIN,
    EXAMPLES,
    HOST,
    Devplane,
    Kubectl,
    devplane_command,
    kubectl_binary,
    start_devplane,
)

pytestmark = pytest.mark.kubectl

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO.parent / "shared" / "seeds"  # the user's documents, beside a developer's checkout (not in the repository)
DOCUMENT_COMMANDS = Path(__file__).with_name("document_commands.txt")  # their command lines, in the repository
MEMBER = "member1"
DEADLINE = 45.0  # seconds for any outcome of the simulation to show
# The demo's Karmada: the scheduler estimator on (the descheduler document's prerequisite) and a
# 1 s cluster status period (Karmada's default is 10 s; the outcomes do not depend on it).
PLANE_FLAGS = ("--enable-scheduler-estimator", "--cluster-status-update-frequency", "1s")  # with 3 members


# ------------------------------------------------------------------------------------------ planes


@dataclass
class Product:
    """One of our product processes, run against a plane."""

    process: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> None:
        assert self.process.poll() is None, f"the product exited {self.process.returncode}:\n{self.log.read_text()}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)


def start_product(name: str, plane: Devplane, *flags: str) -> Product:
    log = plane.log.parent / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(BIN / name), "--kubeconfig", str(plane.kubeconfig_dir / "karmada.config"),
                                    "--leader-elect=false", "--metrics-bind-address=0",
                                    "--health-probe-bind-address=0", *flags],
                                   stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return Product(process, log)


def plane_kubectl(plane: Devplane, home: Path) -> Kubectl:
    kube = plane.kubeconfig_dir
    return Kubectl(kubectl_binary(), {**os.environ, "KUBECONFIG": f"{kube}/karmada.config:{kube}/members.config",
                                      "HOME": str(home), "KUBECACHEDIR": str(home / "cache")})


@pytest.fixture(scope="module")
def plane_a(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Devplane]:
    plane = start_devplane(tmp_path_factory.mktemp("plane-a"), 3, *PLANE_FLAGS)
    yield plane
    assert plane.stop(signal.SIGTERM) == 0, plane.log.read_text()


@pytest.fixture(scope="module")
def controller_manager(plane_a: Devplane) -> Iterator[Product]:
    product = start_product("karmada-controller-manager", plane_a)
    yield product
    product.stop()


@pytest.fixture(scope="module")
def k(plane_a: Devplane, controller_manager: Product, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    """kubectl on plane A (host ``karmada-apiserver``, members ``member1..3``)."""
    return plane_kubectl(plane_a, tmp_path_factory.mktemp("home-a"))


@pytest.fixture(scope="module")
def plane_b(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Devplane]:
    plane = start_devplane(tmp_path_factory.mktemp("plane-b"), 3, *PLANE_FLAGS)
    yield plane
    assert plane.stop(signal.SIGTERM) == 0, plane.log.read_text()


@pytest.fixture(scope="module")
def descheduler(plane_b: Devplane) -> Iterator[Product]:
    # The document's every 2 minutes and 5-minute threshold, shortened as the demo does.
    product = start_product("karmada-descheduler", plane_b, "--descheduling-interval", "2s",
                            "--unschedulable-threshold", "3s")
    yield product
    product.stop()


# ------------------------------------------------------------------------------------------ helpers


def until(description: str, check: Callable[[], object], timeout: float = DEADLINE) -> object:
    """:func:`tests.conftest.eventually`, run from these synchronous tests (kubectl is a blocking subprocess)."""
    return asyncio.run(eventually(check, timeout=timeout, interval=0.2, what=description))


def hold(description: str, check: Callable[[], bool], seconds: float) -> None:
    """``check`` stays true for a bounded observation (the documents' "stays fixed"): a window, not a wait."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert check(), f"{description}: it changed"
        time.sleep(0.2)


def run_line(kubectl: Kubectl, line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A document's command line, verbatim: ``kubectl`` is the installed kubectl, ``karmadactl`` is
    ``karmada-devplane ctl``; same KUBECONFIG as the user exports."""
    argv = shlex.split(line)
    if argv[0] == "kubectl":
        argv[0] = kubectl.binary
    elif argv[0] == "karmadactl":
        argv = [*devplane_command(), "ctl", *argv[1:]]
    else:
        raise AssertionError(f"not a kubectl/karmadactl line: {line}")
    return subprocess.run(argv, cwd=cwd, env=kubectl.env, capture_output=True, text=True, timeout=60, check=False)


def table(text: str) -> list[dict[str, str]]:
    """A kubectl table as rows keyed by header, cut at the header's column starts (cells may be empty,
    headers may hold a space: LAST SEEN)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    starts = [m.start() for m in re.finditer(r"(?:^|(?<=\s{2}))\S", lines[0])]
    ends = [*starts[1:], None]
    header = [lines[0][a:b].strip() for a, b in zip(starts, ends, strict=True)]
    return [{h: line[a:b].strip() for h, a, b in zip(header, starts, ends, strict=True)} for line in lines[1:]]


def obj(kubectl: Kubectl, *args: str, context: str = HOST) -> dict[str, object]:
    return dict(json.loads(kubectl.out("get", *args, "-o", "json", context=context)))


def jsonpath(kubectl: Kubectl, *args: str, path: str, context: str = HOST) -> str:
    return kubectl.out("get", *args, "-o", f"jsonpath={path}", context=context)


def gone(kubectl: Kubectl, *args: str, context: str = HOST) -> bool:
    done = kubectl.run("get", *args, context=context, ok=False)
    return done.returncode != 0 and "NotFound" in done.stderr


# ------------------------------------------------------------------------------------------ the documents

# Every kubectl/karmadactl command line of the seeds, with the seed and section it comes from.
# 000 (Chinese) and 002 (English) are the same Workload Rebalancer tutorial with the same commands;
# 001 (Chinese) and 003 (English) are the feature page, which has YAML but no command line; 004 is
# the descheduler page.
REBALANCER_TUTORIAL = [
    # (seed section, command line)
    ("000/002 Step 1: Create a Deployment", "kubectl --context karmada-apiserver apply -f deployment.yaml"),
    ("000/002 Step 1 (check)", "karmadactl --karmada-context karmada-apiserver get deploy foo"),
    ("000/002 Step 2: add NoExecute taint",
     "karmadactl --karmada-context=karmada-apiserver taint clusters member1 workload-rebalancer-test:NoExecute"),
    ("000/002 Step 2 (check)", "karmadactl --karmada-context karmada-apiserver get deploy foo"),
    ("000/002 Step 2: remove the taint",
     "karmadactl --karmada-context=karmada-apiserver taint clusters member1 workload-rebalancer-test:NoExecute-"),
    ("000/002 Step 3: Apply a WorkloadRebalancer",
     "kubectl --context karmada-apiserver apply -f workload-rebalancer.yaml"),
    ("000/002 Step 4: Check the status", "kubectl --context karmada-apiserver get workloadrebalancer demo -o yaml"),
    ("000/002 Step 5: Observe the real effect", "karmadactl --karmada-context karmada-apiserver get deploy foo"),
    ("000/002 Step 5 (events)", "kubectl --context karmada-apiserver describe deployment foo"),
    # Step 6 says "edit it and set spec.ttlSecondsAfterFinished to 300" and gives the YAML, no command:
    # the user applies the edited file again.
    ("000/002 Step 6: Update and auto-clean (implied)",
     "kubectl --context karmada-apiserver apply -f workload-rebalancer.yaml"),
]
DESCHEDULER_EXAMPLE = [
    ("004 Prerequisites: check member clusters joined", "kubectl get cluster"),
    ("004 Example: create the deployment (YAML only; implied)",
     "kubectl --context karmada-apiserver apply -f nginx.yaml"),
    ("004 Example: cordon member1's node", "kubectl --context member1 cordon member1-control-plane"),
    ("004 Example: delete the pod in member1", "kubectl --context member1 delete pod -l app=nginx"),
    ("004 Example: the pod in member1 is pending", "kubectl --context member1 get pod"),
    ("004 Example: after the descheduler, member1", "kubectl --context member1 get pod"),
    ("004 Example: after the descheduler, member2", "kubectl --context member2 get pod"),
]
# Lines that cannot run on the dev plane, with why and what stands for them.
NOT_RUNNABLE = [
    ("004 Prerequisites: estimators", "kubectl --context karmada-host -n karmada-system get pod | grep estimator",
     "no karmada-host cluster: the scheduler estimator runs inside `karmada-devplane up "
     "--enable-scheduler-estimator` (this module's planes), not as pods"),
    ("004 Scheduler option", "kubectl --context karmada-host -n karmada-system edit deployments.apps "
                             "karmada-scheduler",
     "interactive edit of a karmada-host Deployment: the equivalent is `up --enable-scheduler-estimator`, "
     "which this module's planes use"),
    ("004 Descheduler installed", "kubectl --context karmada-host -n karmada-system get pod | grep "
                                  "karmada-descheduler",
     "no karmada-host cluster: the descheduler runs as the process `karmada-descheduler` (the `descheduler` "
     "fixture checks it stays alive)"),
]


@pytest.mark.parametrize(("section", "line", "reason"), NOT_RUNNABLE, ids=[s for s, _l, _r in NOT_RUNNABLE])
def test_document_line_not_runnable_here(section: str, line: str, reason: str) -> None:
    pytest.skip(f"{section}: `{line}`: {reason}")


def documents_dir(tmp_path: Path, *names: str) -> Path:
    for name in names:
        (tmp_path / name).write_text((EXAMPLES / name).read_text())
    return tmp_path


def seed_command_lines() -> set[str]:
    """The kubectl/karmadactl lines of the documents, as DOCUMENT_COMMANDS records them."""
    lines = (line.strip() for line in DOCUMENT_COMMANDS.read_text().splitlines())
    return {line for line in lines if line and not line.startswith("#")}


def test_document_lists_are_complete() -> None:
    """The lists above hold every kubectl/karmadactl line of the documents (prompt and pipes aside)."""
    listed = {line for _s, line in REBALANCER_TUTORIAL + DESCHEDULER_EXAMPLE} | {line for _s, line, _r in NOT_RUNNABLE}
    implied = {"kubectl --context karmada-apiserver apply -f nginx.yaml"}
    assert seed_command_lines() == listed - implied


def test_document_commands_match_the_documents() -> None:
    """DOCUMENT_COMMANDS is what the documents hold, when they are beside the checkout."""
    if not SEEDS.is_dir():
        pytest.skip(f"{SEEDS} is not here")
    found = set()
    for seed in sorted(SEEDS.glob("*.txt")):
        for raw in seed.read_text().splitlines():
            line = raw.strip().removeprefix("$ ")
            if re.match(r"(kubectl|karmadactl) ", line):
                found.add(line)
    assert found == seed_command_lines()


def karmadactl_rows(kubectl: Kubectl, cwd: Path, line: str) -> dict[str, dict[str, str]]:
    done = run_line(kubectl, line, cwd)
    assert done.returncode == 0, done.stderr
    return {row["CLUSTER"]: row for row in table(done.stdout)}


@pytest.mark.slow
def test_rebalancer_tutorial(k: Kubectl, controller_manager: Product, tmp_path: Path) -> None:
    cwd = documents_dir(tmp_path, "deployment.yaml", "workload-rebalancer.yaml")
    steps = iter(REBALANCER_TUTORIAL)

    def line() -> str:
        return next(steps)[1]

    def ready(want: dict[str, str]) -> Callable[[], bool]:
        def check() -> bool:
            rows = karmadactl_rows(k, cwd, get_deploy)
            shown = {cluster: row["READY"] for cluster, row in rows.items()}
            if shown != want:
                return False
            for row in rows.values():  # NAME CLUSTER READY UP-TO-DATE AVAILABLE AGE ADOPTION
                n = row["READY"].split("/")[0]
                assert (row["NAME"], row["UP-TO-DATE"], row["AVAILABLE"], row["ADOPTION"]) == ("foo", n, n, "Y")
            return True
        return check

    # Step 1
    done = run_line(k, line(), cwd)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["deployment.apps/foo created",
                                        "propagationpolicy.policy.karmada.io/default-pp created"]
    get_deploy = line()
    until("step 1: foo 2/2 in member1 and 1/1 in member2", ready({"member1": "2/2", "member2": "1/1"}))
    # Step 2
    done = run_line(k, line(), cwd)
    assert (done.returncode, done.stdout.strip()) == (0, "cluster/member1 tainted"), done.stderr
    assert line() == get_deploy
    until("step 2: all 3 replicas in member2", ready({"member2": "3/3"}))
    done = run_line(k, line(), cwd)
    assert (done.returncode, done.stdout.strip()) == (0, "cluster/member1 untainted"), done.stderr
    hold("step 2: replicas stay in member2 after the taint is removed", ready({"member2": "3/3"}), seconds=2.0)
    # Step 3
    done = run_line(k, line(), cwd)
    assert (done.returncode, done.stdout.strip()) == (0, "workloadrebalancer.apps.karmada.io/demo created")
    # Step 4: the status the document shows, modulo times.
    status_line = line()

    def finished() -> dict[str, object] | None:
        done = run_line(k, status_line, cwd)
        assert done.returncode == 0, done.stderr
        shown = yaml.safe_load(done.stdout)
        return shown if (shown.get("status") or {}).get("finishTime") else None

    shown = until("step 4: the rebalancer finished", finished)
    assert isinstance(shown, dict)
    metadata, status = shown["metadata"], shown["status"]
    assert shown["apiVersion"] == "apps.karmada.io/v1alpha1" and shown["kind"] == "WorkloadRebalancer"
    assert (metadata["name"], metadata["generation"]) == ("demo", 1)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", metadata["creationTimestamp"])
    assert shown["spec"] == {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo",
                                            "namespace": "default"}]}
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", status.pop("finishTime"))
    assert status == {"observedGeneration": 1, "observedWorkloads": [
        {"result": "Successful",
         "workload": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo", "namespace": "default"}}]}
    # Step 5
    assert line() == get_deploy
    until("step 5: 2 replicas back in member1, 1 in member2", ready({"member1": "2/2", "member2": "1/1"}))
    describe = line()

    def events_shown() -> bool:
        done = run_line(k, describe, cwd)
        assert done.returncode == 0, done.stderr
        events = done.stdout.split("\nEvents:", 1)[1]
        scheduled = re.search(r"Normal\s+ScheduleBindingSucceed\s+.*default-scheduler\s+Binding has been scheduled "
                              r"successfully\. Result: \{member1:2, member2:1\}", events)
        # The message text (current Karmada's, not v1.10's) is checked by test_rebalancer_tutorial_aggregate_message.
        aggregated = re.search(r"Normal\s+AggregateStatusSucceed\s+.*resource-binding-status-controller\s+Update ",
                               events)
        assert scheduled and aggregated, events
        return True

    until("step 5: describe shows ScheduleBindingSucceed and AggregateStatusSucceed", events_shown)
    # Step 6: the document's edited file, applied again.
    (cwd / "workload-rebalancer.yaml").write_text((EXAMPLES / "workload-rebalancer-ttl.yaml").read_text())
    done = run_line(k, line(), cwd)
    assert (done.returncode, done.stdout.strip()) == (0, "workloadrebalancer.apps.karmada.io/demo configured")
    assert jsonpath(k, "workloadrebalancer", "demo", path="{.spec.ttlSecondsAfterFinished}") == "300"
    # "auto deleted after 300 seconds": not waited for here; the TTL itself is the ttl-clean-up row's.
    assert not gone(k, "workloadrebalancer", "demo")
    assert next(steps, None) is None
    controller_manager.alive()


@pytest.mark.slow  # reads what the slow test_rebalancer_tutorial left on the plane: deselected with it
def test_rebalancer_tutorial_aggregate_message(k: Kubectl) -> None:
    """Step 5's AggregateStatusSucceed line on the Deployment, as current Karmada words it.

    The tutorial was written against Karmada v1.10, whose binding-status controller recorded the binding's
    message ("Update resourceBinding(default/foo-deployment) with AggregatedStatus successfully.") on the
    template too. Karmada at f8fdd02, which the product follows, records "Update ResourceBinding(...)" on the
    binding and "Update Resource with AggregatedStatus successfully." on the template: this test follows
    Karmada, and docs/compatibility.md says so. Runs after test_rebalancer_tutorial, on the same plane.
    """
    until("the tutorial's deployment foo has events", lambda: "AggregateStatusSucceed" in k.out(
        "describe", "deployment", "foo"), timeout=5)
    events = k.out("describe", "deployment", "foo").split("\nEvents:", 1)[1]
    assert re.search(r"AggregateStatusSucceed\s+.*resource-binding-status-controller\s+"
                     r"Update Resource with AggregatedStatus successfully\.", events), events
    binding_events = k.out("describe", "resourcebinding", "foo-deployment", "-n", "default").split("\nEvents:", 1)[1]
    assert "Update ResourceBinding(default/foo-deployment) with AggregatedStatus successfully." in binding_events


def test_rebalancer_ttl_cleans_up(k: Kubectl) -> None:
    """Step 6's effect with a short TTL (the document's 300 s would outlast CI's budget)."""
    text = (EXAMPLES / "workload-rebalancer-ttl.yaml").read_text()
    text = text.replace("name: demo", "name: ttl-demo").replace("ttlSecondsAfterFinished: 300",
                                                                "ttlSecondsAfterFinished: 1")
    assert k.out("apply", "-f", "-", stdin=text).strip() == "workloadrebalancer.apps.karmada.io/ttl-demo created"
    until("the finished rebalancer is deleted after its TTL", lambda: gone(k, "workloadrebalancer", "ttl-demo"))


def test_feature_page_referenced_binding_not_found(k: Kubectl) -> None:
    """001/003 "Reschedule a workload": with no binding for deployments/demo-deploy, the result is
    Failed/ReferencedBindingNotFound. (Renamed from ``demo``, which the tutorial uses.)"""
    manifest = {"apiVersion": "apps.karmada.io/v1alpha1", "kind": "WorkloadRebalancer",
                "metadata": {"name": "feature-demo"},
                "spec": {"workloads": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo-deploy",
                                        "namespace": "default"}]}}
    k.run("apply", "-f", "-", stdin=yaml.safe_dump(manifest))

    def finished() -> dict[str, object] | None:
        status = obj(k, "workloadrebalancer", "feature-demo").get("status") or {}
        assert isinstance(status, dict)
        return status if status.get("finishTime") else None

    status = until("the feature page's rebalancer finished", finished)
    assert isinstance(status, dict)
    assert status["observedGeneration"] == 1
    assert status["observedWorkloads"] == [
        {"reason": "ReferencedBindingNotFound", "result": "Failed",
         "workload": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "demo-deploy", "namespace": "default"}}]


@pytest.mark.slow
def test_descheduler_example(plane_b: Devplane, descheduler: Product, tmp_path: Path) -> None:
    kb = plane_kubectl(plane_b, tmp_path / "home")
    cwd = documents_dir(tmp_path, "nginx.yaml")
    steps = iter(DESCHEDULER_EXAMPLE)

    def line() -> str:
        return next(steps)[1]

    def pods(command: str) -> Callable[[], list[dict[str, str]]]:
        def rows() -> list[dict[str, str]]:
            done = run_line(kb, command, cwd)
            assert done.returncode == 0, done.stderr
            return table(done.stdout)
        return rows

    # Prerequisites: the document's member3 is Pull mode; the dev plane registers every member in Push.
    clusters = line()

    def joined() -> bool:
        done = run_line(kb, clusters, cwd)
        assert done.returncode == 0, done.stderr
        rows = table(done.stdout)
        assert [r["NAME"] for r in rows] == ["member1", "member2", "member3"]
        assert all(re.fullmatch(r"v\d+\.\d+\.\d+", r["VERSION"]) and r["MODE"] == "Push" for r in rows)
        return all(r["READY"] == "True" for r in rows)

    until("every member joined and Ready", joined)
    done = run_line(kb, line(), cwd)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["propagationpolicy.policy.karmada.io/nginx-propagation created",
                                        "deployment.apps/nginx created"]

    def one_running_in(member: str) -> bool:
        rows = pods(f"kubectl --context {member} get pod")()
        return [r["STATUS"] for r in rows] == ["Running"] and rows[0]["NAME"].startswith("nginx-")

    for member in ("member1", "member2", "member3"):
        until(f"one nginx replica running in {member}", lambda m=member: one_running_in(m))
    done = run_line(kb, line(), cwd)
    assert (done.returncode, done.stdout.strip()) == (0, "node/member1-control-plane cordoned"), done.stderr
    old = pods("kubectl --context member1 get pod")()[0]["NAME"]
    done = run_line(kb, line(), cwd)
    assert (done.returncode, done.stdout.strip()) == (0, f'pod "{old}" deleted from default namespace'), done.stderr
    pending = pods(line())
    until("a new nginx pod in member1 is Pending",
          lambda: [(r["NAME"] != old, r["STATUS"]) for r in pending()] == [(True, "Pending")])
    # "After about 5 to 7 minutes" (2 min interval, 5 min threshold): seconds with the shortened flags.
    member1 = line()

    def member1_empty() -> bool:
        done = run_line(kb, member1, cwd)
        assert done.returncode == 0, done.stderr
        return done.stdout == "" and done.stderr.strip() == "No resources found in default namespace."

    until("member1 has no pod left", member1_empty)
    member2 = pods(line())
    until("two nginx pods Running in member2",
          lambda: [(r["NAME"][:6], r["READY"], r["STATUS"]) for r in member2()] == [("nginx-", "1/1", "Running")] * 2)
    assert next(steps, None) is None
    descheduler.alive()


# ------------------------------------------------------------------------------------------ verbs


@dataclass
class Ctx:
    """What a row works with: kubectl on plane A, its own namespace on the host and on member1."""

    k: Kubectl
    ns: str
    tmp: Path

    def m(self, *args: str, stdin: str | None = None) -> str:
        return self.k.out(*args, context=MEMBER, stdin=stdin)


ROWS: dict[str, Callable[[Ctx], None]] = {}
XFAIL: dict[str, str] = {}
SLOW: set[str] = set()  # rows that wait on the simulation for more than about 2 s


def row(name: str, xfail: str = "", slow: bool = False) -> Callable[[Callable[[Ctx], None]], Callable[[Ctx], None]]:
    def register(fn: Callable[[Ctx], None]) -> Callable[[Ctx], None]:
        ROWS[name] = fn
        if xfail:
            XFAIL[name] = xfail
        if slow:
            SLOW.add(name)
        return fn
    return register


def served(c: Ctx, resource: str, context: str = HOST) -> bool:
    return resource in {name.split(".")[0] for name in c.k.out("api-resources", "-o", "name", context=context).split()}


def decode(value: str) -> str:
    return base64.b64decode(value).decode()


# ---- create <kind>


@row("create namespace")
def _(c: Ctx) -> None:
    name = f"{c.ns}-created"
    assert c.k.out("create", "namespace", name).strip() == f"namespace/{name} created"
    assert jsonpath(c.k, "namespace", name, path="{.status.phase}") == "Active"


@row("create configmap")
def _(c: Ctx) -> None:
    (c.tmp / "key.txt").write_text("from a file\n")
    out = c.k.out("create", "configmap", "cm", "-n", c.ns, "--from-literal=a=b", f"--from-file=key={c.tmp}/key.txt")
    assert out.strip() == "configmap/cm created"
    assert obj(c.k, "configmap", "cm", "-n", c.ns)["data"] == {"a": "b", "key": "from a file\n"}


@row("create secret generic")
def _(c: Ctx) -> None:
    assert c.k.out("create", "secret", "generic", "s", "-n", c.ns, "--from-literal=password=hunter2").strip() == \
        "secret/s created"
    secret = obj(c.k, "secret", "s", "-n", c.ns)
    assert secret["type"] == "Opaque"
    assert isinstance(secret["data"], dict) and decode(secret["data"]["password"]) == "hunter2"


@row("create secret tls")
def _(c: Ctx) -> None:
    # openssl, as the dev API server itself uses for its self-signed serving certificate (devplane/apiserver/tls.py)
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command: no certificate to give kubectl")
    subprocess.run([openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(c.tmp / "tls.key"), "-out", str(c.tmp / "tls.crt"), "-days", "1",
                    "-subj", "/CN=conformance.example"], check=True, capture_output=True, timeout=30)
    crt, pem = (c.tmp / "tls.crt").read_text(), (c.tmp / "tls.key").read_text()
    assert c.k.out("create", "secret", "tls", "t", "-n", c.ns, f"--cert={c.tmp}/tls.crt",
                   f"--key={c.tmp}/tls.key").strip() == "secret/t created"
    secret = obj(c.k, "secret", "t", "-n", c.ns)
    assert secret["type"] == "kubernetes.io/tls"
    assert isinstance(secret["data"], dict)
    assert (decode(secret["data"]["tls.crt"]), decode(secret["data"]["tls.key"])) == (crt, pem)


@row("create secret docker-registry")
def _(c: Ctx) -> None:
    assert c.k.out("create", "secret", "docker-registry", "d", "-n", c.ns, "--docker-server=registry.example",
                   "--docker-username=u", "--docker-password=p", "--docker-email=u@example.com").strip() == \
        "secret/d created"
    secret = obj(c.k, "secret", "d", "-n", c.ns)
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    assert isinstance(secret["data"], dict)
    config = json.loads(decode(secret["data"][".dockerconfigjson"]))
    assert config == {"auths": {"registry.example": {"username": "u", "password": "p", "email": "u@example.com",
                                                     "auth": base64.b64encode(b"u:p").decode()}}}


@row("create deployment")
def _(c: Ctx) -> None:
    assert c.k.out("create", "deployment", "web", "-n", c.ns, "--image=nginx:1.27", "--replicas=2",
                   "--port=80").strip() == "deployment.apps/web created"
    d = obj(c.k, "deployment", "web", "-n", c.ns)
    spec = d["spec"]
    assert isinstance(spec, dict)
    assert spec["replicas"] == 2 and spec["selector"] == {"matchLabels": {"app": "web"}}
    assert spec["template"]["metadata"]["labels"] == {"app": "web"}
    [container] = spec["template"]["spec"]["containers"]
    assert (container["name"], container["image"], container["ports"]) == (
        "nginx", "nginx:1.27", [{"containerPort": 80, "protocol": "TCP"}])
    assert spec["strategy"]["type"] == "RollingUpdate"  # API defaulting


@row("create serviceaccount")
def _(c: Ctx) -> None:
    assert c.k.out("create", "serviceaccount", "robot", "-n", c.ns).strip() == "serviceaccount/robot created"
    assert jsonpath(c.k, "serviceaccount", "robot", "-n", c.ns, path="{.metadata.name}") == "robot"


@row("create role")
def _(c: Ctx) -> None:
    assert c.k.out("create", "role", "reader", "-n", c.ns, "--verb=get,list",
                   "--resource=pods,deployments.apps").strip() == "role.rbac.authorization.k8s.io/reader created"
    assert obj(c.k, "role", "reader", "-n", c.ns)["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list"]}]


@row("create rolebinding")
def _(c: Ctx) -> None:
    assert c.k.out("create", "rolebinding", "rb", "-n", c.ns, "--role=reader", "--user=bob",
                   f"--serviceaccount={c.ns}:robot").strip() == "rolebinding.rbac.authorization.k8s.io/rb created"
    binding = obj(c.k, "rolebinding", "rb", "-n", c.ns)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"},
                                   {"kind": "ServiceAccount", "name": "robot", "namespace": c.ns}]


@row("create clusterrole")
def _(c: Ctx) -> None:
    name = f"{c.ns}-nodes"
    assert c.k.out("create", "clusterrole", name, "--verb=get,watch", "--resource=nodes").strip() == \
        f"clusterrole.rbac.authorization.k8s.io/{name} created"
    assert obj(c.k, "clusterrole", name)["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "watch"]}]


@row("create clusterrolebinding")
def _(c: Ctx) -> None:
    name = f"{c.ns}-crb"
    assert c.k.out("create", "clusterrolebinding", name, "--clusterrole=view", "--group=devs").strip() == \
        f"clusterrolebinding.rbac.authorization.k8s.io/{name} created"
    binding = obj(c.k, "clusterrolebinding", name)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}]


@row("create service clusterip")
def _(c: Ctx) -> None:
    if not served(c, "services"):
        pytest.skip("services are not served")
    assert c.k.out("create", "service", "clusterip", "svc", "-n", c.ns, "--tcp=80:8080").strip() == \
        "service/svc created"
    spec = obj(c.k, "service", "svc", "-n", c.ns)["spec"]
    assert isinstance(spec, dict)
    assert spec["type"] == "ClusterIP" and spec["selector"] == {"app": "svc"}
    assert spec["ports"] == [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}]


@row("create service clusterip: a cluster IP is allocated")
def _(c: Ctx) -> None:
    c.k.run("create", "service", "clusterip", "ip", "-n", c.ns, "--tcp=80:8080")
    spec = obj(c.k, "service", "ip", "-n", c.ns)["spec"]
    assert isinstance(spec, dict)
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", str(spec.get("clusterIP"))), spec
    assert spec.get("clusterIPs") == [spec["clusterIP"]]
    assert spec.get("ipFamilies") == ["IPv4"] and spec.get("ipFamilyPolicy") == "SingleStack"
    assert spec.get("internalTrafficPolicy") == "Cluster"


def _create_batch(c: Ctx, resource: str, args: tuple[str, ...], check: Callable[[dict[str, object]], None]) -> None:
    done = c.k.run("create", *args, ok=False)
    if not served(c, resource):
        assert done.returncode != 0 and resource in done.stderr, done.stderr
        pytest.skip(f"{resource} are not served: kubectl said {done.stderr.strip()!r}")
    assert done.returncode == 0, done.stderr
    check(obj(c.k, resource, args[1], "-n", c.ns))


@row("create job")
def _(c: Ctx) -> None:
    def check(job: dict[str, object]) -> None:
        spec = job["spec"]
        assert isinstance(spec, dict)
        [container] = spec["template"]["spec"]["containers"]
        assert (container["image"], container["command"]) == ("busybox", ["echo", "hi"])
        assert spec["template"]["spec"]["restartPolicy"] == "Never"

    _create_batch(c, "jobs", ("job", "once", "-n", c.ns, "--image=busybox", "--", "echo", "hi"), check)


@row("create cronjob")
def _(c: Ctx) -> None:
    def check(cronjob: dict[str, object]) -> None:
        spec = cronjob["spec"]
        assert isinstance(spec, dict)
        assert spec["schedule"] == "*/5 * * * *"
        [container] = spec["jobTemplate"]["spec"]["template"]["spec"]["containers"]
        assert (container["image"], container["command"]) == ("busybox", ["date"])

    _create_batch(c, "cronjobs", ("cronjob", "often", "-n", c.ns, "--image=busybox", "--schedule=*/5 * * * *",
                                  "--", "date"), check)


# ---- get, describe, explain


def _configmap(c: Ctx, name: str, **data: str) -> None:
    c.k.run("create", "configmap", name, "-n", c.ns, *(f"--from-literal={key}={value}" for key, value in data.items()))


@row("get -o wide")
def _(c: Ctx) -> None:
    c.k.run("create", "deployment", "wide", "-n", c.ns, "--image=nginx:1.27")
    [shown] = table(c.k.out("get", "deployment", "wide", "-n", c.ns, "-o", "wide"))
    assert (shown["NAME"], shown["CONTAINERS"], shown["IMAGES"], shown["SELECTOR"]) == (
        "wide", "nginx", "nginx:1.27", "app=wide")
    [narrow] = table(c.k.out("get", "deployment", "wide", "-n", c.ns))
    assert "CONTAINERS" not in narrow and "SELECTOR" not in narrow, narrow
    # A member's pods are bound and addressed by its kubelet: -o wide shows IP and NODE.
    c.m("create", "deployment", "widepod", "-n", c.ns, "--image=nginx:1.27")
    c.k.run("rollout", "status", "deployment/widepod", "-n", c.ns, "--timeout=30s", context=MEMBER)
    [pod] = table(c.m("get", "pods", "-n", c.ns, "-l", "app=widepod", "-o", "wide"))
    assert re.fullmatch(r"\d+\.\d+\.\d+\.\d+", pod["IP"]), pod
    assert pod["NODE"].startswith(MEMBER), pod
    assert (pod["NOMINATED NODE"], pod["READINESS GATES"]) == ("<none>", "<none>"), pod


@row("get -o yaml")
def _(c: Ctx) -> None:
    _configmap(c, "y", a="1")
    shown = yaml.safe_load(c.k.out("get", "configmap", "y", "-n", c.ns, "-o", "yaml"))
    assert (shown["apiVersion"], shown["kind"], shown["metadata"]["name"], shown["metadata"]["namespace"],
            shown["data"]) == ("v1", "ConfigMap", "y", c.ns, {"a": "1"})


@row("get -o json")
def _(c: Ctx) -> None:
    _configmap(c, "j", a="1")
    c.k.run("label", "configmap", "j", "-n", c.ns, "picked=yes")
    shown = json.loads(c.k.out("get", "configmaps", "-n", c.ns, "-l", "picked=yes", "-o", "json"))
    assert shown["kind"] == "List"
    assert [(i["kind"], i["metadata"]["name"], i["data"]) for i in shown["items"]] == [("ConfigMap", "j", {"a": "1"})]


@row("get -o jsonpath")
def _(c: Ctx) -> None:
    _configmap(c, "p1", a="1")
    _configmap(c, "p2", a="2")
    assert c.k.out("get", "configmap", "p1", "-n", c.ns, "-o", "jsonpath={.data.a}") == "1"
    assert c.k.out("get", "configmaps", "p1", "p2", "-n", c.ns, "-o",
                   "jsonpath={range .items[*]}{.metadata.name}={.data.a} {end}") == "p1=1 p2=2 "


@row("describe")
def _(c: Ctx) -> None:
    _configmap(c, "described", greeting="hello")
    c.k.run("label", "configmap", "described", "-n", c.ns, "tier=web")
    out = c.k.out("describe", "configmap", "described", "-n", c.ns)
    assert re.search(r"^Name:\s+described$", out, re.M), out
    assert re.search(rf"^Namespace:\s+{c.ns}$", out, re.M)
    assert re.search(r"^Labels:\s+tier=web$", out, re.M)
    assert re.search(r"^greeting:\n----\nhello$", out, re.M), out


@row("explain")
def _(c: Ctx) -> None:
    out = c.k.out("explain", "deployment.spec.replicas")
    assert re.search(r"^GROUP:\s+apps$", out, re.M) and re.search(r"^FIELD: replicas <integer>$", out, re.M), out
    out = c.k.out("explain", "workloadrebalancers.spec.ttlSecondsAfterFinished")
    assert re.search(r"^GROUP:\s+apps\.karmada\.io$", out, re.M), out
    assert re.search(r"^FIELD: ttlSecondsAfterFinished <integer>$", out, re.M), out


# ---- scale, label, annotate


@row("scale")
def _(c: Ctx) -> None:
    c.k.run("create", "deployment", "scaled", "-n", c.ns, "--image=nginx", "--replicas=1")
    assert c.k.out("scale", "deployment", "scaled", "-n", c.ns, "--replicas=4").strip() == \
        "deployment.apps/scaled scaled"
    assert jsonpath(c.k, "deployment", "scaled", "-n", c.ns, path="{.spec.replicas}") == "4"
    wrong = c.k.run("scale", "deployment", "scaled", "-n", c.ns, "--current-replicas=1", "--replicas=2", ok=False)
    assert wrong.returncode != 0 and "Expected replicas to be 1, was 4" in wrong.stderr, wrong.stderr
    assert jsonpath(c.k, "deployment", "scaled", "-n", c.ns, path="{.spec.replicas}") == "4"


@row("label")
def _(c: Ctx) -> None:
    _configmap(c, "labeled")
    assert c.k.out("label", "configmap", "labeled", "-n", c.ns, "tier=web").strip() == "configmap/labeled labeled"
    refused = c.k.run("label", "configmap", "labeled", "-n", c.ns, "tier=db", ok=False)
    assert refused.returncode != 0 and "'tier' already has a value (web)" in refused.stderr, refused.stderr
    c.k.run("label", "configmap", "labeled", "-n", c.ns, "tier=db", "--overwrite")
    assert c.k.out("get", "configmaps", "-n", c.ns, "-l", "tier=db", "-o", "name").split() == ["configmap/labeled"]
    assert c.k.out("label", "configmap", "labeled", "-n", c.ns, "tier-").strip() == "configmap/labeled unlabeled"
    assert "tier" not in (obj(c.k, "configmap", "labeled", "-n", c.ns)["metadata"].get("labels") or {})  # type: ignore[union-attr]


@row("annotate")
def _(c: Ctx) -> None:
    _configmap(c, "noted")
    assert c.k.out("annotate", "configmap", "noted", "-n", c.ns, "owner=team-a").strip() == \
        "configmap/noted annotated"
    assert jsonpath(c.k, "configmap", "noted", "-n", c.ns, path="{.metadata.annotations.owner}") == "team-a"
    refused = c.k.run("annotate", "configmap", "noted", "-n", c.ns, "owner=team-b", ok=False)
    assert refused.returncode != 0 and "already has a value (team-a)" in refused.stderr, refused.stderr
    c.k.run("annotate", "configmap", "noted", "-n", c.ns, "owner-")
    assert "owner" not in (obj(c.k, "configmap", "noted", "-n", c.ns)["metadata"].get("annotations") or {})  # type: ignore[union-attr]


@row("label, annotate: removing the last one leaves no empty map")  # ObjectMeta's omitempty, as kube
def _(c: Ctx) -> None:
    _configmap(c, "emptied")
    c.k.run("label", "configmap", "emptied", "-n", c.ns, "tier=web")
    c.k.run("annotate", "configmap", "emptied", "-n", c.ns, "owner=team-a")
    c.k.run("label", "configmap", "emptied", "-n", c.ns, "tier-")
    c.k.run("annotate", "configmap", "emptied", "-n", c.ns, "owner-")
    metadata = obj(c.k, "configmap", "emptied", "-n", c.ns)["metadata"]
    assert isinstance(metadata, dict)
    assert "labels" not in metadata and "annotations" not in metadata, metadata


# ---- patch


@row("patch --type merge")
def _(c: Ctx) -> None:
    _configmap(c, "merged", a="1", b="2")
    assert c.k.out("patch", "configmap", "merged", "-n", c.ns, "--type", "merge",
                   "-p", '{"data":{"a":"9","b":null,"c":"3"}}').strip() == "configmap/merged patched"
    assert obj(c.k, "configmap", "merged", "-n", c.ns)["data"] == {"a": "9", "c": "3"}


@row("patch --type json")
def _(c: Ctx) -> None:
    _configmap(c, "jsoned", a="1")
    assert c.k.out("patch", "configmap", "jsoned", "-n", c.ns, "--type", "json", "-p",
                   '[{"op":"test","path":"/data/a","value":"1"},{"op":"add","path":"/data/b","value":"2"},'
                   '{"op":"remove","path":"/data/a"}]').strip() == "configmap/jsoned patched"
    assert obj(c.k, "configmap", "jsoned", "-n", c.ns)["data"] == {"b": "2"}
    failed = c.k.run("patch", "configmap", "jsoned", "-n", c.ns, "--type", "json",
                     "-p", '[{"op":"test","path":"/data/b","value":"nope"},{"op":"add","path":"/data/z","value":"1"}]',
                     ok=False)
    assert failed.returncode != 0, failed.stdout
    assert obj(c.k, "configmap", "jsoned", "-n", c.ns)["data"] == {"b": "2"}  # all or nothing


@row("patch --type strategic")
def _(c: Ctx) -> None:
    c.k.run("create", "deployment", "sm", "-n", c.ns, "--image=nginx:1.25")
    assert c.k.out("patch", "deployment", "sm", "-n", c.ns, "--type", "strategic", "-p",
                   '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.27"},'
                   '{"name":"sidecar","image":"busybox"}]}}}}').strip() == "deployment.apps/sm patched"
    containers = obj(c.k, "deployment", "sm", "-n", c.ns)["spec"]["template"]["spec"]["containers"]  # type: ignore[index]
    assert [(x["name"], x["image"]) for x in containers] == [("nginx", "nginx:1.27"), ("sidecar", "busybox")]
    assert containers[0]["terminationMessagePath"] == "/dev/termination-log"  # merged by name: defaults kept


# ---- apply, diff


def _cm_yaml(ns: str, name: str, **data: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
                           "data": data})


@row("apply (client-side)")
def _(c: Ctx) -> None:
    manifest = c.tmp / "cm.yaml"
    manifest.write_text(_cm_yaml(c.ns, "applied", a="1", b="2"))
    assert c.k.out("apply", "-f", str(manifest)).strip() == "configmap/applied created"
    stored = obj(c.k, "configmap", "applied", "-n", c.ns)
    assert isinstance(stored["metadata"], dict)
    assert "kubectl.kubernetes.io/last-applied-configuration" in stored["metadata"]["annotations"]
    c.k.run("patch", "configmap", "applied", "-n", c.ns, "--type", "merge", "-p", '{"data":{"other":"kept"}}')
    manifest.write_text(_cm_yaml(c.ns, "applied", a="9"))  # b dropped from the file: pruned by the 3-way merge
    assert c.k.out("apply", "-f", str(manifest)).strip() == "configmap/applied configured"
    assert obj(c.k, "configmap", "applied", "-n", c.ns)["data"] == {"a": "9", "other": "kept"}
    assert c.k.out("apply", "-f", str(manifest)).strip() == "configmap/applied unchanged"


@row("apply --server-side")
def _(c: Ctx) -> None:
    manifest = c.tmp / "cm.yaml"
    manifest.write_text(_cm_yaml(c.ns, "ssa", a="1"))
    assert c.k.out("apply", "--server-side", "-f", str(manifest)).strip() == "configmap/ssa serverside-applied"
    manifest.write_text(_cm_yaml(c.ns, "ssa", a="2", b="3"))
    assert c.k.out("apply", "--server-side", "-f", str(manifest)).strip() == "configmap/ssa serverside-applied"
    assert obj(c.k, "configmap", "ssa", "-n", c.ns)["data"] == {"a": "2", "b": "3"}
    # (managedFields are not kept by the dev API server: docs/apiserver.md lists it; not asserted.)


@row("diff (client-side)")
def _(c: Ctx) -> None:
    manifest = c.tmp / "cm.yaml"
    manifest.write_text(_cm_yaml(c.ns, "diffed", a="1"))
    c.k.run("apply", "-f", str(manifest))
    same = c.k.run("diff", "-f", str(manifest), ok=False)
    assert (same.returncode, same.stdout) == (0, ""), same.stderr
    manifest.write_text(_cm_yaml(c.ns, "diffed", a="2"))
    different = c.k.run("diff", "-f", str(manifest), ok=False)
    assert different.returncode == 1, different.stderr
    assert '-  a: "1"' in different.stdout and '+  a: "2"' in different.stdout, different.stdout
    assert obj(c.k, "configmap", "diffed", "-n", c.ns)["data"] == {"a": "1"}  # diff changes nothing


@row("diff --server-side")
def _(c: Ctx) -> None:
    manifest = c.tmp / "cm.yaml"
    manifest.write_text(_cm_yaml(c.ns, "ssdiff", a="1"))
    c.k.run("apply", "--server-side", "-f", str(manifest))
    version = jsonpath(c.k, "configmap", "ssdiff", "-n", c.ns, path="{.metadata.resourceVersion}")
    same = c.k.run("diff", "--server-side", "-f", str(manifest), ok=False)
    assert (same.returncode, same.stdout) == (0, ""), same.stdout + same.stderr
    manifest.write_text(_cm_yaml(c.ns, "ssdiff", a="2"))
    different = c.k.run("diff", "--server-side", "-f", str(manifest), ok=False)
    assert different.returncode == 1, different.stderr
    assert '-  a: "1"' in different.stdout and '+  a: "2"' in different.stdout, different.stdout
    # A server-side dry run (dryRun=All) stores nothing.
    stored = obj(c.k, "configmap", "ssdiff", "-n", c.ns)
    assert stored["data"] == {"a": "1"}
    assert isinstance(stored["metadata"], dict) and stored["metadata"]["resourceVersion"] == version
    new = c.tmp / "new.yaml"
    new.write_text(_cm_yaml(c.ns, "ssdiff-new", a="1"))
    assert c.k.run("diff", "--server-side", "-f", str(new), ok=False).returncode == 1
    assert gone(c.k, "configmap", "ssdiff-new", "-n", c.ns)


# ---- delete --cascade (the dev plane's garbage collector plays kube-controller-manager's)


def _owner_and_dependent(c: Ctx, *, finalizer: bool = False) -> None:
    _configmap(c, "owner")
    uid = jsonpath(c.k, "configmap", "owner", "-n", c.ns, path="{.metadata.uid}")
    meta: dict[str, object] = {"name": "dependent", "namespace": c.ns, "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid, "blockOwnerDeletion": True}]}
    if finalizer:
        meta["finalizers"] = ["example.com/hold"]
    c.k.run("create", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}))


@row("delete --cascade=background")
def _(c: Ctx) -> None:
    _owner_and_dependent(c)
    assert c.k.out("delete", "configmap", "owner", "-n", c.ns, "--cascade=background").strip() == \
        f'configmap "owner" deleted from {c.ns} namespace'
    assert gone(c.k, "configmap", "owner", "-n", c.ns)  # the owner goes at once
    assert c.k.out("wait", "--for=delete", "configmap/dependent", "-n", c.ns, "--timeout=30s").strip() in (
        "", "configmap/dependent condition met")
    assert gone(c.k, "configmap", "dependent", "-n", c.ns)


@row("delete --cascade=foreground")
def _(c: Ctx) -> None:
    _owner_and_dependent(c, finalizer=True)
    c.k.run("delete", "configmap", "owner", "-n", c.ns, "--cascade=foreground", "--wait=false")
    # The owner waits, with the foregroundDeletion finalizer, for its blocking dependent to go.
    owner = obj(c.k, "configmap", "owner", "-n", c.ns)["metadata"]
    assert isinstance(owner, dict)
    assert owner["finalizers"] == ["foregroundDeletion"] and owner["deletionTimestamp"]
    until("the dependent is being deleted",
          lambda: jsonpath(c.k, "configmap", "dependent", "-n", c.ns, path="{.metadata.deletionTimestamp}"))
    assert not gone(c.k, "configmap", "owner", "-n", c.ns)
    c.k.run("patch", "configmap", "dependent", "-n", c.ns, "--type", "json",
            "-p", '[{"op":"remove","path":"/metadata/finalizers"}]')
    c.k.run("wait", "--for=delete", "configmap/owner", "configmap/dependent", "-n", c.ns, "--timeout=30s")
    assert gone(c.k, "configmap", "owner", "-n", c.ns) and gone(c.k, "configmap", "dependent", "-n", c.ns)


@row("delete --cascade=orphan")
def _(c: Ctx) -> None:
    _owner_and_dependent(c)
    assert c.k.out("delete", "configmap", "owner", "-n", c.ns, "--cascade=orphan").strip() == \
        f'configmap "owner" deleted from {c.ns} namespace'
    assert gone(c.k, "configmap", "owner", "-n", c.ns)
    dependent = obj(c.k, "configmap", "dependent", "-n", c.ns)["metadata"]
    assert isinstance(dependent, dict)
    assert "ownerReferences" not in dependent and "deletionTimestamp" not in dependent, dependent


@row("delete --cascade on a member Deployment (background, orphan)")
def _(c: Ctx) -> None:
    c.m("create", "deployment", "bg", "-n", c.ns, "--image=nginx", "--replicas=2")
    c.m("create", "deployment", "orph", "-n", c.ns, "--image=nginx", "--replicas=1")
    c.k.run("rollout", "status", "deployment/bg", "deployment/orph", "-n", c.ns, "--timeout=30s", context=MEMBER)
    c.m("delete", "deployment", "bg", "-n", c.ns, "--cascade=background")
    until("the ReplicaSet and Pods of bg are collected",
          lambda: c.m("get", "replicasets,pods", "-n", c.ns, "-l", "app=bg", "-o", "name") == "")
    c.m("delete", "deployment", "orph", "-n", c.ns, "--cascade=orphan")
    [rs] = json.loads(c.m("get", "replicasets", "-n", c.ns, "-l", "app=orph", "-o", "json"))["items"]
    assert "ownerReferences" not in rs["metadata"] and rs["spec"]["replicas"] == 1
    assert len(c.m("get", "pods", "-n", c.ns, "-l", "app=orph", "-o", "name").split()) == 1


# ---- wait


@row("wait --for=condition", slow=True)
def _(c: Ctx) -> None:
    c.m("create", "deployment", "waited", "-n", c.ns, "--image=nginx", "--replicas=2")
    assert c.k.out("wait", "--for=condition=Available", "deployment/waited", "-n", c.ns, "--timeout=30s",
                   context=MEMBER).strip() == "deployment.apps/waited condition met"
    assert jsonpath(c.k, "deployment", "waited", "-n", c.ns, path="{.status.availableReplicas}", context=MEMBER) == "2"
    assert c.k.out("wait", "--for=condition=Established", "crd/workloadrebalancers.apps.karmada.io",
                   "--timeout=10s").strip() == \
        "customresourcedefinition.apiextensions.k8s.io/workloadrebalancers.apps.karmada.io condition met"
    timeout = c.k.run("wait", "--for=condition=Nonexistent", "deployment/waited", "-n", c.ns, "--timeout=1s",
                      context=MEMBER, ok=False)
    assert timeout.returncode != 0 and "timed out waiting for the condition" in timeout.stderr, timeout.stderr


@row("wait --for=delete")
def _(c: Ctx) -> None:
    _configmap(c, "doomed")
    waiting = subprocess.Popen(c.k.argv(("wait", "--for=delete", "configmap/doomed", "-n", c.ns, "--timeout=30s"),
                                        HOST), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=c.k.env)
    try:
        # kubectl wait is watching once it has read the object; deleting it must end the wait.
        time_limit = time.monotonic() + 5
        while waiting.poll() is None and time.monotonic() < time_limit and not gone(c.k, "configmap", "doomed",
                                                                                     "-n", c.ns):
            c.k.run("delete", "configmap", "doomed", "-n", c.ns, "--wait=false", ok=False)
        out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0, err
    assert out.strip() in ("configmap/doomed condition met", "")
    assert gone(c.k, "configmap", "doomed", "-n", c.ns)


# ---- rollout (member Deployments: the member simulation runs Deployment → ReplicaSet → Pods)


@row("rollout status (member)")
def _(c: Ctx) -> None:
    c.m("create", "deployment", "ro", "-n", c.ns, "--image=nginx", "--replicas=3")
    out = c.k.out("rollout", "status", "deployment/ro", "-n", c.ns, "--timeout=30s", context=MEMBER)
    assert out.splitlines()[-1] == 'deployment "ro" successfully rolled out'
    status = obj(c.k, "deployment", "ro", "-n", c.ns, context=MEMBER)["status"]
    assert isinstance(status, dict)
    assert (status["readyReplicas"], status["updatedReplicas"], status["availableReplicas"]) == (3, 3, 3)
    assert [p.split()[2] for p in c.m("get", "pods", "-n", c.ns, "-l", "app=ro", "--no-headers").splitlines()] == \
        ["Running"] * 3


@row("rollout restart (member)", slow=True)
def _(c: Ctx) -> None:
    c.m("create", "deployment", "rr", "-n", c.ns, "--image=nginx", "--replicas=2")
    c.k.run("rollout", "status", "deployment/rr", "-n", c.ns, "--timeout=30s", context=MEMBER)
    before = set(c.m("get", "pods", "-n", c.ns, "-l", "app=rr", "-o", "name").split())
    assert c.m("rollout", "restart", "deployment/rr", "-n", c.ns).strip() == "deployment.apps/rr restarted"
    template = obj(c.k, "deployment", "rr", "-n", c.ns, context=MEMBER)["spec"]["template"]  # type: ignore[index]
    assert "kubectl.kubernetes.io/restartedAt" in template["metadata"]["annotations"]
    out = c.k.out("rollout", "status", "deployment/rr", "-n", c.ns, "--timeout=30s", context=MEMBER)
    assert out.splitlines()[-1] == 'deployment "rr" successfully rolled out'

    def replaced() -> bool:
        rs = json.loads(c.m("get", "replicasets", "-n", c.ns, "-l", "app=rr", "-o", "json"))["items"]
        replicas = sorted((r["spec"]["replicas"], r["status"].get("readyReplicas", 0)) for r in rs)
        pods = set(c.m("get", "pods", "-n", c.ns, "-l", "app=rr", "-o", "name").split())
        return replicas == [(0, 0), (2, 2)] and len(pods) == 2 and not pods & before

    until("a new ReplicaSet runs 2 new pods; the old one is scaled to 0", replaced)


@row("rollout status (Karmada API server, aggregated status)")
def _(c: Ctx) -> None:
    # On Karmada the template's status is aggregated from the members by the binding-status
    # controller (karmada-controller-manager: the product's, running for plane A); `rollout status`
    # against the Karmada API server waits on that aggregated status, as on real Karmada.
    policy = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
              "metadata": {"name": "agg", "namespace": c.ns},
              "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "agg"}],
                       "placement": {"clusterAffinity": {"clusterNames": ["member2", "member3"]},
                                     "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                           "replicaDivisionPreference": "Weighted"}}}}
    c.k.run("apply", "-f", "-", stdin=yaml.safe_dump(policy))
    c.k.run("create", "deployment", "agg", "-n", c.ns, "--image=nginx", "--replicas=2")
    out = c.k.out("rollout", "status", "deployment/agg", "-n", c.ns, "--timeout=40s")
    assert out.splitlines()[-1] == 'deployment "agg" successfully rolled out'
    status = obj(c.k, "deployment", "agg", "-n", c.ns)["status"]
    assert isinstance(status, dict)
    assert (status["replicas"], status["readyReplicas"], status["availableReplicas"], status["updatedReplicas"]) == \
        (2, 2, 2, 2)
    assert status["observedGeneration"] == 1


# ---- member nodes: cordon, uncordon, drain, taint (each row its own Node, no capacity: nothing else lands on it)


def _node(c: Ctx, name: str) -> None:
    c.m("create", "-f", "-", stdin=yaml.safe_dump({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}))
    status = {"status": {"allocatable": {"cpu": "0", "memory": "0", "pods": "0"},
                         "capacity": {"cpu": "0", "memory": "0", "pods": "0"},
                         "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                         "message": "kubelet is posting ready status"}]}}
    c.m("patch", "node", name, "--subresource=status", "--type", "merge", "-p", json.dumps(status))


@row("cordon, uncordon (member node)")
def _(c: Ctx) -> None:
    node = f"{c.ns}-node"
    _node(c, node)
    assert c.m("cordon", node).strip() == f"node/{node} cordoned"
    assert jsonpath(c.k, "node", node, path="{.spec.unschedulable}", context=MEMBER) == "true"
    assert table(c.m("get", "node", node))[0]["STATUS"] == "Ready,SchedulingDisabled"
    assert c.m("uncordon", node).strip() == f"node/{node} uncordoned"
    assert jsonpath(c.k, "node", node, path="{.spec.unschedulable}", context=MEMBER) == ""
    assert table(c.m("get", "node", node))[0]["STATUS"] == "Ready"


@row("drain --ignore-daemonsets --delete-emptydir-data (member node)", slow=True)
def _(c: Ctx) -> None:
    node = f"{c.ns}-node"
    _node(c, node)
    c.m("create", "job", "jd", "-n", c.ns, "--image=busybox")
    c.m("create", "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "dsd", "namespace": c.ns},
        "spec": {"selector": {"matchLabels": {"app": "dsd"}}, "template": {
            "metadata": {"labels": {"app": "dsd"}}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}))
    uids = {kind: jsonpath(c.k, kind, name, "-n", c.ns, path="{.metadata.uid}", context=MEMBER)
            for kind, name in (("job", "jd"), ("daemonset", "dsd"))}

    def pod(name: str, owner: dict[str, object], volumes: list[dict[str, object]]) -> dict[str, object]:
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": name, "namespace": c.ns, "ownerReferences": [{**owner, "controller": True}]},
            "spec": {"nodeName": node, "volumes": volumes,
                     "containers": [{"name": "c", "image": "busybox"}]}}

    job = {"apiVersion": "batch/v1", "kind": "Job", "name": "jd", "uid": uids["job"]}
    daemonset = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "dsd", "uid": uids["daemonset"]}
    for manifest in (pod("job-pod", job, [{"name": "scratch", "emptyDir": {}}]), pod("ds-pod", daemonset, [])):
        c.m("create", "-f", "-", stdin=yaml.safe_dump(manifest))
    until("both pods run on the node", lambda: c.m("get", "pods", "-n", c.ns, "--field-selector",
                                                   "status.phase=Running", "-o", "name").split() ==
          ["pod/ds-pod", "pod/job-pod"])
    refused = c.k.run("drain", node, "--timeout=20s", context=MEMBER, ok=False)
    assert refused.returncode != 0
    assert "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)" in refused.stderr
    assert "cannot delete Pods with local storage (use --delete-emptydir-data to override)" in refused.stderr
    done = c.k.run("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=20s", context=MEMBER)
    assert f"node/{node} drained" in done.stdout, done.stdout + done.stderr
    assert f"Warning: ignoring DaemonSet-managed Pods: {c.ns}/ds-pod" in done.stderr
    assert jsonpath(c.k, "node", node, path="{.spec.unschedulable}", context=MEMBER) == "true"
    assert c.m("get", "pods", "-n", c.ns, "-o", "name").split() == ["pod/ds-pod"]


@row("taint (member node)")
def _(c: Ctx) -> None:
    node = f"{c.ns}-node"
    _node(c, node)
    assert c.m("taint", "node", node, "dedicated=gpu:NoSchedule").strip() == f"node/{node} tainted"
    assert json.loads(jsonpath(c.k, "node", node, path="{.spec.taints}", context=MEMBER)) == [
        {"effect": "NoSchedule", "key": "dedicated", "value": "gpu"}]
    refused = c.k.run("taint", "node", node, "dedicated=cpu:NoSchedule", context=MEMBER, ok=False)
    assert refused.returncode != 0 and "already has dedicated taint(s) with same effect(s)" in refused.stderr, \
        refused.stderr
    c.m("taint", "node", node, "dedicated=cpu:NoSchedule", "--overwrite")
    assert json.loads(jsonpath(c.k, "node", node, path="{.spec.taints}", context=MEMBER))[0]["value"] == "cpu"
    assert c.m("taint", "node", node, "dedicated:NoSchedule-").strip() == f"node/{node} untainted"
    assert jsonpath(c.k, "node", node, path="{.spec.taints}", context=MEMBER) == ""


# ---- auth, discovery, events


@row("auth can-i")
def _(c: Ctx) -> None:
    # Under the default AlwaysAllow every question is answered yes.
    for args in (("create", "deployments"), ("delete", "workloadrebalancers.apps.karmada.io"),
                 ("*", "*"), ("get", "pods", "-n", c.ns)):
        done = c.k.run("auth", "can-i", *args)
        assert done.stdout.strip() == "yes", args
    assert c.k.out("auth", "can-i", "list", "nodes", context=MEMBER).strip() == "yes"


@row("api-resources")
def _(c: Ctx) -> None:
    rows = {r["NAME"]: r for r in table(c.k.out("api-resources"))}
    assert (rows["deployments"]["APIVERSION"], rows["deployments"]["KIND"]) == ("apps/v1", "Deployment")
    assert (rows["workloadrebalancers"]["APIVERSION"], rows["workloadrebalancers"]["NAMESPACED"]) == (
        "apps.karmada.io/v1alpha1", "false")
    assert c.k.out("api-resources", "--api-group=apps.karmada.io", "-o", "name").split() == [
        "workloadrebalancers.apps.karmada.io"]
    assert "workloadrebalancers" not in c.k.out("api-resources", "-o", "name", context=MEMBER)
    namespaced = c.k.out("api-resources", "--namespaced=true", "-o", "name").split()
    assert "configmaps" in namespaced and "namespaces" not in namespaced


@row("events")
def _(c: Ctx) -> None:
    _configmap(c, "eventful")
    for name, kind, reason in (("e1", "Normal", "Configured"), ("e2", "Warning", "Broken")):
        c.k.run("create", "-f", "-", stdin=yaml.safe_dump({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": c.ns},
            "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": "eventful", "namespace": c.ns},
            "type": kind, "reason": reason, "message": f"{reason} by the conformance test", "count": 1,
            "source": {"component": "conformance"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"}))
    rows = table(c.k.out("events", "-n", c.ns, "--for=configmap/eventful"))
    assert [(r["TYPE"], r["REASON"], r["OBJECT"]) for r in rows] == [
        ("Normal", "Configured", "ConfigMap/eventful"), ("Warning", "Broken", "ConfigMap/eventful")], rows
    warnings = table(c.k.out("events", "-n", c.ns, "--types=Warning"))
    assert [r["REASON"] for r in warnings] == ["Broken"]


# ---- the table


def _row_param(name: str) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=XFAIL[name])] if name in XFAIL else []
    if name in SLOW:
        marks.append(pytest.mark.slow)
    return pytest.param(name, id=name, marks=marks)


@pytest.mark.parametrize("name", [_row_param(name) for name in ROWS])
def test_verb(k: Kubectl, name: str, tmp_path: Path) -> None:
    ns = "v-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40].rstrip("-")
    k.run("create", "namespace", ns)
    k.run("create", "namespace", ns, context=MEMBER)
    ROWS[name](Ctx(k, ns, tmp_path))
