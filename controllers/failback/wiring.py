"""clusterFailback's wiring: the informers, indexes and event mapping of its two controllers, and their RBAC.

``failback-recorder`` (:class:`.recorder.EvictionRecorder`) and ``cluster-failback``
(:class:`.controller.ClusterFailback`) share the informers registered here (docs/failback.md).
"""

from __future__ import annotations

from typing import Any

from controller_manager import objects
from controller_manager.controller import Controller
from controller_manager.events import EVENTS
from controller_manager.events import RBAC_RULES as EVENT_RULES
from controller_manager.informer import FuncHandler, SharedInformer
from controller_manager.manager import Manager
from controller_manager.objects import MutableObj
from controller_manager.predicate import AnnotationChangedPredicate, AnyOf, FuncPredicate
from controller_manager.rbac import PolicyRule, for_resources, informer_rules
from controller_manager.reconcile import Request
from karmada_api.bindings import CRB_KIND, RB_KIND
from karmada_api.resources import CLUSTER_RESOURCE_BINDINGS, CLUSTERS, RESOURCE_BINDINGS, WORKLOAD_REBALANCERS
from karmada_api.shapes import binding_spec

from . import progress, recovery
from .caches import POLICY_RESOURCES, TEMPLATE_RESOURCES, Policies, Templates
from .controller import FAILBACK_NAME, FLIGHT_INDEX, RECORD_INDEX, RECORDER_NAME, ROUND_INDEX, ClusterFailback
from .options import FailbackOptions
from .recorder import EvictionRecorder


def _eviction_tasks_changed(old: MutableObj, new: MutableObj) -> bool:
    return bool(binding_spec(old).get("gracefulEvictionTasks") != binding_spec(new).get("gracefulEvictionTasks"))


RECORD_CHANGED = AnyOf([AnnotationChangedPredicate(), FuncPredicate(on_update=_eviction_tasks_changed)])
"""A recorded binding's update worth a look at its clusters: its fail-back annotations, or its graceful-eviction
tasks (one that ends lets a waiting fail-back start)."""


def _clusters_of_record(binding: MutableObj) -> list[Request]:
    return [Request("", cluster) for cluster in recovery.recorded_clusters(binding)]


def _clusters_in_flight(binding: MutableObj) -> list[Request]:
    return [Request("", cluster) for cluster in progress.failing_back_clusters(binding)]


def _round_of(rebalancer: MutableObj) -> list[str]:
    value = objects.labels(rebalancer).get(progress.ROUND_LABEL)
    return [value] if value else []
RBAC_RULES: list[PolicyRule] = [
    # setup(): informers on the Clusters, both binding kinds, the rebalancers and the policies; caches.Templates:
    # one on each template kind whose readiness its status reports, from the first workload of it in flight
    *informer_rules(CLUSTERS, RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS, WORKLOAD_REBALANCERS,
                    *POLICY_RESOURCES, *TEMPLATE_RESOURCES.values()),
    # the recorder: Karmada's EvictWorkloadFromClusterSucceed Events (an informer with a field selector)
    *informer_rules(EVENTS),
    # recorder.rewrite(): a merge patch of the record and in-flight marks (a fresh GET first for the recorder, on 409)
    *for_resources((RESOURCE_BINDINGS, CLUSTER_RESOURCE_BINDINGS), ("get", "patch")),
    # _create_once(): the batches' WorkloadRebalancers (get: the one an earlier attempt made, on 409)
    *for_resources((WORKLOAD_REBALANCERS,), ("create", "get")),
    # _annotate(): the round and pause annotations of a Cluster
    *for_resources((CLUSTERS,), ("patch",)),
    *EVENT_RULES,  # FailbackScheduled, FailbackTriggered, FailbackSkipped, FailbackPaused, FailbackResumed, ...
]
"""The permissions this controller needs on the Karmada API server (see controller_manager.rbac)."""


def _record_handler(recorder: EvictionRecorder) -> FuncHandler:
    return FuncHandler(add=lambda obj, _initial: recorder.observe(None, obj),
                       update=recorder.observe)


def setup(manager: Manager, options: FailbackOptions, **controller_options: Any) -> list[Controller]:
    """Register ``failback-recorder`` and ``cluster-failback`` on shared informers."""
    clusters = manager.informer(CLUSTERS)
    binding_informers: list[SharedInformer] = [manager.informer(RESOURCE_BINDINGS),
                                               manager.informer(CLUSTER_RESOURCE_BINDINGS)]
    rebalancers = manager.informer(WORKLOAD_REBALANCERS)
    policy_informers = [manager.informer(resource) for resource in POLICY_RESOURCES]
    # Karmada's EvictWorkloadFromClusterSucceed Events: the evictions that began and ended while no recorder ran
    eviction_events = manager.informer(EVENTS, field_selector=recovery.EVICTION_EVENTS_SELECTOR)
    recorder = EvictionRecorder(manager.client, clusters.store,
                                {RB_KIND: binding_informers[0].store, CRB_KIND: binding_informers[1].store})
    record_controller = Controller(RECORDER_NAME, recorder, workers=2, **controller_options)
    recorder.controller = record_controller
    # not on the Events: their handler only queues a binding, judged on the binding caches; a failing Events list
    # (an install whose RBAC predates it) must not hold back the recording from the bindings
    record_controller.wait_for_caches(clusters, *binding_informers)
    eviction_events.add_event_handler(FuncHandler(add=lambda obj, _initial: recorder.observe_event(obj),
                                                  update=lambda _old, new: recorder.observe_event(new)))
    for informer in binding_informers:
        informer.ensure_indexer(RECORD_INDEX, recovery.recorded_clusters)
        informer.ensure_indexer(FLIGHT_INDEX, progress.failing_back_clusters)
    rebalancers.ensure_indexer(ROUND_INDEX, _round_of)
    failback = ClusterFailback(manager.client, clusters.mutation_cache(), binding_informers[0].mutation_cache(),
                               binding_informers[1].mutation_cache(), events=manager.event_recorder(FAILBACK_NAME),
                               options=options, policies=Policies(*policy_informers), rebalancers=rebalancers.store)
    failback.templates = Templates(manager.informers, failback.template_changed)
    failback_controller = Controller(FAILBACK_NAME, failback, workers=1, **controller_options)
    failback.controller = failback_controller
    failback_controller.watches(clusters)
    failback_controller.wait_for_caches(rebalancers, *policy_informers)
    for informer in binding_informers:
        informer.add_event_handler(_record_handler(recorder))
        failback_controller.watches(informer, map_func=_clusters_of_record, predicates=[RECORD_CHANGED])
        failback_controller.watches(informer, map_func=_clusters_in_flight)  # their health: any change
    manager.add_controller(record_controller)
    manager.add_controller(failback_controller)
    return [record_controller, failback_controller]
