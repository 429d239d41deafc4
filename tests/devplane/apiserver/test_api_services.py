"""Service cluster IPs and node ports over HTTP: what kube-apiserver allocates and refuses on write.

kube's default range 10.96.0.0/12 and node ports 30000-32767; messages are kube's own
(``alloc.go``, ``ipallocator``, ``ValidateServiceUpdate``).
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from devplane.apiserver.server import ApiServer
from tests.conftest import send

SVCS = "/api/v1/namespaces/default/services"
RANGE = ipaddress.ip_network("10.96.0.0/12")


def service(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"app": name}, "ports": [{"port": 80}], **spec}
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


async def create(http: aiohttp.ClientSession, name: str, **spec: Any) -> dict[str, Any]:
    created = await send(http, "POST", SVCS, service(name, **spec), expect=(201,))
    result: dict[str, Any] = created["spec"]
    return result


async def refused(http: aiohttp.ClientSession, method: str, path: str, body: Any) -> dict[str, Any]:
    return await send(http, method, path, body, expect=(422,))


async def test_create_allocates_a_cluster_ip_and_defaults(http: aiohttp.ClientSession) -> None:
    spec = await create(http, "web")
    ip = ipaddress.ip_address(spec["clusterIP"])
    assert ip in RANGE and ip != ipaddress.ip_address("10.96.0.1")  # .1 is the kubernetes Service's
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    assert (spec["type"], spec["sessionAffinity"], spec["internalTrafficPolicy"]) == ("ClusterIP", "None", "Cluster")
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    got = await send(http, "GET", f"{SVCS}/web")
    assert got["spec"]["clusterIP"] == spec["clusterIP"]


async def test_allocated_ips_are_unique(http: aiohttp.ClientSession) -> None:
    ips = [(await create(http, f"s{i}"))["clusterIP"] for i in range(40)]
    assert len(set(ips)) == len(ips)


async def test_headless_keeps_none(http: aiohttp.ClientSession) -> None:
    spec = await create(http, "headless", clusterIP="None")
    assert spec["clusterIP"] == "None" and spec["clusterIPs"] == ["None"]
    assert spec["ipFamilies"] == ["IPv4"] and spec["ipFamilyPolicy"] == "SingleStack"
    # headless and selectorless: kube's special case asks for both families
    bare = await send(http, "POST", SVCS, {"metadata": {"name": "bare"},
                                           "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}, expect=(201,))
    assert bare["spec"]["ipFamilyPolicy"] == "RequireDualStack"
    assert bare["spec"]["ipFamilies"] == ["IPv4", "IPv6"]


async def test_requested_ip_free_taken_and_out_of_range(http: aiohttp.ClientSession) -> None:
    spec = await create(http, "dns", clusterIP="10.96.0.10")
    assert spec["clusterIP"] == "10.96.0.10" and spec["clusterIPs"] == ["10.96.0.10"]
    taken = await refused(http, "POST", SVCS, service("dns2", clusterIP="10.96.0.10"))
    assert taken["message"] == ('Service "dns2" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.10"]: '
                                "failed to allocate IP 10.96.0.10: provided IP is already allocated")
    assert taken["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.clusterIPs",
                                           "message": 'Invalid value: ["10.96.0.10"]: failed to allocate IP '
                                                      "10.96.0.10: provided IP is already allocated"}]
    outside = await refused(http, "POST", SVCS, service("far", clusterIP="10.0.0.10"))
    assert outside["message"] == ('Service "far" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.10"]: '
                                  "failed to allocate IP 10.0.0.10: provided IP is not in the valid range. "
                                  "The range of valid IPs is 10.96.0.0/12")
    assert await send(http, "GET", SVCS + "/far", expect=(404,))


async def test_cluster_ip_is_immutable_but_omitting_it_keeps_it(http: aiohttp.ClientSession) -> None:
    spec = await create(http, "web")
    ip = spec["clusterIP"]
    current = await send(http, "GET", f"{SVCS}/web")
    current["spec"]["clusterIP"] = "10.96.0.99"
    current["spec"].pop("clusterIPs")
    answer = await refused(http, "PUT", f"{SVCS}/web", current)
    assert answer["message"] == ('Service "web" is invalid: spec.clusterIPs[0]: Invalid value: '
                                 '[]string{"10.96.0.99"}: may not change once set')
    # A PUT without the allocated fields (kubectl replace of a hand-written file) keeps them.
    replaced = await send(http, "PUT", f"{SVCS}/web", service("web", ports=[{"port": 81}]))
    assert replaced["spec"]["clusterIP"] == ip and replaced["spec"]["clusterIPs"] == [ip]
    assert replaced["spec"]["ipFamilyPolicy"] == "SingleStack"
    patched = await send(http, "PATCH", f"{SVCS}/web", {"metadata": {"labels": {"a": "b"}}})
    assert patched["spec"]["clusterIP"] == ip


async def test_delete_releases_the_ip(http: aiohttp.ClientSession) -> None:
    await create(http, "first", clusterIP="10.96.0.20")
    await refused(http, "POST", SVCS, service("second", clusterIP="10.96.0.20"))
    await send(http, "DELETE", f"{SVCS}/first")
    spec = await create(http, "second", clusterIP="10.96.0.20")
    assert spec["clusterIP"] == "10.96.0.20"


async def test_dry_run_allocates_nothing(http: aiohttp.ClientSession) -> None:
    async with http.post(SVCS, json=service("dry", clusterIP="10.96.0.30"), params={"dryRun": "All"}) as r:
        assert r.status == 201
        assert (await r.json())["spec"]["clusterIP"] == "10.96.0.30"
    assert (await create(http, "real", clusterIP="10.96.0.30"))["clusterIP"] == "10.96.0.30"


async def test_external_name_gets_no_cluster_ip(http: aiohttp.ClientSession) -> None:
    created = await send(http, "POST", SVCS, {"metadata": {"name": "ext"},
                                              "spec": {"type": "ExternalName", "externalName": "example.com"}},
                         expect=(201,))
    spec = created["spec"]
    assert "clusterIP" not in spec and "ipFamilies" not in spec and "internalTrafficPolicy" not in spec


async def test_node_ports(http: aiohttp.ClientSession) -> None:
    spec = await create(http, "np", type="NodePort", ports=[{"name": "a", "port": 80}, {"name": "b", "port": 81}])
    ports = [p["nodePort"] for p in spec["ports"]]
    assert all(30000 <= p <= 32767 for p in ports) and len(set(ports)) == 2
    assert spec["externalTrafficPolicy"] == "Cluster"
    taken = await refused(http, "POST", SVCS, service("np2", type="NodePort",
                                                      ports=[{"port": 80, "nodePort": ports[0]}]))
    assert taken["message"] == (f'Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: {ports[0]}: '
                                "provided port is already allocated")
    outside = await refused(http, "POST", SVCS, service("np3", type="NodePort", ports=[{"port": 80, "nodePort": 80}]))
    assert outside["message"] == ('Service "np3" is invalid: spec.ports[0].nodePort: Invalid value: 80: provided '
                                  "port is not in the valid range. The range of valid ports is 30000-32767")
    lb = await create(http, "lb", type="LoadBalancer")
    assert lb["allocateLoadBalancerNodePorts"] is True and 30000 <= lb["ports"][0]["nodePort"] <= 32767
    # a PUT that omits node ports keeps them; going back to ClusterIP releases them
    kept = await send(http, "PUT", f"{SVCS}/np", service("np", type="NodePort",
                                                         ports=[{"name": "a", "port": 80}, {"name": "b", "port": 81}]))
    assert [p["nodePort"] for p in kept["spec"]["ports"]] == ports
    back = await send(http, "PUT", f"{SVCS}/np", {**kept, "spec": {**kept["spec"], "type": "ClusterIP"}})
    assert all("nodePort" not in p for p in back["spec"]["ports"])
    again = await create(http, "np4", type="NodePort", ports=[{"port": 80, "nodePort": ports[0]}])
    assert again["ports"][0]["nodePort"] == ports[0]


async def test_allocations_survive_a_restart(tmp_path: Path) -> None:
    async with ApiServer(data_dir=tmp_path) as srv, aiohttp.ClientSession(base_url=srv.url) as http:
        await create(http, "kept", clusterIP="10.96.0.40", type="NodePort", ports=[{"port": 80, "nodePort": 30040}])
    async with ApiServer(data_dir=tmp_path) as srv, aiohttp.ClientSession(base_url=srv.url) as http:
        await refused(http, "POST", SVCS, service("again", clusterIP="10.96.0.40"))
        await refused(http, "POST", SVCS, service("port", type="NodePort", ports=[{"port": 80, "nodePort": 30040}]))


PORT_RANGE = "must be between 1 and 65535, inclusive"
SERVICE_CASES = [
    ({"type": "Bogus"}, [("spec.type", 'Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName", '
                                       '"LoadBalancer", "NodePort"')]),
    ({"ports": []}, [("spec.ports", "Required value")]),
    ({"ports": [{"port": 70000, "targetPort": 0}]}, [  # a target port 0 is unset: the port's
        ("spec.ports[0].port", f"Invalid value: 70000: {PORT_RANGE}"),
        ("spec.ports[0].targetPort", f"Invalid value: 70000: {PORT_RANGE}")]),
    ({"ports": [{"port": 80}, {"port": 81}]}, [("spec.ports[0].name", "Required value"),
                                              ("spec.ports[1].name", "Required value")]),
    ({"ports": [{"port": 80, "name": "a"}, {"port": 80, "name": "a"}]}, [
        ("spec.ports[1].name", 'Duplicate value: "a"'),
        ("spec.ports[1]", 'Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), '
                          'Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}')]),
    ({"ports": [{"port": 80, "protocol": "XTP"}]}, [
        ("spec.ports[0].protocol", 'Unsupported value: "XTP": supported values: "SCTP", "TCP", "UDP"')]),
    ({"ports": [{"port": 80, "nodePort": 30080}]}, [
        ("spec.ports[0].nodePort", "Forbidden: may not be used when `type` is 'ClusterIP'")]),
    ({"sessionAffinity": "Sticky"}, [
        ("spec.sessionAffinity", 'Unsupported value: "Sticky": supported values: "ClientIP", "None"')]),
    ({"type": "NodePort", "clusterIP": "None"}, [
        ("spec.clusterIPs[0]", "Invalid value: \"None\": may not be set to 'None' for NodePort services")]),
    ({"type": "ExternalName", "ports": None, "selector": None}, [("spec.externalName", "Required value")]),
    ({"ports": [{"port": 80, "targetPort": "Very--Long-Name-Here"}]}, [
        ("spec.ports[0].targetPort", 'Invalid value: "Very--Long-Name-Here": must be no more than 15 characters'),
        ("spec.ports[0].targetPort", 'Invalid value: "Very--Long-Name-Here": must contain only alpha-numeric '
                                     "characters (a-z, 0-9), and hyphens (-)"),
        ("spec.ports[0].targetPort", 'Invalid value: "Very--Long-Name-Here": must not contain consecutive hyphens')]),
    ({"sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 0}},
      "externalIPs": ["bogus", "127.0.0.1", "::ffff:169.254.1.1", "ff02::1", "10.1.1.1"], "type": "Bogus",
      "loadBalancerSourceRanges": ["x"], "externalTrafficPolicy": "Weird", "healthCheckNodePort": -1}, [
        ("spec.sessionAffinityConfig.clientIP.timeoutSeconds",
         "Invalid value: 0: must be greater than 0 and less than 86400"),
        ("spec.externalIPs[0]",
         'Invalid value: "bogus": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)'),
        ("spec.externalIPs[1]", 'Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8)'),
        ("spec.externalIPs[2]",
         'Invalid value: "::ffff:169.254.1.1": may not be in the link-local range (169.254.0.0/16)'),
        ("spec.externalIPs[3]",
         'Invalid value: "ff02::1": may not be in the link-local multicast range (224.0.0.0/24)'),
        ("spec.type", 'Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName", "LoadBalancer", '
                      '"NodePort"'),
        ("spec.LoadBalancerSourceRanges", "Forbidden: may only be used when `type` is 'LoadBalancer'"),
        ("spec.LoadBalancerSourceRanges",
         'Invalid value: "[x]": must be a list of IP ranges. For example, 10.240.0.0/24,10.250.0.0/24 '),
        ("spec.externalTrafficPolicy", 'Invalid value: "Weird": ExternalTrafficPolicy must be empty, Cluster or Local'),
        ("spec.healthCheckNodePort", "Invalid value: -1: HealthCheckNodePort must be not less than 0")]),
    ({"externalTrafficPolicy": "Local", "healthCheckNodePort": 5}, [  # only once the rest is valid and allocated
        ("spec.externalTrafficPolicy",
         'Invalid value: "Local": ExternalTrafficPolicy can only be set on NodePort and LoadBalancer service'),
        ("spec.healthCheckNodePort",
         "Invalid value: 5: HealthCheckNodePort can only be set on LoadBalancer service with "
         "ExternalTrafficPolicy=Local")]),
]


@pytest.mark.parametrize(("spec", "causes"), SERVICE_CASES)
async def test_an_invalid_service_is_refused_with_kubes_causes_before_anything_is_allocated(
        http: aiohttp.ClientSession, spec: dict[str, Any], causes: list[tuple[str, str]]) -> None:
    """What kube-apiserver 1.20 answered to each (tests/realplane/test_apiserver_parity.py sends them to both)."""
    body = service("bad", **spec)
    body["spec"] = {k: v for k, v in body["spec"].items() if v is not None}
    answer = await refused(http, "POST", SVCS, body)
    assert [(c["field"], c["message"]) for c in answer["details"]["causes"]] == causes
    await send(http, "GET", f"{SVCS}/bad", expect=(404,))


async def test_valid_services_of_each_shape_are_stored(http: aiohttp.ClientSession) -> None:
    await create(http, "headless", ports=[], clusterIP="None")
    await create(http, "headless-ips", ports=[], clusterIPs=["None"])  # named by clusterIPs alone
    empty = await create(http, "empty", type="", sessionAffinity="", ports=[{"port": 80, "protocol": ""}])
    assert (empty["type"], empty["sessionAffinity"], empty["ports"][0]["protocol"]) == ("ClusterIP", "None", "TCP")
    await create(http, "two", ports=[{"port": 80, "name": "a"}, {"port": 80, "name": "b", "protocol": "UDP"}])
    await create(http, "named", ports=[{"port": 80, "targetPort": "http"}])
    await send(http, "POST", SVCS, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext"},
                                    "spec": {"type": "ExternalName", "externalName": "example.com."}}, expect=(201,))


async def test_a_local_load_balancer_gets_a_health_check_port_and_affinity_gets_its_default(
        http: aiohttp.ClientSession) -> None:
    """As kube 1.20 stores them (refplane): a node port for the health check of a LoadBalancer whose traffic stays
    local, given back when it no longer does; ClientIP affinity's default timeout; no affinity config for None."""
    local = await create(http, "lb", type="LoadBalancer", externalTrafficPolicy="Local")
    port = local["healthCheckNodePort"]
    assert 30000 <= port <= 32767 and port not in [p["nodePort"] for p in local["ports"]]
    kept = await send(http, "PATCH", f"{SVCS}/lb", {"spec": {"ports": [{"port": 81}]}})
    assert kept["spec"]["healthCheckNodePort"] == port
    cluster = await send(http, "PATCH", f"{SVCS}/lb", {"spec": {"externalTrafficPolicy": "Cluster"}})
    assert "healthCheckNodePort" not in cluster["spec"]
    sticky = await create(http, "sticky", sessionAffinity="ClientIP")
    assert sticky["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    plain = await create(http, "plain", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 10}})
    assert "sessionAffinityConfig" not in plain
