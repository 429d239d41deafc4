"""The labels kube-apiserver generates on a Job whose selector it makes (``spec.manualSelector`` not true).

Since Kubernetes 1.27 both spellings go on the Pod template, and the selector names the ``batch.kubernetes.io``
one (1.20 wrote only the legacy ones). Karmada prunes all of them from a template before it reaches a member,
whose own API server generates them again for its own Job.
"""

from __future__ import annotations

from typing import Final

CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID_LABEL: Final = "controller-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL: Final = "job-name"

SELECTOR_LABELS: Final = (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL)
"""What a generated selector may carry (the new one, or the legacy one of a Job made before 1.27)."""
TEMPLATE_LABELS: Final = (LEGACY_CONTROLLER_UID_LABEL, LEGACY_JOB_NAME_LABEL, CONTROLLER_UID_LABEL, JOB_NAME_LABEL)
"""What a generated Pod template carries."""

__all__ = ["CONTROLLER_UID_LABEL", "JOB_NAME_LABEL", "LEGACY_CONTROLLER_UID_LABEL", "LEGACY_JOB_NAME_LABEL",
           "SELECTOR_LABELS", "TEMPLATE_LABELS"]
