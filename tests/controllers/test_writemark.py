"""The mark of a rebalancer's binding write: what a retry reads back, and what it refuses to read."""

from __future__ import annotations

import pytest

from controllers.writemark import ANNOTATION, WriteMark, read, stamped


def binding_with(value: str | None) -> dict[str, object]:
    annotations = {"policy.karmada.io/applied-placement": "{}"}
    if value is not None:
        annotations[ANNOTATION] = value
    return {"metadata": {"name": "web-deployment", "resourceVersion": "7", "annotations": annotations}}


@pytest.mark.parametrize("mark", [WriteMark("uid-1", trigger="2026-11-28T08:00:00Z"),
                                  WriteMark("uid-1", lowered={"member1": 2}),
                                  WriteMark("uid-1")])
def test_a_stamped_update_reads_back_for_its_rebalancer_only(mark: WriteMark) -> None:
    update = stamped(binding_with(None), mark)
    assert read(update, "uid-1") == mark
    assert read(update, "uid-2") is None
    assert update["metadata"]["annotations"]["policy.karmada.io/applied-placement"] == "{}"
    assert update["metadata"]["resourceVersion"] == "7"


def test_stamping_leaves_the_read_binding_as_it_was() -> None:
    """The update is built from a shared, read-only cached object."""
    cached = binding_with(None)
    stamped(cached, WriteMark("uid-1", trigger="2026-11-28T08:00:00Z"))
    assert ANNOTATION not in cached["metadata"]["annotations"]  # type: ignore[index]


@pytest.mark.parametrize("value", [None, "", "not json", "[]", '{"uid": "uid-1"}',
                                   '{"uid": "uid-1", "lowered": {"member1": "2"}}',
                                   '{"uid": "uid-1", "rescheduleTriggeredAt": 5}'])
def test_a_value_that_is_not_ours_is_no_mark(value: str | None) -> None:
    """Edited by hand or cut: the retry decides afresh rather than take it for a write that landed."""
    assert read(binding_with(value), "uid-1") is None
