"""Server-side printing (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``).

kubectl asks the server for a Table and prints its cells, so the columns here are what
``kubectl get`` shows. They follow kube's printers for the built-in kinds and a CRD's
``additionalPrinterColumns`` for custom resources.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .codec import parse_rfc3339
from .resources import ResourceType

Column = tuple[str, str, Callable[[dict[str, Any]], Any]]  # (name, type, cell function)


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
    return human_duration((datetime.now(UTC) - parse_rfc3339(timestamp)).total_seconds())


def _meta(o: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = o.get("metadata") or {}
    return meta


def _spec(o: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = o.get("spec") or {}
    return spec


def _status(o: dict[str, Any]) -> dict[str, Any]:
    status: dict[str, Any] = o.get("status") or {}
    return status


def _name(o: dict[str, Any]) -> Any:
    return _meta(o).get("name", "")


def _age(o: dict[str, Any]) -> str:
    return age(_meta(o).get("creationTimestamp"))


def _pod_ready(o: dict[str, Any]) -> str:
    statuses = _status(o).get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    return f"{ready}/{len(_spec(o).get('containers') or [])}"


def _pod_status(o: dict[str, Any]) -> str:
    if _meta(o).get("deletionTimestamp"):
        return "Terminating"
    status = _status(o)
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for c in status.get("containerStatuses") or []:
        waiting = (c.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
    return str(reason)


def _pod_restarts(o: dict[str, Any]) -> int:
    return sum(int(c.get("restartCount") or 0) for c in _status(o).get("containerStatuses") or [])


def _node_status(o: dict[str, Any]) -> str:
    ready = next((c for c in _status(o).get("conditions") or [] if c.get("type") == "Ready"), None)
    text = "Ready" if ready and ready.get("status") == "True" else ("NotReady" if ready else "Unknown")
    if _spec(o).get("unschedulable"):
        text += ",SchedulingDisabled"
    return text


def _node_roles(o: dict[str, Any]) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix):] for k in (_meta(o).get("labels") or {}) if k.startswith(prefix))
    return ",".join(r for r in roles if r) or "<none>"


def _svc_ports(o: dict[str, Any]) -> str:
    ports = _spec(o).get("ports") or []
    return ",".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in ports) or "<none>"


def _involved(o: dict[str, Any]) -> str:
    ref = o.get("involvedObject") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _event_last_seen(o: dict[str, Any]) -> str:
    return age(o.get("lastTimestamp") or o.get("eventTime") or _meta(o).get("creationTimestamp"))


_NAME: Column = ("Name", "string", _name)
_AGE: Column = ("Age", "string", _age)

BUILTIN_COLUMNS: dict[str, list[Column]] = {
    "/Pod": [_NAME, ("Ready", "string", _pod_ready), ("Status", "string", _pod_status),
             ("Restarts", "string", _pod_restarts), _AGE],
    "apps/Deployment": [_NAME, ("Ready", "string",
                                lambda o: f"{_status(o).get('readyReplicas', 0)}/{_spec(o).get('replicas', 1)}"),
                        ("Up-to-date", "integer", lambda o: _status(o).get("updatedReplicas", 0)),
                        ("Available", "integer", lambda o: _status(o).get("availableReplicas", 0)), _AGE],
    "apps/ReplicaSet": [_NAME, ("Desired", "integer", lambda o: _spec(o).get("replicas", 1)),
                        ("Current", "integer", lambda o: _status(o).get("replicas", 0)),
                        ("Ready", "integer", lambda o: _status(o).get("readyReplicas", 0)), _AGE],
    "/Node": [_NAME, ("Status", "string", _node_status), ("Roles", "string", _node_roles), _AGE,
              ("Version", "string", lambda o: (_status(o).get("nodeInfo") or {}).get("kubeletVersion", ""))],
    "/Namespace": [_NAME, ("Status", "string", lambda o: _status(o).get("phase", "")), _AGE],
    "/ConfigMap": [_NAME, ("Data", "integer", lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
                   _AGE],
    "/Secret": [_NAME, ("Type", "string", lambda o: o.get("type", "Opaque")),
                ("Data", "integer", lambda o: len(o.get("data") or {})), _AGE],
    "/Service": [_NAME, ("Type", "string", lambda o: _spec(o).get("type", "ClusterIP")),
                 ("Cluster-IP", "string", lambda o: _spec(o).get("clusterIP", "<none>")),
                 ("External-IP", "string", lambda o: "<none>"), ("Port(s)", "string", _svc_ports), _AGE],
    "/Event": [("Last Seen", "string", _event_last_seen), ("Type", "string", lambda o: o.get("type", "")),
               ("Reason", "string", lambda o: o.get("reason", "")), ("Object", "string", _involved),
               ("Message", "string", lambda o: o.get("message", ""))],
    "coordination.k8s.io/Lease": [_NAME, ("Holder", "string", lambda o: _spec(o).get("holderIdentity", "")), _AGE],
    "apiextensions.k8s.io/CustomResourceDefinition": [
        _NAME, ("Created At", "date", lambda o: _meta(o).get("creationTimestamp", ""))],
}

_FILTER = re.compile(r'^\[\?\(@\.([\w.]+)\s*==\s*["\']([^"\']*)["\']\)\]')
_INDEX = re.compile(r"^\[(\d+)\]")
_FIELD = re.compile(r"^\.([\w-]+)")


def json_path(obj: Any, path: str) -> Any:
    """The small JSONPath subset CRD printer columns use: ``.a.b``, ``[0]``, ``[?(@.type=="X")]``."""
    values: list[Any] = [obj]
    rest = path.strip()
    if rest.startswith("{") and rest.endswith("}"):
        rest = rest[1:-1]
    while rest:
        if m := _FIELD.match(rest):
            values = [v.get(m.group(1)) for v in values if isinstance(v, dict) and m.group(1) in v]
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

        columns.append((col["name"], "string" if ctype == "date" else ctype, cell))
    if not any(c.get("jsonPath") == ".metadata.creationTimestamp" for c in rtype.printer_columns):
        columns.append(_AGE)
    return columns


def columns_for(rtype: ResourceType) -> list[Column]:
    if rtype.builtin:
        return BUILTIN_COLUMNS.get(rtype.kind_key, [_NAME, _AGE])
    return _crd_columns(rtype)


def to_table(rtype: ResourceType, objects: list[dict[str, Any]], list_meta: dict[str, Any]) -> dict[str, Any]:
    columns = columns_for(rtype)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": [
            {"name": name, "type": ctype, "format": "name" if name == "Name" else "", "description": "",
             "priority": 0} for name, ctype, _ in columns],
        "rows": [{"cells": [fn(o) for _, _, fn in columns],
                  "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": o.get("metadata", {})}} for o in objects],
    }
