{{/* The chart name (nameOverride). */}}
{{- define "kangal-patch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object name: fullnameOverride, else the release name (with the chart name unless it contains it). */}}
{{- define "kangal-patch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The controller's name: ServiceAccount, Deployment, ClusterRole and Roles (kangal-patch-controller for the release kangal-patch, as kustomize names them). */}}
{{- define "kangal-patch.controller" -}}
{{- printf "%s-controller" (include "kangal-patch.fullname" .) }}
{{- end }}

{{- /* The ServiceAccount health checks read as (impersonated by the controller). */ -}}
{{- define "kangal-patch.healthIdentity" -}}
{{- printf "%s-health" (include "kangal-patch.fullname" .) }}
{{- end }}

{{- define "kangal-patch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kangal-patch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end }}

{{/* Every object's labels: the chart's own, then commonLabels (never over the chart's). */}}
{{- define "kangal-patch.labels" -}}
{{- include "kangal-patch.labelsWith" (list . dict) }}
{{- end }}

{{/* The labels with more of them: (list $ $extra); $extra wins over the chart's, which win over commonLabels. */}}
{{- define "kangal-patch.labelsWith" -}}
{{- $ctx := index . 0 }}
{{- $std := dict
  "helm.sh/chart" (printf "%s-%s" $ctx.Chart.Name $ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-")
  "app.kubernetes.io/name" (include "kangal-patch.name" $ctx)
  "app.kubernetes.io/instance" $ctx.Release.Name
  "app.kubernetes.io/version" ($ctx.Values.image.tag | default $ctx.Chart.AppVersion | trunc 63)
  "app.kubernetes.io/managed-by" $ctx.Release.Service }}
{{- toYaml (merge (dict) (index . 1) $std $ctx.Values.commonLabels) }}
{{- end }}

{{/* `  annotations:` for every object's metadata (indented, with its newline), when commonAnnotations has any. */}}
{{- define "kangal-patch.annotations" -}}
{{- with .Values.commonAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
{{- end }}
{{- end }}

{{- define "kangal-patch.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* The Secret holding the tokens: existingSecret, else the one the chart creates. */}}
{{- define "kangal-patch.gitSecret" -}}
{{- .Values.gitCredentials.existingSecret | default (printf "%s-git" (include "kangal-patch.fullname" .)) }}
{{- end }}

{{/* The keys of that Secret: those existingSecret holds, else the values given. */}}
{{- define "kangal-patch.gitSecretKeys" -}}
{{- $c := .Values.gitCredentials }}
{{- $keys := list }}
{{- if $c.existingSecret }}
{{- $keys = $c.existingSecretKeys }}
{{- else }}
{{- if $c.token }}{{ $keys = append $keys "token" }}{{ end }}
{{- if $c.writeToken }}{{ $keys = append $keys "write-token" }}{{ end }}
{{- if $c.webhookSecret }}{{ $keys = append $keys "webhook-secret" }}{{ end }}
{{- if $c.releasesToken }}{{ $keys = append $keys "releases-token" }}{{ end }}
{{- end }}
{{- toJson $keys }}
{{- end }}

{{- define "kangal-patch.notifySecret" -}}
{{- .Values.notify.existingSecret | default (printf "%s-notify" (include "kangal-patch.fullname" .)) }}
{{- end }}

{{- define "kangal-patch.notifyEnabled" -}}
{{- if or .Values.notify.existingSecret .Values.notify.config }}true{{ end }}
{{- end }}
