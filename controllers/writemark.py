"""The mark a rebalancer's binding write carries: which WorkloadRebalancer it was for, and what it wrote.

The workload-rebalancer writes a binding (a reschedule trigger, or a preserve-mode lowering) and only then
stores the workload's result in the rebalancer's status. Between the two, the answer to the binding write can be
lost, the status write can fail, or the controller-manager can restart; the retry must then know whether its
write landed, or it writes again: a second fresh reschedule, or a second lowering decided on member data that
still counts the replicas the first one released.

The annotation is set in the same PUT as the write it describes, so the binding itself says whether that write
landed, across restarts and whichever replica of the controller-manager leads. It is left in place afterwards:
removing it would be one more binding write for each workload. The value is a JSON list, oldest first, of the
last :data:`KEPT` rebalancers' writes, each ``{"uid": <rebalancer uid>, "rescheduleTriggeredAt": <time>}`` or
``{"uid": <rebalancer uid>, "lowered": {<cluster>: <replicas released>}}``: another rebalancer writing the binding
while a result is not stored yet leaves the earlier mark readable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller_manager.objects import Obj
from kube_api.timeutil import parse_time

ANNOTATION = "rebalance.karmada-rebalance.io/written-for"
KEPT = 4
"""Marks kept on a binding: the newest writes, one per rebalancer."""


@dataclass(frozen=True)
class WriteMark:
    """What a rebalancer (``uid``) wrote to a binding: a trigger (``trigger``), else a lowering (``lowered``)."""

    uid: str
    trigger: str | None = None
    lowered: dict[str, int] = field(default_factory=dict)

    @property
    def is_trigger(self) -> bool:
        return self.trigger is not None

    def entry(self) -> dict[str, Any]:
        if self.trigger is not None:
            return {"uid": self.uid, "rescheduleTriggeredAt": self.trigger}
        return {"uid": self.uid, "lowered": self.lowered}


def read(binding: Obj, rebalancer_uid: str) -> WriteMark | None:
    """The mark on ``binding`` of a write for the rebalancer ``rebalancer_uid``, else None.

    An entry that is not one of ours (edited by hand, or cut) counts as no mark: the retry decides afresh.
    """
    for entry in reversed(_entries(binding)):
        if entry.get("uid") != rebalancer_uid:
            continue
        trigger = entry.get("rescheduleTriggeredAt")
        if isinstance(trigger, str):
            return WriteMark(rebalancer_uid, trigger=trigger) if _is_time(trigger) else None
        lowered = entry.get("lowered")
        if isinstance(lowered, dict) and lowered and all(_is_count(v) for v in lowered.values()):
            return WriteMark(rebalancer_uid, lowered={str(k): v for k, v in lowered.items()})
        return None
    return None


def stamped(update: Mapping[str, Any], mark: WriteMark) -> dict[str, Any]:
    """``update`` (a binding's PUT body) with ``mark`` added to its marks (replacing its rebalancer's earlier one,
    the oldest dropped beyond :data:`KEPT`); ``update`` itself is not changed."""
    kept = [entry for entry in _entries(update) if entry.get("uid") != mark.uid]
    text = json.dumps([*kept, mark.entry()][-KEPT:], separators=(",", ":"), sort_keys=True)
    metadata = dict(update.get("metadata") or {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), ANNOTATION: text}
    return {**update, "metadata": metadata}


def _entries(binding: Obj | Mapping[str, Any]) -> list[dict[str, Any]]:
    """The marks on ``binding``, oldest first; none when the value is not a JSON list."""
    text = ((binding.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    if not text:
        return []
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: a hand-edited value nested thousands deep
        return []
    return [entry for entry in body if isinstance(entry, dict)] if isinstance(body, list) else []


def _is_time(text: str) -> bool:
    try:
        parse_time(text)
    except ValueError:
        return False
    return True


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
