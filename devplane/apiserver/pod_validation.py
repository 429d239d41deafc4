"""kube 1.20's ``ValidatePodSpec``: the part the dev server checks, for Pods and the Pod templates of workloads.

A real kube-apiserver refuses a Deployment whose template has a container port of 70000, an environment
variable named ``1BAD``, a mount of a volume that is not there, or a request above its limit; the dev server
stored them, so a manifest that works on the dev plane could fail on Karmada's API server. Covered, in kube's
order and with its messages (each checked on the refplane):

- volumes (:mod:`.volume_validation`: their names and sources; a volume refused is unknown to the mounts);
- per container: its name (required, a DNS-1123 label, unique), its image, its lifecycle hooks and probes (one
  handler each, valid; counts not negative; a liveness or startup probe's success threshold 1), its termination
  message policy, its ports (``validateContainerPorts``: name, container and host port, protocol, duplicate
  names), its environment (:mod:`.env_validation`: ``env`` and ``envFrom``), its volume mounts and devices
  (:mod:`.volume_validation`), its image pull policy, its resources (``ValidateResourceRequirements``:
  names, non-negative amounts, requests within limits, limits for resources that cannot be overcommitted,
  HugePages with cpu or memory) and its security context (:mod:`.security_context_validation`); then the host
  ports the containers share;
- init containers: the same per container (their host ports each on its own), then each name unique among
  all containers and no lifecycle hooks or probes;
- the restart policy, the DNS policy, the node selector's labels, the Pod's security context, its affinity
  (:mod:`.affinity_validation`), its DNS config, readiness gates and topology spread constraints, the service
  account, node, host and subdomain names, ``activeDeadlineSeconds`` and each toleration.

Not covered: ephemeral containers (1.20 drops them: their feature gate is off), the contents of exotic volume
sources, and whether an extended resource's amount is an integer. kube walks a resource list (a Go map) in
random order; this goes in the written order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, Final

from kube_api.limits import MAX_INT32
from kube_api.quantity import (
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    canonical,
    is_extended_resource_name,
    is_hugepage_resource_name,
    is_native_resource,
    parse_quantity,
)
from kube_api.validation import (
    go_quote,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_http_header_name,
    is_qualified_name,
    is_valid_label_value,
    is_valid_port_name,
)

from .affinity_validation import affinity_causes, topology_spread_causes
from .env_validation import env_causes, env_from_causes
from .errors import Cause
from .security_context_validation import container_security_context_causes, pod_security_context_causes
from .validation import child, entries, go_int, go_strings, parse_go_ip, port_num_causes, validate_labels
from .volume_validation import device_causes, mount_causes, volume_causes

RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
INIT_RULE: Final = "must not be set for init containers"
GO_ADDRESS: Final = "0xc000000000"
"""The address the dev server prints for a Go pointer that is not nil (kube prints a real one)."""
HANDLERS: Final = ("exec", "httpGet", "tcpSocket")
"""A probe's or hook's handler types, in the order kube looks at them (the first found counts)."""
PROBE_COUNTS: Final = ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold")
HTTP_SCHEMES: Final = ("HTTP", "HTTPS")
TERMINATION_MESSAGE_POLICIES: Final = ("File", "FallbackToLogsOnError")
TERMINATION_MESSAGE_RULE: Final = "must be 'File' or 'FallbackToLogsOnError'"
DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
TOLERATION_OPERATORS: Final = ("Equal", "Exists")
TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_DNS_NAMESERVERS: Final = 3
MAX_DNS_SEARCHES: Final = 6
MAX_DNS_SEARCH_CHARS: Final = 256
CONTAINER_RESOURCES: Final = frozenset({RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE})
STANDARD_RESOURCES: Final = CONTAINER_RESOURCES | {
    "requests.cpu", "requests.memory", "requests.ephemeral-storage", "limits.cpu", "limits.memory",
    "limits.ephemeral-storage", "pods", "resourcequotas", "services", "replicationcontrollers", "secrets",
    "configmaps", "persistentvolumeclaims", "storage", "requests.storage", "services.nodeports",
    "services.loadbalancers"}
"""``IsStandardResourceName``'s set (1.20), beside the HugePages names."""


def _named(field: str, name: str, check: Callable[[str], list[str]], *, optional: bool = False) -> list[Cause]:
    """A name: each message of ``check`` (a syntax rule); when empty, Required unless ``optional``."""
    if not name:
        return [] if optional else [Cause.required(field)]
    return [Cause.invalid(field, go_quote(name), msg) for msg in check(name)]


def pod_spec_causes(pod: Mapping[str, Any], field: str) -> list[Cause]:
    """``ValidatePodSpec``'s covered part (see the module docstring), for the Pod spec at ``field``."""
    volumes, causes = volume_causes(pod, field)
    containers = entries(pod, "containers")
    if containers:
        causes.extend(_containers(containers, f"{field}.containers", volumes, init=False))
    else:
        causes.append(Cause.required(f"{field}.containers"))
    causes.extend(_init_containers(pod, f"{field}.initContainers", volumes))
    policy = pod.get("restartPolicy", "Always")
    if policy not in RESTART_POLICIES:
        causes.append(Cause.not_supported(f"{field}.restartPolicy", go_quote(str(policy)), RESTART_POLICIES))
    dns = str(pod.get("dnsPolicy") or "")
    if not dns:
        causes.append(Cause.required(f"{field}.dnsPolicy"))
    elif dns not in DNS_POLICIES:
        causes.append(Cause.not_supported(f"{field}.dnsPolicy", go_quote(dns), DNS_POLICIES))
    causes.extend(validate_labels(pod.get("nodeSelector"), f"{field}.nodeSelector"))
    causes.extend(pod_security_context_causes(pod, field))
    causes.extend(affinity_causes(pod, field))
    causes.extend(_dns_config(pod, field))
    for i, gate in entries(pod, "readinessGates"):
        condition = str(gate.get("conditionType") or "")
        causes.extend(Cause.invalid(f"{field}.readinessGates[{i}].conditionType", go_quote(condition), msg)
                      for msg in is_qualified_name(condition))
    causes.extend(topology_spread_causes(pod, field))
    for key, check in (("serviceAccountName", is_dns1123_subdomain), ("nodeName", is_dns1123_subdomain)):
        causes.extend(_named(f"{field}.{key}", str(pod.get(key) or ""), check, optional=True))
    deadline = pod.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not isinstance(deadline, bool) and not 1 <= deadline <= MAX_INT32:
        causes.append(Cause.invalid(f"{field}.activeDeadlineSeconds", str(deadline),
                                    f"must be between 1 and {MAX_INT32}, inclusive"))
    for key in ("hostname", "subdomain"):
        causes.extend(_named(f"{field}.{key}", str(pod.get(key) or ""), is_dns1123_label, optional=True))
    for i, toleration in entries(pod, "tolerations"):
        causes.extend(_toleration(toleration, f"{field}.tolerations[{i}]"))
    return causes


def _dns_config(pod: Mapping[str, Any], field: str) -> list[Cause]:
    """``validatePodDNSConfig``: policy None needs nameservers; at most 3 nameservers, each an IP; at most 6
    search paths (256 characters in all), each a DNS subdomain (a trailing dot allowed); each option named."""
    at, config = f"{field}.dnsConfig", pod.get("dnsConfig")
    if pod.get("dnsPolicy") == "None":
        if not isinstance(config, Mapping):
            return [Cause.required(at, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not config.get("nameservers"):
            return [Cause.required(f"{at}.nameservers", "must provide at least one DNS nameserver when `dnsPolicy` "
                                                        "is None")]
    if not isinstance(config, Mapping):
        return []
    causes: list[Cause] = []
    nameservers = [str(n) for n in config.get("nameservers") or [] if n is not None]
    if len(nameservers) > MAX_DNS_NAMESERVERS:
        causes.append(Cause.invalid(f"{at}.nameservers", go_strings(nameservers),
                                    f"must not have more than {MAX_DNS_NAMESERVERS} nameservers"))
    for i, nameserver in enumerate(nameservers):
        if parse_go_ip(nameserver) is None:
            causes.append(Cause.invalid(f"{at}.nameservers[{i}]", go_quote(nameserver), "must be valid IP address"))
    searches = [str(s) for s in config.get("searches") or [] if s is not None]
    if len(searches) > MAX_DNS_SEARCHES:
        causes.append(Cause.invalid(f"{at}.searches", go_strings(searches),
                                    f"must not have more than {MAX_DNS_SEARCHES} search paths"))
    if len(" ".join(searches)) > MAX_DNS_SEARCH_CHARS:
        causes.append(Cause.invalid(f"{at}.searches", go_strings(searches),
                                    f"must not have more than {MAX_DNS_SEARCH_CHARS} characters (including spaces) "
                                    "in the search list"))
    for i, search in enumerate(searches):
        trimmed = search[:-1] if search.endswith(".") else search
        causes.extend(_named(f"{at}.searches[{i}]", trimmed, is_dns1123_subdomain))
    for i, option in enumerate(config.get("options") or []):
        if not (isinstance(option, Mapping) and option.get("name")):
            causes.append(Cause.required(f"{at}.options[{i}]", "must not be empty"))
    return causes


def _toleration(toleration: Mapping[str, Any], field: str) -> list[Cause]:
    """``ValidateTolerations``' rules for one toleration."""
    key, operator = str(toleration.get("key") or ""), str(toleration.get("operator") or "")
    value, effect = str(toleration.get("value") or ""), str(toleration.get("effect") or "")
    causes = [Cause.invalid(f"{field}.key", go_quote(key), msg) for msg in is_qualified_name(key)] if key else []
    if not key and operator != "Exists":
        causes.append(Cause.invalid(f"{field}.operator", go_quote(operator), "operator must be Exists when `key` is "
                                                                            'empty, which means "match all values '
                                                                            'and all keys"'))
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        causes.append(Cause.invalid(f"{field}.effect", go_quote(effect),
                                    "effect must be 'NoExecute' when `tolerationSeconds` is set"))
    if operator in ("Equal", ""):
        errors = is_valid_label_value(value)
        if errors:
            causes.append(Cause.invalid(f"{field}.operator", go_quote(value), ";".join(errors)))
    elif operator == "Exists":
        if value:
            causes.append(Cause.invalid(f"{field}.operator", _go_toleration(toleration),
                                        "value must be empty when `operator` is 'Exists'"))
    else:
        causes.append(Cause.not_supported(f"{field}.operator", go_quote(operator), TOLERATION_OPERATORS))
    if effect and effect not in TAINT_EFFECTS:
        causes.append(Cause.not_supported(f"{field}.effect", go_quote(effect), TAINT_EFFECTS))
    return causes


def _go_toleration(toleration: Mapping[str, Any]) -> str:
    """``%#v`` of a ``core.Toleration`` (its ``tolerationSeconds`` pointer as Go prints it only when nil)."""
    seconds = "(*int64)(nil)" if toleration.get("tolerationSeconds") is None else "(*int64)(0xc000000000)"
    fields = ", ".join(f"{name}:{go_quote(str(toleration.get(key) or ''))}" for name, key in (
        ("Key", "key"), ("Operator", "operator"), ("Value", "value"), ("Effect", "effect")))
    return f"core.Toleration{{{fields}, TolerationSeconds:{seconds}}}"


def _containers(containers: list[tuple[int, Mapping[str, Any]]], field: str,
                volumes: Mapping[str, Mapping[str, Any]], *, init: bool) -> list[Cause]:
    """``validateContainers``: each container, then the host ports they share (an init container runs alone, so
    only its own ports may not collide; kube then names it the list's first, ``initContainers[0]``, whichever
    it is)."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, container in containers:
        at = f"{field}[{i}]"
        name = str(container.get("name") or "")
        causes.extend(_named(f"{at}.name", name, is_dns1123_label))
        if name in seen:  # kube: an empty name twice is a duplicate too
            causes.append(Cause.duplicate(f"{at}.name", go_quote(name)))
        seen.add(name)
        causes.extend(_container(container, at, volumes))
    groups = [[(0, container)] for _, container in containers] if init else [containers]
    for group in groups:
        causes.extend(_host_port_conflicts(group, field))
    return causes


def _container(container: Mapping[str, Any], at: str, volumes: Mapping[str, Mapping[str, Any]]) -> list[Cause]:
    """One container's fields after its name, in ``validateContainers``' order."""
    causes = [] if container.get("image") else [Cause.required(f"{at}.image")]
    causes.extend(_lifecycle(container, f"{at}.lifecycle"))
    for key in ("livenessProbe", "startupProbe"):  # then the readiness probe, after the termination policy
        causes.extend(_probe(container, key, at, success_must_be_one=True))
    policy = container.get("terminationMessagePolicy")
    if not policy:
        causes.append(Cause.required(f"{at}.terminationMessagePolicy", TERMINATION_MESSAGE_RULE))
    elif policy not in TERMINATION_MESSAGE_POLICIES:
        causes.append(Cause.invalid(f"{at}.terminationMessagePolicy", go_quote(str(policy)),
                                    TERMINATION_MESSAGE_RULE))
    causes.extend(_probe(container, "readinessProbe", at, success_must_be_one=False))
    causes.extend(_ports(container, f"{at}.ports"))
    causes.extend(env_causes(container, f"{at}.env"))
    causes.extend(env_from_causes(container, f"{at}.envFrom"))
    causes.extend(mount_causes(container, f"{at}.volumeMounts", volumes))
    causes.extend(device_causes(container, f"{at}.volumeDevices", volumes))
    policy = str(container.get("imagePullPolicy") or "")
    if not policy:
        causes.append(Cause.required(f"{at}.imagePullPolicy"))
    elif policy not in PULL_POLICIES:
        causes.append(Cause.not_supported(f"{at}.imagePullPolicy", go_quote(policy), PULL_POLICIES))
    causes.extend(_resources(child(container, "resources"), f"{at}.resources"))
    causes.extend(container_security_context_causes(container, at))
    return causes


def _host_port_conflicts(containers: list[tuple[int, Mapping[str, Any]]], field: str) -> list[Cause]:
    """``checkHostPortConflicts``: a protocol, host IP and host port used twice."""
    causes: list[Cause] = []
    used: set[str] = set()
    for i, container in containers:
        for j, port in entries(container, "ports"):
            number = go_int(port.get("hostPort"))
            if number == 0:
                continue
            key = f"{port.get('protocol') or ''}/{port.get('hostIP') or ''}/{number}"
            if key in used:
                causes.append(Cause.duplicate(f"{field}[{i}].ports[{j}].hostPort", go_quote(key)))
            used.add(key)
    return causes


def _init_containers(pod: Mapping[str, Any], field: str, volumes: Mapping[str, Mapping[str, Any]]) -> list[Cause]:
    """``validateInitContainers``: each as a container, then its name unique among all containers, and no
    lifecycle hooks or probes (kube prints the refused value as Go's ``%#v``)."""
    containers = entries(pod, "initContainers")
    causes = _containers(containers, field, volumes, init=True) if containers else []
    names = {str(container.get("name") or "") for _, container in entries(pod, "containers")}
    for i, container in containers:
        at, name = f"{field}[{i}]", str(container.get("name") or "")
        if name in names:
            causes.append(Cause.duplicate(f"{at}.name", go_quote(name)))
        if name:
            names.add(name)
        if isinstance(container.get("lifecycle"), Mapping):
            causes.append(Cause.invalid(f"{at}.lifecycle", _go_lifecycle(container["lifecycle"]), INIT_RULE))
        for key in ("livenessProbe", "readinessProbe", "startupProbe"):
            if isinstance(container.get(key), Mapping):
                causes.append(Cause.invalid(f"{at}.{key}", _go_probe(container[key]), INIT_RULE))
    return causes


def _go_pointer(parent: Mapping[str, Any], key: str, kind: str) -> str:
    """``%#v`` of a pointer field: nil, or an address (the dev server's is made up)."""
    return f"(*{kind})({GO_ADDRESS if isinstance(parent.get(key), Mapping) else 'nil'})"


def _go_lifecycle(lifecycle: Mapping[str, Any]) -> str:
    return (f"core.Lifecycle{{PostStart:{_go_pointer(lifecycle, 'postStart', 'core.Handler')}, "
            f"PreStop:{_go_pointer(lifecycle, 'preStop', 'core.Handler')}}}")


def _go_probe(probe: Mapping[str, Any]) -> str:
    """``%#v`` of a 1.20 ``core.Probe`` (its counts as defaulted)."""
    handler = ", ".join(f"{name}:{_go_pointer(probe, key, kind)}" for name, key, kind in (
        ("Exec", "exec", "core.ExecAction"), ("HTTPGet", "httpGet", "core.HTTPGetAction"),
        ("TCPSocket", "tcpSocket", "core.TCPSocketAction")))
    counts = ", ".join(f"{key[0].upper()}{key[1:]}:{go_int(probe.get(key))}" for key in PROBE_COUNTS)
    return f"core.Probe{{Handler:core.Handler{{{handler}}}, {counts}}}"


def _lifecycle(container: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateLifecycle``: each hook given has one handler."""
    lifecycle = child(container, "lifecycle")
    return [cause for key in ("postStart", "preStop") if isinstance(lifecycle.get(key), Mapping)
            for cause in _handler(lifecycle[key], f"{field}.{key}")]


def _probe(container: Mapping[str, Any], key: str, at: str, *, success_must_be_one: bool) -> list[Cause]:
    """``validateProbe``: one handler, counts not negative; a liveness or startup probe succeeds after 1 success."""
    probe = container.get(key)
    if not isinstance(probe, Mapping):
        return []
    field = f"{at}.{key}"
    causes = _handler(probe, field)
    for count in PROBE_COUNTS:
        value = go_int(probe.get(count))
        if value < 0:
            causes.append(Cause.invalid(f"{field}.{count}", str(value), "must be greater than or equal to 0"))
    success = go_int(probe.get("successThreshold"))
    if success_must_be_one and success != 1:
        causes.append(Cause.invalid(f"{field}.successThreshold", str(success), "must be 1"))
    return causes


def _handler(handler: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateHandler``: exactly one of exec, httpGet and tcpSocket (the others named Forbidden), and it valid."""
    given = [kind for kind in HANDLERS if isinstance(handler.get(kind), Mapping)]
    if not given:
        return [Cause.required(field, "must specify a handler type")]
    first, *others = given
    return [*_action(first, handler[first], f"{field}.{first}"),
            *(Cause.forbidden(f"{field}.{kind}", "may not specify more than 1 handler type") for kind in others)]


def _action(kind: str, action: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateExecAction``, ``validateHTTPGetAction`` or ``validateTCPSocketAction``."""
    if kind == "exec":
        return [] if action.get("command") else [Cause.required(f"{field}.command")]
    causes = [Cause.required(f"{field}.path")] if kind == "httpGet" and not action.get("path") else []
    causes.extend(_port_num_or_name(action.get("port"), f"{field}.port"))
    if kind == "httpGet":
        scheme = str(action.get("scheme") or "")
        if scheme not in HTTP_SCHEMES:
            causes.append(Cause.not_supported(f"{field}.scheme", go_quote(scheme), HTTP_SCHEMES))
        for _, header in entries(action, "httpHeaders"):
            name = str(header.get("name") or "")
            causes.extend(Cause.invalid(f"{field}.httpHeaders", go_quote(name), msg)
                          for msg in is_http_header_name(name))
    return causes


def _port_num_or_name(port: Any, field: str) -> list[Cause]:
    """``ValidatePortNumOrName``: a number in range, or an IANA port name."""
    if isinstance(port, str):
        return [Cause.invalid(field, go_quote(port), msg) for msg in is_valid_port_name(port)]
    return port_num_causes(field, go_int(port))


def _ports(container: Mapping[str, Any], field: str) -> list[Cause]:
    """``validateContainerPorts``."""
    causes: list[Cause] = []
    names: set[str] = set()
    for i, port in entries(container, "ports"):
        at = f"{field}[{i}]"
        name = str(port.get("name") or "")
        if name:
            errors = is_valid_port_name(name)
            causes.extend(Cause.invalid(f"{at}.name", go_quote(name), msg) for msg in errors)
            if not errors and name in names:
                causes.append(Cause.duplicate(f"{at}.name", go_quote(name)))
            names.add(name)
        number = go_int(port.get("containerPort"))
        if number == 0:
            causes.append(Cause.required(f"{at}.containerPort"))
        else:
            causes.extend(port_num_causes(f"{at}.containerPort", number))
        host = go_int(port.get("hostPort"))
        if host != 0:
            causes.extend(port_num_causes(f"{at}.hostPort", host))
        protocol = str(port.get("protocol") or "")
        if not protocol:
            causes.append(Cause.required(f"{at}.protocol"))
        elif protocol not in PROTOCOLS:
            causes.append(Cause.not_supported(f"{at}.protocol", go_quote(protocol), PROTOCOLS))
    return causes


def _overcommit_allowed(name: str) -> bool:
    return is_native_resource(name) and not is_hugepage_resource_name(name)


def _resource_name(name: str, field: str) -> list[Cause]:
    """``validateContainerResourceName``: a qualified name, standard when it has no prefix (and one for
    containers), an extended resource's otherwise."""
    causes = [Cause.invalid(field, go_quote(name), msg) for msg in is_qualified_name(name)]
    if "/" not in name:
        if not causes and name not in STANDARD_RESOURCES and not is_hugepage_resource_name(name) and \
                not name.startswith("requests.hugepages-"):
            causes.append(Cause.invalid(field, go_quote(name), "must be a standard resource type or fully qualified"))
        if name not in CONTAINER_RESOURCES and not is_hugepage_resource_name(name):
            causes.append(Cause.invalid(field, go_quote(name), "must be a standard resource for containers"))
    elif not is_native_resource(name) and not is_extended_resource_name(name):
        causes.append(Cause.invalid(field, go_quote(name), "doesn't follow extended resource name standard"))
    return causes


def _amount(name: str, written: Any, field: str) -> tuple[Fraction | None, list[Cause]]:
    """One entry of a resource list: its amount (None if it does not parse: the decoder refused it already) and
    its causes (``validateContainerResourceName``, ``ValidateResourceQuantityValue``'s sign)."""
    causes = _resource_name(name, field)
    try:
        amount = parse_quantity(written)
    except (TypeError, ValueError):
        return None, causes
    if amount < 0:
        causes.append(Cause.invalid(field, go_quote(canonical(written)), "must be greater than or equal to 0"))
    return amount, causes


def _resources(resources: Mapping[str, Any], field: str) -> list[Cause]:
    """``ValidateResourceRequirements``: the limits, then each request (with how it stands to its limit)."""
    causes: list[Cause] = []
    limits: dict[str, Fraction | None] = {}
    for name, written in child(resources, "limits").items():
        limits[str(name)], found = _amount(str(name), written, f"{field}.limits[{name}]")
        causes.extend(found)
    requests = child(resources, "requests")
    for name, written in requests.items():
        amount, found = _amount(str(name), written, f"{field}.requests[{name}]")
        causes.extend(found)
        limit = limits.get(str(name))
        if amount is None:
            continue
        shown = go_quote(canonical(written))
        if str(name) in limits:
            if limit is not None and amount != limit and not _overcommit_allowed(str(name)):
                causes.append(Cause.invalid(f"{field}.requests", shown, f"must be equal to {name} limit"))
            elif limit is not None and amount > limit:
                causes.append(Cause.invalid(f"{field}.requests", shown, f"must be less than or equal to {name} limit"))
        elif not _overcommit_allowed(str(name)):
            causes.append(Cause.required(f"{field}.limits", "Limit must be set for non overcommitable resources"))
    named = [*limits, *map(str, requests)]
    if any(is_hugepage_resource_name(n) for n in named) and not any(n in (RESOURCE_CPU, RESOURCE_MEMORY)
                                                                     for n in named):
        causes.append(Cause.forbidden(field, "HugePages require cpu or memory"))
    return causes


__all__ = ["RESTART_POLICIES", "pod_spec_causes"]
