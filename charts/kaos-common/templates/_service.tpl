{{/*
The workload's Service <kind>-<name>: one port named http, to the container port named http.
Usage: include "kaos-common.service" (dict "context" $ "port" .Values.service.port)
*/}}
{{- define "kaos-common.service" -}}
{{- $ctx := .context -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "kaos-common.names.fullname" $ctx }}
  labels:
    {{- include "kaos-common.labels.standard" $ctx | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "kaos-common.labels.matchLabels" $ctx | nindent 4 }}
  ports:
    - name: http
      port: {{ .port }}
      targetPort: http
      protocol: TCP
{{- end -}}
