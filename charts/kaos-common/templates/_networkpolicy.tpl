{{/*
The workload's ingress NetworkPolicy <kind>-<name>: the port named http is reached only by
the gateway's pods (when the gateway is enabled or .Values.networkPolicy.gatewayNamespaceSelector
is set) and by the pods of the same namespace that carry the access label
kaos.tools/<access>-<name> (agents set it for their peers, ModelAPI and MCP servers), and, for
an agent, the pods of .Values.networkPolicy.triggerRunner {namespace, podLabels}: the operator,
which sends Triggers' runs.
Usage: include "kaos-common.networkpolicy" (dict "context" $)
*/}}
{{- define "kaos-common.networkpolicy" -}}
{{- $ctx := .context -}}
{{- $v := $ctx.Values -}}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "kaos-common.names.fullname" $ctx }}
  labels:
    {{- include "kaos-common.labels.standard" $ctx | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "kaos-common.labels.matchLabels" $ctx | nindent 6 }}
  policyTypes:
    - Ingress
  ingress:
    - from:
        {{- if or $v.gateway.enabled $v.networkPolicy.gatewayNamespaceSelector }}
        {{- include "kaos-common.networkpolicy.gatewayPeer" $ctx | nindent 8 }}
        {{- end }}
        - podSelector:
            matchLabels:
              {{ include "kaos-common.labels.access" (dict "kind" $ctx.Chart.Name "name" (include "kaos-common.names.name" $ctx)) }}: "true"
        {{- with $v.networkPolicy.triggerRunner }}
        {{- if and .namespace .podLabels }}
        - namespaceSelector:
            matchLabels:
              kubernetes.io/metadata.name: {{ .namespace }}
          podSelector:
            matchLabels:
              {{- toYaml .podLabels | nindent 14 }}
        {{- end }}
        {{- end }}
      ports:
        - port: http
          protocol: TCP
{{- end -}}

{{/*
The gateway's pods, as a NetworkPolicy peer: the namespaces matching
.Values.networkPolicy.gatewayNamespaceSelector, by default the Gateway's own namespace.
Usage: include "kaos-common.networkpolicy.gatewayPeer" $
*/}}
{{- define "kaos-common.networkpolicy.gatewayPeer" -}}
{{- $selector := .Values.networkPolicy.gatewayNamespaceSelector -}}
{{- if not $selector -}}
{{- $selector = dict "kubernetes.io/metadata.name" (.Values.gateway.parentRef.namespace | default .Release.Namespace) -}}
{{- end -}}
- namespaceSelector:
    matchLabels:
      {{- toYaml $selector | nindent 6 }}
{{- end -}}
