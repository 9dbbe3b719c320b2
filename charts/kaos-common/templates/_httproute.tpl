{{/*
The workload's HTTPRoute <route>-<name> on the Gateway .Values.gateway.parentRef: the prefix
/<namespace>/<route>/<name> is rewritten to / and sent to the Service's port; the request
timeout is .Values.gateway.timeout when set ("0s" = none).
Usage: include "kaos-common.httproute" (dict "context" $ "port" .Values.service.port)
*/}}
{{- define "kaos-common.httproute" -}}
{{- $ctx := .context -}}
{{- $gateway := $ctx.Values.gateway -}}
{{- $name := include "kaos-common.names.name" $ctx -}}
{{- $route := include "kaos-common.names.route" $ctx -}}
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
            value: /{{ $ctx.Release.Namespace }}/{{ $route }}/{{ $name }}
      filters:
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
