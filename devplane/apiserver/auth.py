"""The authentication and authorization filters in front of every request, as kube-apiserver's.

:class:`RequestGuard` runs before routing (so an unknown path is 401/403 before it is 404):
it authenticates the bearer token (401 with kube's exact ``Unauthorized`` Status when that is on
and fails), derives kube's request attributes (k8s.io/apiserver endpoints/request/requestinfo.go),
and asks the authorizer (403 with kube's exact ``Forbidden`` Status on denial). Watches are
thereby authorized before any event is streamed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from . import errors
from .authn import ANONYMOUS_USER, TokenAuthenticator, UserInfo
from .errors import StatusError, qualified_resource
from .params import truthy
from .rbac import RBACAuthorizer, RequestAttributes

log = structlog.get_logger(__name__)

AUTHORIZATION_MODES = ("AlwaysAllow", "RBAC")
_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                 "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True, slots=True)
class AuthorizationDecision:
    """One authorization the server made: who asked what, and the answer.

    For a resource request ``api_group``/``resource``/``subresource``/``namespace``/``name`` are set
    (``api_group`` is "" for the core group); for a non-resource request ``resource`` is "" and
    ``path`` is the URL path. ``verb`` is kube's (get, list, watch, create, update, patch, delete,
    deletecollection; lower-case HTTP methods for non-resource paths).
    """

    user: str
    groups: tuple[str, ...]
    verb: str
    api_group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    path: str
    allowed: bool


def validate_authorization_mode(mode: str) -> str:
    """``mode`` when it is one of :data:`AUTHORIZATION_MODES`, else ValueError with the message the CLI shows."""
    if mode not in AUTHORIZATION_MODES:
        raise ValueError(f'authorization mode "{mode}" is not supported '
                         f"(supported: {', '.join(AUTHORIZATION_MODES)})")
    return mode


def _sanitize(text: str) -> str:
    """responsewriters' sanitizer: no text that looks like HTML."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def forbidden_message(attrs: RequestAttributes) -> str:
    """responsewriters.forbiddenMessage."""
    if not attrs.resource_request:
        return f'User "{attrs.user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    scope = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return (f'User "{attrs.user}" cannot {attrs.verb} resource "{resource}" in API group '
            f'"{attrs.api_group}" {scope}')


def forbidden(attrs: RequestAttributes, reason: str) -> StatusError:
    """responsewriters.Forbidden → apierrors.NewForbidden(group/resource, name, message[: reason])."""
    text = _sanitize(forbidden_message(attrs))
    if reason:
        text = f"{text}: {reason}"
    if not attrs.resource:
        message = f"forbidden: {text}"
    else:
        qualified = qualified_resource(attrs.resource, attrs.api_group)
        message = f'{qualified} "{attrs.name}" is forbidden: {text}' if attrs.name else \
            f"{qualified} is forbidden: {text}"
    details: dict[str, Any] = {}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.api_group:
        details["group"] = attrs.api_group
    if attrs.resource:
        details["kind"] = attrs.resource
    return errors.forbidden(message, details)


def _valid_path_segment(name: str) -> bool:
    return name not in (".", "..") and "/" not in name and "%" not in name


def _name_from_field_selector(selector: str) -> str:
    """``metadata.name=X`` (or ``==``) of a field selector: kube's RequiresExactMatch."""
    for term in selector.split(","):
        for operator in ("==", "="):
            key, sep, value = term.partition(operator)
            if sep and not key.endswith("!") and key.strip() == "metadata.name":
                return value.strip() if _valid_path_segment(value.strip()) else ""
    return ""


def request_attributes(user: UserInfo, method: str, path: str, query: Mapping[str, str]) -> RequestAttributes:
    """kube's RequestInfoFactory.NewRequestInfo for the ``api`` and ``apis`` prefixes."""
    parts = [p for p in path.split("/") if p]
    plain = RequestAttributes(user.name, user.groups, method.lower(), False, path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return plain
    rest, group = parts[1:], ""
    if parts[0] == "apis":
        if len(rest) < 3:
            return plain
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    if rest[0] == "watch" and len(rest) >= 2:
        verb, rest = "watch", rest[1:]
    else:
        verb = _METHOD_VERBS.get(method, "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    if not name and verb == "get":
        verb = "watch" if truthy(query.get("watch")) else "list"
        name = _name_from_field_selector(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestAttributes(user.name, user.groups, verb, True, path=path, api_group=group,
                             api_version=version, resource=resource, subresource=subresource,
                             namespace=namespace, name=name)


class RequestGuard:
    """Authentication (optional) + authorization (AlwaysAllow or RBAC) + the decision recorder."""

    def __init__(self, authenticator: TokenAuthenticator | None, authorizer: RBACAuthorizer | None, *,
                 record: bool = False) -> None:
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.record = record
        self.decisions: list[AuthorizationDecision] = []

    def check(self, method: str, path: str, headers: Mapping[str, str], query: Mapping[str, str]) -> None:
        """Raise the 401/403 Status kube would answer; return when the request may proceed."""
        user = ANONYMOUS_USER
        if self.authenticator is not None:
            found = self.authenticator.authenticate(headers.get("Authorization"))
            if found is None:
                log.debug("unauthorized", method=method, path=path)
                raise errors.unauthorized()
            user = found
        if self.authorizer is None and not self.record:
            return
        attrs = request_attributes(user, method, path, query)
        allowed, reason = self.authorizer.authorize(attrs) if self.authorizer is not None else (True, "")
        if self.record:
            self.decisions.append(AuthorizationDecision(
                attrs.user, attrs.groups, attrs.verb, attrs.api_group, attrs.resource, attrs.subresource,
                attrs.namespace, attrs.name, attrs.path, allowed))
        if not allowed:
            log.debug("forbidden", user=attrs.user, verb=attrs.verb, resource=attrs.resource,
                      namespace=attrs.namespace, path=path, reason=reason)
            raise forbidden(attrs, reason)
