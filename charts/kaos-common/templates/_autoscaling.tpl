{{/*
The scale of a workload: a fixed .Values.replicas, or .Values.autoscaling (docs/charts.md,
"Autoscaling"), never both.

kaos-common.autoscaling.replicas: the Deployment's `replicas:` line; none with autoscaling.enabled,
so the HorizontalPodAutoscaler owns the count and a helm upgrade leaves the live one alone.
replicas unset (null): 1.
Usage: spec: {{- with include "kaos-common.autoscaling.replicas" . }} {{ . }} {{- end }}
*/}}
{{- define "kaos-common.autoscaling.replicas" -}}
{{- $fixed := not (kindIs "invalid" .Values.replicas) -}}
{{- if (dig "enabled" false (.Values.autoscaling | default dict)) -}}
{{- if $fixed -}}
{{- fail (printf "replicas (%v) and autoscaling.enabled exclude each other: replicas sets a fixed scale, autoscaling lets a HorizontalPodAutoscaler own the count; unset one of them" .Values.replicas) -}}
{{- end -}}
{{- else -}}
replicas: {{ ternary .Values.replicas 1 $fixed }}
{{- end -}}
{{- end -}}

{{/*
kaos-common.autoscaling.scaler: with autoscaling.enabled, what owns the Deployment's replica
count: a HorizontalPodAutoscaler (autoscaling/v2) on CPU utilisation (cpuUtilization, percent of
the CPU request) or on the pods' kaos_agent_requests_in_flight (requestsInFlight, served by the
custom metrics API, e.g. prometheus-adapter); or, for requestsInFlight with keda.enabled, a KEDA
ScaledObject whose Prometheus trigger sums that gauge over the Deployment's pods (KEDA makes
the HPA). Exactly one target.
Usage: include "kaos-common.autoscaling.scaler" $
*/}}
{{- define "kaos-common.autoscaling.scaler" -}}
{{- $scaling := .Values.autoscaling | default dict -}}
{{- if (dig "enabled" false $scaling) -}}
{{- $name := include "kaos-common.names.fullname" . -}}
{{- $min := int (dig "minReplicas" 1 $scaling) -}}
{{- $max := int (dig "maxReplicas" 0 $scaling) -}}
{{- $cpu := int (dig "cpuUtilization" 0 $scaling) -}}
{{- $inFlight := int (dig "requestsInFlight" 0 $scaling) -}}
{{- if lt $max $min -}}
{{- fail (printf "autoscaling: minReplicas (%d) must not exceed maxReplicas (%d)" $min $max) -}}
{{- end -}}
{{- if eq (gt $cpu 0) (gt $inFlight 0) -}}
{{- fail "autoscaling: set exactly one of cpuUtilization and requestsInFlight" -}}
{{- end -}}
{{- if and $inFlight (not (dig "enabled" true (.Values.metrics | default dict))) -}}
{{- fail "autoscaling.requestsInFlight scales on the runtime's kaos_agent_requests_in_flight, which metrics.enabled false turns off" -}}
{{- end -}}
{{- if and $inFlight (dig "keda" "enabled" false $scaling) -}}
{{- $prometheus := dig "keda" "prometheusURL" "" $scaling -}}
{{- if not $prometheus -}}
{{- fail "autoscaling.keda.enabled needs autoscaling.keda.prometheusURL (the Prometheus KEDA queries)" -}}
{{- end -}}
apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{ $name }}
  labels:
    {{- include "kaos-common.labels.standard" . | nindent 4 }}
spec:
  scaleTargetRef:
    name: {{ $name }}
  minReplicaCount: {{ $min }}
  maxReplicaCount: {{ $max }}
  triggers:
    - type: prometheus
      metricType: AverageValue
      metadata:
        serverAddress: {{ $prometheus | quote }}
        query: {{ printf "sum(kaos_agent_requests_in_flight{namespace=%q,pod=~%q})" .Release.Namespace (printf "%s-[a-z0-9]+-[a-z0-9]+" $name) | quote }}
        threshold: {{ $inFlight | quote }}
{{- else }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ $name }}
  labels:
    {{- include "kaos-common.labels.standard" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ $name }}
  minReplicas: {{ $min }}
  maxReplicas: {{ $max }}
  metrics:
    {{- if $cpu }}
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ $cpu }}
    {{- else }}
    - type: Pods
      pods:
        metric:
          name: kaos_agent_requests_in_flight
        target:
          type: AverageValue
          averageValue: {{ $inFlight | quote }}
    {{- end }}
{{- end }}
{{- end -}}
{{- end -}}
