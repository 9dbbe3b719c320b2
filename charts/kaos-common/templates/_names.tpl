{{/*
Names of the KAOS workloads. A workload chart is named after its kind (agent, modelapi,
mcpserver: .Chart.Name) and renders one resource, <name> (.Values.name, or the release name):
  objects        <kind>-<name>                Deployment, Service, NetworkPolicy, ...
  route          <route>-<name>               the HTTPRoute, matching /<namespace>/<route>/<name>
  access label   kaos.tools/<access>-<name>   carried by the agent pods let in by the NetworkPolicy
Each must fit in 63 characters (a DNS-1123 label, the name part of a label key), and the
operator installs the resource as the Helm release <kind>-<name>, at most 53. The kinds table
(_kinds.tpl) holds each kind's prefixes and its resulting limit, written from kaos.api, which
the CRD validation and the reconcile core use too: all three refuse the same names.
*/}}

{{/*
One kind's row of the kinds table (_kinds.tpl), as JSON: {route, access, max, place}.
Usage: include "kaos-common.names.kind" "agent" | fromJson
*/}}
{{- define "kaos-common.names.kind" -}}
{{- $row := get (include "kaos-common.names.kinds" . | fromYaml) . -}}
{{- if not $row -}}
{{- fail (printf "kaos-common: %q is not a KAOS workload kind (agent, modelapi, mcpserver)" .) -}}
{{- end -}}
{{- toJson $row -}}
{{- end -}}

{{/*
Fails unless a name fits the limit of its kind.
Usage: include "kaos-common.names.checkLength" (dict "kind" "modelapi" "name" "llm" "field" "modelAPI.name")
*/}}
{{- define "kaos-common.names.checkLength" -}}
{{- $row := include "kaos-common.names.kind" .kind | fromJson -}}
{{- if gt (len .name) (int $row.max) -}}
{{- fail (printf "%s: %q is longer than %d characters (%s)" .field .name (int $row.max) $row.place) -}}
{{- end -}}
{{- end -}}

{{/*
Name of the resource: .Values.name, or the release name when empty; fails unless it is a
DNS-1123 label within the kind's limit.
Usage: include "kaos-common.names.name" $
*/}}
{{- define "kaos-common.names.name" -}}
{{- $name := .Values.name | default .Release.Name -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $name) -}}
{{- fail (printf "name: %q is not a DNS-1123 label (lower case letters, digits and '-')" $name) -}}
{{- end -}}
{{- include "kaos-common.names.checkLength" (dict "kind" .Chart.Name "name" $name "field" "name") -}}
{{- $name -}}
{{- end -}}

{{/*
Objects are called <kind>-<name>.
Usage: include "kaos-common.names.fullname" $
*/}}
{{- define "kaos-common.names.fullname" -}}
{{- printf "%s-%s" .Chart.Name (include "kaos-common.names.name" .) -}}
{{- end -}}

{{/*
The route prefix of the chart's kind: agent, modelapi, mcp. The HTTPRoute is <route>-<name>
and matches /<namespace>/<route>/<name>.
Usage: include "kaos-common.names.route" $
*/}}
{{- define "kaos-common.names.route" -}}
{{- (include "kaos-common.names.kind" .Chart.Name | fromJson).route -}}
{{- end -}}
