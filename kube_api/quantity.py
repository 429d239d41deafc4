"""Kubernetes ``resource.Quantity``: parsing, canonical printing and the integer views every estimator uses.

Values are exact :class:`~fractions.Fraction` objects, normalised the way apimachinery's
``ParseQuantity`` does it: rounded *away from zero* to nano precision ("if you want some resources,
you should get some resources"), and binary-suffixed amounts (``Ki``…``Ei``) capped at 2^63 - 1.
:func:`value` and :func:`milli_value` mirror ``Quantity.Value()`` / ``Quantity.MilliValue()``: they
round away from zero ("up" for the non-negative amounts resource lists hold), so ``"100m"`` has
value 1 and ``"0.5m"`` milli-value 1.

Grammar (apimachinery, including its leniencies, e.g. ``"1."``, ``".5"`` and ``"1.G"`` are valid)::

    <quantity> ::= <sign>? <digits>? ("." <digits>?)? <suffix>
    <suffix>   ::= "" | n | u | m | k | M | G | T | P | E | Ki | Mi | Gi | Ti | Pi | Ei
                 | (e | E) <sign>? <digits>

Estimates parse the same few strings (``"100m"``, ``"1Gi"``, ``"110"``) over and over, so string
parsing and the integer views of strings are memoised.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Final

from controller_manager.objects import Obj

QuantityLike = str | int | float | Decimal | Fraction

MAX_ALLOWED = 2**63 - 1
"""apimachinery caps a parsed binary-suffixed quantity at int64 max (``maxAllowed``)."""

_NANO = Fraction(1, 10**9)
# Any non-zero mantissa times 10**-1000 rounds up to 1n, exactly like the unbounded exponent would;
# bounding it keeps a hostile "1e-999999999" from building a huge Fraction. Past +1000 we refuse.
_EXPONENT_BOUND = 1000

FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUFFIX_ERROR = "unable to parse quantity's suffix"

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}

# number part (sign, integer digits, optional fraction), then suffix letters, optional sign, digits —
# the same split as apimachinery's parseQuantityString.
_SPLIT = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)")
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")


def _normalise(amount: Fraction, *, binary: bool = False) -> Fraction:
    """Round away from zero to 1n (and cap binary amounts at 2^63 - 1), like ParseQuantity."""
    if amount == 0:
        return Fraction(0)
    negative = amount < 0
    magnitude = -amount if negative else amount
    if (magnitude / _NANO).denominator != 1:
        nanos = -((-magnitude.numerator * 10**9) // magnitude.denominator)  # ceil
        magnitude = Fraction(nanos, 10**9)
    if binary and magnitude > MAX_ALLOWED:
        magnitude = Fraction(MAX_ALLOWED)
    return -magnitude if negative else magnitude


def _suffix_multiplier(suffix: str, text: str) -> tuple[Fraction, bool]:
    """(multiplier, is_binary) for a suffix."""
    if suffix in _DECIMAL_SUFFIXES:
        return Fraction(10) ** _DECIMAL_SUFFIXES[suffix], False
    if suffix in _BINARY_SUFFIXES:
        return Fraction(2 ** _BINARY_SUFFIXES[suffix]), True
    match = _EXPONENT.fullmatch(suffix)
    if match is None:
        raise ValueError(f"invalid quantity {text!r}: {SUFFIX_ERROR}")
    exponent = int(match.group(1))
    if exponent > _EXPONENT_BOUND:
        raise ValueError(f"invalid quantity {text!r}: exponent {exponent} is too large")
    return Fraction(10) ** max(exponent, -_EXPONENT_BOUND), False


@lru_cache(maxsize=8192)
def _parse_text(text: str) -> Fraction:
    if not text:
        raise ValueError(f"invalid quantity {text!r}: {FORMAT_ERROR}")
    match = _SPLIT.fullmatch(text)
    if match is None:
        raise ValueError(f"invalid quantity {text!r}: {FORMAT_ERROR}")
    sign, whole, fraction, suffix = match.groups()
    number = Fraction(int(whole or "0"))
    if fraction:
        number += Fraction(int(fraction), 10 ** len(fraction))
    multiplier, binary = _suffix_multiplier(suffix, text)
    amount = number * multiplier
    return _normalise(-amount if sign == "-" else amount, binary=binary)


def parse_quantity(quantity: QuantityLike) -> Fraction:
    """The exact value of a quantity string (or a JSON number); ``ValueError`` if malformed.

    Numbers are accepted because Quantity's JSON decoding accepts them (``"pods": 110``).
    """
    if isinstance(quantity, str):
        return _parse_text(quantity)
    if isinstance(quantity, bool):
        raise ValueError(f"invalid quantity {quantity!r}: not a number or string")
    if isinstance(quantity, int | Fraction):
        return _normalise(Fraction(quantity))
    if isinstance(quantity, float):
        if not math.isfinite(quantity):
            raise ValueError(f"invalid quantity {quantity!r}: not a finite number")
        return _normalise(Fraction(repr(quantity)))
    if isinstance(quantity, Decimal):
        if not quantity.is_finite():
            raise ValueError(f"invalid quantity {quantity!r}: not a finite number")
        return _normalise(Fraction(quantity))
    raise ValueError(f"invalid quantity {quantity!r}: not a number or string")


def _round_away(amount: Fraction) -> int:
    if amount.denominator == 1:
        return amount.numerator
    if amount > 0:
        return -((-amount.numerator) // amount.denominator)
    return amount.numerator // amount.denominator


@lru_cache(maxsize=8192)
def _value_text(text: str) -> int:
    return _round_away(_parse_text(text))


@lru_cache(maxsize=8192)
def _milli_text(text: str) -> int:
    return _round_away(_parse_text(text) * 1000)


def value(quantity: QuantityLike) -> int:
    """``Quantity.Value()``: the amount as an integer, rounded away from zero (``"100m"`` → 1)."""
    if isinstance(quantity, str):
        return _value_text(quantity)
    return _round_away(parse_quantity(quantity))


def milli_value(quantity: QuantityLike) -> int:
    """``Quantity.MilliValue()``: the amount in thousandths, rounded away from zero (CPU's unit)."""
    if isinstance(quantity, str):
        return _milli_text(quantity)
    return _round_away(parse_quantity(quantity) * 1000)


def is_quantity(quantity: object) -> bool:
    """True if ``quantity`` parses (a cheap validity check for callers that must not raise)."""
    try:
        parse_quantity(quantity)  # type: ignore[arg-type]
    except ValueError:
        return False
    return True


_DECIMAL_TEXT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_BINARY_TEXT = {exponent: suffix for suffix, exponent in _BINARY_SUFFIXES.items()} | {0: ""}


def format_decimal(mantissa: int, exponent: int = 0) -> str:
    """Canonical DecimalSI text of ``mantissa * 10**exponent`` (``Quantity.String()``): ``10m``, ``1k``, ``1500m``."""
    if mantissa == 0:
        return "0"
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    extra = exponent % 3  # Python's modulo is non-negative, as Go's "if extra < 0 { extra += 3 }"
    exponent -= extra
    mantissa *= 10**extra
    suffix = _DECIMAL_TEXT.get(exponent)
    return f"{mantissa}{suffix}" if suffix is not None else f"{mantissa}e{exponent}"


def format_binary(value: int) -> str:
    """Canonical BinarySI text of an integer amount: ``10Mi``, ``1500``; below 1024 it prints as DecimalSI."""
    if -1024 < value < 1024:
        return format_decimal(value)
    exponent = 0
    while value % 1024 == 0 and exponent < 60:
        value //= 1024
        exponent += 10
    return f"{value}{_BINARY_TEXT[exponent]}"


DECIMAL_SI: Final = "DecimalSI"
BINARY_SI: Final = "BinarySI"
DECIMAL_EXPONENT: Final = "DecimalExponent"

_BINARY_WRITTEN = re.compile(r".*[KMGTPE]i")
_EXPONENT_WRITTEN = re.compile(r".*[0-9.][eE][+-]?[0-9]+")


def quantity_format(quantity: object) -> str:
    """The apimachinery format a quantity string was written in (numbers are DecimalSI)."""
    if isinstance(quantity, str):
        text = quantity.strip()
        if _BINARY_WRITTEN.fullmatch(text):
            return BINARY_SI
        if _EXPONENT_WRITTEN.fullmatch(text):
            return DECIMAL_EXPONENT
    return DECIMAL_SI


def format_quantity(amount: Fraction | int, fmt: str = DECIMAL_SI) -> str:
    """``Quantity.String()``: the canonical text of ``amount`` in format ``fmt``.

    DecimalSI and BinarySI are :func:`format_decimal` and :func:`format_binary` (BinarySI falls back to DecimalSI
    for a fraction, as apimachinery does to avoid rounding); DecimalExponent writes the same canonical mantissa
    with an ``e<exponent>`` suffix.
    """
    amount = Fraction(amount)
    if fmt == BINARY_SI and amount.denominator == 1:
        return format_binary(amount.numerator)
    sign, magnitude = ("-", -amount) if amount < 0 else ("", amount)
    nanos = math.ceil(magnitude * 10**9)  # quantities are nano-precise; round up like ParseQuantity
    if fmt != DECIMAL_EXPONENT:
        return sign + format_decimal(nanos, -9)
    mantissa, exponent = nanos, -9
    while mantissa and mantissa % 10 == 0:
        mantissa, exponent = mantissa // 10, exponent + 1
    while exponent % 3:
        mantissa, exponent = mantissa * 10, exponent - 1
    return f"{sign}{mantissa}e{exponent}" if exponent and mantissa else f"{sign}{mantissa}"


def canonical(quantity: QuantityLike) -> str:
    """``Quantity.String()`` of a parsed quantity, as kube prints it back (``"0.5"`` is ``500m``, ``"2048Mi"``
    is ``2Gi``); raises ValueError as :func:`parse_quantity` does."""
    return format_quantity(parse_quantity(quantity), quantity_format(quantity))


# --------------------------------------------------------------------------------------------------
# Resource names and lists (k8s.io/component-helpers resource helpers, the scheduler's ``Resource``)

RESOURCE_CPU = "cpu"
RESOURCE_MEMORY = "memory"
RESOURCE_PODS = "pods"
RESOURCE_EPHEMERAL_STORAGE = "ephemeral-storage"

_REQUESTS_PREFIX = "requests."


def is_prefixed_native_resource(name: str) -> bool:
    """``kubernetes.io/``-prefixed names (e.g. ``kubernetes.io/batch-cpu``) are native."""
    return "kubernetes.io/" in name


def is_native_resource(name: str) -> bool:
    """Unprefixed names (``cpu``, ``memory``…) and ``kubernetes.io/`` ones."""
    return "/" not in name or is_prefixed_native_resource(name)


def is_hugepage_resource_name(name: str) -> bool:
    return name.startswith("hugepages-")


def is_attachable_volume_resource_name(name: str) -> bool:
    return name.startswith("attachable-volumes-")


_QUALIFIED_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def is_extended_resource_name(name: str) -> bool:
    """Domain-prefixed, not ``kubernetes.io/``, not ``requests.``, and ``requests.<name>`` qualified."""
    if is_native_resource(name) or name.startswith(_REQUESTS_PREFIX):
        return False
    prefix, _, short = (_REQUESTS_PREFIX + name).rpartition("/")
    return (prefix.count("/") == 0 and 0 < len(prefix) <= 253 and _DNS_SUBDOMAIN.fullmatch(prefix) is not None
            and 0 < len(short) <= 63 and _QUALIFIED_NAME_PART.fullmatch(short) is not None)


def is_scalar_resource_name(name: str) -> bool:
    """Resources tracked as plain integers besides cpu/memory/ephemeral-storage/pods (GPUs, hugepages…)."""
    return (is_extended_resource_name(name) or is_hugepage_resource_name(name)
            or is_prefixed_native_resource(name) or is_attachable_volume_resource_name(name))


def is_tracked_resource(name: str) -> bool:
    """Whether the scheduler's ``Resource`` type keeps ``name`` (others, e.g. ``storage``, are ignored)."""
    return (name in (RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_PODS, RESOURCE_EPHEMERAL_STORAGE)
            or is_scalar_resource_name(name))


def resource_units(name: str, quantity: QuantityLike) -> int:
    """A quantity in the integer unit the scheduler uses for ``name``: millicores for cpu, else Value()."""
    return milli_value(quantity) if name == RESOURCE_CPU else value(quantity)


@lru_cache(maxsize=16384)
def _tracked_text_units(name: str, text: str) -> int | None:
    return resource_units(name, text) if is_tracked_resource(name) else None


def _tracked_units(name: str, quantity: QuantityLike) -> int | None:
    """:func:`resource_units` for a tracked resource, None for an untracked one (memoised for strings)."""
    if isinstance(quantity, str):
        return _tracked_text_units(name, quantity)
    return resource_units(name, quantity) if is_tracked_resource(name) else None


def resource_list_units(resources: Mapping[str, QuantityLike] | None, *, include_pods: bool = True) -> dict[str, int]:
    """``Resource.NewResource``: tracked entries of a ResourceList in scheduler units (untracked dropped)."""
    result: dict[str, int] = {}
    for name, quantity in (resources or {}).items():
        if name == RESOURCE_PODS and not include_pods:
            continue
        units = _tracked_units(name, quantity)
        if units is not None:
            result[name] = result.get(name, 0) + units
    return result


def _container_requests(container: Obj) -> Mapping[str, QuantityLike]:
    """requests, with each limit standing in for a missing request (the API server's defaulting)."""
    resources = container.get("resources")
    if not resources:
        return {}
    requests = resources.get("requests") or {}
    limits = resources.get("limits")
    if not limits:
        return requests
    merged = dict(limits)
    merged.update(requests)
    return merged


def _add_units(total: dict[str, int], resources: Mapping[str, QuantityLike], *, maximum: bool = False) -> None:
    for name, quantity in resources.items():
        if name == RESOURCE_PODS:
            continue
        units = _tracked_units(name, quantity)
        if units is None:
            continue
        if maximum:
            if units > total.get(name, 0):
                total[name] = units
        else:
            total[name] = total.get(name, 0) + units


def pod_requests(spec: Obj) -> dict[str, int]:
    """A pod's effective request in scheduler units (``calculateResource``), pods excluded.

    max(sum of containers, each init container) per resource, plus ``overhead``; a container's
    limit is used where its request is absent.
    """
    total: dict[str, int] = {}
    for container in spec.get("containers") or ():
        _add_units(total, _container_requests(container))
    for container in spec.get("initContainers") or ():
        _add_units(total, _container_requests(container), maximum=True)
    overhead = spec.get("overhead")
    if overhead:
        _add_units(total, overhead)
    return total


def format_resource_amount(name: str, units: int) -> str:
    """An amount of resource ``name`` in scheduler units (milli-CPU, bytes, counts) as Karmada's
    ``Resource.ResourceList()`` prints it: CPU in milli, memory, storage and hugepages in binary SI."""
    if name == RESOURCE_CPU:
        return format_decimal(units, -3)
    if name in (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE) or is_hugepage_resource_name(name):
        return format_binary(units)
    return format_decimal(units)
