{{/* Name of the Agent: .Values.name, or the release name when empty. */}}
{{- define "agent.agentName" -}}
{{- $name := .Values.name | default .Release.Name -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- fail (printf "name: %q is not a DNS-1123 label (lower case letters, digits and '-')" $name) -}}
{{- end -}}
{{- if gt (len $name) 57 -}}
{{- fail (printf "name: %q is longer than 57 characters (agent-<name> must fit in 63)" $name) -}}
{{- end -}}
{{- $name -}}
{{- end -}}

{{/* Objects are called agent-<name>. */}}
{{- define "agent.fullname" -}}
{{- printf "agent-%s" (include "agent.agentName" .) -}}
{{- end -}}

{{- define "agent.selectorLabels" -}}
app.kubernetes.io/name: agent
app.kubernetes.io/instance: {{ include "agent.fullname" . }}
kaos.tools/agent: {{ include "agent.agentName" . }}
{{- end -}}

{{- define "agent.labels" -}}
{{ include "agent.selectorLabels" . }}
app.kubernetes.io/component: agent
app.kubernetes.io/part-of: kaos
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Env var name part of a resource name: upper case, '-' -> '_'. */}}
{{- define "agent.envName" -}}
{{- . | upper | replace "-" "_" -}}
{{- end -}}

{{/*
The generated env vars, as a YAML list. A generated variable that the user's env also sets
is left out, so the user's value wins and the list has no duplicate names.
*/}}
{{- define "agent.env" -}}
{{- $v := .Values -}}
{{- $env := list
  (dict "name" "AGENT_NAME" "value" (include "agent.agentName" .))
  (dict "name" "AGENT_DESCRIPTION" "value" $v.description)
  (dict "name" "AGENT_INSTRUCTIONS" "value" $v.instructions)
  (dict "name" "MODEL_API_URL" "value" $v.modelAPI.url)
-}}
{{- if $v.model -}}
{{- $env = append $env (dict "name" "MODEL_NAME" "value" $v.model) -}}
{{- end -}}
{{- $env = append $env (dict "name" "AGENTIC_LOOP_MAX_STEPS" "value" (toString $v.reasoningLoopMaxSteps)) -}}
{{- $peers := list -}}
{{- range $v.peers -}}
{{- $peers = append $peers .name -}}
{{- end -}}
{{- $env = append $env (dict "name" "PEER_AGENTS" "value" (join "," $peers)) -}}
{{- range $v.peers -}}
{{- $env = append $env (dict "name" (printf "PEER_AGENT_%s_CARD_URL" (include "agent.envName" .name)) "value" (printf "%s/.well-known/agent" (trimSuffix "/" .url))) -}}
{{- end -}}
{{- $servers := list -}}
{{- range $v.mcpServers -}}
{{- $servers = append $servers .name -}}
{{- end -}}
{{- $env = append $env (dict "name" "MCP_SERVERS" "value" (join "," $servers)) -}}
{{- range $v.mcpServers -}}
{{- $env = append $env (dict "name" (printf "MCP_SERVER_%s_URL" (include "agent.envName" .name)) "value" .url) -}}
{{- end -}}
{{- $env = append $env (dict "name" "MEMORY_ENABLED" "value" (toString $v.memory.enabled)) -}}
{{- $env = append $env (dict "name" "MEMORY_CONTEXT_LIMIT" "value" (toString $v.memory.contextLimit)) -}}
{{- $env = append $env (dict "name" "MEMORY_MAX_SESSIONS" "value" (toString $v.memory.maxSessions)) -}}
{{- $env = append $env (dict "name" "MEMORY_MAX_SESSION_EVENTS" "value" (toString $v.memory.maxSessionEvents)) -}}
{{- if $v.telemetry.enabled -}}
{{- $env = append $env (dict "name" "OTEL_SDK_DISABLED" "value" "false") -}}
{{- $env = append $env (dict "name" "OTEL_SERVICE_NAME" "value" (include "agent.fullname" .)) -}}
{{- $env = append $env (dict "name" "OTEL_RESOURCE_ATTRIBUTES" "value" (printf "service.namespace=%s,kaos.agent=%s" .Release.Namespace (include "agent.agentName" .))) -}}
{{- if $v.telemetry.endpoint -}}
{{- $env = append $env (dict "name" "OTEL_EXPORTER_OTLP_ENDPOINT" "value" $v.telemetry.endpoint) -}}
{{- end -}}
{{- end -}}
{{- $env = append $env (dict "name" "LITELLM_LOCAL_MODEL_COST_MAP" "value" "True") -}}
{{- $env = append $env (dict "name" "HOST" "value" "0.0.0.0") -}}
{{- $env = append $env (dict "name" "PORT" "value" (toString $v.service.port)) -}}
{{- $user := dict -}}
{{- range $v.env -}}
{{- $_ := set $user .name true -}}
{{- end -}}
{{- $out := list -}}
{{- range $env -}}
{{- if not (hasKey $user .name) -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- toYaml (concat $out $v.env) -}}
{{- end -}}

{{/* The namespace the gateway's pods run in, for network policies. */}}
{{- define "agent.gatewayPeer" -}}
{{- $selector := .Values.networkPolicy.gatewayNamespaceSelector -}}
{{- if not $selector -}}
{{- $selector = dict "kubernetes.io/metadata.name" (.Values.gateway.parentRef.namespace | default .Release.Namespace) -}}
{{- end -}}
- namespaceSelector:
    matchLabels:
      {{- toYaml $selector | nindent 6 }}
{{- end -}}

{{/* repository:tag, repository@digest when the tag is "@sha256:...", or the repository alone. */}}
{{- define "agent.imageRef" -}}
{{- $tag := toString (.tag | default "") -}}
{{- if hasPrefix "@" $tag -}}{{ printf "%s%s" .repository $tag }}
{{- else if $tag -}}{{ printf "%s:%s" .repository $tag }}
{{- else -}}{{ .repository }}
{{- end -}}
{{- end -}}
