{{/* The labels every object carries and every selector selects on. */}}
{{- define "elector.labels" -}}
app.kubernetes.io/name: elector
app.kubernetes.io/component: gateway
{{- end }}

{{/* The name of the headless Service of the members' routes. */}}
{{- define "elector.peers" -}}
{{ .Release.Name }}-peers
{{- end }}

{{/* The name of the ConfigMap of the members' configurations. */}}
{{- define "elector.configs" -}}
{{ .Release.Name }}-cluster
{{- end }}
