"""Member-cluster access: a client and shared informers per Karmada Cluster, kept in step with the Clusters.

Karmada's counterparts are ``pkg/util/membercluster_client.go`` (a member's client built from its
Cluster and Secret) and ``pkg/util/fedinformer`` (informers per member cluster). The descheduler's
estimator client answers from these caches, and the dev plane's Karmada simulation reaches its
members through them, so the package belongs to neither.

* :mod:`clusteraccess.config` — the Cluster fields and Secret credentials a member client is built from.
* :mod:`clusteraccess.client` — one member's API client: endpoint, bearer token, TLS, proxy.
* :mod:`clusteraccess.cluster` — one member: its client, informers and caches, and their readiness.
* :mod:`clusteraccess.registry` — the members, started, replaced and closed as Clusters change.
"""
