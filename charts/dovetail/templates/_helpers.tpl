{{/* Object names: the release name, plus the chart name unless the release name already holds it. */}}
{{- define "dovetail.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "dovetail.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "dovetail.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "dovetail.labels" -}}
helm.sh/chart: {{ include "dovetail.chart" . }}
{{ include "dovetail.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels that select the controller pods. */}}
{{- define "dovetail.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dovetail.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "dovetail.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dovetail.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository@digest, else repository:tag (tag defaults to the chart's appVersion). Argument: dict image, root. */}}
{{- define "dovetail.image" -}}
{{- if .image.digest }}
{{- printf "%s@%s" .image.repository .image.digest }}
{{- else }}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) }}
{{- end }}
{{- end }}

{{- define "dovetail.controller.image" -}}
{{- include "dovetail.image" (dict "image" .Values.controller.image "root" .) }}
{{- end }}

{{/* The teardown image: teardown.image where set, else the controller's. */}}
{{- define "dovetail.teardown.image" -}}
{{- $image := dict "repository" (default .Values.controller.image.repository .Values.teardown.image.repository) "tag" (default .Values.controller.image.tag .Values.teardown.image.tag) "digest" "" }}
{{- if .Values.teardown.image.repository }}
{{- $_ := set $image "digest" .Values.teardown.image.digest }}
{{- else }}
{{- $_ := set $image "digest" (default .Values.controller.image.digest .Values.teardown.image.digest) }}
{{- end }}
{{- include "dovetail.image" (dict "image" $image "root" .) }}
{{- end }}

{{/* FEATURE_GATES from settings.featureGates: Name=true|false pairs, names with their first letter raised. */}}
{{- define "dovetail.featureGates" -}}
{{- $gates := list }}
{{- range $name, $on := .Values.settings.featureGates }}
{{- $gates = append $gates (printf "%s%s=%v" (substr 0 1 $name | upper) (substr 1 -1 $name) $on) }}
{{- end }}
{{- join "," $gates }}
{{- end }}
