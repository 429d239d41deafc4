"""The marks of rebalancers' binding writes: what a retry reads back, and what it refuses to read."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controllers.writemark import ANNOTATION, KEPT, WriteMark, read, stamped

TRIGGER = WriteMark("uid-1", trigger="2026-11-28T08:00:00Z")
LOWERING = WriteMark("uid-1", lowered={"member1": 2})


def binding_with(value: str | None) -> dict[str, Any]:
    annotations = {"policy.karmada.io/applied-placement": "{}"}
    if value is not None:
        annotations[ANNOTATION] = value
    return {"metadata": {"name": "web-deployment", "resourceVersion": "7", "annotations": annotations}}


@pytest.mark.parametrize("mark", [TRIGGER, LOWERING])
def test_a_stamped_update_reads_back_for_its_rebalancer_only(mark: WriteMark) -> None:
    update = stamped(binding_with(None), mark)
    assert read(update, "uid-1") == mark
    assert read(update, "uid-2") is None
    assert update["metadata"]["annotations"]["policy.karmada.io/applied-placement"] == "{}"
    assert update["metadata"]["resourceVersion"] == "7"


def test_a_trigger_and_a_lowering_are_told_apart() -> None:
    """A retry in the other mode (preserve switched on or off meanwhile) must know which write it finds."""
    assert read(stamped(binding_with(None), TRIGGER), "uid-1").is_trigger  # type: ignore[union-attr]
    assert not read(stamped(binding_with(None), LOWERING), "uid-1").is_trigger  # type: ignore[union-attr]


def test_another_rebalancers_write_leaves_the_earlier_mark_readable() -> None:
    """R's write landed but its result is not stored; R2 writes the binding meanwhile: R's retry still finds its own
    write (a single mark, replaced by R2's, would let R write again)."""
    first = stamped(binding_with(None), TRIGGER)
    second = stamped(first, WriteMark("uid-2", trigger="2026-11-28T08:00:05Z"))
    assert read(second, "uid-1") == TRIGGER
    assert read(second, "uid-2") == WriteMark("uid-2", trigger="2026-11-28T08:00:05Z")


def test_a_rebalancers_new_write_replaces_its_old_mark_and_the_oldest_go_beyond_the_bound() -> None:
    update = binding_with(None)
    for k in range(KEPT + 2):
        update = stamped(update, WriteMark(f"uid-{k}", trigger=f"2026-11-28T08:00:0{k}Z"))
    update = stamped(update, WriteMark(f"uid-{KEPT + 1}", lowered={"member2": 1}))
    entries = json.loads(update["metadata"]["annotations"][ANNOTATION])
    assert [e["uid"] for e in entries] == [f"uid-{k}" for k in range(2, KEPT + 2)]
    assert read(update, "uid-0") is None
    assert read(update, f"uid-{KEPT + 1}") == WriteMark(f"uid-{KEPT + 1}", lowered={"member2": 1})


def test_stamping_leaves_the_read_binding_as_it_was() -> None:
    """The update is built from a shared, read-only cached object."""
    cached = binding_with(None)
    stamped(cached, TRIGGER)
    assert ANNOTATION not in cached["metadata"]["annotations"]


@pytest.mark.parametrize("value", [None, "", "not json", "{}", '{"uid": "uid-1", "lowered": {}}', "[]",
                                   '[{"uid": "uid-1"}]', '[{"uid": "uid-1", "lowered": {"member1": "2"}}]',
                                   '[{"uid": "uid-1", "rescheduleTriggeredAt": 5}]', '["uid-1"]',
                                   '[{"uid": "uid-1", "rescheduleTriggeredAt": "garbage"}]',
                                   '[{"uid": "uid-1", "lowered": {"member1": true}}]',
                                   '[{"uid": "uid-1", "lowered": {"member1": 0}}]', "[" * 100_000])
def test_a_value_that_is_not_ours_is_no_mark(value: str | None) -> None:
    """Edited by hand or cut: the retry decides afresh rather than take it for a write that landed (and the value is
    replaced by the next write's mark, never an error that would stop the rebalancer)."""
    assert read(binding_with(value), "uid-1") is None
    assert read(stamped(binding_with(value), LOWERING), "uid-1") == LOWERING
