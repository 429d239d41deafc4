"""kube 1.20's ``ValidatePodSecurityContext`` and ``ValidateSecurityContext``: who a Pod's processes run as.

Checked, with kube's paths and messages (each checked on the refplane): user and group IDs within 0..2^31-1;
host network ports; ``shareProcessNamespace`` with ``hostPID``; sysctl names (required, the sysctl syntax, once
each); the fsGroup change policy; seccomp profiles (a known type, a Localhost profile named only for Localhost);
and a container that disallows privilege escalation while privileged or adding ``CAP_SYS_ADMIN``, a message
that prints the whole context with Go's ``%#v``, pointers included (their addresses here are made up).

Not covered: Windows options, SELinux options, a Localhost profile's path. Privileged containers are allowed,
as by a kube-apiserver started with ``--allow-privileged=true`` (Karmada's, and the refplane's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kube_api.limits import MAX_INT32
from kube_api.validation import go_quote

from .errors import Cause
from .validation import child, entries, go_int

ID_RULE: Final = f"must be between 0 and {MAX_INT32}, inclusive"
FS_GROUP_CHANGE_POLICIES: Final = ("Always", "OnRootMismatch")
SECCOMP_TYPES: Final = ("Localhost", "RuntimeDefault", "Unconfined")
SYSCTL_MAX_LENGTH: Final = 253
SYSCTL_FORMAT: Final = r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?\.)*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL: Final = re.compile(SYSCTL_FORMAT)
_POINTER: Final = "0xc000000000"
"""The address shown for a set pointer field in a ``%#v`` (kube shows the real one, which changes each time)."""


def _ids(context: Mapping[str, Any], field: str, keys: tuple[str, ...]) -> list[Cause]:
    """``IsValidUserID``/``IsValidGroupID`` for each of ``keys`` that is set."""
    causes: list[Cause] = []
    for key in keys:
        if context.get(key) is not None and not 0 <= (number := go_int(context.get(key))) <= MAX_INT32:
            causes.append(Cause.invalid(f"{field}.{key}", str(number), ID_RULE))
    return causes


def pod_security_context_causes(pod: Mapping[str, Any], field: str) -> list[Cause]:
    """``ValidatePodSecurityContext`` for the Pod spec at ``field`` (kube's internal context also holds the
    spec's ``hostNetwork``, ``hostPID`` and ``shareProcessNamespace``, so it is always checked)."""
    at = f"{field}.securityContext"
    context = child(pod, "securityContext")
    causes: list[Cause] = []
    if pod.get("hostNetwork") is True:
        for i, container in entries(pod, "containers"):
            for j, port in entries(container, "ports"):
                number = go_int(port.get("containerPort"))
                if (go_int(port.get("hostPort")) or number) != number:  # unset, it defaults to the container port
                    causes.append(Cause.invalid(f"{field}.containers[{i}].ports[{j}].containerPort", str(number),
                                                "must match `hostPort` when `hostNetwork` is true"))
    causes.extend(_ids(context, at, ("fsGroup", "runAsUser", "runAsGroup")))
    groups = context.get("supplementalGroups")
    for i, group in enumerate(groups if isinstance(groups, list) else []):
        if not 0 <= (number := go_int(group)) <= MAX_INT32:
            causes.append(Cause.invalid(f"{at}.supplementalGroups[{i}]", str(number), ID_RULE))
    if pod.get("shareProcessNamespace") is True and pod.get("hostPID") is True:
        causes.append(Cause.invalid(f"{at}.shareProcessNamespace", "true",
                                    "ShareProcessNamespace and HostPID cannot both be enabled"))
    causes.extend(_sysctls(context, f"{at}.sysctls"))
    policy = context.get("fsGroupChangePolicy")
    if policy is not None and policy not in FS_GROUP_CHANGE_POLICIES:
        causes.append(Cause.not_supported(f"{at}.fsGroupChangePolicy", go_quote(str(policy)), FS_GROUP_CHANGE_POLICIES))
    causes.extend(_seccomp(context, f"{at}.seccompProfile"))
    return causes


def _sysctls(context: Mapping[str, Any], field: str) -> list[Cause]:
    sysctls = context.get("sysctls")
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, sysctl in enumerate(sysctls if isinstance(sysctls, list) else []):
        name = str(sysctl.get("name") or "") if isinstance(sysctl, Mapping) else ""
        if not name:
            causes.append(Cause.required(f"{field}[{i}].name"))
        elif len(name) > SYSCTL_MAX_LENGTH or not _SYSCTL.fullmatch(name):
            causes.append(Cause.invalid(f"{field}[{i}].name", go_quote(name), f"must have at most {SYSCTL_MAX_LENGTH} "
                                                                              f"characters and match regex "
                                                                              f"{SYSCTL_FORMAT}"))
        elif name in seen:
            causes.append(Cause.duplicate(f"{field}[{i}].name", go_quote(name)))
        seen.add(name)
    return causes


def _seccomp(context: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateSeccompProfileField``."""
    profile = context.get("seccompProfile")
    if not isinstance(profile, Mapping):
        return []
    kind, localhost = str(profile.get("type") or ""), profile.get("localhostProfile")
    causes: list[Cause] = []
    if not kind:
        causes.append(Cause.required(f"{field}.type", "type is required when seccompProfile is set"))
    elif kind not in SECCOMP_TYPES:
        causes.append(Cause.not_supported(f"{field}.type", go_quote(kind), SECCOMP_TYPES))
    if kind == "Localhost":
        if localhost is None:
            causes.append(Cause.required(f"{field}.localhostProfile", "must be set when seccomp type is Localhost"))
    elif localhost is not None:
        shown = f"core.SeccompProfile{{Type:{go_quote(kind)}, LocalhostProfile:(*string)({_POINTER})}}"
        causes.append(Cause.invalid(f"{field}.localhostProfile", shown,
                                    "can only be set when seccomp type is Localhost"))
    return causes


_CONTEXT_FIELDS: Final = (
    ("Capabilities", "capabilities", "*core.Capabilities"), ("Privileged", "privileged", "*bool"),
    ("SELinuxOptions", "seLinuxOptions", "*core.SELinuxOptions"),
    ("WindowsOptions", "windowsOptions", "*core.WindowsSecurityContextOptions"),
    ("RunAsUser", "runAsUser", "*int64"), ("RunAsGroup", "runAsGroup", "*int64"),
    ("RunAsNonRoot", "runAsNonRoot", "*bool"), ("ReadOnlyRootFilesystem", "readOnlyRootFilesystem", "*bool"),
    ("AllowPrivilegeEscalation", "allowPrivilegeEscalation", "*bool"),
    ("ProcMount", "procMount", "*core.ProcMountType"), ("SeccompProfile", "seccompProfile", "*core.SeccompProfile"))


def _go_security_context(context: Mapping[str, Any]) -> str:
    """``%#v`` of a ``core.SecurityContext``: every field a pointer, nil or (here, a made-up) address."""
    fields = ", ".join(f"{name}:({go_type})({'nil' if context.get(key) is None else _POINTER})"
                       for name, key, go_type in _CONTEXT_FIELDS)
    return f"core.SecurityContext{{{fields}}}"


def container_security_context_causes(container: Mapping[str, Any], field: str) -> list[Cause]:
    """``ValidateSecurityContext`` for the container whose path is ``field``."""
    context = container.get("securityContext")
    if not isinstance(context, Mapping):
        return []
    at = f"{field}.securityContext"
    causes = _ids(context, at, ("runAsUser", "runAsGroup"))
    causes.extend(_seccomp(context, f"{at}.seccompProfile"))
    if context.get("allowPrivilegeEscalation") is False:
        if context.get("privileged") is True:
            causes.append(Cause.invalid(at, _go_security_context(context),
                                        "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
        added = child(context, "capabilities").get("add")
        for capability in added if isinstance(added, list) else []:
            if capability == "CAP_SYS_ADMIN":
                causes.append(Cause.invalid(at, _go_security_context(context), "cannot set `allowPrivilegeEscalation` "
                                                                               "to false and `capabilities.Add` "
                                                                               "CAP_SYS_ADMIN"))
    return causes
