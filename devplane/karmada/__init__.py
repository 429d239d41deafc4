"""The simulation of Karmada's control plane around our product components.

Detector, scheduler, binding, execution, work status, cluster status, taint manager and
graceful eviction, each a controller on our own framework (``controller_manager``), run by
``karmada-devplane up`` against the host API server. Each follows the Karmada controller it is
named after (Karmada at commit f8fdd02; each module cites its sources) so that outcomes match
real Karmada.
"""
