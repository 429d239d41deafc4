"""``benchmarks/preserve.py`` as a user runs it: a small run checks its results and reports no member LIST in
the timed window; bad arguments are refused before anything starts. Times are printed, never asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.faultproxy import verb_of

REPO = Path(__file__).resolve().parents[2]


def run_bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "benchmarks" / "preserve.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.slow  # two dev API servers as members, a host and the controller-manager per mode: ~15 s
def test_a_small_run_checks_both_modes_and_lists_nothing_from_the_members_while_timed() -> None:
    proc = run_bench("--rebalancers", "4", "--workloads", "10", "--rounds", "1", "--warm-up", "1")
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}"
    assert "10 moved by preserve mode" in proc.stdout
    assert "member LISTs in a timed preserve window: at most 0 (none per workload)" in proc.stdout
    assert "ratio     preserve / fresh time = " in proc.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--replicas", "0"], "--replicas must be at least 1"),
    (["--rebalancers", "0"], "--rebalancers must be at least 1"),
    (["--stuck-every", "1"], "--stuck-every must be at least 2"),
    (["--warm-up", "-1"], "--warm-up must not be negative"),
])
def test_bad_arguments_exit_2_with_the_reason(args: list[str], message: str) -> None:
    proc = run_bench(*args)
    assert proc.returncode == 2
    assert message in proc.stderr


def test_the_proxy_counts_requests_as_the_api_server_does() -> None:
    """The no-LIST claim rests on telling a LIST from a WATCH and a GET, namespaced or not."""
    assert verb_of("GET", "/api/v1/namespaces/ns/pods", watch=False) == "LIST pods"
    assert verb_of("GET", "/api/v1/pods", watch=True) == "WATCH pods"
    assert verb_of("GET", "/api/v1/namespaces/ns/pods/web-1", watch=False) == "GET pods"
    assert verb_of("GET", "/apis/apps/v1/namespaces/ns/replicasets", watch=False) == "LIST replicasets"
    assert verb_of("GET", "/api/v1/namespaces/ns", watch=False) == "GET namespaces"
    assert verb_of("PATCH", "/api/v1/namespaces/ns/pods/web-1/status", watch=False) == "PATCH pods"
