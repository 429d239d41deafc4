"""Member cluster shapes for ``karmada-devplane up --config FILE``.

A member is a name and its Nodes (name, allocatable, labels, taints). The file is YAML::

    members:
      - name: member1
        nodes:
          - name: member1-control-plane
            allocatable: {cpu: "4", memory: 20Gi, pods: "110"}
            labels: {topology.kubernetes.io/zone: zone-a}   # optional
            taints: []                                       # optional, corev1 Taints

The default shapes (:data:`DEFAULT_MEMBERS`) make both user documents deterministic, whatever
uid the workloads get (the Webster tie-break depends on it, see ``devplane/karmada/scheduler/division.py``):

* the rebalancer tutorial (``foo``: 3 replicas of 10m CPU / 10Mi, dynamic weight over member1
  and member2) divides {member1: 2, member2: 1}: the general estimator counts nodes by resource
  model grade (``estimator/general.py``), member1's grade-2 and grade-1 nodes hold 110 + 100 such replicas,
  member2's grade-2 node 110, so the first three Webster seats go member1, member2, member1;
* the descheduler example (``nginx``: 3 replicas of 2 CPUs over three members) divides
  {1, 1, 1}; once member1's only 2-CPU-capable node ``member1-control-plane`` is cordoned, the
  replacement replica fits nowhere in member1 (its worker has 1.5 CPUs), and the one replica
  the descheduler moves can only go to member2 (4 CPUs, one used), not member3 (2 CPUs, full).

``--members N`` beyond the shapes given adds members with one node shaped like member2's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kube_api.quantity import is_quantity

__all__ = ["DEFAULT_MEMBERS", "ConfigError", "MemberShape", "NodeShape", "load_config", "member_shapes"]


class ConfigError(ValueError):
    """The config file cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class NodeShape:
    name: str
    allocatable: dict[str, str]
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict[str, Any], ...] = ()

    def node_object(self) -> dict[str, Any]:
        """The Node as a kubelet registers it: Ready, capacity = allocatable."""
        labels = {"kubernetes.io/hostname": self.name, "kubernetes.io/os": "linux", **self.labels}
        spec: dict[str, Any] = {"taints": [dict(t) for t in self.taints]} if self.taints else {}
        return {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": self.name, "labels": labels},
            "spec": spec,
            "status": {
                "capacity": dict(self.allocatable),
                "allocatable": dict(self.allocatable),
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "message": "kubelet is posting ready status"}],
                "nodeInfo": {"kubeletVersion": "v1.36.0", "operatingSystem": "linux", "architecture": "amd64"},
            },
        }


@dataclass(frozen=True)
class MemberShape:
    name: str
    nodes: tuple[NodeShape, ...]


def _node(name: str, cpu: str, memory: str) -> NodeShape:
    return NodeShape(name, {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"})


DEFAULT_MEMBERS: tuple[MemberShape, ...] = (
    MemberShape("member1", (_node("member1-control-plane", "4", "20Gi"), _node("member1-worker", "1500m", "8Gi"))),
    MemberShape("member2", (_node("member2-control-plane", "4", "20Gi"),)),
    MemberShape("member3", (_node("member3-control-plane", "2", "20Gi"),)),
)


def _extra_member(index: int) -> MemberShape:
    name = f"member{index}"
    return MemberShape(name, (_node(f"{name}-control-plane", "4", "20Gi"),))


def member_shapes(count: int | None, configured: tuple[MemberShape, ...] | None = None) -> tuple[MemberShape, ...]:
    """The members to run: the first ``count`` shapes (all when None), padded with member2-like ones."""
    shapes = configured if configured is not None else DEFAULT_MEMBERS
    if count is None:
        return shapes
    chosen = list(shapes[:count])
    names = {m.name for m in chosen}
    index = 1
    while len(chosen) < count:
        candidate = _extra_member(index)
        if candidate.name not in names:
            chosen.append(candidate)
            names.add(candidate.name)
        index += 1
    return tuple(chosen)


def _require(mapping: Any, key: str, where: str) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise ConfigError(f"{where}: missing field {key!r}")
    return mapping[key]


def _string_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: must be a mapping")
    return {str(k): str(v) for k, v in value.items()}


def _parse_node(raw: Any, where: str) -> NodeShape:
    name = str(_require(raw, "name", where))
    allocatable = _string_map(_require(raw, "allocatable", f"{where} ({name})"), f"{where}.allocatable")
    for resource, amount in allocatable.items():
        if not is_quantity(amount):
            raise ConfigError(f"{where}.allocatable.{resource}: {amount!r} is not a quantity")
    allocatable.setdefault("pods", "110")
    taints = raw.get("taints") or []
    if not isinstance(taints, list) or not all(isinstance(t, dict) and t.get("key") and t.get("effect")
                                               for t in taints):
        raise ConfigError(f"{where}.taints: must be a list of taints with key and effect")
    return NodeShape(name, allocatable, _string_map(raw.get("labels"), f"{where}.labels"), tuple(taints))


def parse_config(document: Any, source: str = "config") -> tuple[MemberShape, ...]:
    members = _require(document, "members", source)
    if not isinstance(members, list) or not members:
        raise ConfigError(f"{source}: members must be a non-empty list")
    shapes: list[MemberShape] = []
    seen: set[str] = set()
    for i, raw in enumerate(members):
        where = f"{source}: members[{i}]"
        name = str(_require(raw, "name", where))
        if name in seen:
            raise ConfigError(f"{where}: duplicate member name {name!r}")
        seen.add(name)
        nodes = _require(raw, "nodes", f"{where} ({name})")
        if not isinstance(nodes, list) or not nodes:
            raise ConfigError(f"{where}.nodes: must be a non-empty list")
        shapes.append(MemberShape(name, tuple(_parse_node(n, f"{where}.nodes[{j}]") for j, n in enumerate(nodes))))
    return tuple(shapes)


def load_config(path: Path) -> tuple[MemberShape, ...]:
    """Read and check a config file (raises :class:`ConfigError` with the file and field named)."""
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    return parse_config(document, str(path))
