"""RBAC authorization from the stored Roles, ClusterRoles, RoleBindings and ClusterRoleBindings.

Rule matching and binding resolution follow kube's RBAC authorizer
(plugin/pkg/auth/authorizer/rbac and pkg/registry/rbac/validation): ClusterRoleBindings are
visited first, then the RoleBindings of the request's namespace; the first rule that allows
wins; a denial's reason lists the roles that bindings of the user referenced but do not exist.

To stay cheap, the four kinds are compiled into subject indexes once per change (a store write
listener marks them stale) rather than read per request; a change applies to the next request.
``aggregationRule`` is not evaluated: a ClusterRole's stored ``rules`` are what it grants.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import structlog

from controller_manager import objects
from kube_api.validation import aggregate_messages

from .authn import ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, MASTERS
from .resources import ResourceType
from .store import Store
from .watch import Stored

log = structlog.get_logger(__name__)

RBAC_GROUP = "rbac.authorization.k8s.io"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True, slots=True)
class RequestAttributes:
    """What is asked, as kube's authorizer.Attributes: a resource request or a non-resource path."""

    user: str
    groups: tuple[str, ...]
    verb: str
    resource_request: bool
    path: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """One rbac/v1 PolicyRule."""

    verbs: tuple[str, ...] = ()
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, rule: dict[str, Any]) -> PolicyRule:
        def strings(key: str) -> tuple[str, ...]:
            value = rule.get(key) or ()
            return tuple(str(v) for v in value) if isinstance(value, list) else ()

        return cls(strings("verbs"), strings("apiGroups"), strings("resources"), strings("resourceNames"),
                   strings("nonResourceURLs"))


def _matches(values: tuple[str, ...], wanted: str) -> bool:
    return "*" in values or wanted in values


def _resource_matches(rule: PolicyRule, combined: str, subresource: str) -> bool:
    for resource in rule.resources:
        if resource in ("*", combined):
            return True
        if subresource and resource == "*/" + subresource:
            return True
    return False


def _url_matches(rule: PolicyRule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url in ("*", path):
            return True
        if url.endswith("*") and path.startswith(url.rstrip("*")):
            return True
    return False


def rule_allows(attrs: RequestAttributes, rule: PolicyRule) -> bool:
    """kube's RuleAllows: verbs, groups, resource[/subresource] (``*``, ``*/sub``), resourceNames
    (a request without a name never matches a rule that names some) or nonResourceURLs."""
    if not _matches(rule.verbs, attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(rule, attrs.path)
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    return (_matches(rule.api_groups, attrs.api_group)
            and _resource_matches(rule, combined, attrs.subresource)
            and (not rule.resource_names or attrs.name in rule.resource_names))


@dataclass(frozen=True, slots=True)
class Binding:
    """A RoleBinding (namespace set) or ClusterRoleBinding, reduced to what authorization needs."""

    name: str
    namespace: str
    role_kind: str
    role_name: str


def subject_keys(subject: dict[str, Any], binding_namespace: str) -> list[tuple[str, str]]:
    """("user", name) or ("group", name) keys a subject grants to, as kube's appliesToUser:
    a ServiceAccount is the user ``system:serviceaccount:<ns>:<name>``, its namespace defaulting
    to the RoleBinding's."""
    kind, name = subject.get("kind"), str(subject.get("name") or "")
    if kind == "User":
        return [("user", name)]
    if kind == "Group":
        return [("group", name)]
    if kind == "ServiceAccount":
        namespace = str(subject.get("namespace") or binding_namespace)
        return [("user", f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")] if namespace else []
    return []


@dataclass
class PolicySnapshot:
    """The RBAC objects compiled for lookups: rules by role, bindings by subject."""

    cluster_roles: dict[str, tuple[PolicyRule, ...]] = field(default_factory=dict)
    roles: dict[tuple[str, str], tuple[PolicyRule, ...]] = field(default_factory=dict)
    # (namespace or "" for ClusterRoleBindings, "user"|"group", name) → bindings
    bindings: dict[tuple[str, str, str], list[Binding]] = field(default_factory=dict)

    def add_role(self, namespace: str, name: str, rules: Iterable[dict[str, Any]]) -> None:
        compiled = tuple(PolicyRule.from_dict(r) for r in rules if isinstance(r, dict))
        if namespace:
            self.roles[(namespace, name)] = compiled
        else:
            self.cluster_roles[name] = compiled

    def add_binding(self, obj: dict[str, Any]) -> None:
        namespace = objects.namespace(obj)
        ref = obj.get("roleRef") or {}
        binding = Binding(objects.name(obj), namespace, str(ref.get("kind") or ""),
                          str(ref.get("name") or ""))
        seen: set[tuple[str, str]] = set()
        for subject in obj.get("subjects") or []:
            if not isinstance(subject, dict):
                continue
            for key in subject_keys(subject, namespace):
                if key not in seen:
                    seen.add(key)
                    self.bindings.setdefault((namespace, *key), []).append(binding)

    def applicable(self, namespace: str, user: str, groups: tuple[str, ...]) -> list[Binding]:
        """Bindings of one scope that name the user, one of its groups or its service account."""
        found: dict[tuple[str, str], Binding] = {}
        for key in (("user", user), *(("group", g) for g in groups)):
            for binding in self.bindings.get((namespace, *key), ()):
                found.setdefault((binding.namespace, binding.name), binding)
        return [found[k] for k in sorted(found)]

    def rules_of(self, binding: Binding) -> tuple[tuple[PolicyRule, ...], str]:
        """The referenced role's rules, or kube's resolution error message."""
        if binding.role_kind == "Role":
            rules = self.roles.get((binding.namespace, binding.role_name)) if binding.namespace else None
        elif binding.role_kind == "ClusterRole":
            rules = self.cluster_roles.get(binding.role_name)
        else:
            return (), f'unsupported role reference kind: "{binding.role_kind}"'
        if rules is None:
            return (), f'{binding.role_kind.lower()}.{RBAC_GROUP} "{binding.role_name}" not found'
        return rules, ""


def evaluate(snapshot: PolicySnapshot, attrs: RequestAttributes) -> tuple[bool, str]:
    """(allowed, reason) for a request, visiting bindings in kube's order."""
    missing: list[str] = []
    scopes = ("", attrs.namespace) if attrs.namespace else ("",)
    for scope in scopes:
        for binding in snapshot.applicable(scope, attrs.user, attrs.groups):
            rules, error = snapshot.rules_of(binding)
            if error:
                missing.append(error)
                continue
            if any(rule_allows(attrs, rule) for rule in rules):
                kind = "RoleBinding" if binding.namespace else "ClusterRoleBinding"
                return True, f'RBAC: allowed by {kind} "{binding.name}" of {binding.role_kind} "{binding.role_name}"'
    return False, f"RBAC: {aggregate_messages(missing)}" if missing else ""


class RBACAuthorizer:
    """Authorizes against the store's RBAC objects; ``system:masters`` is always allowed, as kube's
    privileged-group authorizer in front of RBAC does."""

    def __init__(self, store: Store) -> None:
        self.store = store
        registry = store.registry
        types = [registry.get(RBAC_GROUP, "v1", plural)
                 for plural in ("roles", "clusterroles", "rolebindings", "clusterrolebindings")]
        if any(t is None for t in types):
            raise RuntimeError("RBAC needs rbac.authorization.k8s.io/v1 to be served")
        self._types: list[ResourceType] = [t for t in types if t is not None]
        self._keys = {t.storage_key for t in self._types}
        self._snapshot: PolicySnapshot | None = None
        store.write_listeners.append(self._on_write)

    def _on_write(self, rtype: ResourceType, _stored: Stored) -> None:
        if rtype.storage_key in self._keys:
            self._snapshot = None

    def snapshot(self) -> PolicySnapshot:
        snapshot = self._snapshot
        if snapshot is None:
            snapshot = PolicySnapshot()
            roles, cluster_roles, role_bindings, cluster_role_bindings = self._types
            for rtype in (roles, cluster_roles):
                for stored in self.store.items(rtype.storage_key):
                    snapshot.add_role(stored.namespace, stored.name, stored.obj.get("rules") or [])
            for rtype in (cluster_role_bindings, role_bindings):
                for stored in self.store.items(rtype.storage_key):
                    snapshot.add_binding(stored.obj)
            self._snapshot = snapshot
            log.debug("rbac policy compiled", roles=len(snapshot.roles), cluster_roles=len(snapshot.cluster_roles))
        return snapshot

    def authorize(self, attrs: RequestAttributes) -> tuple[bool, str]:
        if MASTERS in attrs.groups:
            return True, ""
        return evaluate(self.snapshot(), attrs)


# ------------------------------------------------------------------ kube's bootstrap policy (the part served here)

_BOOTSTRAP_META = {"annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
                   "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}}


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole",
            "metadata": {"name": name, **_BOOTSTRAP_META}, "rules": rules}


def _cluster_binding(name: str, *groups: str) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, **_BOOTSTRAP_META},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": g} for g in groups]}


def bootstrap_cluster_roles() -> list[dict[str, Any]]:
    """kube-apiserver's default ClusterRoles for admins, discovery, health and metrics."""
    return [
        _cluster_role("cluster-admin", [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                                        {"verbs": ["*"], "nonResourceURLs": ["*"]}]),
        _cluster_role("system:discovery", [{"verbs": ["get"], "nonResourceURLs": [
            "/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/"]}]),
        _cluster_role("system:public-info-viewer", [{"verbs": ["get"], "nonResourceURLs": [
            "/healthz", "/livez", "/readyz", "/version", "/version/"]}]),
        _cluster_role("system:basic-user", [
            {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
             "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
            {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]}]),
        _cluster_role("system:monitoring", [{"verbs": ["get"], "nonResourceURLs": [
            "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis", "/readyz", "/readyz/*"]}]),
    ]


def bootstrap_cluster_role_bindings() -> list[dict[str, Any]]:
    """The bindings kube-apiserver creates for those roles."""
    return [
        _cluster_binding("cluster-admin", MASTERS),
        _cluster_binding("system:discovery", ALL_AUTHENTICATED),
        _cluster_binding("system:public-info-viewer", ALL_AUTHENTICATED, ALL_UNAUTHENTICATED),
        _cluster_binding("system:basic-user", ALL_AUTHENTICATED),
        _cluster_binding("system:monitoring", "system:monitoring"),
    ]
