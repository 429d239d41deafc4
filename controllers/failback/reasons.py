"""The reasons of the fail-back controller's Events (docs/failback.md, "Events and metrics"): on the Cluster for a
round's steps, on the binding for one workload's."""

from __future__ import annotations

EVENT_SCHEDULED = "FailbackScheduled"
EVENT_TRIGGERED = "FailbackTriggered"
EVENT_SKIPPED = "FailbackSkipped"
EVENT_PAUSED = "FailbackPaused"
EVENT_RESUMED = "FailbackResumed"
EVENT_RESUME_INVALID = "FailbackResumeInvalid"
EVENT_WAITING = "FailbackWaiting"
EVENT_NOT_PLACED = "FailbackNotPlaced"
