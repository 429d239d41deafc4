"""The query parameters the verbs share, parsed and refused the way kube-apiserver does.

``dryRun``, ``fieldValidation``, boolean and integer parameters, and the label and field
selectors of list, watch and deletecollection (with the test a stored object passes).
"""

from __future__ import annotations

from aiohttp import web

from controller_manager import objects
from kube_api.selectors import LabelSelector

from . import errors
from .resources import ResourceType
from .selectors import FieldSelector, field_values
from .store import FieldChecks
from .watch import Stored


def truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def int_param(text: str | None, name: str) -> int:
    if text in (None, ""):
        return 0
    assert text is not None
    try:
        return int(text)
    except ValueError as exc:
        raise errors.bad_request(f'invalid {name}: strconv.ParseInt: parsing "{text}": invalid syntax') from exc


def dry_run(request: web.Request) -> bool:
    return request.query.get("dryRun") == "All"


def field_checks(request: web.Request) -> FieldChecks:
    mode = request.query.get("fieldValidation", "Warn")
    if mode not in ("Strict", "Warn", "Ignore"):
        raise errors.bad_request(f"fieldValidation: Unsupported value: \"{mode}\": supported values: "
                                 f'"Ignore", "Strict", "Warn"')
    return FieldChecks(mode)


def query_selectors(request: web.Request, rtype: ResourceType) -> tuple[LabelSelector, FieldSelector]:
    """``labelSelector`` and ``fieldSelector``, parsed (a 400 when malformed or on an unsupported field)."""
    try:
        labels = LabelSelector.parse(request.query.get("labelSelector", ""))
    except ValueError as exc:
        raise errors.bad_request(str(exc)) from None
    fields = FieldSelector.parse(request.query.get("fieldSelector", ""), rtype.field_selectors,
                                 builtin=rtype.builtin)
    return labels, fields


def matches(stored: Stored, labels: LabelSelector, fields: FieldSelector) -> bool:
    """Whether a stored object passes both selectors."""
    if not labels.empty() and not labels.matches(objects.labels(stored.obj)):
        return False
    return fields.empty() or fields.matches(field_values(stored.obj, fields.keys))
