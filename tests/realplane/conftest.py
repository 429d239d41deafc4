"""The real-plane tier: our programs in place of Karmada's, on a real kube-apiserver with Karmada's Go components.

One reference plane (``../shared/refplane``, see ``benchmarks/refplane.py``) for this folder's tests, started with
Karmada's controller-manager running every controller but ``workloadRebalancer`` and ``bindingStatus``, and
without Karmada's descheduler; our ``karmada-controller-manager`` and ``karmada-descheduler`` run in their
place as users run them (leader election on). Everything is stopped after the last test here.

Without the kit, etcd or kubectl every test here is skipped with one line saying why. For a quicker loop,
``REFPLANE_RUNNING=<its REFPLANE_DIR>`` uses a plane already started with the same switches
(``KCM_CONTROLLERS='*,deploymentReplicasSyncer,-workloadRebalancer,-bindingStatus' START_DESCHEDULER=0 up.sh``)
and leaves it running.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest

from benchmarks.refplane import OURS_IN_PLACE, PlaneError, RefPlane, missing
from benchmarks.support import free_port, log_tail
from controller_manager.client import KubeClient
from controllers.app import LEASE_NAME as CONTROLLER_MANAGER_LEASE
from descheduler.app import LEASE_NAME as DESCHEDULER_LEASE
from tests.conftest import eventually
from tests.realplane import customkind

FAST_ELECTION = ("--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
                 "--leader-elect-retry-period=1s")
DESCHEDULING_INTERVAL = "3s"
CYCLE_BUDGET = 2
"""The descheduler's ``--max-descheduled-replicas-per-cycle``: above the one replica each other descheduler test
moves (they run one at a time, so none waits on another's), below test_descheduler_budget.py's three."""
PRESERVE_THRESHOLD = timedelta(minutes=2)
"""Our controller-manager's ``--preserve-unschedulable-threshold``: below the descheduler's 5 minutes (Karmada's
default, kept here), so that Pods stuck for a time between the two are preserve mode's alone to move
(test_preserve.py); both would act on Pods stuck longer."""
PRESERVE_RETRY_TIMEOUT = timedelta(seconds=5)
"""``--preserve-available-replicas-retry-timeout``: short, so a transient refusal fails within seconds."""
PRESERVE_FLAGS = ("--enable-preserve-available-replicas",
                  f"--preserve-unschedulable-threshold={PRESERVE_THRESHOLD.total_seconds():g}s",
                  f"--preserve-available-replicas-retry-timeout={PRESERVE_RETRY_TIMEOUT.total_seconds():g}s")
RESTART_DELAY = 1.0  # seconds before a program that exited is started again


FIRST = "test_simulation_fidelity.py"
"""Runs before the others: karmada-scheduler (its alpha SchedulingOvercommitProtection on) keeps each schedule it
makes assumed for up to 5 minutes unless the binding goes, and that test compares schedules made on the capacity
left; it would wait for the bindings the other tests leave behind."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder is marked ``realplane`` (``pytest -m realplane`` / ``-m "not realplane"``). The
    simulation's fidelity test runs first (:data:`FIRST`), and the custom kind's run late here: Karmada's detector
    discovers the kind's CRD (installed when our programs start) only at its next 30-second discovery, a wait the
    tests before them cover instead of adding. Those marked ``realplane_last`` run after them: they leave the plane
    whole but slow for a while (a member's kube-apiserver restarted: Karmada reflects that member's workload status
    again only some 30 s later). The folder's tests stay together, where the first of them was: its fixtures are
    package-scoped."""
    here = Path(__file__).parent
    ours = [item for item in items if here in item.path.parents]
    if not ours:
        return
    for item in ours:
        item.add_marker(pytest.mark.realplane)
    last = [item for item in ours if item.get_closest_marker("realplane_last")]
    first = [item for item in ours if item.path.name == FIRST and item not in last]
    late = [item for item in ours if item.path.name == customkind.TESTS and item not in last]
    early = [item for item in ours if item not in first and item not in late and item not in last]
    at = items.index(ours[0])
    others = [item for item in items if here not in item.path.parents]
    items[:] = [*others[:at], *first, *early, *late, *last, *others[at:]]


@pytest.fixture(scope="package")
def refplane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefPlane]:
    """The running reference plane (started here, or the one ``REFPLANE_RUNNING`` names)."""
    reason = missing()
    if reason:
        pytest.skip(f"realplane: {reason}")
    running = os.environ.get("REFPLANE_RUNNING")
    if running:
        yield RefPlane(Path(running), OURS_IN_PLACE)
        return
    plane = RefPlane(tmp_path_factory.mktemp("refplane"), OURS_IN_PLACE)
    try:
        plane.up()
    except (PlaneError, subprocess.TimeoutExpired) as exc:
        plane.down(purge=True)
        pytest.fail(f"the reference plane did not start: {exc}", pytrace=False)
    try:
        yield plane
    finally:
        plane.down(purge=True)


@dataclass
class Program:
    """One of our programs, started as users start it and restarted when it exits, as a Pod's containers are
    (``restartPolicy: Always``): a component that loses its Lease exits 1, as Karmada's do."""

    argv: list[str]
    log: Path
    metrics_port: int
    proc: subprocess.Popen[bytes] | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _keeper: threading.Thread | None = None

    def start(self) -> None:
        self._spawn()
        self._keeper = threading.Thread(target=self._keep_running, name=f"keep {self.log.stem}", daemon=True)
        self._keeper.start()

    def _spawn(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def _keep_running(self) -> None:
        while not self._stopping.is_set():
            assert self.proc is not None
            self.proc.wait()
            if self._stopping.wait(RESTART_DELAY):
                return
            self._spawn()

    def stop(self) -> None:
        self._stopping.set()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._keeper is not None:
            self._keeper.join(timeout=RESTART_DELAY + 5)

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    def leads(self, lease: str) -> bool:
        """Whether it holds ``lease`` (its ``leader_election_master_status``); blocking: async tests call it in a
        thread."""
        return self.sample(f'leader_election_master_status{{name="{lease}"}}') == 1

    def sample(self, series: str) -> float | None:
        """The value of one series of its metrics (``name{labels}`` as exposed), None when it has none or does not
        serve yet; blocking: async tests call it in a thread."""
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=5) as answer:
                lines = answer.read().decode().splitlines()
        except OSError:
            return None  # not serving yet
        return next((float(line.rpartition(" ")[2]) for line in lines if line.rpartition(" ")[0] == series), None)


@dataclass
class Ours:
    """Our controller-manager and descheduler on the plane; tests may start more (``launch``)."""

    plane: RefPlane
    directory: Path
    controller_manager: Program
    descheduler: Program
    extra: list[Program] = field(default_factory=list)

    def launch(self, module: str, name: str, *flags: str) -> Program:
        """Start ``python -m module`` against the plane (a test stops it with ``stop``)."""
        program = _program(self.plane, self.directory, module, name, *flags)
        program.start()
        self.extra.append(program)
        return program


def _program(plane: RefPlane, directory: Path, module: str, name: str, *flags: str) -> Program:
    port = free_port()
    argv = [sys.executable, "-m", module, "--kubeconfig", str(plane.karmada_kubeconfig),
            "--metrics-bind-address", f"127.0.0.1:{port}", "--health-probe-bind-address", "0",
            *FAST_ELECTION, *flags]
    return Program(argv, directory / f"{name}.log", port)


@pytest.fixture(scope="package")
def ours(refplane: RefPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ours]:
    """``karmada-controller-manager`` (every default controller, preserve mode on: :data:`PRESERVE_FLAGS`) and
    ``karmada-descheduler`` (a short interval, Karmada's default threshold, a cycle budget, and the custom kind of
    :mod:`tests.realplane.customkind` declared in ``--unschedulable-pod-selectors``), each leading on its Lease;
    stopped after the last test here."""
    directory = tmp_path_factory.mktemp("ours")
    controller_manager = _program(refplane, directory, "controller_manager", "karmada-controller-manager",
                                  *PRESERVE_FLAGS)
    controller_manager.start()
    try:
        selectors = customkind.install(refplane, directory)  # the descheduler's member informers need the CRD
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        controller_manager.stop()
        pytest.fail(f"the custom kind was not installed: {exc}", pytrace=False)
    running = Ours(refplane, directory, controller_manager,
                   _program(refplane, directory, "descheduler", "karmada-descheduler",
                            f"--descheduling-interval={DESCHEDULING_INTERVAL}",
                            f"--max-descheduled-replicas-per-cycle={CYCLE_BUDGET}",
                            f"--unschedulable-pod-selectors={selectors}"))
    running.descheduler.start()
    try:
        for program, lease in ((running.controller_manager, CONTROLLER_MANAGER_LEASE),
                               (running.descheduler, DESCHEDULER_LEASE)):
            _wait_until_leading(program, lease)
        yield running
    finally:
        for program in (*running.extra, running.descheduler, running.controller_manager):
            program.stop()


def _wait_until_leading(program: Program, lease: str, timeout: float = 60.0) -> None:
    """Block until ``program`` holds ``lease``, or fail with its log's tail."""
    try:
        asyncio.run(eventually(lambda: program.leads(lease), timeout=timeout, interval=0.25, what=f"lease {lease}"))
    except AssertionError:
        pytest.fail(f"{program.log.stem} did not lead on {lease} within {timeout:.0f}s:\n{log_tail(program.log)}",
                pytrace=False)


@pytest.fixture
async def karmada(ours: Ours) -> AsyncIterator[KubeClient]:
    """A client of the Karmada API server (admin), not rate-limited."""
    client = await KubeClient.from_kubeconfig(str(ours.plane.karmada_kubeconfig), qps=0)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def member1(ours: Ours) -> AsyncIterator[KubeClient]:
    client = await KubeClient.from_kubeconfig(str(ours.plane.member_kubeconfig("member1")), qps=0)
    try:
        yield client
    finally:
        await client.close()
