{{/* Written by scripts/generate from kaos.routes.MODELAPI_SERVING_PATHS; do not edit (a test checks it).
The paths the ModelAPI's HTTPRoute routes (each with what lies below it) unless gateway.adminRoutes:
those that serve models, not LiteLLM's admin API nor Ollama's model management. */}}
{{- define "modelapi.servingPaths" -}}
- /v1/chat/completions
- /v1/completions
- /v1/embeddings
- /v1/models
- /chat/completions
- /completions
- /embeddings
- /models
- /api/chat
- /api/generate
- /api/embed
- /api/tags
- /api/show
- /api/version
- /health/liveliness
{{- end -}}
