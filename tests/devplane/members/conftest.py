"""The ``member`` fixture: one simulated member cluster per test (:mod:`tests.devplane.members.simulated`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.devplane.members.simulated import Member, simulated_member


@pytest.fixture
async def member() -> AsyncIterator[Member]:
    async with simulated_member() as plane:
        yield plane
