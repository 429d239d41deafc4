"""descheduler.core against Karmada's test rows (``pkg/descheduler/``) plus the beyond-Karmada behaviour."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from structlog.testing import capture_logs

from descheduler.core import (
    COOL_DOWN_ANNOTATION,
    CoolDown,
    Plan,
    Row,
    default_cool_down,
    fill_unschedulable,
    plan,
    rows_for,
    undesired,
)
from estimator.eligibility import filter_bindings, partition_bindings
from estimator.podselectors import BUILTIN_KINDS
from karmada_api.bindings import ready_replicas
from karmada_api.labels import APPLIED_PLACEMENT_ANNOTATION
from kube_api.limits import MAX_INT32

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "nginx"}
AGGREGATED = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}
DYNAMIC = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                 "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}
STATIC = {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                "weightPreference": {"staticWeightList": [
                                    {"targetCluster": {"clusterNames": ["m1"]}, "weight": 1}]}}}
DUPLICATED = {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}


def make_binding(clusters: list[tuple[str, int]] | None = None, ready: dict[str, Any] | None = None, *,
                 resource: dict[str, Any] | None = None, annotation: str | None = None,
                 name: str = "nginx-deployment") -> dict[str, Any]:
    """A ResourceBinding dict; ``ready`` values are readyReplicas, or a raw status when not an int."""
    meta: dict[str, Any] = {"name": name, "namespace": "default", "resourceVersion": "7"}
    if annotation is not None:
        meta["annotations"] = {APPLIED_PLACEMENT_ANNOTATION: annotation}
    status_items = []
    for cluster, value in (ready or {}).items():
        status = {"readyReplicas": value} if isinstance(value, int) else value
        status_items.append({"clusterName": cluster, "status": status, "applied": True})
    total = sum(r for _, r in clusters or [])
    return {
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", "metadata": meta,
        "spec": {"resource": resource or dict(DEPLOYMENT), "replicas": total,
                 "clusters": [{"name": c, "replicas": r} for c, r in clusters or []]},
        "status": {"aggregatedStatus": status_items},
    }


def fixed(answers: dict[str, int]) -> Any:
    """A mock estimator answering ``answers`` (restricted to the clusters asked about); records the calls."""
    calls: list[list[str]] = []

    async def estimate(names: list[str]) -> dict[str, int]:
        calls.append(list(names))
        return {n: answers[n] for n in names if n in answers}

    estimate.calls = calls  # type: ignore[attr-defined]
    return estimate


async def failing(names: list[str]) -> dict[str, int]:
    raise RuntimeError("mock error")


async def run_worker(binding: dict[str, Any], answers: dict[str, int],
                     cool_down: CoolDown | None = None) -> tuple[dict[str, Any], Plan | None]:
    """The per-binding worker without I/O: returns the binding as it would be written (or unchanged)."""
    rows = rows_for(binding)
    if not undesired(rows):
        return binding, None
    await fill_unschedulable(rows, fixed(answers))
    result = plan(binding, rows, cool_down)
    return (result.apply(binding) if result else binding), result


def clusters_of(binding: dict[str, Any]) -> list[tuple[str, int]]:
    return [(c["name"], c.get("replicas", 0)) for c in binding["spec"]["clusters"]]


# --------------------------------------------------------------------------------------------
# worker rows (descheduler_test.go)

WORKER_ROWS = [
    ("1 cluster, none unschedulable", [("m1", 5)], {"m1": 5}, {"m1": 0}, [("m1", 5)]),
    ("1 cluster, 1 unschedulable", [("m1", 5)], {"m1": 4}, {"m1": 1}, [("m1", 4)]),
    ("all unschedulable", [("m1", 5)], {"m1": 0}, {"m1": 5}, [("m1", 0)]),
    ("4 ready, 2 unschedulable", [("m1", 5)], {"m1": 4}, {"m1": 2}, [("m1", 4)]),
    ("0 ready, 2 unschedulable", [("m1", 5)], {"m1": 0}, {"m1": 2}, [("m1", 3)]),
    ("6 ready, 2 unschedulable", [("m1", 5)], {"m1": 6}, {"m1": 2}, [("m1", 5)]),
    ("2 clusters, none", [("m1", 5), ("m2", 10)], {"m1": 5, "m2": 10}, {"m1": 0, "m2": 0},
     [("m1", 5), ("m2", 10)]),
    ("2 clusters, 1 unschedulable", [("m1", 5), ("m2", 10)], {"m1": 5, "m2": 9}, {"m1": 0, "m2": 1},
     [("m1", 5), ("m2", 9)]),
    ("both unschedulable", [("m1", 5), ("m2", 10)], {"m1": 2, "m2": 3}, {"m1": 3, "m2": 7},
     [("m1", 2), ("m2", 3)]),
    ("one status missing", [("m1", 5), ("m2", 10)], {"m1": 2}, {"m1": 3, "m2": 7}, [("m1", 2), ("m2", 3)]),
]


@pytest.mark.parametrize(("clusters", "ready", "answers", "expected"),
                         [row[1:] for row in WORKER_ROWS], ids=[row[0] for row in WORKER_ROWS])
async def test_worker_rows(clusters: list[tuple[str, int]], ready: dict[str, int], answers: dict[str, int],
                           expected: list[tuple[str, int]]) -> None:
    binding = make_binding(clusters, ready, annotation=json.dumps(DYNAMIC))
    result, p = await run_worker(binding, answers)
    assert clusters_of(result) == expected
    assert result["spec"]["replicas"] == sum(r for _, r in clusters)
    if expected == clusters:
        assert p is None  # no write, no event
    else:
        assert p is not None
        assert p.total == sum(clusters_of(binding)[i][1] - expected[i][1] for i in range(len(expected)))


async def test_worker_message_one_cluster_capped_at_ready() -> None:
    _, p = await run_worker(make_binding([("m1", 5)], {"m1": 4}), {"m1": 2})
    assert p is not None
    assert p.message == "Binding has been descheduled, 1 replica(s) in cluster(m1), 1 total descheduled replica(s)"
    assert p.descheduled == {"m1": 1}


async def test_worker_message_two_clusters() -> None:
    _, p = await run_worker(make_binding([("m1", 5), ("m2", 10)], {"m1": 2, "m2": 3}), {"m1": 3, "m2": 7})
    assert p is not None
    assert p.message == ("Binding has been descheduled, 3 replica(s) in cluster(m1), 7 replica(s) in cluster(m2), "
                         "10 total descheduled replica(s)")
    assert p.descheduled == {"m1": 3, "m2": 7}
    assert p.total == 10


async def test_worker_message_skips_untouched_clusters() -> None:
    _, p = await run_worker(make_binding([("m1", 5), ("m2", 10)], {"m1": 5, "m2": 9}), {"m1": 0, "m2": 1})
    assert p is not None
    assert p.message == "Binding has been descheduled, 1 replica(s) in cluster(m2), 1 total descheduled replica(s)"


async def test_worker_never_removes_entries_nor_touches_spec_replicas() -> None:
    binding = make_binding([("m1", 5), ("m2", 3)], {"m1": 0, "m2": 0})
    binding["spec"]["clusters"][0]["extra"] = {"keep": True}
    result, p = await run_worker(binding, {"m1": 5, "m2": 3})
    assert p is not None
    assert clusters_of(result) == [("m1", 0), ("m2", 0)]
    assert result["spec"]["clusters"][0]["extra"] == {"keep": True}
    assert result["spec"]["replicas"] == 8
    assert result["metadata"]["resourceVersion"] == "7"
    assert "status" not in result  # the status subresource: the server keeps the stored one
    # the input binding is not mutated
    assert clusters_of(binding) == [("m1", 5), ("m2", 3)]


async def test_unschedulable_above_spec_left_alone() -> None:
    rows = [Row("m1", 5, 0, 6)]
    assert plan(make_binding([("m1", 5)]), rows) is None


def test_plan_rejects_rows_of_another_binding() -> None:
    with pytest.raises(ValueError, match="rows"):
        plan(make_binding([("m1", 5)]), [])
    with pytest.raises(ValueError, match="does not match"):
        plan(make_binding([("m1", 5)]), [Row("m2", 5, 0, 1)])


# --------------------------------------------------------------------------------------------
# filter rows (core/filter_test.go)

@pytest.mark.parametrize(("ref", "expected"), [
    ({"apiVersion": "apps/v1", "kind": "Deployment"}, True),
    ({"apiVersion": "v1", "kind": "Pod"}, False),
    ({"apiVersion": "custom.example.com/v1", "kind": "MyCustomResource"}, False),
    ({"apiVersion": "apps/v2", "kind": "Deployment"}, False),
    ({"apiVersion": "", "kind": "Deployment"}, False),
    ({"apiVersion": "apps/v1", "kind": ""}, False),
    ({"apiVersion": "apps/v1", "kind": "deployment"}, False),
    (None, False),
])
def test_validate_gvk(ref: Any, expected: bool) -> None:
    """Karmada's filter keeps exactly ``apps/v1`` ``Deployment`` (case-sensitive, like Go's GVK equality)."""
    binding = make_binding(annotation=json.dumps(DYNAMIC))
    binding["spec"]["resource"] = ref
    assert filter_bindings([binding], {("apps/v1", "Deployment")}) == ([binding] if expected else [])


@pytest.mark.parametrize(("annotation", "expected"), [
    (None, False),
    (json.dumps(DUPLICATED), False),
    (json.dumps(AGGREGATED), True),
    (json.dumps(STATIC), False),
    (json.dumps(DYNAMIC), True),
    ("invalid json", False),
    ('{"invalidField": "value"}', False),
    ("null", False),
    ("[1, 2]", False),
    (json.dumps({"replicaScheduling": {"replicaSchedulingType": "Divided"}}), False),
    (json.dumps({"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                       "weightPreference": {"dynamicWeight": ""}}}), False),
], ids=["no annotation", "duplicated", "aggregated", "weighted without dynamicWeight", "dynamic weight",
        "invalid json", "unknown field only", "null", "not an object", "divided without preference",
        "empty dynamicWeight"])
def test_validate_placement(annotation: str | None, expected: bool) -> None:
    """The applied placement judged (not the policy's latest); null is the zero placement, i.e. Duplicated."""
    binding = make_binding(annotation=annotation)
    assert filter_bindings([binding]) == ([binding] if expected else [])


def _named(annotation: str | None, name: str, resource: dict[str, Any] | None = None) -> dict[str, Any]:
    return make_binding([("m1", 1)], annotation=annotation, name=name, resource=resource)


@pytest.mark.parametrize(("bindings", "expected"), [
    ([_named(json.dumps(DUPLICATED), "a"), _named(json.dumps(STATIC), "b")], []),
    ([_named(json.dumps(DYNAMIC), "a"), _named(json.dumps(DUPLICATED), "b")], ["a"]),
    ([_named(json.dumps(DYNAMIC), "a"), _named(json.dumps(AGGREGATED), "b")], ["a", "b"]),
    ([_named("not-json", "a")], []),
    ([_named(json.dumps(AGGREGATED), "a"), _named("not-json", "b"), _named(None, "c"),
      _named(json.dumps(DUPLICATED), "d"), _named(json.dumps(AGGREGATED), "e", {"apiVersion": "v1", "kind": "Pod"})],
     ["a"]),
], ids=["none valid", "one of two", "two valid", "invalid annotation", "mix"])
def test_filter_bindings(bindings: list[dict[str, Any]], expected: list[str]) -> None:
    assert [b["metadata"]["name"] for b in filter_bindings(bindings)] == expected


# --------------------------------------------------------------------------------------------
# helper rows (core/helper_test.go)

def test_rows_for() -> None:
    binding = make_binding([("cluster1", 3), ("cluster2", 2)], {"cluster1": 2, "cluster2": 1})
    assert rows_for(binding) == [Row("cluster1", 3, 2, 0), Row("cluster2", 2, 1, 0)]


def test_rows_for_invalid_status_is_unknown() -> None:
    binding = make_binding([("cluster1", 3), ("cluster2", 2)], {"cluster1": 2, "cluster2": "invalid json"})
    assert rows_for(binding) == [Row("cluster1", 3, 2, 0), Row("cluster2", 2, -1, 0)]


def test_rows_for_keeps_spec_clusters_order_and_missing_replicas() -> None:
    binding = make_binding([("b", 1), ("a", 2)], {"a": 2})
    binding["spec"]["clusters"].append({"name": "c"})
    assert rows_for(binding) == [Row("b", 1, -1), Row("a", 2, 2), Row("c", 0, -1)]


async def test_fill_unschedulable() -> None:
    rows = [Row("cluster1", 3, 2), Row("cluster2", 2, 1)]
    estimate = fixed({"cluster1": 1, "cluster2": 1})
    await fill_unschedulable(rows, estimate)
    assert rows == [Row("cluster1", 3, 2, 1), Row("cluster2", 2, 1, 1)]
    assert estimate.calls == [["cluster1", "cluster2"]]


async def test_fill_unschedulable_estimator_error() -> None:
    rows = [Row("cluster1", 3, 2)]
    with capture_logs() as logs:
        await fill_unschedulable(rows, failing)
    assert rows == [Row("cluster1", 3, 2, 0)]
    assert any(e["event"] == "Max cluster unschedulable replicas error: mock error" and e["log_level"] == "error"
               for e in logs)


async def test_fill_unschedulable_unauthentic_answer() -> None:
    rows = [Row("cluster1", 3, 2), Row("cluster2", 2, 1)]
    await fill_unschedulable(rows, fixed({"cluster1": 1, "cluster2": -1}))
    assert rows == [Row("cluster1", 3, 2, 1), Row("cluster2", 2, 1, 0)]


async def test_fill_unschedulable_keeps_partial_answers() -> None:
    """Beyond Karmada #6815: a cluster that failed is unknown, the others' answers still count."""
    rows = [Row("m1", 5, 0), Row("m2", 10, 3), Row("m3", 4, 0)]
    await fill_unschedulable(rows, fixed({"m2": 7}))  # m1 and m3 failed
    assert [r.unschedulable for r in rows] == [0, 7, 0]
    binding = make_binding([("m1", 5), ("m2", 10), ("m3", 4)], {"m2": 3})
    result, p = await run_worker(binding, {"m2": 7})
    assert clusters_of(result) == [("m1", 5), ("m2", 3), ("m3", 4)]
    assert p is not None and p.descheduled == {"m2": 7}


async def test_fill_unschedulable_asks_only_undesired_clusters() -> None:
    rows = [Row("m1", 5, 5), Row("m2", 10, 3)]
    estimate = fixed({"m1": 4, "m2": 2, "other": 9})
    await fill_unschedulable(rows, estimate)
    assert estimate.calls == [["m2"]]
    assert [r.unschedulable for r in rows] == [0, 2]


async def test_fill_unschedulable_nothing_undesired_makes_no_call() -> None:
    rows = [Row("m1", 5, 5)]
    estimate = fixed({"m1": 4})
    await fill_unschedulable(rows, estimate)
    assert estimate.calls == []


async def test_fill_unschedulable_never_leaves_max_int32() -> None:
    rows = [Row("m1", 5, 0)]
    await fill_unschedulable(rows, fixed({"m1": MAX_INT32}))
    assert rows[0].unschedulable == 0


def test_undesired() -> None:
    rows = [Row("cluster1", 3, 2), Row("cluster2", 2, 2), Row("cluster3", 4, 1)]
    assert [r.name for r in undesired(rows)] == ["cluster1", "cluster3"]
    assert undesired([Row("cluster1", 2, 2), Row("cluster2", 3, 3)]) == []
    assert undesired([Row("unknown", 1, -1)]) == [Row("unknown", 1, -1)]


@pytest.mark.parametrize(("items", "expected"), [
    ([("cluster1", {"readyReplicas": 2}), ("cluster2", {"readyReplicas": 3})], {"cluster1": 2, "cluster2": 3}),
    ([("cluster1", {"readyReplicas": 2}), ("cluster2", {"someOtherField": 3})], {"cluster1": 2}),
    ([("cluster1", {"readyReplicas": 2}), ("cluster2", "invalid json")], {"cluster1": 2}),
    ([("cluster1", None), ("cluster2", {"readyReplicas": "3"}), ("cluster3", {"readyReplicas": 4.0})],
     {"cluster3": 4}),
], ids=["valid", "missing field", "invalid json", "no status, non-numeric, float"])
def test_ready_replicas(items: list[tuple[str, Any]], expected: dict[str, int]) -> None:
    binding = make_binding()
    binding["status"]["aggregatedStatus"] = [{"clusterName": c, "status": s} for c, s in items]
    assert ready_replicas(binding) == expected


def test_ready_replicas_without_status() -> None:
    binding = make_binding()
    del binding["status"]
    assert ready_replicas(binding) == {}


# --------------------------------------------------------------------------------------------
# cool-down (beyond Karmada)

class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_cool_down_suppresses_second_deschedule_and_allows_after_window() -> None:
    clock = FakeClock()
    cool_down = CoolDown(240, clock)
    binding = make_binding([("m1", 5), ("m2", 10)], {"m1": 0, "m2": 3})
    key = "default/nginx-deployment"

    first, p = await run_worker(binding, {"m1": 2}, cool_down)
    assert p is not None and clusters_of(first) == [("m1", 3), ("m2", 10)]
    cool_down.record_plan(key, p)
    assert cool_down.allowance(key, "m1") == 0  # cooling down, nothing held back
    assert cool_down.allowance(key, "m2") is None
    assert cool_down.allowance("default/other", "m1") is None

    # next cycle: m1 still reports unschedulable replicas (stale), m2 now does too
    clock.now += 120
    second, p2 = await run_worker(first, {"m1": 2, "m2": 4}, cool_down)
    assert p2 is not None
    assert clusters_of(second) == [("m1", 3), ("m2", 6)]
    assert p2.descheduled == {"m2": 4}
    assert p2.message == "Binding has been descheduled, 4 replica(s) in cluster(m2), 4 total descheduled replica(s)"
    cool_down.record_plan(key, p2)

    # only m1 would change, and it is still cooling down: nothing to write
    clock.now += 119
    third, p3 = await run_worker(first, {"m1": 2}, cool_down)
    assert p3 is None and third is first
    assert cool_down.remaining(key, "m1") == pytest.approx(1.0)

    clock.now += 1  # the window has passed
    fourth, p4 = await run_worker(first, {"m1": 2}, cool_down)
    assert p4 is not None and clusters_of(fourth) == [("m1", 1), ("m2", 10)]


def test_cool_down_disabled_and_pruned() -> None:
    clock = FakeClock()
    off = CoolDown(0, clock)
    off.record("ns/a", "m1")
    assert off.allowance("ns/a", "m1") is None and len(off) == 0

    cool_down = CoolDown(10, clock)
    cool_down.record("ns/a", "m1")
    cool_down.record("ns/b", "m1")
    clock.now += 10
    cool_down.record("ns/c", "m1")  # expired entries are dropped on the way
    assert len(cool_down) == 1
    cool_down.forget("ns/c")
    assert len(cool_down) == 0 and cool_down.allowance("ns/c", "m1") is None


def test_default_cool_down_is_two_intervals() -> None:
    assert default_cool_down() == 240.0
    assert default_cool_down(30) == 60


# --------------------------------------------------------------------------------------------
# kinds beyond Karmada's Deployment

STATEFUL_SET = {**DEPLOYMENT, "kind": "StatefulSet"}
FLINK = {"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment", "namespace": "default", "name": "job"}
CLONE_SET = {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "namespace": "default", "name": "cs"}


def test_built_in_kinds_and_declared_ones_pass_the_filter() -> None:
    bindings = [_named(json.dumps(DYNAMIC), "deploy"), _named(json.dumps(DYNAMIC), "sts", STATEFUL_SET),
                _named(json.dumps(DYNAMIC), "rs", {**DEPLOYMENT, "kind": "ReplicaSet"}),
                _named(json.dumps(DYNAMIC), "flink", FLINK), _named(json.dumps(DYNAMIC), "cs", CLONE_SET)]
    assert [b["metadata"]["name"] for b in filter_bindings(bindings)] == ["deploy", "sts", "rs"]
    declared = {*BUILTIN_KINDS, ("flink.apache.org/v1beta1", "FlinkDeployment")}
    assert [b["metadata"]["name"] for b in filter_bindings(bindings, declared)] == ["deploy", "sts", "rs", "flink"]


def test_unsupported_workloads_are_reported_only_when_they_would_qualify() -> None:
    no_replicas = _named(json.dumps(DYNAMIC), "cm", {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm"})
    no_replicas["spec"]["replicas"] = 0
    partition = partition_bindings([_named(json.dumps(DYNAMIC), "cs", CLONE_SET),
                                    _named(json.dumps(STATIC), "cs-static", CLONE_SET),
                                    _named("not-json", "cs-broken", CLONE_SET), no_replicas,
                                    _named(json.dumps(AGGREGATED), "flink", FLINK),
                                    _named(json.dumps(AGGREGATED), "sts", STATEFUL_SET)], BUILTIN_KINDS)
    assert [b["metadata"]["name"] for b in partition.eligible] == ["sts"]
    assert partition.unsupported == {("apps.kruise.io/v1alpha1", "CloneSet"): ["default/cs"],
                                     ("flink.apache.org/v1beta1", "FlinkDeployment"): ["default/flink"]}


@pytest.mark.parametrize(("ready", "unschedulable", "expected"), [
    ({"m1": 4}, 2, 4),   # the ready floor, as for Deployments (StatefulSet readyReplicas from aggregatedStatus)
    ({}, 2, 3),          # no readyReplicas reported (a custom kind's status without one, or 0 omitted): no floor,
    ({}, 5, 0),          # and never more than the confirmed unschedulable replicas move
    ({}, 6, 5),          # more unschedulable than assigned: inconsistent, left alone
])
def test_the_floor_is_the_same_for_every_kind(ready: dict[str, int], unschedulable: int, expected: int) -> None:
    for resource in (STATEFUL_SET, FLINK):
        binding = make_binding([("m1", 5)], ready, resource=resource)
        rows = rows_for(binding)
        rows[0].unschedulable = unschedulable
        new = plan(binding, rows)
        assert (new.clusters[0]["replicas"] if new else 5) == expected


def _with_cool_down(entries: dict[str, str] | str) -> dict[str, Any]:
    text = entries if isinstance(entries, str) else json.dumps(entries)
    return {"metadata": {"name": "b", "namespace": "ns", "annotations": {COOL_DOWN_ANNOTATION: text}}}


def test_a_cool_down_written_on_the_binding_holds_a_descheduler_that_did_not_write_it() -> None:
    moment = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    cool_down = CoolDown(240, wall=lambda: moment)
    binding = _with_cool_down({"m1": "2026-11-28T11:59:50Z/0", "m2": "2026-11-28T11:59:50Z/2",
                               "m3": "2026-11-28T11:55:00Z/0", "m4": "not a time"})
    assert [cool_down.allowance("ns/b", c, binding) for c in ("m1", "m2", "m3", "m4", "m5")] == [
        0, 2, None, None, None]  # cooling; cooling with 2 held back; over; unreadable; none written
    assert cool_down.remaining("ns/b", "m1", binding) == 230.0
    assert CoolDown(240, wall=lambda: moment).allowance("ns/b", "m1", _with_cool_down("[not json")) is None


def test_a_lowering_stamps_its_clusters_and_keeps_those_still_cooling() -> None:
    moment = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    cached = _with_cool_down({"m1": "2026-11-28T11:59:00Z/0", "m3": "2026-11-28T11:50:00Z/0"})
    before = json.dumps(cached)
    update = dict(cached)  # as spec_update makes it: shallow, sharing the cached binding's metadata
    plan = Plan(clusters=[], message="", descheduled={"m2": 1}, total=1, held_by_cluster={"m2": 3})
    CoolDown(240, wall=lambda: moment).stamp(update, plan)
    assert json.loads(update["metadata"]["annotations"][COOL_DOWN_ANNOTATION]) == {
        "m1": "2026-11-28T11:59:00Z/0", "m2": "2026-11-28T12:00:00Z/3"}
    assert json.dumps(cached) == before  # the informer's copy is not touched
