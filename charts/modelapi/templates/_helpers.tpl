{{/*
The modelapi chart's own templates. Names, labels, image references, env merging, the Service,
HTTPRoute and NetworkPolicy come from the kaos-common library chart (charts/kaos-common).
*/}}

{{/* Port the server listens on: LiteLLM, llama.cpp and the embedder 8000, Ollama 11434. */}}
{{- define "modelapi.port" -}}
{{- if include "modelapi.ollama" . -}}11434{{- else -}}8000{{- end -}}
{{- end -}}

{{/* "true" when the server is Ollama (mode Hosted, engine ollama). */}}
{{- define "modelapi.ollama" -}}
{{- if and (eq .Values.mode "Hosted") (not (has (.Values.hosted.engine | default "ollama") (list "llamacpp" "embeddings"))) -}}true{{- end -}}
{{- end -}}

{{/* "true" when the server is llama.cpp (mode Hosted, engine llamacpp). */}}
{{- define "modelapi.llamacpp" -}}
{{- if and (eq .Values.mode "Hosted") (eq (.Values.hosted.engine | default "ollama") "llamacpp") -}}true{{- end -}}
{{- end -}}

{{/* "true" when the server is the offline embedder (mode Hosted, engine embeddings). */}}
{{- define "modelapi.embeddings" -}}
{{- if and (eq .Values.mode "Hosted") (eq .Values.hosted.engine "embeddings") -}}true{{- end -}}
{{- end -}}

{{/* Where the server finds the GGUF: /models/<file> (fetched, or the hostPath file); for
Ollama /gguf/<file>, the hostPath file in the init step that creates the model from it. */}}
{{- define "modelapi.ggufPath" -}}
{{- $gguf := .Values.hosted.gguf -}}
{{- if include "modelapi.ollama" . -}}
{{- printf "/gguf/%s" (base $gguf.path) -}}
{{- else if $gguf.path -}}
{{- printf "/models/%s" (base $gguf.path) -}}
{{- else -}}
{{- printf "/models/%s" ($gguf.file | default (base $gguf.url)) -}}
{{- end -}}
{{- end -}}

{{/* The Secret that holds apiKey.value (the value never appears anywhere else). */}}
{{- define "modelapi.apiKeySecret" -}}
{{- printf "%s-api-key" (include "kaos-common.names.fullname" .) -}}
{{- end -}}

{{/* Whether the provider key is set, by value or by Secret reference. */}}
{{- define "modelapi.hasApiKey" -}}
{{- $key := .Values.proxy.apiKey -}}
{{- if or $key.value $key.secretKeyRef -}}true{{- end -}}
{{- end -}}

{{/* Env var the LiteLLM config reads the provider key from (os.environ/...). */}}
{{- define "modelapi.apiKeyEnv" -}}PROVIDER_API_KEY{{- end -}}

{{/* The LiteLLM model behind one offered name: <provider>/<name> unless it already has that prefix. */}}
{{- define "modelapi.litellmModel" -}}
{{- $provider := .provider -}}
{{- if and $provider (not (hasPrefix (printf "%s/" $provider) .model)) -}}
{{- printf "%s/%s" $provider .model -}}
{{- else -}}
{{- .model -}}
{{- end -}}
{{- end -}}

{{/* "true" when the Proxy runs KAOS's LiteLLM auth module (files/kaos_auth.py): with API keys
(auth.apiKeys) or proxy.allowMockResponse. */}}
{{- define "modelapi.customAuth" -}}
{{- if and (eq .Values.mode "Proxy") (or .Values.proxy.allowMockResponse (.Values.auth | default dict).apiKeys) -}}true{{- end -}}
{{- end -}}

{{/* LiteLLM proxy config rendered from models/provider/apiBase, or configYaml verbatim; with
the auth module, either gets general_settings.custom_auth: kaos_auth.user_api_key_auth. */}}
{{- define "modelapi.litellmConfig" -}}
{{- if include "modelapi.customAuth" . -}}
{{- $config := include "modelapi.litellmBaseConfig" . | fromYaml -}}
{{- $general := get $config "general_settings" | default dict -}}
{{- $_ := set $general "custom_auth" "kaos_auth.user_api_key_auth" -}}
{{- $_ := set $config "general_settings" $general -}}
{{- toYaml $config -}}
{{- else -}}
{{- include "modelapi.litellmBaseConfig" . -}}
{{- end -}}
{{- end -}}

{{- define "modelapi.litellmBaseConfig" -}}
{{- $p := .Values.proxy -}}
{{- if $p.configYaml -}}
{{- $p.configYaml -}}
{{- else -}}
{{- $models := $p.models | default (list "*") -}}
{{- $entries := list -}}
{{- range $models -}}
{{- $params := dict "model" (include "modelapi.litellmModel" (dict "provider" $p.provider "model" .)) -}}
{{- if $p.apiBase -}}
{{- $_ := set $params "api_base" $p.apiBase -}}
{{- end -}}
{{- if include "modelapi.hasApiKey" $ -}}
{{- $_ := set $params "api_key" (printf "os.environ/%s" (include "modelapi.apiKeyEnv" $)) -}}
{{- end -}}
{{- $entries = append $entries (dict "model_name" . "litellm_params" $params) -}}
{{- end -}}
{{- toYaml (dict "model_list" $entries "litellm_settings" (dict "drop_params" true)) -}}
{{- end -}}
{{- end -}}

{{/*
Env of the server container: the generated variables, then .Values.env; a generated
variable that the user's env also sets is left out so the user's value wins.
*/}}
{{- define "modelapi.env" -}}
{{- $env := list (dict "name" "HOST" "value" "0.0.0.0") (dict "name" "PORT" "value" (include "modelapi.port" .)) -}}
{{- $keys := (.Values.auth | default dict).apiKeys -}}
{{- if include "modelapi.ollama" . -}}
{{- if $keys -}}
{{- fail "auth: Ollama cannot require a key, so a Hosted ModelAPI on it would be served open; use hosted.engine llamacpp, or a Proxy in front" -}}
{{- end -}}
{{- $env = append $env (dict "name" "OLLAMA_HOST" "value" "$(HOST):$(PORT)") -}}
{{- $env = append $env (dict "name" "OLLAMA_MODELS" "value" "/models") -}}
{{- else if include "modelapi.embeddings" . -}}
{{- if $keys -}}
{{- fail "auth: the offline embedder cannot require a key, so a Hosted ModelAPI on it would be served open; use a Proxy in front" -}}
{{- end -}}
{{- else if include "modelapi.llamacpp" . -}}
{{- with $keys -}}
{{- /* llama-server reads its keys (comma separated) from LLAMA_API_KEY; /health and /v1/models stay open. */ -}}
{{- $env = append $env (include "kaos-common.env.secret" (dict "name" "LLAMA_API_KEY" "ref" .secretKeyRef) | fromJson) -}}
{{- end -}}
{{- else -}}
{{- with $keys -}}
{{- $env = append $env (include "kaos-common.env.secret" (dict "name" "AUTH_API_KEYS" "ref" .secretKeyRef) | fromJson) -}}
{{- end -}}
{{- if .Values.proxy.allowMockResponse -}}
{{- $env = append $env (dict "name" "KAOS_ALLOW_MOCK_RESPONSE" "value" "true") -}}
{{- end -}}
{{- $env = append $env (dict "name" "LITELLM_LOCAL_MODEL_COST_MAP" "value" "True") -}}
{{- /* Without auth.apiKeys agents call the proxy without a key (the network policy limits who may); LiteLLM refuses to start without a master key unless told so (with keys, files/kaos_auth.py checks them). */ -}}
{{- $env = append $env (dict "name" "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY" "value" "true") -}}
{{- if include "modelapi.hasApiKey" . -}}
{{- $ref := .Values.proxy.apiKey.secretKeyRef -}}
{{- if not $ref -}}
{{- $ref = dict "name" (include "modelapi.apiKeySecret" .) "key" "api-key" -}}
{{- end -}}
{{- $env = append $env (dict "name" (include "modelapi.apiKeyEnv" .) "valueFrom" (dict "secretKeyRef" $ref)) -}}
{{- end -}}
{{- end -}}
{{- include "kaos-common.env.merge" (list $env .Values.env) -}}
{{- end -}}
