{{/*
Labels that select the workload's pods: the chart, the release and the resource
(kaos.tools/<kind>: <name>, which the operator reads back).
Usage: include "kaos-common.labels.matchLabels" $
*/}}
{{- define "kaos-common.labels.matchLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
kaos.tools/{{ .Chart.Name }}: {{ include "kaos-common.names.name" . }}
{{- end -}}

{{/*
Labels of every object: the selector labels and the standard app.kubernetes.io ones.
Usage: include "kaos-common.labels.standard" $
*/}}
{{- define "kaos-common.labels.standard" -}}
{{ include "kaos-common.labels.matchLabels" . }}
app.kubernetes.io/component: {{ .Chart.Name }}
app.kubernetes.io/part-of: kaos
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The label key an agent's pods carry to be let into a workload of that kind and name by its
NetworkPolicy: kaos.tools/peer-<name> (an agent), kaos.tools/uses-modelapi-<name>,
kaos.tools/uses-mcp-<name>. The name must be within its kind's limit (kaos-common.names.kind).
Usage: include "kaos-common.labels.access" (dict "kind" "modelapi" "name" "llm")
*/}}
{{- define "kaos-common.labels.access" -}}
{{- include "kaos-common.names.checkLength" (dict "kind" .kind "name" .name "field" (printf "%s name" .kind)) -}}
{{- printf "kaos.tools/%s-%s" (include "kaos-common.names.kind" .kind | fromJson).access .name -}}
{{- end -}}
