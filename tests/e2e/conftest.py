"""End-to-end fixtures: a dev plane (API servers + Karmada and member simulations) and the real
``karmada-controller-manager`` process against it, both stopped when the test ends."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from devplane.config import member_shapes
from devplane.plane import DevPlane, PlaneOptions


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder is marked ``e2e`` (``pytest -m e2e`` / ``-m "not e2e"``), and ``slow``: each
    starts a dev plane and the product processes and plays a document (tens of seconds)."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.slow)


@pytest.fixture
async def plane(tmp_path: Path) -> AsyncIterator[DevPlane]:
    """Two members, status refreshed every second, the scheduler estimator on (Karmada's e2e setup)."""
    options = PlaneOptions(members=member_shapes(2), enable_scheduler_estimator=True,
                           cluster_status_update_frequency=1.0)
    async with DevPlane(options) as running:
        await running.wait_ready()
        running.write_kubeconfigs(tmp_path / "kube")
        yield running


@pytest.fixture
async def controller_manager(plane: DevPlane, tmp_path: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """The product process, as users run it (leader election on, endpoints off); its log is kept in tmp_path.

    Its exit is awaited without blocking the event loop: the dev plane's API servers run on this loop, and a
    blocking wait would leave the process's last requests (releasing its Lease) unanswered until they time out."""
    with (tmp_path / "karmada-controller-manager.log").open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "controller_manager", "--kubeconfig", str(tmp_path / "kube" / "karmada.config"),
            "--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--leader-elect-retry-period", "1s",
            stdout=log, stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL)
        try:
            yield proc
        finally:
            if proc.returncode is None:
                proc.terminate()
                try:
                    await asyncio.wait_for(proc.wait(), 15)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()
