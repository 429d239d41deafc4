"""Workloads (Deployments, ReplicaSets, StatefulSets, Pods, Jobs) are validated as kube-apiserver validates them.

Each expected cause (field and message) is what the refplane's kube-apiserver 1.20 answered to the same body;
nothing refused is stored.
"""

from __future__ import annotations

import re
from typing import Any

import aiohttp
import pytest

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
LABEL_KEY = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
RFC1123_SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                     "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                     "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
RFC1123_LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
                 "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def deployment(name: str = "web", *, pod: dict[str, Any] | None = None, labels: dict[str, str] | None = None,
               **spec: Any) -> dict[str, Any]:
    """A valid Deployment, then ``spec`` merged in (a None value removes the field)."""
    body: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name} if labels is None else labels},
                              "spec": pod or {"containers": [{"name": "c", "image": "nginx"}]}}}}
    for key, value in spec.items():
        if value is None:
            body["spec"].pop(key)
        else:
            body["spec"][key] = value
    return body


def containers(*entries: dict[str, str]) -> dict[str, Any]:
    return {"containers": list(entries)}


async def refused_causes(http: aiohttp.ClientSession, collection: str, body: dict[str, Any], *,
                         stored: str | None = None) -> list[tuple[str, str]]:
    """POST ``body`` to ``collection``: the 422's causes (field, message); then, unless ``stored`` is empty,
    that the object named ``stored`` (default: the body's) was not stored."""
    async with http.post(collection, json=body) as r:
        reply = await r.json()
        assert r.status == 422, reply
    assert reply["reason"] == "Invalid"
    name = body["metadata"]["name"] if stored is None else stored
    if name:
        async with http.get(f"{collection}/{name}") as r:
            assert r.status == 404  # nothing stored
    return [(c["field"], c["message"]) for c in reply["details"]["causes"]]


CASES = [
    (deployment(selector=None, labels={"app": "y"}), [
        ("spec.selector", "Required value"),
        ("spec.template.metadata.labels",
         'Invalid value: map[string]string{"app":"y"}: `selector` does not match template `labels`')]),
    (deployment(selector={}, labels={"app": "y"}), [(
        "spec.selector", "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:"
                         "[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment")]),
    (deployment(selector={"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["x", "y"]}]}), [(
            "spec.template.metadata.labels",
            'Invalid value: map[string]string{"app":"web"}: `selector` does not match template `labels`')]),
    (deployment(selector={"matchExpressions": [{"key": "app", "operator": "Bad", "values": ["a"]}]}), [
        ("spec.selector.matchExpressions[0].operator", 'Invalid value: "Bad": not a valid selector operator'),
        ("spec.selector", 'Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), '
                          'MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"app", '
                          'Operator:"Bad", Values:[]string{"a"}}}}: invalid label selector')]),
    (deployment(labels={"app": "web", "bad key!": "v"}), [
        ("spec.template.labels", f'Invalid value: "bad key!": {LABEL_KEY}')]),
    (deployment(pod=containers()), [("spec.template.spec.containers", "Required value")]),
    (deployment(pod=containers({"name": "c"})), [("spec.template.spec.containers[0].image", "Required value")]),
    (deployment(pod=containers({"name": "C_1", "image": "x"})), [
        ("spec.template.spec.containers[0].name", f'Invalid value: "C_1": {RFC1123_LABEL}')]),
    (deployment(pod=containers({"name": "c", "image": "x"}, {"name": "c", "image": "y"})), [
        ("spec.template.spec.containers[1].name", 'Duplicate value: "c"')]),
    (deployment(pod={"restartPolicy": "Never", **containers({"name": "c", "image": "x"})}), [
        ("spec.template.spec.restartPolicy", 'Unsupported value: "Never": supported values: "Always"')]),
    (deployment(replicas=-2, selector={"matchLabels": {"app": "x"}}, labels={"app": "y"}), [
        ("spec.replicas", "Invalid value: -2: must be greater than or equal to 0"),
        ("spec.template.metadata.labels",
         'Invalid value: map[string]string{"app":"y"}: `selector` does not match template `labels`')]),
    (deployment(strategy={"type": "Bogus"}), [(
        "spec.strategy", 'Unsupported value: apps.DeploymentStrategy{Type:"Bogus", '
                         'RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: supported values: "Recreate", '
                         '"RollingUpdate"')]),
    (deployment(strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}), [
        ("spec.strategy.rollingUpdate", "Forbidden: may not be specified when strategy `type` is 'Recreate'")]),
    (deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}), [(
        "spec.strategy.rollingUpdate.maxUnavailable",
        'Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: may not be 0 when `maxSurge` is 0')]),
    (deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "x", "maxUnavailable": 1}}), [(
        "spec.strategy.rollingUpdate.maxSurge",
        'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"x"}: a valid percent string must be a numeric '
        "string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")]),
    (deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "150%"}}), [(
        "spec.strategy.rollingUpdate.maxUnavailable",
        'Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"150%"}: must not be greater than 100%')]),
    (deployment(selector={"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["bad value!"]}]}), [(
            "spec.selector", 'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web"}, '
                             'MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"tier", '
                             'Operator:"In", Values:[]string{"bad value!"}}}}: invalid label selector')]),
    (deployment(selector={"matchExpressions": [{"key": "app", "values": ["a"]}]}), [
        ("spec.selector.matchExpressions[0].operator", 'Invalid value: "": not a valid selector operator'),
        ("spec.selector", 'Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), '
                          'MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"app", '
                          'Operator:"", Values:[]string{"a"}}}}: invalid label selector')]),
    (deployment(minReadySeconds=10, progressDeadlineSeconds=5), [
        ("spec.progressDeadlineSeconds", "Invalid value: 5: must be greater than minReadySeconds")]),
]


@pytest.mark.parametrize(("body", "causes"), CASES)
async def test_an_invalid_deployment_is_refused_with_kubes_causes(http: aiohttp.ClientSession, body: dict[str, Any],
                                                                  causes: list[tuple[str, str]]) -> None:
    assert await refused_causes(http, DEPLOYMENTS, body, stored="web") == causes


async def test_a_deployments_selector_is_immutable(http: aiohttp.ClientSession) -> None:
    async with http.post(DEPLOYMENTS, json=deployment()) as r:
        assert r.status == 201
        created = await r.json()
    patch = {"spec": {"selector": {"matchLabels": {"app": "web", "x": "y"}},
                      "template": {"metadata": {"labels": {"app": "web", "x": "y"}}}}}
    async with http.patch(f"{DEPLOYMENTS}/web", json=patch,
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        reply = await r.json()
        assert r.status == 422, reply
    assert [(c["field"], c["message"]) for c in reply["details"]["causes"]] == [(
        "spec.selector", 'Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"web", "x":"y"}, '
                         "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable")]
    async with http.get(f"{DEPLOYMENTS}/web") as r:
        assert (await r.json())["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_the_same_selector_with_empty_expressions_is_not_a_change(http: aiohttp.ClientSession) -> None:
    """kube compares selectors semantically: an empty list is none (refplane: 200)."""
    async with http.post(DEPLOYMENTS, json=deployment()) as r:
        assert r.status == 201
    patch = {"spec": {"selector": {"matchLabels": {"app": "web"}, "matchExpressions": []}}}
    async with http.patch(f"{DEPLOYMENTS}/web", json=patch,
                          headers={"Content-Type": "application/merge-patch+json"}) as r:
        assert r.status == 200, await r.text()


async def test_an_invalid_deployment_under_a_taken_name_is_invalid_before_it_is_taken(
        http: aiohttp.ClientSession) -> None:
    """Validation comes before storage, so 422 before 409 (refplane)."""
    async with http.post(DEPLOYMENTS, json=deployment()) as r:
        assert r.status == 201
    async with http.post(DEPLOYMENTS, json=deployment(replicas=-1)) as r:
        assert r.status == 422, await r.text()


async def test_a_valid_deployment_with_expressions_and_defaults_is_stored(http: aiohttp.ClientSession) -> None:
    body = deployment(selector={"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "NotIn", "values": ["x"]}, {"key": "app", "operator": "Exists"}]})
    async with http.post(DEPLOYMENTS, json=body) as r:
        assert r.status == 201, await r.text()
        stored = await r.json()
    assert stored["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": "25%", "maxSurge": "25%"}


def controller(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    """A valid ReplicaSet or StatefulSet, then ``spec`` merged in."""
    body: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}
    body["spec"].update(spec)
    return body


OTHER_CASES = [  # (collection, body, causes), each as kube-apiserver 1.20 answered (refplane)
    ("replicasets", controller("ReplicaSet", "r", selector={"matchLabels": {"app": "x"}}), [(
        "spec.template.metadata.labels",
        'Invalid value: map[string]string{"app":"r"}: `selector` does not match template `labels`')]),
    ("replicasets", controller("ReplicaSet", "r", replicas=-1), [
        ("spec.replicas", "Invalid value: -1: must be greater than or equal to 0")]),
    ("replicasets", controller("ReplicaSet", "r", selector={}), [(
        "spec.selector", "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:"
                         "[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment")]),
    ("replicasets", controller("ReplicaSet", "r", template={"metadata": {"labels": {"app": "r"}},
                                                             "spec": {"containers": []}}), [
        ("spec.template.spec.containers", "Required value")]),
    ("statefulsets", controller("StatefulSet", "s", podManagementPolicy="Bogus"), [
        ("spec.podManagementPolicy", "Invalid value: \"Bogus\": must be 'OrderedReady' or 'Parallel'")]),
    ("statefulsets", controller("StatefulSet", "s", updateStrategy={"type": "Bogus"}), [(
        "spec.updateStrategy", 'Invalid value: apps.StatefulSetUpdateStrategy{Type:"Bogus", '
                               'RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}: must be '
                               "'RollingUpdate' or 'OnDelete'")]),
    ("statefulsets", controller("StatefulSet", "s", updateStrategy={"type": "RollingUpdate",
                                                                    "rollingUpdate": {"partition": -1}}), [
        ("spec.updateStrategy.rollingUpdate.partition", "Invalid value: -1: must be greater than or equal to 0")]),
    ("statefulsets", controller("StatefulSet", "s", selector={"matchLabels": {"app": "x"}}), [(
        "spec.template.metadata.labels",
        'Invalid value: map[string]string{"app":"s"}: `selector` does not match template `labels`')]),
    ("statefulsets", controller("StatefulSet", "s", template={"metadata": {"labels": {"app": "s"}}, "spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}), [
        ("spec.template.spec.restartPolicy", 'Unsupported value: "Never": supported values: "Always"')]),
    ("statefulsets", controller("StatefulSet", "s", template={"metadata": {"labels": {"app": "s"}}, "spec": {
        "activeDeadlineSeconds": 5, "containers": [{"name": "c", "image": "x"}]}}), [
        ("spec.template.spec.activeDeadlineSeconds",
         "Forbidden: activeDeadlineSeconds in StatefulSet is not Supported")]),
    ("replicasets", controller("ReplicaSet", "r", template={"metadata": {"labels": {"app": "r"}}, "spec": {
        "activeDeadlineSeconds": 5, "containers": [{"name": "c", "image": "x"}]}}), [
        ("spec.template.spec.activeDeadlineSeconds",
         "Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported")]),
]


@pytest.mark.parametrize(("collection", "body", "causes"), OTHER_CASES)
async def test_an_invalid_replica_set_or_stateful_set_is_refused_with_kubes_causes(
        http: aiohttp.ClientSession, collection: str, body: dict[str, Any], causes: list[tuple[str, str]]) -> None:
    assert await refused_causes(http, f"/apis/apps/v1/namespaces/default/{collection}", body) == causes


async def test_a_stateful_set_without_containers_is_stored_as_kube_1_20_stores_it(
        http: aiohttp.ClientSession) -> None:
    """kube 1.20 does not validate a StatefulSet's Pod spec (refplane: 201)."""
    body = controller("StatefulSet", "s", template={"metadata": {"labels": {"app": "s"}}, "spec": {"containers": []}})
    async with http.post("/apis/apps/v1/namespaces/default/statefulsets", json=body) as r:
        assert r.status == 201, await r.text()


POD_CASES = [  # (a Pod spec, causes), as kube-apiserver 1.20 answered (refplane)
    ({"containers": []}, [("spec.containers", "Required value")]),
    ({"containers": [{"name": "c"}]}, [("spec.containers[0].image", "Required value")]),
    ({"containers": [{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]},
     [("spec.containers[1].name", 'Duplicate value: "c"')]),
    ({"containers": [{"name": "C", "image": "x"}]},
     [("spec.containers[0].name", f'Invalid value: "C": {RFC1123_LABEL}')]),
    ({"restartPolicy": "Bogus", "containers": [{"name": "c", "image": "x"}]}, [
        ("spec.restartPolicy", 'Unsupported value: "Bogus": supported values: "Always", "OnFailure", "Never"')]),
    ({"containers": [{"name": "c", "image": "x", "ports": [
        {"containerPort": 0}, {"containerPort": 70000, "hostPort": -1, "protocol": "XTP", "name": "Bad_Name"},
        {"containerPort": 80, "name": "web"}, {"containerPort": 81, "name": "web"}]}]}, [
        ("spec.containers[0].ports[0].containerPort", "Required value"),
        ("spec.containers[0].ports[1].name",
         'Invalid value: "Bad_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)'),
        ("spec.containers[0].ports[1].containerPort", "Invalid value: 70000: must be between 1 and 65535, inclusive"),
        ("spec.containers[0].ports[1].hostPort", "Invalid value: -1: must be between 1 and 65535, inclusive"),
        ("spec.containers[0].ports[1].protocol", 'Unsupported value: "XTP": supported values: "SCTP", "TCP", "UDP"'),
        ("spec.containers[0].ports[3].name", 'Duplicate value: "web"')]),
    ({"containers": [{"name": "c", "image": "x", "env": [
        {"name": "1BAD"}, {"name": ".."}, {"name": "A", "valueFrom": {}},
        {"name": "B", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}]}, [
        ("spec.containers[0].env[0].name", 'Invalid value: "1BAD": a valid environment variable name must consist of '
                                           "alphabetic characters, digits, '_', '-', or '.', and must not start with a "
                                           "digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex "
                                           "used for validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"),
        ("spec.containers[0].env[1].name", "Invalid value: \"..\": must not be '..'"),
        ("spec.containers[0].env[2].valueFrom", 'Invalid value: "": must specify one of: `fieldRef`, '
                                                "`resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"),
        ("spec.containers[0].env[3].valueFrom", 'Invalid value: "": may not be specified when `value` is not empty')]),
    ({"volumes": [{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}],
      "containers": [{"name": "c", "image": "x", "volumeMounts": [
          {"name": "nope", "mountPath": "/a"}, {"name": "v", "mountPath": ""}, {"name": "v", "mountPath": "/a"}]}]}, [
        ("spec.volumes[1].name", 'Duplicate value: "v"'),
        ("spec.containers[0].volumeMounts[0].name", 'Not found: "nope"'),
        ("spec.containers[0].volumeMounts[1].mountPath", "Required value"),
        ("spec.containers[0].volumeMounts[2].mountPath", 'Invalid value: "/a": must be unique')]),
    ({"containers": [{"name": "c", "image": "x", "imagePullPolicy": "Sometimes",
                      "resources": {"requests": {"cpu": "0.5"}, "limits": {"cpu": "250m"}}}]}, [
        ("spec.containers[0].imagePullPolicy",
         'Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"'),
        ("spec.containers[0].resources.requests", 'Invalid value: "500m": must be less than or equal to cpu limit')]),
    ({"containers": [{"name": "c", "image": "x", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}, [
        ("spec.containers[0].resources.limits", "Required value: Limit must be set for non overcommitable resources")]),
    ({"containers": [{"name": "c", "image": "x", "resources": {"limits": {"hugepages-2Mi": "2Mi"}}}]}, [
        ("spec.containers[0].resources", "Forbidden: HugePages require cpu or memory")]),
    ({"containers": [{"name": "c", "image": "x", "terminationMessagePolicy": "Bogus", "readinessProbe": {},
                      "startupProbe": {"exec": {"command": []}, "periodSeconds": -1},
                      "livenessProbe": {"successThreshold": 2, "exec": {"command": ["a"]}, "httpGet": {"port": 0}},
                      "lifecycle": {"preStop": {"tcpSocket": {"port": "Bad_Name"}}}}]}, [
        ("spec.containers[0].lifecycle.preStop.tcpSocket.port",
         'Invalid value: "Bad_Name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)'),
        ("spec.containers[0].livenessProbe.httpGet", "Forbidden: may not specify more than 1 handler type"),
        ("spec.containers[0].livenessProbe.successThreshold", "Invalid value: 2: must be 1"),
        ("spec.containers[0].startupProbe.exec.command", "Required value"),
        ("spec.containers[0].startupProbe.periodSeconds", "Invalid value: -1: must be greater than or equal to 0"),
        ("spec.containers[0].terminationMessagePolicy",
         "Invalid value: \"Bogus\": must be 'File' or 'FallbackToLogsOnError'"),
        ("spec.containers[0].readinessProbe", "Required value: must specify a handler type")]),
    ({"containers": [{"name": "c", "image": "x"}], "dnsPolicy": "Bogus", "serviceAccountName": "Bad_SA",
      "activeDeadlineSeconds": 0, "hostname": "Bad_H", "tolerations": [
          {"key": "bad key!", "operator": "Bogus"}, {"operator": "Exists", "value": "v"},
          {"key": "k", "tolerationSeconds": 5, "effect": "NoSchedule"}, {"operator": "Equal"}]}, [
        ("spec.dnsPolicy",
         'Unsupported value: "Bogus": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"'),
        ("spec.serviceAccountName", f'Invalid value: "Bad_SA": {RFC1123_SUBDOMAIN}'),
        ("spec.activeDeadlineSeconds", "Invalid value: 0: must be between 1 and 2147483647, inclusive"),
        ("spec.hostname", f'Invalid value: "Bad_H": {RFC1123_LABEL}'),
        ("spec.tolerations[0].key", f'Invalid value: "bad key!": {NAME_PART}'),
        ("spec.tolerations[0].operator", 'Unsupported value: "Bogus": supported values: "Equal", "Exists"'),
        ("spec.tolerations[1].operator", 'Invalid value: core.Toleration{Key:"", Operator:"Exists", Value:"v", '
                                         'Effect:"", TolerationSeconds:(*int64)(nil)}: value must be empty when '
                                         "`operator` is 'Exists'"),
        ("spec.tolerations[2].effect",
         "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set"),
        ("spec.tolerations[3].operator", 'Invalid value: "Equal": operator must be Exists when `key` is empty, which '
                                         'means "match all values and all keys"')]),
    ({"containers": [{"name": "c", "image": "x", "resources": {"requests": {"foo": "1"}}}]}, [
        ("spec.containers[0].resources.requests[foo]",
         'Invalid value: "foo": must be a standard resource type or fully qualified'),
        ("spec.containers[0].resources.requests[foo]",
         'Invalid value: "foo": must be a standard resource for containers')]),
    ({"containers": [{"name": "c", "image": "x", "securityContext": {
        "runAsUser": -1, "privileged": True, "allowPrivilegeEscalation": False}}],
      "securityContext": {"fsGroup": -3, "sysctls": [{"name": ""}], "fsGroupChangePolicy": "Bogus"},
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "a", "operator": "In"}]}]}},
          "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone",
                                                                              "namespaces": ["Bad_NS"]}]}},
      "dnsPolicy": "None", "readinessGates": [{"conditionType": "bad cond!"}],
      "topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"},
                                    {"maxSkew": 1, "topologyKey": "z", "whenUnsatisfiable": "DoNotSchedule"}]}, [
        ("spec.containers[0].securityContext.runAsUser",
         "Invalid value: -1: must be between 0 and 2147483647, inclusive"),
        ("spec.containers[0].securityContext", "Invalid value: core.SecurityContext{"
         "Capabilities:(*core.Capabilities)(nil), Privileged:(*bool)(0xc000000000), "
         "SELinuxOptions:(*core.SELinuxOptions)(nil), WindowsOptions:(*core.WindowsSecurityContextOptions)(nil), "
         "RunAsUser:(*int64)(0xc000000000), RunAsGroup:(*int64)(nil), RunAsNonRoot:(*bool)(nil), "
         "ReadOnlyRootFilesystem:(*bool)(nil), AllowPrivilegeEscalation:(*bool)(0xc000000000), "
         "ProcMount:(*core.ProcMountType)(nil), SeccompProfile:(*core.SeccompProfile)(nil)}: cannot set "
         "`allowPrivilegeEscalation` to false and `privileged` to true"),
        ("spec.securityContext.fsGroup", "Invalid value: -3: must be between 0 and 2147483647, inclusive"),
        ("spec.securityContext.sysctls[0].name", "Required value"),
        ("spec.securityContext.fsGroupChangePolicy",
         'Unsupported value: "Bogus": supported values: "Always", "OnRootMismatch"'),
        ("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
         ".matchExpressions[0].values", "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespace",
         f'Invalid value: "Bad_NS": {RFC1123_LABEL}'),
        ("spec.dnsConfig", "Required value: must provide `dnsConfig` when `dnsPolicy` is None"),
        ("spec.readinessGates[0].conditionType", f'Invalid value: "bad cond!": {NAME_PART}'),
        ("spec.topologySpreadConstraints[0].maxSkew", "Invalid value: 0: must be greater than zero"),
        ("spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}",
         'Duplicate value: "{z, DoNotSchedule}"')]),
]


@pytest.mark.parametrize(("spec", "causes"), POD_CASES)
async def test_an_invalid_pod_is_refused_with_kubes_causes(http: aiohttp.ClientSession, spec: dict[str, Any],
                                                           causes: list[tuple[str, str]]) -> None:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}
    assert await refused_causes(http, "/api/v1/namespaces/default/pods", body, stored="") == causes


JOBS = "/apis/batch/v1/namespaces/default/jobs"
JOB_RESTART = 'Required value: valid values: "OnFailure", "Never"'


def job(name: str = "batch", *, pod: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": pod or {"restartPolicy": "Never",
                                                  "containers": [{"name": "c", "image": "busybox"}]}}, **spec}}


async def test_a_jobs_selector_and_pod_labels_are_generated_from_its_uid(http: aiohttp.ClientSession) -> None:
    """As kube-apiserver does unless ``manualSelector`` is true: both spellings of each label since Kubernetes
    1.27, the selector on the new one."""
    async with http.post(JOBS, json=job()) as r:
        created = await r.json()
        assert r.status == 201, created
    uid = created["metadata"]["uid"]
    assert created["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert created["spec"]["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "batch",
        "controller-uid": uid, "job-name": "batch"}
    manual = job("manual", manualSelector=True, selector={"matchLabels": {"app": "m"}})
    manual["spec"]["template"]["metadata"] = {"labels": {"app": "m"}}
    async with http.post(JOBS, json=manual) as r:
        stored = await r.json()
        assert r.status == 201, stored
    assert stored["spec"]["selector"] == {"matchLabels": {"app": "m"}}
    assert stored["spec"]["template"]["metadata"]["labels"] == {"app": "m"}


JOB_CASES = [
    (job(pod={"restartPolicy": "Always", "containers": [{"name": "c", "image": "b"}]}),
     [("spec.template.spec.restartPolicy", JOB_RESTART)]),
    (job(pod={"containers": [{"name": "c", "image": "b"}]}), [("spec.template.spec.restartPolicy", JOB_RESTART)]),
    (job(parallelism=-1, completions=-1, backoffLimit=-1, activeDeadlineSeconds=0), [
        ("spec.parallelism", "Invalid value: -1: must be greater than or equal to 0"),
        ("spec.completions", "Invalid value: -1: must be greater than or equal to 0"),
        ("spec.backoffLimit", "Invalid value: -1: must be greater than or equal to 0")]),
    (job(manualSelector=True), [
        ("spec.selector", "Required value"),
        ("spec.template.metadata.labels",
         "Invalid value: map[string]string(nil): `selector` does not match template `labels`")]),
    (job(manualSelector=True, selector={"matchLabels": {"a": "b"}}), [
        ("spec.template.metadata.labels",
         "Invalid value: map[string]string(nil): `selector` does not match template `labels`")]),
    (job(pod={"restartPolicy": "Never", "containers": []}), [("spec.template.spec.containers", "Required value")]),
]


@pytest.mark.parametrize(("body", "causes"), JOB_CASES)
async def test_an_invalid_job_is_refused_with_kubes_causes(http: aiohttp.ClientSession, body: dict[str, Any],
                                                           causes: list[tuple[str, str]]) -> None:
    """The causes kube-apiserver 1.20 gave for each (tests/realplane/test_apiserver_parity.py sends them to both)."""
    assert await refused_causes(http, JOBS, body) == causes


async def test_a_selector_given_without_manual_selector_is_refused(http: aiohttp.ClientSession) -> None:
    """kube merges its uid label into the given selector, which then selects Pods the Job's template does not
    make: ```selector` not auto-generated``."""
    async with http.post(JOBS, json=job(selector={"matchLabels": {"a": "b"}})) as r:
        reply = await r.json()
        assert r.status == 422, reply
    assert [(c["field"], c["message"].rpartition(": ")[2]) for c in reply["details"]["causes"]] == [
        ("spec.selector", "`selector` not auto-generated"),
        ("spec.template.metadata.labels", "`selector` does not match template `labels`")]


async def test_a_jobs_completions_selector_and_template_are_immutable(http: aiohttp.ClientSession) -> None:
    """As in kube 1.20 (later versions let a suspended Job's template and an indexed Job's completions change);
    parallelism may change."""
    async with http.post(JOBS, json=job()) as r:
        created = await r.json()
        assert r.status == 201, created
    merge = {"Content-Type": "application/merge-patch+json"}
    for patch, field in [({"spec": {"completions": 3}}, "spec.completions"),
                         ({"spec": {"selector": {"matchLabels": {"a": "b"}}}}, "spec.selector"),
                         ({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "other"}]}}}},
                          "spec.template")]:
        async with http.patch(f"{JOBS}/batch", json=patch, headers=merge) as r:
            reply = await r.json()
            assert r.status == 422, reply
        assert (field, "field is immutable") in [(c["field"], c["message"].rpartition(": ")[2])
                                                 for c in reply["details"]["causes"]], reply
    async with http.patch(f"{JOBS}/batch", json={"spec": {"parallelism": 3}}, headers=merge) as r:
        assert r.status == 200, await r.text()


async def test_a_jobs_template_labels_must_name_the_job_itself(http: aiohttp.ClientSession) -> None:
    """A label kube generates that the user already gave is kept, then refused unless it is the Job's own (as
    kube 1.20 refused ``job-name: other``). The printed labels are the template's after generation."""
    body = job("named")
    body["spec"]["template"]["metadata"] = {"labels": {"job-name": "other", "controller-uid": "x"}}
    causes = await refused_causes(http, JOBS, body)
    assert [field for field, _ in causes] == ["spec.template.metadata.labels[controller-uid]",
                                              "spec.template.metadata.labels[job-name]"]
    assert causes[0][1].startswith('Invalid value: map[string]string{"batch.kubernetes.io/controller-uid":')
    assert re.fullmatch(r"must be '[0-9a-f-]{36}'", causes[0][1].rpartition(": ")[2])
    assert causes[1][1].endswith('"controller-uid":"x", "job-name":"other"}: must be \'named\'')


async def test_a_stateful_sets_spec_changes_only_in_replicas_template_and_strategy(
        http: aiohttp.ClientSession) -> None:
    """``ValidateStatefulSetUpdate`` (1.20): a member refuses a Work that changes a StatefulSet's service name,
    claim templates or selector; replicas, template and update strategy may change."""
    sets = "/apis/apps/v1/namespaces/default/statefulsets"
    async with http.post(sets, json=controller("StatefulSet", "db", serviceName="db")) as r:
        assert r.status == 201, await r.text()
    merge = {"Content-Type": "application/merge-patch+json"}
    forbidden = ("spec", "Forbidden: updates to statefulset spec for fields other than 'replicas', 'template', and "
                         "'updateStrategy' are forbidden")
    for patch in ({"serviceName": "other"}, {"revisionHistoryLimit": 3}, {"podManagementPolicy": "Parallel"},
                  {"volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]},
                  {"selector": {"matchLabels": {"app": "db", "x": "y"}},
                   "template": {"metadata": {"labels": {"app": "db", "x": "y"}}}}):
        async with http.patch(f"{sets}/db", json={"spec": patch}, headers=merge) as r:
            reply = await r.json()
            assert r.status == 422, reply
        assert [(c["field"], c["message"]) for c in reply["details"]["causes"]] == [forbidden], patch
    allowed = {"replicas": 3, "updateStrategy": {"type": "OnDelete", "rollingUpdate": None},
               "template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}
    async with http.patch(f"{sets}/db", json={"spec": allowed}, headers=merge) as r:
        updated = await r.json()
        assert r.status == 200, updated
    assert (updated["spec"]["replicas"], updated["spec"]["updateStrategy"]) == (3, {"type": "OnDelete"})


async def test_probes_get_kubes_defaults(http: aiohttp.ClientSession) -> None:
    """SetDefaults_Probe and SetDefaults_HTTPGetAction, as kube 1.20 stored them (refplane)."""
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probed"},
            "spec": {"containers": [{"name": "c", "image": "x", "livenessProbe": {"httpGet": {"port": 80}},
                                     "readinessProbe": {"exec": {"command": ["a"]}, "successThreshold": 0}}]}}
    async with http.post("/api/v1/namespaces/default/pods", json=body) as r:
        stored = await r.json()
        assert r.status == 201, stored
    container = stored["spec"]["containers"][0]
    counts = {"failureThreshold": 3, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 1}
    assert container["livenessProbe"] == {**counts, "httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}}
    assert container["readinessProbe"] == {**counts, "exec": {"command": ["a"]}}


async def test_a_null_or_empty_field_gets_its_default_not_a_refusal(http: aiohttp.ClientSession) -> None:
    """JSON null and "" decode to Go's zero value, which kube's defaulting fills in (Helm often renders them)."""
    body = deployment("nulls", pod={"restartPolicy": "", "containers": [{
        "name": "c", "image": "nginx:1", "imagePullPolicy": None, "terminationMessagePolicy": "",
        "ports": [{"containerPort": 80, "protocol": None}]}]})
    body["spec"]["revisionHistoryLimit"] = None
    async with http.post("/apis/apps/v1/namespaces/default/deployments", json=body) as r:
        stored = await r.json()
        assert r.status == 201, stored
    pod = stored["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert (pod["restartPolicy"], container["imagePullPolicy"], container["terminationMessagePolicy"],
            container["ports"][0]["protocol"], stored["spec"]["revisionHistoryLimit"]) == (
        "Always", "IfNotPresent", "File", "TCP", 10)
