"""kubeconfig files for the dev plane, shaped like hack/local-up-karmada.sh writes them."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml


def kubeconfig(contexts: dict[str, str], current: str, tokens: dict[str, str] | None = None,
               cas: dict[str, bytes] | None = None) -> dict[str, Any]:
    """One cluster, user and context per name, on 127.0.0.1; ``tokens`` gives some users a bearer
    token and ``cas`` some (HTTPS) clusters the PEM certificate to trust (an empty value gives none)."""
    tokens, cas = tokens or {}, cas or {}

    def cluster(name: str, url: str) -> dict[str, str]:
        if not cas.get(name):
            return {"server": url}
        return {"server": url, "certificate-authority-data": base64.b64encode(cas[name]).decode()}

    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": name, "cluster": cluster(name, url)} for name, url in contexts.items()],
        "users": [{"name": name, "user": {"token": tokens[name]} if tokens.get(name) else {}} for name in contexts],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}} for name in contexts],
        "current-context": current,
    }


def write_kubeconfig(path: Path, contexts: dict[str, str], current: str,
                     tokens: dict[str, str] | None = None, cas: dict[str, bytes] | None = None) -> None:
    """Write atomically (temp file + rename) so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(yaml.safe_dump(kubeconfig(contexts, current, tokens, cas), sort_keys=False), encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(path)
