"""The Karmada resources the components read and write (core Kubernetes ones: ``kube_api.resources``)."""

from __future__ import annotations

from controller_manager.resource import Resource

WORKLOAD_REBALANCERS = Resource("apps.karmada.io", "v1alpha1", "workloadrebalancers", "WorkloadRebalancer", False)
RESOURCE_BINDINGS = Resource("work.karmada.io", "v1alpha2", "resourcebindings", "ResourceBinding", True)
CLUSTER_RESOURCE_BINDINGS = Resource("work.karmada.io", "v1alpha2", "clusterresourcebindings",
                                     "ClusterResourceBinding", False)
WORKS = Resource("work.karmada.io", "v1alpha1", "works", "Work", True)
CLUSTERS = Resource("cluster.karmada.io", "v1alpha1", "clusters", "Cluster", False)
PROPAGATION_POLICIES = Resource("policy.karmada.io", "v1alpha1", "propagationpolicies", "PropagationPolicy", True)
CLUSTER_PROPAGATION_POLICIES = Resource("policy.karmada.io", "v1alpha1", "clusterpropagationpolicies",
                                        "ClusterPropagationPolicy", False)
