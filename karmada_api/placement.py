"""Placement knowledge: replica scheduling strategies, the applied-placement annotation, ClusterMatches.

Shared by the scheduler simulation, the taint manager, the descheduler and preserve mode: what a
``Placement`` means (``pkg/apis/policy/v1alpha1``), how a binding's last scheduling is
recorded (``policy.karmada.io/applied-placement``), when it no longer matches the binding's placement
(``placementChanged``) and when a manual reschedule is pending (``RescheduleRequired``). Pure functions
over parsed JSON dicts; nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from controller_manager import objects
from controller_manager.objects import Obj
from kube_api.affinity import node_selector_matches
from kube_api.selectors import label_selector_matches
from kube_api.shapes import NodeSelectorRequirement
from kube_api.timeutil import parse_time

from .labels import APPLIED_PLACEMENT_ANNOTATION
from .shapes import (
    BindingSpec,
    ClusterAffinity,
    Placement,
    ReplicaSchedulingStrategy,
    TargetCluster,
    cluster_spec,
)

# ReplicaSchedulingType / ReplicaDivisionPreference values.
DUPLICATED = "Duplicated"
DIVIDED = "Divided"
AGGREGATED = "Aggregated"
WEIGHTED = "Weighted"

# The scheduler's strategy names (pkg/scheduler/core/assignment.go).
STRATEGY_DUPLICATED = "Duplicated"
STRATEGY_AGGREGATED = "Aggregated"
STRATEGY_STATIC_WEIGHT = "StaticWeight"
STRATEGY_DYNAMIC_WEIGHT = "DynamicWeight"

# Spread constraint fields and the ClusterAffinity field selector keys.
SPREAD_BY_CLUSTER = "cluster"
SPREAD_BY_REGION = "region"
SPREAD_BY_ZONE = "zone"
SPREAD_BY_PROVIDER = "provider"
FIELD_PROVIDER = "provider"
FIELD_REGION = "region"
FIELD_ZONE = "zone"


# --------------------------------------------------------------------------------------------------
# Strategies


def replica_scheduling(placement: Obj | None) -> ReplicaSchedulingStrategy | None:
    """``placement.replicaScheduling`` as a dict, or None (also when ``placement`` is not an object).

    ``placement`` stays an untyped mapping: it may come from an annotation, which may hold anything.
    """
    if not isinstance(placement, Mapping):
        return None
    strategy = placement.get("replicaScheduling")
    return cast(ReplicaSchedulingStrategy, strategy) if isinstance(strategy, Mapping) else None


def replica_scheduling_type(placement: Obj | None) -> str:
    """``Placement.ReplicaSchedulingType()``: no ``replicaScheduling`` means Duplicated."""
    strategy = replica_scheduling(placement)
    if strategy is None:
        return DUPLICATED
    return str(strategy.get("replicaSchedulingType") or "")


def dynamic_weight(placement: Obj | None) -> str:
    """``weightPreference.dynamicWeight`` ("" when unset)."""
    weights = (replica_scheduling(placement) or {}).get("weightPreference")
    return str(weights.get("dynamicWeight") or "") if isinstance(weights, Mapping) else ""


def strategy_type(placement: Obj | None) -> str:
    """The assignment strategy (``newAssignState``); "" for an unsupported combination."""
    kind = replica_scheduling_type(placement)
    if kind == DUPLICATED:
        return STRATEGY_DUPLICATED
    if kind != DIVIDED:
        return ""
    preference = (replica_scheduling(placement) or {}).get("replicaDivisionPreference")
    if preference == AGGREGATED:
        return STRATEGY_AGGREGATED
    if preference == WEIGHTED:
        return STRATEGY_DYNAMIC_WEIGHT if dynamic_weight(placement) else STRATEGY_STATIC_WEIGHT
    return ""


def is_dynamic_divided(placement: Obj | None) -> bool:
    """Divided + (Weighted with a dynamicWeight, or Aggregated) (``helper.IsReplicaDynamicDivided``).

    Only these strategies let the scheduler move descheduled replicas elsewhere: static
    weights would put them straight back, and Duplicated has nothing to divide. A missing
    ``replicaScheduling`` means Duplicated.
    """
    return strategy_type(placement) in (STRATEGY_DYNAMIC_WEIGHT, STRATEGY_AGGREGATED)


def is_static_weighted(placement: Obj | None) -> bool:
    """Divided + Weighted with no weightPreference, or a static list and no dynamicWeight.

    Spread constraints are ignored for such placements (``shouldIgnoreSpreadConstraint``).
    """
    strategy = replica_scheduling(placement)
    if strategy is None or strategy.get("replicaSchedulingType") != DIVIDED:
        return False
    if strategy.get("replicaDivisionPreference") != WEIGHTED:
        return False
    weights = strategy.get("weightPreference")
    if not isinstance(weights, Mapping):
        return True
    return bool(weights.get("staticWeightList")) and not weights.get("dynamicWeight")


# --------------------------------------------------------------------------------------------------
# Binding spec helpers (pkg/apis/work/v1alpha2/binding_types_helper.go, pkg/util/binding.go)


def is_workload(spec: BindingSpec) -> bool:
    """``IsWorkload``: replicas > 0, or replicaRequirements set, or at least one component."""
    return (int(spec.get("replicas") or 0) > 0 or spec.get("replicaRequirements") is not None
            or len(spec.get("components") or []) >= 1)


def target_contains(spec: BindingSpec, name: str) -> bool:
    """``TargetContains``: whether ``name`` is in the binding spec's ``clusters``."""
    return any(c.get("name") == name for c in spec.get("clusters") or [])


def assigned_replicas(spec: BindingSpec, name: str) -> int:
    """``AssignedReplicasForCluster``: the replicas ``spec.clusters`` gives ``name`` (0 if absent)."""
    for target in spec.get("clusters") or []:
        if target.get("name") == name:
            return int(target.get("replicas") or 0)
    return 0


def sum_of_replicas(clusters: Sequence[TargetCluster] | None) -> int:
    return sum(int(c.get("replicas") or 0) for c in clusters or [])


def in_graceful_eviction_tasks(spec: BindingSpec, name: str) -> bool:
    """``ClusterInGracefulEvictionTasks``."""
    return any(task.get("fromCluster") == name for task in spec.get("gracefulEvictionTasks") or [])


def is_binding_replicas_changed(spec: BindingSpec, strategy: ReplicaSchedulingStrategy | None) -> bool:
    """``IsBindingReplicasChanged``: the result no longer sums (Divided) or equals (Duplicated) ``replicas``."""
    if strategy is None:
        return False
    replicas = int(spec.get("replicas") or 0)
    kind = strategy.get("replicaSchedulingType")
    if kind == DUPLICATED:
        return any(int(c.get("replicas") or 0) != replicas for c in spec.get("clusters") or [])
    if kind == DIVIDED:
        return sum_of_replicas(spec.get("clusters")) != replicas
    return False


def _whole_seconds(value: str | datetime | None) -> datetime | None:
    if value is None or value == "":
        return None
    moment = parse_time(value) if isinstance(value, str) else value
    return moment.replace(microsecond=0)


def reschedule_required(triggered_at: str | datetime | None, last_scheduled: str | datetime | None) -> bool:
    """``RescheduleRequired``: a trigger strictly after the last successful schedule (second precision).

    A binding never scheduled (no ``lastScheduledTime``) ignores the trigger.
    """
    trigger, last = _whole_seconds(triggered_at), _whole_seconds(last_scheduled)
    return trigger is not None and last is not None and trigger > last


# --------------------------------------------------------------------------------------------------
# The applied-placement annotation


def placement_json(placement: Obj | None) -> str:
    """Compact JSON of a placement, as written into the applied-placement annotation."""
    return json.dumps(placement if placement is not None else None, separators=(",", ":"))


class PlacementError(ValueError):
    """The binding has no usable applied placement.

    The parser raises it when the annotation is present but not a placement (malformed JSON,
    not an object); the taint manager also when it is missing (retried, never evicted).
    """


def _annotations(binding: Obj) -> Obj:
    meta = binding.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    return annotations if isinstance(annotations, Mapping) else {}


def applied_placement_text(binding: Obj) -> str:
    """The raw annotation ("" when absent), as the scheduler compares it before writing it."""
    value = _annotations(binding).get(APPLIED_PLACEMENT_ANNOTATION)
    return value if isinstance(value, str) else ""


def parse_placement(text: str) -> dict[str, Any]:
    """Parse an annotation value; JSON ``null`` is the zero placement (Go unmarshals it into a zero struct).

    :class:`PlacementError` when ``text`` is not JSON (``""`` included) or not a JSON object.
    """
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise PlacementError(f"invalid applied placement annotation: {exc}") from exc
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PlacementError(f"invalid applied placement annotation: expected an object, got {type(value).__name__}")
    return value


def get_applied_placement(annotations: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``GetAppliedPlacement``: the parsed annotation out of an annotations map.

    The one error convention of the applied placement: None when the annotation is absent,
    :class:`PlacementError` when it is present but not a placement (see :func:`parse_placement`).
    Callers map that error to their own behaviour (skip, retry, treat as unchanged).
    """
    text = (annotations or {}).get(APPLIED_PLACEMENT_ANNOTATION)
    if text is None:
        return None
    return parse_placement(text)


def applied_placement(binding: Obj) -> dict[str, Any] | None:
    """The placement of the binding's last successful schedule: :func:`get_applied_placement` of its annotations."""
    return get_applied_placement(_annotations(binding))


# --------------------------------------------------------------------------------------------------
# placementChanged (pkg/scheduler/scheduler.go): the scheduler's and preserve mode's rule


def _omit_zero(value: Any) -> Any:
    """A JSON value with zero-valued object fields dropped, so that "absent" equals "zero" as Go's
    decoding into structs makes them (``reflect.DeepEqual`` on decoded placements)."""
    if isinstance(value, Mapping):
        return _without_zeros(_fields_omit_zero(value))
    if isinstance(value, list):
        return [_omit_zero(item) for item in value]
    return value


def _fields_omit_zero(value: Mapping[str, Any]) -> dict[str, Any]:
    """Each field of an object through :func:`_omit_zero`, the zero-valued fields themselves kept."""
    return {key: _omit_zero(item) for key, item in value.items()}


def _without_zeros(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {key: item for key, item in fields.items() if item not in (None, "", 0, False, {}, [])}


def _term(terms: Sequence[Obj] | None, name: str) -> Obj | None:
    return next((t for t in terms or [] if t.get("affinityName") == name), None)


def cluster_affinities_changed(terms: Sequence[Obj] | None, applied_terms: Sequence[Obj] | None,
                               observed_name: str) -> bool:
    """Only the observed term matters: changed if unknown on either side or different."""
    if not observed_name:
        return True
    current, applied = _term(terms, observed_name), _term(applied_terms, observed_name)
    if current is None or applied is None:
        return True
    return bool(_omit_zero(current) != _omit_zero(applied))


def placement_changed(placement: Obj, applied_text: str, observed_affinity_name: str) -> bool:
    """``placementChanged``: the binding's placement differs from the one last scheduled with.

    No annotation: changed. Unparseable: unchanged. Otherwise any difference in clusterAffinity,
    clusterTolerations, spreadConstraints or replicaScheduling; failing that, a change of the
    observed ``clusterAffinities`` term.
    """
    if not applied_text:
        return True
    try:
        applied = parse_placement(applied_text)
    except PlacementError:
        return False
    current, last = _fields_omit_zero(placement), _fields_omit_zero(applied)  # each side normalized once
    if _without_zeros(current) == _without_zeros(last):
        return False
    for key in ("clusterAffinity", "clusterTolerations", "spreadConstraints", "replicaScheduling"):
        if current.get(key) != last.get(key):
            return True
    return cluster_affinities_changed(placement.get("clusterAffinities"), applied.get("clusterAffinities"),
                                      observed_affinity_name)


# --------------------------------------------------------------------------------------------------
# ClusterMatches (pkg/util/cluster.go)


def _match_zones(expression: NodeSelectorRequirement, zones: Sequence[str]) -> bool:
    """A ``zone`` expression: every zone of the cluster must be in (In) / out of (NotIn) the values."""
    if not zones:
        return False
    values = set(expression.get("values") or [])
    operator = expression.get("operator")
    if operator == "In":
        return all(zone in values for zone in zones)
    if operator == "NotIn":
        return all(zone not in values for zone in zones)
    return False


def _cluster_fields(cluster: Obj) -> dict[str, str]:
    spec = cluster_spec(cluster)
    fields: dict[str, str] = {}
    if spec.get("provider"):
        fields[FIELD_PROVIDER] = str(spec.get("provider"))
    if spec.get("region"):
        fields[FIELD_REGION] = str(spec.get("region"))
    return fields


def affinity_allows(placement: Placement, cluster: Obj) -> bool:
    """Whether the placement's ``clusterAffinity``, or any term of its ``clusterAffinities`` (each term holds
    its affinity fields itself, beside ``affinityName``), lets ``cluster`` be chosen."""
    terms = placement.get("clusterAffinities")
    if terms:
        return any(cluster_matches(cluster, term) for term in terms)
    return cluster_matches(cluster, placement.get("clusterAffinity"))


def cluster_matches(cluster: Obj, affinity: ClusterAffinity | None) -> bool:
    """``ClusterMatches``: not excluded, label selector, field selector and clusterNames all hold.

    An empty (or None) affinity matches every cluster; an invalid selector matches none.
    """
    if not affinity:
        return True
    name = objects.name(cluster)
    if name in (affinity.get("exclude") or []):
        return False
    selector = affinity.get("labelSelector")
    if selector is not None:
        try:
            if not label_selector_matches(selector, objects.labels(cluster)):
                return False
        except ValueError:
            return False
    field_selector = affinity.get("fieldSelector")
    if field_selector is not None:
        others: list[NodeSelectorRequirement] = []
        zones = list(cluster_spec(cluster).get("zones") or [])
        for expression in field_selector.get("matchExpressions") or []:
            if expression.get("key") == FIELD_ZONE:
                if not _match_zones(expression, zones):
                    return False
                continue
            others.append(expression)
        if others and not node_selector_matches(_cluster_fields(cluster), {}, [{"matchExpressions": others}]):
            return False
    names = affinity.get("clusterNames") or []
    return not names or name in names
