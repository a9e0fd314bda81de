{{/*
Names and labels shared by the chart's objects.

pyscheduler.fullname: the release's prefix for the objects it owns (the Deployment, Service,
ServiceAccount, RBAC, DaemonSet, monitors). Not used for the queues ConfigMap or the Lease:
the shim reads the ConfigMap named pyscheduler-configs (else yunikorn-configs) and elects its
leader through the Lease named pyscheduler in its namespace, whatever the release is called
(pyscheduler_k8s/configuration.py, leader.py), so one release per namespace.
*/}}

{{- define "pyscheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pyscheduler.fullname" -}}
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

{{/* The reporter agents' objects: the fullname with a suffix, within 63 characters. */}}
{{- define "pyscheduler.reporterAgentName" -}}
{{- printf "%s-reporter-agent" (include "pyscheduler.fullname" . | trunc 48 | trimSuffix "-") -}}
{{- end -}}

{{- define "pyscheduler.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels every object of the release carries. */}}
{{- define "pyscheduler.labels" -}}
helm.sh/chart: {{ include "pyscheduler.chart" . }}
app.kubernetes.io/name: {{ include "pyscheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: pyscheduler
{{- end -}}

{{/* The scheduler's pods: what its Deployment, Service and monitors select. */}}
{{- define "pyscheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pyscheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{/* The reporter agents' pods. */}}
{{- define "pyscheduler.reporterAgentSelectorLabels" -}}
app.kubernetes.io/name: {{ include "pyscheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: reporter-agent
{{- end -}}

{{/* The scheduler's service account: made by the chart (its fullname unless named) or an existing one. */}}
{{- define "pyscheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "pyscheduler.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name: the existing service account to run as (serviceAccount.create is false)" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The image both the scheduler and the agents run: repository:tag, the tag defaulting to the appVersion. */}}
{{- define "pyscheduler.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The queues ConfigMap's name: fixed by the shim (see above). */}}
{{- define "pyscheduler.configMapName" -}}
pyscheduler-configs
{{- end -}}
