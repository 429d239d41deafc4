"""The string formats a CRD schema may check, as kube-apiserver keeps and checks them.

kube drops every ``format`` but a fixed list before validating, and checks the kept ones
with go-openapi's ``strfmt``; this module holds that list and the checkers whose rules
matter for the dev server's objects (``date-time``, ``date``, ``byte``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import Final

# Formats kube keeps (apiservervalidation.StripUnsupportedFormatsPostProcess, dashes removed);
# any other format (int32, int64, float, ...) is dropped before validation.
SUPPORTED_FORMATS: Final = frozenset(
    {
        "bsonobjectid", "uri", "email", "hostname", "ipv4", "ipv6", "cidr", "mac", "uuid",
        "uuid3", "uuid4", "uuid5", "isbn", "isbn10", "isbn13", "creditcard", "ssn",
        "hexcolor", "rgbcolor", "byte", "password", "date", "duration", "datetime",
    }
)  # fmt: skip

_RX_DATE: Final = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_RX_TIME: Final = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))\Z")
_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _is_date(s: str) -> bool:
    """strfmt ``date``: Go's ``time.Parse("2006-01-02", s)`` succeeds."""
    m = _RX_DATE.match(s)
    if m is None:
        return False
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= day <= _DAYS[month - 1] + (1 if month == 2 and leap else 0)


def _is_date_time(s: str) -> bool:
    """strfmt ``IsDateTime`` (date, a ``t``, then ``hh:mm:ss[.frac](z|±hh:mm)``, case-insensitive)."""
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not _is_date(parts[0]):
        return False
    m = _RX_TIME.match(parts[1])
    return m is not None and m[1] <= "23" and m[2] <= "59" and m[3] <= "59"


def _is_base64(s: str) -> bool:
    """strfmt ``byte``: Go's ``base64.StdEncoding.DecodeString`` (padding required, CR/LF ignored)."""
    try:
        base64.b64decode(s.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


FORMAT_CHECKERS: Final[dict[str, Callable[[str], bool]]] = {
    "datetime": _is_date_time,
    "date": _is_date,
    "byte": _is_base64,
}

