"""Server-side printing (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``).

kubectl asks the server for a Table and prints its cells, so the columns here are what
``kubectl get`` shows. They follow kube's printers for the built-in kinds and a CRD's
``additionalPrinterColumns`` for custom resources.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NamedTuple

from controller_manager import objects
from kube_api.conditions import find_condition
from kube_api.timeutil import parse_time

from .resources import ResourceType


class Column(NamedTuple):
    """One Table column: kube's definition (priority 1 = only under ``-o wide``) and how to fill its cell.

    The server always sends every column, as kube-apiserver does (it prints with ``Wide: true``);
    kubectl hides priority-1 columns unless asked for ``-o wide``.
    """

    name: str
    type: str
    cell: Callable[[dict[str, Any]], Any]
    priority: int = 0
    description: str = ""
    format: str = ""


def human_duration(seconds: float) -> str:
    """apimachinery's HumanDuration: 57s, 3m14s, 4h, 2d3h, 5y."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: Any) -> str:
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    return human_duration((datetime.now(UTC) - parse_time(timestamp)).total_seconds())


def _age(o: dict[str, Any]) -> str:
    return age(objects.creation_timestamp(o))


def _pod_ready(o: dict[str, Any]) -> str:
    statuses = objects.status(o).get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    return f"{ready}/{len(objects.spec(o).get('containers') or [])}"


def _pod_status(o: dict[str, Any]) -> str:
    if objects.is_deleting(o):
        return "Terminating"
    status = objects.status(o)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for c in status.get("containerStatuses") or []:
        waiting = (c.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
    return str(reason)


def _pod_restarts(o: dict[str, Any]) -> str:
    """kube's RESTARTS cell: the count, and how long ago the last container terminated: ``2 (5m ago)``."""
    statuses = objects.status(o).get("containerStatuses") or []
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    finished = [t for c in statuses
                if (t := (((c.get("lastState") or {}).get("terminated")) or {}).get("finishedAt"))]
    return f"{restarts} ({age(max(finished, key=parse_time))} ago)" if restarts and finished else str(restarts)


def _or_none(value: Any) -> str:
    """kube prints an unset string field as ``<none>``."""
    return str(value) if value else "<none>"


def _pod_ip(o: dict[str, Any]) -> str:
    ips = objects.status(o).get("podIPs") or []
    first = ips[0].get("ip") if ips and isinstance(ips[0], dict) else None
    return _or_none(first or objects.status(o).get("podIP"))


def _pod_readiness_gates(o: dict[str, Any]) -> str:
    """``<none>``, or how many of the pod's readiness gates have a True condition: ``1/2``."""
    gates = objects.spec(o).get("readinessGates") or []
    if not gates:
        return "<none>"
    conditions = {c.get("type"): c.get("status") for c in reversed(objects.status(o).get("conditions") or [])}
    true = sum(1 for g in gates if conditions.get(g.get("conditionType")) == "True")
    return f"{true}/{len(gates)}"


def _node_status(o: dict[str, Any]) -> str:
    ready = find_condition(objects.status(o).get("conditions"), "Ready")
    text = "Ready" if ready and ready.get("status") == "True" else ("NotReady" if ready else "Unknown")
    if objects.spec(o).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _node_roles(o: dict[str, Any]) -> str:
    """Roles from ``node-role.kubernetes.io/<role>`` keys and the ``kubernetes.io/role`` value."""
    prefix = "node-role.kubernetes.io/"
    roles: set[str] = set()
    for key, value in objects.labels(o).items():
        if key.startswith(prefix) and key[len(prefix):]:
            roles.add(key[len(prefix):])
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    return ",".join(sorted(roles)) or "<none>"


def _node_address(kind: str) -> Callable[[dict[str, Any]], str]:
    def cell(o: dict[str, Any]) -> str:
        found = (a.get("address") for a in objects.status(o).get("addresses") or [] if a.get("type") == kind)
        return next(found, None) or "<none>"
    return cell


def _node_info(field: str) -> Callable[[dict[str, Any]], str]:
    return lambda o: str((objects.status(o).get("nodeInfo") or {}).get(field) or "<unknown>")


def _svc_cluster_ip(o: dict[str, Any]) -> str:
    """kube prints ``clusterIPs[0]``; fall back to ``clusterIP`` for objects stored before clusterIPs was set."""
    ips = objects.spec(o).get("clusterIPs") or []
    return str(ips[0]) if ips else _or_none(objects.spec(o).get("clusterIP"))


def _svc_external_ip(o: dict[str, Any]) -> str:
    """kube's getServiceExternalIP with wide output (never clipped)."""
    spec = objects.spec(o)
    external = [str(ip) for ip in spec.get("externalIPs") or []]
    kind = spec.get("type", "ClusterIP")
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        ingress = ((objects.status(o).get("loadBalancer") or {}).get("ingress")) or []
        lb = sorted({str(i.get("ip") or i.get("hostname")) for i in ingress if i.get("ip") or i.get("hostname")})
        return ",".join(lb + external) or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName", ""))
    return "<unknown>"


def _svc_ports(o: dict[str, Any]) -> str:
    pieces = []
    for p in objects.spec(o).get("ports") or []:
        node_port = f":{p['nodePort']}" if p.get("nodePort") else ""
        pieces.append(f"{p.get('port')}{node_port}/{p.get('protocol', 'TCP')}")
    return ",".join(pieces) or "<none>"


def format_labels(labels: Any) -> str:
    """apimachinery's labels.FormatLabels: sorted ``k=v`` pairs, or ``<none>``."""
    if not isinstance(labels, dict) or not labels:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def label_selector_string(selector: Any) -> str:
    """A metav1.LabelSelector as LabelSelectorAsSelector(...).String(): requirements sorted by key.

    Empty (and absent) selectors print as "" and a malformed one as ``<invalid>``, as printDeployment does.
    """
    if not isinstance(selector, dict):
        return ""
    reqs: list[tuple[str, str]] = [(str(k), f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, op = str(expr.get("key", "")), expr.get("operator")
        values = ",".join(sorted(str(v) for v in expr.get("values") or []))
        if op == "In":
            reqs.append((key, f"{key} in ({values})"))
        elif op == "NotIn":
            reqs.append((key, f"{key} notin ({values})"))
        elif op == "Exists":
            reqs.append((key, key))
        elif op == "DoesNotExist":
            reqs.append((key, f"!{key}"))
        else:
            return "<invalid>"
    return ",".join(text for _, text in sorted(reqs, key=lambda r: r[0]))


def format_label_selector(selector: Any) -> str:
    """metav1.FormatLabelSelector: like :func:`label_selector_string` but ``<none>`` when empty."""
    return label_selector_string(selector) or "<none>"


def _template_containers(o: dict[str, Any], *path: str) -> list[dict[str, Any]]:
    cur: Any = o
    for key in (*path, "spec", "containers"):
        cur = cur.get(key) if isinstance(cur, dict) else None
    return [c for c in cur if isinstance(c, dict)] if isinstance(cur, list) else []


def _containers_images(*path: str) -> tuple[Column, Column]:
    """kube's layoutContainerCells: the pod template's container names and images, comma-joined."""
    return (Column("Containers", "string", lambda o: ",".join(str(c.get("name", "")) for c in
                                                             _template_containers(o, *path)),
                   1, "Names of each container in the template."),
            Column("Images", "string", lambda o: ",".join(str(c.get("image", "")) for c in
                                                         _template_containers(o, *path)),
                   1, "Images referenced by each container in the template."))


def _job_completions(o: dict[str, Any]) -> str:
    succeeded, spec = objects.status(o).get("succeeded") or 0, objects.spec(o)
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = spec.get("parallelism") or 0
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_duration(o: dict[str, Any]) -> str:
    start, end = objects.status(o).get("startTime"), objects.status(o).get("completionTime")
    if not start:
        return ""
    finish = parse_time(end) if end else datetime.now(UTC)
    return human_duration((finish - parse_time(start)).total_seconds())


def _job_status(o: dict[str, Any]) -> str:
    conditions: dict[str, Any] = {}
    for c in objects.status(o).get("conditions") or []:
        conditions.setdefault(c.get("type"), c.get("status"))
    if conditions.get("Complete") == "True":
        return "Complete"
    if conditions.get("Failed") == "True":
        return "Failed"
    if objects.is_deleting(o):
        return "Terminating"
    if conditions.get("Suspended") == "True":
        return "Suspended"
    if conditions.get("FailureTarget") == "True":
        return "FailureTarget"
    return "Running"


def _involved(o: dict[str, Any]) -> str:
    ref = o.get("involvedObject") or {}
    kind = str(ref.get("kind", "")).lower()
    return f"{kind}/{ref['name']}" if ref.get("name") else kind


def _event_first_seen(o: dict[str, Any]) -> str:
    return age(o.get("firstTimestamp") or o.get("eventTime"))


def _event_last_seen(o: dict[str, Any]) -> str:
    series = o.get("series") or {}
    if series:
        return age(series.get("lastObservedTime"))
    return age(o["lastTimestamp"]) if o.get("lastTimestamp") else _event_first_seen(o)


def _event_count(o: dict[str, Any]) -> int:
    series = o.get("series") or {}
    return int(series.get("count") or 0) if series else int(o.get("count") or 1)


def _event_source(o: dict[str, Any]) -> str:
    source = o.get("source") or {}
    component = source.get("component") or o.get("reportingComponent") or o.get("reportingController") or ""
    host = source.get("host") or o.get("reportingInstance") or ""
    return ", ".join(p for p in (component, host) if p)


def _subjects(kind: str) -> Callable[[dict[str, Any]], str]:
    """rbac.SubjectsStrings: users and groups by name, service accounts as namespace/name."""
    def cell(o: dict[str, Any]) -> str:
        subjects = [s for s in o.get("subjects") or [] if s.get("kind") == kind]
        if kind == "ServiceAccount":
            return ", ".join(f"{s.get('namespace', '')}/{s.get('name', '')}" for s in subjects)
        return ", ".join(str(s.get("name", "")) for s in subjects)
    return cell


def _int_or_na(value: Any) -> str:
    return "N/A" if value is None else str(value)


_CREATED = "CreationTimestamp is a timestamp representing the server time when this object was created."
_NAME = Column("Name", "string", objects.name, 0, "Name must be unique within a namespace.", "name")
_AGE = Column("Age", "string", _age, 0, _CREATED)


def _col(name: str, ctype: str, cell: Callable[[dict[str, Any]], Any], description: str = "") -> Column:
    return Column(name, ctype, cell, 0, description)


def _wide(name: str, ctype: str, cell: Callable[[dict[str, Any]], Any], description: str = "") -> Column:
    return Column(name, ctype, cell, 1, description)


_SELECTOR = "A label query over pods that should match the replica count."
_READY = "Number of the pod with ready state"


def _ready_of(o: dict[str, Any]) -> str:
    return f"{objects.status(o).get('readyReplicas', 0)}/{objects.spec(o).get('replicas', 1)}"


def _role_binding_columns(what: str) -> list[Column]:
    return [_NAME, _col("Role", "string", lambda o: f"{(o.get('roleRef') or {}).get('kind', '')}/"
                                                   f"{(o.get('roleRef') or {}).get('name', '')}",
                        "RoleRef can reference a Role in the current namespace or a ClusterRole."), _AGE,
            _wide("Users", "string", _subjects("User"), f"Users in the {what}"),
            _wide("Groups", "string", _subjects("Group"), f"Groups in the {what}"),
            _wide("ServiceAccounts", "string", _subjects("ServiceAccount"), f"ServiceAccounts in the {what}")]


BUILTIN_COLUMNS: dict[str, list[Column]] = {
    "/Pod": [_NAME, _col("Ready", "string", _pod_ready,
                         "The aggregate readiness state of this pod for accepting traffic."),
             _col("Status", "string", _pod_status, "The aggregate status of the containers in this pod."),
             _col("Restarts", "string", _pod_restarts, "The number of times the containers in this pod have been "
                  "restarted and when the last container in this pod has restarted."), _AGE,
             _wide("IP", "string", _pod_ip, "podIP address allocated to the pod."),
             _wide("Node", "string", lambda o: _or_none(objects.spec(o).get("nodeName")),
                   "NodeName indicates in which node this pod is scheduled."),
             _wide("Nominated Node", "string", lambda o: _or_none(objects.status(o).get("nominatedNodeName")),
                   "nominatedNodeName is set only when this pod preempts other pods on the node."),
             _wide("Readiness Gates", "string", _pod_readiness_gates,
                   "If specified, all readiness gates will be evaluated for pod readiness.")],
    "apps/Deployment": [_NAME, _col("Ready", "string", _ready_of, _READY),
                        _col("Up-to-date", "string", lambda o: objects.status(o).get("updatedReplicas", 0),
                             "Total number of non-terminating pods targeted by this deployment that have the "
                             "desired template spec."),
                        _col("Available", "string", lambda o: objects.status(o).get("availableReplicas", 0),
                             "Total number of available non-terminating pods targeted by this deployment."),
                        _AGE, *_containers_images("spec", "template"),
                        _wide("Selector", "string", lambda o: label_selector_string(objects.spec(o).get("selector")),
                              "Label selector for pods.")],
    "apps/ReplicaSet": [_NAME, _col("Desired", "integer", lambda o: objects.spec(o).get("replicas", 1),
                                    "Replicas is the number of desired pods."),
                        _col("Current", "integer", lambda o: objects.status(o).get("replicas", 0),
                             "Replicas is the most recently observed number of non-terminating pods."),
                        _col("Ready", "integer", lambda o: objects.status(o).get("readyReplicas", 0),
                             "The number of non-terminating pods targeted by this ReplicaSet with a Ready "
                             "Condition."), _AGE, *_containers_images("spec", "template"),
                        _wide("Selector", "string", lambda o: format_label_selector(objects.spec(o).get("selector")),
                              _SELECTOR)],
    "apps/StatefulSet": [_NAME, _col("Ready", "string", _ready_of, _READY), _AGE,
                         *_containers_images("spec", "template")],
    "apps/DaemonSet": [_NAME,
                       _col("Desired", "integer", lambda o: objects.status(o).get("desiredNumberScheduled", 0),
                            "The total number of nodes that should be running the daemon pod."),
                       _col("Current", "integer", lambda o: objects.status(o).get("currentNumberScheduled", 0),
                            "The number of nodes that are running at least 1 daemon pod."),
                       _col("Ready", "integer", lambda o: objects.status(o).get("numberReady", 0),
                            "The number of nodes that should be running the daemon pod and have one or more of "
                            "the daemon pod running with a Ready Condition."),
                       _col("Up-to-date", "integer", lambda o: objects.status(o).get("updatedNumberScheduled", 0),
                            "The total number of nodes that are running updated daemon pod"),
                       _col("Available", "integer", lambda o: objects.status(o).get("numberAvailable", 0),
                            "The number of nodes that should be running the daemon pod and have one or more of "
                            "the daemon pod running and available."),
                       _col("Node Selector", "string",
                            lambda o: format_labels(objects.spec(objects.spec(o).get("template") or {})
                                                    .get("nodeSelector")),
                            "NodeSelector is a selector which must be true for the pod to fit on a node."),
                       _AGE, *_containers_images("spec", "template"),
                       _wide("Selector", "string", lambda o: format_label_selector(objects.spec(o).get("selector")),
                             "A label query over pods that are managed by the daemon set.")],
    "batch/Job": [_NAME, _col("Status", "string", _job_status, "Status of the job."),
                  _col("Completions", "string", _job_completions,
                       "The number of pods which reached phase Succeeded."),
                  _col("Duration", "string", _job_duration, "Time required to complete the job."), _AGE,
                  *_containers_images("spec", "template"),
                  _wide("Selector", "string", lambda o: format_label_selector(objects.spec(o).get("selector")),
                        "A label query over pods that should match the pod count.")],
    "batch/CronJob": [_NAME, _col("Schedule", "string", lambda o: objects.spec(o).get("schedule", ""),
                                  "The schedule in Cron format."),
                      _col("Timezone", "string", lambda o: _or_none(objects.spec(o).get("timeZone")),
                           "The time zone name for the given schedule."),
                      _col("Suspend", "boolean", lambda o: bool(objects.spec(o).get("suspend")),
                           "This flag tells the controller to suspend subsequent executions."),
                      _col("Active", "integer", lambda o: len(objects.status(o).get("active") or []),
                           "A list of pointers to currently running jobs."),
                      _col("Last Schedule", "string",
                           lambda o: age(objects.status(o)["lastScheduleTime"])
                           if objects.status(o).get("lastScheduleTime") else "<none>",
                           "Information when was the last time the job was successfully scheduled."),
                      _AGE, *_containers_images("spec", "jobTemplate", "spec", "template"),
                      _wide("Selector", "string",
                            lambda o: format_label_selector(objects.spec(objects.spec(o).get("jobTemplate") or {})
                                                            .get("selector")),
                            "A label query over pods that should match the pod count.")],
    "/Node": [_NAME, _col("Status", "string", _node_status, "The status of the node"),
              _col("Roles", "string", _node_roles, "The roles of the node"), _AGE,
              _col("Version", "string", lambda o: (objects.status(o).get("nodeInfo") or {}).get("kubeletVersion", ""),
                   "Kubelet Version reported by the node."),
              _wide("Internal-IP", "string", _node_address("InternalIP"), "List of addresses reachable to the node."),
              _wide("External-IP", "string", _node_address("ExternalIP"), "List of addresses reachable to the node."),
              _wide("OS-Image", "string", _node_info("osImage"), "OS Image reported by the node."),
              _wide("Kernel-Version", "string", _node_info("kernelVersion"), "Kernel Version reported by the node."),
              _wide("Container-Runtime", "string", _node_info("containerRuntimeVersion"),
                    "ContainerRuntime Version reported by the node.")],
    "/Namespace": [_NAME, _col("Status", "string", lambda o: objects.status(o).get("phase", ""),
                               "The status of the namespace"), _AGE],
    "/ConfigMap": [_NAME, _col("Data", "string",
                               lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {}),
                               "Data contains the configuration data."), _AGE],
    "/Secret": [_NAME, _col("Type", "string", lambda o: o.get("type", "Opaque"),
                            "Used to facilitate programmatic handling of secret data."),
                _col("Data", "string", lambda o: len(o.get("data") or {}),
                     "Data contains the secret data."), _AGE],
    "/ServiceAccount": [_NAME, _col("Secrets", "string", lambda o: len(o.get("secrets") or []),
                                    "Secrets is a list of the secrets in the same namespace."), _AGE],
    "/Service": [_NAME, _col("Type", "string", lambda o: objects.spec(o).get("type", "ClusterIP"),
                             "type determines how the Service is exposed."),
                 _col("Cluster-IP", "string", _svc_cluster_ip, "clusterIP is the IP address of the service."),
                 _col("External-IP", "string", _svc_external_ip,
                      "externalIPs is a list of IP addresses for which nodes in the cluster will also accept "
                      "traffic for this service."),
                 _col("Port(s)", "string", _svc_ports, "The list of ports that are exposed by this service."), _AGE,
                 _wide("Selector", "string", lambda o: format_labels(objects.spec(o).get("selector")),
                       "Route service traffic to pods with label keys and values matching this selector.")],
    "/Event": [_col("Last Seen", "string", _event_last_seen,
                    "The time at which the most recent occurrence of this event was recorded."),
               _col("Type", "string", lambda o: o.get("type", ""), "Type of this event (Normal, Warning)."),
               _col("Reason", "string", lambda o: o.get("reason", ""),
                    "This should be a short, machine understandable string that gives the reason for the "
                    "transition into the object's current status."),
               _col("Object", "string", _involved, "The object that this event is about."),
               _wide("Subobject", "string", lambda o: (o.get("involvedObject") or {}).get("fieldPath", ""),
                     "If referring to a piece of an object instead of an entire object."),
               _wide("Source", "string", _event_source, "The component reporting this event."),
               _col("Message", "string", lambda o: str(o.get("message", "")).strip(),
                    "A human-readable description of the status of this operation."),
               _wide("First Seen", "string", _event_first_seen,
                     "The time at which the event was first recorded."),
               _wide("Count", "string", _event_count, "The number of times this event has occurred."),
               Column("Name", "string", objects.name, 1, _NAME.description, "name")],
    "coordination.k8s.io/Lease": [_NAME, _col("Holder", "string", lambda o: objects.spec(o).get("holderIdentity", ""),
                                              "holderIdentity contains the identity of the holder of a current "
                                              "lease."), _AGE],
    "rbac.authorization.k8s.io/RoleBinding": _role_binding_columns("roleBinding"),
    "rbac.authorization.k8s.io/ClusterRoleBinding": _role_binding_columns("clusterRoleBinding"),
    "policy/PodDisruptionBudget": [
        _NAME, _col("Min Available", "string", lambda o: _int_or_na(objects.spec(o).get("minAvailable")),
                    "The minimum number of pods that must be available."),
        _col("Max Unavailable", "string", lambda o: _int_or_na(objects.spec(o).get("maxUnavailable")),
             "The maximum number of pods that may be unavailable."),
        _col("Allowed Disruptions", "integer", lambda o: objects.status(o).get("disruptionsAllowed", 0),
             "Calculated number of pods that may be disrupted at this time."), _AGE],
    "apiextensions.k8s.io/CustomResourceDefinition": [
        _NAME, _col("Created At", "date", lambda o: objects.metadata(o).get("creationTimestamp", ""), _CREATED)],
}

_FILTER = re.compile(r'^\[\?\(@\.([\w.]+)\s*==\s*["\']([^"\']*)["\']\)\]')
_INDEX = re.compile(r"^\[(\d+)\]")
_ALL = re.compile(r"^\[\*\]")
_FIELD = re.compile(r"^\.([\w-]+)")


def json_path(obj: Any, path: str) -> Any:
    """The small JSONPath subset CRD printer columns use: ``.a.b``, ``[0]``, ``[*]``, ``[?(@.type=="X")]``; the
    first value found, as kube's CRD table convertor takes (Work's ``.spec.workload.manifests[*].kind``)."""
    values: list[Any] = [obj]
    rest = path.strip()
    if rest.startswith("{") and rest.endswith("}"):
        rest = rest[1:-1]
    while rest:
        if m := _FIELD.match(rest):
            values = [v.get(m.group(1)) for v in values if isinstance(v, dict) and m.group(1) in v]
        elif m := _ALL.match(rest):
            values = [item for v in values if isinstance(v, list) for item in v]
        elif m := _INDEX.match(rest):
            i = int(m.group(1))
            values = [v[i] for v in values if isinstance(v, list) and len(v) > i]
        elif m := _FILTER.match(rest):
            keys, want = m.group(1).split("."), m.group(2)
            matched = []
            for v in values:
                for item in v if isinstance(v, list) else []:
                    cur: Any = item
                    for k in keys:
                        cur = cur.get(k) if isinstance(cur, dict) else None
                    if cur is not None and str(cur) == want:
                        matched.append(item)
            values = matched
        else:
            return None
        rest = rest[m.end():]
    return values[0] if values else None


def _crd_columns(rtype: ResourceType) -> list[Column]:
    columns: list[Column] = [_NAME]
    for col in rtype.printer_columns:
        path, ctype = col.get("jsonPath", ""), col.get("type", "string")

        def cell(o: dict[str, Any], path: str = path, ctype: str = ctype) -> Any:
            value = json_path(o, path)
            if ctype == "date":
                return age(value) if value else "<unknown>"
            return "<none>" if value is None else value

        description = col.get("description") or f"Custom resource definition column (in JSONPath format): {path}"
        columns.append(Column(col["name"], "string" if ctype == "date" else ctype, cell,
                              int(col.get("priority") or 0), description, col.get("format") or ""))
    if not any(c.get("jsonPath") == ".metadata.creationTimestamp" for c in rtype.printer_columns):
        columns.append(_AGE)
    return columns


def columns_for(rtype: ResourceType) -> list[Column]:
    """kube's printer columns for a built-in kind, else the CRD's additionalPrinterColumns."""
    if rtype.builtin:
        return BUILTIN_COLUMNS.get(rtype.kind_key, [_NAME, _AGE])
    return _crd_columns(rtype)


def to_table(rtype: ResourceType, items: list[dict[str, Any]], list_meta: dict[str, Any]) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table with every column, wide ones included: kubectl drops priority>0 unless -o wide."""
    columns = columns_for(rtype)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [
            {"name": c.name, "type": c.type, "format": c.format, "description": c.description,
             "priority": c.priority} for c in columns],
        "rows": [{"cells": [c.cell(o) for c in columns],
                  "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": objects.metadata(o)}} for o in items],
    }
