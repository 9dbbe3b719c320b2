{{/* Name of the MCPServer: .Values.name, or the release name when empty. */}}
{{- define "mcpserver.serverName" -}}
{{- $name := .Values.name | default .Release.Name -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- fail (printf "name: %q is not a DNS-1123 label (lower case letters, digits and '-')" $name) -}}
{{- end -}}
{{- if gt (len $name) 53 -}}
{{- fail (printf "name: %q is longer than 53 characters (mcpserver-<name> must fit in 63)" $name) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* Objects are called mcpserver-<name>. */}}
{{- define "mcpserver.fullname" -}}
{{- printf "mcpserver-%s" (include "mcpserver.serverName" .) -}}
{{- end -}}

{{- define "mcpserver.selectorLabels" -}}
app.kubernetes.io/name: mcpserver
app.kubernetes.io/instance: {{ include "mcpserver.fullname" . }}
kaos.tools/mcpserver: {{ include "mcpserver.serverName" . }}
{{- end -}}

{{- define "mcpserver.labels" -}}
{{ include "mcpserver.selectorLabels" . }}
app.kubernetes.io/component: mcpserver
app.kubernetes.io/part-of: kaos
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* repository:tag, repository@digest when the tag is "@sha256:...", or the repository alone. */}}
{{- define "mcpserver.imageRef" -}}
{{- $tag := toString (.tag | default "") -}}
{{- if hasPrefix "@" $tag -}}{{ printf "%s%s" .repository $tag }}
{{- else if $tag -}}{{ printf "%s:%s" .repository $tag }}
{{- else -}}{{ .repository }}
{{- end -}}
{{- end -}}

{{/*
The container to run, as JSON: {image, pullPolicy, command, args, env, port, path, healthPath}.
python-string: the kaos runtime; a registry name: that entry; custom: .Values.image. Values
set here (image, command, args) override a registry entry.
*/}}
{{- define "mcpserver.container" -}}
{{- $v := .Values -}}
{{- $c := dict "command" $v.command "args" $v.args "env" list "port" $v.service.port "path" $v.path "healthPath" "" "pullPolicy" $v.image.pullPolicy -}}
{{- if eq $v.runtime "python-string" -}}
{{- $_ := set $c "image" (include "mcpserver.imageRef" (dict "repository" $v.runtimeImage.repository "tag" ($v.runtimeImage.tag | default .Chart.AppVersion))) -}}
{{- $_ := set $c "pullPolicy" $v.runtimeImage.pullPolicy -}}
{{- $_ := set $c "command" (list "kaos-runtime" "mcp") -}}
{{- $_ := set $c "env" (list (dict "name" "MCP_TOOLS_STRING" "value" $v.params)) -}}
{{- $_ := set $c "healthPath" "/health" -}}
{{- else if eq $v.runtime "custom" -}}
{{- if not $v.image.repository -}}
{{- fail "image.repository: a custom MCPServer needs an image (container.image)" -}}
{{- end -}}
{{- $_ := set $c "image" (include "mcpserver.imageRef" $v.image) -}}
{{- else -}}
{{- $entry := get $v.registry $v.runtime -}}
{{- if not $entry -}}
{{- fail (printf "runtime: %q is not python-string, custom, or a name in the runtime registry (%s)" $v.runtime (keys $v.registry | sortAlpha | join ", " | default "empty")) -}}
{{- end -}}
{{- $image := $entry.image | default dict -}}
{{- if $v.image.repository -}}
{{- $image = $v.image -}}
{{- end -}}
{{- if not $image.repository -}}
{{- fail (printf "registry.%s.image.repository: the runtime has no image" $v.runtime) -}}
{{- end -}}
{{- $_ := set $c "image" (include "mcpserver.imageRef" $image) -}}
{{- $_ := set $c "pullPolicy" ($image.pullPolicy | default $v.image.pullPolicy) -}}
{{- $_ := set $c "command" ($v.command | default $entry.command | default list) -}}
{{- $_ := set $c "args" ($v.args | default $entry.args | default list) -}}
{{- $_ := set $c "env" ($entry.env | default list) -}}
{{- $_ := set $c "port" ($entry.port | default $v.service.port) -}}
{{- $_ := set $c "path" ($entry.path | default $v.path) -}}
{{- $_ := set $c "healthPath" ($entry.healthPath | default "") -}}
{{- end -}}
{{- toJson $c -}}
{{- end -}}

{{/*
Env of the server: PORT and HOST, the runtime's own env, then .Values.env; a variable set
again later is left out earlier, so the user's value wins and names stay unique.
*/}}
{{- define "mcpserver.env" -}}
{{- $c := .container -}}
{{- $lists := list (list (dict "name" "HOST" "value" "0.0.0.0") (dict "name" "PORT" "value" (toString $c.port))) $c.env .user -}}
{{- $out := list -}}
{{- range $i, $env := $lists -}}
{{- $later := dict -}}
{{- range (slice $lists (add1 $i)) -}}
{{- range . -}}
{{- $_ := set $later .name true -}}
{{- end -}}
{{- end -}}
{{- range $env -}}
{{- if not (hasKey $later .name) -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}

{{/* The namespace the gateway's pods run in, for network policies. */}}
{{- define "mcpserver.gatewayPeer" -}}
{{- $selector := .Values.networkPolicy.gatewayNamespaceSelector -}}
{{- if not $selector -}}
{{- $selector = dict "kubernetes.io/metadata.name" (.Values.gateway.parentRef.namespace | default .Release.Namespace) -}}
{{- end -}}
- namespaceSelector:
    matchLabels:
      {{- toYaml $selector | nindent 6 }}
{{- end -}}
