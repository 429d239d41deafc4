"""The event recorder against the dev API server: creation, count aggregation, similar-event combining."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from controller_manager import events
from controller_manager.client import KubeClient
from controller_manager.events import COMBINED_PREFIX, SIMILAR_LIMIT, EventRecorder


@pytest.fixture
async def recorder(kube: KubeClient) -> EventRecorder:
    return EventRecorder(kube, "test-controller", host="node-a")


async def _deployment(http: aiohttp.ClientSession) -> dict[str, Any]:
    body = {"metadata": {"name": "foo"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
                                                   "template": {"metadata": {"labels": {"a": "b"}},
                                                                "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    async with http.post("/apis/apps/v1/namespaces/default/deployments", json=body) as r:
        assert r.status == 201
        obj: dict[str, Any] = await r.json()
        return obj


async def _events(http: aiohttp.ClientSession, uid: str) -> list[dict[str, Any]]:
    async with http.get("/api/v1/namespaces/default/events",
                        params={"fieldSelector": f"involvedObject.uid={uid}"}) as r:
        items: list[dict[str, Any]] = (await r.json())["items"]
        return items


async def test_event_is_created_with_kube_fields(http: aiohttp.ClientSession, recorder: EventRecorder) -> None:
    deploy = await _deployment(http)
    recorder.event(deploy, "Normal", "AggregateStatusSucceed", "Update resourceBinding(default/foo-deployment) "
                   "with AggregatedStatus successfully.")
    await recorder.flush()
    [event] = await _events(http, deploy["metadata"]["uid"])
    assert event["involvedObject"]["kind"] == "Deployment"
    assert event["involvedObject"]["name"] == "foo"
    assert event["involvedObject"]["apiVersion"] == "apps/v1"
    assert event["source"] == {"component": "test-controller", "host": "node-a"}
    assert event["type"] == "Normal"
    assert event["reason"] == "AggregateStatusSucceed"
    assert event["count"] == 1
    assert event["firstTimestamp"] == event["lastTimestamp"]


async def test_an_event_carries_the_time_it_was_recorded_not_the_time_it_was_written(
        http: aiohttp.ClientSession, recorder: EventRecorder, monkeypatch: pytest.MonkeyPatch) -> None:
    """client-go stamps an Event when it is made: a busy queue or retries must not make it look later (readers
    compare Karmada's eviction Events with the start of a fail-back). The clock is patched to show the two apart."""
    deploy = await _deployment(http)
    monkeypatch.setattr(events, "_now", lambda: "2026-11-28T10:00:00Z")
    recorder.event(deploy, "Normal", "EvictWorkloadFromClusterSucceed", "Evict from cluster member1 succeed.")
    recorder.event(deploy, "Normal", "EvictWorkloadFromClusterSucceed", "Evict from cluster member1 succeed.")
    monkeypatch.setattr(events, "_now", lambda: "2026-11-28T10:00:07Z")  # written later
    await recorder.flush()
    [event] = await _events(http, deploy["metadata"]["uid"])
    assert (event["firstTimestamp"], event["lastTimestamp"], event["count"]) == (
        "2026-11-28T10:00:00Z", "2026-11-28T10:00:00Z", 2)


async def test_repeats_increase_count_on_one_event(http: aiohttp.ClientSession, recorder: EventRecorder) -> None:
    deploy = await _deployment(http)
    for _ in range(5):
        recorder.event(deploy, "Normal", "ScheduleBindingSucceed", "Binding has been scheduled successfully.")
    await recorder.flush()
    [event] = await _events(http, deploy["metadata"]["uid"])
    assert event["count"] == 5


async def test_the_tenth_distinct_message_starts_a_combined_event(http: aiohttp.ClientSession,
                                                                   recorder: EventRecorder) -> None:
    deploy = await _deployment(http)
    for i in range(SIMILAR_LIMIT + 3):
        recorder.event(deploy, "Warning", "AggregateStatusFailed", f"attempt {i} failed")
    await recorder.flush()
    events = await _events(http, deploy["metadata"]["uid"])
    combined = [e for e in events if e["message"].startswith(COMBINED_PREFIX)]
    assert len(events) == SIMILAR_LIMIT  # nine distinct ones, then one combined event for the rest
    assert len(combined) == 1
    assert combined[0]["count"] == 4
    assert combined[0]["message"] == COMBINED_PREFIX + f"attempt {SIMILAR_LIMIT + 2} failed"


async def test_identical_events_are_one_event_however_many(http: aiohttp.ClientSession,
                                                           recorder: EventRecorder) -> None:
    deploy = await _deployment(http)
    for _ in range(15):
        recorder.event(deploy, "Normal", "AggregateStatusSucceed", "same message")
    await recorder.flush()
    [event] = await _events(http, deploy["metadata"]["uid"])
    assert event["count"] == 15
    assert event["message"] == "same message"


async def test_recording_never_blocks_when_the_queue_is_full(recorder: EventRecorder) -> None:
    obj = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x", "namespace": "default", "uid": "u"}}
    for i in range(1500):
        recorder.event(obj, "Normal", "Spam", str(i))
    assert recorder.dropped == 500
