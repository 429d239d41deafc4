{{/*
The host-cluster objects of one component: Deployment, metrics Service, PodDisruptionBudget,
ServiceMonitor. Context: see _helpers.tpl; "args" holds the component's own flags (a YAML list);
optional "podAnnotations", "volumes" and "volumeMounts" are the component's own additions.
*/}}

{{- define "karmada-rebalance.deployment" -}}
{{- $root := .root -}}
{{- $v := .values -}}
{{- include "karmada-rebalance.checkLeaderElection" . -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "karmada-rebalance.labels" . | nindent 4 }}
spec:
  replicas: {{ int $v.replicaCount }}
  selector:
    matchLabels:
      {{- include "karmada-rebalance.selectorLabels" . | nindent 6 }}
  {{- with $v.strategy }}
  strategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  template:
    metadata:
      labels:
        {{- include "karmada-rebalance.labels" . | nindent 8 }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with merge (dict) ($v.podAnnotations | default dict) (.podAnnotations | default dict) }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      {{- if $root.Values.serviceAccount.create }}
      serviceAccountName: {{ .name }}
      {{- end }}
      # The components authenticate to the Karmada API server with the mounted kubeconfig, never
      # with a host-cluster token (as Karmada's own components).
      automountServiceAccountToken: false
      {{- with $v.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with $root.Values.image.pullSecrets }}
      imagePullSecrets:
        {{- range . }}
        - name: {{ . }}
        {{- end }}
      {{- end }}
      {{- with $root.Values.podSecurityContext }}
      securityContext:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: {{ .name }}
          image: {{ include "karmada-rebalance.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command:
            - {{ .name }}{{/* each program in the image is named after its component */}}
          args:
            {{- include "karmada-rebalance.commonArgs" . | nindent 12 }}
            {{- .args | nindent 12 }}
            {{- with include "karmada-rebalance.extraArgs" . }}
            {{- . | trim | nindent 12 }}
            {{- end }}
          env:
            - name: POD_IP
              valueFrom:
                fieldRef:
                  fieldPath: status.podIP
          ports:
            - name: metrics
              containerPort: 8080
              protocol: TCP
            - name: health
              containerPort: {{ .healthPort }}
              protocol: TCP
          livenessProbe:
            httpGet:
              path: /healthz
              port: health
              scheme: HTTP
            {{- toYaml $root.Values.livenessProbe | nindent 12 }}
          readinessProbe:
            httpGet:
              path: /readyz
              port: health
              scheme: HTTP
            {{- toYaml $root.Values.readinessProbe | nindent 12 }}
          {{- with $v.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with $root.Values.containerSecurityContext }}
          securityContext:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          volumeMounts:
            - name: kubeconfig
              mountPath: /etc/kubeconfig
              subPath: kubeconfig
              readOnly: true
            - name: tmp
              mountPath: /tmp
            {{- with .volumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: kubeconfig
          secret:
            secretName: {{ $v.kubeconfig }}
        - name: tmp
          emptyDir:
            sizeLimit: {{ $root.Values.tmpSizeLimit }}
        {{- with .volumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with $v.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with $v.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}

{{- define "karmada-rebalance.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ .name }}-metrics
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "karmada-rebalance.labels" . | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "karmada-rebalance.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: 8080
      targetPort: metrics
      protocol: TCP
{{- end }}

{{- define "karmada-rebalance.pdb" -}}
{{- $pdb := .values.podDisruptionBudget -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "karmada-rebalance.labels" . | nindent 4 }}
spec:
  {{- if not (kindIs "invalid" $pdb.maxUnavailable) }}
  maxUnavailable: {{ $pdb.maxUnavailable }}
  {{- else }}
  minAvailable: {{ default 1 $pdb.minAvailable }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "karmada-rebalance.selectorLabels" . | nindent 6 }}
{{- end }}

{{- define "karmada-rebalance.serviceMonitor" -}}
{{- $sm := .root.Values.serviceMonitor -}}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ .name }}
  namespace: {{ default .root.Release.Namespace $sm.namespace }}
  labels:
    {{- include "karmada-rebalance.labels" . | nindent 4 }}
    {{- with $sm.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  namespaceSelector:
    matchNames:
      - {{ .root.Release.Namespace }}
  selector:
    matchLabels:
      {{- include "karmada-rebalance.selectorLabels" . | nindent 6 }}
      app.kubernetes.io/instance: {{ .root.Release.Name }}
  endpoints:
    - port: metrics
      path: /metrics
      interval: {{ $sm.interval }}
      scrapeTimeout: {{ $sm.scrapeTimeout }}
{{- end }}
