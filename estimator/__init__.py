"""Karmada's replica estimators, as pure functions over parsed JSON objects.

* :mod:`estimator.general` — the client-side ``general-estimator`` (Cluster ``resourceSummary``).
* :mod:`estimator.accurate` — the scheduler-estimator's NodeResourceEstimator over member Nodes and
  Pods, with :class:`~estimator.accurate.NodeUsage`, an incrementally maintained snapshot.
* :mod:`estimator.unschedulable` — GetUnschedulableReplicas for the descheduler: the predicate,
  and each kind's Pods (a Deployment's newest ReplicaSet's, a StatefulSet's or ReplicaSet's own,
  a declared kind's by its selector).
* :mod:`estimator.podselectors` — the operator's file of custom kinds and their Pod selectors.
* :mod:`estimator.merge` — plugin-result merging (server) and per-cluster combination (client).
* :mod:`estimator.caches` — what the estimator reads of one member's caches
  (:class:`~estimator.caches.MemberView`), and the unschedulable estimate over them.
* :mod:`estimator.kinds` — the supported workload kinds and how each one's Pods are found
  (:class:`~estimator.kinds.WorkloadKinds`).
* :mod:`estimator.client` — the client the descheduler asks, each member cluster on its own.

No I/O here: the members' clients and informers (``clusteraccess``) and the scheduler/descheduler
wire these in.
"""

from __future__ import annotations

from estimator.accurate import NodeUsage
from estimator.general import GeneralEstimator
from estimator.merge import UNAUTHENTIC, Code, EstimateError, PluginResult
from estimator.unschedulable import UnsupportedWorkloadError, get_unschedulable_replicas

__all__ = [
    "UNAUTHENTIC",
    "Code",
    "EstimateError",
    "GeneralEstimator",
    "NodeUsage",
    "PluginResult",
    "UnsupportedWorkloadError",
    "get_unschedulable_replicas",
]
