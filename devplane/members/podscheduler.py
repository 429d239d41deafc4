"""The member's pod scheduler (kube-scheduler's ``default-scheduler``), one pod at a time.

Pods without ``spec.nodeName`` whose ``schedulerName`` is ``default-scheduler`` are filtered against
every Node with kube-scheduler's default filter plugins, in their order, the first failing plugin
giving the node's reasons:

* NodeUnschedulable: a cordoned node (``spec.unschedulable``) unless the pod tolerates
  ``node.kubernetes.io/unschedulable:NoSchedule`` → ``node(s) were unschedulable``;
* TaintToleration: the first NoSchedule/NoExecute taint not tolerated → ``node(s) had untolerated
  taint {key: value}``; a node whose Ready condition is not True carries ``node.kubernetes.io/not-ready``
  (False or missing) or ``node.kubernetes.io/unreachable`` (Unknown), as the node lifecycle
  controller would taint it;
* NodeAffinity: ``nodeSelector`` and required node affinity → ``node(s) didn't match Pod's node
  affinity/selector``;
* NodeResourcesFit: allocatable minus the requests of the non-terminal pods bound there (including
  pods this scheduler just bound, its "assumed" pods) → ``Too many pods``, ``Insufficient cpu``,
  ``Insufficient memory``, ``Insufficient ephemeral-storage``, ``Insufficient <extended resource>``.

The feasible node with the best LeastAllocated score (cpu and memory, with the scheduler's non-zero
default requests) wins; ties go to fewer untolerated PreferNoSchedule taints, then to the node name
(kube-scheduler picks among ties at random). The pod is bound by a JSON patch of ``spec.nodeName``
guarded by a uid test (the dev server has no ``pods/binding`` subresource), then its
``PodScheduled=True`` condition is written and a ``Scheduled`` event recorded.

No node fits → ``PodScheduled=False``, reason ``Unschedulable``, with kube-scheduler's message, e.g.
``0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable. preemption: 0/2 nodes are
available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for
scheduling.`` (the DefaultPreemption post-filter's verdict per node: unresolvable failures — and
requests larger than the node — are "not helpful", resource shortages "no victims" unless
lower-priority pods could make room). ``lastTransitionTime`` stays put while the pod stays
unschedulable (the descheduler's estimator measures from it). Unschedulable pods are tried again
when a Node changes, when a bound pod goes away or terminates, and every 15 s.

Not simulated: preemption itself, host ports, volumes, pod (anti-)affinity, topology spread and the
scoring plugins other than LeastAllocated.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.cache import Indexer
from controller_manager.client import JSON_PATCH, STRATEGIC_MERGE_PATCH, KubeClient
from controller_manager.controller import Controller
from controller_manager.events import NORMAL, WARNING, EventRecorder
from controller_manager.informer import FuncHandler
from controller_manager.manager import Manager
from controller_manager.objects import MutableObj, Obj
from controller_manager.predicate import FuncPredicate
from controller_manager.reconcile import Request, Result
from kube_api.affinity import RequiredNodeAffinity
from kube_api.conditions import find_condition
from kube_api.pods import is_pod_terminated
from kube_api.quantity import (
    RESOURCE_CPU,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    RESOURCE_PODS,
    milli_value,
    pod_requests,
    resource_list_units,
    value,
)
from kube_api.resources import NODES, PODS
from kube_api.timeutil import now_text
from kube_api.tolerations import (
    TAINT_EFFECT_NO_SCHEDULE,
    TAINT_EFFECT_PREFER_NO_SCHEDULE,
    UNSCHEDULABLE_TAINT,
    find_untolerated_taint,
    tolerations_tolerate_taint,
)

log = structlog.get_logger(__name__)

COMPONENT = "default-scheduler"
SCHEDULER_NAME = "default-scheduler"
UNSCHEDULABLE_RETRY_SECONDS = 15.0
EVENT_REPEAT_SECONDS = 300.0  # a FailedScheduling event again at most this often when nothing changed

POD_SCHEDULED = "PodScheduled"
REASON_UNSCHEDULABLE = "Unschedulable"

ERR_NODE_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
ERR_TOO_MANY_PODS = "Too many pods"
NO_NODES_AVAILABLE = "no nodes available to schedule pods"
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_PREEMPTION_VICTIMS = "No preemption victims found for incoming pod"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"

MAX_NODE_SCORE = 100
DEFAULT_MILLI_CPU_REQUEST = 100  # the scheduler's non-zero defaults, for scoring only
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

SUCCESS, UNSCHEDULABLE, UNRESOLVABLE = 0, 1, 2


# ----------------------------------------------------------------------------- pure fit logic


@dataclass(frozen=True)
class Status:
    """A filter plugin's verdict on one node: SUCCESS, UNSCHEDULABLE (preemption may help) or UNRESOLVABLE."""

    code: int = SUCCESS
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class PodEntry:
    """What a bound pod takes from its node."""

    priority: int
    requests: Mapping[str, int]
    nonzero: tuple[int, int]  # (milli-cpu, memory) with the scoring defaults


def pod_priority(spec: Mapping[str, Any]) -> int:
    try:
        return int(spec.get("priority") or 0)
    except (TypeError, ValueError):
        return 0


def _nonzero_container(container: Mapping[str, Any]) -> tuple[int, int]:
    resources = container.get("resources") or {}
    requests = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    cpu = milli_value(requests[RESOURCE_CPU]) if RESOURCE_CPU in requests else DEFAULT_MILLI_CPU_REQUEST
    memory = value(requests[RESOURCE_MEMORY]) if RESOURCE_MEMORY in requests else DEFAULT_MEMORY_REQUEST
    return cpu, memory


def nonzero_requests(spec: Mapping[str, Any]) -> tuple[int, int]:
    """``GetNonzeroRequests`` summed over the pod: containers added, init containers as a maximum."""
    cpu = memory = 0
    for container in spec.get("containers") or ():
        c, m = _nonzero_container(container)
        cpu, memory = cpu + c, memory + m
    for container in spec.get("initContainers") or ():
        c, m = _nonzero_container(container)
        cpu, memory = max(cpu, c), max(memory, m)
    overhead = spec.get("overhead") or {}
    if RESOURCE_CPU in overhead:
        cpu += milli_value(overhead[RESOURCE_CPU])
    if RESOURCE_MEMORY in overhead:
        memory += value(overhead[RESOURCE_MEMORY])
    return cpu, memory


def pod_entry(pod: Obj) -> PodEntry:
    spec = objects.spec(pod)
    return PodEntry(pod_priority(spec), pod_requests(spec), nonzero_requests(spec))


@dataclass
class NodeInfo:
    """A Node and the pods bound to it (the scheduler cache's ``NodeInfo``)."""

    name: str
    node: Obj | None = None
    pods: dict[str, PodEntry] = field(default_factory=dict)
    requested: dict[str, int] = field(default_factory=dict)
    nonzero_cpu: int = 0
    nonzero_memory: int = 0

    @classmethod
    def of(cls, node: Obj, pods: Iterable[Obj] = ()) -> NodeInfo:
        """A NodeInfo from a Node and its non-terminal bound pods (tests, one-shot decisions)."""
        info = cls(objects.name(node), node)
        for pod in pods:
            info.add(_uid(pod), pod_entry(pod))
        return info

    def add(self, uid: str, entry: PodEntry) -> None:
        self.remove(uid)
        self.pods[uid] = entry
        self._account(entry, 1)

    def remove(self, uid: str) -> None:
        entry = self.pods.pop(uid, None)
        if entry is not None:
            self._account(entry, -1)

    def _account(self, entry: PodEntry, sign: int) -> None:
        for name, amount in entry.requests.items():
            self.requested[name] = self.requested.get(name, 0) + sign * amount
        self.nonzero_cpu += sign * entry.nonzero[0]
        self.nonzero_memory += sign * entry.nonzero[1]

    @property
    def allocatable(self) -> dict[str, int]:
        return resource_list_units(objects.status(self.node or {}).get("allocatable"))


def condition_taints(node: Obj) -> list[dict[str, str]]:
    """The NoSchedule taint the node lifecycle controller puts on a node that is not Ready."""
    ready = find_condition(objects.status(node).get("conditions"), "Ready")
    status = ready.get("status") if ready else None
    if status == "True":
        return []
    key = TAINT_UNREACHABLE if status == "Unknown" else TAINT_NOT_READY
    existing = objects.spec(node).get("taints") or []
    if any(t.get("key") == key and t.get("effect") == TAINT_EFFECT_NO_SCHEDULE for t in existing):
        return []
    return [{"key": key, "effect": TAINT_EFFECT_NO_SCHEDULE}]


def insufficient_resources(request: Mapping[str, int], allocatable: Mapping[str, int],
                           requested: Mapping[str, int], pod_count: int) -> list[tuple[str, bool]]:
    """``fitsRequest``: (reason, unresolvable) per resource the node cannot give the pod.

    Unresolvable means the request exceeds the node's allocatable itself (evicting pods cannot help).
    """
    result: list[tuple[str, bool]] = []
    if pod_count + 1 > allocatable.get(RESOURCE_PODS, 0):
        result.append((ERR_TOO_MANY_PODS, False))
    if not any(request.values()):
        return result
    for name in (RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE):
        amount = request.get(name, 0)
        capacity = allocatable.get(name, 0)
        if amount > 0 and amount > capacity - requested.get(name, 0):
            result.append((f"Insufficient {name}", amount > capacity))
    for name in sorted(request):
        if name in (RESOURCE_CPU, RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE, RESOURCE_PODS):
            continue
        amount = request[name]
        capacity = allocatable.get(name, 0)
        if amount and amount > capacity - requested.get(name, 0):
            result.append((f"Insufficient {name}", amount > capacity))
    return result


def filter_node(spec: Mapping[str, Any], request: Mapping[str, int], affinity: RequiredNodeAffinity,
                info: NodeInfo) -> Status:
    """The default filter plugins in order; the first that fails decides the node's status."""
    node = info.node or {}
    node_spec = objects.spec(node)
    tolerations = spec.get("tolerations") or []
    if node_spec.get("unschedulable") and not tolerations_tolerate_taint(tolerations, UNSCHEDULABLE_TAINT):
        return Status(UNRESOLVABLE, (ERR_NODE_UNSCHEDULABLE,))
    taint = find_untolerated_taint([*(node_spec.get("taints") or []), *condition_taints(node)], tolerations)
    if taint is not None:
        return Status(UNRESOLVABLE, (f"node(s) had untolerated taint {{{taint.get('key') or ''}: "
                                     f"{taint.get('value') or ''}}}",))
    if not affinity.is_empty and not affinity.matches(node):
        return Status(UNRESOLVABLE, (ERR_NODE_AFFINITY,))
    shortages = insufficient_resources(request, info.allocatable, info.requested, len(info.pods))
    if shortages:
        code = UNRESOLVABLE if any(unresolvable for _, unresolvable in shortages) else UNSCHEDULABLE
        return Status(code, tuple(reason for reason, _ in shortages))
    return Status()


def least_allocated_score(info: NodeInfo, nonzero: tuple[int, int]) -> int:
    """``LeastAllocated`` over cpu and memory (weights 1): the share left free after placing the pod."""
    allocatable = info.allocatable
    total = 0
    for name, used in ((RESOURCE_CPU, info.nonzero_cpu + nonzero[0]),
                       (RESOURCE_MEMORY, info.nonzero_memory + nonzero[1])):
        capacity = allocatable.get(name, 0)
        if capacity > 0 and used <= capacity:
            total += (capacity - used) * MAX_NODE_SCORE // capacity
    return total // 2


def _prefer_no_schedule_misses(spec: Mapping[str, Any], info: NodeInfo) -> int:
    tolerations = spec.get("tolerations") or []
    taints = objects.spec(info.node or {}).get("taints") or []
    return sum(1 for taint in taints if taint.get("effect") == TAINT_EFFECT_PREFER_NO_SCHEDULE
               and not tolerations_tolerate_taint(tolerations, taint))


def fit_error_message(num_nodes: int, statuses: Iterable[Status], post_filter: str = "") -> str:
    """``FitError.Error()``: ``0/N nodes are available: <sorted "count reason" list>. <post-filter message>``"""
    counts = Counter(reason for status in statuses for reason in status.reasons)
    message = f"0/{num_nodes} nodes are available:"
    histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
    if histogram:
        message += f" {', '.join(histogram)}."
    if post_filter:
        message += f" {post_filter}"
    return message


def preemption_message(spec: Mapping[str, Any], request: Mapping[str, int], infos: Sequence[NodeInfo],
                       statuses: Mapping[str, Status]) -> str:
    """What DefaultPreemption reports when no node can take the pod (this simulation never preempts)."""
    if spec.get("preemptionPolicy") == "Never":
        return NOT_ELIGIBLE_NEVER
    priority = pod_priority(spec)
    verdicts: list[Status] = []
    for info in infos:
        status = statuses.get(info.name, Status())
        if status.code == UNRESOLVABLE:
            verdicts.append(Status(UNRESOLVABLE, (PREEMPTION_NOT_HELPFUL,)))
            continue
        victims = [entry for entry in info.pods.values() if entry.priority < priority]
        if not victims:
            verdicts.append(Status(UNRESOLVABLE, (NO_PREEMPTION_VICTIMS,)))
            continue
        requested = dict(info.requested)
        for victim in victims:
            for name, amount in victim.requests.items():
                requested[name] = requested.get(name, 0) - amount
        shortages = insufficient_resources(request, info.allocatable, requested, len(info.pods) - len(victims))
        if shortages:
            verdicts.append(Status(UNSCHEDULABLE, tuple(reason for reason, _ in shortages)))
        else:  # evicting would make room; the simulation does not preempt
            verdicts.append(Status(UNRESOLVABLE, (NO_PREEMPTION_VICTIMS,)))
    return "preemption: " + fit_error_message(len(infos), verdicts)


@dataclass(frozen=True)
class Decision:
    """Where the pod goes (``node``), or why it cannot go anywhere (``message``)."""

    node: str | None
    message: str = ""


def schedule(pod: Obj, infos: Sequence[NodeInfo]) -> Decision:
    """One scheduling cycle: filter every node, score the feasible ones, or explain the failure."""
    if not infos:
        return Decision(None, NO_NODES_AVAILABLE)
    spec = objects.spec(pod)
    request = pod_requests(spec)
    affinity = RequiredNodeAffinity.from_pod_spec(spec)
    ordered = sorted(infos, key=lambda info: info.name)
    statuses: dict[str, Status] = {}
    feasible: list[NodeInfo] = []
    for info in ordered:
        status = filter_node(spec, request, affinity, info)
        if status.code == SUCCESS:
            feasible.append(info)
        else:
            statuses[info.name] = status
    if feasible:
        nonzero = nonzero_requests(spec)
        best = max(feasible, key=lambda info: (least_allocated_score(info, nonzero),
                                               -_prefer_no_schedule_misses(spec, info)))
        return Decision(best.name)
    post_filter = preemption_message(spec, request, ordered, statuses)
    return Decision(None, fit_error_message(len(ordered), statuses.values(), post_filter))


# ----------------------------------------------------------------------------- cache


def is_bound(pod: Obj) -> bool:
    return bool(objects.spec(pod).get("nodeName"))


def occupies_node(pod: Obj) -> bool:
    """Bound and not terminal: the pod's requests count on its node (even while it is being deleted)."""
    return is_bound(pod) and not is_pod_terminated(pod)


def wants_scheduling(pod: Obj) -> bool:
    """Unbound, for this scheduler, not gated (``schedulingGates``), not being deleted, not terminal."""
    spec = objects.spec(pod)
    return (not spec.get("nodeName") and (spec.get("schedulerName") or SCHEDULER_NAME) == SCHEDULER_NAME
            and not spec.get("schedulingGates")
            and not objects.is_deleting(pod)
            and not is_pod_terminated(pod))


def _uid(pod: Obj) -> str:
    return objects.uid(pod) or objects.key(pod)


class SchedulerCache:
    """Per-node requested resources, fed by the pod informer and by the scheduler's own bindings."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeInfo] = {}
        self._pod_nodes: dict[str, str] = {}

    def update_pod(self, pod: Obj) -> None:
        uid = _uid(pod)
        if not occupies_node(pod):
            self.remove_pod(pod)
            return
        node = str(objects.spec(pod)["nodeName"])
        previous = self._pod_nodes.get(uid)
        if previous is not None and previous != node:
            self._nodes[previous].remove(uid)
        self._pod_nodes[uid] = node
        self._nodes.setdefault(node, NodeInfo(node)).add(uid, pod_entry(pod))

    def remove_pod(self, pod: Obj) -> None:
        uid = _uid(pod)
        node = self._pod_nodes.pop(uid, None)
        if node is not None:
            info = self._nodes[node]
            info.remove(uid)
            if info.node is None and not info.pods:
                del self._nodes[node]

    def assume(self, pod: Obj, node: str) -> None:
        """Count a pod the scheduler just bound before the informer reports it."""
        self.update_pod({**pod, "spec": {**objects.spec(pod), "nodeName": node}})

    def node_infos(self, nodes: Iterable[Obj]) -> list[NodeInfo]:
        """The NodeInfo of each Node given, with that Node object attached."""
        infos = []
        for node in nodes:
            name = objects.name(node)
            info = self._nodes.setdefault(name, NodeInfo(name))
            info.node = node
            infos.append(info)
        return infos


# ----------------------------------------------------------------------------- reconciler


def scheduled_condition(current: Mapping[str, Any] | None, moment: str) -> dict[str, Any]:
    """``PodScheduled=True`` as the binding subresource writes it (``podutil.UpdatePodCondition``):
    ``lastTransitionTime`` moves only when the status changes."""
    since = current.get("lastTransitionTime") if current is not None and current.get("status") == "True" else None
    return {"type": POD_SCHEDULED, "status": "True", "lastProbeTime": None, "lastTransitionTime": since or moment}


class PodScheduler:
    """Schedules one pod per reconcile; keeps the unschedulable ones for retries."""

    def __init__(self, client: KubeClient, pods: Indexer, nodes: Indexer, events: EventRecorder) -> None:
        self.client = client
        self.pods = pods
        self.nodes = nodes
        self.events = events
        self.cache = SchedulerCache()
        self.unschedulable: set[Request] = set()
        self._last_event: dict[str, tuple[str, float]] = {}

    # informer handlers and mappings
    def on_pod_add(self, pod: Obj, _initial: bool) -> None:
        self.cache.update_pod(pod)

    def on_pod_update(self, _old: Obj, new: Obj) -> None:
        self.cache.update_pod(new)

    def on_pod_delete(self, pod: Obj) -> None:
        self.cache.remove_pod(pod)

    def pod_requests(self, pod: MutableObj) -> list[Request]:
        """An unbound pod is its own request; a bound pod that freed room re-queues the unschedulable."""
        if is_bound(pod):
            return sorted(self.unschedulable)
        return [Request.for_object(pod)]

    def retry_unschedulable(self, _obj: Obj) -> list[Request]:
        return sorted(self.unschedulable)

    async def reconcile(self, request: Request) -> Result:
        key = str(request)
        pod = self.pods.get(key)
        if pod is None or not wants_scheduling(pod):
            self.unschedulable.discard(request)
            self._last_event.pop(key, None)
            return Result()
        pod = PODS.with_type_meta(pod)
        infos = self.cache.node_infos(self.nodes.list())
        decision = schedule(pod, infos)
        if decision.node is not None:
            self.unschedulable.discard(request)
            self._last_event.pop(key, None)
            await self._bind(pod, decision.node)
            return Result()
        self.unschedulable.add(request)
        await self._record_failure(pod, decision.message)
        return Result(requeue_after=UNSCHEDULABLE_RETRY_SECONDS)

    async def _bind(self, pod: MutableObj, node: str) -> None:
        name, namespace, uid = objects.name(pod), objects.namespace(pod), objects.uid(pod)
        binding = [{"op": "test", "path": "/metadata/uid", "value": uid},
                   {"op": "add", "path": "/spec/nodeName", "value": node}]
        try:
            await self.client.patch(PODS, name, binding, namespace=namespace, content_type=JSON_PATCH)
        except ApiError as exc:
            if exc.is_not_found or exc.is_invalid:  # gone, or replaced by another pod of that name
                return
            raise
        current = self.pods.get(objects.key(pod))
        if current is not None and _uid(current) == uid:
            self.cache.assume(current, node)
        condition = scheduled_condition(find_condition(objects.status(current or pod).get("conditions"), POD_SCHEDULED),
                                        now_text())
        try:
            await self.client.patch(PODS, name, {"status": {"conditions": [condition]}}, namespace=namespace,
                                    content_type=STRATEGIC_MERGE_PATCH, subresource="status")
        except ApiError as exc:
            if not exc.is_not_found:
                raise
        self.events.event(pod, NORMAL, "Scheduled", f"Successfully assigned {namespace}/{name} to {node}")

    async def _record_failure(self, pod: MutableObj, message: str) -> None:
        """PodScheduled=False/Unschedulable (transition time kept while it stays False) and a FailedScheduling event."""
        key = objects.key(pod)
        current = find_condition(objects.status(pod).get("conditions"), POD_SCHEDULED)
        unchanged = (current is not None and current.get("status") == "False"
                     and current.get("reason") == REASON_UNSCHEDULABLE and current.get("message") == message)
        phase_ok = objects.status(pod).get("phase") == "Pending"
        if not unchanged or not phase_ok:
            since = current.get("lastTransitionTime") if current is not None and current.get("status") == "False" \
                else None
            condition = {"type": POD_SCHEDULED, "status": "False", "lastProbeTime": None,
                         "lastTransitionTime": since or now_text(), "reason": REASON_UNSCHEDULABLE, "message": message}
            status: dict[str, Any] = {"conditions": [condition]}
            if not phase_ok:
                status["phase"] = "Pending"
            try:
                await self.client.patch(PODS, objects.name(pod), {"status": status}, namespace=objects.namespace(pod),
                                        content_type=STRATEGIC_MERGE_PATCH, subresource="status")
            except ApiError as exc:
                if exc.is_not_found:
                    return
                raise
        last = self._last_event.get(key)
        moment = time.monotonic()
        if last is None or last[0] != message or moment - last[1] >= EVENT_REPEAT_SECONDS:
            self._last_event[key] = (message, moment)
            self.events.event(pod, WARNING, "FailedScheduling", message)


def _node_changed(old: Obj, new: Obj) -> bool:
    """A node update that can change a scheduling decision (labels, spec, allocatable, conditions)."""
    def view(node: Obj) -> tuple[Any, ...]:
        status = objects.status(node)
        conditions = [(c.get("type"), c.get("status")) for c in status.get("conditions") or []]
        return (objects.metadata(node).get("labels"), node.get("spec"), status.get("allocatable"), conditions)

    return view(old) != view(new)


def _pod_freed_room(old: Obj, new: Obj) -> bool:
    return occupies_node(old) and not occupies_node(new)


def setup_pod_scheduler(manager: Manager, *, cluster_name: str) -> Controller:
    """Register ``<cluster>/default-scheduler`` (one worker: pods are placed one at a time)."""
    pod_informer = manager.informer(PODS)
    node_informer = manager.informer(NODES)
    scheduler = PodScheduler(manager.client, pod_informer.store, node_informer.store,
                             manager.event_recorder(COMPONENT))
    pod_informer.add_event_handler(FuncHandler(add=scheduler.on_pod_add, update=scheduler.on_pod_update,
                                               delete=scheduler.on_pod_delete))
    controller = Controller(f"{cluster_name}/{COMPONENT}", scheduler, workers=1)
    controller.watches(pod_informer, map_func=scheduler.pod_requests, predicates=[FuncPredicate(
        on_create=wants_scheduling,
        on_update=lambda old, new: wants_scheduling(new) or (is_bound(new) and _pod_freed_room(old, new)),
        on_delete=lambda pod: True)])
    controller.watches(node_informer, map_func=scheduler.retry_unschedulable,
                       predicates=[FuncPredicate(on_update=_node_changed)])
    manager.add_controller(controller)
    return controller
