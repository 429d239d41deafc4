"""kube's validation of a Service spec (``ValidateService``), run after its defaults and before its allocation.

The dev server allocated cluster IPs and node ports (:mod:`.services`) but stored any spec: a Service with no
ports, an unknown type or protocol, a port out of range, two unnamed ports, a node port on a ClusterIP Service.
A real kube-apiserver refuses each with 422 before it allocates anything; these are its causes, in its order,
with kube 1.20's messages (each checked on the refplane). ``externalTrafficPolicy`` and ``healthCheckNodePort``
are checked here for their values; whether the Service's type allows them is checked after the allocation
(:func:`traffic_combination_causes`), as kube's REST storage does. Not covered: ``topologyKeys``,
``appProtocol``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Final

from kube_api.validation import (
    go_quote,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_port_name,
)

from .errors import Cause
from .validation import child, go_int, parse_go_ip, port_num_causes, validate_labels

SERVICE_TYPES: Final = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES: Final = ("ClientIP", "None")
PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
KUBELET_PORT: Final = 10250
TRAFFIC_POLICIES: Final = ("Cluster", "Local")
MAX_AFFINITY_SECONDS: Final = 86400
SOURCE_RANGES_ANNOTATION: Final = "service.beta.kubernetes.io/load-balancer-source-ranges"
VALID_IP_HINT: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
LINK_LOCAL_MULTICAST_V4: Final = ipaddress.ip_network("224.0.0.0/24")


def _service_port(port: Mapping[str, Any], field: str, *, name_required: bool, names: set[str]) -> list[Cause]:
    """``validateServicePort``: the name (required when there are several), the port, the protocol, the
    target port (a number or an IANA name)."""
    causes: list[Cause] = []
    name = str(port.get("name") or "")
    if name_required and not name:
        causes.append(Cause.required(f"{field}.name"))
    elif name:
        causes.extend(Cause.invalid(f"{field}.name", go_quote(name), msg) for msg in is_dns1123_label(name))
        if name in names:
            causes.append(Cause.duplicate(f"{field}.name", go_quote(name)))
        names.add(name)
    causes.extend(port_num_causes(f"{field}.port", go_int(port.get("port"))))
    protocol = str(port.get("protocol") or "")
    if not protocol:
        causes.append(Cause.required(f"{field}.protocol"))
    elif protocol not in PROTOCOLS:
        causes.append(Cause.not_supported(f"{field}.protocol", go_quote(protocol), PROTOCOLS))
    target = port.get("targetPort")
    if isinstance(target, str):
        causes.extend(Cause.invalid(f"{field}.targetPort", go_quote(target), msg) for msg in is_valid_port_name(target))
    else:
        causes.extend(port_num_causes(f"{field}.targetPort", go_int(target)))
    return causes


def _go_service_port(port: Mapping[str, Any]) -> str:
    """``%#v`` of the ``core.ServicePort`` kube compares ports by (protocol and port only)."""
    return (f"core.ServicePort{{Name:\"\", Protocol:{go_quote(str(port.get('protocol') or ''))}, "
            f"AppProtocol:(*string)(nil), Port:{go_int(port.get('port'))}, "
            "TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}, NodePort:0}")


def service_causes(_old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[Cause]:
    """Every cause ``ValidateService`` reports for the spec that is covered here, in its order."""
    raw = new.get("spec")
    spec: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    kind = str(spec.get("type") or "")
    headless = spec.get("clusterIP") == "None"
    ports = [p for p in spec.get("ports") or [] if isinstance(p, Mapping)]
    causes: list[Cause] = []
    if not ports and not headless and kind != "ExternalName":
        causes.append(Cause.required("spec.ports"))
    if kind == "LoadBalancer":
        causes.extend(Cause.invalid(f"spec.ports[{i}]", str(KUBELET_PORT),
                               f"may not expose port {KUBELET_PORT} externally since it is used by kubelet")
                      for i, p in enumerate(ports) if go_int(p.get("port")) == KUBELET_PORT)
    if kind in ("LoadBalancer", "NodePort") and headless:
        causes.append(Cause.invalid("spec.clusterIPs[0]", '"None"', f"may not be set to 'None' for {kind} services"))
    if kind == "ExternalName":
        cname = str(spec.get("externalName") or "").removesuffix(".")
        if cname:
            causes.extend(Cause.invalid("spec.externalName", go_quote(cname), msg)
                          for msg in is_dns1123_subdomain(cname))
        else:
            causes.append(Cause.required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        causes.extend(_service_port(port, f"spec.ports[{i}]", name_required=len(ports) > 1, names=names))
    if spec.get("selector") is not None:
        causes.extend(validate_labels(spec.get("selector"), "spec.selector"))
    affinity = str(spec.get("sessionAffinity") or "")
    if not affinity:
        causes.append(Cause.required("spec.sessionAffinity"))
    elif affinity not in SESSION_AFFINITIES:
        causes.append(Cause.not_supported("spec.sessionAffinity", go_quote(affinity), SESSION_AFFINITIES))
    elif affinity == "ClientIP":
        causes.extend(_affinity_timeout(spec))
    for i, ip in enumerate(spec.get("externalIPs") or []):
        text = "" if ip is None else str(ip)  # a null element decodes to Go's ""
        causes.extend(Cause.invalid(f"spec.externalIPs[{i}]", go_quote(text), msg) for msg in _external_ip_errors(text))
    if not kind:
        causes.append(Cause.required("spec.type"))
    elif kind not in SERVICE_TYPES:
        causes.append(Cause.not_supported("spec.type", go_quote(kind), SERVICE_TYPES))
    if kind == "ClusterIP":
        causes.extend(Cause.forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'")
                      for i, p in enumerate(ports) if p.get("nodePort"))
    seen: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        key = (str(port.get("protocol") or ""), go_int(port.get("port")))
        if key in seen:
            causes.append(Cause.duplicate(f"spec.ports[{i}]", _go_service_port(port)))
        seen.add(key)
    causes.extend(_source_ranges(new, spec, kind))
    policy = str(spec.get("externalTrafficPolicy") or "")
    if policy and policy not in TRAFFIC_POLICIES:
        causes.append(Cause.invalid("spec.externalTrafficPolicy", go_quote(policy),
                                    "ExternalTrafficPolicy must be empty, Cluster or Local"))
    health = go_int(spec.get("healthCheckNodePort"))
    if health < 0:
        causes.append(Cause.invalid("spec.healthCheckNodePort", str(health), "HealthCheckNodePort must be not less "
                                                                                 "than 0"))
    return causes


def needs_health_check(spec: Mapping[str, Any]) -> bool:
    """``NeedsHealthCheck``: a LoadBalancer whose external traffic stays on the node it reaches."""
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def traffic_combination_causes(spec: Mapping[str, Any]) -> list[Cause]:
    """``ValidateServiceExternalTrafficFieldsCombination``, which kube's Service storage runs after allocating
    (so only once everything else was valid): a traffic policy only on node-port types, a health-check node port
    only where :func:`needs_health_check`."""
    causes: list[Cause] = []
    policy = str(spec.get("externalTrafficPolicy") or "")
    if policy and spec.get("type") not in ("LoadBalancer", "NodePort"):
        causes.append(Cause.invalid("spec.externalTrafficPolicy", go_quote(policy),
                                    "ExternalTrafficPolicy can only be set on NodePort and LoadBalancer service"))
    health = go_int(spec.get("healthCheckNodePort"))
    if health and not needs_health_check(spec):
        causes.append(Cause.invalid("spec.healthCheckNodePort", str(health), "HealthCheckNodePort can only be set "
                                                                                 "on LoadBalancer service with "
                                                                                 "ExternalTrafficPolicy=Local"))
    return causes


def _affinity_timeout(spec: Mapping[str, Any]) -> list[Cause]:
    """``validateClientIPAffinityConfig`` once defaulted (the timeout is always there): 1 to 86,400 seconds."""
    timeout = child(child(spec, "sessionAffinityConfig"), "clientIP").get("timeoutSeconds")
    if isinstance(timeout, int) and not 0 < timeout <= MAX_AFFINITY_SECONDS:  # the message says "less than"
        return [Cause.invalid("spec.sessionAffinityConfig.clientIP.timeoutSeconds", str(timeout),
                              f"must be greater than 0 and less than {MAX_AFFINITY_SECONDS}")]
    return []


def _external_ip_errors(text: str) -> list[str]:
    """``IsValidIP``, then ``ValidateNonSpecialIP``."""
    ip = parse_go_ip(text)
    if ip is None:
        return [VALID_IP_HINT]
    errs = []
    if ip.is_unspecified:
        errs.append("may not be unspecified (0.0.0.0)")
    if ip.is_loopback:
        errs.append("may not be in the loopback range (127.0.0.0/8)")
    if ip.is_link_local:
        errs.append("may not be in the link-local range (169.254.0.0/16)")
    if _link_local_multicast(ip):
        errs.append("may not be in the link-local multicast range (224.0.0.0/24)")
    return errs


def _link_local_multicast(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Go's ``IsLinkLocalMulticast``: 224.0.0.0/24, or an IPv6 multicast address of link-local scope (ffX2::)."""
    if ip.version == 4:
        return ip in LINK_LOCAL_MULTICAST_V4
    first, second = ip.packed[:2]
    return first == 0xFF and second & 0x0F == 0x02


def _source_ranges(service: Mapping[str, Any], spec: Mapping[str, Any], kind: str) -> list[Cause]:
    """``loadBalancerSourceRanges`` (or, without it, kube's annotation): only on a LoadBalancer, each a CIDR
    (``GetLoadBalancerSourceRanges``: the spaces around each trimmed)."""
    ranges = spec.get("loadBalancerSourceRanges")
    annotations = (service.get("metadata") or {}).get("annotations") or {}
    if isinstance(ranges, list) and ranges:
        field, shown, items = "spec.LoadBalancerSourceRanges", "[" + " ".join(map(str, ranges)) + "]", ranges
    elif SOURCE_RANGES_ANNOTATION in annotations:
        raw = str(annotations[SOURCE_RANGES_ANNOTATION])
        field, shown = f"metadata.annotations[{SOURCE_RANGES_ANNOTATION}]", raw
        items = (raw.strip() or "0.0.0.0/0").split(",")
    else:
        return []
    causes: list[Cause] = []
    if kind != "LoadBalancer":
        causes.append(Cause.forbidden(field, "may only be used when `type` is 'LoadBalancer'"))
    if not all(_is_cidr(str(item).strip()) for item in items):
        causes.append(Cause.invalid(field, go_quote(shown), "must be a list of IP ranges. For example, "
                                                            "10.240.0.0/24,10.250.0.0/24 "))
    return causes


def _is_cidr(text: str) -> bool:
    """Go's ``net.ParseCIDR``: an address (host bits allowed), a slash, a prefix length in range."""
    address, slash, length = text.partition("/")
    longest = 128 if ":" in address else 32  # an IPv4-mapped IPv6 address takes an IPv6 prefix
    return (bool(slash) and length.isascii() and length.isdigit() and parse_go_ip(address) is not None
            and int(length) <= longest)


__all__ = ["PROTOCOLS", "SERVICE_TYPES", "SESSION_AFFINITIES", "needs_health_check", "service_causes",
           "traffic_combination_causes"]
