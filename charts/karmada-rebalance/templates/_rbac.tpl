{{/*
The Karmada-API-server objects of one component: its ServiceAccount, a ClusterRole/Binding with
the cluster-wide rules and a Role/Binding for its Lease in systemNamespace. The rules come from
files/rbac/<component>.yaml, generated from the declarations in the code by hack/generate_rbac.py:
never write a rule here. The one thing the chart changes is the Lease's name in the Role's
resourceNames: the file's leaseName (the program's default) becomes the name the program is given
(.leaseName, from the component's value, or extraCommandArgs' leader-elect-resource-name), so the Role
always names the Lease in use. A component may pick another complete set of cluster-wide rules from
the file with .clusterRulesKey (the controller-manager's preserveClusterRules, with preserve mode on).
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
{{- $clusterRulesKey := get . "clusterRulesKey" | default "clusterRules" -}}
{{- if not (hasKey $rules $clusterRulesKey) -}}
{{- fail (printf "%s has no %s: run python hack/generate_rbac.py" .rbacFile $clusterRulesKey) -}}
{{- end -}}
{{- $defaultLease := get $rules "leaseName" -}}
{{- if not $defaultLease -}}
{{- fail (printf "%s has no leaseName: run python hack/generate_rbac.py" .rbacFile) -}}
{{- end -}}
{{- /* extraCommandArgs come last on the command line, so they win there and here alike. */ -}}
{{- $lease := get .values.extraCommandArgs "leader-elect-resource-name" | default (get . "leaseName") | default $defaultLease | toString -}}
{{- $leaseRules := list -}}
{{- range $rules.leaseRules -}}
{{- $rule := deepCopy . -}}
{{- if hasKey $rule "resourceNames" -}}
{{- $names := list -}}
{{- range $rule.resourceNames -}}
{{- $names = append $names (eq . $defaultLease | ternary $lease .) -}}
{{- end -}}
{{- $_ := set $rule "resourceNames" $names -}}
{{- end -}}
{{- $leaseRules = append $leaseRules $rule -}}
{{- end -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $roleName }}
  labels:
    {{- include "karmada-rebalance.labels" . | nindent 4 }}
rules:
  {{- toYaml (get $rules $clusterRulesKey) | nindent 2 }}
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
  {{- toYaml $leaseRules | nindent 2 }}
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
