"""metav1.Time: RFC 3339, UTC, whole seconds — every Karmada timestamp has that precision."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache


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


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def now_text() -> str:
    return format_time(now())
