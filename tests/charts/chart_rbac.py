"""The chart's RBAC on a dev API server that enforces it: shared by tests/charts and tests/e2e.

The components run as their ServiceAccounts (``system:serviceaccount:karmada-system:<component>``),
authenticated by a token file as kube-apiserver's ``--token-auth-file``; the RBAC objects are the ones
``helm template`` renders from the chart, applied by an admin as ``kubectl apply`` would.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from controller_manager.client import KubeClient
from controller_manager.resource import Resource
from devplane.apiserver.auth import AuthorizationDecision
from devplane.kubeconfig import write_kubeconfig
from tests.charts.chartutil import COMPONENTS, NAMESPACE, Manifest, load_chart, render, rule_grants

CONTROLLER_MANAGER, DESCHEDULER = COMPONENTS

# The RBAC kinds the chart renders, and where an admin creates them.
_RESOURCES: dict[str, Resource] = {
    "ServiceAccount": Resource("", "v1", "serviceaccounts", "ServiceAccount", True),
    "ClusterRole": Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    "ClusterRoleBinding": Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding",
                                   False),
    "Role": Resource("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    "RoleBinding": Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
}
CLUSTER_ROLES = _RESOURCES["ClusterRole"]

Triple = tuple[str, str, str]  # (API group, resource[/subresource], verb)


def service_account_user(component: str) -> str:
    return f"system:serviceaccount:{NAMESPACE}:{component}"


def chart_rbac() -> list[Manifest]:
    """The ServiceAccounts, roles and bindings the chart renders with its default values."""
    return [doc for doc in render(load_chart()) if doc["kind"] in _RESOURCES]


def write_token_file(path: Path) -> dict[str, str]:
    """A kube token file with one fresh token per component's ServiceAccount; component → token."""
    tokens = {component: secrets.token_hex(16) for component in COMPONENTS}
    groups = f"system:serviceaccounts,system:serviceaccounts:{NAMESPACE}"
    path.write_text("".join(f'{token},{service_account_user(component)},{component}-uid,"{groups}"\n'
                            for component, token in tokens.items()), encoding="utf-8")
    return tokens


def write_component_kubeconfigs(directory: Path, url: str, tokens: Mapping[str, str], ca_pem: bytes
                                ) -> dict[str, Path]:
    """One kubeconfig per component with its token, as the chart's kubeconfig Secret would hold."""
    paths: dict[str, Path] = {}
    for component, token in tokens.items():
        path = paths[component] = directory / f"{component}.kubeconfig"
        write_kubeconfig(path, {"karmada-apiserver": url}, "karmada-apiserver", tokens={"karmada-apiserver": token},
                         cas={"karmada-apiserver": ca_pem} if ca_pem else None)
    return paths


async def apply(admin: KubeClient, docs: Iterable[Manifest]) -> None:
    """Create each object (the namespace exists already)."""
    for doc in docs:
        resource = _RESOURCES[doc["kind"]]
        await admin.create(resource, doc, doc["metadata"].get("namespace", "") if resource.namespaced else "")


def granted(docs: Iterable[Manifest], component: str) -> set[Triple]:
    """(group, resource, verb) the chart grants ``component``'s ServiceAccount, resource names aside."""
    roles = {(d["kind"], d["metadata"]["name"]): d for d in docs if d["kind"] in ("ClusterRole", "Role")}
    out: set[Triple] = set()
    for binding in (d for d in docs if d["kind"] in ("ClusterRoleBinding", "RoleBinding")):
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == component for s in binding["subjects"]):
            continue
        role: dict[str, Any] = roles[(binding["roleRef"]["kind"], binding["roleRef"]["name"])]
        out |= {(group, resource, verb) for group, resource, verb, _ in rule_grants(role.get("rules") or [])}
    return out


def used(decisions: Iterable[AuthorizationDecision], component: str) -> set[Triple]:
    """(group, resource, verb) of every resource request ``component`` made (allowed or not)."""
    user = service_account_user(component)
    return {(d.api_group, f"{d.resource}/{d.subresource}" if d.subresource else d.resource, d.verb)
            for d in decisions if d.user == user and d.resource}


def denied(decisions: Iterable[AuthorizationDecision], component: str) -> list[AuthorizationDecision]:
    user = service_account_user(component)
    return [d for d in decisions if d.user == user and not d.allowed]

