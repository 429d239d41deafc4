"""The query parameters the verbs share, parsed and refused the way kube-apiserver does.

``dryRun``, ``fieldValidation``, boolean and integer parameters, and the label and field
selectors of list, watch and deletecollection (with the test a stored object passes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from controller_manager import objects
from kube_api.selectors import LabelSelector
from kube_api.validation import go_quote, parse_uint64

from . import errors
from .resources import ResourceType
from .selectors import FieldSelector, field_values
from .store import FieldChecks
from .watch import Stored


def truthy(value: str | None) -> bool:
    """A boolean query parameter as kube's converter reads it (``Convert_Slice_string_To_bool``): absent, ``0``
    or ``false`` (any case) is false; anything else, an empty value included, is true (``?watch=`` watches)."""
    return value is not None and value != "0" and value.lower() != "false"


def int_param(text: str | None) -> int:
    """An integer query parameter (``limit``, ``timeoutSeconds``); kube's converter names only the parse error."""
    if text in (None, ""):
        return 0
    assert text is not None
    try:
        return int(text)
    except ValueError as exc:
        raise errors.bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax') from exc


def resource_version_param(text: str | None) -> int:
    """The ``resourceVersion`` of a get, list or watch (0 when absent or "0"); one that is not a number is a 500 in
    kube (storage parses it)."""
    if not text:
        return 0
    version = parse_uint64(text)
    if version is None:
        raise errors.plain_error(f'resourceVersion: Invalid value: "{text}": strconv.ParseUint: parsing '
                                 f'"{text}": invalid syntax')
    return version


OPTIONS_KINDS = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions", "DELETE": "DeleteOptions"}


def dry_run(request: web.Request) -> bool:
    """``dryRun=All``; any other value is refused, as kube validates the verb's options (nothing is done)."""
    return dry_run_values(request.query.getall("dryRun", []), OPTIONS_KINDS.get(request.method, "CreateOptions"))


def dry_run_values(values: list[Any], options_kind: str) -> bool:
    """Whether ``values`` (a query's or a DeleteOptions body's ``dryRun``) ask for a dry run; 422 unless each is
    ``All``."""
    if any(value != "All" for value in values):
        shown = "[]string{" + ", ".join(go_quote(str(value)) for value in values) + "}"
        raise errors.options_invalid(options_kind, errors.Cause(
            "FieldValueNotSupported", f'Unsupported value: {shown}: supported values: "All"', "dryRun"))
    return bool(values)


def check_list_options(query: Mapping[str, str], *, watch: bool) -> None:
    """kube's ``ValidateListOptions`` on ``resourceVersionMatch`` (1.20, observed): every cause, in its order."""
    match = query.get("resourceVersionMatch", "")
    if not match:
        return
    version = query.get("resourceVersion", "")
    forbidden = [why for why, applies in (
        ("resourceVersionMatch is forbidden for watch", watch),
        ("resourceVersionMatch is forbidden unless resourceVersion is provided", not version),
        ("resourceVersionMatch is forbidden when continue is provided", bool(query.get("continue")))) if applies]
    causes = [errors.Cause.forbidden("resourceVersionMatch", why) for why in forbidden]
    if match not in ("Exact", "NotOlderThan"):
        causes.append(errors.Cause("FieldValueNotSupported", f'Unsupported value: {go_quote(match)}: supported '
                                                             'values: "Exact", "NotOlderThan", ""',
                                   "resourceVersionMatch"))
    if match == "Exact" and version == "0":
        causes.append(errors.Cause.forbidden("resourceVersionMatch",
                                             'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    if causes:
        raise errors.invalid("ListOptions", "meta.k8s.io", "", causes)


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
