{{/*
Prometheus scraping of a workload that serves /metrics on its port named http.

kaos-common.metrics.podAnnotations: the pod annotations, the prometheus.io/* ones (when
.Values.metrics.annotations, and .Values.metrics.enabled is not false) merged under the user's podAnnotations (the user's win).
Usage: include "kaos-common.metrics.podAnnotations" (dict "context" $ "port" .Values.service.port)
*/}}
{{- define "kaos-common.metrics.podAnnotations" -}}
{{- $ctx := .context -}}
{{- $annotations := dict -}}
{{- if and (ne $ctx.Values.metrics.enabled false) $ctx.Values.metrics.annotations -}}
{{- $annotations = dict "prometheus.io/scrape" "true" "prometheus.io/port" (toString .port) "prometheus.io/path" "/metrics" -}}
{{- end -}}
{{- $annotations = merge (deepCopy ($ctx.Values.podAnnotations | default dict)) $annotations -}}
{{- with $annotations }}
{{- toYaml . }}
{{- end }}
{{- end -}}

{{/*
kaos-common.metrics.serviceMonitor: a Prometheus Operator ServiceMonitor for the workload's
Service, only when .Values.metrics.serviceMonitor.enabled (and .Values.metrics.enabled is not
false) AND the cluster serves
monitoring.coreos.com/v1/ServiceMonitor (helm template without --api-versions renders none).
Usage: include "kaos-common.metrics.serviceMonitor" $
*/}}
{{- define "kaos-common.metrics.serviceMonitor" -}}
{{- $monitor := .Values.metrics.serviceMonitor -}}
{{- if and (ne .Values.metrics.enabled false) $monitor.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor") -}}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ include "kaos-common.names.fullname" . }}
  labels:
    {{- include "kaos-common.labels.standard" . | nindent 4 }}
    {{- with $monitor.labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  selector:
    matchLabels:
      {{- include "kaos-common.labels.matchLabels" . | nindent 6 }}
  endpoints:
    - port: http
      path: /metrics
      {{- with $monitor.interval }}
      interval: {{ . }}
      {{- end }}
{{- end -}}
{{- end -}}
