"""benchmarks/refplane.py: how the real-plane tier finds the kit, says why it cannot run, and finds dead components."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import refplane
from benchmarks.refplane import RefPlane


def test_without_the_kit_the_reason_names_the_variable_and_the_place(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(refplane.KIT_ENV, str(tmp_path / "nowhere"))
    assert refplane.kit() is None
    reason = refplane.missing()
    assert reason is not None and refplane.KIT_ENV in reason and "\n" not in reason


def test_a_kit_named_by_the_variable_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "up.sh").write_text("#!/bin/bash\n")
    monkeypatch.setenv(refplane.KIT_ENV, str(tmp_path))
    assert refplane.kit() == tmp_path


def test_without_etcd_the_reason_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "up.sh").write_text("#!/bin/bash\n")
    monkeypatch.setenv(refplane.KIT_ENV, str(tmp_path))
    monkeypatch.setattr(refplane, "ETCD", str(tmp_path / "no-etcd"))
    reason = refplane.missing()
    assert reason is not None and "etcd-server" in reason


def test_components_whose_process_exited_are_dead(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    exited.wait()
    try:
        (pids / "alive.pid").write_text(f"{alive.pid}\n")
        (pids / "exited.pid").write_text(f"{exited.pid}\n")
        (pids / "garbled.pid").write_text("not a pid\n")
        assert RefPlane(tmp_path).dead() == ["exited", "garbled"]
    finally:
        alive.kill()
        alive.wait()


def test_a_zombie_is_not_running() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
        assert not refplane._running(child.pid)
    finally:
        child.wait()
