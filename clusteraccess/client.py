"""One member cluster's API client: its endpoint, bearer token, TLS trust and proxy.

Push mode's ``BuildClusterConfig`` (``pkg/util/membercluster_client.go`` at Karmada commit f8fdd02)
as a kubernetes_asyncio configuration, and the :class:`~controller_manager.client.KubeClient` over
it. The CA bundle lives in a private temporary file only for the instant the TLS context loads it.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from urllib.parse import urlsplit

from kubernetes_asyncio import client as k8s

from clusteraccess.config import MemberConfigError, MemberCredentials, MemberSettings
from controller_manager.client import KubeClient

SUPPORTED_PROXY_SCHEMES = ("http", "https")


def server_url(api_endpoint: str, *, tls_configured: bool) -> str:
    """client-go's ``DefaultServerURL``: an endpoint without a scheme gets ``https://`` when a CA or
    insecure mode is configured, else ``http://``; a path is kept as a prefix. User info, query and
    fragment are refused, as Karmada's Cluster validation does."""
    endpoint = api_endpoint.strip()
    parsed = urlsplit(endpoint)
    if not parsed.scheme or not parsed.netloc:
        endpoint = ("https://" if tls_configured else "http://") + endpoint
        parsed = urlsplit(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise MemberConfigError(f"invalid apiEndpoint {api_endpoint!r}", permanent=True)
    if parsed.username is not None or parsed.password is not None or parsed.query or parsed.fragment:
        # Karmada's validation forbids them; refusing here also keeps credentials out of logged endpoints
        raise MemberConfigError("apiEndpoint must not carry user info, a query or a fragment", permanent=True)
    return endpoint.rstrip("/")


def member_configuration(cluster_name: str, settings: MemberSettings,
                         credentials: MemberCredentials) -> k8s.Configuration:
    """The kubernetes_asyncio configuration of push mode: bearer token, TLS, proxy (no CA file yet)."""
    if not settings.api_endpoint:
        raise MemberConfigError(f"the api endpoint of cluster {cluster_name} is empty", permanent=True)
    insecure = settings.insecure_skip_tls_verification
    configuration = k8s.Configuration()
    configuration.host = server_url(settings.api_endpoint, tls_configured=insecure or bool(credentials.ca_bundle))
    configuration.api_key = {"BearerToken": credentials.token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    configuration.verify_ssl = not insecure  # insecure: the CA bundle is not used at all, as in Karmada
    if settings.proxy_url:
        proxy = urlsplit(settings.proxy_url)
        if proxy.scheme not in SUPPORTED_PROXY_SCHEMES or not proxy.hostname:
            raise MemberConfigError(f"proxyURL of cluster {cluster_name}: unsupported proxy scheme "
                                    f"{proxy.scheme!r} (supported: {', '.join(SUPPORTED_PROXY_SCHEMES)})",
                                    permanent=True)
        configuration.proxy = settings.proxy_url
        if settings.proxy_header:
            configuration.proxy_headers = dict(settings.proxy_header)
    return configuration


def new_member_client(cluster_name: str, settings: MemberSettings, credentials: MemberCredentials, *,
                      timeout: float, qps: float = 40.0, burst: int = 60) -> KubeClient:
    """A :class:`KubeClient` for the member. Call from the event loop (it opens an aiohttp session).

    kubernetes_asyncio only takes a CA as a file: the bundle goes to a private (0600) temporary file
    that is removed as soon as the TLS context has loaded it. Only that CA is trusted (Go's
    ``RootCAs``); without one, the system roots are.
    """
    configuration = member_configuration(cluster_name, settings, credentials)
    ca_path = ""
    if credentials.ca_bundle and not settings.insecure_skip_tls_verification:
        fd, ca_path = tempfile.mkstemp(prefix="member-ca-", suffix=".pem")
        with os.fdopen(fd, "wb") as handle:
            handle.write(credentials.ca_bundle)
        configuration.ssl_ca_cert = ca_path
    try:
        api_client = k8s.ApiClient(configuration)
    except (ssl.SSLError, ValueError) as exc:
        raise MemberConfigError(f"the caBundle of cluster {cluster_name} cannot be loaded: {exc}") from None
    finally:
        if ca_path:
            with contextlib.suppress(OSError):
                os.unlink(ca_path)
    return KubeClient(api_client, qps=qps, burst=burst, timeout=timeout)


__all__ = ["member_configuration", "new_member_client", "server_url"]
