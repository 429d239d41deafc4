"""Kubernetes' syntax rules for names, label keys and label values, with apimachinery's exact messages.

``k8s.io/apimachinery/pkg/util/validation``: each ``is_*`` returns the messages explaining why a value
is invalid (``[]`` when it is valid), word for word, because clients match on them (the dev plane's
API server answers with them); product code that only needs a yes/no tests for an empty list.
``strconv.ParseInt`` is here too: label selectors' ``Gt``/``Lt`` values must parse as int64. So is how
apimachinery prints a bad value (Go's ``%q``, ``field.Invalid``'s body) and joins several errors
(``utilerrors.NewAggregate``), which label selectors' messages and the dev plane's API server share.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

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

# Go's regexp anchors with ^...$ and ``$`` never matches before a trailing newline, hence fullmatch.
_QUALIFIED_NAME_RE: Final = re.compile(QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE: Final = re.compile(LABEL_VALUE_FMT)
_DNS1123_LABEL_RE: Final = re.compile(DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE: Final = re.compile(DNS1123_SUBDOMAIN_FMT)


def byte_len(value: str) -> int:
    """Go measures lengths in UTF-8 bytes; avoid encoding in the (usual) ASCII case."""
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


def _max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _too_long(value: str, limit: int) -> list[str]:
    """apimachinery's MaxLenError when ``value`` is longer than ``limit`` bytes, else nothing."""
    return [_max_len_error(limit)] if byte_len(value) > limit else []


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
    elif byte_len(name) > _QUALIFIED_NAME_MAX:
        errs.append("name part " + _max_len_error(_QUALIFIED_NAME_MAX))
    if _QUALIFIED_NAME_RE.fullmatch(name) is None:
        errs.append(
            "name part "
            + _regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


def is_valid_label_value(value: str) -> list[str]:
    """Label value rule: empty, or at most 63 qualified-name characters."""
    errs = _too_long(value, _LABEL_VALUE_MAX)
    if _LABEL_VALUE_RE.fullmatch(value) is None:
        errs.append(_regex_error(_LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_dns1123_label(value: str) -> list[str]:
    """RFC 1123 label (namespaces, Clusters); a valid subdomain with dots gets the short message."""
    errs = _too_long(value, _DNS1123_LABEL_MAX)
    if _DNS1123_LABEL_RE.fullmatch(value) is None:
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value) is not None:
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """RFC 1123 subdomain: the default object-name rule."""
    errs = _too_long(value, _DNS1123_SUBDOMAIN_MAX)
    if _DNS1123_SUBDOMAIN_RE.fullmatch(value) is None:
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


_PORT_NAME_RE: Final = re.compile(r"[-a-z0-9]+")


def is_valid_port_name(value: str) -> list[str]:
    """``IsValidPortName``: an IANA service name (a Service's or container's named port)."""
    errs: list[str] = []
    if len(value) > 15:
        errs.append("must be no more than 15 characters")
    if _PORT_NAME_RE.fullmatch(value) is None:
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if re.search(r"[a-z]", value) is None:
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value.startswith("-") or value.endswith("-"):
        errs.append("must not begin or end with a hyphen")
    return errs


_HTTP_HEADER_NAME_FMT: Final = "[-A-Za-z0-9]+"
_HTTP_HEADER_NAME_RE: Final = re.compile(_HTTP_HEADER_NAME_FMT)


def is_http_header_name(value: str) -> list[str]:
    """``IsHTTPHeaderName``: letters, digits and ``-``."""
    if _HTTP_HEADER_NAME_RE.fullmatch(value):
        return []
    return [_regex_error("a valid HTTP header must consist of alphanumeric characters or '-'", _HTTP_HEADER_NAME_FMT,
                         "X-Header-Name")]


def is_valid_port_num(value: int) -> list[str]:
    """``IsValidPortNum``: 1 to 65535."""
    return [] if 1 <= value <= 65535 else ["must be between 1 and 65535, inclusive"]


_ENV_VAR_NAME_FMT: Final = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_ENV_VAR_NAME_RE: Final = re.compile(_ENV_VAR_NAME_FMT)


def is_env_var_name(value: str) -> list[str]:
    """``IsEnvVarName`` (kube 1.20): letters, digits, ``_``, ``-`` and ``.``, not starting with a digit, and not
    ``.``, ``..`` or starting with ``..`` (``hasChDirPrefix``)."""
    errs: list[str] = []
    if _ENV_VAR_NAME_RE.fullmatch(value) is None:
        errs.append(_regex_error("a valid environment variable name must consist of alphabetic characters, digits, "
                                 "'_', '-', or '.', and must not start with a digit", _ENV_VAR_NAME_FMT,
                                 "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
    return errs + _chdir_prefix_errors(value)


def _chdir_prefix_errors(value: str) -> list[str]:
    """apimachinery's ``hasChDirPrefix``: a name that would change the directory it is a file of."""
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    return ["must not start with '..'"] if value.startswith("..") else []


_CONFIG_MAP_KEY_FMT: Final = "[-._a-zA-Z0-9]+"
_CONFIG_MAP_KEY_RE: Final = re.compile(_CONFIG_MAP_KEY_FMT)


def is_config_map_key(value: str) -> list[str]:
    """``IsConfigMapKey``: a key of a ConfigMap's or Secret's data (at most 253 characters, letters, digits,
    ``-``, ``_`` and ``.``, no ``.``/``..`` prefix), as an environment variable's ``configMapKeyRef`` names one."""
    errs = _too_long(value, _DNS1123_SUBDOMAIN_MAX)
    if _CONFIG_MAP_KEY_RE.fullmatch(value) is None:
        errs.append(_regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                 _CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    return errs + _chdir_prefix_errors(value)


_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


def parse_int64(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64) without a regex: optional sign, ASCII digits, int64 range."""
    digits = s[1:] if s[:1] in ("+", "-") else s
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    try:
        n = int(s)
    except ValueError:  # absurdly long digit strings
        return None
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def parse_uint64(s: str) -> int | None:
    """strconv.ParseUint(s, 10, 64): ASCII digits, no sign, within uint64 (kube's resourceVersions)."""
    if not s or not s.isascii() or not s.isdigit():
        return None
    n = int(s)
    return n if n < 2**64 else None


# --- how apimachinery prints errors ------------------------------------------------------------

_GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def go_quote(value: str) -> str:
    """Render ``value`` like Go's ``%q`` (strconv.Quote), which kube uses for bad values."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return '"' + value + '"'
    out = ['"']
    for ch in value:
        esc = _GO_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            if code < 0x80:
                out.append(f"\\x{code:02x}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


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


def aggregate_messages(messages: list[str]) -> str:
    """apimachinery's utilerrors.NewAggregate(...).Error(): one message bare, several deduplicated in ``[...]``."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
