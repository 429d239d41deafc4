"""Kind-specific server behaviour: Karmada's Cluster (served natively), namespaces, CRDs.

Karmada has no CRD for ``cluster.karmada.io/v1alpha1`` Cluster: its aggregated API server
serves it and mutates it on write. We serve it natively with a schema written here and the
same mutations (default resource models, ``timeAdded`` on NoExecute taints, zone → zones).
"""

from __future__ import annotations

from typing import Any

from controller_manager import objects

from . import defaults, errors, services, validation, workload_validation
from .codec import now_rfc3339
from .resources import ResourceType
from .schema import StructuralSchema
from .store import CRD_KEY, NAMESPACE_KEY, Store

MAX_INT64 = "9223372036854775807"

_STRING: dict[str, Any] = {"type": "string"}
_REF: dict[str, Any] = {"type": "object", "required": ["namespace", "name"],
                        "properties": {"namespace": _STRING, "name": _STRING}}
_QUANTITY: dict[str, Any] = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}

CLUSTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "apiVersion": _STRING,
        "kind": _STRING,
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["syncMode"],
            "properties": {
                "id": {"type": "string", "maxLength": 128000},
                "syncMode": {"type": "string", "enum": ["Push", "Pull"]},
                "apiEndpoint": _STRING,
                "secretRef": _REF,
                "impersonatorSecretRef": _REF,
                "insecureSkipTLSVerification": {"type": "boolean"},
                "proxyURL": _STRING,
                "proxyHeader": {"type": "object", "additionalProperties": _STRING},
                "provider": _STRING,
                "region": _STRING,
                "zone": _STRING,
                "zones": {"type": "array", "items": _STRING},
                "taints": {"type": "array", "items": {
                    "type": "object", "required": ["key", "effect"],
                    "properties": {"key": _STRING, "value": _STRING,
                                   "effect": {"type": "string",
                                              "enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
                                   "timeAdded": {"type": "string", "format": "date-time"}}}},
                "resourceModels": {"type": "array", "items": {
                    "type": "object", "required": ["grade", "ranges"],
                    "properties": {"grade": {"type": "integer", "minimum": 0},
                                   "ranges": {"type": "array", "items": {
                                       "type": "object", "required": ["name", "min", "max"],
                                       "properties": {"name": _STRING, "min": _QUANTITY, "max": _QUANTITY}}}}}},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}

CLUSTER_TYPE = ResourceType(
    group="cluster.karmada.io", version="v1alpha1", plural="clusters", kind="Cluster", namespaced=False,
    singular="cluster", subresources=("status",), has_generation=True, status_on_create="reset",
    create_status={}, name_rule="label", builtin=False, schema=StructuralSchema(CLUSTER_SCHEMA),
    openapi_schema=CLUSTER_SCHEMA,
    printer_columns=[
        {"name": "Version", "type": "string", "jsonPath": ".status.kubernetesVersion"},
        {"name": "Mode", "type": "string", "jsonPath": ".spec.syncMode"},
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ],
)

# Karmada's default resource models: grade → ([cpu min, max) cores, [memory min, max) GiB).
_DEFAULT_GRADES = [(0, 1, 0, 4), (1, 2, 4, 16), (2, 4, 16, 32), (4, 8, 32, 64), (8, 16, 64, 128),
                   (16, 32, 128, 256), (32, 64, 256, 512), (64, 128, 512, 1024), (128, None, 1024, None)]


def default_resource_models() -> list[dict[str, Any]]:
    models = []
    for grade, (cpu_min, cpu_max, mem_min, mem_max) in enumerate(_DEFAULT_GRADES):
        models.append({"grade": grade, "ranges": [
            {"name": "cpu", "min": str(cpu_min), "max": str(cpu_max) if cpu_max is not None else MAX_INT64},
            {"name": "memory", "min": f"{mem_min}Gi" if mem_min else "0",
             "max": f"{mem_max}Gi" if mem_max is not None else MAX_INT64},
        ]})
    return models


def mutate_cluster(_rtype: ResourceType, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
    """The aggregated server's create/update mutations for Cluster."""
    spec = new.get("spec")
    if not isinstance(spec, dict):
        return
    if old is None:
        models = spec.get("resourceModels")
        if not models:
            spec["resourceModels"] = default_resource_models()
        elif isinstance(models, list) and all(isinstance(m, dict) for m in models):
            models.sort(key=lambda m: m.get("grade", 0) if isinstance(m.get("grade"), int) else 0)
            for r in models[0].get("ranges") or []:
                if isinstance(r, dict):
                    r["min"] = "0"
            for r in models[-1].get("ranges") or []:
                if isinstance(r, dict):
                    r["max"] = MAX_INT64
    if spec.get("zone") and not spec.get("zones"):
        spec["zones"] = [spec.pop("zone")]
    for taint in spec.get("taints") or []:
        if isinstance(taint, dict) and taint.get("effect") == "NoExecute" and not taint.get("timeAdded"):
            taint["timeAdded"] = now_rfc3339()


def mutate_namespace(_rtype: ResourceType, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
    """Namespaces carry the ``kubernetes`` finalizer; only /finalize may change it."""
    spec = new.setdefault("spec", {})
    if old is None:
        spec["finalizers"] = ["kubernetes"]


MAX_DATA_SIZE = 1024 * 1024  # kube's core.MaxSecretSize, also the ConfigMap limit


def check_data_size(rtype: ResourceType, _old: dict[str, Any] | None, new: dict[str, Any]) -> None:
    """ConfigMap and Secret payloads are at most 1 MiB (kube validation: 422 on ``[]``)."""
    total = 0
    for key in ("data", "binaryData", "stringData"):
        values = new.get(key)
        if not isinstance(values, dict):
            continue
        base64 = key == "binaryData" or (key == "data" and rtype.kind == "Secret")
        for v in values.values():
            if isinstance(v, str):  # base64 values count as the bytes they decode to
                total += len(v) * 3 // 4 - (len(v) - len(v.rstrip("="))) if base64 else len(v.encode("utf-8"))
    if total > MAX_DATA_SIZE:
        raise errors.invalid(rtype.kind, rtype.group, objects.name(new), [errors.Cause(
            "FieldValueTooLong", f"Too long: must have at most {MAX_DATA_SIZE} bytes", "[]")])


def install_core(store: Store) -> None:
    """Behaviour every Kubernetes API server has: namespaces and CRDs."""
    store.mutators.setdefault(NAMESPACE_KEY, []).append(mutate_namespace)
    for storage_key in ("/configmaps", "/secrets"):
        store.mutators.setdefault(storage_key, []).append(check_data_size)
    store.mutators.setdefault(CRD_KEY, []).append(store.crd_create_status)
    for storage_key, defaulter in defaults.DEFAULTERS.items():
        store.mutators.setdefault(storage_key, []).append(defaults.mutator(defaulter))
    store.mutators["batch/jobs"].append(defaults.generate_job_selector)  # kube's PrepareForCreate
    for storage_key, check in workload_validation.CHECKS.items():  # after the defaults
        store.mutators.setdefault(storage_key, []).append(validation.spec_check_mutator(check))
    services.install(store)  # after the Service defaulter: allocation needs spec.type

    def on_removed(rtype: ResourceType, stored: Any) -> None:
        if rtype.storage_key == CRD_KEY:
            store.drop_crd_objects(stored)

    store.removal_listeners.append(on_removed)


def install(store: Store) -> None:
    """A Karmada host API server: the core behaviour plus the natively served Cluster kind."""
    install_core(store)
    store.registry.add(CLUSTER_TYPE)
    store.mutators.setdefault(CLUSTER_TYPE.storage_key, []).append(mutate_cluster)
