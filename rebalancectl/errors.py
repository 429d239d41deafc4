"""The two failures the command reports, each with its exit code (docs/karmada-rebalance.md)."""

from __future__ import annotations


class UsageError(Exception):
    """Bad flags, or a selection that matches nothing: exit 2 with one line saying why."""


class CommandError(Exception):
    """The API server refused or could not be reached: exit 1 with its message."""


class WaveHeldBack(Exception):
    """``--max-concurrent``: a wave did not become healthy (or a workload of it failed); exit 3, no further wave."""
