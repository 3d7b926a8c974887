{{/*
Names, labels and shared blocks. Helpers are named pafka.<component>.<thing>; the chart-wide
ones pafka.<thing>.
*/}}

{{- define "pafka.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pafka.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "pafka.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The recommended app.kubernetes.io labels; pass (dict "context" $ "component" "broker"). */}}
{{- define "pafka.labels" -}}
helm.sh/chart: {{ include "pafka.chart" .context }}
{{ include "pafka.selectorLabels" . }}
app.kubernetes.io/version: {{ .context.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .context.Release.Service }}
app.kubernetes.io/part-of: pafka
{{- with .context.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "pafka.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pafka.name" .context }}
app.kubernetes.io/instance: {{ .context.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "pafka.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "pafka.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "pafka.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Pod-level securityContext for pafka's own pods. */}}
{{- define "pafka.podSecurityContext" -}}
{{- toYaml .Values.podSecurityContext -}}
{{- end -}}

{{- define "pafka.containerSecurityContext" -}}
{{- toYaml .Values.containerSecurityContext -}}
{{- end -}}

{{/* Anti-affinity spreading one component's pods over nodes: (dict "context" $ "component" "broker" "preset" "soft"). */}}
{{- define "pafka.podAntiAffinity" -}}
{{- if eq .preset "hard" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "pafka.selectorLabels" (dict "context" .context "component" .component) | nindent 10 }}
{{- else if eq .preset "soft" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "pafka.selectorLabels" (dict "context" .context "component" .component) | nindent 12 }}
{{- end }}
{{- end -}}

{{/* The service's own /tmp: the root filesystem is read-only. */}}
{{- define "pafka.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- end -}}

{{/* A value as text; whole numbers stay whole (YAML numbers reach templates as float64,
which would otherwise print 86400000 as 8.64e+07). */}}
{{- define "pafka.scalar" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/* Extra PAFKA_<PREFIX>_* variables from a component's `config` map, but for the keys in
`omit` (set by the chart itself from its own values). */}}
{{- define "pafka.configEnv" -}}
{{- range $key, $value := .config }}
{{- if not (has $key ($.omit | default list)) }}
- name: {{ printf "PAFKA_%s_%s" $.prefix $key }}
  value: {{ include "pafka.scalar" $value | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* ---- ZooKeeper ---- */}}

{{- define "pafka.zookeeper.fullname" -}}
{{- printf "%s-zookeeper" (include "pafka.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pafka.zookeeper.headlessServiceName" -}}
{{- printf "%s-headless" (include "pafka.zookeeper.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* server.N=<pod>.<headless>...:2888:3888;2181 for each pod; myid N is the ordinal + 1. */}}
{{- define "pafka.zookeeper.servers" -}}
{{- $servers := list -}}
{{- $fullname := include "pafka.zookeeper.fullname" . -}}
{{- $headless := include "pafka.zookeeper.headlessServiceName" . -}}
{{- range $i := until (int .Values.zookeeper.replicaCount) -}}
{{- $host := printf "%s-%d.%s.%s.svc.%s" $fullname $i $headless $.Release.Namespace $.Values.clusterDomain -}}
{{- $servers = append $servers (printf "server.%d=%s:%d:%d;%d" (add1 $i) $host (int $.Values.zookeeper.ports.follower) (int $.Values.zookeeper.ports.election) (int $.Values.zookeeper.ports.client)) -}}
{{- end -}}
{{- join " " $servers -}}
{{- end -}}

{{/* The connect string every pafka service uses: each ZooKeeper pod, or zookeeper.connect. */}}
{{- define "pafka.zookeeper.connect" -}}
{{- if .Values.zookeeper.enabled -}}
{{- $hosts := list -}}
{{- $fullname := include "pafka.zookeeper.fullname" . -}}
{{- $headless := include "pafka.zookeeper.headlessServiceName" . -}}
{{- range $i := until (int .Values.zookeeper.replicaCount) -}}
{{- $hosts = append $hosts (printf "%s-%d.%s.%s.svc.%s:%d" $fullname $i $headless $.Release.Namespace $.Values.clusterDomain (int $.Values.zookeeper.ports.client)) -}}
{{- end -}}
{{- printf "%s%s" (join "," $hosts) .Values.zookeeper.chroot -}}
{{- else -}}
{{- required "zookeeper.connect is required when zookeeper.enabled is false" .Values.zookeeper.connect -}}
{{- end -}}
{{- end -}}

{{/* ---- broker ---- */}}

{{- define "pafka.broker.fullname" -}}
{{- printf "%s-broker" (include "pafka.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pafka.broker.headlessServiceName" -}}
{{- printf "%s-headless" (include "pafka.broker.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The per-pod DNS domain brokers advertise: <pod>.<this>. */}}
{{- define "pafka.broker.podDomain" -}}
{{- printf "%s.%s.svc.%s" (include "pafka.broker.headlessServiceName" .) .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{- define "pafka.broker.bootstrapServers" -}}
{{- $servers := list -}}
{{- $fullname := include "pafka.broker.fullname" . -}}
{{- $domain := include "pafka.broker.podDomain" . -}}
{{- range $i := until (int .Values.broker.replicaCount) -}}
{{- $servers = append $servers (printf "%s-%d.%s:%d" $fullname $i $domain (int $.Values.broker.ports.kafka)) -}}
{{- end -}}
{{- join "," $servers -}}
{{- end -}}

{{/* ---- controller ---- */}}

{{- define "pafka.controller.fullname" -}}
{{- printf "%s-controller" (include "pafka.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* ---- gateway ---- */}}

{{- define "pafka.gateway.fullname" -}}
{{- printf "%s-gateway" (include "pafka.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pafka.gateway.url" -}}
{{- printf "%s://%s:%d" (include "pafka.gateway.scheme" .) (include "pafka.gateway.serviceHost" .) (int .Values.gateway.service.port) -}}
{{- end -}}

{{/* ---- blocks shared by the components ---- */}}

{{/* A PodDisruptionBudget: (dict "context" $ "component" "broker" "name" <fullname> "pdb" .Values.broker.pdb). */}}
{{- define "pafka.pdb" -}}
{{- if .pdb.create }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  namespace: {{ .context.Release.Namespace }}
  labels:
    {{- include "pafka.labels" (dict "context" .context "component" .component) | nindent 4 }}
spec:
  maxUnavailable: {{ .pdb.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "pafka.selectorLabels" (dict "context" .context "component" .component) | nindent 6 }}
{{- end }}
{{- end -}}

{{/* Scheduling of a component's pods: (dict "context" $ "component" "broker" "values" .Values.broker). */}}
{{- define "pafka.podScheduling" -}}
serviceAccountName: {{ include "pafka.serviceAccountName" .context }}
automountServiceAccountToken: false
{{- with .context.Values.image.pullSecrets }}
imagePullSecrets:
  {{- range . }}
  - name: {{ . }}
  {{- end }}
{{- end }}
{{- if .values.affinity }}
affinity:
  {{- toYaml .values.affinity | nindent 2 }}
{{- else if ne .values.podAntiAffinityPreset "none" }}
affinity:
  {{- include "pafka.podAntiAffinity" (dict "context" .context "component" .component "preset" .values.podAntiAffinityPreset) | nindent 2 }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
