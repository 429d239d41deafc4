"""Kubernetes label selectors: ``labels.Requirement`` and ``metav1.LabelSelectorAsSelector``.

Exact Kubernetes semantics on parsed JSON dicts (camelCase fields). :func:`compile_requirement` is
one ``labels.NewRequirement`` (key and value syntax validated; In, NotIn, Exists, DoesNotExist, Gt,
Lt) compiled to a predicate over a label map; :func:`compile_label_selector` /
:func:`label_selector_matches` are ``metav1.LabelSelectorAsSelector(...).Matches``. Node affinity
(:mod:`kube_api.affinity`) builds its terms from the same requirements.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from controller_manager.objects import Obj

from .validation import is_qualified_name, is_valid_label_value, parse_int64

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

_SET_TERM = re.compile(r"^(?P<key>[^\s!=<>(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_BINARY_TERM = re.compile(r"^(?P<key>[^\s!=<>(),]+)\s*(?P<op>==|=|!=|>|<)\s*(?P<value>[^\s!=<>(),]*)$")
_BINARY_OPERATORS = {"=": "In", "==": "In", "!=": "NotIn", ">": "Gt", "<": "Lt"}


def _split_selector_terms(text: str) -> list[str]:
    """Split at the commas outside parentheses (``a in (x,y),b`` is two terms)."""
    terms, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            terms.append(text[start:index])
            start = index + 1
    terms.append(text[start:])
    return [term.strip() for term in terms]


def _parse_term(term: str) -> LabelPredicate:
    if not term:
        raise ValueError("empty requirement (a stray comma?)")
    if term.startswith("!"):
        return compile_requirement(term[1:].strip(), "DoesNotExist", [])
    if match := _SET_TERM.match(term):
        values = [value.strip() for value in match["values"].split(",")]  # "()" is the empty value, as in kube
        return compile_requirement(match["key"], "In" if match["op"] == "in" else "NotIn", values)
    if match := _BINARY_TERM.match(term):
        return compile_requirement(match["key"], _BINARY_OPERATORS[match["op"]], [match["value"]])
    if re.fullmatch(r"[^\s!=<>(),]+", term):
        return compile_requirement(term, "Exists", [])
    raise ValueError(f"cannot parse requirement {term!r}")


def parse_label_selector(text: str) -> LabelPredicate:
    """``labels.Parse``: a label selector string as a predicate; ``ValueError`` naming the bad requirement.

    Terms are ANDed: ``key=value`` (or ``==``), ``key!=value``, ``key in (a,b)``, ``key notin (a,b)``,
    ``key`` (exists), ``!key`` (does not exist), ``key>N``, ``key<N``. Keys and values are checked as
    Kubernetes checks them. An empty string selects everything, as in Kubernetes.
    """
    if not text.strip():
        return lambda labels: True
    return all_of([_parse_term(term) for term in _split_selector_terms(text)])
