"""The Helm chart as a user installs it: lint, schema, Kubernetes validity, flags, switches, pods.

Rendered in-process with helm-python-sdk (Helm's own template engine), once per value set.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import helm_python
import kubernetes_validate
import pytest

from controllers.app import build_parser as controller_manager_parser
from controllers.registry import is_enabled
from descheduler.app import GRPC_ONLY_FLAGS
from descheduler.app import build_parser as descheduler_parser
from estimator.podselectors import load_pod_selectors
from tests.charts.chartutil import (
    CHART_DIR,
    COMPONENTS,
    NAMESPACE,
    RELEASE,
    Manifest,
    args,
    container,
    deep_merge,
    find,
    nested,
    notes,
    one,
    render,
)

CM, DS = COMPONENTS
K8S_VERSION = "1.33.0"
PARSERS: dict[str, Callable[[], argparse.ArgumentParser]] = {CM: controller_manager_parser, DS: descheduler_parser}
HEALTH_PORTS = {CM: 10357, DS: 10358}
SECTIONS = {CM: "controllerManager", DS: "descheduler"}


class FlagCase(NamedTuple):
    """A value set in values.yaml, the flag it must render, and what the program then parses."""

    component: str
    path: str  # under the component's section
    value: Any  # not the default
    flag: str
    attr: str
    expected: Any


FLINK_SELECTORS = [{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
                    "podSelector": "app={name},component=taskmanager"}]

FLAG_CASES = [FlagCase(*case) for case in [
    (CM, "logVerbosity", 4, "--v=4", "v", 4),
    (CM, "loggingFormat", "json", "--logging-format=json", "logging_format", "json"),
    (CM, "kubeAPIQPS", 12.5, "--kube-api-qps=12.5", "kube_api_qps", 12.5),
    (CM, "kubeAPIBurst", 25, "--kube-api-burst=25", "kube_api_burst", 25),
    (CM, "leaderElection.enabled", False, "--leader-elect=false", "leader_elect", False),
    (CM, "leaderElection.leaseDuration", "30s", "--leader-elect-lease-duration=30s",
     "leader_elect_lease_duration", 30.0),
    (CM, "leaderElection.renewDeadline", "20s", "--leader-elect-renew-deadline=20s",
     "leader_elect_renew_deadline", 20.0),
    (CM, "leaderElection.retryPeriod", "3s", "--leader-elect-retry-period=3s", "leader_elect_retry_period", 3.0),
    (CM, "leaderElection.resourceName", "rebalance-lock", "--leader-elect-resource-name=rebalance-lock",
     "leader_elect_resource_name", "rebalance-lock"),
    (CM, "rateLimiter.baseDelay", "10ms", "--rate-limiter-base-delay=10ms", "rate_limiter_base_delay", 0.01),
    (CM, "rateLimiter.maxDelay", "5m0s", "--rate-limiter-max-delay=5m0s", "rate_limiter_max_delay", 300.0),
    (CM, "rateLimiter.qps", 20, "--rate-limiter-qps=20", "rate_limiter_qps", 20),
    (CM, "rateLimiter.bucketSize", 200, "--rate-limiter-bucket-size=200", "rate_limiter_bucket_size", 200),
    # NON_DEFAULT_VALUES also turns failback.enabled on: the chart appends clusterFailback
    (CM, "controllers", "*,-ttlCleaner", "--controllers=*,-ttlCleaner,clusterFailback", "controllers",
     ["*", "-ttlCleaner", "clusterFailback"]),
    (CM, "failback.stabilizationWindow", "30s", "--failback-stabilization-window=30s",
     "failback_stabilization_window", 30.0),
    (CM, "failback.maxWorkloads", 20, "--failback-max-workloads=20", "failback_max_workloads", 20),
    (CM, "failback.rebalancerTTL", "0s", "--failback-rebalancer-ttl=0s", "failback_rebalancer_ttl", 0.0),
    (CM, "failback.maxConcurrent", 50, "--failback-max-concurrent=50", "failback_max_concurrent", 50),
    (CM, "failback.progressDeadline", "30m0s", "--failback-progress-deadline=30m0s", "failback_progress_deadline",
     1800.0),
    # NON_DEFAULT_VALUES also turns preserveAvailableReplicas.enabled on (the --preserve-* flags come with it)
    (CM, "preserveAvailableReplicas.enabled", True, "--enable-preserve-available-replicas=true",
     "enable_preserve_available_replicas", True),
    (CM, "preserveAvailableReplicas.unschedulableThreshold", "10m0s", "--preserve-unschedulable-threshold=10m0s",
     "preserve_unschedulable_threshold", 600.0),
    (CM, "preserveAvailableReplicas.retryTimeout", "2m0s", "--preserve-available-replicas-retry-timeout=2m0s",
     "preserve_available_replicas_retry_timeout", 120.0),
    (CM, "concurrentResourceBindingSyncs", 7, "--concurrent-resourcebinding-syncs=7",
     "concurrent_resourcebinding_syncs", 7),
    (CM, "concurrentClusterResourceBindingSyncs", 8, "--concurrent-clusterresourcebinding-syncs=8",
     "concurrent_clusterresourcebinding_syncs", 8),
    (CM, "clusterCacheSyncTimeout", "5m0s", "--cluster-cache-sync-timeout=5m0s", "cluster_cache_sync_timeout", 300.0),
    (CM, "master", "https://karmada-apiserver:5443", "--master=https://karmada-apiserver:5443", "master",
     "https://karmada-apiserver:5443"),
    (DS, "logVerbosity", 5, "--v=5", "v", 5),
    (DS, "loggingFormat", "json", "--logging-format=json", "logging_format", "json"),
    (DS, "kubeAPIQPS", 100, "--kube-api-qps=100", "kube_api_qps", 100.0),
    (DS, "kubeAPIBurst", 150, "--kube-api-burst=150", "kube_api_burst", 150),
    (DS, "leaderElection.enabled", False, "--leader-elect=false", "leader_elect", False),
    (DS, "leaderElection.leaseDuration", "1m0s", "--leader-elect-lease-duration=1m0s",
     "leader_elect_lease_duration", 60.0),
    (DS, "leaderElection.renewDeadline", "40s", "--leader-elect-renew-deadline=40s",
     "leader_elect_renew_deadline", 40.0),
    (DS, "leaderElection.retryPeriod", "5s", "--leader-elect-retry-period=5s", "leader_elect_retry_period", 5.0),
    (DS, "deschedulingInterval", "1m0s", "--descheduling-interval=1m0s", "descheduling_interval", 60.0),
    (DS, "unschedulableThreshold", "10m0s", "--unschedulable-threshold=10m0s", "unschedulable_threshold", 600.0),
    (DS, "schedulerEstimatorTimeout", "5s", "--scheduler-estimator-timeout=5s", "scheduler_estimator_timeout", 5.0),
    (DS, "dryRun", True, "--dry-run=true", "dry_run", True),
    (DS, "deschedulingCoolDown", "0s", "--descheduling-cool-down=0s", "descheduling_cool_down", 0.0),
    (DS, "maxDescheduledReplicasPerCycle", 1000000, "--max-descheduled-replicas-per-cycle=1000000",
     "max_descheduled_replicas_per_cycle", 1000000),
    (DS, "maxDescheduledReplicasPerWorkload", 20, "--max-descheduled-replicas-per-workload=20",
     "max_descheduled_replicas_per_workload", 20),
    (DS, "master", "https://karmada-apiserver:5443", "--master=https://karmada-apiserver:5443", "master",
     "https://karmada-apiserver:5443"),
    (DS, "unschedulablePodSelectors", FLINK_SELECTORS,
     "--unschedulable-pod-selectors=/etc/karmada-descheduler/pod-selectors.yaml", "unschedulable_pod_selectors",
     "/etc/karmada-descheduler/pod-selectors.yaml"),
    (CM, "preserveAvailableReplicas.unschedulablePodSelectors", FLINK_SELECTORS,
     "--unschedulable-pod-selectors=/etc/karmada-controller-manager/pod-selectors.yaml",
     "unschedulable_pod_selectors", "/etc/karmada-controller-manager/pod-selectors.yaml"),
]]

# Flags the chart sets itself, from the topology rather than from a per-flag value.
CHART_SET_FLAGS = {"--kubeconfig", "--metrics-bind-address", "--health-probe-bind-address",
                   "--leader-elect-resource-namespace"}
# The descheduler's gRPC estimator flags are accepted only so existing Karmada arguments keep
# working; the built-in estimator ignores them with a warning, so the chart has no values for them.
OMITTED_FLAGS = {DS: set(GRPC_ONLY_FLAGS), CM: set()}

NON_DEFAULT_VALUES: dict[str, Any] = {"systemNamespace": "karmada-ha"}
for _case in FLAG_CASES:
    NON_DEFAULT_VALUES = deep_merge(NON_DEFAULT_VALUES, {SECTIONS[_case.component]: nested(_case.path, _case.value)})
NON_DEFAULT_VALUES[SECTIONS[CM]]["failback"]["enabled"] = True
for _section in SECTIONS.values():  # no leader election: one replica (the chart refuses two)
    NON_DEFAULT_VALUES[_section]["replicaCount"] = 1


@pytest.fixture(scope="module")
def custom_docs(chart: helm_python.Chart) -> list[Manifest]:
    return render(chart, NON_DEFAULT_VALUES)


@pytest.fixture(scope="module")
def everything_on_docs(chart: helm_python.Chart) -> list[Manifest]:
    return render(chart, {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
                          "descheduler": {"podDisruptionBudget": {"maxUnavailable": "50%"}},
                          "image": {"pullSecrets": ["regcred"]}})


def parsed(docs: list[Manifest], component: str) -> argparse.Namespace:
    """The container's arguments as the program itself parses them ($(POD_IP) expanded by kubelet)."""
    argv = [a.replace("$(POD_IP)", "10.0.0.7") for a in args(docs, component)]
    return PARSERS[component]().parse_args(argv)


# ----------------------------------------------------------------------------- chart and schema


def test_lint_passes_strict() -> None:
    report = helm_python.lint(str(CHART_DIR), strict=True, kube_version="v1.33.0")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert not report["errors"] and not problems, report


def test_chart_has_no_external_dependencies(chart: helm_python.Chart) -> None:
    assert chart.metadata["apiVersion"] == "v2"
    assert not chart.metadata.get("dependencies")


def test_default_and_non_default_values_pass_the_schema(chart: helm_python.Chart) -> None:
    chart.validate_schema({})
    chart.validate_schema(NON_DEFAULT_VALUES)


@pytest.mark.parametrize(("values", "complaint"), [
    ({"controllerManager": {"replicaCount": "two"}}, "want integer"),
    ({"descheduler": {"loggingFormat": "yaml"}}, "loggingFormat"),
    ({"controllerManager": {"leaderElection": {"leaseDuration": "15 seconds"}}}, "does not match pattern"),
    ({"descheduler": {"deschedulingInterval": "2min"}}, "does not match pattern"),
    ({"descheduler": {"deschedulingCoolDown": "-1s"}}, "deschedulingCoolDown"),
    ({"controllerManager": {"concurrentResourceBindingSyncs": 0}}, "concurrentResourceBindingSyncs"),
    ({"controllerManager": {"rateLimiter": {"qps": -1}}}, "qps"),
    ({"image": {"pullPolicy": "Sometimes"}}, "pullPolicy"),
    ({"descheduler": {"dryRun": "yes"}}, "want boolean"),
    ({"controllerManager": {"replicas": 3}}, "additional properties 'replicas'"),
    ({"descheduler": {"deschedulingInterval": None}}, "missing property 'deschedulingInterval'"),
    ({"serviceMonitor": {"enabled": "true"}}, "want boolean"),
    ({"controllerManager": {"leaderElection": {"resourceName": "Karmada_Lease"}}}, "does not match pattern"),
    ({"descheduler": {"leaderElection": {"resourceName": "other"}}}, "additional properties 'resourceName'"),
    ({"descheduler": {"maxDescheduledReplicasPerCycle": 0}}, "maxDescheduledReplicasPerCycle"),
    ({"descheduler": {"maxDescheduledReplicasPerWorkload": "10"}}, "maxDescheduledReplicasPerWorkload"),
], ids=["type", "enum", "duration", "duration-unit", "negative-duration", "minimum", "negative-int",
        "pull-policy", "bool", "unknown-key", "required", "servicemonitor-bool", "lease-name",
        "descheduler-lease-name", "zero-budget", "budget-string"])
def test_schema_rejects_bad_values(chart: helm_python.Chart, values: dict[str, Any], complaint: str) -> None:
    with pytest.raises(helm_python.HelmValuesError, match=complaint):
        chart.validate_schema(values)
    with pytest.raises(helm_python.HelmValuesError):
        render(chart, values)  # `helm install` refuses them too


def test_two_replicas_without_leader_election_are_refused(chart: helm_python.Chart) -> None:
    with pytest.raises(helm_python.HelmRenderError, match=r"needs leaderElection\.enabled=true"):
        render(chart, {"descheduler": {"leaderElection": {"enabled": False}}})


@pytest.mark.parametrize(("election", "complaint"), [
    ({"renewDeadline": "20s"}, r"leaseDuration \(15s, stored in whole seconds\) must be greater than "
                               r"leaderElection\.renewDeadline \(20s\)"),
    ({"leaseDuration": "10.5s", "renewDeadline": "10.2s"}, r"leaseDuration \(10\.5s"),
    ({"retryPeriod": "9s"}, r"renewDeadline \(10s\) must be greater than 1\.2 \* leaderElection\.retryPeriod"),
    ({"leaseDuration": "1m0s", "renewDeadline": "1m", "retryPeriod": "500ms"}, r"leaseDuration \(1m0s"),
    ({"retryPeriod": "0s"}, r"leaderElection\.retryPeriod \(0s\) must be greater than zero"),
])
def test_leader_election_timings_the_program_refuses_are_refused(chart: helm_python.Chart, election: dict[str, str],
                                                                  complaint: str) -> None:
    """Rendered, the pods would exit 2 at start (client-go's rules) and crash-loop."""
    with pytest.raises(helm_python.HelmRenderError, match=complaint):
        render(chart, {"controllerManager": {"leaderElection": election}})


def test_leader_election_timings_in_other_units_render(chart: helm_python.Chart) -> None:
    election = {"leaseDuration": "1m30s", "renewDeadline": "1m", "retryPeriod": "2500ms"}
    assert render(chart, {"controllerManager": {"leaderElection": election}})
    off = {"enabled": False, "renewDeadline": "20s"}  # not checked by the program without --leader-elect
    assert render(chart, {"controllerManager": {"leaderElection": off, "replicaCount": 1}})


@pytest.mark.parametrize("docs_fixture", ["default_docs", "custom_docs", "everything_on_docs"],
                         ids=["default", "custom", "everything-on"])
def test_manifests_are_valid_kubernetes_objects(request: pytest.FixtureRequest, docs_fixture: str) -> None:
    unvalidated = set()
    for doc in request.getfixturevalue(docs_fixture):
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            unvalidated.add(doc["kind"])  # a custom resource: kubernetes-validate only warns
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{doc['kind']} {doc['metadata']['name']}: {exc.message}")
    assert unvalidated <= {"ServiceMonitor"}


def test_default_render_has_everything(default_docs: list[Manifest]) -> None:
    kinds = sorted((d["kind"], d["metadata"]["name"]) for d in default_docs)
    for component in COMPONENTS:
        for kind in ("ServiceAccount", "Deployment", "PodDisruptionBudget"):
            assert (kind, component) in kinds
        assert ("Service", f"{component}-metrics") in kinds
        assert ("ClusterRole", f"{RELEASE}:{component}") in kinds
        assert ("ClusterRoleBinding", f"{RELEASE}:{component}") in kinds
        assert ("Role", f"{RELEASE}:{component}:leader-election") in kinds
        assert ("RoleBinding", f"{RELEASE}:{component}:leader-election") in kinds
    assert ("ConfigMap", "karmada-rebalance-dashboard") in kinds
    assert not find(default_docs, "ServiceMonitor")


# ----------------------------------------------------------------------------- flags


@pytest.mark.parametrize("case", FLAG_CASES,
                         ids=[f"{c.component.removeprefix('karmada-')}.{c.path}" for c in FLAG_CASES])
def test_value_reaches_the_program(custom_docs: list[Manifest], case: FlagCase) -> None:
    assert case.flag in args(custom_docs, case.component)
    assert getattr(parsed(custom_docs, case.component), case.attr) == case.expected


@pytest.mark.parametrize("component", COMPONENTS)
def test_every_flag_of_the_program_is_reachable_from_values(custom_docs: list[Manifest], component: str) -> None:
    rendered = {a.split("=", 1)[0] for a in args(custom_docs, component)}
    options = {opt for action in PARSERS[component]()._actions if action.help != argparse.SUPPRESS
               for opt in action.option_strings if opt.startswith("--") and opt != "--help"}
    missing = options - rendered - OMITTED_FLAGS[component]
    assert not missing, f"flags with no value in values.yaml: {sorted(missing)}"
    assert rendered >= CHART_SET_FLAGS


@pytest.mark.parametrize("component", COMPONENTS)
def test_default_args_are_karmadas(default_docs: list[Manifest], component: str) -> None:
    """Karmada's chart conventions, and the program's own defaults (so the chart changes nothing)."""
    argv = args(default_docs, component)
    port = HEALTH_PORTS[component]
    for expected in ("--kubeconfig=/etc/kubeconfig", "--metrics-bind-address=$(POD_IP):8080",
                     f"--health-probe-bind-address=$(POD_IP):{port}", f"--leader-elect-resource-namespace={NAMESPACE}",
                     "--v=2", "--leader-elect=true"):
        assert expected in argv
    chart_run = parsed(default_docs, component)
    program_default = PARSERS[component]().parse_args([])
    differs = {k for k, v in vars(chart_run).items() if getattr(program_default, k) != v}
    assert differs == {"kubeconfig", "metrics_bind_address", "health_probe_bind_address", "v"}
    assert not any(a.startswith(("--master", "--controllers", "--descheduling-cool-down")) for a in argv)
    assert container(default_docs, component)["command"] == [component]


def test_failback_switch_adds_the_controller_to_all_the_defaults(chart: helm_python.Chart) -> None:
    docs = render(chart, {"controllerManager": {"failback": {"enabled": True}}})
    argv = args(docs, CM)
    assert "--controllers=*,clusterFailback" in argv
    assert "--failback-stabilization-window=5m0s" in argv
    run = parsed(docs, CM)
    assert is_enabled("clusterFailback", run.controllers, enabled_by_default=False)
    assert is_enabled("workloadRebalancer", run.controllers)


def test_extra_command_args_come_last(chart: helm_python.Chart) -> None:
    docs = render(chart, {"controllerManager": {"extraCommandArgs": {"kube-api-qps": 99, "feature-gates": "X=true"}}})
    argv = args(docs, CM)
    assert argv[-2:] == ["--feature-gates=X=true", "--kube-api-qps=99"]
    assert parsed(docs, CM).kube_api_qps == 99.0  # the last one wins


def test_system_namespace_sets_the_lease_namespace_and_role(custom_docs: list[Manifest]) -> None:
    for component in COMPONENTS:
        assert "--leader-elect-resource-namespace=karmada-ha" in args(custom_docs, component)
        role = one(custom_docs, "Role", f"{RELEASE}:{component}:leader-election")
        assert role["metadata"]["namespace"] == "karmada-ha"


def lease_names(docs: list[Manifest], component: str) -> set[str]:
    """The Lease names the component's leader-election Role grants anything on."""
    role = one(docs, "Role", f"{RELEASE}:{component}:leader-election")
    return {name for rule in role["rules"] for name in rule.get("resourceNames") or ()}


def test_default_leases_do_not_collide_with_karmadas_controller_manager(default_docs: list[Manifest]) -> None:
    """Karmada's controller-manager keeps running and holds "karmada-controller-manager"; the
    descheduler replaces Karmada's and shares its Lease on purpose."""
    assert parsed(default_docs, CM).leader_elect_resource_name == "karmada-rebalance-controller-manager"
    assert lease_names(default_docs, CM) == {"karmada-rebalance-controller-manager"}
    assert parsed(default_docs, DS).leader_elect_resource_name == "karmada-descheduler"
    assert lease_names(default_docs, DS) == {"karmada-descheduler"}


@pytest.mark.parametrize("values", [
    {"leaderElection": {"resourceName": "rebalance-lock"}},
    {"extraCommandArgs": {"leader-elect-resource-name": "rebalance-lock"}},
], ids=["value", "extra-command-args"])
def test_the_role_follows_the_lease_name_the_program_gets(chart: helm_python.Chart, values: dict[str, Any]) -> None:
    docs = render(chart, {"controllerManager": values})
    assert parsed(docs, CM).leader_elect_resource_name == "rebalance-lock"
    assert lease_names(docs, CM) == {"rebalance-lock"}
    role = one(docs, "Role", f"{RELEASE}:{CM}:leader-election")
    assert {("coordination.k8s.io", "leases", "create")} <= {  # create cannot be limited by name
        (g, r, v) for rule in role["rules"] if not rule.get("resourceNames")
        for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    assert lease_names(docs, DS) == {"karmada-descheduler"}  # the other component is untouched


# ----------------------------------------------------------------------------- switches


@pytest.mark.parametrize("component", COMPONENTS)
def test_disabling_a_component_removes_all_of_it(chart: helm_python.Chart, component: str) -> None:
    docs = render(chart, {SECTIONS[component]: {"enabled": False}})
    names = {d["metadata"]["name"] for d in docs}
    assert not {n for n in names if component in n}
    other = next(c for c in COMPONENTS if c != component)
    assert one(docs, "Deployment", other)
    assert one(docs, "Service", f"{other}-metrics")
    assert one(docs, "PodDisruptionBudget", other)


def test_karmada_api_server_target_gets_only_identities_and_rbac(chart: helm_python.Chart) -> None:
    docs = render(chart, {"workloads": {"create": False}})
    assert {d["kind"] for d in docs} == {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}


def test_host_cluster_target_gets_only_workloads(chart: helm_python.Chart) -> None:
    docs = render(chart, {"rbac": {"create": False}, "serviceAccount": {"create": False}})
    assert {d["kind"] for d in docs} == {"Deployment", "Service", "PodDisruptionBudget", "ConfigMap"}
    for component in COMPONENTS:  # no reference to a ServiceAccount that does not exist in this cluster
        assert "serviceAccountName" not in one(docs, "Deployment", component)["spec"]["template"]["spec"]


def test_pdb_can_be_disabled_or_use_max_unavailable(chart: helm_python.Chart) -> None:
    docs = render(chart, {"controllerManager": {"podDisruptionBudget": {"enabled": False}},
                          "descheduler": {"podDisruptionBudget": {"maxUnavailable": 1}}})
    assert not find(docs, "PodDisruptionBudget", CM)
    assert one(docs, "PodDisruptionBudget", DS)["spec"] == {
        "maxUnavailable": 1, "selector": {"matchLabels": {"app": DS}}}


def test_default_pdb_keeps_one_pod(default_docs: list[Manifest]) -> None:
    for component in COMPONENTS:
        assert one(default_docs, "PodDisruptionBudget", component)["spec"]["minAvailable"] == 1


def test_service_monitor_scrapes_the_metrics_services(chart: helm_python.Chart) -> None:
    docs = render(chart, {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}, "interval": "15s"}})
    for component in COMPONENTS:
        monitor = one(docs, "ServiceMonitor", component)
        service = one(docs, "Service", f"{component}-metrics")
        assert monitor["metadata"]["labels"]["release"] == "prom"
        selector = monitor["spec"]["selector"]["matchLabels"]
        assert selector.items() <= service["metadata"]["labels"].items()
        assert monitor["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics", "interval": "15s",
                                                 "scrapeTimeout": "10s"}]
        assert service["spec"]["ports"] == [{"name": "metrics", "port": 8080, "targetPort": "metrics",
                                             "protocol": "TCP"}]
        assert service["spec"]["selector"] == {"app": component}


# ----------------------------------------------------------------------------- pods


@pytest.mark.parametrize("component", COMPONENTS)
def test_pod_follows_karmadas_conventions(default_docs: list[Manifest], component: str) -> None:
    deployment = one(default_docs, "Deployment", component)
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "50%"}}
    assert pod["automountServiceAccountToken"] is False
    assert pod["priorityClassName"] == "system-node-critical"
    main = container(default_docs, component)
    assert main["image"] == "ghcr.io/karmada-rebalance/karmada-rebalance:0.1.0"
    assert main["env"] == [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
    assert {"name": "metrics", "containerPort": 8080, "protocol": "TCP"} in main["ports"]
    assert {"name": "kubeconfig", "mountPath": "/etc/kubeconfig", "subPath": "kubeconfig",
            "readOnly": True} in main["volumeMounts"]
    assert {"name": "kubeconfig", "secret": {"secretName": f"{component}-kubeconfig"}} in pod["volumes"]
    assert main["resources"]["requests"] and main["resources"]["limits"]


@pytest.mark.parametrize("component", COMPONENTS)
def test_pod_is_locked_down(default_docs: list[Manifest], component: str) -> None:
    pod = one(default_docs, "Deployment", component)["spec"]["template"]["spec"]
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532,
                                      "fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}}
    main = container(default_docs, component)
    assert main["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                       "capabilities": {"drop": ["ALL"]}}
    assert {"name": "tmp", "mountPath": "/tmp"} in main["volumeMounts"]
    assert {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}} in pod["volumes"]


@pytest.mark.parametrize("component", COMPONENTS)
def test_probes_hit_the_health_port(default_docs: list[Manifest], component: str) -> None:
    main = container(default_docs, component)
    assert {"name": "health", "containerPort": HEALTH_PORTS[component], "protocol": "TCP"} in main["ports"]
    assert main["livenessProbe"] == {"httpGet": {"path": "/healthz", "port": "health", "scheme": "HTTP"},
                                     "initialDelaySeconds": 15, "periodSeconds": 15, "timeoutSeconds": 5,
                                     "failureThreshold": 3}
    assert main["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health", "scheme": "HTTP"}


def test_pod_customization_values_reach_the_pod(chart: helm_python.Chart) -> None:
    values = {"image": {"registry": "", "repository": "registry.local/kr", "tag": "dev", "pullPolicy": "Always",
                        "pullSecrets": ["regcred"]},
              "descheduler": {"podAnnotations": {"a": "b"}, "podLabels": {"team": "x"}, "replicaCount": 3,
                              "nodeSelector": {"role": "control"}, "tolerations": [{"operator": "Exists"}],
                              "affinity": {"nodeAffinity": {}}, "priorityClassName": "",
                              "kubeconfig": "my-secret", "resources": {"limits": {"memory": "1Gi"}}}}
    docs = render(chart, values)
    template = one(docs, "Deployment", DS)["spec"]["template"]
    pod = template["spec"]
    main = container(docs, DS)
    assert main["image"] == "registry.local/kr:dev" and main["imagePullPolicy"] == "Always"
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    assert template["metadata"]["annotations"] == {"a": "b"}
    assert template["metadata"]["labels"]["team"] == "x"
    assert one(docs, "Deployment", DS)["spec"]["replicas"] == 3
    assert pod["nodeSelector"] == {"role": "control"}
    assert pod["tolerations"] == [{"operator": "Exists"}]
    assert pod["affinity"] == {"nodeAffinity": {}}
    assert "priorityClassName" not in pod
    assert {"name": "kubeconfig", "secret": {"secretName": "my-secret"}} in pod["volumes"]
    assert main["resources"]["limits"]["memory"] == "1Gi"  # merged with the defaults, as helm does


@pytest.mark.parametrize("component", [DS, CM])
def test_pod_selectors_are_a_mounted_configmap_the_program_accepts(custom_docs: list[Manifest],
                                                                   default_docs: list[Manifest],
                                                                   tmp_path: Path, component: str) -> None:
    configmap = one(custom_docs, "ConfigMap", f"{component}-pod-selectors")
    path = tmp_path / "pod-selectors.yaml"
    path.write_text(configmap["data"]["pod-selectors.yaml"])
    assert [(k.api_version, k.kind, k.pod_selector) for k in load_pod_selectors(path)] == [
        ("flink.apache.org/v1beta1", "FlinkDeployment", "app={name},component=taskmanager")]
    pod = one(custom_docs, "Deployment", component)["spec"]["template"]
    volume = {"name": "pod-selectors", "configMap": {"name": f"{component}-pod-selectors"}}
    assert volume in pod["spec"]["volumes"]
    mount = {"name": "pod-selectors", "mountPath": f"/etc/{component}", "readOnly": True}
    assert mount in container(custom_docs, component)["volumeMounts"]
    assert "checksum/pod-selectors" in pod["metadata"]["annotations"]  # the file is read at start
    assert not find(default_docs, "ConfigMap", f"{component}-pod-selectors")
    assert "--unschedulable-pod-selectors" not in " ".join(args(default_docs, component))


# ----------------------------------------------------------------------------- dashboard and notes


def test_dashboard_configmap_holds_the_dashboard(default_docs: list[Manifest]) -> None:
    configmap = one(default_docs, "ConfigMap", "karmada-rebalance-dashboard")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    dashboard = json.loads(configmap["data"]["karmada-rebalance.json"])
    assert dashboard == json.loads((CHART_DIR / "dashboards" / "karmada-rebalance.json").read_text())
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    for metric in ("controller_runtime_reconcile_total", "controller_runtime_reconcile_errors_total",
                   "controller_runtime_reconcile_time_seconds_bucket", "workqueue_depth",
                   "leader_election_master_status", "workload_rebalancer_workloads_total",
                   "descheduler_descheduled_replicas_total", "descheduler_replicas_held_back_total"):
        assert metric in exprs
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])


def test_dashboard_can_be_disabled(chart: helm_python.Chart) -> None:
    assert not find(render(chart, {"grafanaDashboard": {"enabled": False}}), "ConfigMap")


def test_notes_explain_the_topology_and_the_lease(chart: helm_python.Chart) -> None:
    text = notes(chart)
    assert "system:serviceaccount:karmada-system:karmada-controller-manager" in text
    assert "workloads.create=false" in text and "rbac.create=false" in text
    assert "get lease karmada-descheduler" in text
    assert "get lease karmada-rebalance-controller-manager" in text
    assert "get lease karmada-controller-manager" not in text  # Karmada's own controller-manager's
    renamed = notes(chart, {"controllerManager": {"leaderElection": {"resourceName": "rebalance-lock"}}})
    assert "get lease rebalance-lock" in renamed
    assert "services/karmada-controller-manager-metrics:metrics/proxy/metrics" in text


def test_notes_of_a_host_install_name_the_identities_where_they_were_made(chart: helm_python.Chart) -> None:
    """docs/deploy.md's install next to Karmada: the workloads in their own namespace, the ServiceAccounts made
    by the identities install on the Karmada API server (karmada-system there), not in the release's."""
    text = notes(chart, {"rbac": {"create": False}, "serviceAccount": {"create": False}})
    assert "system:serviceaccount:<SA-NAMESPACE>:karmada-controller-manager" in text
    assert "-n <SA-NAMESPACE> create token" in text
    assert "karmada-system in docs/deploy.md, section 2" in text
