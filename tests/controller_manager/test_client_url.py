"""The request URL KubeClient builds: the server URL's own path kept, odd names still encoded."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client as k8s
from yarl import URL

from controller_manager.client import KubeClient


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
