"""metav1.Time: RFC 3339, UTC, whole seconds (how Kubernetes serializes it, so every Karmada timestamp too)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1024)  # controllers format the same few seconds over and over; strftime is slow
def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@lru_cache(maxsize=1024)  # the same timestamps are read from many objects (datetimes are immutable)
def parse_time(text: str) -> datetime:
    """Parse an RFC 3339 timestamp (``Z`` or offset, optional fraction) into an aware UTC datetime."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def parse_optional_time(value: Any) -> datetime | None:
    """A metav1.Time field's value, or None for Go's zero time: missing, empty, not a string or unparsable
    (a malformed time is as good as none: nothing can be computed with it)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def now_text() -> str:
    return format_time(now())
