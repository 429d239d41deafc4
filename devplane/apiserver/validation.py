"""Object metadata validation that answers with kube-apiserver's exact wording.

Clients (kubectl, client-go, the Karmada controllers' tests) match on these messages, so the
quirks below are copied from ``pkg/api/validation/objectmeta.go`` rather than paraphrased; the
name and label rules with their messages (``k8s.io/apimachinery/pkg/util/validation``), and how a
bad value is printed (``invalid_message``, ``go_quote``), are the product's own,
:mod:`kube_api.validation`. Every function returns the messages *without* a field prefix; callers
attach ``Cause.field`` and the server formats ``field: message``.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable, Mapping
from typing import Any, Final

from controller_manager import objects
from controller_manager.objects import is_valid_path_segment_name
from devplane.apiserver import errors
from devplane.apiserver.errors import Cause
from devplane.apiserver.resources import ResourceType
from kube_api.validation import (
    DNS1123_LABEL_FMT,
    DNS1123_SUBDOMAIN_FMT,
    LABEL_VALUE_FMT,
    QUALIFIED_NAME_FMT,
    byte_len,
    go_quote,
    invalid_message,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    is_valid_port_num,
)

__all__ = [
    "DNS1123_LABEL_FMT",
    "DNS1123_SUBDOMAIN_FMT",
    "LABEL_VALUE_FMT",
    "NAME_RULES",
    "QUALIFIED_NAME_FMT",
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "SpecCheck",
    "bad_operator",
    "entries",
    "generate_name",
    "generate_name_suffix",
    "go_quote",
    "invalid_message",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "is_valid_path_segment_name",
    "label_selector_causes",
    "requirement_causes",
    "spec_check_mutator",
    "validate_annotations",
    "validate_labels",
    "validate_name",
    "validate_object_meta",
]

TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * 1024

# util/rand alphabet: no vowels (no accidental words) and no confusable 0/1/3.
_SUFFIX_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_SUFFIX_LENGTH: Final = 5
_MAX_GENERATED_BASE: Final = 63 - _SUFFIX_LENGTH

NAME_RULES: Final = ("subdomain", "label", "path-segment")


def child(parent: Any, key: str) -> Mapping[str, Any]:
    """``parent[key]`` when both are objects, else empty: Go's zero value of a struct field."""
    value = parent.get(key) if isinstance(parent, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def go_int(value: Any) -> int:
    """An integer field as Go decodes it: a JSON number, else 0 (a wrong type was the decoder's to refuse)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def entries(parent: Mapping[str, Any], key: str) -> list[tuple[int, Mapping[str, Any]]]:
    """The objects of a list field, with their index (anything else in it is the decoder's to refuse)."""
    value = parent.get(key)
    return [(i, entry) for i, entry in enumerate(value) if isinstance(entry, Mapping)] if isinstance(value, list) \
        else []


def go_strings(values: Any) -> str:
    """``%#v`` of a ``[]string``."""
    if not isinstance(values, list):
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(str(v)) for v in values) + "}"


def parse_go_ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """Go's ``net.ParseIP`` as kube 1.20 applies it: no zone, no prefix, no spaces, no leading zeros (``010.1.1.1``
    is refused, seen on the refplane); an IPv4-mapped IPv6 address is the IPv4 one."""
    if "%" in text:
        return None
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return mapped or ip


def port_num_causes(field: str, port: int) -> list[Cause]:
    """``IsValidPortNum`` as causes on ``field``."""
    return [Cause.invalid(field, str(port), msg) for msg in is_valid_port_num(port)]


def _invalid(field: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", invalid_message(value, detail), field)


# --- util/validation (the rules themselves are kube_api.validation's) ---------------------------


def _mask_trailing_dash(name: str) -> str:
    """objectmeta.go's maskTrailingDash, quirk included: it drops *two* chars and appends ``a``.

    A generateName prefix may end in ``-`` because a suffix follows; reproducing the exact
    slice keeps which prefixes validate identical to kube.
    """
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def validate_name(name: str, rule: str, *, prefix: bool = False) -> list[str]:
    """Messages for ``name`` under ``rule`` ("subdomain" | "label" | "path-segment"); [] if valid.

    ``prefix=True`` validates a ``generateName`` (a trailing dash is allowed).
    """
    if rule == "subdomain":
        return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)
    if rule == "label":
        return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)
    if rule == "path-segment":
        return is_valid_path_segment_name(name, prefix=prefix)
    raise ValueError(f"unknown name rule {rule!r}; expected one of {', '.join(NAME_RULES)}")


# --- object meta -----------------------------------------------------------------------------

_NOT_STRING_MAP: Final = "must be a map of string keys to string values"
# field.TooLong's wording before kube 1.32 ("may not be more than ..." since).
_ANNOTATIONS_TOO_LONG: Final = f"Too long: must have at most {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"


def _string_map(value: Any, field: str) -> tuple[Mapping[str, str] | None, list[Cause]]:
    """Check the decoded JSON really is ``map[string]string`` (Go would refuse to decode it)."""
    if value is None:
        return {}, []
    if not isinstance(value, Mapping):
        return None, [_invalid(field, value, _NOT_STRING_MAP)]
    causes = [
        _invalid(field, v, f"value of {go_quote(str(k))} must be a string")
        for k, v in value.items()
        if not isinstance(v, str)
    ]
    causes.extend(_invalid(field, k, "keys must be strings") for k in value if not isinstance(k, str))
    return (None, causes) if causes else (value, [])


def validate_labels(labels: Any, field: str = "metadata.labels") -> list[Cause]:
    """metav1 ValidateLabels: qualified-name keys and label values, all reported on ``field``."""
    checked, causes = _string_map(labels, field)
    if checked is None:
        return causes
    for key, value in checked.items():
        causes.extend(_invalid(field, key, msg) for msg in is_qualified_name(key))
        causes.extend(_invalid(field, value, msg) for msg in is_valid_label_value(value))
    return causes


def label_selector_causes(selector: Mapping[str, Any], field: str) -> list[Cause]:
    """``ValidateLabelSelector``: its labels, and each expression's key, operator and values."""
    causes = validate_labels(selector.get("matchLabels"), f"{field}.matchLabels")
    for i, expression in enumerate(selector.get("matchExpressions") or []):
        if isinstance(expression, Mapping):
            causes.extend(requirement_causes(expression, f"{field}.matchExpressions[{i}]"))
    return causes


def requirement_causes(requirement: Mapping[str, Any], field: str, *, numeric: bool = False) -> list[Cause]:
    """A label selector requirement's operator and values, then its key (``ValidateLabelSelectorRequirement``);
    ``numeric``: a node selector's, which also has ``Gt`` and ``Lt`` (``ValidateNodeSelectorRequirement``)."""
    operator, values = requirement.get("operator"), requirement.get("values")
    values = values if isinstance(values, list) else []
    causes: list[Cause] = []
    if operator in ("In", "NotIn"):
        if not values:
            causes.append(Cause.required(f"{field}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            causes.append(Cause.forbidden(f"{field}.values",
                                          "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif numeric and operator in ("Gt", "Lt"):
        if len(values) != 1:
            causes.append(Cause.required(f"{field}.values",
                                         "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        causes.append(bad_operator(field, operator))
    key = str(requirement.get("key") or "")
    causes.extend(Cause.invalid(f"{field}.key", go_quote(key), msg) for msg in is_qualified_name(key))
    return causes


def bad_operator(field: str, operator: Any) -> Cause:
    return Cause.invalid(f"{field}.operator", go_quote(str(operator or "")), "not a valid selector operator")


def validate_annotations(annotations: Any, field: str = "metadata.annotations") -> list[Cause]:
    """ValidateAnnotations: case-insensitive qualified-name keys and a 256 KiB total budget."""
    checked, causes = _string_map(annotations, field)
    if checked is None:
        return causes
    total = 0
    for key, value in checked.items():
        causes.extend(_invalid(field, key, msg) for msg in is_qualified_name(key.lower()))
        total += byte_len(key) + byte_len(value)
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(Cause("FieldValueTooLong", _ANNOTATIONS_TOO_LONG, field))
    return causes


def _string_field(meta: Mapping[str, Any], key: str, causes: list[Cause]) -> str:
    value = meta.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        causes.append(_invalid(f"metadata.{key}", value, "must be a string"))
        return ""
    return value


STANDARD_FINALIZERS: Final = ("kubernetes", "orphan", "foregroundDeletion")


def validate_finalizers(finalizers: Any, *, builtin: bool) -> list[Cause]:
    """apimachinery's ``ValidateFinalizers`` (each a qualified name, reported on ``metadata.finalizers``; not both
    ``orphan`` and ``foregroundDeletion``), then, for built-in kinds only, core's rule that a name without a ``/``
    is a standard one (reported on ``metadata.finalizers[i]``); duplicates pass (all observed on kube 1.20)."""
    if not isinstance(finalizers, list):
        return []
    names = [f for f in finalizers if isinstance(f, str)]
    causes = [_invalid("metadata.finalizers", name, msg) for name in names for msg in is_qualified_name(name)]
    if "orphan" in names and "foregroundDeletion" in names:
        shown = "[]string{" + ", ".join(go_quote(name) for name in names) + "}"
        causes.append(Cause("FieldValueInvalid", f"Invalid value: {shown}: finalizer orphan and foregroundDeletion "
                                                 "cannot be both set", "metadata.finalizers"))
    if builtin:
        causes.extend(_invalid(f"metadata.finalizers[{i}]", name, "name is neither a standard finalizer name nor is it "
                                                                  "fully qualified")
                      for i, name in enumerate(names) if "/" not in name and name not in STANDARD_FINALIZERS)
    return causes


def validate_object_meta(
    obj: Mapping[str, Any], *, namespaced: bool, name_rule: str = "subdomain", builtin: bool = False,
    update: bool = False
) -> list[Cause]:
    """ValidateObjectMetaAccessor for create/update, in kube's cause order.

    Call it after the server has turned ``generateName`` into ``name`` (kube's BeforeCreate
    does that first, so a bad prefix reports on both fields); an object with only a
    ``generateName`` also passes the "name required" check.  A ``namespace`` on a
    cluster-scoped object is not reported (the server clears it); on a namespaced object
    an empty one is left to the server to fill from the URL, a non-empty one must be a
    DNS label.
    """
    meta = obj.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, Mapping):
        return [_invalid("metadata", meta, "must be an object")]

    causes: list[Cause] = []
    name = _string_field(meta, "name", causes)
    generate_name = _string_field(meta, "generateName", causes)
    bad_type = bool(causes)

    if generate_name:
        causes.extend(
            _invalid("metadata.generateName", generate_name, msg)
            for msg in validate_name(generate_name, name_rule, prefix=True)
        )
    if name:
        causes.extend(_invalid("metadata.name", name, msg) for msg in validate_name(name, name_rule))
    elif not generate_name and not bad_type:
        causes.append(
            Cause("FieldValueRequired", "Required value: name or generateName is required", "metadata.name")
        )

    if namespaced:
        namespace = meta.get("namespace")
        if isinstance(namespace, str):
            if namespace:
                causes.extend(
                    _invalid("metadata.namespace", namespace, msg)
                    for msg in validate_name(namespace, "label")
                )
        elif namespace is not None:
            causes.append(_invalid("metadata.namespace", namespace, "must be a string"))

    causes.extend(validate_labels(meta.get("labels")))
    causes.extend(validate_annotations(meta.get("annotations")))
    finalizers = validate_finalizers(meta.get("finalizers"), builtin=builtin)
    # kube validates a built-in object's finalizers twice on update (its meta and its strategy), and lists every
    # cause twice (observed on kube 1.20)
    causes.extend(finalizers * 2 if update and builtin else finalizers)
    return causes


# --- generateName ----------------------------------------------------------------------------

_rng = random.SystemRandom()


def generate_name_suffix() -> str:
    """Five characters from util/rand's alphabet, as kube's SimpleNameGenerator appends."""
    return "".join(_rng.choices(_SUFFIX_ALPHABET, k=_SUFFIX_LENGTH))


def generate_name(base: str) -> str:
    """``base`` (cut to 58 chars so the result stays a valid label length) plus a suffix."""
    return base[:_MAX_GENERATED_BASE] + generate_name_suffix()


SpecCheck = Callable[[Mapping[str, Any] | None, Mapping[str, Any]], list[Cause]]
"""kube's validation of a kind's spec: every cause for the object ``new`` (``old``: None on create)."""


def spec_check_mutator(check: SpecCheck) -> Callable[[ResourceType, dict[str, Any] | None, dict[str, Any]], None]:
    """``check`` as a store mutator: 422 Invalid with every cause, nothing stored. A write that leaves the spec as
    it was (a status or metadata write) is not judged again: the spec was judged when it was written."""
    def validate(rtype: ResourceType, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        if old is not None and old.get("spec") == new.get("spec"):
            return
        causes = check(old, new)
        if causes:
            raise errors.invalid(rtype.kind, rtype.group, objects.name(new), causes)

    return validate
