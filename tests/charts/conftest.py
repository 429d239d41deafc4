"""Chart fixtures: the chart loaded, and rendered with its default values, once for this folder's tests."""

from __future__ import annotations

import helm_python
import pytest

from tests.charts.chartutil import Manifest, load_chart, render


@pytest.fixture(scope="package")
def chart() -> helm_python.Chart:
    return load_chart()


@pytest.fixture(scope="package")
def default_docs(chart: helm_python.Chart) -> list[Manifest]:
    """``helm template`` with the chart's default values."""
    return render(chart)
