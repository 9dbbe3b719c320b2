{{/*
The agent chart's own templates. Names, labels, image references, env merging, the Service,
HTTPRoute and NetworkPolicy come from the kaos-common library chart (charts/kaos-common).
*/}}

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
  (dict "name" "AGENT_NAME" "value" (include "kaos-common.names.name" .))
  (dict "name" "AGENT_DESCRIPTION" "value" $v.description)
  (dict "name" "AGENT_INSTRUCTIONS" "value" $v.instructions)
  (dict "name" "MODEL_API_URL" "value" $v.modelAPI.url)
-}}
{{- if $v.model -}}
{{- $env = append $env (dict "name" "MODEL_NAME" "value" $v.model) -}}
{{- end -}}
{{- if $v.reasoningLoopMaxSteps -}}
{{- $env = append $env (dict "name" "AGENTIC_LOOP_MAX_STEPS" "value" (toString $v.reasoningLoopMaxSteps)) -}}
{{- end -}}
{{- if $v.toolCalling -}}
{{- $env = append $env (dict "name" "MODEL_TOOL_CALLING" "value" $v.toolCalling) -}}
{{- end -}}
{{- $peers := list -}}
{{- range $v.peers -}}
{{- $peers = append $peers .name -}}
{{- end -}}
{{- $env = append $env (dict "name" "PEER_AGENTS" "value" (join "," $peers)) -}}
{{- range $v.peers -}}
{{- $env = append $env (dict "name" (printf "PEER_AGENT_%s_CARD_URL" (include "agent.envName" .name)) "value" (printf "%s/.well-known/agent" (trimSuffix "/" .url))) -}}
{{- end -}}
{{- with $v.a2aPeers -}}
{{- $env = append $env (dict "name" "A2A_PEER_URLS" "value" (join "," .)) -}}
{{- end -}}
{{- $servers := list -}}
{{- range $v.mcpServers -}}
{{- $servers = append $servers .name -}}
{{- end -}}
{{- $env = append $env (dict "name" "MCP_SERVERS" "value" (join "," $servers)) -}}
{{- range $v.mcpServers -}}
{{- $env = append $env (dict "name" (printf "MCP_SERVER_%s_URL" (include "agent.envName" .name)) "value" .url) -}}
{{- if eq (.identity | default "") "forward" -}}
{{- $env = append $env (dict "name" (printf "MCP_SERVER_%s_IDENTITY" (include "agent.envName" .name)) "value" "forward") -}}
{{- end -}}
{{- end -}}
{{- range list (list "MEMORY_ENABLED" "enabled") (list "MEMORY_CONTEXT_LIMIT" "contextLimit") (list "MEMORY_MAX_SESSIONS" "maxSessions") (list "MEMORY_MAX_SESSION_EVENTS" "maxSessionEvents") -}}
{{- $value := get $v.memory (index . 1) -}}
{{- if not (kindIs "invalid" $value) -}}
{{- $env = append $env (dict "name" (index . 0) "value" (toString $value)) -}}
{{- end -}}
{{- end -}}
{{- with $v.contextWindow -}}
{{- $env = append $env (dict "name" "MODEL_CONTEXT_WINDOW" "value" (printf "%d" (int64 .))) -}}
{{- end -}}
{{- with $v.memory.compaction -}}
{{- if .enabled -}}
{{- $env = append $env (dict "name" "MEMORY_COMPACTION" "value" "true") -}}
{{- with .thresholdPercent -}}
{{- $env = append $env (dict "name" "MEMORY_COMPACTION_THRESHOLD_PERCENT" "value" (printf "%d" (int64 .))) -}}
{{- end -}}
{{- with .model -}}
{{- $env = append $env (dict "name" "MEMORY_COMPACTION_MODEL" "value" .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $backend := $v.memory.backend | default "local" -}}
{{- $env = append $env (dict "name" "MEMORY_BACKEND" "value" $backend) -}}
{{- if eq $backend "redis" -}}
{{- $redis := $v.memory.redis | default dict -}}
{{- if $redis.secretKeyRef -}}
{{- $env = append $env (dict "name" "REDIS_URL" "valueFrom" (dict "secretKeyRef" (dict "name" $redis.secretKeyRef.name "key" $redis.secretKeyRef.key))) -}}
{{- else -}}
{{- $env = append $env (dict "name" "REDIS_URL" "value" $redis.url) -}}
{{- end -}}
{{- $env = append $env (dict "name" "MEMORY_KEY_PREFIX" "value" (printf "kaos:%s:agent:%s" .Release.Namespace (include "kaos-common.names.name" .))) -}}
{{- if $v.memory.ttlSeconds -}}
{{- $env = append $env (dict "name" "MEMORY_TTL_SECONDS" "value" (toString $v.memory.ttlSeconds)) -}}
{{- end -}}
{{- end -}}
{{- with $v.longTermMemory -}}
{{- if .enabled -}}
{{- $env = append $env (dict "name" "LONG_TERM_MEMORY_ENABLED" "value" "true") -}}
{{- if .urlSecretKeyRef -}}
{{- $env = append $env (dict "name" "LONG_TERM_MEMORY_STORE_URL" "valueFrom" (dict "secretKeyRef" (dict "name" .urlSecretKeyRef.name "key" .urlSecretKeyRef.key))) -}}
{{- else -}}
{{- $env = append $env (dict "name" "LONG_TERM_MEMORY_STORE_URL" "value" .url) -}}
{{- end -}}
{{- $env = append $env (dict "name" "LONG_TERM_MEMORY_COLLECTION" "value" .collection) -}}
{{- $env = append $env (dict "name" "LONG_TERM_MEMORY_SCOPE" "value" .scope) -}}
{{- $env = append $env (dict "name" "LONG_TERM_MEMORY_EMBEDDING_URL" "value" .embedding.url) -}}
{{- $env = append $env (dict "name" "LONG_TERM_MEMORY_EMBEDDING_MODEL" "value" .embedding.model) -}}
{{- with .extraction -}}
{{- if .url -}}
{{- $env = append $env (dict "name" "LONG_TERM_MEMORY_EXTRACTION_URL" "value" .url) -}}
{{- $env = append $env (dict "name" "LONG_TERM_MEMORY_EXTRACTION_MODEL" "value" .model) -}}
{{- end -}}
{{- end -}}
{{- $env = append $env (dict "name" "LONG_TERM_MEMORY_RETENTION_DAYS" "value" (toString (.retentionDays | default 0))) -}}
{{- $env = append $env (dict "name" "LONG_TERM_MEMORY_TOP_K" "value" (toString .topK)) -}}
{{- end -}}
{{- end -}}
{{- if eq $v.metrics.enabled false -}}
{{- $env = append $env (dict "name" "METRICS_ENABLED" "value" "false") -}}
{{- end -}}
{{- with $v.budget -}}
{{- $limits := list (list "BUDGET_TOKENS_PER_MINUTE" .tokensPerMinute) (list "BUDGET_TOKENS_PER_DAY" .tokensPerDay) -}}
{{- $caller := .perCaller | default dict -}}
{{- $limits = concat $limits (list (list "BUDGET_CALLER_TOKENS_PER_MINUTE" $caller.tokensPerMinute) (list "BUDGET_CALLER_TOKENS_PER_DAY" $caller.tokensPerDay)) -}}
{{- $model := .modelAPI | default dict -}}
{{- $limits = concat $limits (list (list "BUDGET_MODELAPI_TOKENS_PER_MINUTE" $model.tokensPerMinute) (list "BUDGET_MODELAPI_TOKENS_PER_DAY" $model.tokensPerDay)) -}}
{{- $any := false -}}
{{- range $limits -}}
{{- if gt (int64 (index . 1 | default 0)) 0 -}}
{{- $any = true -}}
{{- $env = append $env (dict "name" (index . 0) "value" (printf "%d" (int64 (index . 1)))) -}}
{{- end -}}
{{- end -}}
{{- if or (gt (int64 ($model.tokensPerMinute | default 0)) 0) (gt (int64 ($model.tokensPerDay | default 0)) 0) -}}
{{- $env = append $env (dict "name" "BUDGET_MODELAPI" "value" (printf "%s/%s" $.Release.Namespace $v.modelAPI.name)) -}}
{{- end -}}
{{- if $any -}}
{{- $env = append $env (dict "name" "BUDGET_KEY_PREFIX" "value" (printf "kaos:%s:budget" $.Release.Namespace)) -}}
{{- end -}}
{{- end -}}
{{- with $v.approval -}}
{{- if or .tools .fromAnnotations -}}
{{- with .tools -}}
{{- $env = append $env (dict "name" "TOOL_APPROVAL_REQUIRED" "value" (join "," .)) -}}
{{- end -}}
{{- $env = append $env (dict "name" "TOOL_APPROVAL_FROM_ANNOTATIONS" "value" (toString (.fromAnnotations | default false))) -}}
{{- if not (kindIs "invalid" .timeoutSeconds) -}}
{{- $env = append $env (dict "name" "TOOL_APPROVAL_TIMEOUT_SECONDS" "value" (printf "%d" (int64 .timeoutSeconds))) -}}
{{- end -}}
{{- with .onTimeout -}}
{{- $env = append $env (dict "name" "TOOL_APPROVAL_ON_TIMEOUT" "value" .) -}}
{{- end -}}
{{- with .approvers -}}
{{- $env = append $env (dict "name" "TOOL_APPROVAL_APPROVERS" "value" (join "," .)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- /* An Agent's oidc may leave jwksURL unset (the runtime discovers it from the issuer): no empty variable then. */ -}}
{{- range (include "kaos-common.env.auth" ($v.auth | default dict) | fromJsonArray) -}}
{{- if or (ne .name "AUTH_OIDC_JWKS_URL") .value -}}
{{- $env = append $env . -}}
{{- end -}}
{{- end -}}
{{- with ($v.auth | default dict).admins -}}
{{- $env = append $env (dict "name" "AUTH_ADMINS" "value" (join "," .)) -}}
{{- end -}}
{{- with ($v.auth | default dict).oidc -}}
{{- with .userClaim -}}
{{- $env = append $env (dict "name" "AUTH_OIDC_USER_CLAIM" "value" .) -}}
{{- end -}}
{{- with .groupsClaim -}}
{{- $env = append $env (dict "name" "AUTH_OIDC_GROUPS_CLAIM" "value" .) -}}
{{- end -}}
{{- end -}}
{{- with $v.access -}}
{{- $env = append $env (dict "name" "ACCESS_RULES" "value" (toJson .)) -}}
{{- end -}}
{{- /* The agent's own credential goes to every KAOS endpoint it calls: peers (AUTH_OUTBOUND_TOKEN), its
ModelAPI (MODEL_API_KEY) and each MCP server KAOS serves (MCP_SERVER_<NAME>_TOKEN); an external MCP
server gets none. A MODEL_API_KEY in the user's env wins. */ -}}
{{- with ($v.auth | default dict).credentials -}}
{{- $ref := .secretKeyRef -}}
{{- $env = append $env (include "kaos-common.env.secret" (dict "name" "AUTH_OUTBOUND_TOKEN" "ref" $ref) | fromJson) -}}
{{- $env = append $env (include "kaos-common.env.secret" (dict "name" "MODEL_API_KEY" "ref" $ref) | fromJson) -}}
{{- range $v.mcpServers -}}
{{- if not .external -}}
{{- $env = append $env (include "kaos-common.env.secret" (dict "name" (printf "MCP_SERVER_%s_TOKEN" (include "agent.envName" .name)) "ref" $ref) | fromJson) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $v.telemetry.enabled -}}
{{- $env = append $env (dict "name" "OTEL_SDK_DISABLED" "value" "false") -}}
{{- $env = append $env (dict "name" "OTEL_SERVICE_NAME" "value" (include "kaos-common.names.fullname" .)) -}}
{{- $env = append $env (dict "name" "OTEL_RESOURCE_ATTRIBUTES" "value" (printf "service.namespace=%s,kaos.agent=%s" .Release.Namespace (include "kaos-common.names.name" .))) -}}
{{- if $v.telemetry.endpoint -}}
{{- $env = append $env (dict "name" "OTEL_EXPORTER_OTLP_ENDPOINT" "value" $v.telemetry.endpoint) -}}
{{- end -}}
{{- end -}}
{{- $env = append $env (dict "name" "HOST" "value" "0.0.0.0") -}}
{{- $env = append $env (dict "name" "PORT" "value" (toString $v.service.port)) -}}
{{- include "kaos-common.env.merge" (list $env $v.env) -}}
{{- end -}}
