{{/*
Helpers shared by the redis, redis-cluster, redis-replication and redis-sentinel charts, which
depend on this library chart. Every helper takes the calling chart's context explicitly (.root or
the values), so .Chart, .Release and .Values are the kind chart's, never this chart's.
*/}}

{{/* The custom resource's name: <kind>.name, else the release name. Call with (dict "root" $ "spec" .Values.<kind>). */}}
{{- define "rk.name" -}}
{{- .spec.name | default .root.Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels of everything the charts create, as the replaced charts set them: name and
instance are the resource's name. Call with (dict "root" $ "spec" .Values.<kind>). */}}
{{- define "rk.labels" -}}
app.kubernetes.io/name: {{ include "rk.name" . }}
app.kubernetes.io/instance: {{ include "rk.name" . }}
app.kubernetes.io/component: middleware
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* metadata of the custom resource: the chart's labels, then labels and annotations from the values. */}}
{{- define "rk.crMeta" -}}
name: {{ include "rk.name" . }}
namespace: {{ .root.Release.Namespace }}
labels:
  {{- include "rk.labels" . | nindent 2 }}
  {{- with .root.Values.labels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- $ann := deepCopy (.root.Values.annotations | default dict) }}
{{- if .spec.recreateStatefulSetOnUpdateInvalid }}
{{- $_ := set $ann "redis.opstreelabs.in/recreate-statefulset" "true" }}
{{- end }}
{{- with $ann }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* image:tag */}}
{{- define "rk.image" -}}
{{- if .tag -}}{{ printf "%s:%s" .image .tag }}{{- else -}}{{ .image }}{{- end -}}
{{- end -}}

{{/* imagePullSecrets: a list, or an empty map (the cluster chart's old default) for none. */}}
{{- define "rk.pullSecrets" -}}
{{- if kindIs "slice" . }}{{ with . }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}{{ end }}
{{- end -}}

{{/* spec.kubernetesConfig from the chart's main section (redisStandalone, redisCluster, ...). */}}
{{- define "rk.kubernetesConfig" -}}
image: {{ include "rk.image" . | quote }}
imagePullPolicy: {{ .imagePullPolicy }}
{{- include "rk.pullSecrets" .imagePullSecrets }}
{{- if .redisSecret.secretName }}
redisSecret:
  name: {{ .redisSecret.secretName }}
  key: {{ .redisSecret.secretKey | default "password" }}
{{- end }}
{{- with .resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .ignoreAnnotations }}
ignoreAnnotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if .minReadySeconds }}
minReadySeconds: {{ .minReadySeconds }}
{{- end }}
{{- with .persistentVolumeClaimRetentionPolicy }}
persistentVolumeClaimRetentionPolicy:
  {{- toYaml . | nindent 2 }}
{{- end }}
service:
  serviceType: {{ .serviceType }}
{{- end -}}

{{/* spec.redisConfig: the external config ConfigMap, maxmemory and dynamic config. Call with (dict "root" $ "spec" .Values.<kind>). */}}
{{- define "rk.redisConfig" -}}
{{- if or .root.Values.externalConfig.enabled .spec.maxMemoryPercentOfLimit .spec.dynamicConfig }}
redisConfig:
  {{- if .root.Values.externalConfig.enabled }}
  additionalRedisConfig: {{ include "rk.name" . }}-ext-config
  {{- end }}
  {{- if .spec.maxMemoryPercentOfLimit }}
  maxMemoryPercentOfLimit: {{ .spec.maxMemoryPercentOfLimit }}
  {{- end }}
  {{- with .spec.dynamicConfig }}
  dynamicConfig:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* spec.redisExporter */}}
{{- define "rk.exporter" -}}
redisExporter:
  enabled: {{ .enabled }}
  image: {{ include "rk.image" . | quote }}
  imagePullPolicy: {{ .imagePullPolicy }}
  {{- with .resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .env }}
  env:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}

{{/* spec.initContainer, when enabled */}}
{{- define "rk.initContainer" -}}
{{- if .enabled }}
initContainer:
  enabled: true
  image: {{ .image | quote }}
  imagePullPolicy: {{ .imagePullPolicy }}
  {{- range $k := list "resources" "env" "command" "args" }}
  {{- with index $ $k }}
  {{ $k }}:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* The pod-level fields every kind shares: podSecurityContext, priorityClassName, TLS, ACL,
sidecars, serviceAccountName, env. Call with the chart's root values. */}}
{{- define "rk.podCommon" -}}
{{- with .podSecurityContext }}
podSecurityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- if and .TLS .TLS.secret.secretName }}
TLS:
  ca: {{ .TLS.ca }}
  cert: {{ .TLS.cert }}
  key: {{ .TLS.key }}
  secret:
    secretName: {{ .TLS.secret.secretName }}
{{- end }}
{{- $aclSecret := dig "secret" "secretName" "" (.acl | default dict) }}
{{- $aclPVC := dig "persistentVolumeClaim" "" (.acl | default dict) | default "" }}
{{- if and $aclSecret $aclPVC }}
{{- fail "acl: set acl.secret.secretName or acl.persistentVolumeClaim, not both: the ACL users come from one of them" }}
{{- end }}
{{- if or $aclSecret $aclPVC }}
acl:
  {{- if $aclSecret }}
  secret:
    secretName: {{ $aclSecret }}
  {{- else }}
  persistentVolumeClaim: {{ $aclPVC }}
  {{- end }}
{{- end }}
{{- /* The first charts took one sidecar as an object, whose empty name (their default) means none. */}}
{{- $sidecars := .sidecars }}
{{- if kindIs "map" $sidecars }}
{{- $one := omit $sidecars "env" }}
{{- with $sidecars.env }}{{ $_ := set $one "env" . }}{{ end }}
{{- $sidecars = ternary (list $one) list (not (empty $sidecars.name)) }}
{{- end }}
{{- with $sidecars }}
sidecars:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .serviceAccountName }}
serviceAccountName: {{ . }}
{{- end }}
{{- with .env }}
env:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- include "rk.initContainer" .initContainer }}
{{- with .redisExporter }}
{{ include "rk.exporter" . }}
{{- end }}
{{- end -}}

{{/* The ConfigMap of externalConfig.data, which redisConfig.additionalRedisConfig names. */}}
{{- define "rk.externalConfig" -}}
{{- if .root.Values.externalConfig.enabled }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "rk.name" . }}-ext-config
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "rk.labels" . | nindent 4 }}
data:
  {{ .key }}: |
    {{- .root.Values.externalConfig.data | nindent 4 }}
{{- end }}
{{- end -}}

{{/* externalService: a Service of externalService.serviceType named <.service>-external-service
in front of the pods of .app with the role .role. */}}
{{- define "rk.externalService" -}}
{{- $es := .root.Values.externalService }}
{{- if $es.enabled }}
apiVersion: v1
kind: Service
metadata:
  name: {{ .service }}-external-service
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "rk.labels" . | nindent 4 }}
  {{- with $es.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: {{ $es.serviceType }}
  selector:
    app: {{ .app }}
    redis_setup_type: {{ .setupType }}
    role: {{ .role }}
  ports:
    - name: {{ .portName }}
      port: {{ $es.port }}
      targetPort: {{ .targetPort }}
      protocol: TCP
      {{- if and (eq $es.serviceType "NodePort") $es.nodePort }}
      nodePort: {{ $es.nodePort }}
      {{- end }}
{{- end }}
{{- end -}}

{{/* spec.pdb from the values' pdb, which takes one bound: a PodDisruptionBudget cannot have both.
Call with (dict "pdb" ... "key" "<path of pdb in the values>"). */}}
{{- define "rk.pdb" -}}
{{- if .pdb.enabled }}
{{- $min := .pdb.minAvailable }}
{{- $max := .pdb.maxUnavailable }}
{{- if and (not (kindIs "invalid" $min)) (not (kindIs "invalid" $max)) }}
{{- fail (printf "%s: set minAvailable or maxUnavailable, not both (a PodDisruptionBudget takes one bound): set the other to null" .key) }}
{{- end }}
pdb:
  enabled: true
  {{- if not (kindIs "invalid" $min) }}
  minAvailable: {{ $min }}
  {{- else if not (kindIs "invalid" $max) }}
  maxUnavailable: {{ $max }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* One ServiceMonitor per metrics Service the operator makes (<statefulset>-metrics). Call with (dict "root" $ "spec" .Values.<kind> "workloads" (list ...)). */}}
{{- define "rk.serviceMonitors" -}}
{{- $root := .root }}
{{- if and $root.Values.serviceMonitor.enabled $root.Values.redisExporter.enabled }}
{{- range $w := .workloads }}
---
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ $w }}
  namespace: {{ $root.Values.serviceMonitor.namespace | default $root.Release.Namespace }}
  labels:
    {{- include "rk.labels" (dict "root" $root "spec" $.spec) | nindent 4 }}
    {{- with $root.Values.serviceMonitor.extraLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      app: {{ $w }}
      app.kubernetes.io/component: metrics
  namespaceSelector:
    matchNames: [{{ $root.Release.Namespace }}]
  endpoints:
    - port: redis-exporter
      interval: {{ $root.Values.serviceMonitor.interval }}
      scrapeTimeout: {{ $root.Values.serviceMonitor.scrapeTimeout }}
{{- end }}
{{- else if $root.Values.serviceMonitor.enabled }}
{{- fail "serviceMonitor.enabled needs redisExporter.enabled: the ServiceMonitor scrapes the exporter sidecars" }}
{{- end }}
{{- end -}}
