"""``karmada_build_info``: the build metadata gauge every Karmada component exposes (``pkg/metrics/version.go``).

Karmada's Go binaries get these values from ``-ldflags`` at build time; a Python distribution has
no link step, so they come from the installed distribution and from environment variables the
image bakes in at build time (the Dockerfile turns its build arguments into them):

* ``git_version``: ``"v"`` + the installed ``karmada-rebalance`` version; ``v0.0.0-unknown`` when
  running from a source tree that was never installed;
* ``git_commit``: ``$KARMADA_GIT_COMMIT``;
* ``git_short_commit``: ``$KARMADA_GIT_SHORT_COMMIT``, else the first 7 characters of the commit;
* ``git_tree_state``: ``$KARMADA_GIT_TREE_STATE`` (Karmada writes ``clean`` or ``dirty``);
* ``build_date``: ``$KARMADA_BUILD_DATE`` (Karmada's format: ``%Y-%m-%dT%H:%M:%SZ``, UTC);
* ``go_version``: the Python runtime, e.g. ``python3.11.13``;
* ``compiler``: the Python implementation, e.g. ``cpython``;
* ``platform``: ``GOOS/GOARCH`` in Go's spelling, e.g. ``linux/amd64`` (not ``Linux/x86_64``).

A variable that is unset or empty gives ``unknown``.

``go_version`` keeps Karmada's label name although it carries the Python version: dashboards and
alerts written against Karmada's components select on the name, not on its meaning.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import weakref
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Gauge

from kube_api.validation import go_quote

__all__ = ["BUILD_INFO", "BUILD_INFO_HELP", "DISTRIBUTION", "ENV_BUILD_DATE", "ENV_GIT_COMMIT",
           "ENV_GIT_SHORT_COMMIT", "ENV_GIT_TREE_STATE", "BuildInfo", "build_info", "go_platform",
           "register_build_info", "version_line", "version_subcommand"]

BUILD_INFO = "karmada_build_info"
BUILD_INFO_HELP = "Karmada build metadata exposed as labels with a constant value of 1."
DISTRIBUTION = "karmada-rebalance"
UNKNOWN = "unknown"
UNKNOWN_VERSION = "v0.0.0-unknown"
SHORT_COMMIT_LENGTH = 7  # git's default abbreviation, what `git rev-parse --short` gives in small repositories

ENV_GIT_COMMIT = "KARMADA_GIT_COMMIT"
ENV_GIT_SHORT_COMMIT = "KARMADA_GIT_SHORT_COMMIT"
ENV_GIT_TREE_STATE = "KARMADA_GIT_TREE_STATE"
ENV_BUILD_DATE = "KARMADA_BUILD_DATE"

# platform.system() / platform.machine() spellings -> Go's GOOS / GOARCH, so that one PromQL
# selector (platform="linux/amd64") matches Karmada's Go components and ours alike.
_GOOS = {"linux": "linux", "darwin": "darwin", "windows": "windows", "freebsd": "freebsd"}
_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "x64": "amd64", "aarch64": "arm64", "arm64": "arm64",
           "armv8l": "arm64", "i386": "386", "i486": "386", "i586": "386", "i686": "386", "x86": "386",
           "armv6l": "arm", "armv7l": "arm", "arm": "arm", "ppc64le": "ppc64le", "ppc64": "ppc64",
           "s390x": "s390x", "riscv64": "riscv64", "loongarch64": "loong64", "mips64": "mips64"}


@dataclass(frozen=True)
class BuildInfo:
    """The eight label values of ``karmada_build_info``, in Karmada's label order."""

    git_version: str
    git_commit: str
    git_short_commit: str
    git_tree_state: str
    build_date: str
    go_version: str
    compiler: str
    platform: str

    def labels(self) -> dict[str, str]:
        return asdict(self)


def go_platform(system: str, machine: str) -> str:
    """``GOOS/GOARCH`` for a ``platform.system()``/``platform.machine()`` pair; unknown names are lower-cased."""
    goos = _GOOS.get(system.lower(), system.lower() or UNKNOWN)
    goarch = _GOARCH.get(machine.lower(), machine.lower() or UNKNOWN)
    return f"{goos}/{goarch}"


def _distribution_version() -> str:
    try:
        return "v" + importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return UNKNOWN_VERSION


def build_info(environ: Mapping[str, str] | None = None) -> BuildInfo:
    """This process's build metadata; ``environ`` (default ``os.environ``) supplies the baked-in values.

    An empty variable counts as unset: ``ENV X=${ARG}`` with an unset build argument yields "".
    """
    env = os.environ if environ is None else environ

    def value(name: str) -> str:
        return env.get(name, "").strip() or UNKNOWN

    commit = value(ENV_GIT_COMMIT)
    short = value(ENV_GIT_SHORT_COMMIT)
    if short == UNKNOWN and commit != UNKNOWN:
        short = commit[:SHORT_COMMIT_LENGTH]
    return BuildInfo(git_version=_distribution_version(), git_commit=commit, git_short_commit=short,
                     git_tree_state=value(ENV_GIT_TREE_STATE), build_date=value(ENV_BUILD_DATE),
                     go_version=f"python{platform.python_version()}",
                     compiler=platform.python_implementation().lower(),
                     platform=go_platform(platform.system(), platform.machine()))


_REGISTERED: weakref.WeakKeyDictionary[CollectorRegistry, BuildInfo] = weakref.WeakKeyDictionary()


def register_build_info(registry: CollectorRegistry = REGISTRY, environ: Mapping[str, str] | None = None) -> BuildInfo:
    """Expose ``karmada_build_info`` in ``registry`` (the one ``/metrics`` serves); a second call is a no-op.

    Idempotent because both components' ``main`` call it and tests call ``main`` more than once in
    one process, while the registry refuses a second collector of the same name.
    """
    info = _REGISTERED.get(registry)
    if info is None:
        info = build_info(environ)  # fixed for the life of the process: read once, one constant series
        labels = info.labels()
        Gauge(BUILD_INFO, BUILD_INFO_HELP, list(labels), registry=registry).labels(**labels).set(1)
        _REGISTERED[registry] = info
    return info


def version_line(component: str) -> str:
    """What ``<component> version`` prints, as Karmada's ``version`` subcommand does (Go's ``%#v`` of
    ``version.Info``), from this process's build metadata (:func:`build_info`)."""
    info = build_info()
    fields = ", ".join(f"{name}:{go_quote(value)}" for name, value in (
        ("GitVersion", info.git_version), ("GitCommit", info.git_commit), ("GitShortCommit", info.git_short_commit),
        ("GitTreeState", info.git_tree_state), ("BuildDate", info.build_date), ("GoVersion", info.go_version),
        ("Compiler", info.compiler), ("Platform", info.platform)))
    return f"{component} version: version.Info{{{fields}}}"


def version_subcommand(component: str, argv: list[str]) -> bool:
    """Karmada's ``<component> version``: print :func:`version_line` and say so when ``argv`` asks for it."""
    if argv[:1] != ["version"]:
        return False
    print(version_line(component))
    return True
