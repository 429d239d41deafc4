"""Karmada's name rules (pkg/util/names): bindings, Works, execution spaces."""

from __future__ import annotations

EXECUTION_SPACE_PREFIX = "karmada-es-"
RESERVED_NAMESPACES = ("karmada-system", "karmada-cluster")
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h ^= byte
        h = (h * 0x01000193) % 2**32
    return h


def safe_encode(text: str) -> str:
    """k8s.io/apimachinery rand.SafeEncodeString: map each character into a vowel-free alphabet."""
    return "".join(_SAFE_ALPHABET[ord(c) % len(_SAFE_ALPHABET)] for c in text)


def binding_name(kind: str, name: str) -> str:
    """GenerateBindingName: ``foo-deployment``; ':' in names becomes '.' (``system.controller.tom-role``)."""
    return (name.replace(":", ".") + "-" + kind).lower()


def execution_space(cluster: str) -> str:
    return EXECUTION_SPACE_PREFIX + cluster


def cluster_of_execution_space(namespace: str) -> str:
    """GetClusterName: the member whose execution space ``namespace`` is; ValueError when it is none."""
    if not namespace.startswith(EXECUTION_SPACE_PREFIX):
        raise ValueError(f"the execution space name is in wrong format: {namespace!r}")
    return namespace[len(EXECUTION_SPACE_PREFIX):]


def work_name(kind: str, name: str, namespace: str) -> str:
    """GenerateWorkName: ``foo-58bcf5bd9c`` for Deployment default/foo."""
    lowered = name.replace(":", ".").lower()
    key = (f"{namespace}-{lowered}-{kind}" if namespace else f"{lowered}-{kind}").lower()
    return f"{lowered}-{safe_encode(str(fnv32a(key.encode())))}"


def is_reserved_namespace(namespace: str) -> bool:
    return namespace in RESERVED_NAMESPACES or namespace.startswith(EXECUTION_SPACE_PREFIX)
