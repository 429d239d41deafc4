{{/*
Shared helpers. Each component template builds a context with
(dict "root" $ "name" <component name, also its program> "values" <its values section>
      "healthPort" <port> "args" <its own flags> "rbacFile" <files/rbac/*.yaml>
      ["leaseName" <its Lease, when a value sets --leader-elect-resource-name>]
      ["podAnnotations" <added to the pod's>] ["volumes" <more volumes>] ["volumeMounts" <their mounts>])
and calls the named templates below, so both components stay structurally identical.
*/}}

{{- define "karmada-rebalance.chart" -}}
{{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object: Helm's recommended ones plus commonLabels. */}}
{{- define "karmada-rebalance.commonLabels" -}}
helm.sh/chart: {{ include "karmada-rebalance.chart" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: karmada-rebalance
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* A component's labels: the common ones, its selector labels and its name. */}}
{{- define "karmada-rebalance.labels" -}}
{{ include "karmada-rebalance.commonLabels" .root }}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/component: {{ .name | trimPrefix "karmada-" }}
{{ include "karmada-rebalance.selectorLabels" . }}
{{- end }}

{{/* Karmada's convention: the component's `labels` value (app: karmada-<component>) selects its pods. */}}
{{- define "karmada-rebalance.selectorLabels" -}}
{{ toYaml .values.labels }}
{{- end }}

{{- define "karmada-rebalance.image" -}}
{{- $image := .Values.image -}}
{{- $tag := toString (default .Chart.AppVersion $image.tag) -}}
{{- if $image.registry -}}
{{ printf "%s/%s:%s" $image.registry $image.repository $tag }}
{{- else -}}
{{ printf "%s:%s" $image.repository $tag }}
{{- end -}}
{{- end }}

{{- define "karmada-rebalance.quoteArg" -}}
- {{ printf "--%s=%v" (index . 0) (index . 1) | quote }}
{{- end }}

{{/*
Flags both programs take. Karmada's defaults live in values.yaml and are always rendered, so the
arguments of a running pod say exactly what it runs with; optional ones are left out when empty.
*/}}
{{- define "karmada-rebalance.commonArgs" -}}
{{- $v := .values -}}
- --kubeconfig=/etc/kubeconfig
- --metrics-bind-address=$(POD_IP):8080
- --health-probe-bind-address=$(POD_IP):{{ .healthPort }}
- --leader-elect-resource-namespace={{ .root.Values.systemNamespace }}
{{ include "karmada-rebalance.quoteArg" (list "v" (int $v.logVerbosity)) }}
{{ include "karmada-rebalance.quoteArg" (list "logging-format" $v.loggingFormat) }}
{{ include "karmada-rebalance.quoteArg" (list "kube-api-qps" (toString $v.kubeAPIQPS)) }}
{{ include "karmada-rebalance.quoteArg" (list "kube-api-burst" (int $v.kubeAPIBurst)) }}
{{ include "karmada-rebalance.quoteArg" (list "leader-elect" $v.leaderElection.enabled) }}
{{ include "karmada-rebalance.quoteArg" (list "leader-elect-lease-duration" $v.leaderElection.leaseDuration) }}
{{ include "karmada-rebalance.quoteArg" (list "leader-elect-renew-deadline" $v.leaderElection.renewDeadline) }}
{{ include "karmada-rebalance.quoteArg" (list "leader-elect-retry-period" $v.leaderElection.retryPeriod) }}
{{- with $v.master }}
{{ include "karmada-rebalance.quoteArg" (list "master" .) }}
{{- end }}
{{- end }}

{{/* extraCommandArgs last: argparse keeps the last value, so they can also override a flag above. */}}
{{- define "karmada-rebalance.extraArgs" -}}
{{- range $key, $value := .values.extraCommandArgs }}
{{ include "karmada-rebalance.quoteArg" (list $key $value) }}
{{- end }}
{{- end }}

{{/* A Go duration ("1m30s", "500ms") in seconds, as a string for float64: the values schema has checked its form. */}}
{{- define "karmada-rebalance.seconds" -}}
{{- $total := 0.0 -}}
{{- $factors := dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001 "us" 0.000001 "µs" 0.000001 "ns" 0.000000001 -}}
{{- range regexFindAll "[0-9.]+(h|ms|us|µs|ns|m|s)" (toString .) -1 -}}
{{- $number := regexFind "^[0-9.]+" . -}}
{{- $total = addf $total (mulf (float64 $number) (get $factors (trimPrefix $number .))) -}}
{{- end -}}
{{- $total -}}
{{- end }}

{{/* Two replicas without leader election would both act, and timings the program refuses would crash-loop
its pods (client-go's rules, as controller_manager/leaderelection.py checks them at start): refuse to render. */}}
{{- define "karmada-rebalance.checkLeaderElection" -}}
{{- $election := .values.leaderElection -}}
{{- if and (not $election.enabled) (gt (int .values.replicaCount) 1) -}}
{{- fail (printf "%s: replicaCount %d needs leaderElection.enabled=true (replicas would act at the same time)" .name (int .values.replicaCount)) -}}
{{- end -}}
{{- if $election.enabled -}}
{{- $lease := float64 (include "karmada-rebalance.seconds" $election.leaseDuration) -}}
{{- $renew := float64 (include "karmada-rebalance.seconds" $election.renewDeadline) -}}
{{- $retry := float64 (include "karmada-rebalance.seconds" $election.retryPeriod) -}}
{{- if le $renew (mulf 1.2 $retry) -}}
{{- fail (printf "%s: leaderElection.renewDeadline (%s) must be greater than 1.2 * leaderElection.retryPeriod (%s)" .name $election.renewDeadline $election.retryPeriod) -}}
{{- end -}}
{{- if le (floor $lease) $renew -}}
{{- fail (printf "%s: leaderElection.leaseDuration (%s, stored in whole seconds) must be greater than leaderElection.renewDeadline (%s)" .name $election.leaseDuration $election.renewDeadline) -}}
{{- end -}}
{{- if le $retry 0.0 -}}
{{- fail (printf "%s: leaderElection.retryPeriod (%s) must be greater than zero" .name $election.retryPeriod) -}}
{{- end -}}
{{- end -}}
{{- end }}

{{- /*
--unschedulable-pod-selectors for a component (ctx: the component's context; list ctx selectors): the
declared kinds rendered into the ConfigMap <name>-pod-selectors, mounted at /etc/<name>; the checksum restarts
the pods when the list changes (the file is read at start). Sets the ctx keys the workload template reads.
*/}}
{{- define "karmada-rebalance.podSelectorsMount" -}}
{{- $ctx := index . 0 }}{{- $selectors := index . 1 }}
{{- $_ := set $ctx "podAnnotations" (dict "checksum/pod-selectors" (toYaml $selectors | sha256sum)) }}
{{- $_ := set $ctx "volumes" (list (dict "name" "pod-selectors" "configMap" (dict "name" (printf "%s-pod-selectors" $ctx.name)))) }}
{{- $_ := set $ctx "volumeMounts" (list (dict "name" "pod-selectors" "mountPath" (printf "/etc/%s" $ctx.name) "readOnly" true)) }}
{{- end }}

{{- define "karmada-rebalance.podSelectorsConfigMap" -}}
{{- $ctx := index . 0 }}{{- $selectors := index . 1 }}
---
# --unschedulable-pod-selectors: the custom workload kinds whose unschedulable Pods are counted (docs/compatibility.md).
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ $ctx.name }}-pod-selectors
  namespace: {{ $ctx.root.Release.Namespace }}
  labels:
    {{- include "karmada-rebalance.labels" $ctx | nindent 4 }}
data:
  pod-selectors.yaml: |
    {{- toYaml $selectors | nindent 4 }}
{{- end }}
