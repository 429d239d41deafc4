"""The wheel, installed the way the container image installs it, runs both products as non-root.

``docker build`` is not available everywhere the tests run, so this repeats the Dockerfile's
steps on the host: build the project's wheel from the files the image's build stage copies,
``pip install --no-cache-dir`` it into a fresh virtual environment, drop setuptools and wheel as
the runtime stage does, then start ``karmada-controller-manager --help`` and
``karmada-descheduler --help`` as uid/gid 65532 (via ``setpriv`` when the tests run as root)
with an unwritable HOME and no bytecode writes, as in a read-only container.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.packaging.test_dockerfile import PACKAGES, PRODUCTS, ROOT, SCRIPTS

pytestmark = pytest.mark.slow  # the module builds and installs the wheel once: ~20 s

NONROOT = 65532
# What each product's --help must mention: its own name and one of Karmada's flags.
KARMADA_FLAGS = {"karmada-controller-manager": ("--kubeconfig", "--controllers", "--leader-elect"),
                 "karmada-descheduler": ("--kubeconfig", "--descheduling-interval", "--unschedulable-threshold")}
STEP_TIMEOUT = 600


@dataclass
class Installed:
    root: Path
    venv: Path
    wheel: Path
    seconds: float


def run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run one step; a failure shows the step's own output."""
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=STEP_TIMEOUT,
                            check=False)
    assert result.returncode == 0, f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result


def clean_env() -> dict[str, str]:
    """The environment without this virtualenv's traces, so nothing leaks in from the source tree."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)))
    return env


def as_nonroot(argv: list[str]) -> list[str]:
    """``argv`` as uid/gid 65532 when the tests run as root (CI does); unchanged otherwise."""
    if os.geteuid() != 0:
        return argv
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.fail("setpriv not found: install util-linux (apt-get install util-linux)")
    return [setpriv, f"--reuid={NONROOT}", f"--regid={NONROOT}", "--clear-groups", *argv]


def base_python(workdir: Path) -> str:
    """An interpreter the non-root user can run: this one, or the system's when this one sits under a
    directory only root may enter (pyenv under /root)."""
    candidates = [os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
                  "/usr/bin/python3.11", "/usr/bin/python3"]
    for candidate in candidates:
        if not os.path.isfile(candidate):
            continue
        probe = subprocess.run(as_nonroot([candidate, "-c", "import sys, ssl; assert sys.version_info >= (3, 11)"]),
                               cwd=workdir, capture_output=True, timeout=60, check=False)
        if probe.returncode == 0:
            return candidate
    pytest.fail(f"no Python >= 3.11 that uid {NONROOT} can run among {candidates}")


def copy_build_context(destination: Path) -> None:
    """The files the image's build stage copies (pyproject.toml, README.md, the packages)."""
    destination.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, destination / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, destination / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.db", "*.db-*"))


def readable_by_all(tree: Path) -> None:
    """The installed files readable (and directories searchable) by the non-root user, whatever umask."""
    for path in [tree, *tree.rglob("*")]:
        if not path.is_symlink():
            mode = path.stat().st_mode
            path.chmod(mode | (0o555 if path.is_dir() or mode & 0o100 else 0o444))


@pytest.fixture(scope="module")
def installed() -> Iterator[Installed]:
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="karmada-wheel-"))
    try:
        root.chmod(0o755)  # the non-root user must reach the virtualenv
        env = clean_env()
        copy_build_context(root / "src")
        run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "--wheel-dir", str(root / "dist"),
             str(root / "src")], cwd=root, env=env)
        (wheel,) = (root / "dist").glob("karmada_rebalance-*.whl")
        venv = root / "venv"
        run([base_python(root), "-m", "venv", str(venv)], cwd=root, env=env)
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
        run([*pip, "install", "--no-cache-dir", str(wheel)], cwd=root, env=env)
        run([*pip, "uninstall", "--yes", "setuptools", "wheel"], cwd=root, env=env)
        run([*pip, "check"], cwd=root, env=env)
        readable_by_all(venv)
        yield Installed(root, venv, wheel, time.monotonic() - started)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_wheel_holds_the_products_packages_and_nothing_else(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = wheel.namelist()
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        declared = wheel.read(entry_points).decode()
    top_level = {name.split("/")[0] for name in names}
    assert top_level - {n for n in top_level if n.endswith(".dist-info")} == set(PACKAGES)
    assert not any("/tests/" in name or name.startswith("tests/") for name in names)
    assert any(name.startswith("devplane/apiserver/crds/") and name.endswith(".yaml") for name in names), \
        "the CRDs the dev API server serves are package data"
    for script in (*PRODUCTS, "karmada-rebalance", "kubectl-karmada_rebalance"):  # the CLI, also as kubectl plugin
        assert f"{script} = {SCRIPTS[script]}" in declared


@pytest.mark.parametrize("product", PRODUCTS)
def test_each_product_starts_as_non_root_with_a_read_only_home(installed: Installed, product: str) -> None:
    home = installed.root / "home"
    home.mkdir(mode=0o555, exist_ok=True)
    script = installed.venv / "bin" / product
    assert script.is_file(), f"{product} is not on the virtualenv's PATH"
    env = {"PATH": f"{installed.venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONUNBUFFERED": "1", "LANG": "C.UTF-8"}
    started = time.monotonic()
    result = subprocess.run(as_nonroot([product, "--help"]), cwd=home, env=env, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, f"{product} --help exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    assert result.stdout.startswith(f"usage: {product}"), result.stdout[:300]
    for flag in KARMADA_FLAGS[product]:
        assert flag in result.stdout, f"{product} --help does not mention {flag}"
    print(f"{product}: wheel built and installed in {installed.seconds:.1f}s, --help in "
          f"{time.monotonic() - started:.1f}s")
