{{/* ---- Containers running one pafka command: the services' own SCRAM users (init
containers) and the provisioning Job's steps ---- */}}

{{/* The image, resources and lockdown of a container running one pafka command (the
provisioning Job's, the services' user init containers). */}}
{{- define "pafka.cliContainer" -}}
image: {{ include "pafka.image" . | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
resources:
  requests:
    cpu: 10m
    memory: 64Mi
  limits:
    memory: 256Mi
securityContext:
  {{- include "pafka.containerSecurityContext" . | nindent 2 }}
{{- end -}}

{{/* `--mechanism M` for each of provisioning.users.mechanisms, as a JSON list. */}}
{{- define "pafka.sasl.mechanismArgs" -}}
{{- $args := list -}}
{{- range .Values.provisioning.users.mechanisms -}}
{{- $args = concat $args (list "--mechanism" .) -}}
{{- end -}}
{{- toJson $args -}}
{{- end -}}

{{/* A service's own SCRAM user, created (or its password set again) by an init container
before the service starts: brokers replicate, and the gateway and controllers become ready,
only once it exists, which a post-install hook would be too late for under `helm install
--wait`. (dict "context" $ "name" "interBroker" "volume" "sasl-inter-broker"). */}}
{{- define "pafka.sasl.userInitContainers" -}}
{{- $ctx := .context -}}
{{- if include "pafka.listeners.internalSasl" $ctx }}
{{- $s := index $ctx.Values.sasl .name }}
initContainers:
  - name: scram-user
    {{- include "pafka.cliContainer" $ctx | nindent 4 }}
    command: ["pafka"]
    args:
      - users
      - create
      - "$(SASL_USERNAME)"
      {{- range include "pafka.sasl.mechanismArgs" $ctx | fromJsonArray }}
      - {{ . | quote }}
      {{- end }}
      - --password-file
      - {{ printf "%s/%s/password" (include "pafka.sasl.dir" $ctx) (ternary "inter-broker" "client" (eq .name "interBroker")) | quote }}
      - --zookeeper
      - {{ include "pafka.zookeeper.connect" $ctx | quote }}
    env:
      - name: SASL_USERNAME
        valueFrom:
          secretKeyRef:
            name: {{ include "pafka.sasl.secret" (dict "context" $ctx "name" .name) | quote }}
            key: {{ $s.usernameKey | quote }}
      {{- include "pafka.securityEnv" (dict "context" $ctx "prefix" "CLI" "control" false) | nindent 6 }}
    volumeMounts:
      - name: tmp
        mountPath: /tmp
      - name: {{ .volume }}
        mountPath: {{ printf "%s/%s" (include "pafka.sasl.dir" $ctx) (ternary "inter-broker" "client" (eq .name "interBroker")) }}
        readOnly: true
      {{- include "pafka.securityVolumeMounts" (dict "context" $ctx "prefix" "CLI" "control" false) | nindent 6 }}
{{- end }}
{{- end -}}
