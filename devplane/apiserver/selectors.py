"""Label and field selectors, parsed exactly as kube-apiserver parses them.

The label-selector lexer and parser are a line-by-line port of
``k8s.io/apimachinery/pkg/labels/selector.go`` so that the accepted syntax *and* the error
messages (``found '', expected: ',' or ')'`` ...) match; the field-selector parser ports
``pkg/fields/selector.go``.  Parsing happens once per request, while ``matches`` runs for
every object of a list and every watch event, so parsing compiles the selector into flat
tuples and matching does nothing but dict look-ups and comparisons.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final, NamedTuple

from devplane.apiserver.errors import StatusError, bad_request
from kube_api.validation import (
    aggregate_messages,
    go_quote,
    invalid_message,
    is_qualified_name,
    is_valid_label_value,
    parse_int64,
)

__all__ = ["FieldSelector", "LabelSelector", "field_values"]


# ============================================================================================
# label selectors
# ============================================================================================


class _Tok(enum.IntEnum):
    """Lexer tokens; ERROR must be 0 because the lexer tests ``tok != 0`` like the Go code."""

    ERROR = 0
    END = 1
    CLOSED_PAR = 2
    COMMA = 3
    DOES_NOT_EXIST = 4
    DOUBLE_EQUALS = 5
    EQUALS = 6
    GREATER_THAN = 7
    IDENTIFIER = 8
    IN = 9
    LESS_THAN = 10
    NOT_EQUALS = 11
    NOT_IN = 12
    OPEN_PAR = 13


_STRING2TOKEN: Final[Mapping[str, _Tok]] = {
    ")": _Tok.CLOSED_PAR,
    ",": _Tok.COMMA,
    "!": _Tok.DOES_NOT_EXIST,
    "==": _Tok.DOUBLE_EQUALS,
    "=": _Tok.EQUALS,
    ">": _Tok.GREATER_THAN,
    "in": _Tok.IN,
    "<": _Tok.LESS_THAN,
    "!=": _Tok.NOT_EQUALS,
    "notin": _Tok.NOT_IN,
    "(": _Tok.OPEN_PAR,
}
_SPECIAL: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")
# selection.Operator strings, in apimachinery's binaryOperators order (used in one message).
_BINARY_OPERATORS: Final = ("in", "notin", "=", "==", "!=", "gt", "lt")


class _Lexer:
    """Port of labels.Lexer; Go reads bytes and treats byte 0 as end of input, as do we."""

    __slots__ = ("pos", "s")

    def __init__(self, s: str) -> None:
        self.s = s
        self.pos = 0

    def read(self) -> str:
        """Next character, or "" at the end (Go returns 0 without advancing)."""
        if self.pos < len(self.s):
            ch = self.s[self.pos]
            self.pos += 1
            return "" if ch == "\x00" else ch
        return ""

    def unread(self) -> None:
        self.pos -= 1

    def scan_id_or_keyword(self) -> tuple[_Tok, str]:
        buffer: list[str] = []
        while True:
            ch = self.read()
            if ch == "":
                break
            if ch in _SPECIAL or ch in _WHITESPACE:
                self.unread()
                break
            buffer.append(ch)
        lit = "".join(buffer)
        return _STRING2TOKEN.get(lit, _Tok.IDENTIFIER), lit

    def scan_special_symbol(self) -> tuple[_Tok, str]:
        last_tok, last_lit = _Tok.ERROR, ""
        buffer = ""
        while True:
            ch = self.read()
            if ch == "":
                break
            if ch in _SPECIAL:
                buffer += ch
                tok = _STRING2TOKEN.get(buffer)
                if tok is not None:
                    last_tok, last_lit = tok, buffer
                elif last_tok != _Tok.ERROR:
                    self.unread()
                    break
            else:
                self.unread()
                break
        if last_tok == _Tok.ERROR:
            return _Tok.ERROR, f"error expected: keyword found '{buffer}'"
        return last_tok, last_lit

    def lex(self) -> tuple[_Tok, str]:
        ch = self.read()
        while ch in _WHITESPACE:
            ch = self.read()
        if ch == "":
            return _Tok.END, ""
        self.unread()
        if ch in _SPECIAL:
            return self.scan_special_symbol()
        return self.scan_id_or_keyword()


class _ParseError(Exception):
    """A parser failure carrying kube's message; turned into a 400 at the API boundary."""


# requirement operators (compiled form)
_EQ: Final = 0  # "=", "==" and single-valued "in"
_NE: Final = 1  # "!=" and single-valued "notin"
_IN: Final = 2
_NOTIN: Final = 3
_EXISTS: Final = 4
_NOT_EXISTS: Final = 5
_GT: Final = 6
_LT: Final = 7


class _Requirement(NamedTuple):
    """One compiled requirement; ``value``/``values``/``bound`` are used depending on ``op``."""

    op: int
    key: str
    value: str
    values: frozenset[str]
    bound: int
    text: str  # kube's Requirement.String(), kept for __str__


def _requirement_string(key: str, op: str, values: list[str]) -> str:
    if op == "!":
        return "!" + key
    if op == "exists":
        return key
    if op in ("in", "notin"):
        return f"{key} {op} ({','.join(values)})"
    return f"{key}{op}{values[0]}"


def _new_requirement(key: str, op: str, values: list[str]) -> _Requirement:
    """labels.NewRequirement with a nil field path (how the apiserver calls labels.Parse).

    ``values`` arrive sorted (sets.String.List()); their index appears in error paths.
    """
    errs: list[str] = []
    if op in ("gt", "lt"):
        errs.extend(
            f"values[{i}]: " + invalid_message(v, "for 'Gt', 'Lt' operators, the value must be an integer")
            for i, v in enumerate(values)
            if parse_int64(v) is None
        )
    for i, v in enumerate(values):
        msgs = is_valid_label_value(v)
        if msgs:
            errs.append(f"values[{i}][{key}]: " + invalid_message(v, "; ".join(msgs)))
    if errs:
        raise _ParseError(aggregate_messages(errs))

    symbol = {"gt": ">", "lt": "<"}.get(op, op)
    text = _requirement_string(key, symbol, values)
    if op in ("=", "=="):
        return _Requirement(_EQ, key, values[0], frozenset(values), 0, text)
    if op == "!=":
        return _Requirement(_NE, key, values[0], frozenset(values), 0, text)
    if op in ("in", "notin"):
        code = _SET_OPS[op, len(values) == 1]
        return _Requirement(code, key, values[0], frozenset(values), 0, text)
    if op == "exists":
        return _Requirement(_EXISTS, key, "", frozenset(), 0, text)
    if op == "!":
        return _Requirement(_NOT_EXISTS, key, "", frozenset(), 0, text)
    bound = parse_int64(values[0])
    assert bound is not None  # checked above
    return _Requirement(_GT if op == "gt" else _LT, key, values[0], frozenset(values), bound, text)


# One-valued "in"/"notin" compile to the cheaper string comparison.
_SET_OPS: Final[Mapping[tuple[str, bool], int]] = {
    ("in", True): _EQ,
    ("in", False): _IN,
    ("notin", True): _NE,
    ("notin", False): _NOTIN,
}

_KEY_OR_OP: Final = 0
_VALUES: Final = 1


class _Parser:
    """Port of labels.Parser: scan everything first, then recursive descent with lookahead."""

    __slots__ = ("items", "position")

    def __init__(self, text: str) -> None:
        lexer = _Lexer(text)
        self.items: list[tuple[_Tok, str]] = []
        while True:
            tok, lit = lexer.lex()
            self.items.append((tok, lit))
            if tok == _Tok.END:
                break
        self.position = 0

    def lookahead(self, context: int) -> tuple[_Tok, str]:
        tok, lit = self.items[self.position]
        if context == _VALUES and tok in (_Tok.IN, _Tok.NOT_IN):
            tok = _Tok.IDENTIFIER
        return tok, lit

    def consume(self, context: int) -> tuple[_Tok, str]:
        tok, lit = self.lookahead(context)
        self.position += 1
        return tok, lit

    def parse(self) -> list[_Requirement]:
        requirements: list[_Requirement] = []
        while True:
            tok, lit = self.lookahead(_VALUES)
            if tok in (_Tok.IDENTIFIER, _Tok.DOES_NOT_EXIST):
                try:
                    requirements.append(self.parse_requirement())
                except _ParseError as err:
                    raise _ParseError(f"unable to parse requirement: {err}") from None
                t, lit2 = self.consume(_VALUES)
                if t == _Tok.END:
                    return requirements
                if t == _Tok.COMMA:
                    t2, lit3 = self.lookahead(_VALUES)
                    if t2 not in (_Tok.IDENTIFIER, _Tok.DOES_NOT_EXIST):
                        raise _ParseError(f"found '{lit3}', expected: identifier after ','")
                else:
                    raise _ParseError(f"found '{lit2}', expected: ',' or 'end of string'")
            elif tok == _Tok.END:
                return requirements
            else:
                raise _ParseError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def parse_requirement(self) -> _Requirement:
        key, op = self.parse_key_and_infer_operator()
        if op in ("exists", "!"):
            return _new_requirement(key, op, [])
        op = self.parse_operator()
        values = self.parse_values() if op in ("in", "notin") else self.parse_exact_value()
        return _new_requirement(key, op, sorted(values))

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        op = ""
        tok, lit = self.consume(_VALUES)
        if tok == _Tok.DOES_NOT_EXIST:
            op = "!"
            tok, lit = self.consume(_VALUES)
        if tok != _Tok.IDENTIFIER:
            raise _ParseError(f"found '{lit}', expected: identifier")
        msgs = is_qualified_name(lit)
        if msgs:
            # The apiserver parses with a nil field path, which Go prints as "<nil>".
            raise _ParseError("<nil>: " + invalid_message(lit, "; ".join(msgs)))
        if self.lookahead(_VALUES)[0] in (_Tok.END, _Tok.COMMA) and op != "!":
            op = "exists"
        return lit, op

    def parse_operator(self) -> str:
        tok, lit = self.consume(_KEY_OR_OP)
        op = _TOKEN_TO_OPERATOR.get(tok)
        if op is None:
            raise _ParseError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        return op

    def parse_values(self) -> set[str]:
        tok, lit = self.consume(_VALUES)
        if tok != _Tok.OPEN_PAR:
            raise _ParseError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(_VALUES)
        if tok in (_Tok.IDENTIFIER, _Tok.COMMA):
            values = self.parse_identifiers_list()
            if self.consume(_VALUES)[0] != _Tok.CLOSED_PAR:
                raise _ParseError(f"found '{lit}', expected: ')'")
            return values
        if tok == _Tok.CLOSED_PAR:  # "()" means the single empty value, as in kube
            self.consume(_VALUES)
            return {""}
        raise _ParseError(f"found '{lit}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.consume(_VALUES)
            if tok == _Tok.IDENTIFIER:
                values.add(lit)
                tok2, lit2 = self.lookahead(_VALUES)
                if tok2 == _Tok.COMMA:
                    continue
                if tok2 == _Tok.CLOSED_PAR:
                    return values
                raise _ParseError(f"found '{lit2}', expected: ',' or ')'")
            if tok == _Tok.COMMA:  # "(," ",," and ",)" all contribute the empty value
                if not values:
                    values.add("")
                tok2 = self.lookahead(_VALUES)[0]
                if tok2 == _Tok.CLOSED_PAR:
                    values.add("")
                    return values
                if tok2 == _Tok.COMMA:
                    self.consume(_VALUES)
                    values.add("")
            else:
                raise _ParseError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        tok = self.lookahead(_VALUES)[0]
        if tok in (_Tok.END, _Tok.COMMA):
            return {""}
        tok, lit = self.consume(_VALUES)
        if tok == _Tok.IDENTIFIER:
            return {lit}
        raise _ParseError(f"found '{lit}', expected: identifier")


_TOKEN_TO_OPERATOR: Final[Mapping[_Tok, str]] = {
    _Tok.IN: "in",
    _Tok.EQUALS: "=",
    _Tok.DOUBLE_EQUALS: "==",
    _Tok.GREATER_THAN: "gt",
    _Tok.LESS_THAN: "lt",
    _Tok.NOT_IN: "notin",
    _Tok.NOT_EQUALS: "!=",
}

_NO_LABELS: Final[Mapping[str, str]] = {}


class LabelSelector:
    """A parsed ``labelSelector``: the AND of its requirements (empty matches everything)."""

    __slots__ = ("_reqs",)

    def __init__(self, requirements: Iterable[_Requirement] = ()) -> None:
        # kube sorts by key for a deterministic String(); stable sort keeps duplicates in order.
        self._reqs: tuple[_Requirement, ...] = tuple(sorted(requirements, key=lambda r: r.key))

    @classmethod
    def parse(cls, text: str) -> LabelSelector:
        """Parse kube's selector syntax; bad syntax raises ``StatusError`` 400 BadRequest."""
        try:
            return cls(_Parser(text).parse())
        except _ParseError as err:
            raise bad_request(str(err)) from None

    def empty(self) -> bool:
        """True when the selector places no restriction (kube's ``Selector.Empty``)."""
        return not self._reqs

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with ``labels`` is selected; ``!=``/``notin`` accept missing keys."""
        if labels is None:
            labels = _NO_LABELS
        get = labels.get
        for op, key, value, values, bound, _ in self._reqs:
            have = get(key)
            if op == _EQ:
                if have != value:  # a missing key (None) never equals a string
                    return False
            elif op == _NE:
                if have == value:
                    return False
            elif op == _IN:
                if have is None or have not in values:
                    return False
            elif op == _NOTIN:
                if have is not None and have in values:
                    return False
            elif op == _EXISTS:
                if key not in labels:
                    return False
            elif op == _NOT_EXISTS:
                if key in labels:
                    return False
            else:
                number = parse_int64(have) if isinstance(have, str) else None
                if number is None or not (number > bound if op == _GT else number < bound):
                    return False
        return True

    def requires_exact_match(self, key: str) -> str | None:
        """The single value ``key`` must have (``=``, ``==``, one-valued ``in``), else None."""
        for req in self._reqs:
            if req.key == key:
                return req.value if req.op == _EQ else None
        return None

    def __str__(self) -> str:
        return ",".join(req.text for req in self._reqs)

    def __repr__(self) -> str:
        return f"LabelSelector({str(self)!r})"


# ============================================================================================
# field selectors
# ============================================================================================


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
