"""Object metadata validation that answers with kube-apiserver's exact wording.

Clients (kubectl, client-go, the Karmada controllers' tests) match on these messages, so the
regexes, examples and quirks below are copied from ``k8s.io/apimachinery/pkg/util/validation``
and ``pkg/api/validation/objectmeta.go`` rather than paraphrased.  Every function returns the
messages *without* a field prefix; callers attach ``Cause.field`` and the server formats
``field: message``.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from typing import Any, Final

from devplane.apiserver.codec import go_quote
from devplane.apiserver.errors import Cause

__all__ = [
    "DNS1123_LABEL_FMT",
    "DNS1123_SUBDOMAIN_FMT",
    "LABEL_VALUE_FMT",
    "NAME_RULES",
    "QUALIFIED_NAME_FMT",
    "TOTAL_ANNOTATION_SIZE_LIMIT",
    "generate_name",
    "generate_name_suffix",
    "go_quote",
    "invalid_message",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "is_valid_path_segment_name",
    "validate_annotations",
    "validate_labels",
    "validate_name",
    "validate_object_meta",
]

# --- regex fragments, verbatim from apimachinery (they are quoted inside the messages) ---------

_QNAME_CHAR_FMT: Final = "[A-Za-z0-9]"
_QNAME_EXT_CHAR_FMT: Final = "[-A-Za-z0-9_.]"
QUALIFIED_NAME_FMT: Final = "(" + _QNAME_CHAR_FMT + _QNAME_EXT_CHAR_FMT + "*)?" + _QNAME_CHAR_FMT
LABEL_VALUE_FMT: Final = "(" + QUALIFIED_NAME_FMT + ")?"
DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT: Final = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"

_QUALIFIED_NAME_ERR: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_ERR: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_ERR: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_ERR: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)

_QUALIFIED_NAME_MAX: Final = 63
_LABEL_VALUE_MAX: Final = 63
_DNS1123_LABEL_MAX: Final = 63
_DNS1123_SUBDOMAIN_MAX: Final = 253
TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * 1024

# Go's regexp anchors with ^...$ and ``$`` never matches before a trailing newline, hence fullmatch.
_QUALIFIED_NAME_RE: Final = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE: Final = re.compile(LABEL_VALUE_FMT)
_DNS1123_LABEL_RE: Final = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE: Final = re.compile(DNS1123_SUBDOMAIN_FMT)

# util/rand alphabet: no vowels (no accidental words) and no confusable 0/1/3.
_SUFFIX_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_SUFFIX_LENGTH: Final = 5
_MAX_GENERATED_BASE: Final = 63 - _SUFFIX_LENGTH

NAME_RULES: Final = ("subdomain", "label", "path-segment")


# --- Go formatting helpers -------------------------------------------------------------------



def _render_value(value: Any) -> str:
    """The bad value as ``field.Error.ErrorBody`` prints it: %q strings, %v scalars, JSON else."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None:
        return "null"
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def invalid_message(value: Any, detail: str) -> str:
    """``Invalid value: <value>: <detail>``, the body of a ``FieldValueInvalid`` cause."""
    return f"Invalid value: {_render_value(value)}: {detail}"


def _invalid(field: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", invalid_message(value, detail), field)


def _byte_len(value: str) -> int:
    """Go measures lengths in UTF-8 bytes; avoid encoding in the (usual) ASCII case."""
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError, including its double space before each ``or``."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    msg += " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            msg += " or "
        msg += f"'{example}', "
    return msg + f"regex used for validation is '{fmt}')"


_EMPTY_ERROR: Final = "must be non-empty"


# --- util/validation -------------------------------------------------------------------------


def is_qualified_name(value: str) -> list[str]:
    """Label/annotation key rule: optional DNS-subdomain prefix, ``/``, name of at most 63 chars."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + _EMPTY_ERROR)
        else:
            errs.extend("prefix part " + msg for msg in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + _regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + _EMPTY_ERROR)
    elif _byte_len(name) > _QUALIFIED_NAME_MAX:
        errs.append("name part " + _max_len_error(_QUALIFIED_NAME_MAX))
    if _QUALIFIED_NAME_RE.fullmatch(name) is None:
        errs.append(
            "name part "
            + _regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """Label value rule: empty, or at most 63 qualified-name characters."""
    errs: list[str] = []
    if _byte_len(value) > _LABEL_VALUE_MAX:
        errs.append(_max_len_error(_LABEL_VALUE_MAX))
    if _LABEL_VALUE_RE.fullmatch(value) is None:
        errs.append(_regex_error(_LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_dns1123_label(value: str) -> list[str]:
    """RFC 1123 label (namespaces, Clusters); a valid subdomain with dots gets the short message."""
    errs: list[str] = []
    if _byte_len(value) > _DNS1123_LABEL_MAX:
        errs.append(_max_len_error(_DNS1123_LABEL_MAX))
    if _DNS1123_LABEL_RE.fullmatch(value) is None:
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value) is not None:
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """RFC 1123 subdomain: the default object-name rule."""
    errs: list[str] = []
    if _byte_len(value) > _DNS1123_SUBDOMAIN_MAX:
        errs.append(_max_len_error(_DNS1123_SUBDOMAIN_MAX))
    if _DNS1123_SUBDOMAIN_RE.fullmatch(value) is None:
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_valid_path_segment_name(name: str, *, prefix: bool = False) -> list[str]:
    """Names that only have to survive as one URL path segment (RBAC objects allow ``:``)."""
    if not prefix:
        for illegal in (".", ".."):
            if name == illegal:
                return [f"may not be '{illegal}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in name]


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


def validate_annotations(annotations: Any, field: str = "metadata.annotations") -> list[Cause]:
    """ValidateAnnotations: case-insensitive qualified-name keys and a 256 KiB total budget."""
    checked, causes = _string_map(annotations, field)
    if checked is None:
        return causes
    total = 0
    for key, value in checked.items():
        causes.extend(_invalid(field, key, msg) for msg in is_qualified_name(key.lower()))
        total += _byte_len(key) + _byte_len(value)
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


def validate_object_meta(
    obj: Mapping[str, Any], *, namespaced: bool, name_rule: str = "subdomain"
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
    return causes


# --- generateName ----------------------------------------------------------------------------

_rng = random.SystemRandom()


def generate_name_suffix() -> str:
    """Five characters from util/rand's alphabet, as kube's SimpleNameGenerator appends."""
    return "".join(_rng.choices(_SUFFIX_ALPHABET, k=_SUFFIX_LENGTH))


def generate_name(base: str) -> str:
    """``base`` (cut to 58 chars so the result stays a valid label length) plus a suffix."""
    return base[:_MAX_GENERATED_BASE] + generate_name_suffix()
