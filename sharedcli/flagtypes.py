"""The value types of Karmada's flags, as argparse ``type=`` callables.

Karmada's flags take Go's forms (pflag, ``time.ParseDuration``), and a deployment's existing
arguments must keep parsing: durations Go-style (``2m0s``, ``5ms``, ``16m40s``, ``1h30m``), bind
addresses Go's way (``:8080`` = all interfaces, ``127.0.0.1:8080``, ``0`` = off), booleans
``true``/``false`` (or ``t``/``f``, ``1``/``0``, ``yes``/``no``). A bad value is an argparse error:
one line and exit code 2, before anything starts.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TypeVar

N = TypeVar("N", int, float)

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration, in seconds: ``2m0s`` → 120.0; a bare ``0`` is allowed."""
    value = text.strip()
    sign = -1.0 if value.startswith("-") else 1.0
    if value[:1] in ("+", "-"):
        value = value[1:]
    if value == "0":
        return 0.0
    total, pos = 0.0, 0
    for match in _PART.finditer(value):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not value or pos != len(value):
        raise argparse.ArgumentTypeError(f'invalid duration "{text}": use forms like 5ms, 2m0s, 16m40s')
    return sign * total


def format_duration(seconds: float) -> str:
    """Go's Duration.String() for whole and fractional seconds: 120 → ``2m0s``, 0.005 → ``5ms``."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        ms = seconds * 1000
        return f"{ms:g}ms" if ms >= 1 else f"{seconds * 1e6:g}µs"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    out = f"{int(hours)}h" if hours else ""
    if hours or minutes:
        out += f"{int(minutes)}m"
    return out + f"{secs:g}s"


def _bounded(parse: Callable[[str], N], ok: Callable[[N], bool], message: str) -> Callable[[str], N]:
    """The type ``parse`` narrowed to the values ``ok`` accepts; any other is refused with ``message``,
    formatted with the flag's ``text`` and the parsed ``value``."""
    def checked(text: str) -> N:
        value = parse(text)
        if not ok(value):
            raise argparse.ArgumentTypeError(message.format(text=text, value=value))
        return value
    return checked


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid integer: {text!r}") from None


duration = _bounded(parse_duration, lambda s: s >= 0, 'invalid duration "{text}": must not be negative')
"""A Go duration, zero or more."""
positive_duration = _bounded(duration, lambda s: s > 0, 'invalid duration "{text}": must be greater than zero')
"""A Go duration greater than zero (periods and timeouts)."""
INT32_MAX = 2**31 - 1
ttl_after_finished = _bounded(duration, lambda s: s == int(s) and s <= INT32_MAX,
                              'invalid duration "{text}": ttlSecondsAfterFinished takes whole seconds, at most '
                              f"{format_duration(INT32_MAX)} (an int32)")
"""A Go duration for a WorkloadRebalancer's ``ttlSecondsAfterFinished``: whole seconds that fit its ``int32``
(kube-apiserver stores a larger one, which Karmada's Go controller then cannot decode)."""
non_negative_int = _bounded(_integer, lambda n: n >= 0, "must not be negative: {value}")
"""A whole number, zero or more (counts, bursts, verbosity)."""
positive_int = _bounded(non_negative_int, lambda n: n >= 1, "must be at least 1")
"""A whole number, one or more (workers, sizes)."""
port = _bounded(non_negative_int, lambda n: n <= 65535, "port out of range 0-65535: {value}")
"""A TCP port, 0-65535 (0: any free port, where a command allows it)."""


def bind_address(text: str) -> str:
    """``0`` (off), ``:PORT``, ``HOST:PORT`` or ``[IPv6]:PORT``."""
    if text == "0":
        return text
    _, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f'invalid bind address "{text}": use HOST:PORT, :PORT or 0 to disable')
    return text


_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def object_name(text: str) -> str:
    """An object name (DNS-1123 subdomain): refused here rather than by a 422 on every election round."""
    if len(text) > 253 or not _SUBDOMAIN.fullmatch(text):
        raise argparse.ArgumentTypeError(f'invalid name "{text}": use lowercase letters, digits, "-" and "." '
                                         "(at most 253 characters, starting and ending with a letter or digit)")
    return text


def boolean(text: str) -> bool:
    """``--flag=false`` as well as a bare ``--flag`` (with ``nargs="?", const=True``); the spellings Go's
    ``strconv.ParseBool`` takes, and only those (a value Karmada's flag refuses is refused here too)."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise argparse.ArgumentTypeError(f'invalid boolean "{text}": use true or false')
