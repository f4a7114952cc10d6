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

{{/* The controller's ServiceAccount: the created one (default: the full name), else serviceAccount.name, else the
namespace's "default". */}}
{{- define "dovetail.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dovetail.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The annotations block of an object's metadata: additionalAnnotations, then the object's own (argument: dict
root, own), the object's own winning on the same key; nothing when both are empty. */}}
{{- define "dovetail.annotations" -}}
{{- $all := merge (dict) (deepCopy (default dict .own)) (deepCopy (default dict .root.Values.additionalAnnotations)) }}
{{- if $all }}
{{- printf "annotations:\n%s" (toYaml $all | indent 2) }}
{{- end }}
{{- end }}

{{- define "dovetail.containerName" -}}
{{- default "controller" .Values.controller.containerName }}
{{- end }}

{{/* The security context of the chart's containers: unprivileged, user and group 65532, read-only root, no
capabilities; controller.securityContext adds the AppArmor, SELinux and seccomp profiles that are set. */}}
{{- define "dovetail.containerSecurityContext" -}}
{{- $ctx := dict "privileged" false "allowPrivilegeEscalation" false "readOnlyRootFilesystem" true "runAsNonRoot" true "runAsUser" 65532 "runAsGroup" 65532 "capabilities" (dict "drop" (list "ALL")) }}
{{- range $key := list "appArmorProfile" "seLinuxOptions" "seccompProfile" }}
{{- with index (default dict $.Values.controller.securityContext) $key }}
{{- $_ := set $ctx $key . }}
{{- end }}
{{- end }}
{{- toYaml $ctx }}
{{- end }}

{{/* A labelSelector for the release's pods where a pod (anti-)affinity term or spread constraint has none
(argument: dict root, target); returns the target as YAML. */}}
{{- define "dovetail.withSelector" -}}
{{- $t := deepCopy .target }}
{{- if not (hasKey $t "labelSelector") }}
{{- $_ := set $t "labelSelector" (dict "matchLabels" (include "dovetail.selectorLabels" .root | fromYaml)) }}
{{- end }}
{{- toYaml $t }}
{{- end }}

{{/* affinity with a labelSelector added to each podAffinity / podAntiAffinity term that has none. */}}
{{- define "dovetail.affinity" -}}
{{- $affinity := deepCopy (default dict .Values.affinity) }}
{{- range $kind := list "podAffinity" "podAntiAffinity" }}
{{- with index $affinity $kind }}
{{- $pod := . }}
{{- if hasKey $pod "requiredDuringSchedulingIgnoredDuringExecution" }}
{{- $terms := list }}
{{- range $pod.requiredDuringSchedulingIgnoredDuringExecution }}
{{- $terms = append $terms (include "dovetail.withSelector" (dict "root" $ "target" .) | fromYaml) }}
{{- end }}
{{- $_ := set $pod "requiredDuringSchedulingIgnoredDuringExecution" $terms }}
{{- end }}
{{- if hasKey $pod "preferredDuringSchedulingIgnoredDuringExecution" }}
{{- $weighted := list }}
{{- range $pod.preferredDuringSchedulingIgnoredDuringExecution }}
{{- $w := deepCopy . }}
{{- $_ := set $w "podAffinityTerm" (include "dovetail.withSelector" (dict "root" $ "target" (default dict $w.podAffinityTerm)) | fromYaml) }}
{{- $weighted = append $weighted $w }}
{{- end }}
{{- $_ := set $pod "preferredDuringSchedulingIgnoredDuringExecution" $weighted }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $affinity }}
{{- end }}

{{/* A setting's value rendered as a template, as Karpenter's chart does (argument: dict root, value). */}}
{{- define "dovetail.tpl" -}}
{{- tpl (toString .value) .root }}
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

{{/* FEATURE_GATES from settings.featureGates: Name=true|false pairs in Karpenter's order, names with their first
letter raised. The gates Karpenter v1.15 added are named only when true: false is their default, so leaving them
out changes nothing, and a controller that does not know them yet still starts. */}}
{{- define "dovetail.featureGates" -}}
{{- $gates := .Values.settings.featureGates }}
{{- $always := list "reservedCapacity" "spotToSpotConsolidation" "nodeRepair" "nodeOverlay" "staticCapacity" "capacityBuffer" }}
{{- $pairs := list }}
{{- range $name := $always }}
{{- if not (kindIs "invalid" (index $gates $name)) }}
{{- $pairs = append $pairs (printf "%s%s=%v" (substr 0 1 $name | upper) (substr 1 -1 $name) (index $gates $name)) }}
{{- end }}
{{- end }}
{{- range $name, $on := $gates }}
{{- if and (not (has $name $always)) (eq (toString $on) "true") }}
{{- $pairs = append $pairs (printf "%s%s=true" (substr 0 1 $name | upper) (substr 1 -1 $name)) }}
{{- end }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{/* The DRA values as the controller receives them, as JSON {draNVIDIAGPU, draEFA, ignoreDRARequests}:
settings.enableDRA turns both DRA gates on and ignoreDRARequests off, and may not be combined with any of the three
set explicitly (even to the same value); either gate on turns ignoreDRARequests off; ignoreDRARequests null is
true. */}}
{{- define "dovetail.dra" -}}
{{- $s := .Values.settings }}
{{- $aws := default dict $s.awsFeatureGates }}
{{- $gates := list "draNVIDIAGPU" "draEFA" }}
{{- if eq (toString $s.enableDRA) "true" }}
{{- $conflicts := list }}
{{- range $gates }}
{{- if not (kindIs "invalid" (index $aws .)) }}
{{- $conflicts = append $conflicts (printf "settings.awsFeatureGates.%s" .) }}
{{- end }}
{{- end }}
{{- if not (kindIs "invalid" $s.ignoreDRARequests) }}
{{- $conflicts = append $conflicts "settings.ignoreDRARequests" }}
{{- end }}
{{- if $conflicts }}
{{- fail (printf "settings.enableDRA cannot be combined with %s: leave those unset (null) or turn enableDRA off" (join ", " $conflicts)) }}
{{- end }}
{{- end }}
{{- $out := dict }}
{{- $anyGate := false }}
{{- range $gates }}
{{- $on := or (eq (toString $s.enableDRA) "true") (eq (toString (index $aws .)) "true") }}
{{- $_ := set $out . $on }}
{{- $anyGate = or $anyGate $on }}
{{- end }}
{{- $ignore := true }}
{{- if not (kindIs "invalid" $s.ignoreDRARequests) }}
{{- $ignore = eq (toString $s.ignoreDRARequests) "true" }}
{{- end }}
{{- $_ := set $out "ignoreDRARequests" (and $ignore (not $anyGate)) }}
{{- toJson $out }}
{{- end }}

{{/* AWS_FEATURE_GATES from settings.awsFeatureGates, in Karpenter's order, the DRA gates resolved (dovetail.dra). */}}
{{- define "dovetail.awsFeatureGates" -}}
{{- $aws := default dict .Values.settings.awsFeatureGates }}
{{- $dra := include "dovetail.dra" . | fromJson }}
{{- printf "NodeClassCEL=%v,DRANVIDIAGPU=%v,DRAEFA=%v,RebootForRepair=%v" (eq (toString $aws.nodeClassCEL) "true") $dra.draNVIDIAGPU $dra.draEFA (eq (toString $aws.rebootForRepair) "true") }}
{{- end }}
