"""RBAC rule matching, binding resolution and token files, as kube's authorizer and tokenfile do them."""

from __future__ import annotations

from typing import Any

import pytest

from devplane.apiserver.auth import forbidden, request_attributes
from devplane.apiserver.authn import (
    ALL_AUTHENTICATED,
    TokenAuthenticator,
    TokenFileError,
    UserInfo,
    bearer_token,
    parse_token_csv,
)
from devplane.apiserver.rbac import (
    PolicyRule,
    PolicySnapshot,
    RequestAttributes,
    bootstrap_cluster_role_bindings,
    bootstrap_cluster_roles,
    evaluate,
    rule_allows,
)

BOB = UserInfo("bob", "2", ("dev", ALL_AUTHENTICATED))
SA = UserInfo("system:serviceaccount:karmada-system:karmada-controller-manager", "",
              ("system:serviceaccounts", ALL_AUTHENTICATED))


def attrs(method: str, path: str, query: dict[str, str] | None = None, user: UserInfo = BOB) -> RequestAttributes:
    return request_attributes(user, method, path, query or {})


def rule(**fields: Any) -> PolicyRule:
    return PolicyRule.from_dict(fields)


RB = "/apis/work.karmada.io/v1alpha2/namespaces/default/resourcebindings"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


# ------------------------------------------------------------------ request attributes (requestinfo.go)

@pytest.mark.parametrize(("method", "path", "query", "expected"), [
    ("GET", f"{RB}/web", {}, ("get", "work.karmada.io", "resourcebindings", "", "default", "web")),
    ("GET", RB, {}, ("list", "work.karmada.io", "resourcebindings", "", "default", "")),
    ("GET", RB, {"watch": "true"}, ("watch", "work.karmada.io", "resourcebindings", "", "default", "")),
    ("GET", RB, {"watch": "false"}, ("list", "work.karmada.io", "resourcebindings", "", "default", "")),
    ("GET", "/apis/work.karmada.io/v1alpha2/watch/namespaces/default/resourcebindings", {},
     ("watch", "work.karmada.io", "resourcebindings", "", "default", "")),
    ("GET", RB, {"fieldSelector": "metadata.name=web"}, ("list", "work.karmada.io", "resourcebindings", "",
                                                         "default", "web")),
    ("POST", RB, {}, ("create", "work.karmada.io", "resourcebindings", "", "default", "")),
    ("PUT", f"{RB}/web/status", {}, ("update", "work.karmada.io", "resourcebindings", "status", "default", "web")),
    ("PATCH", f"{DEPLOY}/foo/scale", {}, ("patch", "apps", "deployments", "scale", "default", "foo")),
    ("DELETE", f"{RB}/web", {}, ("delete", "work.karmada.io", "resourcebindings", "", "default", "web")),
    ("DELETE", RB, {}, ("deletecollection", "work.karmada.io", "resourcebindings", "", "default", "")),
    ("GET", "/api/v1/pods", {}, ("list", "", "pods", "", "", "")),
    ("GET", "/api/v1/namespaces", {}, ("list", "", "namespaces", "", "", "")),
    ("GET", "/api/v1/namespaces/kube-system", {}, ("get", "", "namespaces", "", "kube-system", "kube-system")),
    ("PUT", "/api/v1/namespaces/x/finalize", {}, ("update", "", "namespaces", "finalize", "x", "x")),
    ("GET", "/apis/cluster.karmada.io/v1alpha1/clusters/member1", {},
     ("get", "cluster.karmada.io", "clusters", "", "", "member1")),
])
def test_resource_request_attributes(method: str, path: str, query: dict[str, str],
                                     expected: tuple[str, ...]) -> None:
    got = attrs(method, path, query)
    assert got.resource_request
    assert (got.verb, got.api_group, got.resource, got.subresource, got.namespace, got.name) == expected


@pytest.mark.parametrize(("method", "path", "verb"), [
    ("GET", "/healthz", "get"), ("GET", "/api", "get"), ("GET", "/api/v1", "get"), ("GET", "/apis", "get"),
    ("GET", "/apis/apps", "get"), ("GET", "/apis/apps/v1", "get"), ("GET", "/openapi/v3", "get"),
    ("POST", "/metrics", "post"), ("GET", "/version", "get"),
])
def test_non_resource_request_attributes(method: str, path: str, verb: str) -> None:
    got = attrs(method, path)
    assert not got.resource_request
    assert (got.verb, got.path, got.resource) == (verb, path, "")


# ------------------------------------------------------------------ rule matching (RuleAllows)

GET_RB = attrs("GET", f"{RB}/web")
LIST_RB = attrs("GET", RB)
WATCH_RB = attrs("GET", RB, {"watch": "1"})
CREATE_RB = attrs("POST", RB)
UPDATE_RB_STATUS = attrs("PUT", f"{RB}/web/status")
GET_POD = attrs("GET", "/api/v1/namespaces/default/pods/p")
PATCH_SCALE = attrs("PATCH", f"{DEPLOY}/foo/scale")


@pytest.mark.parametrize(("request_attrs", "policy", "allowed"), [
    # verbs
    (GET_RB, rule(verbs=["get"], apiGroups=["work.karmada.io"], resources=["resourcebindings"]), True),
    (GET_RB, rule(verbs=["list", "watch"], apiGroups=["work.karmada.io"], resources=["resourcebindings"]), False),
    (GET_RB, rule(verbs=["*"], apiGroups=["work.karmada.io"], resources=["resourcebindings"]), True),
    (WATCH_RB, rule(verbs=["watch"], apiGroups=["work.karmada.io"], resources=["resourcebindings"]), True),
    # API groups: core is "", "*" is any
    (GET_RB, rule(verbs=["get"], apiGroups=[""], resources=["resourcebindings"]), False),
    (GET_RB, rule(verbs=["get"], apiGroups=["*"], resources=["resourcebindings"]), True),
    (GET_POD, rule(verbs=["get"], apiGroups=[""], resources=["pods"]), True),
    (GET_POD, rule(verbs=["get"], apiGroups=["apps"], resources=["pods"]), False),
    # resources and subresources
    (GET_RB, rule(verbs=["get"], apiGroups=["*"], resources=["*"]), True),
    (UPDATE_RB_STATUS, rule(verbs=["update"], apiGroups=["*"], resources=["resourcebindings"]), False),
    (UPDATE_RB_STATUS, rule(verbs=["update"], apiGroups=["*"], resources=["resourcebindings/status"]), True),
    (UPDATE_RB_STATUS, rule(verbs=["update"], apiGroups=["*"], resources=["*/status"]), True),
    (UPDATE_RB_STATUS, rule(verbs=["update"], apiGroups=["*"], resources=["*"]), True),
    (PATCH_SCALE, rule(verbs=["patch"], apiGroups=["apps"], resources=["*/status"]), False),
    (PATCH_SCALE, rule(verbs=["patch"], apiGroups=["apps"], resources=["deployments/scale"]), True),
    (GET_RB, rule(verbs=["get"], apiGroups=["*"], resources=["resourcebindings/status"]), False),
    # resourceNames: match get by name, never list/watch/create without a name
    (GET_RB, rule(verbs=["get", "list"], apiGroups=["*"], resources=["*"], resourceNames=["web"]), True),
    (GET_RB, rule(verbs=["get"], apiGroups=["*"], resources=["*"], resourceNames=["other"]), False),
    (LIST_RB, rule(verbs=["get", "list"], apiGroups=["*"], resources=["*"], resourceNames=["web"]), False),
    (WATCH_RB, rule(verbs=["watch"], apiGroups=["*"], resources=["*"], resourceNames=["web"]), False),
    (CREATE_RB, rule(verbs=["create"], apiGroups=["*"], resources=["*"], resourceNames=["web"]), False),
    (attrs("GET", RB, {"watch": "true", "fieldSelector": "metadata.name=web"}),
     rule(verbs=["watch"], apiGroups=["*"], resources=["*"], resourceNames=["web"]), True),
    # a resource rule never grants a path, a path rule never grants a resource
    (GET_RB, rule(verbs=["*"], nonResourceURLs=["*"]), False),
    (attrs("GET", "/healthz"), rule(verbs=["*"], apiGroups=["*"], resources=["*"]), False),
    # nonResourceURLs: exact, "*" and trailing-* prefixes
    (attrs("GET", "/healthz"), rule(verbs=["get"], nonResourceURLs=["/healthz"]), True),
    (attrs("GET", "/healthz/etcd"), rule(verbs=["get"], nonResourceURLs=["/healthz"]), False),
    (attrs("GET", "/healthz/etcd"), rule(verbs=["get"], nonResourceURLs=["/healthz/*"]), True),
    (attrs("GET", "/apis/apps/v1"), rule(verbs=["get"], nonResourceURLs=["/apis/*"]), True),
    (attrs("GET", "/apis"), rule(verbs=["get"], nonResourceURLs=["/apis/*"]), False),
    (attrs("GET", "/metrics"), rule(verbs=["get"], nonResourceURLs=["*"]), True),
    (attrs("POST", "/metrics"), rule(verbs=["get"], nonResourceURLs=["/metrics"]), False),
])
def test_rule_allows(request_attrs: RequestAttributes, policy: PolicyRule, allowed: bool) -> None:
    assert rule_allows(request_attrs, policy) is allowed


# ------------------------------------------------------------------ bindings

def policy(*objects: dict[str, Any]) -> PolicySnapshot:
    snapshot = PolicySnapshot()
    for obj in objects:
        if obj["kind"] in ("Role", "ClusterRole"):
            snapshot.add_role(obj["metadata"].get("namespace", ""), obj["metadata"]["name"], obj.get("rules", []))
    for obj in objects:
        if obj["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            snapshot.add_binding(obj)
    return snapshot


def role(kind: str, name: str, namespace: str = "", **rule_fields: Any) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "rules": [rule_fields]}


def binding(kind: str, name: str, role_kind: str, role_name: str, subjects: list[dict[str, str]], *,
            namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, "roleRef": {"kind": role_kind, "name": role_name,
                                                        "apiGroup": "rbac.authorization.k8s.io"},
            "subjects": subjects}


RB_READER = role("ClusterRole", "rb-reader", verbs=["get", "list", "watch"], apiGroups=["work.karmada.io"],
                 resources=["resourcebindings"])
USER_BOB = [{"kind": "User", "name": "bob"}]


def test_cluster_role_binding_grants_everywhere() -> None:
    snap = policy(RB_READER, binding("ClusterRoleBinding", "b", "ClusterRole", "rb-reader", USER_BOB))
    assert evaluate(snap, GET_RB)[0]
    assert evaluate(snap, attrs("GET", "/apis/work.karmada.io/v1alpha2/resourcebindings"))[0]
    assert not evaluate(snap, CREATE_RB)[0]


def test_role_binding_applies_only_in_its_namespace() -> None:
    snap = policy(role("Role", "r", "default", verbs=["get"], apiGroups=["*"], resources=["*"]),
                  binding("RoleBinding", "b", "Role", "r", USER_BOB, namespace="default"))
    assert evaluate(snap, GET_RB)[0]
    assert not evaluate(snap, attrs("GET", "/apis/work.karmada.io/v1alpha2/namespaces/other/resourcebindings/web"))[0]
    assert not evaluate(snap, attrs("GET", "/apis/work.karmada.io/v1alpha2/resourcebindings"))[0]  # all namespaces


def test_role_binding_to_cluster_role_is_scoped_to_the_binding_namespace() -> None:
    snap = policy(RB_READER, binding("RoleBinding", "b", "ClusterRole", "rb-reader", USER_BOB, namespace="default"))
    assert evaluate(snap, LIST_RB)[0]
    assert not evaluate(snap, attrs("GET", "/apis/work.karmada.io/v1alpha2/namespaces/other/resourcebindings"))[0]
    assert not evaluate(snap, attrs("GET", "/apis/work.karmada.io/v1alpha2/resourcebindings"))[0]


def test_a_role_of_another_namespace_is_not_found() -> None:
    snap = policy(role("Role", "r", "other", verbs=["*"], apiGroups=["*"], resources=["*"]),
                  binding("RoleBinding", "b", "Role", "r", USER_BOB, namespace="default"))
    assert evaluate(snap, GET_RB) == (False, 'RBAC: role.rbac.authorization.k8s.io "r" not found')


@pytest.mark.parametrize(("subject", "binding_namespace", "allowed"), [
    ({"kind": "ServiceAccount", "name": "karmada-controller-manager", "namespace": "karmada-system"}, "", True),
    ({"kind": "ServiceAccount", "name": "karmada-controller-manager", "namespace": "default"}, "", False),
    ({"kind": "ServiceAccount", "name": "karmada-controller-manager"}, "karmada-system", True),  # RoleBinding's ns
    ({"kind": "ServiceAccount", "name": "karmada-controller-manager"}, "", False),  # no namespace at all
    ({"kind": "User", "name": "system:serviceaccount:karmada-system:karmada-controller-manager"}, "", True),
    ({"kind": "Group", "name": "system:serviceaccounts"}, "", True),
    ({"kind": "Group", "name": "bob"}, "", False),
])
def test_service_account_and_group_subjects(subject: dict[str, str], binding_namespace: str, allowed: bool) -> None:
    kind = "RoleBinding" if binding_namespace else "ClusterRoleBinding"
    snap = policy(RB_READER, binding(kind, "b", "ClusterRole", "rb-reader", [subject], namespace=binding_namespace))
    request = attrs("GET", "/apis/work.karmada.io/v1alpha2/namespaces/karmada-system/resourcebindings", user=SA)
    assert evaluate(snap, request)[0] is allowed


def test_missing_roles_are_the_denial_reason() -> None:
    snap = policy(binding("ClusterRoleBinding", "a", "ClusterRole", "gone", USER_BOB),
                  binding("ClusterRoleBinding", "b", "ClusterRole", "gone", [{"kind": "Group", "name": "dev"}]),
                  binding("RoleBinding", "c", "Role", "nope", USER_BOB, namespace="default"))
    assert evaluate(snap, GET_RB) == (False, 'RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, '
                                             'role.rbac.authorization.k8s.io "nope" not found]')
    assert evaluate(policy(), GET_RB) == (False, "")


def test_bootstrap_policy_lets_authenticated_users_discover_only() -> None:
    snap = policy(*bootstrap_cluster_roles(), *bootstrap_cluster_role_bindings())
    for path in ("/api", "/api/v1", "/apis", "/apis/apps/v1", "/version", "/healthz", "/livez", "/readyz",
                 "/openapi/v3", "/openapi/v3/apis/apps/v1"):
        assert evaluate(snap, attrs("GET", path))[0], path
    assert not evaluate(snap, attrs("GET", "/metrics"))[0]
    assert not evaluate(snap, attrs("POST", "/api"))[0]
    assert not evaluate(snap, GET_RB)[0]
    anonymous = UserInfo("system:anonymous", "", ("system:unauthenticated",))
    assert evaluate(snap, attrs("GET", "/healthz", user=anonymous))[0]
    assert not evaluate(snap, attrs("GET", "/api", user=anonymous))[0]
    admin = UserInfo("root", "", ("system:masters",))
    assert evaluate(snap, attrs("DELETE", RB, user=admin))[0]  # via the cluster-admin binding too


# ------------------------------------------------------------------ forbidden messages (responsewriters)

@pytest.mark.parametrize(("request_attrs", "message", "details"), [
    (attrs("PUT", f"{RB}/web-deployment", user=SA),
     'resourcebindings.work.karmada.io "web-deployment" is forbidden: User "system:serviceaccount:karmada-system:'
     'karmada-controller-manager" cannot update resource "resourcebindings" in API group "work.karmada.io" in the '
     'namespace "default"', {"name": "web-deployment", "group": "work.karmada.io", "kind": "resourcebindings"}),
    (UPDATE_RB_STATUS, 'resourcebindings.work.karmada.io "web" is forbidden: User "bob" cannot update resource '
     '"resourcebindings/status" in API group "work.karmada.io" in the namespace "default"',
     {"name": "web", "group": "work.karmada.io", "kind": "resourcebindings"}),
    (attrs("GET", "/api/v1/pods"), 'pods is forbidden: User "bob" cannot list resource "pods" in API group "" at '
     "the cluster scope", {"kind": "pods"}),
    (attrs("GET", "/metrics"), 'forbidden: User "bob" cannot get path "/metrics"', {}),
])
def test_forbidden_status(request_attrs: RequestAttributes, message: str, details: dict[str, str]) -> None:
    status = forbidden(request_attrs, "").to_status()
    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
                      "reason": "Forbidden", "details": details, "code": 403}


def test_forbidden_message_is_sanitized_and_carries_the_reason() -> None:
    status = forbidden(attrs("GET", "/x<y>&"), 'RBAC: role.rbac.authorization.k8s.io "r" not found').to_status()
    assert status["message"] == ('forbidden: User "bob" cannot get path "/x&lt;y&gt;&amp;": '
                                 'RBAC: role.rbac.authorization.k8s.io "r" not found')


# ------------------------------------------------------------------ token file (tokenfile.go) and bearer header

def test_token_file_records() -> None:
    tokens = parse_token_csv('# admins\n\nt1,alice,1,"system:masters,ops"\nt2,bob,2\n,empty,3\nt3,carol,3,\n')
    assert tokens == {"t1": UserInfo("alice", "1", ("system:masters", "ops")), "t2": UserInfo("bob", "2", ()),
                      "t3": UserInfo("carol", "3", ())}


@pytest.mark.parametrize(("text", "fragment"), [
    ("t1,alice,1\nt2,bob\n", "line 2: must have at least 3 columns (token, user name, user uid), found 2"),
    ('t1,"alice,1\n', "line 1"),
])
def test_malformed_token_file_names_the_line(text: str, fragment: str) -> None:
    with pytest.raises(TokenFileError) as info:
        parse_token_csv(text, "/etc/tokens.csv")
    assert "/etc/tokens.csv" in str(info.value)
    assert fragment in str(info.value)


@pytest.mark.parametrize(("header", "token"), [
    ("Bearer abc", "abc"), ("bearer abc", "abc"), ("  Bearer abc  ", "abc"), ("Bearer abc extra", "abc"),
    ("Basic abc", ""), ("Bearer", ""), ("Bearer  abc", ""), ("", ""), (None, ""),
])
def test_bearer_header(header: str | None, token: str) -> None:
    assert bearer_token(header) == token


def test_authenticated_users_get_system_authenticated() -> None:
    authenticator = TokenAuthenticator([{"t1": UserInfo("alice", "1", ("ops",))}])
    assert authenticator.authenticate("Bearer t1") == UserInfo("alice", "1", ("ops", ALL_AUTHENTICATED))
    assert authenticator.authenticate("Bearer nope") is None
    assert authenticator.authenticate(None) is None
