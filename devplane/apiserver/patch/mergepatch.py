"""RFC 7386 JSON merge patch (``application/merge-patch+json``), on plain JSON values.

kube-apiserver applies it with evanphx/json-patch's ``MergePatch`` (k8s.io/apiserver
``pkg/endpoints/handlers/patch.go``); server-side apply reuses it here as its simplified merge.
"""

from __future__ import annotations

from typing import Any

from devplane.apiserver.codec import copy_json


def apply_merge_patch(original: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch.

    ``null`` deletes a key, objects merge recursively, anything else (lists included)
    replaces; a patch that is not an object replaces the whole document.
    """
    if not isinstance(patch, dict):
        return copy_json(patch)
    target: dict[str, Any] = copy_json(original) if isinstance(original, dict) else {}
    return _merge_into(target, patch)


def _merge_into(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """RFC 7386 ``MergePatch`` on a target this module owns (already a copy)."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            target[key] = _merge_into(current if isinstance(current, dict) else {}, value)
        else:
            target[key] = copy_json(value)
    return target
