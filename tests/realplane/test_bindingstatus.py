"""Our binding-status controller in place of Karmada's: member statuses reach the binding and the template."""

from __future__ import annotations

from typing import Any

from controller_manager.client import KubeClient
from controller_manager.events import EVENTS
from kube_api.resources import DEPLOYMENTS
from tests.conftest import eventually
from tests.realplane.conftest import Ours
from tests.realplane.support import SCHEDULED, STATIC_HALVES, binding_of, fresh_namespace, policy, propagate


async def test_deployment_spread_over_both_members_reports_their_sum(ours: Ours, karmada: KubeClient) -> None:
    ns = await fresh_namespace(karmada, "rp-status")
    await propagate(karmada, ns, ["spread"], 4, policy("halves", divided=STATIC_HALVES))

    async def aggregated() -> dict[str, Any] | None:
        binding = await binding_of(karmada, ns, "spread")
        items = ((binding or {}).get("status") or {}).get("aggregatedStatus") or []
        ready = {i["clusterName"]: (i.get("status") or {}).get("readyReplicas") for i in items}
        return binding if ready == {"member1": 2, "member2": 2} else None

    binding = await eventually(aggregated, timeout=SCHEDULED, interval=0.25)
    assert all(item["applied"] and item["health"] == "Healthy" for item in binding["status"]["aggregatedStatus"])
    fully = {c["type"]: c for c in binding["status"]["conditions"]}["FullyApplied"]
    assert (fully["status"], fully["reason"]) == ("True", "FullyAppliedSuccess")

    async def template_ready() -> dict[str, Any] | None:
        template = await karmada.get(DEPLOYMENTS, "spread", ns)
        status = template.get("status") or {}
        return template if (status.get("readyReplicas"), status.get("replicas")) == (4, 4) else None

    template = await eventually(template_ready, timeout=SCHEDULED, interval=0.25)
    assert template["status"]["observedGeneration"] == template["metadata"]["generation"]

    events = (await karmada.list(EVENTS, ns, field_selector=f"involvedObject.uid={binding['metadata']['uid']}"))
    reasons = {e["reason"] for e in events.get("items") or []}
    assert "AggregateStatusSucceed" in reasons, reasons
