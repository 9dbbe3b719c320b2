{{/*
The workload's HTTPRoute <route>-<name> on the Gateway .Values.gateway.parentRef: the prefix
/<namespace>/<route>/<name> is rewritten to / and sent to the Service's port; the request
timeout is .Values.gateway.timeout when set ("0s" = none). The request carries the prefix in
X-Forwarded-Prefix (set, replacing any a client sent), so that the workload can name its public
URL (an agent's cards); the header filter comes first, though its value does not depend on the
path, so the order of the two filters changes nothing.
With "paths" (a list), only those paths (and what lies below each, whole segments) are routed,
one rule each (the Gateway API allows one PathPrefix match per rule that rewrites the prefix,
and 16 rules per route): /<namespace>/<route>/<name><path> goes to <path>.
Usage: include "kaos-common.httproute" (dict "context" $ "port" .Values.service.port [ "paths" (list "/v1/models") ])
*/}}
{{- define "kaos-common.httproute" -}}
{{- $ctx := .context -}}
{{- $gateway := $ctx.Values.gateway -}}
{{- $name := include "kaos-common.names.name" $ctx -}}
{{- $route := include "kaos-common.names.route" $ctx -}}
{{- $prefix := printf "/%s/%s/%s" $ctx.Release.Namespace $route $name -}}
{{- $service := include "kaos-common.names.fullname" $ctx -}}
{{- $port := .port -}}
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: {{ printf "%s-%s" $route $name }}
  labels:
    {{- include "kaos-common.labels.standard" $ctx | nindent 4 }}
spec:
  parentRefs:
    - name: {{ $gateway.parentRef.name }}
      {{- with $gateway.parentRef.namespace }}
      namespace: {{ . }}
      {{- end }}
  rules:
    {{- range $path := (.paths | default (list "/")) }}
    - matches:
        - path:
            type: PathPrefix
            value: {{ ternary $prefix (printf "%s%s" $prefix $path) (eq $path "/") }}
      filters:
        - type: RequestHeaderModifier
          requestHeaderModifier:
            set:
              - name: X-Forwarded-Prefix
                value: {{ $prefix }}
        - type: URLRewrite
          urlRewrite:
            path:
              type: ReplacePrefixMatch
              replacePrefixMatch: {{ $path }}
      backendRefs:
        - name: {{ $service }}
          port: {{ $port }}
      {{- with $gateway.timeout }}
      timeouts:
        request: {{ . }}
      {{- end }}
    {{- end }}
{{- end -}}
