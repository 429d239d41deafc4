"""Service cluster IPs and node ports, allocated on write as kube-apiserver's Service REST does.

kube-apiserver gives every non-ExternalName Service a cluster IP from ``--service-cluster-ip-range``
(kube's default ``10.96.0.0/12``) and every NodePort/LoadBalancer port a node port from
``--service-node-port-range`` (30000-32767); clients (kubectl, controllers, DNS add-ons) rely on
both being there. The used sets are derived from the stored Services at each allocation, not
kept as separate state: a delete releases, and a restart on a data directory recovers them for
free. Messages are kube's (``pkg/registry/core/service/storage/alloc.go``, ``ipallocator``,
``portallocator`` and ``ValidateServiceUpdate``). A LoadBalancer with ``externalTrafficPolicy: Local`` also gets a
``healthCheckNodePort``; once allocated, the traffic fields' combination is checked, as kube's storage does.
"""

from __future__ import annotations

import ipaddress
import json
import random
from typing import Any

from controller_manager import objects
from controller_manager.objects import MutableObj
from kube_api.validation import go_quote

from . import errors
from .errors import Cause
from .resources import ResourceType
from .service_validation import VALID_IP_HINT, needs_health_check, service_causes, traffic_combination_causes
from .store import Store
from .validation import spec_check_mutator

SERVICES_KEY = "/services"
SERVICE_CIDR = ipaddress.IPv4Network("10.96.0.0/12")
NODE_PORTS = range(30000, 32768)
NODE_PORT_TYPES = ("NodePort", "LoadBalancer")


def _go_json(value: Any) -> str:
    """A bad value as kube's field errors print non-scalar values (JSON, no spaces)."""
    return json.dumps(value, separators=(",", ":"))


def _needs_cluster_ip(spec: MutableObj) -> bool:
    return spec.get("type") != "ExternalName"


def _needs_node_ports(spec: MutableObj) -> bool:
    return spec.get("type") in NODE_PORT_TYPES


def _ports(spec: MutableObj) -> list[MutableObj]:
    return [p for p in spec.get("ports") or [] if isinstance(p, dict)]


class ServiceAllocator:
    """Allocates from one IPv4 service range and one node-port range; a store mutator on services."""

    def __init__(self, store: Store, cidr: ipaddress.IPv4Network = SERVICE_CIDR,
                 node_ports: range = NODE_PORTS, rng: random.Random | None = None) -> None:
        self.store = store
        self.cidr = cidr
        self.node_ports = node_ports
        self._rng = rng or random.Random()
        # Usable addresses exclude the network and broadcast addresses, like kube's ipallocator.
        self._first = int(cidr.network_address) + 1
        self._size = cidr.num_addresses - 2
        # kube reserves a low band for static requests and allocates dynamically above it first.
        self._band = min(max(16, self._size // 16), 256)

    # ----------------------------------------------------------------- used sets

    def _others(self, own: tuple[str, str]) -> list[MutableObj]:
        specs = []
        for stored in self.store.items(SERVICES_KEY):
            if (stored.namespace, stored.name) != own and isinstance(stored.obj.get("spec"), dict):
                specs.append(stored.obj["spec"])
        return specs

    def used_ips(self, own: tuple[str, str] = ("", "")) -> set[str]:
        """Cluster IPs held by stored Services other than ``own`` (namespace, name)."""
        return {ip for spec in self._others(own) for ip in (spec.get("clusterIPs") or [spec.get("clusterIP")])
                if isinstance(ip, str) and ip and ip != "None"}

    def used_node_ports(self, own: tuple[str, str] = ("", "")) -> set[int]:
        """Node ports (and health-check node ports) held by stored Services other than ``own``."""
        used: set[int] = set()
        for spec in self._others(own):
            used.update(p["nodePort"] for p in _ports(spec) if isinstance(p.get("nodePort"), int))
            if isinstance(spec.get("healthCheckNodePort"), int):
                used.add(spec["healthCheckNodePort"])
        return used

    # ----------------------------------------------------------------- the mutator

    def prepare(self, _rtype: ResourceType, old: MutableObj | None, new: MutableObj) -> None:
        """Before validation, as kube's ``PrepareForUpdate``: an update keeps what it omits of the allocation,
        and drops the node ports a change of type no longer needs (:meth:`_keep_allocated`)."""
        spec, old_spec = new.get("spec"), (old or {}).get("spec")
        if isinstance(spec, dict) and isinstance(old_spec, dict):
            self._keep_allocated(old_spec, spec)
        if isinstance(spec, dict):
            self._normalize_cluster_ips(spec)  # a headless Service named by clusterIPs alone is headless

    def mutate(self, rtype: ResourceType, old: MutableObj | None, new: MutableObj) -> None:
        """Fill in (or keep) what kube allocates; 422 with kube's messages when a request cannot be honoured.
        Runs after :meth:`prepare` (the cluster IPs normalized there) and the validation."""
        spec = new.get("spec")
        if not isinstance(spec, dict):
            return
        own = (objects.namespace(new), objects.name(new))
        old_spec = (old or {}).get("spec") if old is not None else None
        previous = old_spec if isinstance(old_spec, dict) else None
        if previous is not None:
            self._check_immutable(rtype, own[1], previous, spec)
        if _needs_cluster_ip(spec):
            self._ip_families(rtype, own[1], previous, spec)
            if spec.get("clusterIP") != "None" and not (previous is not None and previous.get("clusterIP")
                                                        and _needs_cluster_ip(previous)):
                self._allocate_ip(rtype, own, spec)
            if _needs_node_ports(spec):
                self._allocate_node_ports(rtype, own, previous, spec)
        if previous is not None and previous.get("type") in NODE_PORT_TYPES and not _needs_node_ports(spec):
            spec.pop("externalTrafficPolicy", None)  # kube's externalTrafficPolicyUpdate: no longer effective
        self._health_check_node_port(rtype, own, previous, spec)
        causes = traffic_combination_causes(spec)
        if causes:
            raise errors.invalid(rtype.kind, rtype.group, own[1], causes)

    def _health_check_node_port(self, rtype: ResourceType, own: tuple[str, str], old: MutableObj | None,
                                spec: MutableObj) -> None:
        """kube's ``healthCheckNodePortUpdate``: a LoadBalancer with ``externalTrafficPolicy: Local`` gets a node
        port for its health check, keeps it (an update that omits it keeps it; one that changes it is refused),
        and gives it back once it no longer needs one."""
        needed, needs = old is not None and needs_health_check(old), needs_health_check(spec)
        if needed and not needs:
            spec.pop("healthCheckNodePort", None)
        elif needed and needs and (old or {}).get("healthCheckNodePort"):
            assert old is not None
            if not spec.get("healthCheckNodePort"):
                spec["healthCheckNodePort"] = old["healthCheckNodePort"]
            elif spec["healthCheckNodePort"] != old["healthCheckNodePort"]:
                raise errors.invalid(rtype.kind, rtype.group, own[1], [Cause.invalid(
                    "spec.healthCheckNodePort", str(spec["healthCheckNodePort"]), "cannot change healthCheckNodePort "
                    "on loadBalancer service with externalTraffic=Local during update")])
        elif needs:  # newly needed (or stored without one by an earlier version): a requested port, or any free one
            taken = self.used_node_ports(own) | {p["nodePort"] for p in _ports(spec)
                                                 if isinstance(p.get("nodePort"), int)}
            requested = spec.get("healthCheckNodePort")
            if not requested:
                spec["healthCheckNodePort"] = self._next_port(taken)
            elif (problem := self._port_problem(requested, taken)) is not None:
                raise errors.internal_error(f"failed to allocate requested HealthCheck NodePort {requested}: {problem}")

    @staticmethod
    def _keep_allocated(old: MutableObj, new: MutableObj) -> None:
        """An update that omits allocated values keeps them (kube's patchAllocatedValues), so PUT/apply work."""
        if _needs_cluster_ip(old) and _needs_cluster_ip(new):
            if not new.get("clusterIP"):
                new["clusterIP"] = old.get("clusterIP")
                if not new.get("clusterIPs"):
                    new["clusterIPs"] = old.get("clusterIPs")
            for key in ("ipFamilies", "ipFamilyPolicy"):
                if not new.get(key) and old.get(key):
                    new[key] = old[key]
            for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                if new.get(key) is None:
                    new.pop(key, None)
        if _needs_node_ports(old) and _needs_node_ports(new):
            by_name = {p.get("name"): p.get("nodePort") for p in _ports(old)}
            taken = {p.get("nodePort") for p in _ports(new)}
            for port in _ports(new):
                value = by_name.get(port.get("name"))
                if not port.get("nodePort") and isinstance(value, int) and value not in taken:
                    port["nodePort"] = value
        elif _needs_node_ports(old):
            # kube's dropTypeDependentFields: leaving NodePort/LoadBalancer releases untouched node ports.
            old_ports = {p.get("nodePort") for p in _ports(old)}
            for port in _ports(new):
                if port.get("nodePort") in old_ports:
                    port.pop("nodePort", None)
        if _needs_cluster_ip(old) and not _needs_cluster_ip(new) and new.get("clusterIP") == old.get("clusterIP"):
            for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                new.pop(key, None)

    @staticmethod
    def _check_immutable(rtype: ResourceType, name: str, old: MutableObj, new: MutableObj) -> None:
        """ValidateServiceUpdate: a set clusterIP never changes while the Service keeps needing one."""
        if (_needs_cluster_ip(new) and _needs_cluster_ip(old) and old.get("clusterIP")
                and new.get("clusterIP") != old.get("clusterIP")):
            ips = new.get("clusterIPs") if new.get("clusterIPs") != old.get("clusterIPs") else None
            shown = ", ".join(go_quote(str(ip)) for ip in (ips or [new.get("clusterIP") or ""]))
            raise errors.invalid(rtype.kind, rtype.group, name, [Cause(
                "FieldValueInvalid", f"Invalid value: []string{{{shown}}}: may not change once set",
                "spec.clusterIPs[0]")])

    @staticmethod
    def _normalize_cluster_ips(spec: MutableObj) -> None:
        """clusterIP and clusterIPs[0] mirror each other when only one is given (kube's strategy)."""
        ips = spec.get("clusterIPs")
        if spec.get("clusterIP") and not ips:
            spec["clusterIPs"] = [spec["clusterIP"]]
        elif isinstance(ips, list) and ips and not spec.get("clusterIP"):
            spec["clusterIP"] = ips[0]

    @staticmethod
    def _ip_families(rtype: ResourceType, name: str, old: MutableObj | None, spec: MutableObj) -> None:
        """initIPFamilyFields for a single-stack IPv4 cluster."""
        headless_selectorless = spec.get("clusterIP") == "None" and not spec.get("selector")
        if not spec.get("ipFamilyPolicy"):
            if old is not None and old.get("ipFamilyPolicy"):
                spec["ipFamilyPolicy"] = old["ipFamilyPolicy"]
            else:
                spec["ipFamilyPolicy"] = "RequireDualStack" if headless_selectorless else "SingleStack"
        families = spec.get("ipFamilies") or []
        if headless_selectorless:
            families = families or ["IPv4"]
            if len(families) < 2 and spec["ipFamilyPolicy"] != "SingleStack":
                families = [*families, "IPv6" if families[0] == "IPv4" else "IPv4"]
            spec["ipFamilies"] = families
            return
        causes = []
        if spec["ipFamilyPolicy"] == "RequireDualStack":
            causes.append(Cause("FieldValueInvalid", 'Invalid value: "RequireDualStack": this cluster is not '
                                "configured for dual-stack services", "spec.ipFamilyPolicy"))
        for i, family in enumerate(families):
            if family != "IPv4":
                causes.append(Cause("FieldValueInvalid", f"Invalid value: {_go_json(family)}: not configured on "
                                    "this cluster", f"spec.ipFamilies[{i}]"))
        if causes:
            raise errors.invalid(rtype.kind, rtype.group, name, causes)
        spec["ipFamilies"] = families or ["IPv4"]

    def _allocate_ip(self, rtype: ResourceType, own: tuple[str, str], spec: MutableObj) -> None:
        requested = spec.get("clusterIP")
        used = self.used_ips(own)
        if requested:
            ips = spec.get("clusterIPs") or [requested]
            try:
                address = ipaddress.ip_address(requested)
            except ValueError:
                raise errors.invalid(rtype.kind, rtype.group, own[1], [Cause(
                    "FieldValueInvalid", f"Invalid value: {_go_json(requested)}: {VALID_IP_HINT}",
                    "spec.clusterIPs[0]")]) from None
            problem = ""
            if not (self._first <= int(address) < self._first + self._size) or address.version != 4:
                problem = f"provided IP is not in the valid range. The range of valid IPs is {self.cidr}"
            elif str(address) in used:
                problem = "provided IP is already allocated"
            if problem:
                raise errors.invalid(rtype.kind, rtype.group, own[1], [Cause(
                    "FieldValueInvalid",
                    f"Invalid value: {_go_json(ips)}: failed to allocate IP {requested}: {problem}",
                    "spec.clusterIPs")])
            ip = str(address)
        else:
            ip = self._next_ip(used)
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]

    def _next_ip(self, used: set[str]) -> str:
        """A random free address, above the static band first; never the first (the ``kubernetes`` Service's)."""
        for low, high in ((self._band, self._size), (1, self._band)):
            if high <= low:
                continue
            for _ in range(64):
                candidate = str(ipaddress.IPv4Address(self._first + self._rng.randrange(low, high)))
                if candidate not in used:
                    return candidate
            for offset in range(low, high):  # nearly full: scan
                candidate = str(ipaddress.IPv4Address(self._first + offset))
                if candidate not in used:
                    return candidate
        raise errors.internal("failed to allocate a serviceIP: range is full")

    def _allocate_node_ports(self, rtype: ResourceType, own: tuple[str, str], old: MutableObj | None,
                             spec: MutableObj) -> None:
        """initNodePorts/updateNodePorts: honour requested ports, allocate the rest (unless the LB opts out)."""
        used = self.used_node_ports(own)
        if isinstance(spec.get("healthCheckNodePort"), int):  # this Service's own, kept or requested
            used.add(spec["healthCheckNodePort"])
        mine = {p.get("nodePort") for p in _ports(old)} if old is not None and _needs_node_ports(old) else set()
        allocate = spec.get("type") != "LoadBalancer" or spec.get("allocateLoadBalancerNodePorts") is not False
        by_port: dict[Any, int] = {}
        taken: set[int] = set()
        for i, port in enumerate(_ports(spec)):
            value = port.get("nodePort")
            if isinstance(value, int) and value:
                if value not in mine and value not in taken:
                    problem = self._port_problem(value, used)
                    if problem is not None:
                        raise errors.invalid(rtype.kind, rtype.group, own[1], [
                            Cause.invalid(f"spec.ports[{i}].nodePort", str(value), problem)])
                taken.add(value)
                by_port.setdefault(port.get("port"), value)
        for port in _ports(spec):
            if port.get("nodePort") or not allocate:
                continue
            value = by_port.get(port.get("port")) or self._next_port(used | taken)
            port["nodePort"] = value
            taken.add(value)
            by_port.setdefault(port.get("port"), value)

    def _port_problem(self, port: Any, used: set[int]) -> str | None:
        """The port allocator's refusal of a requested node port (None: it can be had)."""
        if port not in self.node_ports:
            return (f"provided port is not in the valid range. The range of valid ports is "
                    f"{self.node_ports.start}-{self.node_ports.stop - 1}")
        return "provided port is already allocated" if port in used else None

    def _next_port(self, used: set[int]) -> int:
        free = [p for p in self.node_ports if p not in used]
        if not free:
            raise errors.internal("failed to allocate a nodePort: range is full")
        return self._rng.choice(free)


def install(store: Store) -> ServiceAllocator:
    """Allocate on every Service write; registered after the Service defaulter (type must be set)."""
    allocator = ServiceAllocator(store)
    # kube prepares an update, validates, then allocates: a refused spec takes nothing
    store.mutators.setdefault(SERVICES_KEY, []).append(allocator.prepare)
    store.mutators[SERVICES_KEY].append(spec_check_mutator(service_causes))
    store.mutators[SERVICES_KEY].append(allocator.mutate)
    return allocator
