"""The request URL KubeClient builds: the server URL's own path kept, odd names still encoded."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client as k8s
from yarl import URL

from controller_manager.client import KubeClient
from controller_manager.resource import InvalidName, Resource

CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)


@pytest.mark.parametrize(("host", "path", "query", "expected"), [
    ("http://127.0.0.1:8080", "/api/v1/namespaces/a/pods/p", [],
     "http://127.0.0.1:8080/api/v1/namespaces/a/pods/p"),
    # a server behind a path prefix (Rancher, a Karmada aggregated-apiserver proxy): the prefix stays
    ("https://h:6443/k8s/clusters/c-1", "/api/v1/nodes", [], "https://h:6443/k8s/clusters/c-1/api/v1/nodes"),
    ("https://h:6443/k8s/clusters/c-1/", "/api/v1/nodes", [], "https://h:6443/k8s/clusters/c-1/api/v1/nodes"),
    ("https://[::1]:6443", "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:x", [],
     "https://[::1]:6443/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:x"),
    # what a valid name never holds is percent-encoded, as before, and so is the query
    ("http://127.0.0.1:8080", "/api/v1/namespaces/a/configmaps/bad name", [],
     "http://127.0.0.1:8080/api/v1/namespaces/a/configmaps/bad%20name"),
    ("http://127.0.0.1:8080", "/api/v1/pods", [("labelSelector", "app in (a,b)")],
     "http://127.0.0.1:8080/api/v1/pods?labelSelector=app+in+(a,b)"),
])
async def test_request_url(host: str, path: str, query: list[tuple[str, str]], expected: str) -> None:
    kube = KubeClient(k8s.ApiClient(k8s.Configuration(host=host)), qps=0)
    try:
        assert str(URL(kube._url(path, query))) == expected
        kube.api_client.configuration.host = "http://10.0.0.1:1"  # e.g. --master: the next request follows
        assert str(URL(kube._url("/api/v1/nodes", []))) == "http://10.0.0.1:1/api/v1/nodes"
    finally:
        await kube.close()


@pytest.mark.parametrize(("namespace", "name", "message"), [
    ("default", "a/b-deployment", 'invalid resource name "a/b-deployment": [may not contain \'/\']'),
    ("default", "x%2Fy", 'invalid resource name "x%2Fy": [may not contain \'%\']'),
    ("default", "..", 'invalid resource name "..": [may not be \'..\']'),
    ("a/b", "web", 'invalid namespace "a/b": [may not contain \'/\']'),
])
def test_a_name_no_object_can_have_is_refused_before_it_is_sent(namespace: str, name: str, message: str) -> None:
    """As client-go's request builder: sent, ``a/b`` would address another path (a ``404 page not found``)."""
    with pytest.raises(InvalidName) as refused:
        CONFIG_MAPS.path(namespace, name)
    assert str(refused.value) == message
