"""A custom workload kind for the real plane: its CRD, Karmada's interpreter customization, our Pod selector.

``TaskPool`` (``rp.example.io/v1``) stands for an operator's kind such as a FlinkDeployment: ``spec.replicas``
Pods made from ``spec.template``, labelled ``app=<name>,component=worker``. Karmada learns how to divide it from a
ResourceInterpreterCustomization with the two Lua scripts a divided kind needs, run by Karmada's
controller-manager: ``GetReplicas`` (the detector gives the binding its replicas) and ``ReviseReplica`` (the
binding controller writes each member's share into its Work). Nothing for the status: Karmada's work-status
controller reflects a kind without a ``ReflectStatus`` whole (``reflectWholeStatus``), so the binding's
``aggregatedStatus`` carries the member's ``readyReplicas`` and the descheduler's floor applies; and a
``statusAggregation`` script would not run here, where our binding-status controller (which runs no Lua and
aggregates only built-in kinds into their templates) stands in for Karmada's. Our descheduler learns how to find
the kind's Pods from ``--unschedulable-pod-selectors`` (:data:`SELECTORS`).

Installed once per plane (:func:`install`, idempotent ``kubectl apply``) before our descheduler starts, whose
member informers need the CRD there, and well before a test creates a TaskPool: Karmada's detector discovers new
resources every 30 s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from benchmarks.refplane import RefPlane
from controller_manager.resource import Resource
from tests.realplane.support import kubectl_run

GROUP, VERSION, KIND, PLURAL = "rp.example.io", "v1", "TaskPool", "taskpools"
TASK_POOLS = Resource(GROUP, VERSION, PLURAL, KIND, True)
API_VERSION = TASK_POOLS.api_version
POD_SELECTOR = "app={name},component=worker"

TESTS = "test_descheduler_customkind.py"
"""The module of the kind's tests, run late in this folder (``conftest.pytest_collection_modifyitems``)."""

SELECTORS = [{"apiVersion": API_VERSION, "kind": KIND, "podSelector": POD_SELECTOR}]
"""The ``--unschedulable-pod-selectors`` file our descheduler runs with on this plane."""

_OPEN = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}

CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": PLURAL, "singular": KIND.lower(), "kind": KIND, "listKind": f"{KIND}List"},
             "versions": [{"name": VERSION, "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {
                                   "replicas": {"type": "integer", "minimum": 0}, "template": _OPEN}},
                               "status": _OPEN}}}}]}}

_GET_REPLICAS = """local kube = require("kube")
function GetReplicas(obj)
  local requirement = kube.accuratePodRequirements(obj.spec.template)
  return obj.spec.replicas, requirement
end
"""
_REVISE_REPLICA = """function ReviseReplica(obj, desiredReplica)
  obj.spec.replicas = desiredReplica
  return obj
end
"""
CUSTOMIZATION: dict[str, Any] = {
    "apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterCustomization",
    "metadata": {"name": f"{PLURAL}-{GROUP.replace('.', '-')}"},
    "spec": {"target": {"apiVersion": API_VERSION, "kind": KIND},
             "customizations": {"replicaResource": {"luaScript": _GET_REPLICAS},
                                "replicaRevision": {"luaScript": _REVISE_REPLICA}}}}


def task_pool(name: str, replicas: int) -> dict[str, Any]:
    """A TaskPool whose Pods would be ``app=<name>,component=worker``."""
    labels = {"app": name, "component": "worker"}
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name},
            "spec": {"replicas": replicas,
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "worker", "image": "busybox", "resources": {
                                      "requests": {"cpu": "10m", "memory": "10Mi"}}}]}}}}


def _kubectl(plane: RefPlane, context: str, *args: str, stdin: str | None = None) -> None:
    done = kubectl_run(plane, *args, context=context, stdin=stdin)
    if done.returncode != 0:
        raise RuntimeError(f"kubectl --context {context} {' '.join(args)}: {done.stderr.strip()}")


def install(plane: RefPlane, directory: Path) -> Path:
    """The CRD on the Karmada API server and both members, the customization on Karmada; the selectors file."""
    crd = yaml.safe_dump(CRD)
    for context in ("karmada-apiserver", "member1", "member2"):
        _kubectl(plane, context, "apply", "-f", "-", stdin=crd)
    for context in ("karmada-apiserver", "member1", "member2"):
        _kubectl(plane, context, "wait", "--for=condition=Established", "--timeout=30s",
                 f"crd/{CRD['metadata']['name']}")
    _kubectl(plane, "karmada-apiserver", "apply", "-f", "-", stdin=yaml.safe_dump(CUSTOMIZATION))
    path = directory / "unschedulable-pod-selectors.yaml"
    path.write_text(yaml.safe_dump(SELECTORS), encoding="utf-8")
    return path
