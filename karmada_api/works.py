"""What a Work's status says (``pkg/apis/work/v1alpha1``): the condition types both its writer (the
execution controller) and its readers (the binding-status aggregation) use."""

from __future__ import annotations

WORK_APPLIED = "Applied"
"""``workv1alpha1.WorkApplied``: the manifests were applied to the member cluster."""
