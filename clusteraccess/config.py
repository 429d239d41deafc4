"""What a member client is built from: the Cluster's settings and the credentials of its Secret.

As Karmada's push mode builds a member client (``pkg/util/membercluster_client.go``
``BuildClusterConfig`` at Karmada commit f8fdd02): ``spec.apiEndpoint``, the bearer token and CA
bundle of the Secret ``spec.secretRef`` (keys ``token`` and ``caBundle``),
``spec.insecureSkipTLSVerification`` (then the CA bundle is not used) and ``spec.proxyURL`` /
``spec.proxyHeader``. Token values are never logged: :class:`MemberCredentials` hides them from
``repr`` and errors name the cluster and Secret only.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.client import KubeClient
from controller_manager.objects import Obj
from controller_manager.rbac import PolicyRule, for_resources
from controller_manager.resource import InvalidName
from kube_api.resources import SECRETS

HOST_RBAC_RULES: list[PolicyRule] = for_resources((SECRETS,), "get")
"""On the Karmada API server: GET of each Cluster's ``spec.secretRef`` Secret (read_credentials), never
a list or watch, so no other Secret is readable in bulk. Cluster-wide, because a Cluster may name a
Secret in any namespace (``karmada-cluster`` by convention). The Clusters informer is the caller's."""

SECRET_TOKEN_KEY = "token"  # clusterv1alpha1.SecretTokenKey
SECRET_CA_KEY = "caBundle"  # clusterv1alpha1.SecretCADataKey


class MemberConfigError(Exception):
    """The Cluster or its Secret does not describe a usable member client.

    ``permanent`` errors come from the Cluster spec itself (no apiEndpoint, no secretRef, a bad
    proxy URL): retrying cannot help until the Cluster changes, which replaces the member anyway.
    The others (Secret missing or incomplete) are retried with backoff.
    """

    def __init__(self, message: str, *, permanent: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent


@dataclass(frozen=True, slots=True)
class MemberSettings:
    """The Cluster fields a member client depends on; a change of any of them replaces the member."""

    uid: str
    api_endpoint: str
    secret_namespace: str
    secret_name: str
    insecure_skip_tls_verification: bool
    proxy_url: str
    proxy_header: tuple[tuple[str, str], ...]

    @classmethod
    def from_cluster(cls, cluster: Obj) -> MemberSettings:
        spec = objects.spec(cluster)
        ref = spec.get("secretRef") or {}
        headers = spec.get("proxyHeader") or {}
        return cls(uid=objects.uid(cluster), api_endpoint=str(spec.get("apiEndpoint") or ""),
                   secret_namespace=str(ref.get("namespace") or ""), secret_name=str(ref.get("name") or ""),
                   insecure_skip_tls_verification=bool(spec.get("insecureSkipTLSVerification")),
                   proxy_url=str(spec.get("proxyURL") or ""),
                   proxy_header=tuple(sorted((str(k), str(v)) for k, v in headers.items())))


@dataclass(frozen=True, slots=True)
class MemberCredentials:
    """The decoded Secret values. ``repr`` hides them so they never reach a log line."""

    token: str
    ca_bundle: bytes

    def __repr__(self) -> str:
        return f"MemberCredentials(token=<{len(self.token)} chars>, ca_bundle=<{len(self.ca_bundle)} bytes>)"

    @property
    def digest(self) -> str:
        """A fingerprint of the values (to notice a rotated token or CA without keeping a copy around)."""
        return hashlib.sha256(self.token.encode() + b"\0" + self.ca_bundle).hexdigest()


def _decode(data: Obj, key: str) -> bytes:
    value = data.get(key)
    if not value:
        return b""
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise MemberConfigError(f"secret key {key!r} is not valid base64") from None


def credentials_from_secret(cluster_name: str, secret: Obj) -> MemberCredentials:
    """``token`` (required, non-empty) and ``caBundle`` from a Secret's ``data`` (base64, as stored)."""
    data = secret.get("data") or {}
    token = _decode(data, SECRET_TOKEN_KEY).decode("utf-8", "replace").strip()
    if not token:
        raise MemberConfigError(f"the secret for cluster {cluster_name} is missing a non-empty value for "
                                f"{SECRET_TOKEN_KEY!r}")
    return MemberCredentials(token=token, ca_bundle=_decode(data, SECRET_CA_KEY))


async def read_credentials(host: KubeClient, cluster_name: str, settings: MemberSettings) -> MemberCredentials:
    """The member's credentials from the host (Karmada) API server's Secret ``spec.secretRef``."""
    if not settings.secret_namespace or not settings.secret_name:
        raise MemberConfigError(f"cluster {cluster_name} does not have a secret", permanent=True)
    try:
        secret = await host.get(SECRETS, settings.secret_name, settings.secret_namespace)
    except InvalidName as exc:  # spec.secretRef names what no Secret can be called: nothing will change that
        raise MemberConfigError(f"cluster {cluster_name}: spec.secretRef: {exc}", permanent=True) from None
    except ApiError as exc:
        if exc.is_not_found:
            raise MemberConfigError(f"secret {settings.secret_namespace}/{settings.secret_name} of cluster "
                                    f"{cluster_name} not found") from None
        raise
    return credentials_from_secret(cluster_name, secret)


__all__ = [
    "HOST_RBAC_RULES",
    "MemberConfigError",
    "MemberCredentials",
    "MemberSettings",
    "credentials_from_secret",
    "read_credentials",
]
