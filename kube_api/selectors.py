"""Kubernetes label selectors: ``labels.Requirement`` and ``metav1.LabelSelectorAsSelector``.

Exact Kubernetes semantics on parsed JSON dicts (camelCase fields). :func:`compile_requirement` is
one ``labels.NewRequirement`` (key and value syntax validated; In, NotIn, Exists, DoesNotExist, Gt,
Lt) compiled to a predicate over a label map; :func:`compile_label_selector` /
:func:`label_selector_matches` are ``metav1.LabelSelectorAsSelector(...).Matches``. Node affinity
(:mod:`kube_api.affinity`) builds its terms from the same requirements. :class:`LabelSelector` /
:func:`parse_label_selector` are ``labels.Parse``, the string form (``kubectl get -l``, a list's
``labelSelector``), with kube's error messages.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NamedTuple

from controller_manager.objects import Obj

from .validation import aggregate_messages, invalid_message, is_qualified_name, is_valid_label_value, parse_int64

# --------------------------------------------------------------------------------------------------
# Compiled requirements

LabelPredicate = Callable[[Mapping[str, str]], bool]


def compile_requirement(key: Any, operator: Any, values: Any) -> LabelPredicate:
    """One ``labels.Requirement`` as a predicate over a label map; ``ValueError`` if invalid."""
    # The syntax checks answer with apimachinery's messages: any message means invalid.
    if not isinstance(key, str) or is_qualified_name(key):
        raise ValueError(f"invalid label key {key!r}")
    vals = list(values or [])
    if not all(isinstance(v, str) and not is_valid_label_value(v) for v in vals):
        raise ValueError(f"invalid label value in {vals!r}")
    if operator in ("In", "NotIn"):
        if not vals:
            raise ValueError(f"for 'in', 'notin' operators, values set can't be empty (key {key!r})")
        allowed = frozenset(vals)
        if operator == "In":
            return lambda labels: key in labels and labels[key] in allowed
        return lambda labels: key not in labels or labels[key] not in allowed
    if operator in ("Exists", "DoesNotExist"):
        if vals:
            raise ValueError(f"values set must be empty for exists and does not exist (key {key!r})")
        if operator == "Exists":
            return lambda labels: key in labels
        return lambda labels: key not in labels
    if operator in ("Gt", "Lt"):
        if len(vals) != 1:
            raise ValueError(f"for 'Gt', 'Lt' operators, exactly one value is required (key {key!r})")
        bound = parse_int64(vals[0])
        if bound is None:
            raise ValueError(f"for 'Gt', 'Lt' operators, the value must be an integer (key {key!r})")

        def compare(labels: Mapping[str, str]) -> bool:
            if key not in labels:
                return False
            number = parse_int64(labels[key])
            if number is None:
                return False
            return number > bound if operator == "Gt" else number < bound

        return compare
    raise ValueError(f"{operator!r} is not a valid node selector operator")


def all_of(predicates: list[LabelPredicate]) -> LabelPredicate:
    if len(predicates) == 1:
        return predicates[0]
    return lambda labels: all(predicate(labels) for predicate in predicates)


# --------------------------------------------------------------------------------------------------
# metav1.LabelSelector


def compile_label_selector(selector: Obj | None) -> LabelPredicate:
    """``metav1.LabelSelectorAsSelector``: None selects nothing, ``{}`` everything; ``ValueError`` if invalid.

    matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist) are ANDed.
    """
    if selector is None:
        return lambda labels: False
    predicates: list[LabelPredicate] = []
    for key, wanted in (selector.get("matchLabels") or {}).items():
        predicates.append(compile_requirement(key, "In", [wanted]))
    for expression in selector.get("matchExpressions") or []:
        operator = expression.get("operator")
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"{operator!r} is not a valid label selector operator")
        predicates.append(compile_requirement(expression.get("key"), operator, expression.get("values")))
    if not predicates:
        return lambda labels: True
    return all_of(predicates)


def label_selector_matches(selector: Obj | None, labels: Mapping[str, str] | None) -> bool:
    """Whether ``labels`` match a ``metav1.LabelSelector`` (see :func:`compile_label_selector`)."""
    return compile_label_selector(selector)(labels or {})


# --------------------------------------------------------------------------------------------------
# labels.Parse: the string form (``app=web,tier!=db,env in (a,b),!canary``)
#
# The lexer and parser are a line-by-line port of ``k8s.io/apimachinery/pkg/labels/selector.go``, so
# that the accepted syntax *and* the error messages (``found '', expected: ',' or ')'`` ...) are
# kube's. Parsing compiles the selector into flat tuples once, so that matching (every object of a
# list, every watch event in the dev API server) does nothing but dict look-ups and comparisons.


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


class _ParseError(ValueError):
    """A parser failure carrying kube's message (the dev API server answers it as a 400)."""


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
        """``labels.Parse``; ``ValueError`` with kube's message (``unable to parse requirement: ...``)."""
        return cls(_Parser(text).parse())

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

    def __str__(self) -> str:
        return ",".join(req.text for req in self._reqs)

    def __repr__(self) -> str:
        return f"LabelSelector({str(self)!r})"


def parse_label_selector(text: str) -> LabelPredicate:
    """``labels.Parse`` as a predicate over a label map; ``ValueError`` with kube's message.

    Terms are ANDed: ``key=value`` (or ``==``), ``key!=value``, ``key in (a,b)``, ``key notin (a,b)``,
    ``key`` (exists), ``!key`` (does not exist), ``key>N``, ``key<N``. An empty string selects everything.
    """
    return LabelSelector.parse(text).matches
