"""The Kubernetes resources the components and the dev plane read and write.

The core ones, and the kinds of resource templates the detector propagates and the resource
interpreter (``interpreter``) knows.

Events and Leases belong to ``controller_manager`` (``events.py``, ``leaselock.py``).
"""

from __future__ import annotations

from controller_manager.resource import Resource

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
NODES = Resource("", "v1", "nodes", "Node", False)
PODS = Resource("", "v1", "pods", "Pod", True)
SECRETS = Resource("", "v1", "secrets", "Secret", True)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
SERVICES = Resource("", "v1", "services", "Service", True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True)
REPLICA_SETS = Resource("apps", "v1", "replicasets", "ReplicaSet", True)
STATEFUL_SETS = Resource("apps", "v1", "statefulsets", "StatefulSet", True)
DAEMON_SETS = Resource("apps", "v1", "daemonsets", "DaemonSet", True)
JOBS = Resource("batch", "v1", "jobs", "Job", True)
CRON_JOBS = Resource("batch", "v1", "cronjobs", "CronJob", True)
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount", True)
PERSISTENT_VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume", False)
PERSISTENT_VOLUME_CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role", True)
ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True)
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False)
POD_DISRUPTION_BUDGETS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True)
HORIZONTAL_POD_AUTOSCALERS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler",
                                      True)
INGRESSES = Resource("networking.k8s.io", "v1", "ingresses", "Ingress", True)
