{{/* Names: every object is "<fullname>-<part>"; names stay within 63 characters (DNS labels). */}}

{{- define "loadgen.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "loadgen.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "loadgen.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object carries; selectors use only the stable ones plus a component. */}}
{{- define "loadgen.labels" -}}
helm.sh/chart: {{ include "loadgen.chart" . }}
{{ include "loadgen.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "loadgen.selectorLabels" -}}
app.kubernetes.io/name: {{ include "loadgen.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The image: the tag defaults to the chart's appVersion (loadgen's package version). */}}
{{- define "loadgen.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{- define "loadgen.workersName" -}}
{{- printf "%s-worker" (include "loadgen.fullname" .) }}
{{- end }}

{{- define "loadgen.serviceName" -}}
{{- printf "%s-workers" (include "loadgen.fullname" .) }}
{{- end }}

{{- define "loadgen.tokenSecretName" -}}
{{- .Values.token.existingSecret | default (printf "%s-token" (include "loadgen.fullname" .)) }}
{{- end }}

{{- define "loadgen.configMapName" -}}
{{- .Values.config.existingConfigMap | default (printf "%s-config" (include "loadgen.fullname" .)) }}
{{- end }}

{{- define "loadgen.claimName" -}}
{{- .Values.results.existingClaim | default (printf "%s-results" (include "loadgen.fullname" .)) }}
{{- end }}

{{/* Worker i's stable URL: its pod's DNS name under the headless Service, relative to the
namespace unless clusterDomain is set. */}}
{{- define "loadgen.workerUrls" -}}
{{- $pod := include "loadgen.workersName" . }}
{{- $service := include "loadgen.serviceName" . }}
{{- $domain := "" }}
{{- if .Values.clusterDomain }}
{{- $domain = printf ".%s.svc.%s" .Release.Namespace .Values.clusterDomain }}
{{- end }}
{{- $urls := list }}
{{- range $i := until (int .Values.workers.replicas) }}
{{- $urls = append $urls (printf "http://%s-%d.%s%s:%d" $pod $i $service $domain (int $.Values.workers.port)) }}
{{- end }}
{{- join "," $urls }}
{{- end }}

{{/* LOADGEN_TOKEN from the Secret: the token is never written into a pod's spec. */}}
{{- define "loadgen.tokenEnv" -}}
- name: LOADGEN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "loadgen.tokenSecretName" . }}
      key: {{ .Values.token.key }}
{{- end }}

{{- define "loadgen.metricsAnnotations" -}}
{{- if .Values.metrics.enabled }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.metrics.port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end }}

{{/* `loadgen worker` and `loadgen run` serve Prometheus' format on every address; a scrape must
send the token (loadgen refuses others off loopback). */}}
{{- define "loadgen.metricsArgs" -}}
- --metrics-port
- {{ .Values.metrics.port | quote }}
- --metrics-host
- 0.0.0.0
{{- end }}
