"""``ReflectStatus``: the part of a member object's status that Karmada reports in its Work.

The work-status controller writes what this returns into ``status.manifestStatuses`` of the Work.
Karmada's ``pkg/resourceinterpreter/default/native/reflectstatus.go``: for the kinds it knows, the
status fields the binding-status aggregation reads (with the ``FederatedGeneration`` that lets it
tell which template generation a member has caught up with), the whole ``.status`` otherwise.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

from controller_manager import objects
from controller_manager.objects import Obj
from karmada_api.labels import RESOURCE_TEMPLATE_GENERATION
from kube_api import resources as kube

from .goconvert import ReflectError, int_field, load_balancer, status_map
from .kinds import KindTable

Reflector = Callable[[Obj], dict[str, Any] | None]
_REFLECTORS: KindTable[Reflector] = KindTable()

_INT64 = re.compile(r"[+-]?[0-9]+")


def template_generation(obj: Obj) -> int:
    """The ``resourcetemplate.karmada.io/generation`` annotation as int64 ("" → 0, like strconv)."""
    text = str(objects.annotations(obj).get(RESOURCE_TEMPLATE_GENERATION) or "")
    if not text:
        return 0
    if not _INT64.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
        raise ReflectError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    return int(text)


def _federated_generation(obj: Obj) -> dict[str, Any]:
    """FederatedGeneration (both omitempty): the member generation and the template generation."""
    out: dict[str, Any] = {}
    generation = int_field(objects.metadata(obj), "generation")
    if generation:
        out["generation"] = generation
    template = template_generation(obj)
    if template:
        out["resourceTemplateGeneration"] = template
    return out


def _fields(status: dict[str, Any], always: tuple[str, ...], omitempty: tuple[str, ...],
            order: tuple[str, ...]) -> dict[str, Any]:
    """Integer fields in Go's struct order; ``omitempty`` ones dropped when zero."""
    out: dict[str, Any] = {}
    for field in order:
        value = int_field(status, field)
        if field in always or (field in omitempty and value):
            out[field] = value
    return out


def _reported(reflect: Callable[[Obj, dict[str, Any]], dict[str, Any] | None]) -> Reflector:
    """A reflector of the object's ``.status``: None when the object has none yet (not collected)."""

    def reflector(obj: Obj) -> dict[str, Any] | None:
        status = status_map(obj)
        return None if status is None else reflect(obj, status)

    return reflector


@_REFLECTORS.register(kube.DEPLOYMENTS)
@_reported
def _reflect_deployment(obj: Obj, status: dict[str, Any]) -> dict[str, Any] | None:
    fields = ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
              "unavailableReplicas")
    out = {**_federated_generation(obj), **_fields(status, (), fields, fields)}
    return out or None  # "{}": the status has not been collected from the member yet


@_REFLECTORS.register(kube.STATEFUL_SETS)
@_reported
def _reflect_statefulset(obj: Obj, status: dict[str, Any]) -> dict[str, Any] | None:
    order = ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")
    return {**_federated_generation(obj), **_fields(status, ("replicas", "availableReplicas"),
                                                    ("readyReplicas", "currentReplicas", "updatedReplicas"), order)}


@_REFLECTORS.register(kube.DAEMON_SETS)
@_reported
def _reflect_daemonset(obj: Obj, status: dict[str, Any]) -> dict[str, Any] | None:
    always = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady")
    omitempty = ("observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable")
    return {**_federated_generation(obj), **_fields(status, always, omitempty, always + omitempty)}


@_REFLECTORS.register(kube.JOBS)
@_reported
def _reflect_job(_obj: Obj, status: dict[str, Any]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    for field in ("conditions", "startTime", "completionTime"):
        if status.get(field):
            out[field] = copy.deepcopy(status[field])
    out.update(_fields(status, (), ("active", "succeeded", "failed"), ("active", "succeeded", "failed")))
    return out


@_reported
def _reflect_load_balancer(_obj: Obj, status: dict[str, Any]) -> dict[str, Any] | None:
    """``{loadBalancer: ...}`` (not omitted: Go's omitempty keeps structs)."""
    return {"loadBalancer": load_balancer(status)}


@_REFLECTORS.register(kube.SERVICES)
def _reflect_service(obj: Obj) -> dict[str, Any] | None:
    """LoadBalancer Services only: their load balancer (the type is checked before the status is read)."""
    if objects.spec(obj).get("type") != "LoadBalancer":
        return None
    return _reflect_load_balancer(obj)


@_REFLECTORS.register(kube.POD_DISRUPTION_BUDGETS)
@_reported
def _reflect_pdb(_obj: Obj, status: dict[str, Any]) -> dict[str, Any] | None:
    out: dict[str, Any] = {}
    if status.get("disruptedPods"):
        out["disruptedPods"] = copy.deepcopy(status["disruptedPods"])
    fields = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")
    out.update(_fields(status, fields, (), fields))
    return out


@_REFLECTORS.register(kube.HORIZONTAL_POD_AUTOSCALERS)
@_reported
def _reflect_hpa(_obj: Obj, status: dict[str, Any]) -> dict[str, Any] | None:
    return _fields(status, ("desiredReplicas",), ("currentReplicas",), ("currentReplicas", "desiredReplicas"))


@_REFLECTORS.register(kube.INGRESSES)  # as every kind without a reflector of its own
@_reported
def _reflect_whole(_obj: Obj, status: dict[str, Any]) -> dict[str, Any] | None:
    return copy.deepcopy(status)


def reflect_status(api_version: str, kind: str, obj: Obj) -> dict[str, Any] | None:
    """The status Karmada's default interpreter reflects for a member object (None: no status to report).

    Deployment: FederatedGeneration + replica counters + observedGeneration, every field
    ``omitempty`` (an all-zero result is None). StatefulSet/DaemonSet: FederatedGeneration +
    their counters (Go's non-omitempty fields kept at 0). Job: counters, conditions and times.
    Service: the load balancer of LoadBalancer Services only. PDB, HPA: their counters. Every
    other kind (ReplicaSet, Pod, Ingress, PVC, custom resources...): the whole ``.status``.
    Raises ReflectError when the object cannot be read as its kind.
    """
    reflect = _REFLECTORS.get(api_version, kind) or _reflect_whole
    return reflect(obj)

