"""Field selectors, parsed exactly as kube-apiserver parses them (``pkg/fields/selector.go``).

Label selectors are Kubernetes' rule, :class:`kube_api.selectors.LabelSelector`. Parsing happens once
per request, while ``matches`` runs for every object of a list and every watch event, so matching
does nothing but dict look-ups and comparisons.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from devplane.apiserver.errors import StatusError, bad_request
from kube_api.validation import go_quote

__all__ = ["FieldSelector", "field_values"]


def _split_terms(selector: str) -> list[str]:
    """Split on unescaped commas; escapes stay in place for ``_unescape_value``."""
    if not selector:
        return []
    if "\\" not in selector:
        return selector.split(",")
    terms: list[str] = []
    start = 0
    in_slash = False
    for i, ch in enumerate(selector):
        if in_slash:
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch == ",":
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """``lhs, op, rhs`` at the first ``!=``, ``==`` or ``=`` (the lhs has no escaping)."""
    eq = term.find("=")
    ne = term.find("!=")
    if ne != -1 and (eq == -1 or ne < eq):
        return term[:ne], "!=", term[ne + 2 :]
    if eq == -1:
        return None
    if term.startswith("==", eq):
        return term[:eq], "==", term[eq + 2 :]
    return term[:eq], "=", term[eq + 1 :]


def _unescape_value(value: str) -> str:
    """fields.UnescapeValue: ``\\\\``, ``\\,`` and ``\\=`` only; bare ``,``/``=`` are errors."""
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    in_slash = False
    for ch in value:
        if in_slash:
            if ch in "\\,=":
                out.append(ch)
            else:
                raise bad_request(f"invalid field selector: invalid escape sequence: \\{ch}")
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch in ",=":
            # Go formats the rune with %v, i.e. as its code point number.
            raise bad_request(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if in_slash:
        raise bad_request("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _escape_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


class FieldSelector:
    """A parsed ``fieldSelector``: AND of ``field=value`` / ``field!=value`` string comparisons."""

    __slots__ = ("_terms", "keys")

    def __init__(self, terms: Iterable[tuple[str, str, bool]] = ()) -> None:
        self._terms: tuple[tuple[str, str, bool], ...] = tuple(terms)  # (field, value, negated)
        self.keys: frozenset[str] = frozenset(field for field, _, _ in self._terms)

    @classmethod
    def parse(cls, text: str, allowed: Collection[str], *, builtin: bool) -> FieldSelector:
        """Parse ``text`` and reject fields outside ``allowed`` with kube's message.

        ``builtin`` picks the wording: built-in kinds list the supported fields, custom
        resources answer ``field label not supported``.  Like kube, syntax errors win over
        unknown fields, and terms are checked in sorted order.
        """
        terms: list[tuple[str, str, bool]] = []
        for part in sorted(_split_terms(text)):
            if not part:
                continue
            split = _split_term(part)
            if split is None:
                raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
            lhs, op, rhs = split
            terms.append((lhs, _unescape_value(rhs), op == "!="))
        allowed_order = tuple(allowed)
        allowed_set = frozenset(allowed_order)
        for field, _, _ in terms:
            if field not in allowed_set:
                raise _unknown_field(field, allowed_order, builtin=builtin)
        return cls(terms)

    def empty(self) -> bool:
        """True when the selector places no restriction."""
        return not self._terms

    def matches(self, fields: Mapping[str, str]) -> bool:
        """Compare as strings; an absent field counts as "" (kube's ``fields.Set.Get``)."""
        get = fields.get
        for field, value, negated in self._terms:  # noqa: SIM110 - a plain loop beats all(genexpr)
            if (get(field, "") == value) is negated:
                return False
        return True

    def matches_object(self, obj: Mapping[str, Any]) -> bool:
        """Convenience: extract this selector's fields from ``obj`` and match them."""
        return not self._terms or self.matches(field_values(obj, self.keys))

    def requires_exact_match(self, field: str) -> str | None:
        """The value ``field`` must equal (e.g. ``metadata.name`` for a direct get), else None."""
        for name, value, negated in self._terms:
            if name == field and not negated:
                return value
        return None

    def __str__(self) -> str:
        return ",".join(f"{f}{'!=' if neg else '='}{_escape_value(v)}" for f, v, neg in self._terms)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"


def _unknown_field(field: str, allowed: tuple[str, ...], *, builtin: bool) -> StatusError:
    if builtin:
        only = ", ".join(go_quote(name) for name in allowed)
        return bad_request(f"{go_quote(field)} is not a known field selector: only {only}")
    return bad_request(f"field label not supported: {field}")


@functools.lru_cache(maxsize=512)
def _field_path(name: str) -> tuple[str, ...]:
    return tuple(name.split("."))


def _field_string(value: Any) -> str:
    """How a field's value compares in a selector: kube formats bools and ints as Go does."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    return ""


def field_values(obj: Mapping[str, Any], names: Collection[str]) -> dict[str, str]:
    """Extract dotted ``names`` (``metadata.name``, ``spec.nodeName``, ``type``) as strings.

    Missing fields (or a path through a non-object) become "", matching how kube's field
    sets report absent values.
    """
    out: dict[str, str] = {}
    for name in names:
        current: Any = obj
        for part in _field_path(name):
            if isinstance(current, Mapping):
                current = current.get(part)
            else:
                current = None
                break
        out[name] = _field_string(current)
    return out
