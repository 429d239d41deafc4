"""Wiring of one member cluster's simulation into its Manager.

Each member is a plain Kubernetes dev API server with one Manager (and one client) of its own;
this registers what kube-controller-manager, kube-scheduler and the kubelets would do there.
Controller names are prefixed with the cluster (``member1/deployment-controller``) because they
are Prometheus label values, unique per process, and several members run in one process.
"""

from __future__ import annotations

from controller_manager.controller import Controller
from controller_manager.manager import Manager

from .deployments import setup_deployment_controller
from .kubelet import setup_kubelet
from .podscheduler import setup_pod_scheduler
from .replicasets import setup_replicaset_controller
from .statefulsets import setup_statefulset_controller


def setup_member_simulation(manager: Manager, *, cluster_name: str) -> list[Controller]:
    """Register the member's controllers (names prefixed with the cluster, e.g.
    'member1/deployment-controller', since controller names are Prometheus label values unique per
    process and several members run in one process)."""
    return [
        setup_deployment_controller(manager, cluster_name=cluster_name),
        setup_replicaset_controller(manager, cluster_name=cluster_name),
        setup_statefulset_controller(manager, cluster_name=cluster_name),
        setup_pod_scheduler(manager, cluster_name=cluster_name),
        setup_kubelet(manager, cluster_name=cluster_name),
    ]
