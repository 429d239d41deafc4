"""JSON encoding and timestamps, in the one form the server stores and answers with."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON, as kube-apiserver writes it."""
    return _encoder.encode(value).encode("utf-8")


def decode_json(data: bytes | str) -> Any:
    """Strict JSON, as Go decodes it: ``NaN`` and ``Infinity`` are syntax errors, not numbers."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data

    def reject(constant: str) -> Any:
        raise json.JSONDecodeError("Expecting value", text, max(text.find(constant), 0))

    return json.loads(text, parse_constant=reject)


def rfc3339(moment: datetime) -> str:
    """Whole seconds, UTC, ``Z`` suffix: the form of every metav1.Time."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339(offset_seconds: float = 0) -> str:
    return rfc3339(datetime.now(UTC) + timedelta(seconds=offset_seconds))


def parse_rfc3339(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
