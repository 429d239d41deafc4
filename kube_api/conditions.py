"""metav1.Condition helpers with apimachinery's ``meta.FindStatusCondition`` and ``meta.SetStatusCondition``
semantics."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, cast

from .shapes import Condition
from .timeutil import now_text


def find_condition(conditions: Iterable[Mapping[str, Any]] | None, ctype: str) -> Condition | None:
    """``meta.FindStatusCondition``: the first condition of type ``ctype``, None without one (entries that
    are not objects are skipped: a status written by hand may hold anything)."""
    found = next((c for c in conditions or [] if isinstance(c, Mapping) and c.get("type") == ctype), None)
    return cast(Condition | None, found)


def set_condition(conditions: list[dict[str, Any]], new: dict[str, Any]) -> list[dict[str, Any]]:
    """Add or update by ``type``; ``lastTransitionTime`` moves only when ``status`` changes.

    Returns a new list (inputs are not mutated: they may be shared cache objects).
    """
    current = find_condition(conditions, new["type"])
    if current is None:
        added = dict(new)
        added.setdefault("lastTransitionTime", now_text())
        return [*(dict(c) for c in conditions), added]
    updated = dict(current)
    if updated.get("status") != new.get("status"):
        updated["status"] = new["status"]
        updated["lastTransitionTime"] = new.get("lastTransitionTime") or now_text()
    updated["reason"] = new.get("reason", "")
    updated["message"] = new.get("message", "")
    if "observedGeneration" in new:
        updated["observedGeneration"] = new["observedGeneration"]
    return [updated if c is current else dict(c) for c in conditions]
