"""kubeconfig files for the dev plane, shaped like hack/local-up-karmada.sh writes them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml


def kubeconfig(contexts: dict[str, str], current: str) -> dict[str, Any]:
    """One cluster, user and context per name; servers are plain HTTP on 127.0.0.1."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": name, "cluster": {"server": url}} for name, url in contexts.items()],
        "users": [{"name": name, "user": {}} for name in contexts],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}} for name in contexts],
        "current-context": current,
    }


def write_kubeconfig(path: Path, contexts: dict[str, str], current: str) -> None:
    """Write atomically (temp file + rename) so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(yaml.safe_dump(kubeconfig(contexts, current), sort_keys=False), encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(path)
