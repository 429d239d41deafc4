"""The user's documents with the chart's least-privilege RBAC enforced.

The dev plane's host API server authenticates with a token file and authorizes with RBAC; the
chart's rendered ServiceAccounts, roles and bindings are applied to it, and the real
``karmada-controller-manager`` and ``karmada-descheduler`` run with their ServiceAccount's token.
Each document must play out exactly as without RBAC; the server's recorded decisions then show that
no request of the components was denied and that everything they did is granted by the chart.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import pytest

from devplane.demo import play_descheduler, play_rebalancer
from devplane.demo_session import Narrator, Session, demo_plane_options
from devplane.plane import DevPlane
from tests.charts.chart_rbac import (
    CONTROLLER_MANAGER,
    DESCHEDULER,
    apply,
    chart_rbac,
    denied,
    granted,
    used,
    write_component_kubeconfigs,
    write_token_file,
)

pytestmark = pytest.mark.kubectl  # the documents are played with the real kubectl

Play = Callable[[Session], Awaitable[None]]


@pytest.mark.parametrize(("play", "components"), [
    (play_rebalancer, (CONTROLLER_MANAGER,)),
    (play_descheduler, (CONTROLLER_MANAGER, DESCHEDULER)),
], ids=["rebalancer", "descheduler"])
async def test_document_plays_with_the_charts_rbac(tmp_path: Path, play: Play, components: tuple[str, ...]) -> None:
    tokens = write_token_file(tmp_path / "tokens.csv")
    options = replace(demo_plane_options(), token_auth_file=tmp_path / "tokens.csv", authorization_mode="RBAC",
                      record_authorization=True)
    docs = chart_rbac()
    out = io.StringIO()
    async with DevPlane(options) as plane:
        await plane.wait_ready()
        assert plane.client is not None
        await apply(plane.client, docs)
        kubeconfigs = write_component_kubeconfigs(tmp_path, plane.host.url, tokens, plane.host.ca_pem)
        session = Session(plane, tmp_path / "work", Narrator(out))
        try:
            await session.start_products(descheduler=DESCHEDULER in components, kubeconfigs=kubeconfigs)
            await play(session)
            session.check_products_alive()
        finally:
            await session.stop_products()
        decisions = list(plane.host.authorization_decisions)

    for component in components:
        assert denied(decisions, component) == [], f"{component} was refused a request; its log is in {tmp_path}"
        done, allowed = used(decisions, component), granted(docs, component)
        assert done, f"no request of {component} was seen"
        assert done <= allowed, f"{component} used what the chart does not grant: {sorted(done - allowed)}"
