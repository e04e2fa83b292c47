{{/* The operator's name: Deployment, ServiceAccount, RBAC and Service names derive from it. */}}
{{- define "redis-operator.name" -}}
{{- .Values.redisOperator.name | default "redis-operator" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "redis-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "redis-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "redis-operator.labels" -}}
{{ include "redis-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "redis-operator.image" -}}
{{- printf "%s:%s" .Values.redisOperator.imageName (.Values.redisOperator.imageTag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* The rules of one kind (ClusterRole or Role) in files/role.yaml, which make manifests
copies from config/rbac/role.yaml (generated from the controllers' RBAC markers). */}}
{{- define "redis-operator.rules" -}}
{{- $kind := .kind -}}
{{- range $doc := splitList "\n---" (.root.Files.Get "files/role.yaml") -}}
{{- $obj := fromYaml $doc -}}
{{- if eq ($obj.kind | default "") $kind -}}
{{ toYaml $obj.rules }}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The ClusterRole's rules split by scope: "cluster" keeps the rules on cluster-scoped
resources (CRDs, StorageClasses, token and access reviews), "namespace" the others, for the
Roles of rbac.scope=namespace. */}}
{{- define "redis-operator.scopedRules" -}}
{{- $clusterGroups := list "apiextensions.k8s.io" "storage.k8s.io" "authentication.k8s.io" "authorization.k8s.io" -}}
{{- $out := list -}}
{{- range $doc := splitList "\n---" (.root.Files.Get "files/role.yaml") -}}
{{- $obj := fromYaml $doc -}}
{{- if eq ($obj.kind | default "") "ClusterRole" -}}
{{- range $rule := $obj.rules -}}
{{- $clusterScoped := false -}}
{{- range $g := $rule.apiGroups -}}
{{- if has $g $clusterGroups -}}{{- $clusterScoped = true -}}{{- end -}}
{{- end -}}
{{- if eq $clusterScoped (eq $.scope "cluster") -}}{{- $out = append $out $rule -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{ toYaml $out }}
{{- end -}}

{{/* The namespaces the operator watches, as a list (empty: every namespace). */}}
{{- define "redis-operator.watchedNamespaces" -}}
{{- $out := list -}}
{{- range $ns := splitList "," .Values.redisOperator.watchNamespace -}}
{{- if trim $ns -}}{{- $out = append $out (trim $ns) -}}{{- end -}}
{{- end -}}
{{ toJson $out }}
{{- end -}}
