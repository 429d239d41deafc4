"""The core Kubernetes resources the components and the dev plane read and write.

Events and Leases belong to ``controller_manager`` (``events.py``, ``leaselock.py``).
"""

from __future__ import annotations

from controller_manager.client import Resource

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
NODES = Resource("", "v1", "nodes", "Node", False)
PODS = Resource("", "v1", "pods", "Pod", True)
SECRETS = Resource("", "v1", "secrets", "Secret", True)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
SERVICES = Resource("", "v1", "services", "Service", True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True)
REPLICA_SETS = Resource("apps", "v1", "replicasets", "ReplicaSet", True)
