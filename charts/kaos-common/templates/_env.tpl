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
