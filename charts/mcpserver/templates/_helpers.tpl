{{/*
The mcpserver chart's own templates. Names, labels, image references, env merging, the Service,
HTTPRoute and NetworkPolicy come from the kaos-common library chart (charts/kaos-common).
*/}}

{{/*
The container to run, as JSON: {image, pullPolicy, command, args, env, port, path, healthPath}.
python-string: the kaos runtime; a registry name: that entry; custom: .Values.image. Values
set here (image, command, args) override a registry entry.
*/}}
{{- define "mcpserver.container" -}}
{{- $v := .Values -}}
{{- $c := dict "command" $v.command "args" $v.args "env" list "port" $v.service.port "path" $v.path "healthPath" "" "pullPolicy" $v.image.pullPolicy -}}
{{- if and ($v.auth | default dict | len) (ne $v.runtime "python-string") -}}
{{- fail (printf "auth: only the python-string runtime enforces bearer authentication; runtime %q would serve its endpoint open" $v.runtime) -}}
{{- end -}}
{{- if eq $v.runtime "python-string" -}}
{{- $_ := set $c "image" (include "kaos-common.images.image" (dict "image" $v.runtimeImage "defaultTag" .Chart.AppVersion)) -}}
{{- $_ := set $c "pullPolicy" $v.runtimeImage.pullPolicy -}}
{{- $_ := set $c "command" (list "kaos-runtime" "mcp") -}}
{{- $_ := set $c "env" (concat (list (dict "name" "MCP_TOOLS_STRING" "value" $v.params) (dict "name" "MCP_SERVER_NAME" "value" $v.name)) (include "kaos-common.env.auth" ($v.auth | default dict) | fromJsonArray)) -}}
{{- $_ := set $c "healthPath" "/health" -}}
{{- else if eq $v.runtime "custom" -}}
{{- if not $v.image.repository -}}
{{- fail "image.repository: a custom MCPServer needs an image (container.image)" -}}
{{- end -}}
{{- $_ := set $c "image" (include "kaos-common.images.image" (dict "image" $v.image)) -}}
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
{{- $_ := set $c "image" (include "kaos-common.images.image" (dict "image" $image)) -}}
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
{{- include "kaos-common.env.merge" (list (list (dict "name" "HOST" "value" "0.0.0.0") (dict "name" "PORT" "value" (toString $c.port))) $c.env .user) -}}
{{- end -}}
