{{/*
Names of the KAOS workloads. A workload chart is named after its kind (agent, modelapi,
mcpserver: .Chart.Name) and renders one resource, <name> (.Values.name, or the release name):
  objects        <kind>-<name>                Deployment, Service, NetworkPolicy, ...
  route          <route>-<name>               the HTTPRoute, matching /<namespace>/<route>/<name>
  access label   kaos.tools/<access>-<name>   carried by the agent pods let in by the NetworkPolicy
Each of these must fit in 63 characters (a DNS-1123 label, and the name part of a label key),
which is where every limit on a name comes from.
*/}}

{{/* The kinds: route prefix and access label prefix (see above). */}}
{{- define "kaos-common.names.kinds" -}}
agent: {route: agent, access: peer}
modelapi: {route: modelapi, access: uses-modelapi}
mcpserver: {route: mcp, access: uses-mcp}
{{- end -}}

{{/* Longest DNS-1123 label: object names and the name part of label keys. */}}
{{- define "kaos-common.names.dnsLabelMax" -}}63{{- end -}}

{{/*
One kind's row, as JSON: {route, access}.
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
The longest name a kind takes, as JSON {max, place}: every place the name goes (objects,
route, access label) must fit in 63 characters; place names the first one that binds.
agent 57 (agent-<name>), modelapi 49 (kaos.tools/uses-modelapi-<name>), mcpserver 53 (mcpserver-<name>).
Usage: include "kaos-common.names.limit" "agent" | fromJson
*/}}
{{- define "kaos-common.names.limit" -}}
{{- $row := include "kaos-common.names.kind" . | fromJson -}}
{{- $dnsMax := include "kaos-common.names.dnsLabelMax" . | int -}}
{{- $places := list (list . (printf "%s-<name>" .)) (list $row.route (printf "%s-<name>" $row.route)) (list $row.access (printf "the label kaos.tools/%s-<name>" $row.access)) -}}
{{- $limit := dict "max" $dnsMax "place" "" -}}
{{- range $places -}}
{{- $max := sub $dnsMax (add1 (len (index . 0))) | int -}}
{{- if lt $max (int $limit.max) -}}
{{- $limit = dict "max" $max "place" (index . 1) -}}
{{- end -}}
{{- end -}}
{{- toJson $limit -}}
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
{{- $limit := include "kaos-common.names.limit" .Chart.Name | fromJson -}}
{{- if gt (len $name) (int $limit.max) -}}
{{- fail (printf "name: %q is longer than %d characters (%s must fit in %s)" $name (int $limit.max) $limit.place (include "kaos-common.names.dnsLabelMax" .)) -}}
{{- end -}}
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
