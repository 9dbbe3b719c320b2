{{/*
An image reference: repository:tag, repository@digest when the tag is "@sha256:...", or the
repository alone; defaultTag stands in for an empty tag.
Usage: include "kaos-common.images.image" (dict "image" .Values.image "defaultTag" .Chart.AppVersion)
*/}}
{{- define "kaos-common.images.image" -}}
{{- $tag := toString (.image.tag | default .defaultTag | default "") -}}
{{- if hasPrefix "@" $tag -}}{{ printf "%s%s" .image.repository $tag }}
{{- else if $tag -}}{{ printf "%s:%s" .image.repository $tag }}
{{- else -}}{{ .image.repository }}
{{- end -}}
{{- end -}}
