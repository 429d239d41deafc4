"""Which cluster to talk to: ``--kubeconfig``, ``--context`` and ``KUBECONFIG``, merged as kubectl merges them.

kubectl's loading rules (client-go ``clientcmd.ClientConfigLoadingRules``): ``--kubeconfig`` is the
only file when given; otherwise every file of ``KUBECONFIG`` (``os.pathsep``-separated, missing
files skipped), otherwise ``~/.kube/config``. Across files the first one to define a cluster, user
or context by a name wins, and so does the first ``current-context``. Relative certificate and key
paths are relative to the file that names them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from controller_manager.client import KubeClient

from .errors import UsageError

_SECTIONS = ("clusters", "users", "contexts")
_PATH_FIELDS = {"clusters": ("certificate-authority",), "users": ("client-certificate", "client-key", "tokenFile")}


@dataclass(frozen=True)
class Target:
    """The merged kubeconfig, the context chosen in it, and that context's namespace ("" when unset)."""

    config: dict[str, Any]
    context: str
    namespace: str


def kubeconfig_paths(flag: str | None, environ: Mapping[str, str]) -> tuple[list[Path], bool]:
    """The files to read and whether they must exist (only an explicit ``--kubeconfig`` must)."""
    if flag:
        return [Path(flag)], True
    listed = [Path(p) for p in environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if listed:
        return list(dict.fromkeys(listed)), False
    return [Path.home() / ".kube" / "config"], False


def _absolute_paths(config: dict[str, Any], base: Path) -> dict[str, Any]:
    """Make the relative file references of one kubeconfig absolute, as client-go resolves them."""
    for section, fields in _PATH_FIELDS.items():
        for entry in config.get(section) or []:
            body = entry.get(section[:-1]) if isinstance(entry, dict) else None
            if not isinstance(body, dict):
                continue
            for field in fields:
                value = body.get(field)
                if isinstance(value, str) and value and not Path(value).is_absolute():
                    body[field] = str(base / value)
    return config


def read_files(paths: Sequence[Path], must_exist: bool) -> list[dict[str, Any]]:
    """Parse each file (blocking: call off the event loop); a missing listed file is skipped like kubectl."""
    configs: list[dict[str, Any]] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if must_exist:
                raise UsageError(f"--kubeconfig {path}: no such file") from None
            continue
        except OSError as exc:
            raise UsageError(f"cannot read kubeconfig {path}: {exc.strerror}") from None
        try:
            loaded = yaml.safe_load(text) or {}
        except yaml.YAMLError as exc:
            raise UsageError(f"kubeconfig {path} is not YAML: {str(exc).splitlines()[0]}") from None
        if not isinstance(loaded, dict):
            raise UsageError(f"kubeconfig {path} is not a kubeconfig (not a mapping)")
        configs.append(_absolute_paths(loaded, path.resolve().parent))
    return configs


def merge(configs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One kubeconfig: the first file to name an entry wins it; the first ``current-context`` set wins."""
    merged: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "current-context": ""}
    for section in _SECTIONS:
        seen: dict[str, Any] = {}
        for config in configs:
            for entry in config.get(section) or []:
                if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"] not in seen:
                    seen[entry["name"]] = entry
        merged[section] = list(seen.values())
    merged["current-context"] = next((str(c["current-context"]) for c in configs if c.get("current-context")), "")
    return merged


def choose(config: dict[str, Any], context: str | None) -> Target:
    """The context to use (``--context`` or the current one) and its namespace; UsageError when absent."""
    name = context or str(config.get("current-context") or "")
    if not name:
        raise UsageError("no context chosen: the kubeconfig sets no current-context; use --context")
    for entry in config.get("contexts") or []:
        if entry.get("name") == name:
            body = entry.get("context") or {}
            return Target(config, name, str(body.get("namespace") or ""))
    raise UsageError(f'context "{name}" does not exist')


def load(flag: str | None, context: str | None, environ: Mapping[str, str]) -> Target:
    """Read, merge and choose (blocking file reads: call off the event loop)."""
    paths, must_exist = kubeconfig_paths(flag, environ)
    configs = read_files(paths, must_exist)
    if not configs:
        raise UsageError(f"no kubeconfig found (looked at {', '.join(str(p) for p in paths)}); use --kubeconfig")
    return choose(merge(configs), context)


async def connect(target: Target) -> KubeClient:
    """A client for the chosen context (kubernetes_asyncio does the auth and TLS)."""
    configuration = k8s.Configuration()
    try:
        await k8s_config.load_kube_config_from_dict(target.config, context=target.context,
                                                    client_configuration=configuration)
    except k8s_config.ConfigException as exc:
        raise UsageError(f"kubeconfig context {target.context!r}: {exc}") from None
    return KubeClient(k8s.ApiClient(configuration), qps=50.0, burst=100)
