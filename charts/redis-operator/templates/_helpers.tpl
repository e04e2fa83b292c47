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
{{- range $ns := splitList "," (include "redis-operator.watchNamespace" .) -}}
{{- if trim $ns -}}{{- $out = append $out (trim $ns) -}}{{- end -}}
{{- end -}}
{{ toJson $out }}
{{- end -}}

{{/* The namespaces to watch: watchNamespace, else watch_namespace (the first charts' key). */}}
{{- define "redis-operator.watchNamespace" -}}
{{- .Values.redisOperator.watchNamespace | default .Values.redisOperator.watch_namespace | default "" -}}
{{- end -}}

{{/* The Secret of the webhook's certificate: cert-manager's with certmanager.enabled, else the
one the operator makes and renews. */}}
{{- define "redis-operator.webhookCertSecret" -}}
{{- if .Values.certmanager.enabled -}}
{{- .Values.certificate.secretName | default "webhook-server-cert" -}}
{{- else -}}
{{- include "redis-operator.name" . }}-webhook-cert
{{- end -}}
{{- end -}}

{{/* Fails on an item of redisOperator.extraArgs that the operator would refuse at start: a flag
it does not have (files/flags.txt lists its flags) or a flag without its value. */}}
{{- define "redis-operator.checkExtraArgs" -}}
{{- $known := dict -}}
{{- range $line := splitList "\n" (.Files.Get "files/flags.txt") -}}
{{- $f := splitList " " (trim $line) -}}
{{- if and (first $f) (not (hasPrefix "#" (first $f))) -}}
{{- $_ := set $known (first $f) (eq (last $f) "bool") -}}
{{- end -}}
{{- end -}}
{{- $names := keys $known | sortAlpha -}}
{{- $pending := "" -}}
{{- range $a := .Values.redisOperator.extraArgs -}}
{{- if $pending -}}
{{- $pending = "" -}}
{{- else if hasPrefix "-" $a -}}
{{- $body := trimPrefix "-" (trimPrefix "-" $a) -}}
{{- $name := regexReplaceAll "=.*$" $body "" -}}
{{- if not (hasKey $known $name) -}}
{{- fail (printf "redisOperator.extraArgs: the operator has no flag %q; its flags are --%s" $a (join ", --" $names)) -}}
{{- end -}}
{{- if and (not (contains "=" $body)) (not (get $known $name)) -}}
{{- $pending = $a -}}
{{- end -}}
{{- else -}}
{{- fail (printf "redisOperator.extraArgs: %q is no flag (the operator would stop reading its flags there): write --name=value" $a) -}}
{{- end -}}
{{- end -}}
{{- if $pending -}}
{{- fail (printf "redisOperator.extraArgs: %s needs a value: write %s=value" $pending $pending) -}}
{{- end -}}
{{- end -}}
