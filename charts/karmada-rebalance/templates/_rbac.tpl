{{/*
The Karmada-API-server objects of one component: its ServiceAccount, a ClusterRole/Binding with
the cluster-wide rules and a Role/Binding for its Lease in systemNamespace. The rules come from
files/rbac/<component>.yaml, generated from the declarations in the code by hack/generate_rbac.py:
never write a rule here.
*/}}

{{- define "karmada-rebalance.serviceAccount" -}}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "karmada-rebalance.labels" . | nindent 4 }}
  {{- with .root.Values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
# Its token is only used in a kubeconfig Secret; pods never mount it.
automountServiceAccountToken: false
{{- end }}

{{- define "karmada-rebalance.rbac" -}}
{{- $rules := .root.Files.Get .rbacFile | fromYaml -}}
{{- if or (not $rules) (hasKey $rules "Error") -}}
{{- fail (printf "%s is missing or unreadable: run python hack/generate_rbac.py" .rbacFile) -}}
{{- end -}}
{{- $roleName := printf "%s:%s" .root.Release.Name .name -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $roleName }}
  labels:
    {{- include "karmada-rebalance.labels" . | nindent 4 }}
rules:
  {{- toYaml $rules.clusterRules | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $roleName }}
  labels:
    {{- include "karmada-rebalance.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $roleName }}
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ .root.Release.Namespace }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $roleName }}:leader-election
  namespace: {{ .root.Values.systemNamespace }}
  labels:
    {{- include "karmada-rebalance.labels" . | nindent 4 }}
rules:
  {{- toYaml $rules.leaseRules | nindent 2 }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $roleName }}:leader-election
  namespace: {{ .root.Values.systemNamespace }}
  labels:
    {{- include "karmada-rebalance.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $roleName }}:leader-election
subjects:
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ .root.Release.Namespace }}
{{- end }}
