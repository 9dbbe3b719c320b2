{{- define "kaos.labels" -}}
app.kubernetes.io/name: kaos-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: kaos
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kaos.selectorLabels" -}}
app.kubernetes.io/name: kaos-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kaos.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default "kaos-operator" -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{- define "kaos.gatewayNamespace" -}}
{{- .Values.gateway.namespace | default .Release.Namespace -}}
{{- end -}}

{{/* An image tag, or the chart's appVersion when empty. */}}
{{- define "kaos.tag" -}}
{{- .tag | default .appVersion | toString -}}
{{- end -}}
