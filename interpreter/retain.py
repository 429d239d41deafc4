"""``Retain``: the fields of a member object that its member cluster owns, kept when Karmada updates it.

Karmada's ``pkg/resourceinterpreter/default/native/retain.go``: what the member's own controllers
(kubelet, the scheduler, the Service, Job, token and volume controllers) set on a member object is
copied from the observed object into the one written, so that Karmada's update does not undo it. The execution
controller's object watcher (``retainClusterFields``) calls it after keeping the member's metadata.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from controller_manager import objects
from controller_manager.objects import MutableObj, Obj
from kube_api import resources as kube

from .kinds import KindTable

Rule = Callable[[MutableObj, Obj], None]
_RULES: KindTable[Rule] = KindTable()


@_RULES.register(kube.PODS)
def _retain_pod(desired: MutableObj, observed: Obj) -> None:
    """What kubelet, the scheduler and admission set on a Pod (retainPodFields)."""
    spec, seen = desired.setdefault("spec", {}), objects.spec(observed)
    for key in ("nodeName", "serviceAccountName", "volumes"):
        if key in seen:
            spec[key] = copy.deepcopy(seen[key])
    for key in ("containers", "initContainers", "ephemeralContainers"):
        seen_by_name = {c.get("name"): c for c in seen.get(key) or [] if isinstance(c, dict)}
        for container in spec.get(key) or []:
            match = seen_by_name.get(container.get("name")) if isinstance(container, dict) else None
            if match is not None and "volumeMounts" in match:
                container["volumeMounts"] = copy.deepcopy(match["volumeMounts"])


@_RULES.register(kube.SERVICES)
def _retain_service(desired: MutableObj, observed: Obj) -> None:
    """retainServiceHealthCheckNodePort and retainServiceClusterIP: the health-check node port and the cluster IP
    the member allocated win over the desired ones (its API server refuses a change to either). Node ports are
    not retained: the desired Service carries the Karmada API server's, which the member was created with."""
    spec, seen = desired.setdefault("spec", {}), objects.spec(observed)
    health = seen.get("healthCheckNodePort")
    if isinstance(health, int) and not isinstance(health, bool) and health > 0:
        spec["healthCheckNodePort"] = health
    if seen.get("clusterIP"):
        spec["clusterIP"] = seen["clusterIP"]


@_RULES.register(kube.JOBS)
def _retain_job(desired: MutableObj, observed: Obj) -> None:
    """The selector and template labels the member's job controller generated (both immutable)."""
    spec, seen = desired.setdefault("spec", {}), objects.spec(observed)
    if "selector" in seen:
        spec["selector"] = copy.deepcopy(seen["selector"])
    seen_labels = objects.labels(seen.get("template") or {})
    if seen_labels:
        template = spec.setdefault("template", {})
        template.setdefault("metadata", {})["labels"] = {**seen_labels,
                                                        **objects.labels(template)}


def _retain_simple(path: tuple[str, ...]) -> Rule:
    """A rule keeping the field at ``path`` when the desired object does not set it."""

    def keep(desired: MutableObj, observed: Obj) -> None:
        seen: Any = observed
        for key in path:
            seen = seen.get(key) if isinstance(seen, dict) else None
        if seen is None:
            return
        target = desired
        for key in path[:-1]:
            target = target.setdefault(key, {})
        target.setdefault(path[-1], copy.deepcopy(seen))

    return keep


_RULES.add(kube.SERVICE_ACCOUNTS, _retain_simple(("secrets",)))
_RULES.add(kube.PERSISTENT_VOLUME_CLAIMS, _retain_simple(("spec", "volumeName")))
_RULES.add(kube.PERSISTENT_VOLUMES, _retain_simple(("spec", "claimRef")))


def retain(desired: MutableObj, observed: Obj) -> None:
    """Copy into ``desired`` (in place) the fields of ``observed`` its kind's member controllers own."""
    rule = _RULES.get(str(desired.get("apiVersion") or ""), str(desired.get("kind") or ""))
    if rule is not None:
        rule(desired, observed)
