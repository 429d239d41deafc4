"""metav1.Condition helpers with apimachinery's ``meta.SetStatusCondition`` semantics."""

from __future__ import annotations

from typing import Any

from .timeutil import now_text


def find_condition(conditions: list[dict[str, Any]] | None, ctype: str) -> dict[str, Any] | None:
    return next((c for c in conditions or [] if c.get("type") == ctype), None)


def set_condition(conditions: list[dict[str, Any]], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Add or update by ``type``; ``lastTransitionTime`` moves only when ``status`` changes.

    Returns a new list (inputs are not mutated: they may be shared cache objects).
    """
    result = [dict(c) for c in conditions]
    existing = find_condition(result, new["type"])
    if existing is None:
        added = dict(new)
        added.setdefault("lastTransitionTime", now_text())
        result.append(added)
        return result
    if existing.get("status") != new.get("status"):
        existing["status"] = new["status"]
        existing["lastTransitionTime"] = new.get("lastTransitionTime") or now_text()
    existing["reason"] = new.get("reason", "")
    existing["message"] = new.get("message", "")
    if "observedGeneration" in new:
        existing["observedGeneration"] = new["observedGeneration"]
    return result
