"""What cluster-failback reads besides Clusters and bindings, all from informer caches (never a LIST per batch):
the resource templates of the workloads in flight, the policies that may opt out, the batches' rebalancers.

Templates are watched per kind, and only for the kinds whose readiness their status reports
(``karmada_api.health.READY_COUNTING_KINDS``: Deployments, StatefulSets, ReplicaSets), from the first time a
workload of that kind is in flight: a controller-manager that never fails back watches none of them. For any
other kind, the binding's aggregated status (every target applied) is all there is to know.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from controller_manager import objects
from controller_manager.informer import FuncHandler, InformerFactory, SharedInformer
from controller_manager.objects import MutableObj, Obj
from controller_manager.resource import Resource
from karmada_api.health import READY_COUNTING_KINDS
from karmada_api.rebalancers import workload_key
from karmada_api.resources import CLUSTER_PROPAGATION_POLICIES, PROPAGATION_POLICIES
from karmada_api.shapes import Workload
from kube_api.resources import DEPLOYMENTS, REPLICA_SETS, STATEFUL_SETS

from . import progress

TEMPLATE_RESOURCES: dict[tuple[str, str], Resource] = {
    (f"{r.group}/{r.version}", r.kind): r for r in (DEPLOYMENTS, STATEFUL_SETS, REPLICA_SETS)
}
assert set(TEMPLATE_RESOURCES) == READY_COUNTING_KINDS
POLICY_RESOURCES = (PROPAGATION_POLICIES, CLUSTER_PROPAGATION_POLICIES)

WorkloadKey = tuple[str, str, str, str]


class Templates:
    """Resource templates by workload, from informers started on first use; ``changed`` is called with the
    workload key of each template event (to re-check the clusters it is in flight to)."""

    def __init__(self, factory: InformerFactory, changed: Callable[[WorkloadKey], None]) -> None:
        self.factory = factory
        self.changed = changed
        self.informers: dict[tuple[str, str], SharedInformer] = {}

    def _informer(self, api_version: str, kind: str) -> SharedInformer | None:
        resource = TEMPLATE_RESOURCES.get((api_version, kind))
        if resource is None:
            return None
        informer = self.informers.get((api_version, kind))
        if informer is None:
            informer = self.factory.informer(resource)
            informer.add_event_handler(FuncHandler(add=lambda obj, _initial: self._notify(obj),
                                                   update=lambda _old, new: self._notify(new)))
            self.informers[(api_version, kind)] = informer
            self.factory.start()
        return informer

    def _notify(self, template: MutableObj) -> None:
        self.changed(workload_key({"apiVersion": template.get("apiVersion", ""), "kind": template.get("kind", ""),
                                   "namespace": objects.namespace(template), "name": objects.name(template)}))

    def filling(self, workloads: Iterable[Workload]) -> bool:
        """Whether the template cache of any of these workloads has not synced yet (starting it if needed): what
        it would say now is "not found", which is not what the workload is."""
        informers = (self._informer(str(w.get("apiVersion", "")), str(w.get("kind", ""))) for w in workloads)
        return any(informer is not None and not informer.has_synced() for informer in informers)

    def lookup(self, workload: Workload) -> tuple[bool, Obj | None]:
        """(tracked, template): tracked False for a kind whose template tells nothing more than the binding;
        a tracked template whose cache has not synced yet reads as missing (not healthy yet)."""
        informer = self._informer(str(workload.get("apiVersion", "")), str(workload.get("kind", "")))
        if informer is None:
            return False, None
        if not informer.has_synced():
            return True, None
        return True, informer.store.get(objects.join_key(str(workload.get("namespace", "") or ""),
                                                         str(workload.get("name", ""))))


class Policies:
    """PropagationPolicies and ClusterPropagationPolicies, to find a binding's opt-out."""

    def __init__(self, namespaced: SharedInformer, cluster_wide: SharedInformer) -> None:
        self.namespaced = namespaced
        self.cluster_wide = cluster_wide

    def opting_out(self, binding: Obj) -> Obj | None:
        """The binding's policy when it opts out of fail-back; None otherwise (or when it is not known)."""
        policy_ref = progress.policy_of(binding)
        if policy_ref is None:
            return None
        namespace, name = policy_ref
        store = self.namespaced.store if namespace else self.cluster_wide.store
        policy = store.get(objects.join_key(namespace, name))
        return policy if progress.opted_out(policy) else None
