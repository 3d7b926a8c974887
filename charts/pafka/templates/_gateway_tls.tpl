{{/* ---- the gateway's HTTPS (gateway.tls) ----
The certificate Secret is mounted read-only and named to the gateway through its
PAFKA_GATEWAY_HTTPS_* settings; everything in the chart that calls the gateway (probes,
ServiceMonitor, helm test, Spark jobs, NOTES) asks these helpers how. With gateway.tls.enabled
false nothing here renders, and the gateway's pods stay as they were. */}}

{{- define "pafka.gateway.tlsDir" -}}/etc/pafka/gateway-tls{{- end -}}

{{- define "pafka.gateway.tls" -}}
{{- if .Values.gateway.tls.enabled -}}true{{- end -}}
{{- end -}}

{{/* "true" when the chart's own callers must present a certificate. */}}
{{- define "pafka.gateway.mtls" -}}
{{- if and .Values.gateway.tls.enabled (eq .Values.gateway.tls.clientAuth "required") -}}true{{- end -}}
{{- end -}}

{{/* "true" when a caller mounts files of the Secret: the CA to check the gateway with, or the
certificate it presents. */}}
{{- define "pafka.gateway.clientFiles" -}}
{{- if and .Values.gateway.tls.enabled (or .Values.gateway.tls.caKey (include "pafka.gateway.mtls" .)) -}}true{{- end -}}
{{- end -}}

{{- define "pafka.gateway.scheme" -}}
{{- if include "pafka.gateway.tls" . -}}https{{- else -}}http{{- end -}}
{{- end -}}

{{/* The name of the gateway's REST port (container and Service): meshes and ingress
controllers read the protocol from it. */}}
{{- define "pafka.gateway.portName" -}}
{{- include "pafka.gateway.scheme" . -}}
{{- end -}}

{{- define "pafka.gateway.serviceHost" -}}
{{- printf "%s.%s.svc.%s" (include "pafka.gateway.fullname" .) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{- define "pafka.gateway.tlsSecretName" -}}
{{- $t := .Values.gateway.tls -}}
{{- if $t.existingSecret -}}
{{- $t.existingSecret -}}
{{- else if $t.certManager.enabled -}}
{{- printf "%s-tls" (include "pafka.gateway.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- fail "gateway.tls.enabled needs gateway.tls.existingSecret or gateway.tls.certManager.enabled" -}}
{{- end -}}
{{- end -}}

{{/* Refusals no schema can state: they depend on several values at once. */}}
{{- define "pafka.gateway.tlsChecks" -}}
{{- $t := .Values.gateway.tls -}}
{{- if and $t.enabled (ne $t.clientAuth "none") (not $t.caKey) -}}
{{- fail (printf "gateway.tls.clientAuth %s verifies client certificates with the CA: set gateway.tls.caKey" $t.clientAuth) -}}
{{- end -}}
{{- if and (include "pafka.gateway.mtls" .) $t.keyPasswordKey .Values.metrics.serviceMonitor.enabled -}}
{{- fail "gateway.tls.clientAuth required with metrics.serviceMonitor: Prometheus presents the gateway's key and cannot read an encrypted one; leave gateway.tls.keyPasswordKey empty" -}}
{{- end -}}
{{- if and (include "pafka.gateway.mtls" .) .Values.spark.enabled (or .Values.spark.eventWindows.enabled .Values.spark.topicToParquet.enabled) -}}
{{- fail "gateway.tls.clientAuth required: the Spark jobs cannot present a client certificate (the pafka connector has no option for one); use requested or none, or disable the Spark applications" -}}
{{- end -}}
{{- end -}}

{{/* Files of the Secret as the gateway (all three) or a caller (the CA, and with mTLS the
certificate and key it presents) mounts them: (dict "context" $ "client" true). */}}
{{- define "pafka.gateway.tlsVolume" -}}
{{- $ctx := .context -}}
{{- $t := $ctx.Values.gateway.tls -}}
- name: gateway-tls
  secret:
    secretName: {{ include "pafka.gateway.tlsSecretName" $ctx | quote }}
    defaultMode: 0440
    items:
      {{- if $t.caKey }}
      - key: {{ $t.caKey | quote }}
        path: ca.crt
      {{- end }}
      {{- if or (not .client) (include "pafka.gateway.mtls" $ctx) }}
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
      {{- end }}
{{- end -}}

{{- define "pafka.gateway.tlsMount" -}}
- name: gateway-tls
  mountPath: {{ include "pafka.gateway.tlsDir" . }}
  readOnly: true
{{- end -}}

{{/* The key's password from the Secret, as variable .name: (dict "context" $ "name" "..."). */}}
{{- define "pafka.gateway.keyPasswordEnv" -}}
{{- $t := .context.Values.gateway.tls -}}
{{- if $t.keyPasswordKey }}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "pafka.gateway.tlsSecretName" .context | quote }}
      key: {{ $t.keyPasswordKey | quote }}
{{- end }}
{{- end -}}

{{/* gateway.config keys the chart sets itself with gateway.tls.enabled (those win). */}}
{{- define "pafka.gateway.ownedConfig" -}}
{{- if include "pafka.gateway.tls" . -}}
{{- toJson (list "HTTPS_CERTFILE" "HTTPS_KEYFILE" "HTTPS_CAFILE" "HTTPS_KEY_PASSWORD" "HTTPS_CLIENT_AUTH" "HTTPS_RELOAD_INTERVAL_MS") -}}
{{- else -}}
[]
{{- end -}}
{{- end -}}

{{- define "pafka.gateway.httpsEnv" -}}
{{- if include "pafka.gateway.tls" . }}
{{- $t := .Values.gateway.tls -}}
{{- $dir := include "pafka.gateway.tlsDir" . }}
- name: PAFKA_GATEWAY_HTTPS_CERTFILE
  value: {{ printf "%s/tls.crt" $dir | quote }}
- name: PAFKA_GATEWAY_HTTPS_KEYFILE
  value: {{ printf "%s/tls.key" $dir | quote }}
{{- include "pafka.gateway.keyPasswordEnv" (dict "context" . "name" "PAFKA_GATEWAY_HTTPS_KEY_PASSWORD") }}
{{- if ne $t.clientAuth "none" }}
- name: PAFKA_GATEWAY_HTTPS_CAFILE
  value: {{ printf "%s/ca.crt" $dir | quote }}
{{- end }}
- name: PAFKA_GATEWAY_HTTPS_CLIENT_AUTH
  value: {{ $t.clientAuth | quote }}
- name: PAFKA_GATEWAY_HTTPS_RELOAD_INTERVAL_MS
  value: {{ include "pafka.scalar" $t.reloadIntervalMs | quote }}
{{- end }}
{{- end -}}

{{/* A probe of the gateway's `path`: (dict "context" $ "path" "/readyz"). HTTP or HTTPS GET by
the kubelet; with mTLS a GET from inside the container presenting the gateway's own certificate
(the kubelet cannot present one), with the gateway's own settings so it asks what it serves. */}}
{{- define "pafka.gateway.probeAction" -}}
{{- if include "pafka.gateway.mtls" .context }}
exec:
  command:
    - python
    - -c
    - |-
      import http.client, os, ssl, sys
      env = os.environ
      ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
      ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
      ctx.load_cert_chain(env["PAFKA_GATEWAY_HTTPS_CERTFILE"], env["PAFKA_GATEWAY_HTTPS_KEYFILE"], env.get("PAFKA_GATEWAY_HTTPS_KEY_PASSWORD"))
      conn = http.client.HTTPSConnection(env["PAFKA_GATEWAY_HOST"], int(env["PAFKA_GATEWAY_PORT"]), context=ctx, timeout=4)
      conn.request("GET", sys.argv[1])
      sys.exit(0 if 200 <= conn.getresponse().status < 400 else 1)
    - {{ .path | quote }}
timeoutSeconds: 5
{{- else }}
httpGet:
  path: {{ .path }}
  port: {{ include "pafka.gateway.portName" .context }}
  {{- if include "pafka.gateway.tls" .context }}
  scheme: HTTPS
  {{- end }}
{{- end }}
{{- end -}}
