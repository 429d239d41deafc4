"""Kubernetes taints and tolerations (``v1helper.ToleratesTaint``, ``FindMatchingUntoleratedTaint``).

Exact Kubernetes semantics on parsed JSON dicts (camelCase fields), shared by Karmada's cluster
taints, the scheduler-estimator's node filters and the dev plane's pod scheduler:

* :func:`tolerates` is ``Toleration.ToleratesTaint`` with the v1.35 comparison operators (Lt/Gt)
  disabled, as Karmada calls it; :func:`find_untolerated_taint` / :func:`tolerates_all` are
  ``FindMatchingUntoleratedTaint``; :func:`get_matching_tolerations` is Karmada's helper.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from controller_manager.objects import Obj

from .shapes import node_spec

TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"
DO_NOT_SCHEDULE_EFFECTS = frozenset({TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE})
"""The effects a scheduler filter honours (PreferNoSchedule only scores)."""

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
UNSCHEDULABLE_TAINT: Mapping[str, str] = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": TAINT_EFFECT_NO_SCHEDULE}
"""The taint a cordoned node (``spec.unschedulable``) is treated as having."""


# --------------------------------------------------------------------------------------------------
# Taints and tolerations


def tolerates(toleration: Obj, taint: Obj) -> bool:
    """``Toleration.ToleratesTaint``: effect (empty = all), key (empty = all), then the operator.

    ``""``/``Equal`` compare values, ``Exists`` matches any value, any other operator never
    matches (Lt/Gt are disabled, as in Karmada). Empty key + ``Exists`` tolerates every taint.
    """
    effect = toleration.get("effect") or ""
    if effect and effect != (taint.get("effect") or ""):
        return False
    key = toleration.get("key") or ""
    if key and key != (taint.get("key") or ""):
        return False
    operator = toleration.get("operator") or ""
    if operator in ("", "Equal"):
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def tolerations_tolerate_taint(tolerations: Iterable[Obj] | None, taint: Obj) -> bool:
    """True if any toleration tolerates ``taint``."""
    return any(tolerates(toleration, taint) for toleration in tolerations or ())


def find_untolerated_taint(taints: Iterable[Obj] | None, tolerations: Sequence[Obj] | None,
                           effects: Collection[str] | None = DO_NOT_SCHEDULE_EFFECTS) -> Obj | None:
    """The first taint (among those whose effect is in ``effects``; None = all) nothing tolerates."""
    for taint in taints or ():
        if effects is not None and (taint.get("effect") or "") not in effects:
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


def tolerates_all(tolerations: Sequence[Obj] | None, taints: Iterable[Obj] | None,
                  effects: Collection[str] | None = DO_NOT_SCHEDULE_EFFECTS) -> bool:
    """True if every taint with an effect in ``effects`` (None = all effects) is tolerated."""
    return find_untolerated_taint(taints, tolerations, effects) is None


def get_matching_tolerations(taints: Sequence[Obj] | None,
                             tolerations: Sequence[Obj] | None) -> tuple[bool, list[Obj]]:
    """Karmada's ``GetMatchingTolerations``: (all tolerated, the first tolerating toleration of each).

    No taints → (True, []); taints but no tolerations → (False, []); an untolerated taint → (False, []).
    """
    if not taints:
        return True, []
    if not tolerations:
        return False, []
    used: list[Obj] = []
    for taint in taints:
        match = next((toleration for toleration in tolerations if tolerates(toleration, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def node_tolerated(node: Obj, tolerations: Sequence[Obj] | None) -> bool:
    """The estimator's node taint filter: cordon (unless tolerated) and NoSchedule/NoExecute taints."""
    spec = node_spec(node)
    if spec.get("unschedulable") and not tolerations_tolerate_taint(tolerations, UNSCHEDULABLE_TAINT):
        return False
    return tolerates_all(tolerations, spec.get("taints"))
