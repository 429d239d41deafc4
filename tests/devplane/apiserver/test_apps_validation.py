"""A Deployment's spec is validated as kube-apiserver validates it, over real HTTP.

Each expected cause (field and message) is what the refplane's kube-apiserver 1.20 answered to the same body;
nothing refused is stored.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
LABEL_KEY = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
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
    (deployment(minReadySeconds=10, progressDeadlineSeconds=5), [
        ("spec.progressDeadlineSeconds", "Invalid value: 5: must be greater than minReadySeconds")]),
]


@pytest.mark.parametrize(("body", "causes"), CASES)
async def test_an_invalid_deployment_is_refused_with_kubes_causes(http: aiohttp.ClientSession, body: dict[str, Any],
                                                                  causes: list[tuple[str, str]]) -> None:
    async with http.post(DEPLOYMENTS, json=body) as r:
        reply = await r.json()
        assert r.status == 422, reply
    assert reply["reason"] == "Invalid"
    assert [(c["field"], c["message"]) for c in reply["details"]["causes"]] == causes
    async with http.get(f"{DEPLOYMENTS}/web") as r:
        assert r.status == 404  # nothing stored


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


async def test_a_valid_deployment_with_expressions_and_defaults_is_stored(http: aiohttp.ClientSession) -> None:
    body = deployment(selector={"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "NotIn", "values": ["x"]}, {"key": "app", "operator": "Exists"}]})
    async with http.post(DEPLOYMENTS, json=body) as r:
        assert r.status == 201, await r.text()
        stored = await r.json()
    assert stored["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": "25%", "maxSurge": "25%"}
