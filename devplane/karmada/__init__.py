"""The simulation of Karmada's control plane around our product components.

Detector, scheduler, binding, execution, work status, cluster status, taint manager and
graceful eviction, each a controller on our own framework (``controller_manager``), run by
``karmada-devplane up`` against the host API server. Written from
``../shared/spec/karmada-behaviour.md`` so that outcomes match real Karmada.
"""
