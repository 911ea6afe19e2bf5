{{/*
The prefix of every object's name, as config/default's namePrefix.
*/}}
{{- define "webhook-operator.prefix" -}}webhook-operator-{{- end }}

{{/*
The namespace of every namespaced object.
*/}}
{{- define "webhook-operator.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride }}
{{- end }}

{{/*
The labels the chart gives every object; webhook-operator.checkLabels keeps the other label
values from naming them.
*/}}
{{- define "webhook-operator.chartLabels" -}}
app.kubernetes.io/name: webhook-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
The labels of an object, as one map: the chart's, then the object's own (.labels), then
commonLabels, each key once, the first to name it winning.
*/}}
{{- define "webhook-operator.labels" -}}
{{- toYaml (merge (dict) (include "webhook-operator.chartLabels" .root | fromYaml) (.labels | default dict) (.root.Values.commonLabels | default dict)) }}
{{- end }}

{{/*
The labels that select the manager's pods.
*/}}
{{- define "webhook-operator.selectorLabels" -}}
app.kubernetes.io/name: webhook-operator
control-plane: controller-manager
{{- end }}

{{/*
metadata.labels and metadata.annotations of an object; its own labels in .labels (a dict).
*/}}
{{- define "webhook-operator.metadata" -}}
labels:
  {{- include "webhook-operator.labels" . | nindent 2 }}
{{- with merge (dict) (.annotations | default dict) .root.Values.commonAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
The manager's ServiceAccount: the chart's own unless serviceAccount.name names another.
*/}}
{{- define "webhook-operator.serviceAccountName" -}}
{{- if and (not .Values.serviceAccount.create) (not .Values.serviceAccount.name) }}
{{- fail "serviceAccount.create=false needs serviceAccount.name: the ServiceAccount the manager runs as, which must exist in the release's namespace" }}
{{- end }}
{{- .Values.serviceAccount.name | default (printf "%scontroller-manager" (include "webhook-operator.prefix" .)) }}
{{- end }}

{{/*
The manager's image reference: by digest when one is set, else by tag (appVersion by default),
from global.imageRegistry when it is set.
*/}}
{{- define "webhook-operator.image" -}}
{{- $ref := printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- if .Values.image.digest -}}
{{- $ref = printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- end -}}
{{- include "webhook-operator.fromRegistry" (dict "root" . "ref" $ref) -}}
{{- end }}

{{/*
The image a Welcome runs unless it sets spec.image: operands.welcomeImage, or the release's
welcome-web, from global.imageRegistry when it is set.
*/}}
{{- define "webhook-operator.welcomeImage" -}}
{{- include "webhook-operator.fromRegistry" (dict "root" . "ref" (.Values.operands.welcomeImage | default (printf "ghcr.io/seedlabs/welcome-web:%s" .Chart.AppVersion))) -}}
{{- end }}

{{/*
An image reference (ref) pulled from global.imageRegistry, a mirror that keeps the repositories'
paths, when it is set: its registry host, if it names one, gives way to the mirror, and a Docker
Hub official image gains its library/ (ghcr.io/seedlabs/welcome-web:v1 becomes
<mirror>/seedlabs/welcome-web:v1, memcached:1.6 <mirror>/library/memcached:1.6).
*/}}
{{- define "webhook-operator.fromRegistry" -}}
{{- $registry := trimSuffix "/" (default "" (.root.Values.global).imageRegistry) -}}
{{- if $registry -}}
{{- $parts := splitList "/" .ref -}}
{{- $first := first $parts -}}
{{- if eq (len $parts) 1 -}}
{{- $parts = prepend $parts "library" -}}
{{- else if or (contains "." $first) (contains ":" $first) (eq $first "localhost") -}}
{{- $parts = rest $parts -}}
{{- end -}}
{{- printf "%s/%s" $registry (join "/" $parts) -}}
{{- else -}}
{{- .ref -}}
{{- end -}}
{{- end }}

{{/*
The Secrets of the webhook and metrics serving certificates, per certificate mode.
*/}}
{{- define "webhook-operator.webhookCertSecret" -}}
{{- if eq .Values.certificates.mode "self-signed" -}}
{{ include "webhook-operator.prefix" . }}webhook-server-cert
{{- else -}}
webhook-server-cert
{{- end }}
{{- end }}

{{/*
An object of config/ copied into files/ by make manifests (.path), as the release renders it:
the name prefixed (when .prefix), in the release's namespace when it has one (config/ names it
"system"), with the chart's labels and the common annotations (and .annotations) beside its own.
*/}}
{{- define "webhook-operator.fromFile" -}}
{{- $root := .root -}}
{{- $obj := .object -}}
{{- if not $obj }}{{ $obj = $root.Files.Get .path | fromYaml }}{{ end -}}
{{- $meta := $obj.metadata -}}
{{- if .prefix }}
{{- $_ := set $meta "name" (printf "%s%s" (include "webhook-operator.prefix" $root) $meta.name) }}
{{- end }}
{{- if $meta.namespace }}
{{- $_ := set $meta "namespace" (include "webhook-operator.namespace" $root) }}
{{- end }}
{{- $_ := set $meta "labels" (include "webhook-operator.labels" (dict "root" $root "labels" $meta.labels) | fromYaml) }}
{{- with merge (dict) ($root.Values.commonAnnotations | default dict) ($meta.annotations | default dict) (.annotations | default dict) }}
{{- $_ := set $meta "annotations" . }}
{{- end }}
{{- toYaml $obj }}
{{- end }}

{{/*
checkLabels fails the release when commonLabels or podLabels name a label the chart sets itself,
listing each: the chart's would win, and a pod label that changed the selector's would leave the
Services selecting nothing.
*/}}
{{- define "webhook-operator.checkLabels" -}}
{{- $reserved := merge (include "webhook-operator.chartLabels" . | fromYaml) (include "webhook-operator.selectorLabels" . | fromYaml) -}}
{{- $bad := list -}}
{{- range $value := list "commonLabels" "podLabels" }}
{{- range $key, $_ := index $.Values $value }}
{{- if hasKey $reserved $key }}{{ $bad = append $bad (printf "%s.%s" $value $key) }}{{ end }}
{{- end }}
{{- end }}
{{- with $bad }}
{{- fail (printf "%s: the chart sets these labels itself" (join ", " .)) }}
{{- end }}
{{- end }}

{{/*
conversionCRDs lists, comma-separated, the CRDs whose conversion webhook the manager serves: those
of files/crd-conversion (config/crd/patches), when the chart installs the CRDs.
*/}}
{{- define "webhook-operator.conversionCRDs" -}}
{{- $names := list -}}
{{- if .Values.crds.install }}
{{- range $path, $_ := .Files.Glob "files/crd-conversion/*.yaml" }}
{{- $names = append $names ($.Files.Get $path | fromYaml).metadata.name }}
{{- end }}
{{- end }}
{{- sortAlpha $names | join "," }}
{{- end }}
