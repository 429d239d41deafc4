"""The clusterFailback controller (off by default): fail evicted workloads back to a recovered cluster.

``recovery`` holds the pure rules, ``controller`` the reconcilers and their wiring; docs/failback.md.
"""
