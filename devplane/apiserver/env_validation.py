"""kube 1.20's ``ValidateEnv`` and ``ValidateEnvFrom``: a container's environment, and the Downward API's field
selectors that environment variables and ``downwardAPI`` volumes share.

A real kube-apiserver refuses an environment variable taken from ``status.bogus``, from a ConfigMap key named
``bad key!`` or from a ``resourceFieldRef`` with a divisor of 3, and an ``envFrom`` without a source or with a
prefix that is not a variable name; the dev server stored them. Each message and field path is kube's, quirks
included: ``envFrom``'s count errors are on ``envFrom`` itself, not on the entry (each checked on the refplane).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kube_api.quantity import canonical, parse_quantity
from kube_api.validation import go_quote, is_config_map_key, is_dns1123_subdomain, is_env_var_name, is_qualified_name

from .errors import Cause
from .validation import child, entries, validate_name

ENV_SOURCES: Final = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
ENV_FIELD_PATHS: Final = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                          "spec.serviceAccountName", "status.hostIP", "status.podIP", "status.podIPs")
"""``validEnvDownwardAPIFieldPathExpressions`` (1.20), sorted as kube lists them."""
VOLUME_FIELD_PATHS: Final = ("metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
                             "metadata.uid")
"""``validVolumeDownwardAPIFieldPathExpressions``."""
RESOURCE_FIELD_PATHS: Final = ("limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
                               "requests.ephemeral-storage", "requests.memory")
CONVERTIBLE_FIELD_LABELS: Final = frozenset({
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
    "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName", "status.phase",
    "status.hostIP", "status.podIP", "status.podIPs"})
"""What ``ConvertDownwardAPIFieldLabel`` knows of a v1 Pod (and ``spec.host``, the old ``spec.nodeName``)."""
_BYTES_DIVISORS: Final = ("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
DIVISORS: Final = {
    "cpu": (("1m", "1"), "only divisor's values 1m and 1 are supported with the cpu resource"),
    "memory": (_BYTES_DIVISORS, f"only divisor's values {', '.join(_BYTES_DIVISORS)} are supported with the "
                                "memory resource"),
    "ephemeral-storage": (_BYTES_DIVISORS, f"only divisor's values {', '.join(_BYTES_DIVISORS)} are supported "
                                           "with the local ephemeral storage resource")}
"""``validateContainerResourceDivisor``: per resource (after ``limits.``/``requests.``), the divisors allowed."""


def env_causes(container: Mapping[str, Any], field: str) -> list[Cause]:
    """``ValidateEnv``: each name, and each ``valueFrom``: its sources checked, then exactly one of them, not
    beside a ``value``."""
    causes: list[Cause] = []
    for i, var in entries(container, "env"):
        at = f"{field}[{i}]"
        name = str(var.get("name") or "")
        if not name:
            causes.append(Cause.required(f"{at}.name"))
        causes.extend(Cause.invalid(f"{at}.name", go_quote(name), msg) for msg in is_env_var_name(name) if name)
        source = var.get("valueFrom")
        if isinstance(source, Mapping):
            causes.extend(_value_from(source, bool(var.get("value")), f"{at}.valueFrom"))
    return causes


def _value_from(source: Mapping[str, Any], has_value: bool, field: str) -> list[Cause]:
    """``validateEnvVarValueFrom``."""
    causes: list[Cause] = []
    given = [key for key in ENV_SOURCES if isinstance(source.get(key), Mapping)]
    for key in given:
        at, selector = f"{field}.{key}", source[key]
        if key == "fieldRef":
            causes.extend(field_selector_causes(selector, ENV_FIELD_PATHS, at))
        elif key == "resourceFieldRef":
            causes.extend(resource_selector_causes(selector, at, volume=False))
        else:
            causes.extend(_key_selector(selector, at))
    if not given:
        detail = "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"
    elif has_value:
        detail = "may not be specified when `value` is not empty"
    elif len(given) > 1:
        detail = "may not have more than one field specified at a time"
    else:
        return causes
    return [*causes, Cause.invalid(field, '""', detail)]


def _key_selector(selector: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateConfigMapKeySelector`` and ``validateSecretKeySelector``: the name a DNS subdomain (an empty one
    too), the key required and a config key."""
    name, key = str(selector.get("name") or ""), str(selector.get("key") or "")
    causes = [Cause.invalid(f"{field}.name", go_quote(name), msg) for msg in is_dns1123_subdomain(name)]
    if not key:
        return [*causes, Cause.required(f"{field}.key")]
    return [*causes, *(Cause.invalid(f"{field}.key", go_quote(key), msg) for msg in is_config_map_key(key))]


def field_selector_causes(selector: Mapping[str, Any], supported: tuple[str, ...], field: str) -> list[Cause]:
    """``validateObjectFieldSelector``: the version and path required, the path one kube converts, a label's or
    annotation's key a qualified name, any other path one of ``supported``."""
    version, path = str(selector.get("apiVersion") or ""), str(selector.get("fieldPath") or "")
    if not version:
        return [Cause.required(f"{field}.apiVersion")]
    if not path:
        return [Cause.required(f"{field}.fieldPath")]
    converted, error = _convert_field_label(version, path)
    if error:
        return [Cause.invalid(f"{field}.fieldPath", go_quote(path), f"error converting fieldPath: {error}")]
    subscripted = _split_subscript(converted)
    if subscripted is not None:
        base, key = subscripted
        checked = key.lower() if base == "metadata.annotations" else key
        return [Cause.invalid(field, go_quote(key), msg) for msg in is_qualified_name(checked)]
    if converted not in supported:
        return [Cause.not_supported(f"{field}.fieldPath", go_quote(converted), supported)]
    return []


def _split_subscript(path: str) -> tuple[str, str] | None:
    """fieldpath's ``SplitMaybeSubscriptedPath``: ``metadata.labels['key']`` as (path, key)."""
    if not path.endswith("']"):
        return None
    base, sep, key = path[:-2].partition("['")
    return (base, key) if sep and base else None


def _convert_field_label(version: str, label: str) -> tuple[str, str]:
    """``ConvertDownwardAPIFieldLabel`` for a Pod: (the internal path, "") or ("", why it does not convert)."""
    if version != "v1":
        return "", f"unsupported pod version: {version}"
    subscripted = _split_subscript(label)
    if subscripted is not None:
        if subscripted[0] in ("metadata.annotations", "metadata.labels"):
            return label, ""
        return "", f"field label does not support subscript: {label}"
    if label == "spec.host":
        return "spec.nodeName", ""
    return (label, "") if label in CONVERTIBLE_FIELD_LABELS else ("", f"field label not supported: {label}")


def resource_selector_causes(selector: Mapping[str, Any], field: str, *, volume: bool) -> list[Cause]:
    """``validateContainerResourceFieldSelector``: a volume's names its container; the resource required and one
    kube exposes; then the divisor."""
    resource = str(selector.get("resource") or "")
    causes: list[Cause] = []
    if volume and not selector.get("containerName"):
        causes.append(Cause.required(f"{field}.containerName"))
    elif not resource:
        causes.append(Cause.required(f"{field}.resource"))
    elif resource not in RESOURCE_FIELD_PATHS:
        causes.append(Cause.not_supported(f"{field}.resource", go_quote(resource), RESOURCE_FIELD_PATHS))
    return causes + _divisor(resource, selector.get("divisor"), f"{field}.divisor")


def _divisor(resource: str, divisor: Any, field: str) -> list[Cause]:
    """``validateContainerResourceDivisor``: an unset (zero) divisor is fine, else one of the resource's."""
    try:
        if divisor is None or parse_quantity(divisor) == 0:
            return []
        shown = canonical(divisor)
    except (TypeError, ValueError):  # the decoder's to refuse
        return []
    kind, _, name = resource.partition(".")
    allowed = DIVISORS.get(name) if kind in ("limits", "requests") else None
    if allowed is None or shown in allowed[0]:
        return []
    return [Cause.invalid(field, go_quote(resource), allowed[1])]


def env_from_causes(container: Mapping[str, Any], field: str) -> list[Cause]:
    """``ValidateEnvFrom``: the prefix a variable name; each source's name required and a DNS subdomain (where a
    trailing dash is allowed); exactly one source (kube reports that on ``envFrom``, not on the entry)."""
    causes: list[Cause] = []
    for i, source in entries(container, "envFrom"):
        at = f"{field}[{i}]"
        prefix = str(source.get("prefix") or "")
        causes.extend(Cause.invalid(f"{at}.prefix", go_quote(prefix), msg) for msg in is_env_var_name(prefix)
                      if prefix)
        given = [key for key in ("configMapRef", "secretRef") if isinstance(source.get(key), Mapping)]
        for key in given:
            name = str(child(source, key).get("name") or "")
            if not name:
                causes.append(Cause.required(f"{at}.{key}.name"))
            causes.extend(Cause.invalid(f"{at}.{key}.name", go_quote(name), msg)
                          for msg in validate_name(name, "subdomain", prefix=True) if name)
        if not given:
            causes.append(Cause.invalid(field, '""', "must specify one of: `configMapRef` or `secretRef`"))
        elif len(given) > 1:
            causes.append(Cause.invalid(field, '""', "may not have more than one field specified at a time"))
    return causes


__all__ = ["env_causes", "env_from_causes", "field_selector_causes", "resource_selector_causes"]
