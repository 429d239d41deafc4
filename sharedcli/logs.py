"""structlog set-up for every command: text or JSON lines on stderr, klog-style verbosity.

Every program (the components, ``karmada-devplane``, the benchmarks) logs the same way, chosen by
the flags Karmada's components take for it: ``--logging-format`` (component-base) and ``-v`` (klog).
"""

from __future__ import annotations

import contextlib
import logging
import sys

import structlog


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is now: a logger cached with the stream of the moment would
    keep writing to it after it was replaced and closed (pytest's capture, a redirected CLI run).

    A write that fails is dropped, as klog drops it: a log line must never stop the program. With stderr
    a pipe whose reader went away (``... 2>&1 | head``, a log collector that died), every line raises
    ``BrokenPipeError``; the signal handler's line would then stop the shutdown it announces."""

    def write(self, text: str) -> int:
        try:
            return sys.stderr.write(text)
        except (OSError, ValueError):  # a broken pipe, a full disk; a closed stream
            return 0

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()


def configure_logging(fmt: str = "text", verbosity: int = 0) -> None:
    """``-v 0`` logs info and above; ``-v 4`` and more adds debug (klog's convention); a negative
    verbosity keeps warnings and errors only (a narrating command such as the demo)."""
    level = logging.DEBUG if verbosity >= 4 else logging.INFO if verbosity >= 0 else logging.WARNING
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if fmt == "json" else structlog.dev.ConsoleRenderer(colors=False))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )
