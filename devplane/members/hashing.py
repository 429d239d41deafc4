"""The ``pod-template-hash`` of a Deployment's pod template (``controller.ComputeHash``).

Kubernetes hashes the Go struct with FNV-32a (plus ``status.collisionCount`` when set) and
encodes the decimal digits of the sum with ``rand.SafeEncodeString``, giving names such as
``nginx-7854ff8877``. The Go struct printer cannot be reproduced, so the hash here is FNV-32a
over the template's canonical JSON (sorted keys): deterministic, stable across restarts and
processes, and the same shape (up to 10 characters of the vowel-free alphabet).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from karmada_api.names import fnv32a, safe_encode

DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY = "pod-template-hash"


def pod_template_hash(template: Mapping[str, Any] | None, collision_count: int | None = None) -> str:
    """The hash label value of ``template``; a collision count (Deployment status) changes it."""
    data = json.dumps(template or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    if collision_count is not None:
        # ComputeHash writes the count's bytes (little-endian uint32) after the template.
        data += int(collision_count).to_bytes(4, "little", signed=False)
    return safe_encode(str(fnv32a(data)))
