"""The mark a rebalancer's binding write carries: which WorkloadRebalancer it was for, and what it wrote.

The workload-rebalancer writes a binding (a reschedule trigger, or a preserve-mode lowering) and only then
stores the workload's result in the rebalancer's status. Between the two, the answer to the binding write can be
lost, the status write can fail, or the controller-manager can restart; the retry must then know whether its
write landed, or it writes again: a second fresh reschedule, or a second lowering decided on member data that
still counts the replicas the first one released.

The annotation is set in the same PUT as the write it describes, so the binding itself says whether that write
landed, across restarts and whichever replica of the controller-manager leads. It is left in place afterwards (a
later rebalancer's write replaces it): removing it would be one more binding write for each workload. The value
is JSON: ``{"uid": <rebalancer uid>, "rescheduleTriggeredAt": <time>}`` or
``{"uid": <rebalancer uid>, "lowered": {<cluster>: <replicas released>}}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj

ANNOTATION = "rebalance.karmada-rebalance.io/written-for"


@dataclass(frozen=True)
class WriteMark:
    """What a rebalancer (``uid``) wrote to a binding: a trigger, or a lowering (``lowered``; may be empty)."""

    uid: str
    trigger: str | None = None
    lowered: dict[str, int] = field(default_factory=dict)

    def encode(self) -> str:
        body: dict[str, Any] = {"uid": self.uid}
        if self.trigger is not None:
            body["rescheduleTriggeredAt"] = self.trigger
        else:
            body["lowered"] = self.lowered
        return json.dumps(body, separators=(",", ":"), sort_keys=True)


def read(binding: Obj, rebalancer_uid: str) -> WriteMark | None:
    """The mark on ``binding`` when it is of a write for the rebalancer ``rebalancer_uid``, else None.

    A value that is not one of ours (edited by hand, or cut) counts as no mark: the retry decides afresh.
    """
    text = objects.annotations(binding).get(ANNOTATION)
    if not text:
        return None
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if not isinstance(body, dict) or body.get("uid") != rebalancer_uid:
        return None
    trigger = body.get("rescheduleTriggeredAt")
    if isinstance(trigger, str):
        return WriteMark(rebalancer_uid, trigger=trigger)
    lowered = body.get("lowered")
    if isinstance(lowered, dict) and all(isinstance(v, int) for v in lowered.values()):
        return WriteMark(rebalancer_uid, lowered={str(k): v for k, v in lowered.items()})
    return None


def stamped(update: Mapping[str, Any], mark: WriteMark) -> dict[str, Any]:
    """``update`` (a binding's PUT body) with ``mark`` among its annotations; ``update`` itself is not changed."""
    metadata = dict(update.get("metadata") or {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), ANNOTATION: mark.encode()}
    return {**update, "metadata": metadata}
