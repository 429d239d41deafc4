"""Named controllers and Karmada's ``--controllers`` selection (``*``, ``foo``, ``-foo``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from controller_manager.manager import Manager
from controller_manager.ratelimiter import RateLimiterOptions
from controller_manager.rbac import PolicyRule
from estimator.kinds import WorkloadKinds

# Every controller name Karmada's controller-manager knows: naming one of these that we do not
# implement is not an error (the same flags work for both), only a warning.
KARMADA_CONTROLLERS = frozenset({
    "agentcsrapproving", "applicationFailover", "binding", "bindingStatus", "cluster", "clusterStatus",
    "clustertaintpolicy", "cronFederatedHorizontalPodAutoscaler", "deploymentReplicasSyncer", "endpointSlice",
    "endpointsliceCollect", "endpointsliceDispatch", "execution", "federatedHorizontalPodAutoscaler",
    "federatedResourceQuotaEnforcement", "federatedResourceQuotaStatus", "federatedResourceQuotaSync",
    "gracefulEviction", "hpaScaleTargetMarker", "multiclusterservice", "namespace", "remedy", "serviceExport",
    "serviceImport", "unifiedAuth", "workStatus", "workloadRebalancer"})


@dataclass(frozen=True)
class Context:
    """What a controller's setup needs besides the manager."""

    args: argparse.Namespace
    rate_limiter: RateLimiterOptions
    workload_kinds: WorkloadKinds
    """The kinds of ``--unschedulable-pod-selectors``, read and checked once by ``main`` before anything starts."""


Setup = Callable[[Manager, Context], None]


@dataclass(frozen=True)
class ControllerEntry:
    """A ``--controllers`` name, how to set it up, and the RBAC rules its code declares."""

    name: str
    setup: Setup
    enabled_by_default: bool = True
    rules: Sequence[PolicyRule] = ()


def is_enabled(name: str, selection: Sequence[str], *, enabled_by_default: bool = True) -> bool:
    """Karmada's rule: the first ``name``/``-name`` entry decides; otherwise ``*`` enables the defaults."""
    for entry in selection:
        if entry == name:
            return True
        if entry == f"-{name}":
            return False
    return "*" in selection and enabled_by_default


def parse_selection(text: str) -> list[str]:
    """``--controllers=*,-foo`` → ["*", "-foo"] (empty items dropped)."""
    return [part.strip() for part in text.split(",") if part.strip()]


def unknown_names(selection: Sequence[str], known: Sequence[str]) -> list[str]:
    names = {entry.lstrip("-") for entry in selection if entry != "*"}
    return sorted(n for n in names if n not in known)
