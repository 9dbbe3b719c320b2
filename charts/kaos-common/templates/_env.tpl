{{/*
Env vars from several lists, as a YAML list: the lists in order, each variable left out where a
later list sets it again, so the later value wins and names stay unique (server-side apply
rejects duplicates). The generated variables come first and the user's env last.
Usage: include "kaos-common.env.merge" (list $generated .Values.env)
*/}}
{{- define "kaos-common.env.merge" -}}
{{- $lists := . -}}
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

{{/*
An env var read from a Secret key, as JSON: {"name", "valueFrom": {"secretKeyRef": {"name", "key"}}}.
Secret values never appear in values, rendered objects or ConfigMaps: only this reference does.
Usage: include "kaos-common.env.secret" (dict "name" "AUTH_API_KEYS" "ref" .secretKeyRef) | fromJson
*/}}
{{- define "kaos-common.env.secret" -}}
{{- toJson (dict "name" .name "valueFrom" (dict "secretKeyRef" (dict "name" .ref.name "key" .ref.key))) -}}
{{- end -}}

{{/*
The env of a KAOS endpoint guarded by bearer authentication (the resource's spec.auth, as
.Values.auth), as a JSON list: AUTH_API_KEYS from the apiKeys Secret key, AUTH_OIDC_JWKS_URL,
AUTH_OIDC_ISSUER and AUTH_OIDC_AUDIENCE from oidc; empty without auth. The kaos runtime reads
them (agents and the python-string MCP server, kaos_runtime/auth.py).
Usage: include "kaos-common.env.auth" .Values.auth | fromJsonArray
*/}}
{{- define "kaos-common.env.auth" -}}
{{- $env := list -}}
{{- with .apiKeys -}}
{{- $env = append $env (include "kaos-common.env.secret" (dict "name" "AUTH_API_KEYS" "ref" .secretKeyRef) | fromJson) -}}
{{- end -}}
{{- with .oidc -}}
{{- $env = append $env (dict "name" "AUTH_OIDC_JWKS_URL" "value" .jwksURL) -}}
{{- $env = append $env (dict "name" "AUTH_OIDC_ISSUER" "value" (.issuer | default "")) -}}
{{- $env = append $env (dict "name" "AUTH_OIDC_AUDIENCE" "value" (.audience | default "")) -}}
{{- end -}}
{{- toJson $env -}}
{{- end -}}
