"""API errors as kube-apiserver reports them: a ``Status`` body with reason, code and details.

Every failure the dev API server answers goes through :class:`StatusError`, so that the
reason/code/message triple is built in one place and matches what a real kube-apiserver
says (its errors come from k8s.io/apimachinery ``pkg/api/errors/errors.go``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kube_api.validation import aggregate_messages, go_quote


@dataclass(frozen=True)
class Cause:
    """One entry of ``details.causes``: a field-level problem (reason e.g. ``FieldValueInvalid``)."""

    reason: str
    message: str
    field: str

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}

    # kube's field.Invalid, field.Required, field.Duplicate, field.NotFound, field.Forbidden and field.NotSupported,
    # the value already printed as Go prints it

    @classmethod
    def invalid(cls, field: str, shown: str, detail: str) -> Cause:
        return cls("FieldValueInvalid", f"Invalid value: {shown}: {detail}", field)

    @classmethod
    def required(cls, field: str, detail: str = "") -> Cause:
        return cls("FieldValueRequired", f"Required value: {detail}" if detail else "Required value", field)

    @classmethod
    def duplicate(cls, field: str, shown: str) -> Cause:
        return cls("FieldValueDuplicate", f"Duplicate value: {shown}", field)

    @classmethod
    def not_found(cls, field: str, shown: str) -> Cause:
        return cls("FieldValueNotFound", f"Not found: {shown}", field)

    @classmethod
    def forbidden(cls, field: str, detail: str) -> Cause:
        return cls("FieldValueForbidden", f"Forbidden: {detail}", field)

    @classmethod
    def not_supported(cls, field: str, shown: str, supported: tuple[str, ...]) -> Cause:
        quoted = ", ".join(go_quote(value) for value in supported)
        return cls("FieldValueNotSupported", f"Unsupported value: {shown}: supported values: {quoted}", field)


@dataclass
class StatusError(Exception):
    """An error the server answers as a ``Status`` object (or, for a few paths, plain text)."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    plain_text: bool = False  # kube answers some 404s as text/plain "404 page not found"
    extra: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def to_status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        body.update(self.extra)
        return body


def qualified_resource(resource: str, group: str) -> str:
    """``deployments.apps``, ``configmaps`` (core group has no suffix)."""
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str, **more: Any) -> dict[str, Any]:
    """kube's ``StatusDetails``: ``name``, ``group`` and ``kind`` are ``omitempty``."""
    details: dict[str, Any] = {key: value for key, value in (("name", name), ("group", group), ("kind", kind)) if value}
    details.update(more)
    return details


def not_found(resource: str, group: str, name: str) -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'{qualified_resource(resource, group)} "{name}" not found',
        _details(name, group, resource),
    )


def already_exists(resource: str, group: str, name: str) -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{qualified_resource(resource, group)} "{name}" already exists',
        _details(name, group, resource),
    )


def conflict(resource: str, group: str, name: str, why: str | None = None) -> StatusError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified_resource(resource, group)} "{name}": {why}',
        _details(name, group, resource),
    )


def precondition_conflict(kind: str, group: str, name: str, why: str) -> StatusError:
    """Delete-precondition failures name the *Kind* (``ResourceBinding.work.karmada.io``)."""
    qualified = f"{kind}.{group}" if group else kind
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified} "{name}": {why}',
        _details(name, group, kind),
    )


def invalid(kind: str, group: str, name: str, causes: list[Cause]) -> StatusError:
    """422 Invalid with kube's message: ``Kind.group "name" is invalid: a, b``."""
    qualified = f"{kind}.{group}" if group else kind
    parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    joined = aggregate_messages(parts)  # kube's ToAggregate: a message repeated is shown once, its causes kept
    return StatusError(
        422,
        "Invalid",
        f'{qualified} "{name}" is invalid: {joined}',
        _details(name, group, kind, causes=[c.to_dict() for c in causes]),
    )


def plain_error(message: str) -> StatusError:
    """kube's answer to an error that is not an API status (a Go ``error`` from storage or parsing): 500, no reason,
    no details. Some are the client's fault all the same (a resourceVersion set on a create, one that is not a
    number); kube answers them so, and so does this server."""
    return StatusError(500, "", message)


def options_invalid(kind: str, cause: Cause) -> StatusError:
    """A query parameter refused by kube's validation of the verb's options (``CreateOptions``, ``ListOptions``...):
    ``422 Invalid`` on ``<Kind>.meta.k8s.io ""``."""
    return invalid(kind, "meta.k8s.io", "", [cause])


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def patch_rejected() -> StatusError:
    """kube's answer to a patch that is well formed but does not apply (observed: details ``{}``)."""
    return StatusError(422, "Invalid", "the server rejected our request due to an error in our request", {})


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> StatusError:
    return StatusError(405, "MethodNotAllowed", message, {})


def unsupported_media_type(accepted: str) -> StatusError:
    return StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: {accepted}",
    )


def page_not_found() -> StatusError:
    return StatusError(404, "NotFound", "404 page not found", plain_text=True)


def resource_not_found() -> StatusError:
    return StatusError(404, "NotFound", "the server could not find the requested resource", {})


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def unauthorized() -> StatusError:
    """kube's answer to a missing or unknown token (no details)."""
    return StatusError(401, "Unauthorized", "Unauthorized")


def forbidden(message: str, details: dict[str, Any] | None = None) -> StatusError:
    return StatusError(403, "Forbidden", message, details)


def too_large() -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")


def internal(message: str) -> StatusError:
    return StatusError(500, "InternalError", message)


def internal_error(cause: str) -> StatusError:
    """kube's ``NewInternalError``: 500, ``Internal error occurred: <cause>``, the cause in ``details``."""
    return StatusError(500, "InternalError", f"Internal error occurred: {cause}", {"causes": [{"message": cause}]})

