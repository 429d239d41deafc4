"""Estimators: Karmada's test rows (``pkg/estimator/``: general, server, plugin merge, unschedulable) and more."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from controller_manager.objects import MutableObj
from estimator.accurate import NodeUsage, divide_capacity, max_available_replicas, replica_request_units
from estimator.general import (
    GeneralEstimator,
    ResourceModelError,
    allowed_pod_number,
    model_based_replicas,
    summary_based_replicas,
)
from estimator.general import max_available_replicas as general_max
from estimator.merge import (
    UNAUTHENTIC,
    Code,
    EstimateError,
    PluginResult,
    combine_available_replicas,
    combine_unschedulable_replicas,
    estimate_replicas,
    merge_results,
    run_estimate_replicas_plugins,
)
from estimator.unschedulable import (
    TEMPLATE_DIGEST,
    UnsupportedWorkloadError,
    equal_ignore_hash,
    find_new_replica_set,
    get_unschedulable_replicas,
    pod_unschedulable,
    same_template,
    template_digest,
    threshold_from_nanoseconds,
)
from kube_api.limits import MAX_INT32
from kube_api.timeutil import format_time

# ==================================================================================================
# GeneralEstimator (client/general_test.go)


def cluster(summary: MutableObj | None, models: list[MutableObj] | None = None, name: str = "member1") -> MutableObj:
    obj: MutableObj = {"metadata": {"name": name}, "spec": {}, "status": {}}
    if summary is not None:
        obj["status"]["resourceSummary"] = summary
    if models is not None:
        obj["spec"]["resourceModels"] = models
    return obj


def request(**resources: str) -> MutableObj:
    return {"resourceRequest": dict(resources)}


def test_general_no_resource_summary_is_zero() -> None:
    assert general_max(cluster(None), request(cpu="1")) == 0
    assert general_max(cluster(None), None) == 0


def test_general_no_allowed_pods_is_zero() -> None:
    summary = {"allocatable": {"pods": "10"}, "allocated": {"pods": "10"}}
    assert general_max(cluster(summary), request(cpu="1")) == 0
    assert general_max(cluster(summary), None) == 0


def test_general_only_pods_and_no_requirements() -> None:
    assert general_max(cluster({"allocatable": {"pods": "10"}}), None) == 10


def test_general_summary_based() -> None:
    summary = {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "100"},
               "allocated": {"cpu": "1", "memory": "2Gi", "pods": "20"}}
    # cpu 3000m / 500m = 6, memory 6Gi / 1Gi = 6, pods 80
    assert general_max(cluster(summary), request(cpu="500m", memory="1Gi")) == 6


def test_summary_based_sufficient_and_insufficient_memory() -> None:
    sufficient = {"allocatable": {"cpu": "4", "memory": "8Gi"}, "allocated": {"cpu": "1", "memory": "2Gi"}}
    assert summary_based_replicas(sufficient, {"cpu": "500m", "memory": "1Gi"}) == 6
    insufficient = {"allocatable": {"cpu": "4", "memory": "2Gi"}, "allocated": {"cpu": "1", "memory": "1.5Gi"}}
    assert summary_based_replicas(insufficient, {"cpu": "500m", "memory": "1Gi"}) == 0  # 0.5Gi / 1Gi


def test_summary_based_edges() -> None:
    summary = {"allocatable": {"cpu": "4", "memory": "8Gi"}, "allocating": {"cpu": "3500m"}}
    assert summary_based_replicas(summary, {"cpu": "100m"}) == 5  # 500m left, in millicores
    assert summary_based_replicas(summary, {"nvidia.com/gpu": "1"}) == 0  # not allocatable
    assert summary_based_replicas(summary, {"cpu": "0"}) == 2**63 - 1  # zero requests ignored
    assert summary_based_replicas(summary, {}) == 2**63 - 1
    exhausted = {"allocatable": {"cpu": "1"}, "allocated": {"cpu": "1"}}
    assert summary_based_replicas(exhausted, {"cpu": "1m"}) == 0


@pytest.mark.parametrize(("summary", "expected"), [
    ({"allocatable": {"pods": "100"}, "allocated": {"pods": "40"}, "allocating": {"pods": "10"}}, 50),
    ({"allocated": {"pods": "10"}}, 0),
    ({"allocatable": {"pods": "100"}, "allocated": {"pods": "90"}, "allocating": {"pods": "20"}}, 0),
    ({}, 0),
])
def test_allowed_pod_number(summary: MutableObj, expected: int) -> None:
    assert allowed_pod_number(summary) == expected


def cpu_models() -> list[MutableObj]:
    return [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}]},
            {"grade": 1, "ranges": [{"name": "cpu", "min": "1", "max": "2"}]},
            {"grade": 2, "ranges": [{"name": "cpu", "min": "2", "max": "4"}]}]


def cpu_memory_models() -> list[MutableObj]:
    return [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"},
                                    {"name": "memory", "min": "0", "max": "1Gi"}]},
            {"grade": 1, "ranges": [{"name": "cpu", "min": "1", "max": "2"},
                                    {"name": "memory", "min": "1Gi", "max": "2Gi"}]},
            {"grade": 2, "ranges": [{"name": "cpu", "min": "2", "max": "4"},
                                    {"name": "memory", "min": "2Gi", "max": "4Gi"}]}]


ONE_NODE_EACH = {"allocatableModelings": [{"grade": 0, "count": 1}, {"grade": 1, "count": 1}, {"grade": 2, "count": 1}]}


def test_model_based_without_grades_is_an_error() -> None:
    with pytest.raises(ResourceModelError):
        model_based_replicas(cluster(None), request(cpu="1"))
    with pytest.raises(ResourceModelError, match="no resource models defined"):
        model_based_replicas(cluster(ONE_NODE_EACH), request(cpu="1"))


@pytest.mark.parametrize(("models", "req", "expected"), [
    (cpu_models(), request(cpu="1.5"), 1),                            # partially compliant grades
    (cpu_models(), request(cpu="3"), 0),                              # no compliant grade
    (cpu_memory_models(), request(cpu="1", memory="1.5Gi"), 1),       # multi resource request
    (cpu_memory_models(), request(cpu="1", memory="2.5Gi"), 0),       # request exceeds highest grade
])
def test_model_based_rows(models: list[MutableObj], req: MutableObj, expected: int) -> None:
    assert model_based_replicas(cluster(ONE_NODE_EACH, models), req) == expected


def test_model_based_first_fit_fills_nodes() -> None:
    models = [{"grade": 0, "ranges": [{"name": "cpu", "min": "500m"}]},
              {"grade": 1, "ranges": [{"name": "cpu", "min": "1000m"}]},
              {"grade": 2, "ranges": [{"name": "cpu", "min": "2000m"}]}]
    counts = {"allocatableModelings": [{"grade": 0, "count": 5}, {"grade": 1, "count": 0}, {"grade": 2, "count": 10}]}
    assert model_based_replicas(cluster(counts, models), request(cpu="1500m")) == 10
    assert model_based_replicas(cluster(counts, models), request(cpu="500m")) == 5 + 10 * 4
    # nothing requested: 110 pods per virtual node
    assert model_based_replicas(cluster(counts, models), request()) == 15 * 110
    # a GPU request on models without GPUs fits nowhere
    assert model_based_replicas(cluster(counts, models), request(**{"nvidia.com/gpu": "1"})) == 0
    with pytest.raises(ResourceModelError, match="negative node count"):
        model_based_replicas(cluster({"allocatableModelings": [{"grade": 0, "count": -1}]}, models), request())


def test_general_uses_models_then_caps_by_pods() -> None:
    summary = {"allocatable": {"cpu": "100", "pods": "100"}, **ONE_NODE_EACH}
    assert general_max(cluster(summary, cpu_models()), request(cpu="1.5")) == 1
    assert general_max(cluster(summary, cpu_models()), request(cpu="500m")) == 2 + 4  # 1000m/500m + 2000m/500m
    few_pods = {"allocatable": {"cpu": "100", "pods": "3"}, **ONE_NODE_EACH}
    assert general_max(cluster(few_pods, cpu_models()), request(cpu="500m")) == 3
    # without models the summary is used (the model error falls through)
    assert general_max(cluster(summary), request(cpu="1.5")) == 66
    # the feature gate off ignores the models
    assert GeneralEstimator(customized_resource_modeling=False).max_available_replicas(
        cluster(summary, cpu_models()), request(cpu="1.5")) == 66


def test_general_estimate_many_clusters_and_int32_cap() -> None:
    huge = cluster({"allocatable": {"pods": "1e12"}}, name="huge")
    small = cluster({"allocatable": {"pods": "7"}}, name="small")
    assert GeneralEstimator().estimate([huge, small], None) == {"huge": MAX_INT32, "small": 7}
    assert GeneralEstimator.name == "general-estimator"


# ==================================================================================================
# server: NodeResourceEstimator rows (server/; "cpu" = 1 core, "mem" = 1 unit = 1Gi here)


def node(name: str, cpu: int, mem: int, pods: int, *, storage: int = 16, labels: MutableObj | None = None,
         taints: list[MutableObj] | None = None, unschedulable: bool = False) -> MutableObj:
    obj: MutableObj = {"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": name, "labels": labels or {}},
                       "spec": {},
                       "status": {"allocatable": {"cpu": str(cpu), "memory": f"{mem}Gi", "pods": str(pods),
                                                  "ephemeral-storage": f"{storage}Gi"}}}
    if taints:
        obj["spec"]["taints"] = taints
    if unschedulable:
        obj["spec"]["unschedulable"] = True
    return obj


def pod(name: str, node_name: str, cpu: int | str, mem: int, *, storage: int = 0, phase: str = "Running",
        namespace: str = "default") -> MutableObj:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
            "spec": {"nodeName": node_name,
                     "containers": [{"name": "c", "resources": {"requests": {
                         "cpu": str(cpu), "memory": f"{mem}Gi", "ephemeral-storage": f"{storage}Gi"}}}]},
            "status": {"phase": phase}}


def existing_pods() -> list[MutableObj]:
    """machine1 left: 2 cpu, 6 mem; machine2 left: 3 cpu, 5 mem; machine3 untouched."""
    return [pod("pod1", "machine1", 1, 3), pod("pod2", "machine1", 3, 3), pod("pod3", "machine1", 2, 4, storage=2),
            pod("pod4", "machine2", 4, 8, storage=2), pod("pod5", "machine2", 1, 3, storage=2)]


def requirement(node_claim: MutableObj | None = None) -> MutableObj:
    req: MutableObj = {"resourceRequest": {"cpu": "1", "memory": "2Gi", "ephemeral-storage": "0"}}
    if node_claim is not None:
        req["nodeClaim"] = node_claim
    return req


def server_case(case: str) -> tuple[list[MutableObj], MutableObj]:
    if case == "normal":
        return [node("machine1", 8, 16, 11), node("machine2", 8, 16, 11), node("machine3", 8, 16, 11)], requirement()
    if case == "pod resource strict":
        return [node("machine1", 8, 16, 4), node("machine2", 8, 16, 3), node("machine3", 8, 16, 11)], requirement()
    labelled = [node("machine1", 8, 16, 11, labels={"a": "1"}),
                node("machine2", 8, 16, 11, labels={"a": "3", "b": "2"}),
                node("machine3", 8, 16, 11)]
    if case == "node selector":
        return labelled, requirement({"nodeSelector": {"a": "3"}})
    if case == "node affinity":
        affinity = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["0"]}]}]}
        return labelled, requirement({"hardNodeAffinity": affinity})
    assert case == "tolerations"
    tainted = [node("machine1", 8, 16, 11, taints=[{"key": "key1", "value": "value1", "effect": "NoSchedule"}]),
               node("machine2", 8, 16, 11, taints=[{"key": "key2", "value": "value2", "effect": "NoSchedule"}]),
               node("machine3", 8, 16, 11)]
    return tainted, requirement({"tolerations": [{"key": "key1", "operator": "Equal", "value": "value1"}]})


SERVER_ROWS = [("normal", 12), ("pod resource strict", 10), ("node selector", 2), ("node affinity", 4),
               ("tolerations", 10)]


@pytest.mark.parametrize(("case", "expected"), SERVER_ROWS)
def test_server_max_available_replicas(case: str, expected: int) -> None:
    nodes, req = server_case(case)
    assert max_available_replicas(nodes, existing_pods(), req) == expected
    # as the RPC computes it: the NodeResourceEstimator plugin result through the framework
    assert estimate_replicas([(max_available_replicas(nodes, existing_pods(), req), PluginResult())]) == expected


@pytest.mark.parametrize(("case", "expected"), SERVER_ROWS)
def test_server_rows_built_incrementally(case: str, expected: int) -> None:
    nodes, req = server_case(case)
    usage = NodeUsage()
    for p in existing_pods():  # pods may arrive before their nodes
        usage.add_pod(p)
    assert usage.max_available_replicas(req) == 0  # no nodes yet
    for n in nodes:
        usage.add_node(n)
    assert usage.max_available_replicas(req) == expected
    assert usage.node_count == 3
    assert usage.pod_count == 5


def test_node_free_diagnostics() -> None:
    nodes, _ = server_case("normal")
    usage = NodeUsage(nodes, existing_pods())
    free, pods_left = usage.node_free("machine1")  # type: ignore[misc]
    assert free["cpu"] == 2000
    assert free["memory"] == 6 * 2**30
    assert free["ephemeral-storage"] == 14 * 2**30
    assert pods_left == 8
    assert usage.node_free("nope") is None


# ---- NodeUsage behaviour -------------------------------------------------------------------------


def test_no_nodes_is_zero_and_no_requirements_counts_free_pods() -> None:
    assert max_available_replicas([], [], requirement()) == 0
    nodes, _ = server_case("normal")
    assert max_available_replicas(nodes, existing_pods(), None) == 8 + 9 + 11
    assert max_available_replicas(nodes, existing_pods(), {"resourceRequest": {}}) == 28
    assert max_available_replicas(nodes, existing_pods(), {"resourceRequest": {"cpu": "0"}}) == 28


def test_pod_events_update_usage() -> None:
    nodes, req = server_case("normal")
    usage = NodeUsage(nodes, existing_pods())
    assert usage.max_available_replicas(req) == 12
    big = pod("big", "machine3", 6, 2)
    usage.add_pod(big)
    assert usage.max_available_replicas(req) == 2 + 2 + 2
    usage.add_pod(big)  # a repeated add is an update, not a second pod
    assert usage.max_available_replicas(req) == 6
    finished = copy.deepcopy(big)
    finished["status"]["phase"] = "Succeeded"
    usage.update_pod(big, finished)  # terminal pods free their node
    assert usage.max_available_replicas(req) == 12
    usage.update_pod(finished, big)
    assert usage.max_available_replicas(req) == 6
    usage.remove_pod(big)
    assert usage.max_available_replicas(req) == 12
    usage.remove_pod(big)  # unknown pods are ignored
    assert usage.max_available_replicas(req) == 12


def test_unbound_and_terminal_pods_do_not_count() -> None:
    nodes, req = server_case("normal")
    pending = pod("pending", "", 8, 16)
    failed = pod("failed", "machine3", 8, 16, phase="Failed")
    succeeded = pod("succeeded", "machine3", 8, 16, phase="Succeeded")
    assert max_available_replicas(nodes, [*existing_pods(), pending, failed, succeeded], req) == 12
    usage = NodeUsage(nodes, existing_pods())
    usage.add_pod(pending)
    bound = copy.deepcopy(pending)
    bound["spec"]["nodeName"] = "machine3"
    usage.update_pod(pending, bound)  # bound by the scheduler: now it counts
    assert usage.max_available_replicas(req) == 4


def test_pods_keyed_by_name_without_uid() -> None:
    nodes, req = server_case("normal")
    usage = NodeUsage(nodes)
    no_uid = pod("x", "machine3", 4, 2)
    del no_uid["metadata"]["uid"]
    usage.add_pod(no_uid)
    assert usage.max_available_replicas(req) == 8 + 8 + 4
    usage.remove_pod(no_uid)
    assert usage.max_available_replicas(req) == 24


def test_node_events() -> None:
    nodes, req = server_case("normal")
    usage = NodeUsage(nodes, existing_pods())
    usage.remove_node(nodes[2])
    assert usage.max_available_replicas(req) == 4
    usage.remove_node("machine1")  # its pods stay accounted until they go
    assert usage.node_count == 1
    assert usage.max_available_replicas(req) == 2
    usage.add_node(nodes[0])
    assert usage.max_available_replicas(req) == 4
    bigger = node("machine1", 16, 32, 11)
    usage.update_node(bigger)  # allocatable changes are picked up
    assert usage.max_available_replicas(req) == 8 + 2  # 10 cpu, 11 x 2Gi free, but 8 pod slots
    usage.remove_node("unknown")
    for p in existing_pods():
        usage.remove_pod(p)
    usage.remove_node("machine2")
    assert usage.node_count == 1
    assert usage.pod_count == 0


def test_node_label_and_taint_updates_refresh_the_filter_cache() -> None:
    nodes, req = server_case("node selector")
    usage = NodeUsage(nodes, existing_pods())
    assert usage.max_available_replicas(req) == 2
    relabelled = copy.deepcopy(nodes[2])
    relabelled["metadata"]["labels"] = {"a": "3"}
    usage.update_node(relabelled)
    assert usage.max_available_replicas(req) == 2 + 8
    tainted = copy.deepcopy(relabelled)
    tainted["spec"]["taints"] = [{"key": "k", "effect": "NoExecute"}]
    usage.update_node(tainted)
    assert usage.max_available_replicas(req) == 2
    cordoned = copy.deepcopy(relabelled)
    cordoned["spec"]["unschedulable"] = True
    usage.update_node(cordoned)
    assert usage.max_available_replicas(req) == 2
    tolerant = requirement({"nodeSelector": {"a": "3"}, "tolerations": [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]})
    assert usage.max_available_replicas(tolerant) == 10


def test_taint_effects_and_cordon() -> None:
    nodes = [node("n1", 8, 16, 11, taints=[{"key": "soft", "effect": "PreferNoSchedule"}]),
             node("n2", 8, 16, 11, taints=[{"key": "evict", "effect": "NoExecute"}]),
             node("n3", 8, 16, 11, unschedulable=True)]
    assert max_available_replicas(nodes, [], requirement()) == 8  # only PreferNoSchedule passes
    tolerate_all = requirement({"tolerations": [{"operator": "Exists"}]})
    assert max_available_replicas(nodes, [], tolerate_all) == 24


def test_node_affinity_match_fields_and_invalid_terms() -> None:
    nodes, _ = server_case("normal")
    by_name = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                       "values": ["machine3"]}]}]}
    assert max_available_replicas(nodes, existing_pods(), requirement({"hardNodeAffinity": by_name})) == 8
    invalid = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]}]}
    assert max_available_replicas(nodes, existing_pods(), requirement({"hardNodeAffinity": invalid})) == 0
    empty = {"nodeSelectorTerms": []}
    assert max_available_replicas(nodes, existing_pods(), requirement({"hardNodeAffinity": empty})) == 0


def test_overcommitted_node_counts_zero() -> None:
    nodes = [node("n1", 2, 16, 11), node("n2", 2, 16, 11)]
    pods = [pod("hog", "n1", 3, 1)]  # requests more than allocatable: clamped, not negative
    assert max_available_replicas(nodes, pods, requirement()) == 2


def test_scalar_resources() -> None:
    gpu_node = node("gpu", 8, 16, 11)
    gpu_node["status"]["allocatable"]["nvidia.com/gpu"] = "4"
    plain = node("plain", 8, 16, 11)
    using = pod("trainer", "gpu", 1, 1)
    using["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "1"}  # limit stands in
    req = {"resourceRequest": {"cpu": "1", "nvidia.com/gpu": "1"}}
    assert max_available_replicas([gpu_node, plain], [using], req) == 3
    # untracked names are ignored
    assert max_available_replicas([plain], [], {"resourceRequest": {"cpu": "1", "storage": "1Ti"}}) == 8


def test_init_containers_and_overhead_count() -> None:
    n = node("n", 4, 16, 11)
    p = pod("p", "n", "500m", 1)
    p["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "2"}}}]
    p["spec"]["overhead"] = {"cpu": "1"}
    # requested cpu = max(500m, 2) + 1 = 3 → 1 core left
    assert max_available_replicas([n], [p], {"resourceRequest": {"cpu": "1"}}) == 1


def test_result_capped_at_max_int32() -> None:
    nodes = [node(f"n{i}", 8, 16, 2**31) for i in range(2)]
    assert max_available_replicas(nodes, [], None) == MAX_INT32


def test_replica_request_units_and_divide_capacity() -> None:
    assert replica_request_units(None) == {}
    assert replica_request_units({"resourceRequest": {"cpu": "100m", "memory": "0", "pods": "1", "foo": "1",
                                                      "example.com/dev": "2"}}) == {"cpu": 100, "example.com/dev": 2}
    assert divide_capacity({"cpu": 1000}, 10, {"cpu": 300}) == 3
    assert divide_capacity({"cpu": 1000}, 2, {"cpu": 300}) == 2
    assert divide_capacity({"cpu": 1000}, 10, {"example.com/dev": 1}) == 0
    assert divide_capacity({"cpu": -5}, 10, {"cpu": 1}) == 0
    assert divide_capacity({}, -3, {}) == 0


# ==================================================================================================
# server: plugin combination rows (RunEstimateReplicasPlugins, runtime/framework_test.go)


def ok(replicas: int) -> tuple[int, PluginResult]:
    return replicas, PluginResult.new(Code.SUCCESS)


@pytest.mark.parametrize(("plugins", "replicas", "code", "reasons"), [
    ([], MAX_INT32, Code.NOOPERATION, ["plugin results are empty"]),
    ([ok(1), (0, PluginResult.from_error("plugin 2 failed"))], 0, Code.ERROR, ["plugin 2 failed"]),
    ([ok(1), (0, PluginResult.new(Code.UNSCHEDULABLE, "plugin 2 is unschedulable"))], 0, Code.UNSCHEDULABLE,
     ["plugin 2 is unschedulable"]),
    ([(0, PluginResult.new(Code.UNSCHEDULABLE, "plugin 1 is unschedulable")),
      (MAX_INT32, PluginResult.new(Code.NOOPERATION, "plugin 2 is no operation"))], 0, Code.UNSCHEDULABLE,
     ["plugin 1 is unschedulable", "plugin 2 is no operation"]),
    ([ok(1), (0, PluginResult.new(Code.NOOPERATION, "plugin 2 is disabled"))], 1, Code.SUCCESS,
     ["plugin 2 is disabled"]),
    ([ok(1), ok(1)], 1, Code.SUCCESS, []),
    ([ok(1), ok(2)], 1, Code.SUCCESS, []),
])
def test_run_estimate_replicas_plugins(plugins: list[tuple[int, PluginResult]], replicas: int, code: Code,
                                       reasons: list[str]) -> None:
    got_replicas, merged = run_estimate_replicas_plugins(plugins)
    assert got_replicas == replicas
    assert merged.code is code
    assert sorted(merged.reasons) == sorted(reasons)


def test_error_result_keeps_the_error_and_fails_the_rpc() -> None:
    merged = merge_results([PluginResult.new(Code.SUCCESS), PluginResult.from_error(RuntimeError("boom"))])
    assert merged.is_failed
    assert merged.error == "boom"
    assert PluginResult.new(Code.ERROR, "a", "b").error == "a,b"
    with pytest.raises(EstimateError, match=r"^estimate replica plugins fails with \[boom\]$"):
        estimate_replicas([ok(3), (0, PluginResult.from_error("boom"))])
    assert estimate_replicas([ok(3), (0, PluginResult.new(Code.UNSCHEDULABLE, "quota"))]) == 0
    assert estimate_replicas([(MAX_INT32, PluginResult.new(Code.NOOPERATION, "disabled"))]) == MAX_INT32
    assert estimate_replicas([ok(3), (MAX_INT32, PluginResult.new(Code.NOOPERATION, "disabled"))]) == 3
    assert str(Code.NOOPERATION) == "Nooperation"
    assert [str(c) for c in Code] == ["Success", "Unschedulable", "Nooperation", "Error"]


# ==================================================================================================
# client-side combination


def test_combine_available_replicas() -> None:
    clusters = ["m1", "m2", "m3"]
    general = {"m1": 5, "m2": UNAUTHENTIC, "m3": UNAUTHENTIC}
    accurate = {"m1": 3, "m2": 7, "m3": UNAUTHENTIC}
    # m1: min(5, 3); m2: only 7 counts; m3: nobody knows → spec.replicas
    assert combine_available_replicas(clusters, [general, accurate], replicas=10) == {"m1": 3, "m2": 7, "m3": 10}
    # a failed estimator (None) is skipped entirely
    assert combine_available_replicas(clusters, [general, None], replicas=10) == {"m1": 5, "m2": 10, "m3": 10}
    assert combine_available_replicas(clusters, [], replicas=4) == {"m1": 4, "m2": 4, "m3": 4}
    assert combine_available_replicas(["m1"], [{"m1": 0}], replicas=4) == {"m1": 0}
    assert combine_available_replicas(["m1"], [{"other": 1}], replicas=4) == {"m1": 4}


def test_combine_unschedulable_replicas() -> None:
    assert combine_unschedulable_replicas(["m1", "m2"], [{"m1": 2, "m2": UNAUTHENTIC}, None]) == {"m1": 2, "m2": 0}


# ==================================================================================================
# server: GetUnschedulableReplicas (replica/replica_test.go) and podUnschedulable

NOW = datetime(2025, 9, 23, 12, 0, 0, tzinfo=UTC)


def deployment(kind: str = "Deployment") -> MutableObj:
    return {"apiVersion": "apps/v1", "kind": kind,
            "metadata": {"name": "test-deployment", "namespace": "default", "uid": "test-deployment-uid"},
            "spec": {"selector": {"matchLabels": {"app": "test"}},
                     "template": {"metadata": {"labels": {"app": "test"}}}}}


def replica_set(name: str = "test-rs", uid: str = "test-rs-uid", created: str = "2025-09-23T10:00:00Z",
                template_labels: MutableObj | None = None, owner_uid: str = "test-deployment-uid") -> MutableObj:
    labels = {"app": "test", "pod-template-hash": "xyz123"}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default", "uid": uid, "labels": labels,
                         "creationTimestamp": created,
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "test-deployment",
                                              "uid": owner_uid, "controller": True}]},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": template_labels or dict(labels)}}}}


def rs_pod(name: str = "test-pod-1", rs_uid: str = "test-rs-uid", scheduled: str = "True",
           since: timedelta | None = None, *, phase: str = "Pending", namespace: str = "default") -> MutableObj:
    condition: MutableObj = {"type": "PodScheduled", "status": scheduled}
    if scheduled == "False":
        condition["reason"] = "Unschedulable"
    if since is not None:
        condition["lastTransitionTime"] = format_time(NOW - since)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "test", "pod-template-hash": "xyz123"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "test-rs",
                                              "uid": rs_uid, "controller": True}]},
            "status": {"phase": phase, "conditions": [condition]}}


def test_deployment_with_no_unschedulable_pods() -> None:
    pods = [rs_pod(scheduled="True", phase="Running")]
    assert get_unschedulable_replicas(deployment(), [replica_set()], pods, timedelta(minutes=5), NOW) == 0


def test_deployment_with_unschedulable_pods_beyond_threshold() -> None:
    pods = [rs_pod(scheduled="False", since=timedelta(minutes=10))]
    assert get_unschedulable_replicas(deployment(), [replica_set()], pods, timedelta(minutes=5), NOW) == 1


def test_unsupported_workload_kind() -> None:
    with pytest.raises(UnsupportedWorkloadError,
                       match=r"^kind\(StatefulSet\) of workload\(default/test-statefulset\) is not supported$"):
        statefulset = deployment("StatefulSet")
        statefulset["metadata"]["name"] = "test-statefulset"
        get_unschedulable_replicas(statefulset, [], [], timedelta(minutes=5), NOW)


def test_negative_threshold_is_zero() -> None:
    pods = [rs_pod(scheduled="False", since=timedelta(seconds=1))]
    assert get_unschedulable_replicas(deployment(), [replica_set()], pods, timedelta(minutes=-5), NOW) == 1


@pytest.mark.parametrize(("scheduled", "since", "expected"), [
    ("True", None, False),                        # pod is schedulable
    ("False", timedelta(minutes=10), True),       # unschedulable beyond threshold
    ("False", timedelta(minutes=2), False),       # unschedulable within threshold
    ("False", timedelta(minutes=5), False),       # exactly at the threshold: not strictly before now
    ("False", None, True),                        # no lastTransitionTime: Go's zero time
])
def test_pod_unschedulable(scheduled: str, since: timedelta | None, expected: bool) -> None:
    assert pod_unschedulable(rs_pod(scheduled=scheduled, since=since), timedelta(minutes=5), NOW) is expected


def test_pod_unschedulable_needs_the_unschedulable_reason() -> None:
    p = rs_pod(scheduled="False", since=timedelta(minutes=10))
    p["status"]["conditions"][0]["reason"] = "SchedulerError"
    assert not pod_unschedulable(p, timedelta(minutes=5), NOW)
    assert not pod_unschedulable({"status": {}}, timedelta(0), NOW)
    assert not pod_unschedulable(rs_pod(scheduled="False", since=timedelta(0)), timedelta.max, NOW)


def test_only_pods_of_the_oldest_matching_replica_set_count() -> None:
    old_template = replica_set("old-rs", "old-uid", "2025-09-23T08:00:00Z",
                               template_labels={"app": "test", "version": "v1", "pod-template-hash": "aaa"})
    newest = replica_set("new-rs", "new-uid", "2025-09-23T11:00:00Z")
    oldest_match = replica_set("first-rs", "first-uid", "2025-09-23T09:00:00Z")
    foreign = replica_set("foreign-rs", "foreign-uid", "2025-09-23T07:00:00Z", owner_uid="someone-else")
    stuck = timedelta(minutes=10)
    pods = [rs_pod("a", "first-uid", "False", stuck), rs_pod("b", "first-uid", "False", stuck),
            rs_pod("c", "new-uid", "False", stuck), rs_pod("d", "old-uid", "False", stuck),
            rs_pod("e", "foreign-uid", "False", stuck),
            rs_pod("f", "first-uid", "False", stuck, phase="Failed"),           # terminal: not in the cache
            rs_pod("g", "first-uid", "False", stuck, namespace="other")]       # another namespace
    rs_list = [old_template, newest, oldest_match, foreign]
    assert find_new_replica_set(deployment(), [old_template, newest, oldest_match])["metadata"]["name"] == "first-rs"  # type: ignore[index]
    assert get_unschedulable_replicas(deployment(), rs_list, pods, timedelta(minutes=5), NOW) == 2
    # no matching ReplicaSet → nothing counts
    assert get_unschedulable_replicas(deployment(), [old_template], pods, timedelta(minutes=5), NOW) == 0


def test_replica_sets_tie_on_creation_time_by_name() -> None:
    b = replica_set("b-rs", "b-uid")
    a = replica_set("a-rs", "a-uid")
    assert find_new_replica_set(deployment(), [b, a])["metadata"]["name"] == "a-rs"  # type: ignore[index]


def test_equal_ignore_hash_is_semantic() -> None:
    base = {"metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
    other = copy.deepcopy(base)
    other["metadata"]["labels"]["pod-template-hash"] = "123"
    other["metadata"]["creationTimestamp"] = None
    other["metadata"]["annotations"] = {}
    other["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1000m", "memory": "1073741824"}
    assert equal_ignore_hash(base, other)
    changed = copy.deepcopy(base)
    changed["spec"]["containers"][0]["image"] = "nginx:2"
    assert not equal_ignore_hash(base, changed)
    assert equal_ignore_hash({"metadata": {"labels": {"pod-template-hash": "1"}}}, {})


def template_variants() -> list[MutableObj | None]:
    """Pod templates equal and unequal in every way ``equal_ignore_hash`` tells apart or not."""
    base: MutableObj = {"metadata": {"labels": {"app": "x"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx:1",
                                                 "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                                 "terminationGracePeriodSeconds": 30, "enableServiceLinks": True}}

    def variant(change: Callable[[MutableObj], object]) -> MutableObj:
        copied = copy.deepcopy(base)
        change(copied)
        return copied

    container = lambda t: t["spec"]["containers"][0]  # noqa: E731
    return [
        base,
        variant(lambda t: t["metadata"]["labels"].update({"pod-template-hash": "123"})),  # equal
        variant(lambda t: container(t)["resources"]["requests"].update(cpu="1000m", memory="1073741824")),  # equal
        variant(lambda t: t["metadata"].update(annotations={}, creationTimestamp=None)),  # equal
        variant(lambda t: t["spec"].update(terminationGracePeriodSeconds=30.0)),  # equal: 30 == 30.0
        variant(lambda t: t["spec"].update(enableServiceLinks=1)),  # equal: True == 1
        variant(lambda t: t.update(spec=dict(reversed(list(t["spec"].items()))))),  # equal: key order
        variant(lambda t: container(t).update(image="nginx:2")),
        variant(lambda t: container(t)["resources"]["requests"].update(cpu="1001m")),
        variant(lambda t: container(t)["resources"]["requests"].update(cpu=1)),  # equal: a number quantity
        variant(lambda t: container(t)["resources"]["requests"].update(cpu=0.5)),
        variant(lambda t: t["spec"].update(terminationGracePeriodSeconds=30.5)),
        variant(lambda t: t["spec"].update(terminationGracePeriodSeconds="30")),  # a string is not a number
        variant(lambda t: t["spec"]["containers"].append({})),  # [x, {}] is not [x]: the list keeps a None
        variant(lambda t: t["spec"].update(volumes=[])),  # equal: empty == absent
        variant(lambda t: t["spec"].update(volumes=[{}])),
        variant(lambda t: t["metadata"]["labels"].update(version="v2")),
        variant(lambda t: t["spec"]["containers"].insert(0, {"name": "sidecar"})),
        variant(lambda t: t["spec"]["containers"].append({"name": "sidecar"})),  # list order matters
        {"metadata": {"labels": {"pod-template-hash": "1"}}}, {}, None,  # all three equal
        {"spec": {"priority": float("inf")}}, {"spec": {"priority": float("-inf")}},
    ]


def test_template_digest_is_equal_exactly_when_the_templates_are() -> None:
    variants = template_variants()
    digests = [template_digest(t) for t in variants]
    assert all(digest is not None for digest in digests)
    for i, (one, digest_one) in enumerate(zip(variants, digests, strict=True)):
        for two, digest_two in zip(variants[i:], digests[i:], strict=True):
            assert (digest_one == digest_two) is equal_ignore_hash(one, two), (one, two)
    assert len(set(digests)) < len(digests) - 5  # the equal ones above did meet


def test_same_template_compares_templates_and_digests_alike() -> None:
    variants = template_variants()
    for one in variants:
        for two in variants:
            expected = equal_ignore_hash(one, two)
            digest_one, digest_two = {TEMPLATE_DIGEST: template_digest(one)}, {TEMPLATE_DIGEST: template_digest(two)}
            assert same_template({"template": one}, {"template": two}) is expected
            assert same_template(digest_one, digest_two) is expected
            assert same_template(digest_one, {"template": two}) is expected
            assert same_template({"template": one}, digest_two) is expected


def test_a_template_with_no_digest_equals_no_digest() -> None:
    nan = {"spec": {"priority": float("nan")}}
    assert template_digest(nan) is None
    assert template_digest("not a template") is None  # type: ignore[arg-type]
    assert not same_template({TEMPLATE_DIGEST: template_digest({})}, {"template": nan})
    assert not same_template({TEMPLATE_DIGEST: template_digest(nan["spec"])}, {"template": nan})
    assert same_template({"template": {}}, {}) and same_template({TEMPLATE_DIGEST: template_digest(None)}, {})


def test_the_new_replica_set_is_found_by_digest_too() -> None:
    def digested(obj: MutableObj) -> MutableObj:
        spec = {k: v for k, v in obj["spec"].items() if k != "template"}
        return {**obj, "spec": {**spec, TEMPLATE_DIGEST: template_digest(obj["spec"]["template"])}}

    old = replica_set("old-rs", "old-uid", "2025-09-23T08:00:00Z", template_labels={"app": "test", "version": "v1"})
    current = replica_set("first-rs", "first-uid", "2025-09-23T09:00:00Z")
    found = find_new_replica_set(digested(deployment()), [digested(old), digested(current)])
    assert found is not None and found["metadata"]["name"] == "first-rs"
    assert find_new_replica_set(digested(deployment()), [digested(old)]) is None


def test_threshold_from_nanoseconds() -> None:
    assert threshold_from_nanoseconds(300 * 10**9) == timedelta(minutes=5)
    assert threshold_from_nanoseconds(-(10**9)) == timedelta(seconds=-1)
