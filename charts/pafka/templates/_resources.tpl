{{/* A container's resources without the quantities left empty: "" leaves a limit unset, so
a CPU limit is an option (limits.cpu) rather than a default. */}}
{{- define "pafka.resources" -}}
{{- $out := dict -}}
{{- range $section, $quantities := . -}}
{{- $kept := dict -}}
{{- range $name, $quantity := $quantities -}}
{{- if ne (toString $quantity) "" -}}
{{- $_ := set $kept $name $quantity -}}
{{- end -}}
{{- end -}}
{{- if $kept -}}
{{- $_ := set $out $section $kept -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}
