{{/*
The release's base name for its objects: fullnameOverride; else the release name when it
contains the chart name (the release "kaos" gives "kaos"); else <release>-kaos. Cut to 45
characters so that the longest object name, <fullname>-operator-settings, fits in 63.
*/}}
{{- define "kaos.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 45 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 45 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 45 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The operator's Deployment, ClusterRole and bindings: <fullname>-operator (kaos-operator for the release kaos). */}}
{{- define "kaos.operatorName" -}}
{{- printf "%s-operator" (include "kaos.fullname" .) -}}
{{- end -}}

{{/* The settings ConfigMap the operator loads with envFrom. */}}
{{- define "kaos.settingsName" -}}
{{- printf "%s-settings" (include "kaos.operatorName" .) -}}
{{- end -}}

{{/* The ClusterRole (and its binding) that only reads CRDs and namespaces. */}}
{{- define "kaos.clusterReaderName" -}}
{{- printf "%s-cluster" (include "kaos.operatorName" .) -}}
{{- end -}}

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
{{- .Values.serviceAccount.name | default (include "kaos.operatorName" .) -}}
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

{{/* The console's Deployment, Service, ServiceAccount, ClusterRole and bindings: <fullname>-console. */}}
{{- define "kaos.consoleName" -}}
{{- printf "%s-console" (include "kaos.fullname" .) -}}
{{- end -}}

{{- define "kaos.consoleLabels" -}}
app.kubernetes.io/name: kaos-console
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: console
app.kubernetes.io/part-of: kaos
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kaos.consoleSelectorLabels" -}}
app.kubernetes.io/name: kaos-console
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kaos.consoleServiceAccountName" -}}
{{- if .Values.console.serviceAccount.create -}}
{{- .Values.console.serviceAccount.name | default (include "kaos.consoleName" .) -}}
{{- else -}}
{{- .Values.console.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}
