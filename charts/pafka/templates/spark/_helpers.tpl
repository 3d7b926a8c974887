{{/* ---- spark: the Spark driver's account and the example jobs' SparkApplications ---- */}}

{{- define "pafka.spark.fullname" -}}
{{- printf "%s-spark" (include "pafka.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pafka.spark.serviceAccountName" -}}
{{- default (include "pafka.spark.fullname" .) .Values.spark.serviceAccount.name -}}
{{- end -}}

{{/* The job image: the Dockerfile's `spark` target. */}}
{{- define "pafka.spark.image" -}}
{{- $tag := default .Chart.AppVersion .Values.spark.image.tag -}}
{{- if .Values.spark.image.digest -}}
{{- printf "%s@%s" .Values.spark.image.repository .Values.spark.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.spark.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* Where the image keeps spark-jobs/ (the Dockerfile's spark stage copies it there). */}}
{{- define "pafka.spark.jobFile" -}}
{{- printf "local:///opt/pafka/spark-jobs/%s" . -}}
{{- end -}}

{{/*
A SparkApplication (Kubeflow spark-operator) running one job of spark-jobs/:
(dict "context" $ "name" "event-windows" "file" "event_windows.py" "arguments" (list ...)
      "restartPolicy" (dict ...)).
*/}}
{{- define "pafka.spark.application" -}}
{{- $ := .context -}}
{{- $spark := $.Values.spark -}}
apiVersion: sparkoperator.k8s.io/v1beta2
kind: SparkApplication
metadata:
  name: {{ printf "%s-%s" (include "pafka.fullname" $) .name | trunc 63 | trimSuffix "-" }}
  namespace: {{ $.Release.Namespace }}
  labels:
    {{- include "pafka.labels" (dict "context" $ "component" "spark") | nindent 4 }}
spec:
  type: Python
  pythonVersion: "3"
  mode: cluster
  image: {{ include "pafka.spark.image" $ | quote }}
  imagePullPolicy: {{ $spark.image.pullPolicy }}
  {{- with $.Values.image.pullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  sparkVersion: {{ $spark.sparkVersion | quote }}
  mainApplicationFile: {{ include "pafka.spark.jobFile" .file | quote }}
  arguments:
    {{- range .arguments }}
    - {{ . | quote }}
    {{- end }}
  {{- $conf := deepCopy $spark.sparkConf }}
  {{- with $spark.tokenSecret.name }}
  {{- /* Spark puts the Secret's key into the driver pod's environment, for the job to read. */}}
  {{- $_ := set $conf "spark.kubernetes.driver.secretKeyRef.PAFKA_SPARK_TOKEN" (printf "%s:%s" . $spark.tokenSecret.key) }}
  {{- end }}
  {{- if and (include "pafka.gateway.tls" $) $spark.gatewayCa.secretName }}
  {{- /* The gateway's CA in driver and executors (both call it), where the connector's HTTP
  client (httpx) looks for the CAs to trust. */}}
  {{- $dir := "/etc/pafka/gateway-ca" }}
  {{- $ca := printf "%s/%s" $dir $spark.gatewayCa.key }}
  {{- $_ := set $conf (printf "spark.kubernetes.driver.secrets.%s" $spark.gatewayCa.secretName) $dir }}
  {{- $_ := set $conf (printf "spark.kubernetes.executor.secrets.%s" $spark.gatewayCa.secretName) $dir }}
  {{- $_ := set $conf "spark.kubernetes.driverEnv.SSL_CERT_FILE" $ca }}
  {{- $_ := set $conf "spark.executorEnv.SSL_CERT_FILE" $ca }}
  {{- end }}
  {{- with $conf }}
  sparkConf:
    {{- range $key, $value := . }}
    {{ $key | quote }}: {{ include "pafka.scalar" $value | quote }}
    {{- end }}
  {{- end }}
  restartPolicy:
    {{- toYaml .restartPolicy | nindent 4 }}
  driver:
    cores: {{ $spark.driver.cores }}
    memory: {{ $spark.driver.memory | quote }}
    serviceAccount: {{ include "pafka.spark.serviceAccountName" $ }}
    labels:
      {{- include "pafka.selectorLabels" (dict "context" $ "component" "spark-driver") | nindent 6 }}
    podSecurityContext:
      {{- include "pafka.podSecurityContext" $ | nindent 6 }}
    securityContext:
      {{- include "pafka.spark.containerSecurityContext" $ | nindent 6 }}
  executor:
    instances: {{ $spark.executor.instances }}
    cores: {{ $spark.executor.cores }}
    memory: {{ $spark.executor.memory | quote }}
    labels:
      {{- include "pafka.selectorLabels" (dict "context" $ "component" "spark-executor") | nindent 6 }}
    podSecurityContext:
      {{- include "pafka.podSecurityContext" $ | nindent 6 }}
    securityContext:
      {{- include "pafka.spark.containerSecurityContext" $ | nindent 6 }}
{{- end -}}

{{/* The chart's pod security context applies as is (the spark image's user is 10001 too);
its container security context, but a writable root filesystem: the driver and
executors write scratch files outside the volumes Spark mounts (Python workers under /tmp,
the driver's work directory). */}}
{{- define "pafka.spark.containerSecurityContext" -}}
{{- toYaml (set (deepCopy .Values.containerSecurityContext) "readOnlyRootFilesystem" false) -}}
{{- end -}}
