"""The clusterFailback controller (off by default): fail evicted workloads back to a recovered cluster.

``recovery`` holds the pure rules, ``controller`` the fail-back reconciler, ``recorder`` the eviction recorder,
``wiring`` their informers and RBAC, ``options`` the ``--failback-*`` flags; docs/failback.md.
"""
