"""Kubernetes resource.Quantity parsing, its integer views, resource names and pod requests."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kube_api.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    FORMAT_ERROR,
    MAX_ALLOWED,
    SUFFIX_ERROR,
    canonical,
    format_quantity,
    is_quantity,
    is_scalar_resource_name,
    is_tracked_resource,
    milli_value,
    parse_quantity,
    pod_requests,
    quantity_format,
    resource_list_units,
    resource_units,
    value,
)

F = Fraction


@pytest.mark.parametrize(("text", "expected"), [
    ("0", F(0)),
    ("1", F(1)),
    ("110", F(110)),
    ("100m", F(1, 10)),
    ("1500m", F(3, 2)),
    ("1.5", F(3, 2)),
    ("0.5", F(1, 2)),
    ("+2", F(2)),
    ("-1.5", F(-3, 2)),
    ("007", F(7)),
    ("1n", F(1, 10**9)),
    ("1u", F(1, 10**6)),
    ("1k", F(1000)),
    ("1M", F(10**6)),
    ("1G", F(10**9)),
    ("1T", F(10**12)),
    ("1P", F(10**15)),
    ("1E", F(10**18)),
    ("1Ki", F(1024)),
    ("1Mi", F(2**20)),
    ("1.5Gi", F(3 * 2**29)),
    ("1Ti", F(2**40)),
    ("1Pi", F(2**50)),
    ("1Ei", F(2**60)),
    ("1e3", F(1000)),
    ("1E3", F(1000)),
    ("1e+3", F(1000)),
    ("1E-3", F(1, 1000)),
    ("2.5e-1", F(1, 4)),
    # apimachinery's lenient spellings
    (".5", F(1, 2)),
    ("1.", F(1)),
    ("1.G", F(10**9)),
    (".", F(0)),
    ("+", F(0)),
    ("-", F(0)),
    ("Gi", F(0)),
])
def test_parse(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    # rounded away from zero to nano precision
    ("0.5n", F(1, 10**9)),
    ("0.1n", F(1, 10**9)),
    ("1.0000000001", F(10**9 + 1, 10**9)),
    ("-0.5n", F(-1, 10**9)),
    ("1e-2000", F(1, 10**9)),
    # binary amounts are capped at int64 max, decimal ones are not
    ("8Ei", F(MAX_ALLOWED)),
    ("100Ei", F(MAX_ALLOWED)),
    ("1e20", F(10**20)),
])
def test_parse_rounding_and_cap(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("", FORMAT_ERROR),
    ("abc", FORMAT_ERROR),
    ("1 ", FORMAT_ERROR),
    (" 1", FORMAT_ERROR),
    ("1.5.5", FORMAT_ERROR),
    ("0x10", FORMAT_ERROR),
    ("1e-", SUFFIX_ERROR),
    ("1i", SUFFIX_ERROR),
    ("1e", SUFFIX_ERROR),
    ("1K", SUFFIX_ERROR),
    ("1Mi5", SUFFIX_ERROR),
    ("1mi", SUFFIX_ERROR),
    ("Ki1", SUFFIX_ERROR),
    ("1e2000", "too large"),
])
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="invalid quantity") as info:
        parse_quantity(text)
    assert message in str(info.value)
    assert not is_quantity(text)


def test_parse_numbers() -> None:
    assert parse_quantity(110) == 110
    assert parse_quantity(0.1) == F(1, 10)
    assert parse_quantity(Decimal("1.25")) == F(5, 4)
    assert parse_quantity(F(1, 3)) == F(333333334, 10**9)  # rounded up to nano
    for bad in (True, None, [], float("nan"), float("inf"), Decimal("NaN")):
        with pytest.raises(ValueError):
            parse_quantity(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "expected_value", "expected_milli"), [
    ("100m", 1, 100),
    ("1", 1, 1000),
    ("1.5", 2, 1500),
    ("0.5m", 1, 1),
    ("1n", 1, 1),
    ("0", 0, 0),
    ("1Gi", 2**30, 2**30 * 1000),
    ("-1.5", -2, -1500),
    ("-100m", -1, -100),
])
def test_value_and_milli_value_round_away_from_zero(text: str, expected_value: int, expected_milli: int) -> None:
    assert value(text) == expected_value
    assert milli_value(text) == expected_milli
    assert value(parse_quantity(text)) == expected_value
    assert milli_value(parse_quantity(text)) == expected_milli


def test_value_of_numbers() -> None:
    assert value(1.5) == 2
    assert milli_value(2) == 2000
    assert value(F(-1, 2)) == -1


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_integers_round_trip(number: int) -> None:
    assert parse_quantity(str(number)) == number
    assert value(str(number)) == number
    assert milli_value(str(number)) == number * 1000


@given(st.integers(min_value=0, max_value=10**12), st.sampled_from(["m", "", "k", "Ki", "Mi", "Gi"]))
def test_value_is_ceiling_for_non_negative(number: int, suffix: str) -> None:
    exact = parse_quantity(f"{number}{suffix}")
    assert value(f"{number}{suffix}") == -((-exact.numerator) // exact.denominator)


@pytest.mark.parametrize(("name", "scalar", "tracked"), [
    ("cpu", False, True),
    ("memory", False, True),
    ("pods", False, True),
    ("ephemeral-storage", False, True),
    ("storage", False, False),
    ("foo", False, False),
    ("nvidia.com/gpu", True, True),
    ("hugepages-2Mi", True, True),
    ("kubernetes.io/batch-cpu", True, True),
    ("attachable-volumes-aws-ebs", True, True),
    ("requests.example.com/foo", False, False),
    ("example.com/a/b", False, False),
])
def test_resource_names(name: str, scalar: bool, tracked: bool) -> None:
    assert is_scalar_resource_name(name) is scalar
    assert is_tracked_resource(name) is tracked


def test_resource_units() -> None:
    assert resource_units("cpu", "250m") == 250
    assert resource_units("memory", "1Ki") == 1024
    assert resource_list_units({"cpu": "1", "pods": "110", "storage": "1Gi", "nvidia.com/gpu": 2}) == {
        "cpu": 1000, "pods": 110, "nvidia.com/gpu": 2}
    assert resource_list_units({"cpu": "1", "pods": "110"}, include_pods=False) == {"cpu": 1000}
    assert resource_list_units(None) == {}


def test_pod_requests_sum_containers_max_init_plus_overhead() -> None:
    spec = {
        "containers": [
            {"resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}},
            {"resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "1", "memory": "1"}}},
            {},
        ],
        "initContainers": [
            {"resources": {"requests": {"cpu": "500m", "memory": "10"}}},
            {"resources": {"limits": {"nvidia.com/gpu": "1"}}},
        ],
        "overhead": {"cpu": "10m", "memory": "5"},
    }
    # cpu: max(300, 500) + 10; memory: max(1Gi + 1, 10) + 5; the GPU limit stands in for a request.
    assert pod_requests(spec) == {"cpu": 510, "memory": 2**30 + 6, "nvidia.com/gpu": 1}


def test_pod_requests_limit_used_when_request_absent() -> None:
    spec = {"containers": [{"resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "1"}}}]}
    assert pod_requests(spec) == {"cpu": 1000, "memory": 2**30}
    assert pod_requests({}) == {}
    assert pod_requests({"containers": [{"resources": {"requests": {"pods": "1", "storage": "1"}}}]}) == {}


@pytest.mark.parametrize(("amount", "fmt", "text"), [
    (Fraction(3, 2), DECIMAL_SI, "1500m"),
    (Fraction(2), DECIMAL_SI, "2"),
    (Fraction(4000), DECIMAL_SI, "4k"),
    (Fraction(110), DECIMAL_SI, "110"),
    (Fraction(1, 10**9), DECIMAL_SI, "1n"),
    (Fraction(0), BINARY_SI, "0"),
    (Fraction(16 * 2**30), BINARY_SI, "16Gi"),
    (Fraction(5 * 2**29), BINARY_SI, "2560Mi"),
    (Fraction(1_500_000_000), BINARY_SI, "1500000000"),  # not a multiple of 1024
    (Fraction(512), BINARY_SI, "512"),                   # below 1024: shown as DecimalSI
    (Fraction(1, 2), BINARY_SI, "500m"),
    (Fraction(1000), DECIMAL_EXPONENT, "1e3"),
    (Fraction(-1500), DECIMAL_SI, "-1500"),
])
def test_quantity_rendering(amount: Fraction, fmt: str, text: str) -> None:
    assert format_quantity(amount, fmt) == text


def test_quantity_format_detection() -> None:
    assert [quantity_format(q) for q in ("8Gi", "1e3", "4", "1E", "100m", 3)] == [
        BINARY_SI, DECIMAL_EXPONENT, DECIMAL_SI, DECIMAL_SI, DECIMAL_SI, DECIMAL_SI]


@pytest.mark.parametrize(("written", "shown"), [("0.5", "500m"), ("2048Mi", "2Gi"), ("1500m", "1500m"), (2, "2"),
                                                ("1e3", "1e3"), ("-1", "-1"), ("2000Mi", "2000Mi")])
def test_a_quantity_is_shown_as_kube_prints_it_back(written: str | int, shown: str) -> None:
    assert canonical(written) == shown
