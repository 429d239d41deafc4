"""authorization.k8s.io reviews: answered by the authorizer the server runs, validated as kube does."""

from __future__ import annotations

from typing import Any

import pytest

from devplane.apiserver.access_review import answer, rules_for
from devplane.apiserver.authn import ALL_AUTHENTICATED, UserInfo
from devplane.apiserver.errors import StatusError
from devplane.apiserver.rbac import (
    RBAC_GROUP,
    PolicySnapshot,
    RBACAuthorizer,
    bootstrap_cluster_role_bindings,
    bootstrap_cluster_roles,
)

ALICE = UserInfo("alice", "1001", (ALL_AUTHENTICATED,))


class FixedPolicy(RBACAuthorizer):
    """The RBAC authorizer over a fixed policy instead of a store."""

    def __init__(self, snapshot: PolicySnapshot) -> None:  # no store: the policy is given
        self._fixed = snapshot

    def snapshot(self) -> PolicySnapshot:
        return self._fixed


def binding(name: str, namespace: str, role_ref: tuple[str, str], user: str) -> dict[str, Any]:
    """A RoleBinding (a ClusterRoleBinding when ``namespace`` is "") of ``role_ref`` (kind, name) to ``user``."""
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    kind = "RoleBinding" if namespace else "ClusterRoleBinding"
    ref = {"apiGroup": RBAC_GROUP, "kind": role_ref[0], "name": role_ref[1]}
    return {"kind": kind, "metadata": meta, "roleRef": ref,
            "subjects": [{"apiGroup": RBAC_GROUP, "kind": "User", "name": user}]}


@pytest.fixture
def rbac() -> FixedPolicy:
    snapshot = PolicySnapshot()
    for role in bootstrap_cluster_roles():
        snapshot.add_role("", role["metadata"]["name"], role["rules"])
    for crb in bootstrap_cluster_role_bindings():
        snapshot.add_binding(crb)
    snapshot.add_role("default", "dev", [{"verbs": ["get", "create"], "apiGroups": ["apps"],
                                          "resources": ["deployments"], "resourceNames": ["web"]}])
    snapshot.add_binding(binding("dev", "default", ("Role", "dev"), "alice"))
    snapshot.add_binding(binding("ghost", "", ("ClusterRole", "missing"), "alice"))
    return FixedPolicy(snapshot)


def ssar(**resource: str) -> dict[str, Any]:
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": resource}}


def test_always_allow_allows_everything() -> None:
    out = answer("SelfSubjectAccessReview", ssar(verb="delete", group="apps", resource="deployments"), ALICE, None)
    assert out["status"] == {"allowed": True}
    assert out["kind"] == "SelfSubjectAccessReview" and out["apiVersion"] == "authorization.k8s.io/v1"
    assert out["spec"] == {"resourceAttributes": {"verb": "delete", "group": "apps", "resource": "deployments"}}


def test_always_allow_rules_are_kubes_wildcards() -> None:
    out = answer("SelfSubjectRulesReview", {"spec": {"namespace": "default"}}, ALICE, None)
    assert out["status"] == {
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        "incomplete": False,
    }


def test_rbac_answers_as_the_authorizer(rbac: FixedPolicy) -> None:
    allowed = answer("SelfSubjectAccessReview", ssar(namespace="default", verb="create", group="apps",
                                                     resource="deployments", name="web"), ALICE, rbac)
    assert allowed["status"] == {"allowed": True, "reason": 'RBAC: allowed by RoleBinding "dev" of Role "dev"'}
    other_name = answer("SelfSubjectAccessReview", ssar(namespace="default", verb="create", group="apps",
                                                        resource="deployments", name="api"), ALICE, rbac)
    assert other_name["status"]["allowed"] is False
    assert other_name["status"]["reason"] == 'RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found'
    path = answer("SelfSubjectAccessReview", {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/healthz"}}},
                  ALICE, rbac)
    assert path["status"]["allowed"] is True


def test_subject_access_review_asks_for_the_subject(rbac: FixedPolicy) -> None:
    review = {"spec": {"user": "alice", "resourceAttributes": {"namespace": "default", "verb": "get",
                                                               "group": "apps", "resource": "deployments",
                                                               "name": "web"}}}
    assert answer("SubjectAccessReview", review, UserInfo("admin"), rbac)["status"]["allowed"] is True
    review["spec"]["user"] = "bob"
    assert answer("SubjectAccessReview", review, ALICE, rbac)["status"] == {"allowed": False}


def test_rules_are_the_bindings_rules_with_missing_roles_reported(rbac: FixedPolicy) -> None:
    status = rules_for(rbac, ALICE, "default")
    assert {"verbs": ["get", "create"], "apiGroups": ["apps"], "resources": ["deployments"],
            "resourceNames": ["web"]} in status["resourceRules"]
    assert {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]} in status["resourceRules"]
    assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]} \
        in status["nonResourceRules"]
    assert status["evaluationError"] == 'clusterrole.rbac.authorization.k8s.io "missing" not found'
    assert status["incomplete"] is False
    elsewhere = rules_for(rbac, ALICE, "kube-system")
    assert not any("deployments" in r["resources"] for r in elsewhere["resourceRules"])


@pytest.mark.parametrize(("kind", "spec", "message"), [
    ("SelfSubjectAccessReview", {}, 'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: '
     'spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes '
     "must be specified"),
    ("SelfSubjectAccessReview", {"resourceAttributes": {}, "nonResourceAttributes": {}},
     'SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: '
     '"object": cannot be specified in combination with resourceAttributes'),
    ("SubjectAccessReview", {"resourceAttributes": {"verb": "get"}},
     'SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user '
     "or group must be specified"),
])
def test_invalid_reviews_are_422(kind: str, spec: dict[str, Any], message: str) -> None:
    with pytest.raises(StatusError) as caught:
        answer(kind, {"spec": spec}, ALICE, None)
    assert caught.value.code == 422
    assert caught.value.message == message
