{{/*
The workload's HTTPRoute <route>-<name> on the Gateway .Values.gateway.parentRef: the prefix
/<namespace>/<route>/<name> is rewritten to / and sent to the Service's port; the request
timeout is .Values.gateway.timeout when set ("0s" = none). The request carries the prefix in
X-Forwarded-Prefix (set, replacing any a client sent), so that the workload can name its public
URL (an agent's cards); the header filter comes first, though its value does not depend on the
path, so the order of the two filters changes nothing.
Usage: include "kaos-common.httproute" (dict "context" $ "port" .Values.service.port)
*/}}
{{- define "kaos-common.httproute" -}}
{{- $ctx := .context -}}
{{- $gateway := $ctx.Values.gateway -}}
{{- $name := include "kaos-common.names.name" $ctx -}}
{{- $route := include "kaos-common.names.route" $ctx -}}
{{- $prefix := printf "/%s/%s/%s" $ctx.Release.Namespace $route $name -}}
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
    - matches:
        - path:
            type: PathPrefix
            value: {{ $prefix }}
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
              replacePrefixMatch: /
      backendRefs:
        - name: {{ include "kaos-common.names.fullname" $ctx }}
          port: {{ .port }}
      {{- with $gateway.timeout }}
      timeouts:
        request: {{ . }}
      {{- end }}
{{- end -}}
