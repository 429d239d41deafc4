"""Init containers, ``envFrom``, environment sources, volume sources, mounts and block devices of a Pod template
are validated, defaulted and dropped as kube-apiserver 1.20 does.

Each expected cause (field and message) is what the refplane's kube-apiserver 1.20 answered to the same
Deployment (tests/realplane/test_apiserver_parity.py sends these and more to both); nothing refused is stored.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from tests.devplane.apiserver.test_workload_validation import (
    NAME_PART,
    RFC1123_LABEL,
    RFC1123_SUBDOMAIN,
    deployment,
    refused_causes,
)

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
AT = "spec.template.spec"
MODE_RULE = "must be a number between 0 and 0777 (octal), both inclusive"
ENV_NAME = ("a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and "
            "must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for "
            "validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')")
CONFIG_KEY = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
              "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")
ENV_FIELDS = ('"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", '
              '"status.hostIP", "status.podIP", "status.podIPs"')
RESOURCES = ('"limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", '
             '"requests.ephemeral-storage", "requests.memory"')
IN_DEVICES = "must not already exist in volumeDevices"
MORE_THAN_ONE = "Forbidden: may not specify more than 1 volume type"
EXEC = {"exec": {"command": ["a"]}}
PROBE = ("core.Probe{Handler:core.Handler{Exec:(*core.ExecAction)(0xc000000000), HTTPGet:(*core.HTTPGetAction)(nil), "
         "TCPSocket:(*core.TCPSocketAction)(nil)}, InitialDelaySeconds:0, TimeoutSeconds:1, PeriodSeconds:10, "
         "SuccessThreshold:1, FailureThreshold:3}")


def template(**spec: Any) -> dict[str, Any]:
    """A Deployment whose Pod spec is ``spec`` (one container, named c, unless given)."""
    return deployment("pv", pod={"containers": [{"name": "c", "image": "x"}], **spec})


def container(**fields: Any) -> list[dict[str, Any]]:
    return [{"name": "c", "image": "x", **fields}]


CASES = [
    (template(initContainers=[{"name": "c", "image": "x", "lifecycle": {"preStop": EXEC}, "livenessProbe": EXEC},
                              {"name": "i", "image": ""}, {"name": "i", "image": "x", "startupProbe": EXEC}]), [
        (f"{AT}.initContainers[1].image", "Required value"),
        (f"{AT}.initContainers[2].name", 'Duplicate value: "i"'),
        (f"{AT}.initContainers[0].name", 'Duplicate value: "c"'),
        (f"{AT}.initContainers[0].lifecycle", "Invalid value: core.Lifecycle{PostStart:(*core.Handler)(nil), "
                                              "PreStop:(*core.Handler)(0xc000000000)}: must not be set for init "
                                              "containers"),
        (f"{AT}.initContainers[0].livenessProbe", f"Invalid value: {PROBE}: must not be set for init containers"),
        (f"{AT}.initContainers[2].name", 'Duplicate value: "i"'),
        (f"{AT}.initContainers[2].startupProbe", f"Invalid value: {PROBE}: must not be set for init containers")]),
    (template(containers=container(envFrom=[
        {}, {"prefix": "1bad", "configMapRef": {"name": ""}}, {"configMapRef": {"name": "Bad_N"}, "secretRef": {
            "name": "s"}}, {"prefix": "A_", "secretRef": {"name": "ok-"}}])), [
        (f"{AT}.containers[0].envFrom", 'Invalid value: "": must specify one of: `configMapRef` or `secretRef`'),
        (f"{AT}.containers[0].envFrom[1].prefix", f'Invalid value: "1bad": {ENV_NAME}'),
        (f"{AT}.containers[0].envFrom[1].configMapRef.name", "Required value"),
        (f"{AT}.containers[0].envFrom[2].configMapRef.name", f'Invalid value: "Bad_N": {RFC1123_SUBDOMAIN}'),
        (f"{AT}.containers[0].envFrom", 'Invalid value: "": may not have more than one field specified at a time')]),
    (template(containers=container(env=[
        {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.bogus"}}},
        {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels"}}},
        {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['Bad Key']"}}},
        {"name": "D", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "3"}}},
        {"name": "E", "valueFrom": {"secretKeyRef": {"name": "", "key": "bad key!"}, "configMapKeyRef": {
            "name": "c", "key": "k"}}}])), [
        (f"{AT}.containers[0].env[0].valueFrom.fieldRef.fieldPath",
         'Invalid value: "status.bogus": error converting fieldPath: field label not supported: status.bogus'),
        (f"{AT}.containers[0].env[1].valueFrom.fieldRef.fieldPath",
         f'Unsupported value: "metadata.labels": supported values: {ENV_FIELDS}'),
        (f"{AT}.containers[0].env[2].valueFrom.fieldRef", f'Invalid value: "Bad Key": {NAME_PART}'),
        (f"{AT}.containers[0].env[3].valueFrom.resourceFieldRef.divisor",
         "Invalid value: \"limits.memory\": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, "
         "1Ei are supported with the memory resource"),
        (f"{AT}.containers[0].env[4].valueFrom.secretKeyRef.name", f'Invalid value: "": {RFC1123_SUBDOMAIN}'),
        (f"{AT}.containers[0].env[4].valueFrom.secretKeyRef.key", f'Invalid value: "bad key!": {CONFIG_KEY}'),
        (f"{AT}.containers[0].env[4].valueFrom",
         'Invalid value: "": may not have more than one field specified at a time')]),
    (template(volumes=[{"name": "v", "configMap": {"name": "c"}, "emptyDir": {}, "hostPath": {"path": "/x"}},
                       {"name": "Bad_V", "ephemeral": {}}],
              containers=container(volumeMounts=[{"name": "v", "mountPath": "/v"}])), [
        (f"{AT}.volumes[0].hostPath", MORE_THAN_ONE),
        (f"{AT}.volumes[0].configMap", MORE_THAN_ONE),
        (f"{AT}.volumes[1]", "Required value: must specify a volume type"),
        (f"{AT}.volumes[1].name", f'Invalid value: "Bad_V": {RFC1123_LABEL}'),
        (f"{AT}.containers[0].volumeMounts[0].name", 'Not found: "v"')]),
    (template(volumes=[
        {"name": "a", "configMap": {"defaultMode": 1000, "items": [
            {"key": "", "path": ""}, {"key": "k", "path": "/abs", "mode": -1}, {"key": "k", "path": ".."}]}},
        {"name": "b", "secret": {"items": [{"key": "k", "path": "a/../b"}]}},
        {"name": "c", "persistentVolumeClaim": {}}, {"name": "d", "nfs": {"server": "s", "path": "rel"}},
        {"name": "e", "hostPath": {"path": "/x", "type": "Bogus"}}, {"name": "f", "emptyDir": {"sizeLimit": "-1"}},
        {"name": "g", "csi": {"driver": "a" * 70, "nodePublishSecretRef": {"name": ""}}}]), [
        (f"{AT}.volumes[0].configMap.name", "Required value"),
        (f"{AT}.volumes[0].configMap.defaultMode", f"Invalid value: 1000: {MODE_RULE}"),
        (f"{AT}.volumes[0].configMap.items[0].key", "Required value"),
        (f"{AT}.volumes[0].configMap.items[0].path", "Required value"),
        (f"{AT}.volumes[0].configMap.items[1].path", 'Invalid value: "/abs": must be a relative path'),
        (f"{AT}.volumes[0].configMap.items[1].mode", f"Invalid value: -1: {MODE_RULE}"),
        (f"{AT}.volumes[0].configMap.items[2].path", "Invalid value: \"..\": must not contain '..'"),
        (f"{AT}.volumes[0].configMap.items[2].path", "Invalid value: \"..\": must not start with '..'"),
        (f"{AT}.volumes[1].secret.secretName", "Required value"),
        (f"{AT}.volumes[1].secret.items[0].path", "Invalid value: \"a/../b\": must not contain '..'"),
        (f"{AT}.volumes[2].persistentVolumeClaim.claimName", "Required value"),
        (f"{AT}.volumes[3].nfs.path", 'Invalid value: "rel": must be an absolute path'),
        (f"{AT}.volumes[4].hostPath.type", 'Unsupported value: "Bogus": supported values: "", "BlockDevice", '
                                           '"CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", '
                                           '"Socket"'),
        (f"{AT}.volumes[5].emptyDir.sizeLimit", "Forbidden: SizeLimit field must be a valid resource quantity"),
        (f"{AT}.volumes[6].csi.driver", "Too long: must have at most 63 bytes"),
        (f"{AT}.volumes[6].csi.nodePublishSecretRef .name", "Required value")]),
    (template(volumes=[
        {"name": "a", "downwardAPI": {"items": [
            {"path": "/x", "fieldRef": {"fieldPath": "spec.nodeName"}}, {"path": "z"},
            {"path": "r", "resourceFieldRef": {"resource": "limits.cpu"}}]}},
        {"name": "b", "projected": {"sources": [
            {"secret": {"items": [{"key": "k", "path": "p"}]}}, {"configMap": {"name": "c", "items": [
                {"key": "k", "path": "p"}]}},
            {"serviceAccountToken": {"expirationSeconds": 5}},
            {"secret": {"name": "s"}, "configMap": {"name": "c"}}]}}]), [
        (f"{AT}.volumes[0].downwardAPI.path", 'Invalid value: "/x": must be a relative path'),
        (f"{AT}.volumes[0].downwardAPI.fieldRef.fieldPath",
         'Unsupported value: "spec.nodeName": supported values: "metadata.annotations", "metadata.labels", '
         '"metadata.name", "metadata.namespace", "metadata.uid"'),
        (f"{AT}.volumes[0].downwardAPI", "Required value: one of fieldRef and resourceFieldRef is required"),
        (f"{AT}.volumes[0].downwardAPI.resourceFieldRef.containerName", "Required value"),
        (f"{AT}.volumes[1].projected.sources[0].secret.name", "Required value"),
        (f"{AT}.volumes[1].projected", 'Invalid value: "c": conflicting duplicate paths'),
        (f"{AT}.volumes[1].projected.sources[2].serviceAccountToken.expirationSeconds",
         "Invalid value: 5: may not specify a duration less than 10 minutes"),
        (f"{AT}.volumes[1].projected.path", "Required value"),
        (f"{AT}.volumes[1].projected.sources[3]", MORE_THAN_ONE)]),
    (template(volumes=[{"name": "v", "emptyDir": {}}, {"name": "p", "persistentVolumeClaim": {"claimName": "x"}}],
              containers=container(
                  volumeMounts=[{"name": "v", "mountPath": "/a", "subPath": "/abs"},
                                {"name": "v", "mountPath": "/b", "subPath": "a", "subPathExpr": "../$(X)"},
                                {"name": "v", "mountPath": "/c", "mountPropagation": "Bidirectional"},
                                {"name": "p", "mountPath": "/dev/x"}],
                  volumeDevices=[{"name": "v", "devicePath": "/dev/a"}, {"name": "p", "devicePath": "/dev/x"}])), [
        (f"{AT}.containers[0].volumeMounts[0].name", f"Invalid value: \"v\": {IN_DEVICES}"),
        (f"{AT}.containers[0].volumeMounts.subPath", 'Invalid value: "/abs": must be a relative path'),
        (f"{AT}.containers[0].volumeMounts[1].name", f"Invalid value: \"v\": {IN_DEVICES}"),
        (f"{AT}.containers[0].volumeMounts[1].subPathExpr",
         'Invalid value: "../$(X)": subPathExpr and subPath are mutually exclusive'),
        (f"{AT}.containers[0].volumeMounts.subPathExpr", "Invalid value: \"../$(X)\": must not contain '..'"),
        (f"{AT}.containers[0].volumeMounts[2].name", f"Invalid value: \"v\": {IN_DEVICES}"),
        (f"{AT}.containers[0].volumeMounts.mountPropagation",
         "Forbidden: Bidirectional mount propagation is available only to privileged containers"),
        (f"{AT}.containers[0].volumeMounts[3].name", f'Invalid value: "p": {IN_DEVICES}'),
        (f"{AT}.containers[0].volumeMounts[3].mountPath",
         'Invalid value: "/dev/x": must not already exist as a path in volumeDevices'),
        (f"{AT}.containers[0].volumeDevices[0].name",
         'Invalid value: "v": can only use volume source type of PersistentVolumeClaim for block mode'),
        (f"{AT}.containers[0].volumeDevices[0].name", 'Invalid value: "v": must not already exist in volumeMounts'),
        (f"{AT}.containers[0].volumeDevices[1].name", 'Invalid value: "p": must not already exist in volumeMounts'),
        (f"{AT}.containers[0].volumeDevices[1].devicePath",
         'Invalid value: "/dev/x": must not already exist as a path in volumeMounts')]),
    (template(containers=[{"name": "a", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]},
                          {"name": "b", "image": "x", "ports": [{"containerPort": 81, "hostPort": 80}]}],
              initContainers=[{"name": "i", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80}]},
                              {"name": "j", "image": "x", "ports": [{"containerPort": 80, "hostPort": 80},
                                                                    {"containerPort": 81, "hostPort": 80}]}]), [
        (f"{AT}.containers[1].ports[0].hostPort", 'Duplicate value: "TCP//80"'),
        (f"{AT}.initContainers[0].ports[1].hostPort", 'Duplicate value: "TCP//80"')]),  # sic: kube's index
]


@pytest.mark.parametrize(("body", "causes"), CASES)
async def test_an_invalid_pod_template_is_refused_with_kubes_causes(http: aiohttp.ClientSession,
                                                                    body: dict[str, Any],
                                                                    causes: list[tuple[str, str]]) -> None:
    assert await refused_causes(http, DEPLOYMENTS, body) == causes


async def test_volumes_and_downward_api_fields_get_kubes_defaults(http: aiohttp.ClientSession) -> None:
    """SetDefaults_Volume and its sources', SetDefaults_ObjectFieldSelector, and the fields 1.20 drops (ephemeral
    containers and volumes: their feature gates are off), as kube 1.20 stored them (refplane)."""
    body = template(
        volumes=[{"name": "a"}, {"name": "b", "secret": {"secretName": "s"}}, {"name": "c", "hostPath": {"path": "/x"}},
                 {"name": "d", "downwardAPI": {"items": [
                     {"path": "n", "fieldRef": {"fieldPath": "metadata.name"}},
                     {"path": "r", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu"}}]}},
                 {"name": "e", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
                 {"name": "f", "emptyDir": {}, "ephemeral": {}}],
        ephemeralContainers=[{"name": "e", "image": "busybox"}],
        containers=container(env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]))
    async with http.post(DEPLOYMENTS, json=body) as r:
        stored = await r.json()
        assert r.status == 201, stored
    pod = stored["spec"]["template"]["spec"]
    assert "ephemeralContainers" not in pod
    assert pod["volumes"] == [
        {"name": "a", "emptyDir": {}}, {"name": "b", "secret": {"secretName": "s", "defaultMode": 420}},
        {"name": "c", "hostPath": {"path": "/x", "type": ""}},
        {"name": "d", "downwardAPI": {"defaultMode": 420, "items": [
            {"path": "n", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
            {"path": "r", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu", "divisor": "0"}}]}},
        {"name": "e", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}}]}},
        {"name": "f", "emptyDir": {}}]
    assert pod["containers"][0]["env"] == [
        {"name": "A", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}]
