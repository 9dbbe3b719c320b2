{{/* Written by scripts/generate from kaos.api; do not edit (a test checks it).
Each workload kind (.Chart.Name): its route prefix, its access label prefix, and the
longest name it takes with the place that binds it (see kaos-common.names.name). */}}
{{- define "kaos-common.names.kinds" -}}
modelapi: {route: modelapi, access: uses-modelapi, max: 44, place: "the Helm release modelapi-<name> must fit in 53"}
mcpserver: {route: mcp, access: uses-mcp, max: 43, place: "the Helm release mcpserver-<name> must fit in 53"}
agent: {route: agent, access: peer, max: 47, place: "the Helm release agent-<name> must fit in 53"}
{{- end -}}
