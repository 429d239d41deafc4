"""Faults never become wrong results: ``benchmarks/faults.py`` in small runs, as a user runs it.

Each test runs the benchmark as a process (a dev API server, the real controller-manager or descheduler
as children, real HTTP on 127.0.0.1) and asserts what it reports: no workload wrongly Failed, no
binding without its trigger, no replica descheduled on stale data, and that the fault really happened.
Times are printed by the benchmark, never asserted here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test runs a benchmark: a dev plane and a product process, 10-25 s

REPO = Path(__file__).resolve().parents[2]
# Karmada's client-side throttling (40 qps): work is still in flight when the fault comes.
SMALL = ["--rebalancers", "30", "--workloads", "5", "--namespaces", "3", "--create-seconds", "2",
         "--kube-api-qps", "40", "--kube-api-burst", "60", "--run-time", "120"]


def run_faults(*args: str) -> str:
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "faults.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return proc.stdout


def row(output: str, fault: str) -> list[str]:
    """The figures of one fault's row: finished, wrongly Failed, missing trigger, dup. Events, stale."""
    line = next(line for line in output.splitlines() if line.startswith(f"{fault} "))
    return line.split()[-6:-1]


def test_api_server_restart_fails_no_workload() -> None:
    # kube's 404 window is ~0.2 s; 2 s makes the controller's retries meet it in every run
    out = run_faults("--faults", "a", *SMALL, "--restart-after", "2", "--crd-unserved-window", "2")
    assert row(out, "a")[:3] == ["30/30", "0", "0"]


def test_every_watch_expiring_loses_nothing() -> None:
    out = run_faults("--faults", "b", *SMALL, "--watch-history", "50")
    assert row(out, "b")[:3] == ["30/30", "0", "0"]
    relisted = re.search(r"watches expired and relisted: (\d+)", out)
    assert relisted is not None and int(relisted.group(1)) >= 4, out  # every informer took the 410


def test_injected_errors_fail_no_workload() -> None:
    out = run_faults("--faults", "c", *SMALL, "--error-seconds", "5", "--error-rate", "0.1", "--seed", "3")
    assert row(out, "c")[:3] == ["30/30", "0", "0"]
    injected = re.search(r"injected: (.*)", out)
    assert injected is not None and "lost" in injected.group(1) and "500" in injected.group(1), out


def test_member_restart_deschedules_nothing_on_stale_data() -> None:
    out = run_faults("--faults", "e", "--member-workloads", "9", "--restart-after", "3", "--run-time", "120")
    assert row(out, "e")[-1] == "0"
    assert re.search(r"descheduled rightly \(stuck past the threshold\): [1-9]", out), out


def test_failback_through_a_lost_create_and_a_restart_neither_repeats_nor_forgets() -> None:
    out = run_faults("--faults", "f", "--failback-workloads", "90", "--restart-after", "2",
                     "--crd-unserved-window", "2", "--run-time", "120")
    assert "90/90 failed back; listed twice 0, forgotten 0 (both must be 0)" in out, out
    most = re.search(r"at most (\d+) in flight \(budget 20\)", out)
    assert most is not None and int(most.group(1)) <= 20, out
    assert "the lost create: 1 answer lost" in out, out  # the fault really happened
