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

{{/*
The labels of one component's objects. Components: operator (the operator, its RBAC, settings
and Gateway), console, redis (agents' memory, role "memory") and memory-postgres (long-term
memory, role "memory"). The Redis and the PostgreSQL run images of their own, not the chart's
appVersion, so they carry no version label, nor the chart's version: their pod templates stay the
same across platform upgrades, so that an upgrade does not replace their pods and with them (an
emptyDir) every agent's sessions or memories.
Usage: include "kaos.labels" (dict "root" $ "component" "console")
*/}}
{{- define "kaos.labels" -}}
{{- $role := get (dict "operator" "operator" "console" "console" "redis" "memory" "memory-postgres" "memory") .component | required (printf "kaos.labels: unknown component %q" .component) -}}
{{ include "kaos.selectorLabels" . }}
app.kubernetes.io/component: {{ $role }}
app.kubernetes.io/part-of: kaos
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- if not (has .component (list "redis" "memory-postgres")) }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end }}
{{- end -}}

{{/* The labels that select one component's pods. Usage: as kaos.labels. */}}
{{- define "kaos.selectorLabels" -}}
app.kubernetes.io/name: kaos-{{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{/*
An image reference: repository:tag, repository@digest when the tag is "@sha256:...", or the
repository alone; defaultTag stands in for an empty tag. The same rule as kaos-common's
kaos-common.images.image for the workload charts (this chart depends on no chart, so that it
installs without `helm dependency build`).
Usage: include "kaos.image" (dict "image" .Values.console.image "defaultTag" .Chart.AppVersion)
*/}}
{{- define "kaos.image" -}}
{{- $tag := toString (.image.tag | default .defaultTag | default "") -}}
{{- if hasPrefix "@" $tag -}}{{ printf "%s%s" .image.repository $tag }}
{{- else if $tag -}}{{ printf "%s:%s" .image.repository $tag }}
{{- else -}}{{ .image.repository }}
{{- end -}}
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

{{- define "kaos.consoleServiceAccountName" -}}
{{- if .Values.console.serviceAccount.create -}}
{{- .Values.console.serviceAccount.name | default (include "kaos.consoleName" .) -}}
{{- else -}}
{{- .Values.console.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}
