{{/* ---- Kafka listeners, TLS and SASL ----
Brokers get Kafka's listener settings (PAFKA_BROKER_LISTENERS and companions), the gateway and
the controllers the client settings of the internal listener. Certificates and passwords come
from Secrets mounted as files; user names from Secret keys. With the default values (one
PLAINTEXT listener) nothing here renders, so the pods stay as they were. */}}

{{- define "pafka.tls.dir" -}}/etc/pafka/tls{{- end -}}
{{- define "pafka.sasl.dir" -}}/etc/pafka/sasl{{- end -}}

{{/* "true" when the listeners differ from the single PLAINTEXT default. */}}
{{- define "pafka.listeners.custom" -}}
{{- $l := .Values.broker.listeners -}}
{{- if or (ne $l.internal.protocol "PLAINTEXT") $l.external.enabled -}}true{{- end -}}
{{- end -}}

{{- define "pafka.listeners.internalTls" -}}
{{- if hasSuffix "SSL" .Values.broker.listeners.internal.protocol -}}true{{- end -}}
{{- end -}}

{{- define "pafka.listeners.internalSasl" -}}
{{- if hasPrefix "SASL_" .Values.broker.listeners.internal.protocol -}}true{{- end -}}
{{- end -}}

{{/* "true" when any listener in use needs the certificate / offers SASL. */}}
{{- define "pafka.listeners.anyTls" -}}
{{- $ext := .Values.broker.listeners.external -}}
{{- if or (include "pafka.listeners.internalTls" .) (and $ext.enabled (hasSuffix "SSL" $ext.protocol)) -}}true{{- end -}}
{{- end -}}

{{- define "pafka.listeners.anySasl" -}}
{{- $ext := .Values.broker.listeners.external -}}
{{- if or (include "pafka.listeners.internalSasl" .) (and $ext.enabled (hasPrefix "SASL_" $ext.protocol)) -}}true{{- end -}}
{{- end -}}

{{- define "pafka.tls.secretName" -}}
{{- if .Values.tls.existingSecret -}}
{{- .Values.tls.existingSecret -}}
{{- else if .Values.tls.certManager.enabled -}}
{{- printf "%s-tls" (include "pafka.broker.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- fail "a TLS listener needs tls.existingSecret or tls.certManager.enabled" -}}
{{- end -}}
{{- end -}}

{{/* The external listener's advertised host of broker .id: (dict "context" $ "id" "0"). */}}
{{- define "pafka.listeners.externalHost" -}}
{{- $host := required "broker.listeners.external.advertisedHost is required with the external listener" .context.Values.broker.listeners.external.advertisedHost -}}
{{- replace "{id}" (toString .id) $host -}}
{{- end -}}

{{/* A service's SASL identity of sasl.<name>: (dict "context" $ "name" "gateway"). */}}
{{- define "pafka.sasl.secret" -}}
{{- $s := index .context.Values.sasl .name -}}
{{- required (printf "sasl.%s.existingSecret is required when the internal listener uses SASL" .name) $s.existingSecret -}}
{{- end -}}

{{/* ---- brokers ---- */}}

{{- define "pafka.broker.listenerEnv" -}}
{{- if include "pafka.listeners.custom" . }}
{{- $l := .Values.broker.listeners -}}
{{- $listeners := list (printf "INTERNAL://0.0.0.0:%d" (int .Values.broker.ports.kafka)) -}}
{{- $advertised := list (printf "INTERNAL://$(POD_NAME).%s:%d" (include "pafka.broker.podDomain" .) (int .Values.broker.ports.kafka)) -}}
{{- $map := list (printf "INTERNAL:%s" $l.internal.protocol) -}}
{{- if $l.external.enabled -}}
{{- $listeners = append $listeners (printf "EXTERNAL://0.0.0.0:%d" (int $l.external.port)) -}}
{{- $advertised = append $advertised (printf "EXTERNAL://%s:%d" (include "pafka.listeners.externalHost" (dict "context" . "id" "$(PAFKA_BROKER_ID)")) (int $l.external.port)) -}}
{{- $map = append $map (printf "EXTERNAL:%s" $l.external.protocol) -}}
{{- end }}
- name: PAFKA_BROKER_LISTENERS
  value: {{ join "," $listeners | quote }}
- name: PAFKA_BROKER_ADVERTISED_LISTENERS
  value: {{ join "," $advertised | quote }}
- name: PAFKA_BROKER_LISTENER_SECURITY_PROTOCOL_MAP
  value: {{ join "," $map | quote }}
- name: PAFKA_BROKER_INTER_BROKER_LISTENER_NAME
  value: INTERNAL
{{- end }}
{{- if include "pafka.listeners.anyTls" . }}
- name: PAFKA_BROKER_SSL_CERTFILE
  value: {{ printf "%s/tls.crt" (include "pafka.tls.dir" .) | quote }}
- name: PAFKA_BROKER_SSL_KEYFILE
  value: {{ printf "%s/tls.key" (include "pafka.tls.dir" .) | quote }}
- name: PAFKA_BROKER_SSL_CAFILE
  value: {{ printf "%s/ca.crt" (include "pafka.tls.dir" .) | quote }}
- name: PAFKA_BROKER_SSL_CLIENT_AUTH
  value: {{ .Values.tls.clientAuth | quote }}
{{- end }}
{{- if include "pafka.listeners.anySasl" . }}
- name: PAFKA_BROKER_SASL_ENABLED_MECHANISMS
  value: {{ join "," .Values.sasl.mechanisms | quote }}
- name: PAFKA_BROKER_CONNECTIONS_MAX_REAUTH_MS
  value: {{ include "pafka.scalar" .Values.sasl.connectionsMaxReauthMs | quote }}
{{- end }}
{{- if include "pafka.listeners.internalSasl" . }}
{{- $ib := .Values.sasl.interBroker }}
- name: PAFKA_BROKER_SASL_MECHANISM_INTER_BROKER_PROTOCOL
  value: {{ $ib.mechanism | quote }}
- name: PAFKA_BROKER_INTER_BROKER_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ include "pafka.sasl.secret" (dict "context" . "name" "interBroker") | quote }}
      key: {{ $ib.usernameKey | quote }}
- name: PAFKA_BROKER_INTER_BROKER_SASL_PASSWORD_FILE
  value: {{ printf "%s/inter-broker/password" (include "pafka.sasl.dir" .) | quote }}
{{- end }}
{{- include "pafka.broker.authorizerEnv" . }}
{{- end -}}

{{/* Kafka's super.users: pafka's own services' users (their names read from their Secrets
into the pod's environment, then expanded by the kubelet), then broker.authorizer.superUsers. */}}
{{- define "pafka.broker.authorizerEnv" -}}
{{- $a := .Values.broker.authorizer -}}
{{- if $a.enabled }}
{{- $users := list -}}
{{- if include "pafka.listeners.internalSasl" . }}
{{- $users = append $users "User:$(PAFKA_BROKER_INTER_BROKER_SASL_USERNAME)" -}}
{{- range $name := list "controller" "gateway" }}
{{- $s := index $.Values.sasl $name }}
- name: {{ printf "%s_SASL_USERNAME" (upper $name) }}
  valueFrom:
    secretKeyRef:
      name: {{ include "pafka.sasl.secret" (dict "context" $ "name" $name) | quote }}
      key: {{ $s.usernameKey | quote }}
{{- $users = append $users (printf "User:$(%s_SASL_USERNAME)" (upper $name)) -}}
{{- end }}
{{- end }}
- name: PAFKA_BROKER_AUTHORIZER
  value: acl
- name: PAFKA_BROKER_SUPER_USERS
  value: {{ join ";" (concat $users $a.superUsers) | quote }}
- name: PAFKA_BROKER_ALLOW_EVERYONE_IF_NO_ACL_FOUND
  value: {{ $a.allowEveryoneIfNoAclFound | quote }}
{{- end }}
{{- end -}}

{{/* broker.config keys the chart sets itself when its own values ask for them (those win). */}}
{{- define "pafka.broker.ownedConfig" -}}
{{- $owned := list -}}
{{- if include "pafka.listeners.custom" . -}}
{{- $owned = concat $owned (list "LISTENERS" "ADVERTISED_LISTENERS" "LISTENER_SECURITY_PROTOCOL_MAP" "INTER_BROKER_LISTENER_NAME") -}}
{{- end -}}
{{- if include "pafka.listeners.anyTls" . -}}
{{- $owned = concat $owned (list "SSL_CERTFILE" "SSL_KEYFILE" "SSL_CAFILE" "SSL_CLIENT_AUTH") -}}
{{- end -}}
{{- if include "pafka.listeners.anySasl" . -}}
{{- $owned = concat $owned (list "SASL_ENABLED_MECHANISMS" "CONNECTIONS_MAX_REAUTH_MS") -}}
{{- end -}}
{{- if include "pafka.listeners.internalSasl" . -}}
{{- $owned = concat $owned (list "SASL_MECHANISM_INTER_BROKER_PROTOCOL" "INTER_BROKER_SASL_USERNAME" "INTER_BROKER_SASL_PASSWORD_FILE") -}}
{{- end -}}
{{- if .Values.broker.authorizer.enabled -}}
{{- $owned = concat $owned (list "AUTHORIZER" "SUPER_USERS" "ALLOW_EVERYONE_IF_NO_ACL_FOUND") -}}
{{- end -}}
{{- toJson $owned -}}
{{- end -}}

{{- define "pafka.broker.listenerMounts" -}}
{{- if include "pafka.listeners.anyTls" . }}
- name: tls
  mountPath: {{ include "pafka.tls.dir" . }}
  readOnly: true
{{- end }}
{{- if include "pafka.listeners.internalSasl" . }}
- name: sasl-inter-broker
  mountPath: {{ printf "%s/inter-broker" (include "pafka.sasl.dir" .) }}
  readOnly: true
{{- end }}
{{- end -}}

{{- define "pafka.broker.listenerVolumes" -}}
{{- if include "pafka.listeners.anyTls" . }}
- name: tls
  secret:
    secretName: {{ include "pafka.tls.secretName" . | quote }}
    defaultMode: 0440
    items:
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
      - key: ca.crt
        path: ca.crt
{{- end }}
{{- if include "pafka.listeners.internalSasl" . }}
- name: sasl-inter-broker
  secret:
    secretName: {{ include "pafka.sasl.secret" (dict "context" . "name" "interBroker") | quote }}
    defaultMode: 0440
    items:
      - key: {{ .Values.sasl.interBroker.passwordKey | quote }}
        path: password
{{- end }}
{{- end -}}

{{/* ---- the gateway's and controllers' Kafka connections: (dict "context" $ "prefix" "GATEWAY" "name" "gateway") ---- */}}

{{- define "pafka.kafkaClientEnv" -}}
{{- $ctx := .context -}}
{{- if include "pafka.listeners.custom" $ctx }}
- name: {{ printf "PAFKA_%s_SECURITY_PROTOCOL" .prefix }}
  value: {{ $ctx.Values.broker.listeners.internal.protocol | quote }}
- name: {{ printf "PAFKA_%s_LISTENER" .prefix }}
  value: INTERNAL
{{- end }}
{{- if include "pafka.listeners.internalTls" $ctx }}
- name: {{ printf "PAFKA_%s_SSL_CAFILE" .prefix }}
  value: {{ printf "%s/ca.crt" (include "pafka.tls.dir" $ctx) | quote }}
{{- if eq $ctx.Values.tls.clientAuth "required" }}
- name: {{ printf "PAFKA_%s_SSL_CERTFILE" .prefix }}
  value: {{ printf "%s/tls.crt" (include "pafka.tls.dir" $ctx) | quote }}
- name: {{ printf "PAFKA_%s_SSL_KEYFILE" .prefix }}
  value: {{ printf "%s/tls.key" (include "pafka.tls.dir" $ctx) | quote }}
{{- end }}
{{- end }}
{{- if include "pafka.listeners.internalSasl" $ctx }}
{{- $s := index $ctx.Values.sasl .name }}
- name: {{ printf "PAFKA_%s_SASL_MECHANISM" .prefix }}
  value: {{ $s.mechanism | quote }}
- name: {{ printf "PAFKA_%s_SASL_USERNAME" .prefix }}
  valueFrom:
    secretKeyRef:
      name: {{ include "pafka.sasl.secret" (dict "context" $ctx "name" .name) | quote }}
      key: {{ $s.usernameKey | quote }}
- name: {{ printf "PAFKA_%s_SASL_PASSWORD_FILE" .prefix }}
  value: {{ printf "%s/client/password" (include "pafka.sasl.dir" $ctx) | quote }}
{{- end }}
{{- end -}}

{{- define "pafka.kafkaClientMounts" -}}
{{- if include "pafka.listeners.internalTls" .context }}
- name: tls
  mountPath: {{ include "pafka.tls.dir" .context }}
  readOnly: true
{{- end }}
{{- if include "pafka.listeners.internalSasl" .context }}
- name: sasl-client
  mountPath: {{ printf "%s/client" (include "pafka.sasl.dir" .context) }}
  readOnly: true
{{- end }}
{{- end -}}

{{- define "pafka.kafkaClientVolumes" -}}
{{- $ctx := .context -}}
{{- if include "pafka.listeners.internalTls" $ctx }}
- name: tls
  secret:
    secretName: {{ include "pafka.tls.secretName" $ctx | quote }}
    defaultMode: 0440
    items:
      - key: ca.crt
        path: ca.crt
      {{- if eq $ctx.Values.tls.clientAuth "required" }}
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
      {{- end }}
{{- end }}
{{- if include "pafka.listeners.internalSasl" $ctx }}
- name: sasl-client
  secret:
    secretName: {{ include "pafka.sasl.secret" (dict "context" $ctx "name" .name) | quote }}
    defaultMode: 0440
    items:
      - key: {{ (index $ctx.Values.sasl .name).passwordKey | quote }}
        path: password
{{- end }}
{{- end -}}
