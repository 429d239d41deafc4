"""Kubernetes API knowledge in one place: core resources, quantities, label selectors, node
affinity, taints and tolerations, owner references, metav1 time and conditions — the Kubernetes
counterpart of ``karmada_api``.

Exact Kubernetes semantics on parsed JSON dicts; imports only ``controller_manager.client``,
``controller_manager.objects`` and the standard library, and does no I/O.
"""
