"""``karmada_build_info``: the label values a scrape shows, and one series however often it is registered.

Dashboards built for Karmada's Go components select on ``platform="linux/amd64"`` and on
``git_version``; these tests pin what our processes put there (the processes themselves are
scraped in tests/controller_manager/test_prometheus.py).
"""

from __future__ import annotations

import importlib.metadata
import platform
import re

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from karmada_api.buildinfo import (
    BUILD_INFO_HELP,
    ENV_BUILD_DATE,
    ENV_GIT_COMMIT,
    ENV_GIT_SHORT_COMMIT,
    ENV_GIT_TREE_STATE,
    build_info,
    go_platform,
    register_build_info,
)

LABELS = {"git_version", "git_commit", "git_short_commit", "git_tree_state", "build_date", "go_version",
          "compiler", "platform"}
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(("system", "machine", "expected"), [
    ("Linux", "x86_64", "linux/amd64"),
    ("Linux", "aarch64", "linux/arm64"),
    ("Darwin", "arm64", "darwin/arm64"),
    ("Windows", "AMD64", "windows/amd64"),
    ("Linux", "i686", "linux/386"),
    ("Linux", "armv7l", "linux/arm"),
    ("Linux", "ppc64le", "linux/ppc64le"),
    ("Linux", "s390x", "linux/s390x"),
    ("Linux", "riscv64", "linux/riscv64"),
    ("SunOS", "sun4v", "sunos/sun4v"),  # unknown to Go's table here: lower-cased, not invented
    ("", "", "unknown/unknown"),
])
def test_platform_uses_gos_goos_goarch_names(system: str, machine: str, expected: str) -> None:
    assert go_platform(system, machine) == expected


def test_this_machines_platform_is_reported_in_go_spelling() -> None:
    info = build_info({})
    assert info.platform == go_platform(platform.system(), platform.machine())
    assert re.fullmatch(r"[a-z0-9]+/[a-z0-9]+", info.platform), info.platform
    assert "x86_64" not in info.platform and "aarch64" not in info.platform


def test_without_build_variables_the_git_labels_are_unknown() -> None:
    info = build_info({})
    assert (info.git_commit, info.git_short_commit, info.git_tree_state, info.build_date) == ("unknown",) * 4


def test_the_variables_baked_into_the_image_fill_the_git_labels() -> None:
    info = build_info({ENV_GIT_COMMIT: COMMIT, ENV_GIT_TREE_STATE: "clean", ENV_BUILD_DATE: "2026-11-21T10:00:00Z"})
    assert info.git_commit == COMMIT
    assert info.git_short_commit == "0123456", "defaults to the commit's first 7 characters, as git abbreviates"
    assert info.git_tree_state == "clean"
    assert info.build_date == "2026-11-21T10:00:00Z"
    assert build_info({ENV_GIT_COMMIT: COMMIT, ENV_GIT_SHORT_COMMIT: "0123456789"}).git_short_commit == "0123456789"


def test_an_empty_variable_counts_as_unset() -> None:
    """``ENV X="${ARG}"`` in the Dockerfile gives "" when the build argument was not passed."""
    info = build_info({ENV_GIT_COMMIT: "", ENV_GIT_TREE_STATE: "  ", ENV_BUILD_DATE: ""})
    assert (info.git_commit, info.git_short_commit, info.git_tree_state, info.build_date) == ("unknown",) * 4


def test_version_and_runtime_labels() -> None:
    info = build_info({})
    assert info.git_version == "v" + importlib.metadata.version("karmada-rebalance")
    assert info.go_version == f"python{platform.python_version()}"  # Karmada's label name, Python's version
    assert info.compiler == platform.python_implementation().lower()


def test_version_falls_back_when_the_distribution_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert build_info({}).git_version == "v0.0.0-unknown"


def test_registered_twice_the_registry_serves_one_constant_series() -> None:
    registry = CollectorRegistry()
    first = register_build_info(registry, {ENV_GIT_COMMIT: COMMIT})
    assert register_build_info(registry, {ENV_GIT_COMMIT: "another"}) == first  # the first registration stands
    families = [f for f in text_string_to_metric_families(generate_latest(registry).decode())
                if f.name == "karmada_build_info"]
    assert len(families) == 1
    (family,) = families
    assert family.type == "gauge"
    assert family.documentation == BUILD_INFO_HELP
    (sample,) = family.samples
    assert sample.value == 1
    assert set(sample.labels) == LABELS
    assert sample.labels == first.labels()
    assert sample.labels["git_commit"] == COMMIT
