{{/* Everything of one component, each part behind its switch (see values.yaml). */}}
{{- define "karmada-rebalance.component" -}}
{{- $values := .root.Values -}}
{{- if $values.serviceAccount.create }}
---
{{ include "karmada-rebalance.serviceAccount" . }}
{{- end }}
{{- if $values.rbac.create }}
---
{{ include "karmada-rebalance.rbac" . }}
{{- end }}
{{- if $values.workloads.create }}
---
{{ include "karmada-rebalance.deployment" . }}
---
{{ include "karmada-rebalance.service" . }}
{{- if .values.podDisruptionBudget.enabled }}
---
{{ include "karmada-rebalance.pdb" . }}
{{- end }}
{{- if $values.serviceMonitor.enabled }}
---
{{ include "karmada-rebalance.serviceMonitor" . }}
{{- end }}
{{- end }}
{{- end }}
