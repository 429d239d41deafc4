"""``InterpretHealth``: whether a member object is healthy, for the Work's ``manifestStatuses``.

Karmada's ``pkg/resourceinterpreter/default/native/healthy.go``: a workload is healthy once its
controller observed the latest generation and rolled out every replica, a LoadBalancer Service or
an Ingress once it has an ingress point, a PVC once Bound, a Pod once Running and Ready (or
Succeeded), a PodDisruptionBudget once enough pods are healthy. Kinds without a rule are Healthy.
"""

from __future__ import annotations

from collections.abc import Callable

from controller_manager import objects
from controller_manager.objects import Obj
from kube_api import resources as kube
from kube_api.conditions import find_condition

from .goconvert import ReflectError, int_field, load_balancer
from .kinds import KindTable

HEALTHY, UNHEALTHY, UNKNOWN = "Healthy", "Unhealthy", "Unknown"

Rule = Callable[[Obj], bool]
_RULES: KindTable[Rule] = KindTable()


def _spec_replicas(obj: Obj) -> int | None:
    spec = objects.spec(obj)
    return None if spec.get("replicas") is None else int_field(spec, "replicas")


def _observed(rule: Callable[[Obj, Obj], bool]) -> Rule:
    """A workload's rule, applied once its controller observed the latest generation (else unhealthy).

    The rule gets the object and its status.
    """

    def check(obj: Obj) -> bool:
        status = objects.status(obj)
        observed = int_field(status, "observedGeneration") == int_field(objects.metadata(obj), "generation")
        return observed and rule(obj, status)

    return check


@_RULES.register(kube.DEPLOYMENTS)
@_observed
def _deployment_healthy(obj: Obj, status: Obj) -> bool:
    replicas = _spec_replicas(obj)
    if replicas is not None and int_field(status, "updatedReplicas") < replicas:
        return False
    return int_field(status, "availableReplicas") >= int_field(status, "updatedReplicas")


@_RULES.register(kube.REPLICA_SETS)
@_observed
def _replicaset_healthy(obj: Obj, status: Obj) -> bool:
    replicas = _spec_replicas(obj)
    return not (replicas is not None and int_field(status, "availableReplicas") < replicas)


@_RULES.register(kube.STATEFUL_SETS)
@_observed
def _statefulset_healthy(obj: Obj, status: Obj) -> bool:
    """As a Deployment (Karmada's ``interpretStatefulSetHealth``): every replica updated and available; a
    rolling-update ``partition`` is not considered, so a partitioned update stays Unhealthy until done."""
    replicas = _spec_replicas(obj)
    if replicas is not None and int_field(status, "updatedReplicas") < replicas:
        return False
    return int_field(status, "availableReplicas") >= int_field(status, "updatedReplicas")


@_RULES.register(kube.DAEMON_SETS)
@_observed
def _daemonset_healthy(_obj: Obj, status: Obj) -> bool:
    if int_field(status, "updatedNumberScheduled") < int_field(status, "desiredNumberScheduled"):
        return False
    return int_field(status, "numberAvailable") >= int_field(status, "updatedNumberScheduled")


@_RULES.register(kube.INGRESSES)
def _has_ingress_point(obj: Obj) -> bool:
    return any(isinstance(i, dict) and (i.get("hostname") or i.get("ip"))
               for i in load_balancer(objects.status(obj)).get("ingress") or [])


@_RULES.register(kube.SERVICES)
def _service_healthy(obj: Obj) -> bool:
    if objects.spec(obj).get("type") != "LoadBalancer":
        return True
    return _has_ingress_point(obj)


@_RULES.register(kube.PERSISTENT_VOLUME_CLAIMS)
def _pvc_healthy(obj: Obj) -> bool:
    return objects.status(obj).get("phase") == "Bound"


@_RULES.register(kube.PODS)
def _pod_healthy(obj: Obj) -> bool:
    status = objects.status(obj)
    if status.get("phase") == "Succeeded":
        return True
    ready = find_condition(status.get("conditions"), "Ready")
    return status.get("phase") == "Running" and ready is not None and ready.get("status") == "True"


@_RULES.register(kube.POD_DISRUPTION_BUDGETS)
def _pdb_healthy(obj: Obj) -> bool:
    status = objects.status(obj)
    return int_field(status, "currentHealthy") >= int_field(status, "desiredHealthy")


def interpret_health(api_version: str, kind: str, obj: Obj) -> str:
    """``Healthy``/``Unhealthy`` by the kind's rule; ``Healthy`` for kinds without one (Karmada's
    ``interpretHealth`` skips the assessment); ``Unknown`` when the object cannot be read."""
    rule = _RULES.get(api_version, kind)
    if rule is None:
        return HEALTHY
    try:
        return HEALTHY if rule(obj) else UNHEALTHY
    except (ReflectError, TypeError, AttributeError):
        return UNKNOWN
