"""The scheduler's filter plugins (``pkg/scheduler/framework/plugins``) and FitError.

A cluster is feasible when every filter passes; a failing filter gives Karmada's reason
text, which ends up in the FitError histogram ("0/3 clusters are available: 1 cluster(s)
did not have the API resource, 2 cluster(s) did not match the placement cluster affinity
constraint."). Karmada runs its plugins in map order, so which reason a cluster reports when
several filters fail is not deterministic there; here the order is fixed (the order of
:data:`FILTERS`) and only the first failing filter is reported, as Karmada does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from controller_manager import objects
from controller_manager.objects import Obj
from karmada_api.placement import (
    SPREAD_BY_PROVIDER,
    SPREAD_BY_REGION,
    SPREAD_BY_ZONE,
    cluster_matches,
    in_graceful_eviction_tasks,
    target_contains,
)
from karmada_api.shapes import BindingSpec, ClusterAffinity, Placement
from kube_api.conditions import find_condition
from kube_api.tolerations import find_untolerated_taint

API_ENABLED = "Enabled"
API_DISABLED = "Disabled"
API_UNKNOWN = "Unknown"
COMPLETE_API_ENABLEMENTS = "CompleteAPIEnablements"

REASON_NO_API = "cluster(s) did not have the API resource"
REASON_AFFINITY = "cluster(s) did not match the placement cluster affinity constraint"
REASON_EVICTION = "cluster(s) is in the process of eviction"
REASON_NO_PROVIDER = "cluster(s) did not have provider property"
REASON_NO_REGION = "cluster(s) did not have region property"
REASON_NO_ZONES = "cluster(s) did not have zones property"
NO_CLUSTER_EXISTS = "no cluster exists"


def api_enablement(cluster: Obj, api_version: str, kind: str) -> str:
    """``Cluster.APIEnablement(gvk)``: Enabled if listed; else Disabled when the list is complete, else Unknown."""
    status = objects.status(cluster)
    for enablement in status.get("apiEnablements") or []:
        if enablement.get("groupVersion") != api_version:
            continue
        if any(resource.get("kind") == kind for resource in enablement.get("resources") or []):
            return API_ENABLED
    condition = find_condition(status.get("conditions"), COMPLETE_API_ENABLEMENTS)
    if condition is not None and condition.get("status") == "True":
        return API_DISABLED
    return API_UNKNOWN


def taint_to_string(taint: Obj) -> str:
    """``Taint.ToString()``: ``key=value:effect`` (``key:effect`` without a value)."""
    key, value, effect = taint.get("key") or "", taint.get("value") or "", taint.get("effect") or ""
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"


def observed_affinity(placement: Placement, status: Obj | None) -> ClusterAffinity | None:
    """The affinity the ClusterAffinity filter applies: ``clusterAffinity``, or the observed term of
    ``clusterAffinities`` (``status.schedulerObservingAffinityName``); None when neither applies."""
    affinity = placement.get("clusterAffinity")
    if affinity is not None:
        return affinity
    observed = (status or {}).get("schedulerObservingAffinityName") or ""
    for term in placement.get("clusterAffinities") or []:
        if term.get("affinityName") == observed:
            return term
    return None


def affinity_index(terms: Sequence[Obj] | None, observed_name: str) -> int:
    """``getAffinityIndex``: the index of the term named ``observed_name`` (0 if empty or unknown)."""
    if not observed_name:
        return 0
    for index, term in enumerate(terms or []):
        if term.get("affinityName") == observed_name:
            return index
    return 0


# --------------------------------------------------------------------------------------------------
# Filters: (cluster, binding spec, binding status) -> None when the cluster passes, else the reason.

Filter = Callable[[Obj, BindingSpec, Obj], str | None]


def filter_api_enablement(cluster: Obj, spec: BindingSpec, _status: Obj) -> str | None:
    """The template's kind must be served by the cluster (clusters already scheduled to pass)."""
    if target_contains(spec, objects.name(cluster)):
        return None
    resource = spec.get("resource") or {}
    if api_enablement(cluster, str(resource.get("apiVersion") or ""), str(resource.get("kind") or "")) == API_ENABLED:
        return None
    return REASON_NO_API


def filter_taint_toleration(cluster: Obj, spec: BindingSpec, _status: Obj) -> str | None:
    """NoSchedule and NoExecute taints must be tolerated (clusters already scheduled pass: the taint
    manager evicts from them)."""
    if target_contains(spec, objects.name(cluster)):
        return None
    tolerations = (spec.get("placement") or {}).get("clusterTolerations") or []
    taint = find_untolerated_taint(objects.spec(cluster).get("taints"), tolerations)
    return None if taint is None else f"cluster(s) had untolerated taint {{{taint_to_string(taint)}}}"


def filter_cluster_affinity(cluster: Obj, spec: BindingSpec, status: Obj) -> str | None:
    affinity = observed_affinity(spec.get("placement") or {}, status)
    if affinity is None or cluster_matches(cluster, affinity):
        return None
    return REASON_AFFINITY


def filter_spread_constraint(cluster: Obj, spec: BindingSpec, _status: Obj) -> str | None:
    """Clusters lacking a property some constraint spreads by cannot take part."""
    cluster_spec = objects.spec(cluster)
    for constraint in (spec.get("placement") or {}).get("spreadConstraints") or []:
        field = constraint.get("spreadByField")
        if field == SPREAD_BY_PROVIDER and not cluster_spec.get("provider"):
            return REASON_NO_PROVIDER
        if field == SPREAD_BY_REGION and not cluster_spec.get("region"):
            return REASON_NO_REGION
        if field == SPREAD_BY_ZONE and not cluster_spec.get("zones"):
            return REASON_NO_ZONES
    return None


def filter_cluster_eviction(cluster: Obj, spec: BindingSpec, _status: Obj) -> str | None:
    """A cluster the workload is being gracefully evicted from is not a candidate."""
    return REASON_EVICTION if in_graceful_eviction_tasks(spec, objects.name(cluster)) else None


FILTERS: list[tuple[str, Filter]] = [
    ("APIEnablement", filter_api_enablement),
    ("TaintToleration", filter_taint_toleration),
    ("ClusterAffinity", filter_cluster_affinity),
    ("SpreadConstraint", filter_spread_constraint),
    ("ClusterEviction", filter_cluster_eviction),
]


def run_filters(cluster: Obj, spec: BindingSpec, status: Obj | None) -> str | None:
    """The reason of the first failing filter, or None when the cluster is feasible."""
    for _plugin, check in FILTERS:
        reason = check(cluster, spec, status or {})
        if reason is not None:
            return reason
    return None


class FitError(Exception):
    """No cluster passed the filters (``framework.FitError``): condition reason ``NoClusterFit``."""

    def __init__(self, num_all_clusters: int, diagnosis: Mapping[str, Sequence[str]]) -> None:
        self.num_all_clusters = num_all_clusters
        self.diagnosis = {name: list(reasons) for name, reasons in diagnosis.items()}
        super().__init__(self._message())

    def _message(self) -> str:
        if self.num_all_clusters == 0 or not self.diagnosis:
            histogram = NO_CLUSTER_EXISTS
        else:
            counts = Counter(reason for reasons in self.diagnosis.values() for reason in reasons)
            histogram = ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))
        return f"0/{self.num_all_clusters} clusters are available: {histogram}."
