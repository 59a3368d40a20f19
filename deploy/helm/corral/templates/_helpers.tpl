{{/* The release's name, for every object (63 characters at most). */}}
{{- define "corral.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The headless service that gives each peer a stable DNS name. */}}
{{- define "corral.peers" -}}
{{- printf "%s-peers" (include "corral.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "corral.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "corral.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* A quorum of the peers: what the PodDisruptionBudget keeps. */}}
{{- define "corral.quorum" -}}
{{- add1 (div (int .Values.replicas) 2) -}}
{{- end -}}

{{/* The probes: HTTP GET, or `corral health` when the API requires client certificates. */}}
{{- define "corral.probe" -}}
{{- if and .root.Values.tls.enabled .root.Values.tls.verifyIncoming }}
exec:
  command: ["/usr/local/bin/corral", "health", "--config", "/etc/corral/corral.conf"{{ if eq .path "/readyz" }}, "--ready"{{ end }}]
{{- else }}
httpGet:
  path: {{ .path }}
  port: api
  scheme: {{ if .root.Values.tls.enabled }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}
{{- end -}}
