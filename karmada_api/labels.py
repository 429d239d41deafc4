"""Well-known labels and annotations (pkg/apis/work/v1alpha2/well_known_constants.go, pkg/util/constants.go)."""

from __future__ import annotations

RB_PERMANENT_ID = "resourcebinding.karmada.io/permanent-id"
CRB_PERMANENT_ID = "clusterresourcebinding.karmada.io/permanent-id"
RB_NAMESPACE_ANNOTATION = "resourcebinding.karmada.io/namespace"
RB_NAME_ANNOTATION = "resourcebinding.karmada.io/name"
CRB_NAME_ANNOTATION = "clusterresourcebinding.karmada.io/name"
APPLIED_PLACEMENT_ANNOTATION = "policy.karmada.io/applied-placement"
PP_PERMANENT_ID = "propagationpolicy.karmada.io/permanent-id"
CPP_PERMANENT_ID = "clusterpropagationpolicy.karmada.io/permanent-id"
BINDING_MANAGED_BY = "binding.karmada.io/managed-by"
RESOURCE_TEMPLATE_GENERATION = "resourcetemplate.karmada.io/generation"
