"""The member's kubelets: every Ready Node runs the pods bound to it, instantly.

A pod bound to a Ready node of this member becomes ``Running``: conditions
``PodReadyToStartContainers``, ``Initialized``, ``Ready``, ``ContainersReady`` and ``PodScheduled``
True (transition times kept once set), container statuses ``running``/``ready``/``started``
(init containers ``terminated``/``Completed``), ``hostIP`` (the node's InternalIP, else a stable
172.18.x.y of its name), ``podIP`` (the lowest free address of the node's ``spec.podCIDR``, else of
a stable 10.244.x.0/24), ``startTime``. Images are reported as the container runtime does
(``docker.io/library/nginx:latest``), with fake but stable container and image IDs.

A pod with a ``deletionTimestamp`` is finished at once, as a container that exits on SIGTERM:
deleted with ``gracePeriodSeconds: 0`` and its uid as precondition. A pod bound to a Node that no
longer exists is deleted the same way (kube-controller-manager's pod GC). A node that is not Ready
has a stopped kubelet: its pods are left as they are until it is Ready again.

Not simulated: probes, restarts, resource usage, volumes, logs and kubelet events.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from typing import Any

import structlog

from controller_manager import objects
from controller_manager.apierrors import ApiError
from controller_manager.cache import Indexer
from controller_manager.client import KubeClient
from controller_manager.controller import Controller
from controller_manager.manager import Manager
from controller_manager.objects import Obj
from controller_manager.predicate import FuncPredicate
from controller_manager.reconcile import Request, Result
from karmada_api.names import fnv32a
from kube_api.pods import is_pod_terminated, node_ready
from kube_api.resources import NODES, PODS
from kube_api.timeutil import now_text

log = structlog.get_logger(__name__)

COMPONENT = "kubelet"
NODE_INDEX = "members/pods-by-node"
POD_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")


# ----------------------------------------------------------------------------- pure status


def host_ip(node: Obj) -> str:
    """The node's InternalIP, else a stable 172.18.x.y derived from its name."""
    for address in objects.status(node).get("addresses") or []:
        if address.get("type") == "InternalIP" and address.get("address"):
            return str(address["address"])
    digest = fnv32a(objects.name(node).encode())
    return f"172.18.{(digest >> 8) % 256}.{2 + digest % 250}"


def pod_network(node: Obj) -> ipaddress.IPv4Network:
    """The node's ``spec.podCIDR``, else a stable 10.244.x.0/24 derived from its name."""
    cidr = objects.spec(node).get("podCIDR")
    if cidr:
        try:
            network = ipaddress.ip_network(str(cidr), strict=False)
            if isinstance(network, ipaddress.IPv4Network):
                return network
        except ValueError:
            pass
    digest = fnv32a(objects.name(node).encode())
    return ipaddress.IPv4Network(f"10.244.{digest % 256}.0/24")


def runtime_image(image: str) -> str:
    """The image reference as containerd reports it: registry, ``library/`` and ``:latest`` filled in."""
    name, _, digest = image.partition("@")
    first, _, rest = name.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        name = f"docker.io/{name}" if rest else f"docker.io/library/{name}"
    last = name.rsplit("/", 1)[-1]
    if not digest and ":" not in last:
        name += ":latest"
    return f"{name}@{digest}" if digest else name


def _sha(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


def _container_status(container: Mapping[str, Any], previous: Mapping[str, Any] | None, uid: str,
                      moment: str, *, init: bool) -> dict[str, Any]:
    name = str(container.get("name") or "")
    image = runtime_image(str(container.get("image") or ""))
    container_id = f"containerd://{_sha(uid, name)}"
    state = (previous or {}).get("state") or {}
    if init:
        terminated = state.get("terminated") or {}
        started = terminated.get("startedAt") or moment
        current = {"terminated": {"containerID": container_id, "exitCode": 0, "finishedAt": terminated.get(
            "finishedAt") or moment, "reason": "Completed", "startedAt": started}}
    else:
        current = {"running": {"startedAt": (state.get("running") or {}).get("startedAt") or moment}}
    return {"containerID": container_id, "image": image,
            "imageID": f"{image.split('@')[0].rsplit(':', 1)[0]}@sha256:{_sha(image)}",
            "lastState": {}, "name": name, "ready": True, "restartCount": 0, "started": not init, "state": current}


def running_status(pod: Obj, *, host: str, pod_ip: str, moment: str) -> dict[str, Any]:
    """The status fields a kubelet writes for a running, ready pod (kept stable across rewrites)."""
    status = objects.status(pod)
    spec = objects.spec(pod)
    uid = objects.uid(pod)
    existing = {c.get("type"): c for c in status.get("conditions") or []}
    # mergePodStatus: conditions the kubelet does not own (readiness gates, DisruptionTarget) stay, first.
    conditions = [dict(c) for c in status.get("conditions") or [] if c.get("type") not in POD_CONDITIONS]
    for ctype in POD_CONDITIONS:
        old = existing.get(ctype) or {}
        since = old.get("lastTransitionTime") if old.get("status") == "True" else None
        conditions.append({"type": ctype, "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": since or moment})
    previous = {c.get("name"): c for c in status.get("containerStatuses") or []}
    previous_init = {c.get("name"): c for c in status.get("initContainerStatuses") or []}
    result: dict[str, Any] = {
        "phase": "Running", "conditions": conditions, "hostIP": host, "hostIPs": [{"ip": host}],
        "podIP": pod_ip, "podIPs": [{"ip": pod_ip}], "startTime": status.get("startTime") or moment,
        "containerStatuses": [_container_status(c, previous.get(c.get("name")), uid, moment, init=False)
                              for c in spec.get("containers") or []],
    }
    if spec.get("initContainers"):
        result["initContainerStatuses"] = [_container_status(c, previous_init.get(c.get("name")), uid, moment,
                                                             init=True) for c in spec["initContainers"]]
    return result


def _same(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether the pod's status already says what ``desired`` says (times of the new write ignored)."""
    return all(current.get(key) == desired_value for key, desired_value in desired.items())


# ----------------------------------------------------------------------------- reconciler


def pods_by_node(pod: Obj) -> list[str]:
    node = objects.spec(pod).get("nodeName")
    return [str(node)] if node else []


class Kubelet:
    """Runs bound pods on Ready nodes and finishes their deletion."""

    def __init__(self, client: KubeClient, pods: Indexer, nodes: Indexer) -> None:
        self.client = client
        self.pods = pods
        self.nodes = nodes
        self._ips: dict[str, tuple[str, str, str]] = {}  # pod key → (uid, node, ip) handed out, maybe unwritten

    async def reconcile(self, request: Request) -> Result:
        key = str(request)
        pod = self.pods.get(key)
        if pod is None:
            self._ips.pop(key, None)
            return Result()
        node_name = str(objects.spec(pod).get("nodeName") or "")
        if not node_name:
            return Result()
        node = self.nodes.get(node_name)
        if node is None:
            if not await self._node_exists(node_name):
                await self._force_delete(pod)  # the pod GC's job: its node is gone
            return Result()
        if not node_ready(node):
            return Result()  # a stopped kubelet does nothing
        if objects.is_deleting(pod):
            await self._force_delete(pod)
            self._ips.pop(key, None)
            return Result()
        if is_pod_terminated(pod):
            return Result()
        moment = now_text()
        desired = running_status(pod, host=host_ip(node), pod_ip=self._pod_ip(key, pod, node), moment=moment)
        if not _same(objects.status(pod), desired):
            try:
                await self.client.patch(PODS, objects.name(pod), {"status": desired},
                                        namespace=objects.namespace(pod), subresource="status")
            except ApiError as exc:
                if not exc.is_not_found:
                    raise
        return Result()

    def _pod_ip(self, key: str, pod: Obj, node: Obj) -> str:
        """The pod's IP: kept once written, else the lowest address of the node's range nobody uses."""
        uid = objects.uid(pod)
        node_name = objects.name(node)
        current = objects.status(pod).get("podIP")
        if current:
            self._ips[key] = (uid, node_name, str(current))
            return str(current)
        handed = self._ips.get(key)
        if handed is not None and handed[0] == uid and handed[1] == node_name:
            return handed[2]
        used = {str(objects.status(p).get("podIP")) for p in self.pods.by_index(NODE_INDEX, node_name)
                if objects.status(p).get("podIP")}
        used.update(ip for k, (_, n, ip) in self._ips.items() if n == node_name and k != key)
        network = pod_network(node)
        base = int(network.network_address)
        offset = 2  # .1 is the node's bridge, as with the usual CNI plugins
        while str(ipaddress.IPv4Address(base + offset)) in used:
            offset += 1
        address = str(ipaddress.IPv4Address(base + offset))
        self._ips[key] = (uid, node_name, address)
        return address

    async def _node_exists(self, name: str) -> bool:
        return await self.client.get_or_none(NODES, name) is not None

    async def _force_delete(self, pod: Obj) -> None:
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                "preconditions": {"uid": objects.uid(pod)}}
        try:
            await self.client.request("DELETE", PODS.path(objects.namespace(pod), objects.name(pod)), body=body)
        except ApiError as exc:
            if not (exc.is_not_found or exc.status == 409):  # gone, or another pod of that name
                raise

    def node_pods(self, node: Obj) -> list[Request]:
        name = objects.name(node)
        return [Request.for_object(pod) for pod in self.pods.by_index(NODE_INDEX, name)]


def _ready_changed(old: Obj, new: Obj) -> bool:
    return node_ready(old) != node_ready(new)


def setup_kubelet(manager: Manager, *, cluster_name: str, workers: int = 4) -> Controller:
    """Register ``<cluster>/kubelet`` (bound pods, and pods of a node that appears or changes readiness)."""
    pod_informer = manager.informer(PODS)
    node_informer = manager.informer(NODES)
    pod_informer.ensure_indexer(NODE_INDEX, pods_by_node)
    kubelet = Kubelet(manager.client, pod_informer.store, node_informer.store)
    controller = Controller(f"{cluster_name}/{COMPONENT}", kubelet, workers=workers)
    bound = FuncPredicate(on_create=lambda pod: bool(pods_by_node(pod)),
                          on_update=lambda _old, new: bool(pods_by_node(new)),
                          on_delete=lambda pod: bool(pods_by_node(pod)))
    controller.watches(pod_informer, predicates=[bound])
    controller.watches(node_informer, map_func=kubelet.node_pods, predicates=[FuncPredicate(on_update=_ready_changed)])
    manager.add_controller(controller)
    return controller

