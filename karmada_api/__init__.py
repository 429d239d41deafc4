"""Karmada API knowledge in one place: resources, names, labels, annotations, bindings,
placement and taints (metav1 time and conditions are Kubernetes' rules: ``kube_api``).

``controllers``, ``estimator``, ``descheduler`` and ``devplane`` import this; nothing here
does I/O.
"""
