{{- define "mini.image" -}}
{{ .repository }}/{{ .image }}:{{ .version }}
{{- end -}}
