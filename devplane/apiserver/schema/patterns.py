"""A CRD schema's ``pattern``, read with Go's regexp syntax (RE2) by Python's ``re``.

kube-openapi matches ``pattern`` with Go's ``regexp``; where RE2 and Python differ (``$``,
``\\z``, POSIX classes, named groups, ``[`` inside a class) the pattern is rewritten, and
each pattern is compiled once for every schema that uses it.
"""

from __future__ import annotations

import re
import warnings
from typing import Final

_POSIX_CLASSES: Final = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ", "upper": "A-Z", "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}  # fmt: skip
_RX_MULTILINE_FLAG: Final = re.compile(r"\(\?[a-zA-Z]*m")
_REGEX_CACHE: dict[str, re.Pattern[str] | None] = {}


def _go_regex_to_python(pattern: str) -> str:
    """Translate the RE2 (Go) constructs that differ in Python's ``re``.

    ``$`` means end of text in Go (Python's also matches before a final newline), ``\\z``
    is Python's ``\\Z``, POSIX classes and ``(?<name>`` need rewriting, and a literal ``[``
    inside a class is escaped so Python does not read it as a nested set.
    """
    multiline = _RX_MULTILINE_FLAG.search(pattern) is not None
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            out.append("\\Z" if pattern[i + 1] == "z" and not in_class else pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            if c == "[":
                end = pattern.find(":]", i + 2) if pattern.startswith("[:", i) else -1
                name = pattern[i + 2 : end] if end != -1 else ""
                if name in _POSIX_CLASSES:
                    out.append(_POSIX_CLASSES[name])
                    i = end + 2
                    continue
                out.append("\\[")
            else:
                if c == "]":
                    in_class = False
                out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":
                out.append("\\]")
                i += 1
            continue
        if c == "$" and not multiline:
            out.append("\\Z")
        elif c == "(" and pattern.startswith("(?<", i) and pattern[i + 3 : i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def compile_pattern(pattern: str) -> re.Pattern[str] | None:
    """Compile a schema ``pattern`` once; a pattern Python cannot express is not enforced."""
    if pattern in _REGEX_CACHE:
        return _REGEX_CACHE[pattern]
    flags = 0 if "(?i" in pattern else re.ASCII  # Go's \d \w \s \b are ASCII-only
    compiled: re.Pattern[str] | None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = re.compile(_go_regex_to_python(pattern), flags)
    except (re.error, ValueError, OverflowError):
        compiled = None
    _REGEX_CACHE[pattern] = compiled
    return compiled
