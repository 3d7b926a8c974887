{{/* ---- Security: ZooKeeper credentials and the control API's secret ----
Both come from existing Secrets, mounted as files (read through the *_FILE settings), so they
never appear in a pod spec. `control`: whether the component serves or calls the control APIs
(brokers and controllers). */}}

{{- define "pafka.security.zkDir" -}}/etc/pafka/zookeeper{{- end -}}
{{- define "pafka.security.controlDir" -}}/etc/pafka/control{{- end -}}

{{- define "pafka.securityEnv" -}}
{{- $zk := .context.Values.zookeeper.auth -}}
{{- $api := .context.Values.controlApi -}}
{{- if $zk.existingSecret }}
- name: {{ printf "PAFKA_%s_ZK_AUTH_FILE" .prefix }}
  value: {{ printf "%s/%s" (include "pafka.security.zkDir" .) $zk.key | quote }}
- name: {{ printf "PAFKA_%s_ZK_SET_ACL" .prefix }}
  value: {{ $zk.setAcl | quote }}
{{- end }}
{{- if and .control $api.existingSecret }}
- name: {{ printf "PAFKA_%s_CONTROL_SECRET_FILE" .prefix }}
  value: {{ printf "%s/%s" (include "pafka.security.controlDir" .) $api.key | quote }}
{{- end }}
{{- end -}}

{{- define "pafka.securityVolumeMounts" -}}
{{- if .context.Values.zookeeper.auth.existingSecret }}
- name: zookeeper-auth
  mountPath: {{ include "pafka.security.zkDir" . }}
  readOnly: true
{{- end }}
{{- if and .control .context.Values.controlApi.existingSecret }}
- name: control-secret
  mountPath: {{ include "pafka.security.controlDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{- define "pafka.securityVolumes" -}}
{{- $zk := .context.Values.zookeeper.auth -}}
{{- $api := .context.Values.controlApi -}}
{{- if $zk.existingSecret }}
- name: zookeeper-auth
  secret:
    secretName: {{ $zk.existingSecret | quote }}
    defaultMode: 0440
    items:
      - key: {{ $zk.key | quote }}
        path: {{ $zk.key | quote }}
{{- end }}
{{- if and .control $api.existingSecret }}
- name: control-secret
  secret:
    secretName: {{ $api.existingSecret | quote }}
    defaultMode: 0440
    items:
      - key: {{ $api.key | quote }}
        path: {{ $api.key | quote }}
{{- end }}
{{- end -}}
