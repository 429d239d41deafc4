"""authorization.k8s.io/v1 reviews: "may I?" answered by the server's own authorizer.

``kubectl auth can-i VERB RESOURCE`` creates a SelfSubjectAccessReview and ``--list`` a
SelfSubjectRulesReview; SubjectAccessReview asks the same for another user. Like kube's, they
are answered, never stored, and the answer is the authorizer the server runs: everything under
AlwaysAllow (kube's ``*`` rules for ``--list``), and under RBAC exactly what
:class:`~.rbac.RBACAuthorizer` decides for the request's user (or the review's subject), with
the rules the user's bindings grant in the namespace asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller_manager import objects
from kube_api.validation import aggregate_messages

from . import errors
from .auth import RequestGuard
from .authn import ANONYMOUS_USER, UserInfo
from .errors import Cause
from .rbac import PolicyRule, RBACAuthorizer, RequestAttributes

GROUP = "authorization.k8s.io"  # its create-only types are in resources.BUILTIN_TYPES

# kube's alwaysAllowAuthorizer.RulesFor: every verb on every resource and every path.
_ALLOW_ALL_RULES: dict[str, Any] = {
    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    "incomplete": False,
}


def requesting_user(guard: RequestGuard | None, headers: Mapping[str, str]) -> UserInfo:
    """Who asks: the bearer token's user (the guard has already refused unknown tokens), else anonymous."""
    if guard is None or guard.authenticator is None:
        return ANONYMOUS_USER
    return guard.authenticator.authenticate(headers.get("Authorization")) or ANONYMOUS_USER


def _attributes(kind: str, spec: dict[str, Any], user: UserInfo) -> RequestAttributes:
    """kube's ResourceAttributesFrom/NonResourceAttributesFrom, after its spec validation."""
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    causes: list[Cause] = []
    if resource is not None and non_resource is not None:
        causes.append(Cause("FieldValueInvalid", "Invalid value: \"object\": cannot be specified in combination "
                            "with resourceAttributes", "spec.nonResourceAttributes"))
    if resource is None and non_resource is None:
        causes.append(Cause("FieldValueInvalid", "Invalid value: \"null\": exactly one of nonResourceAttributes "
                            "or resourceAttributes must be specified", "spec.resourceAttributes"))
    if kind == "SubjectAccessReview" and not user.name and not user.groups:
        causes.append(Cause("FieldValueInvalid", 'Invalid value: "": at least one of user or group must be '
                            "specified", "spec.user"))
    if causes:
        raise errors.invalid(kind, GROUP, "", causes)
    if isinstance(resource, dict):
        return RequestAttributes(
            user.name, user.groups, str(resource.get("verb") or ""), True,
            api_group=str(resource.get("group") or ""), api_version=str(resource.get("version") or ""),
            resource=str(resource.get("resource") or ""), subresource=str(resource.get("subresource") or ""),
            namespace=str(resource.get("namespace") or ""), name=str(resource.get("name") or ""))
    attrs = non_resource if isinstance(non_resource, dict) else {}
    return RequestAttributes(user.name, user.groups, str(attrs.get("verb") or ""), False,
                             path=str(attrs.get("path") or ""))


def _subject(spec: dict[str, Any]) -> UserInfo:
    """A SubjectAccessReview's subject, as given (kube adds no group to it)."""
    groups = spec.get("groups") or []
    return UserInfo(str(spec.get("user") or ""), str(spec.get("uid") or ""),
                    tuple(str(g) for g in groups) if isinstance(groups, list) else ())


def _rule_dict(rule: PolicyRule) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """kube's RBAC RulesFor: a rule with resources is a resource rule, with URLs a non-resource rule."""
    resource = non_resource = None
    if rule.resources:
        resource = {"verbs": list(rule.verbs), "apiGroups": list(rule.api_groups), "resources": list(rule.resources)}
        if rule.resource_names:
            resource["resourceNames"] = list(rule.resource_names)
    if rule.non_resource_urls:
        non_resource = {"verbs": list(rule.verbs), "nonResourceURLs": list(rule.non_resource_urls)}
    return resource, non_resource


def rules_for(authorizer: RBACAuthorizer, user: UserInfo, namespace: str) -> dict[str, Any]:
    """A SubjectRulesReviewStatus: the rules of the user's ClusterRoleBindings, then of its RoleBindings
    in ``namespace``; roles that cannot be found are reported in ``evaluationError``."""
    snapshot = authorizer.snapshot()
    resource_rules: list[dict[str, Any]] = []
    non_resource_rules: list[dict[str, Any]] = []
    missing: list[str] = []
    for scope in ("", namespace) if namespace else ("",):
        for binding in snapshot.applicable(scope, user.name, user.groups):
            rules, error = snapshot.rules_of(binding)
            if error:
                missing.append(error)
            for rule in rules:
                resource, non_resource = _rule_dict(rule)
                if resource is not None:
                    resource_rules.append(resource)
                if non_resource is not None:
                    non_resource_rules.append(non_resource)
    status: dict[str, Any] = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                              "incomplete": False}
    if missing:
        status["evaluationError"] = aggregate_messages(missing)
    return status


def answer(kind: str, review: dict[str, Any], user: UserInfo, authorizer: RBACAuthorizer | None) -> dict[str, Any]:
    """The review with its ``status`` filled in; ``authorizer`` None is AlwaysAllow."""
    spec = review.get("spec") if isinstance(review.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    out: dict[str, Any] = {"kind": kind, "apiVersion": f"{GROUP}/v1", "metadata": objects.metadata(review),
                           "spec": spec}
    if kind == "SelfSubjectRulesReview":
        namespace = str(spec.get("namespace") or "")
        out["status"] = dict(_ALLOW_ALL_RULES) if authorizer is None else rules_for(authorizer, user, namespace)
        return out
    subject = _subject(spec) if kind == "SubjectAccessReview" else user
    attrs = _attributes(kind, spec, subject)
    allowed, reason = (True, "") if authorizer is None else authorizer.authorize(attrs)
    status: dict[str, Any] = {"allowed": allowed}
    if reason:
        status["reason"] = reason
    out["status"] = status
    return out

