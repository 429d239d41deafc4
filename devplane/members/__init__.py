"""The simulation of a member cluster's kube-controller-manager, kube-scheduler and kubelets.

Deployment → ReplicaSet → Pods, a pod scheduler that fits requests on Nodes, and a kubelet
that runs bound pods, each a controller on our framework against one member API server.
"""
