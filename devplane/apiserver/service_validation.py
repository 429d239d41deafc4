"""kube's validation of a Service spec (``ValidateService``), run after its defaults and before its allocation.

The dev server allocated cluster IPs and node ports (:mod:`.services`) but stored any spec: a Service with no
ports, an unknown type or protocol, a port out of range, two unnamed ports, a node port on a ClusterIP Service.
A real kube-apiserver refuses each with 422 before it allocates anything; these are its causes, in its order,
with kube 1.20's messages (each checked on the refplane). Not covered: ``sessionAffinityConfig``,
``externalTrafficPolicy`` and its health-check port, ``loadBalancerSourceRanges``, ``externalIPs``,
``topologyKeys``, ``appProtocol``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kube_api.validation import (
    go_quote,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_port_name,
    is_valid_port_num,
)

from .errors import Cause
from .validation import validate_labels

SERVICE_TYPES: Final = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES: Final = ("ClientIP", "None")
PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
KUBELET_PORT: Final = 10250


def _port_number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _port_number_errors(field: str, value: int) -> list[Cause]:
    return [Cause.invalid(field, str(value), msg) for msg in is_valid_port_num(value)]


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
            causes.append(Cause("FieldValueDuplicate", f"Duplicate value: {go_quote(name)}", f"{field}.name"))
        names.add(name)
    causes.extend(_port_number_errors(f"{field}.port", _port_number(port.get("port"))))
    protocol = str(port.get("protocol") or "")
    if not protocol:
        causes.append(Cause.required(f"{field}.protocol"))
    elif protocol not in PROTOCOLS:
        causes.append(Cause.not_supported(f"{field}.protocol", go_quote(protocol), PROTOCOLS))
    target = port.get("targetPort")
    if isinstance(target, str):
        causes.extend(Cause.invalid(f"{field}.targetPort", go_quote(target), msg) for msg in is_valid_port_name(target))
    else:
        causes.extend(_port_number_errors(f"{field}.targetPort", _port_number(target)))
    return causes


def _go_service_port(port: Mapping[str, Any]) -> str:
    """``%#v`` of the ``core.ServicePort`` kube compares ports by (protocol and port only)."""
    return (f"core.ServicePort{{Name:\"\", Protocol:{go_quote(str(port.get('protocol') or ''))}, "
            f"AppProtocol:(*string)(nil), Port:{_port_number(port.get('port'))}, "
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
                      for i, p in enumerate(ports) if _port_number(p.get("port")) == KUBELET_PORT)
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
    if not kind:
        causes.append(Cause.required("spec.type"))
    elif kind not in SERVICE_TYPES:
        causes.append(Cause.not_supported("spec.type", go_quote(kind), SERVICE_TYPES))
    if kind == "ClusterIP":
        causes.extend(Cause.forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'")
                      for i, p in enumerate(ports) if p.get("nodePort"))
    seen: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        key = (str(port.get("protocol") or ""), _port_number(port.get("port")))
        if key in seen:
            causes.append(Cause("FieldValueDuplicate", f"Duplicate value: {_go_service_port(port)}",
                                f"spec.ports[{i}]"))
        seen.add(key)
    return causes


__all__ = ["PROTOCOLS", "SERVICE_TYPES", "SESSION_AFFINITIES", "service_causes"]
