"""RBAC: the framework type, the declarations in the code, and the chart generated from them."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import helm_python
import pytest
import yaml

from controller_manager.rbac import (
    Permission,
    PolicyRule,
    expand,
    for_resources,
    from_k8s,
    merge,
    normalize,
    rule,
    to_k8s,
)
from controller_manager.resource import Resource
from controllers.app import LEASE_NAME as CONTROLLER_MANAGER_LEASE
from controllers.app import (
    controller_manager_lease_rules,
    controller_manager_member_rules,
    controller_manager_preserve_rules,
    controller_manager_rules,
    controller_manager_rules_with_preserve,
)
from descheduler.app import LEASE_NAME as DESCHEDULER_LEASE
from descheduler.app import descheduler_lease_rules, descheduler_member_rules, descheduler_rules
from interpreter.aggregatestatus import INTERPRETED_RESOURCES
from tests.charts.chartutil import (
    CHART_DIR,
    COMPONENTS,
    NAMESPACE,
    RELEASE,
    ROOT,
    Manifest,
    one,
    render,
    rule_grants,
)

GENERATOR = ROOT / "hack" / "generate_rbac.py"
CLUSTER_RULES: dict[str, Callable[[], Sequence[PolicyRule]]] = {
    "karmada-controller-manager": controller_manager_rules, "karmada-descheduler": descheduler_rules}
LEASE_RULES: dict[str, Callable[[], Sequence[PolicyRule]]] = {
    "karmada-controller-manager": controller_manager_lease_rules, "karmada-descheduler": descheduler_lease_rules}
# Not Karmada's "karmada-controller-manager" (it keeps running next to ours); the descheduler's is
# Karmada's on purpose (ours replaces it).
LEASES = {"karmada-controller-manager": "karmada-rebalance-controller-manager",
          "karmada-descheduler": "karmada-descheduler"}


def grants(rules: Sequence[PolicyRule]) -> set[Permission]:
    return set(expand(rules))  # a Permission is a (group, resource, verb, name) tuple: equal to plain ones


# ----------------------------------------------------------------------------- the framework type


def test_merge_is_a_union_of_permissions() -> None:
    a = rule("apps", ["deployments", "statefulsets"], ["get", "list"])
    b = rule("apps", "deployments", ["list", "watch"])
    merged = merge([a], [b])
    assert expand(merged) == expand([a, b])
    assert to_k8s(merged) == [
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["statefulsets"], "verbs": ["get", "list"]},
    ]


def test_normalize_groups_resources_with_the_same_verbs_and_is_stable() -> None:
    rules = [rule("", "pods", "get"), rule("", "services", "get"), rule(["", "apps"], "configmaps", "get")]
    once = normalize(rules)
    assert normalize(list(reversed(rules))) == once == normalize(once)
    assert [r.to_k8s() for r in once] == [
        {"apiGroups": [""], "resources": ["configmaps", "pods", "services"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "resources": ["configmaps"], "verbs": ["get"]},
    ]


def test_a_grant_by_name_is_dropped_where_any_name_is_granted() -> None:
    rules = [rule("coordination.k8s.io", "leases", ["get", "update"], resource_names=["a"]),
             rule("coordination.k8s.io", "leases", "get")]
    assert expand(rules) == {Permission("coordination.k8s.io", "leases", "get"),
                             Permission("coordination.k8s.io", "leases", "update", "a")}


def test_for_resources_names_subresources() -> None:
    deployments = Resource("apps", "v1", "deployments", "Deployment", True)
    assert for_resources([deployments], "update", subresource="status") == [
        PolicyRule(("apps",), ("deployments/status",), ("update",))]


def test_k8s_round_trip() -> None:
    rules = normalize([rule("", "secrets", "get", resource_names=["x"]), rule("", "events", ["create", "patch"])])
    assert from_k8s(to_k8s(rules)) == rules


def test_a_rule_without_verbs_is_an_error() -> None:
    with pytest.raises(ValueError, match="needs"):
        rule("", "pods", [])


# ----------------------------------------------------------------------------- the declarations


def test_controller_manager_declares_what_its_controllers_call() -> None:
    declared = grants(controller_manager_rules())
    for verb in ("list", "watch", "get", "delete"):  # informer, ttl-cleaner's fresh GET and DELETE
        assert ("apps.karmada.io", "workloadrebalancers", verb, "") in declared
    assert ("apps.karmada.io", "workloadrebalancers/status", "patch", "") in declared
    for binding in ("resourcebindings", "clusterresourcebindings"):
        for verb in ("list", "watch", "get", "update"):  # informers; rebalancer's GET + spec PUT
            assert ("work.karmada.io", binding, verb, "") in declared
        assert ("work.karmada.io", f"{binding}/status", "update", "") in declared  # binding status
    assert {("work.karmada.io", "works", v, "") for v in ("list", "watch")} <= declared
    assert {("", "events", v, "") for v in ("create", "patch")} <= declared
    for resource in INTERPRETED_RESOURCES.values():  # templates: read, then write their status
        assert (resource.group, resource.plural, "get", "") in declared
        assert (resource.group, f"{resource.plural}/status", "update", "") in declared
    # nothing beyond that: no Secrets, no writes to templates' spec, no Work writes
    assert not {g for g in declared if g[1] in ("secrets", "works") and g[2] not in ("list", "watch")}
    assert not {g for g in declared if g[1] == "pods" and g[2] != "get"}
    # templates are read, never written: clusterFailback's health check watches them (caches.Templates)
    assert not {g for g in declared if g[1] in ("deployments", "statefulsets", "replicasets")
                and g[2] not in ("get", "list", "watch")}


def test_descheduler_declares_what_it_calls() -> None:
    assert grants(descheduler_rules()) == {
        ("work.karmada.io", "resourcebindings", "list", ""), ("work.karmada.io", "resourcebindings", "watch", ""),
        ("work.karmada.io", "resourcebindings", "update", ""),
        ("work.karmada.io", "resourcebindings", "get", ""),  # read back after an update of unknown result
        ("cluster.karmada.io", "clusters", "list", ""), ("cluster.karmada.io", "clusters", "watch", ""),
        ("", "secrets", "get", ""),  # each Cluster's secretRef, read by name: never listed nor watched
        ("", "events", "create", ""), ("", "events", "patch", ""),
    }
    assert grants(descheduler_member_rules()) == {
        (group, resource, verb, "") for group, resource in (("", "nodes"), ("", "pods"), ("apps", "replicasets"),
                                                             ("apps", "deployments"), ("apps", "statefulsets"))
        for verb in ("list", "watch")}


def test_preserve_mode_adds_the_cluster_secrets_and_the_descheduler_member_rules() -> None:
    assert grants(controller_manager_preserve_rules()) == {
        ("cluster.karmada.io", "clusters", "list", ""), ("cluster.karmada.io", "clusters", "watch", ""),
        ("", "secrets", "get", ""),  # each Cluster's secretRef, read by name: never listed nor watched
    }
    assert grants(controller_manager_rules_with_preserve()) == \
        grants(controller_manager_rules()) | grants(controller_manager_preserve_rules())
    assert grants(controller_manager_member_rules()) == grants(descheduler_member_rules())


def test_the_lease_names_are_the_programs_defaults() -> None:
    assert tuple(LEASES.values()) == (CONTROLLER_MANAGER_LEASE, DESCHEDULER_LEASE)


@pytest.mark.parametrize("component", COMPONENTS)
def test_lease_rules_are_limited_to_the_components_lease(component: str) -> None:
    lease = LEASES[component]
    assert grants(LEASE_RULES[component]()) == {
        ("coordination.k8s.io", "leases", "create", ""),  # a POST names no object: cannot be limited
        ("coordination.k8s.io", "leases", "get", lease),
        ("coordination.k8s.io", "leases", "update", lease),
        ("coordination.k8s.io", "leases", "watch", lease),
    }


# ----------------------------------------------------------------------------- the chart


@pytest.mark.parametrize("component", COMPONENTS)
def test_chart_cluster_role_equals_the_code(default_docs: list[Manifest], component: str) -> None:
    role = one(default_docs, "ClusterRole", f"{RELEASE}:{component}")
    assert set(rule_grants(role["rules"])) == grants(CLUSTER_RULES[component]())


def test_chart_cluster_role_follows_the_preserve_switch(chart: helm_python.Chart,
                                                        default_docs: list[Manifest]) -> None:
    component = "karmada-controller-manager"
    default = set(rule_grants(one(default_docs, "ClusterRole", f"{RELEASE}:{component}")["rules"]))
    assert not {g for g in default if g[1] == "secrets"}
    preserving = render(chart, {"controllerManager": {"preserveAvailableReplicas": {"enabled": True}}})
    role = one(preserving, "ClusterRole", f"{RELEASE}:{component}")
    assert set(rule_grants(role["rules"])) == grants(controller_manager_rules_with_preserve())


@pytest.mark.parametrize("component", COMPONENTS)
def test_chart_lease_role_equals_the_code(default_docs: list[Manifest], component: str) -> None:
    role = one(default_docs, "Role", f"{RELEASE}:{component}:leader-election")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert set(rule_grants(role["rules"])) == grants(LEASE_RULES[component]())


@pytest.mark.parametrize("component", COMPONENTS)
def test_bindings_grant_the_roles_to_the_service_account(default_docs: list[Manifest], component: str) -> None:
    subject = [{"kind": "ServiceAccount", "name": component, "namespace": NAMESPACE}]
    account = one(default_docs, "ServiceAccount", component)
    assert account["metadata"]["namespace"] == NAMESPACE
    cluster_binding = one(default_docs, "ClusterRoleBinding", f"{RELEASE}:{component}")
    assert cluster_binding["subjects"] == subject
    assert cluster_binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                          "name": f"{RELEASE}:{component}"}
    binding = one(default_docs, "RoleBinding", f"{RELEASE}:{component}:leader-election")
    assert binding["subjects"] == subject
    assert binding["roleRef"]["name"] == f"{RELEASE}:{component}:leader-election"
    assert binding["metadata"]["namespace"] == NAMESPACE


# ----------------------------------------------------------------------------- the generator


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_rbac", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_rule_files_are_current() -> None:
    result = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, check=False,
                            cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_reports_a_stale_file_with_a_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    generator = _generator()
    out = tmp_path / "rbac"
    shutil.copytree(CHART_DIR / "files" / "rbac", out)
    monkeypatch.setattr(generator, "OUT_DIR", out)
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    stale = out / "descheduler.yaml"
    stale.write_text(stale.read_text().replace("  - get\n", "  - list\n", 1))
    assert generator.main(["--check"]) == 1
    captured = capsys.readouterr()
    assert "-  - list" in captured.out and "+  - get" in captured.out
    assert "run `python hack/generate_rbac.py`" in captured.err
    assert generator.main([]) == 0  # regenerates
    assert generator.main(["--check"]) == 0


def test_generated_files_are_what_the_chart_reads() -> None:
    for name, component in (("controller-manager.yaml", "karmada-controller-manager"),
                            ("descheduler.yaml", "karmada-descheduler")):
        data = yaml.safe_load((CHART_DIR / "files" / "rbac" / name).read_text())
        assert from_k8s(data["clusterRules"]) == normalize(CLUSTER_RULES[component]())
        if component == "karmada-controller-manager":
            assert from_k8s(data["preserveClusterRules"]) == normalize(controller_manager_rules_with_preserve())
        assert from_k8s(data["leaseRules"]) == normalize(LEASE_RULES[component]())
        assert data["leaseName"] == LEASES[component]  # the name the chart swaps for the configured one


def test_generator_refuses_lease_rules_that_name_another_object() -> None:
    """The chart swaps only the default Lease name: a rule naming anything else would keep granting it."""
    def stray() -> list[PolicyRule]:
        return [*controller_manager_lease_rules(), rule("coordination.k8s.io", "leases", "get",
                                                        resource_names=["karmada-controller-manager"])]

    with pytest.raises(ValueError, match="only the Lease"):
        _generator().render("", CONTROLLER_MANAGER_LEASE, {"leaseRules": stray})


def test_chart_lease_role_follows_the_lease_name_value(chart: helm_python.Chart) -> None:
    docs = render(chart, {"controllerManager": {"leaderElection": {"resourceName": "rebalance-lock"}}})
    role = one(docs, "Role", f"{RELEASE}:karmada-controller-manager:leader-election")
    assert set(rule_grants(role["rules"])) == grants(controller_manager_lease_rules("rebalance-lock"))


def test_chart_refuses_to_render_without_the_rule_files(tmp_path: Path) -> None:
    copy = tmp_path / "chart"
    shutil.copytree(CHART_DIR, copy)
    (copy / "files" / "rbac" / "descheduler.yaml").unlink()
    with pytest.raises(helm_python.HelmRenderError, match="generate_rbac"):
        render(helm_python.Chart.load(str(copy)))
