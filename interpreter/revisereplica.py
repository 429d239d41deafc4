"""``ReviseReplica``: a member cluster's share of the replicas written into its copy of a workload.

Karmada's ``pkg/resourceinterpreter/default/native/revisereplica.go``, into the replica field
:mod:`interpreter.replicas` knows for each workload, written the way ``helper.ApplyReplica``
(``pkg/util/helper``) writes a field: only a field the template sets is revised.
"""

from __future__ import annotations

from controller_manager.objects import MutableObj

from .replicas import replica_field


def apply_replica(workload: MutableObj, replicas: int, field: str) -> None:
    """``helper.ApplyReplica``: set ``spec.<field>`` to ``replicas`` when the workload has that field."""
    spec = workload.get("spec")
    if isinstance(spec, dict) and field in spec:
        spec[field] = replicas


def revise_replica(workload: MutableObj, replicas: int) -> None:
    """Write ``replicas`` into the workload's replica field; kinds without replicas are left alone."""
    field = replica_field(str(workload.get("apiVersion") or ""), str(workload.get("kind") or ""))
    if field is not None:
        apply_replica(workload, replicas, field)
