"""``RemoveIrrelevantFields``: what a resource template must not carry into a member cluster.

Karmada's ``pkg/resourceinterpreter/default/native/prune/prune.go``: the fields the Karmada API
server populated (uid, resourceVersion, managedFields, status...), and per kind the fields a member
cluster generates itself (a Job's generated selector, a Service's cluster IPs, a ServiceAccount's
token Secrets, a token Secret's data, a PVC's selected node, a Deployment's revision annotations).
"""

from __future__ import annotations

from typing import Any

from controller_manager.objects import MutableObj
from kube_api import jobs

_DROPPED_METADATA = ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
                     "managedFields", "resourceVersion", "selfLink", "uid", "ownerReferences", "finalizers")
_DEPLOYMENT_ANNOTATIONS = ("deployment.kubernetes.io/revision", "deployment.kubernetes.io/revision-history")
_SA_UID_ANNOTATION = "kubernetes.io/service-account.uid"
_SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"


def _prune_kind(workload: MutableObj) -> None:
    """The per-kind pruners (``kindIrrelevantFieldPruners``): fields a member cluster generates itself."""
    kind = workload.get("kind")
    meta = workload.get("metadata") or {}
    annotations: dict[str, str] = meta.get("annotations") or {}
    raw_spec = workload.get("spec")
    spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    if kind == "Deployment":
        for key in _DEPLOYMENT_ANNOTATIONS:
            annotations.pop(key, None)
    elif kind == "Job" and not spec.get("manualSelector"):
        match_labels = (spec.get("selector") or {}).get("matchLabels")
        if isinstance(match_labels, dict):
            for key in jobs.SELECTOR_LABELS:
                match_labels.pop(key, None)
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
        if isinstance(template_labels, dict):
            for key in jobs.TEMPLATE_LABELS:
                template_labels.pop(key, None)
    elif kind == "Service":
        if "clusterIP" in spec and spec["clusterIP"] != "None":
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
    elif kind == "ServiceAccount":
        prefix = f"{meta.get('name')}-token-"
        secrets = workload.get("secrets")
        if isinstance(secrets, list) and secrets:
            workload["secrets"] = [s for s in secrets if not str((s or {}).get("name") or "").startswith(prefix)]
    elif kind == "Secret" and workload.get("type") == "kubernetes.io/service-account-token":
        annotations.pop(_SA_UID_ANNOTATION, None)
        workload["data"] = None
    elif kind == "PersistentVolumeClaim" and annotations.get(_SELECTED_NODE_ANNOTATION):
        annotations.pop(_SELECTED_NODE_ANNOTATION, None)


def remove_irrelevant_fields(workload: MutableObj) -> None:
    """Remove, in place, the server-populated fields and the member-generated fields of the workload's kind."""
    workload.pop("status", None)
    meta = workload.get("metadata")
    if isinstance(meta, dict):
        for key in _DROPPED_METADATA:
            meta.pop(key, None)
    _prune_kind(workload)
