{{/* Chart name, overridable with nameOverride. */}}
{{- define "riskwatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Resource name prefix: the release name, plus the chart name unless the release name holds it already.
Role suffixes (-api, -worker, -scheduler, -migrate, -metrics) are at most 10 characters, hence 53.
*/}}
{{- define "riskwatch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 53 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 53 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 53 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels shared by every pod of the release, whatever its role. */}}
{{- define "riskwatch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "riskwatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "riskwatch.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "riskwatch.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one role. Call with (dict "root" $ "role" "api"). */}}
{{- define "riskwatch.roleSelectorLabels" -}}
{{ include "riskwatch.selectorLabels" .root }}
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{- define "riskwatch.roleLabels" -}}
{{ include "riskwatch.labels" .root }}
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{/* The one image of every role: repository@digest, or repository:tag (default: appVersion). */}}
{{- define "riskwatch.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{- define "riskwatch.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "riskwatch.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "riskwatch.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "riskwatch.fullname" .) }}
{{- end }}

{{/* Non-secret settings, as environment variables (the ConfigMap's data). */}}
{{- define "riskwatch.configData" -}}
{{- $c := .Values.config -}}
RISKWATCH_HOST: "0.0.0.0"
PORT: {{ .Values.containerPorts.http | int | quote }}
METRICS_PORT: {{ .Values.containerPorts.metrics | int | quote }}
LOG_LEVEL: {{ .Values.logLevel | quote }}
RISKWATCH_TRUST_PROXY: {{ $c.trustProxy | quote }}
RISKWATCH_API_PROCESSES: {{ $c.apiProcesses | int | quote }}
RISKWATCH_BODY_LIMIT_KB: {{ $c.bodyLimitKb | int | quote }}
RISKWATCH_SHUTDOWN_TIMEOUT_MS: {{ $c.shutdownTimeoutMs | int | quote }}
DATABASE_POOL_MAX: {{ $c.databasePoolMax | int | quote }}
REDIS_KEY_PREFIX: {{ $c.redisKeyPrefix | quote }}
REDIS_CLUSTER_NODES: {{ $c.redisClusterNodes | quote }}
RISKWATCH_API_KEY_CACHE_MS: {{ $c.apiKeyCacheMs | int | quote }}
RISKWATCH_UNKNOWN_KEY_CACHE_MS: {{ $c.unknownKeyCacheMs | int | quote }}
RISKWATCH_MAX_API_KEYS_PER_ACCOUNT: {{ $c.maxApiKeysPerAccount | int | quote }}
RISKWATCH_RATE_LIMIT_DEFAULT_PER_MIN: {{ $c.rateLimitDefaultPerMin | int | quote }}
RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT: {{ $c.maxListEntriesPerAccount | int | quote }}
RISKWATCH_USAGE_RETENTION_DAYS: {{ $c.usageRetentionDays | int | quote }}
RISKWATCH_AUDIT_RETENTION_DAYS: {{ $c.auditRetentionDays | int | quote }}
RISKWATCH_SCREENINGS_RETENTION_DAYS: {{ $c.screeningsRetentionDays | int | quote }}
RISKWATCH_SCREENINGS_CHUNK_CONCURRENCY: {{ $c.screeningsChunkConcurrency | int | quote }}
RISKWATCH_SCREENINGS_PROVIDER_SHARE_PCT: {{ $c.screeningsProviderSharePct | int | quote }}
RISKWATCH_IMPACT_REFRESH_CRON: {{ $c.impactRefreshCron | quote }}
RISKWATCH_USAGE_PRUNE_CRON: {{ $c.usagePruneCron | quote }}
RISKWATCH_WATCHLISTS_CRON: {{ $c.watchlistsCron | quote }}
RISKWATCH_WEBHOOKS_SWEEP_CRON: {{ $c.webhooksSweepCron | quote }}
RISKWATCH_EVENTS_PRUNE_CRON: {{ $c.eventsPruneCron | quote }}
RISKWATCH_AUDIT_PRUNE_CRON: {{ $c.auditPruneCron | quote }}
RISKWATCH_PARTITIONS_MAINTAIN_CRON: {{ $c.partitionsMaintainCron | quote }}
RISKWATCH_PARTITIONS_DAYS_AHEAD: {{ $c.partitionsDaysAhead | quote }}
RISKWATCH_SCREENINGS_PRUNE_CRON: {{ $c.screeningsPruneCron | quote }}
RISKWATCH_WEBHOOK_RETRY_SCHEDULE_S: {{ $c.webhooks.retryScheduleS | quote }}
RISKWATCH_WEBHOOK_RETRY_JITTER_PCT: {{ $c.webhooks.retryJitterPct | int | quote }}
RISKWATCH_WEBHOOK_RETRY_AFTER_MAX_S: {{ $c.webhooks.retryAfterMaxS | int | quote }}
RISKWATCH_WEBHOOK_TIMEOUT_MS: {{ $c.webhooks.timeoutMs | int | quote }}
RISKWATCH_WEBHOOK_MAX_RESPONSE_BYTES: {{ $c.webhooks.maxResponseBytes | int | quote }}
RISKWATCH_WEBHOOK_DISABLE_AFTER_FAILING_S: {{ $c.webhooks.disableAfterFailingS | int | quote }}
RISKWATCH_WEBHOOK_SECRET_OVERLAP_S: {{ $c.webhooks.secretOverlapS | int | quote }}
RISKWATCH_WEBHOOK_ALLOW_CIDRS: {{ $c.webhooks.allowCidrs | quote }}
RISKWATCH_WEBHOOK_ALLOW_HTTP: {{ $c.webhooks.allowHttp | quote }}
RISKWATCH_WEBHOOK_DELIVERY_CONCURRENCY: {{ $c.webhooks.deliveryConcurrency | int | quote }}
RISKWATCH_EVENT_RETENTION_DAYS: {{ $c.webhooks.eventRetentionDays | int | quote }}
RISKWATCH_WATCHLIST_DEFAULT_SCHEDULE: {{ $c.watchlists.defaultSchedule | quote }}
RISKWATCH_WATCHLIST_DEFAULT_DEEP_SCHEDULE: {{ $c.watchlists.defaultDeepSchedule | quote }}
RISKWATCH_MAX_WATCHLIST_ENTRIES_PER_ACCOUNT: {{ $c.watchlists.maxEntriesPerAccount | int | quote }}
RISKWATCH_MAX_WATCHLISTS_PER_ACCOUNT: {{ $c.watchlists.maxPerAccount | int | quote }}
RISKWATCH_WATCHLIST_RESCAN_MIN_INTERVAL_S: {{ $c.watchlists.rescanMinIntervalS | int | quote }}
RISKWATCH_WATCHLIST_SCAN_CONCURRENCY: {{ $c.watchlists.scanConcurrency | int | quote }}
RISKWATCH_WATCHLIST_DEEP_CONCURRENCY: {{ $c.watchlists.deepConcurrency | int | quote }}
RISKWATCH_IMPACT_RELOAD_MS: {{ $c.impactReloadMs | int | quote }}
JWT_ALGORITHMS: {{ $c.jwt.algorithms | quote }}
JWT_ISSUER: {{ $c.jwt.issuer | quote }}
JWT_AUDIENCE: {{ $c.jwt.audience | quote }}
JWT_PUBLIC_KEY: {{ $c.jwt.publicKey | quote }}
JWT_JWKS_URL: {{ $c.jwt.jwksUrl | quote }}
JWT_JWKS_REFRESH_S: {{ $c.jwt.jwksRefreshS | int | quote }}
JWT_JWKS_MIN_REFRESH_S: {{ $c.jwt.jwksMinRefreshS | int | quote }}
JWT_CLOCK_TOLERANCE_S: {{ $c.jwt.clockToleranceS | int | quote }}
JWT_MAX_AGE_S: {{ $c.jwt.maxAgeS | int | quote }}
JWT_ACCOUNT_CLAIM: {{ $c.jwt.accountClaim | quote }}
JWT_ROLES_CLAIM: {{ $c.jwt.rolesClaim | quote }}
JWT_KEY_ADMIN_ROLE: {{ $c.jwt.keyAdminRole | quote }}
RISKWATCH_RPC_DEADLINE_MS: {{ $c.rpc.deadlineMs | int | quote }}
RISKWATCH_RPC_TIMEOUT_MS: {{ $c.rpc.timeoutMs | int | quote }}
RISKWATCH_RPC_RETRIES: {{ $c.rpc.retries | int | quote }}
RISKWATCH_RPC_BACKOFF_BASE_MS: {{ $c.rpc.backoffBaseMs | int | quote }}
RISKWATCH_RPC_BACKOFF_MAX_MS: {{ $c.rpc.backoffMaxMs | int | quote }}
RISKWATCH_RPC_RATE_PER_S: {{ $c.rpc.ratePerS | int | quote }}
RISKWATCH_RPC_CONCURRENCY: {{ $c.rpc.concurrency | int | quote }}
RISKWATCH_RPC_BATCH_MAX: {{ $c.rpc.batchMax | int | quote }}
RISKWATCH_RPC_CIRCUIT_FAILURES: {{ $c.rpc.circuitFailures | int | quote }}
RISKWATCH_RPC_CIRCUIT_COOLDOWN_MIN_MS: {{ $c.rpc.circuitCooldownMinMs | int | quote }}
RISKWATCH_RPC_CIRCUIT_COOLDOWN_MS: {{ $c.rpc.circuitCooldownMs | int | quote }}
RISKWATCH_RPC_MAX_RESPONSE_MIB: {{ $c.rpc.maxResponseMib | int | quote }}
RISKWATCH_RPC_MAX_BUFFERED_MIB: {{ $c.rpc.maxBufferedMib | int | quote }}
RISKWATCH_RPC_RETRY_AFTER_MAX_MS: {{ $c.rpc.retryAfterMaxMs | int | quote }}
RISKWATCH_RISK_DEADLINE_MS: {{ $c.risk.deadlineMs | int | quote }}
RISKWATCH_RISK_RECENT_TRANSACTIONS: {{ $c.risk.recentTransactions | int | quote }}
RISKWATCH_RISK_CACHE_TTL_LOW_S: {{ $c.risk.cacheTtlS.low | int | quote }}
RISKWATCH_RISK_CACHE_TTL_MEDIUM_S: {{ $c.risk.cacheTtlS.medium | int | quote }}
RISKWATCH_RISK_CACHE_TTL_HIGH_S: {{ $c.risk.cacheTtlS.high | int | quote }}
RISKWATCH_RISK_CACHE_TTL_CRITICAL_S: {{ $c.risk.cacheTtlS.critical | int | quote }}
RISKWATCH_PREFLIGHT_DEADLINE_MS: {{ $c.risk.preflight.deadlineMs | int | quote }}
RISKWATCH_PREFLIGHT_FAIL_MODE: {{ $c.risk.preflight.failMode | quote }}
RISKWATCH_PREFLIGHT_POLICY_NAME: {{ $c.risk.preflight.policyName | quote }}
RISKWATCH_KNOWN_WALLET_IMPLEMENTATIONS: {{ $c.risk.knownWalletImplementations | toJson | quote }}
RISKWATCH_EVM_ROUTERS: {{ $c.risk.evm.routers | toJson | quote }}
RISKWATCH_EVM_KNOWN_TOKENS: {{ $c.risk.evm.knownTokens | toJson | quote }}
RISKWATCH_EVM_APPROVALS_LOOKBACK_DAYS: {{ $c.risk.evm.approvalsLookbackDays | quote }}
{{- with .Values.releaseId }}
RISKWATCH_RELEASE_ID: {{ . | quote }}
{{- end }}
{{- range $name, $value := .Values.extraConfig }}
{{ $name }}: {{ $value | quote }}
{{- end }}
{{- end }}

{{/*
The built-in networks with node provider URLs: the key of each under secrets.rpcUrls (and
secrets.existingSecretKeys.rpcUrls), and its environment variable (rpcEnvName in src/chains/settings.ts).
*/}}
{{- define "riskwatch.rpcNetworks" -}}
solanaMainnet: RISKWATCH_RPC_SOLANA_MAINNET
solanaDevnet: RISKWATCH_RPC_SOLANA_DEVNET
solanaTestnet: RISKWATCH_RPC_SOLANA_TESTNET
ethereumMainnet: RISKWATCH_RPC_ETHEREUM_MAINNET
ethereumSepolia: RISKWATCH_RPC_ETHEREUM_SEPOLIA
baseMainnet: RISKWATCH_RPC_BASE_MAINNET
arbitrumMainnet: RISKWATCH_RPC_ARBITRUM_MAINNET
optimismMainnet: RISKWATCH_RPC_OPTIMISM_MAINNET
polygonMainnet: RISKWATCH_RPC_POLYGON_MAINNET
bscMainnet: RISKWATCH_RPC_BSC_MAINNET
{{- end }}

{{/* The chart-created Secret's data (base64). Empty values are left out: see secrets in values.yaml. */}}
{{- define "riskwatch.secretData" -}}
{{- with .Values.secrets }}
{{- with .databaseUrl }}
DATABASE_URL: {{ . | b64enc }}
{{- end }}
{{- with .redisUrl }}
REDIS_URL: {{ . | b64enc }}
{{- end }}
{{- with .agentKeys }}
AGENT_KEYS: {{ join "," . | b64enc }}
{{- end }}
{{- with .jwtSecret }}
JWT_SECRET: {{ . | b64enc }}
{{- end }}
{{- with .secretsKey }}
RISKWATCH_SECRETS_KEY: {{ . | b64enc }}
{{- end }}
{{- with .secretsPreviousKeys }}
RISKWATCH_SECRETS_PREVIOUS_KEYS: {{ join "," . | b64enc }}
{{- end }}
{{- end }}
{{- with .Values.worker.keda }}
{{- if and .enabled .redis.passwordKey (not .redis.authenticationRef) }}
{{- with (include "riskwatch.kedaRedis" $ | fromYaml).password }}
{{ $.Values.worker.keda.redis.passwordKey }}: {{ . | b64enc }}
{{- end }}
{{- end }}
{{- end }}
{{- $rpcUrls := .Values.secrets.rpcUrls | default dict }}
{{- range $network, $env := include "riskwatch.rpcNetworks" . | fromYaml }}
{{- with index $rpcUrls $network }}
{{ $env }}: {{ join "," . | b64enc }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Secret environment variables, from the Secret `.secretName` whose keys are `.keys` (the Secret's key for
each of databaseUrl, redisUrl, agentKeys, jwtSecret, secretsKey, secretsPreviousKeys, and under rpcUrls for
each network). DATABASE_URL, REDIS_URL and RISKWATCH_SECRETS_KEY are mandatory (a missing key keeps the pod
from starting, with an event naming it); AGENT_KEYS, JWT_SECRET, RISKWATCH_SECRETS_PREVIOUS_KEYS and the
RISKWATCH_RPC_<CHAIN>_<NETWORK> variables are optional (a network whose key is absent is not configured).
*/}}
{{- define "riskwatch.secretEnv" -}}
{{- $ref := . }}
{{- $optional := list "AGENT_KEYS" "JWT_SECRET" "RISKWATCH_SECRETS_PREVIOUS_KEYS" }}
{{- range $env, $field := dict "DATABASE_URL" "databaseUrl" "REDIS_URL" "redisUrl" "AGENT_KEYS" "agentKeys" "JWT_SECRET" "jwtSecret" "RISKWATCH_SECRETS_KEY" "secretsKey" "RISKWATCH_SECRETS_PREVIOUS_KEYS" "secretsPreviousKeys" }}
- name: {{ $env }}
  valueFrom:
    secretKeyRef:
      name: {{ $ref.secretName }}
      key: {{ index $ref.keys $field }}
      optional: {{ has $env $optional }}
{{- end }}
{{- range $network, $env := include "riskwatch.rpcNetworks" . | fromYaml }}
- name: {{ $env }}
  valueFrom:
    secretKeyRef:
      name: {{ $ref.secretName }}
      key: {{ index $ref.keys.rpcUrls $network }}
      optional: true
{{- end }}
{{- end }}

{{/* The keys of the chart-created Secret: each value under the name of its environment variable. */}}
{{- define "riskwatch.chartSecretKeys" -}}
databaseUrl: DATABASE_URL
redisUrl: REDIS_URL
agentKeys: AGENT_KEYS
jwtSecret: JWT_SECRET
secretsKey: RISKWATCH_SECRETS_KEY
secretsPreviousKeys: RISKWATCH_SECRETS_PREVIOUS_KEYS
rpcUrls:
  {{- include "riskwatch.rpcNetworks" . | nindent 2 }}
{{- end }}

{{/* The Secret reference of the long-running pods: (dict "secretName" … "keys" …). */}}
{{- define "riskwatch.secretRef" -}}
{{- if .Values.secrets.existingSecret }}
{{- toYaml (dict "secretName" .Values.secrets.existingSecret "keys" .Values.secrets.existingSecretKeys) }}
{{- else }}
{{- toYaml (dict "secretName" (include "riskwatch.fullname" .) "keys" (include "riskwatch.chartSecretKeys" . | fromYaml)) }}
{{- end }}
{{- end }}

{{/*
The environment of a role's container (same arguments as riskwatch.container): the Secret's variables, then
NODE_OPTIONS with the heap percentage of the role (<role>.heapPercent; none for 0 or null, nor when extraEnv
or <role>.env sets NODE_OPTIONS itself; after a NODE_OPTIONS of extraConfig, which it would otherwise hide),
then extraEnv, then <role>.env (which wins over an extraEnv variable of the same name).
*/}}
{{- define "riskwatch.env" -}}
{{- $v := .root.Values }}
{{- $roleValues := index $v .role }}
{{- $roleEnv := $roleValues.env | default list }}
{{- $roleNames := list }}
{{- range $roleEnv }}
{{- $roleNames = append $roleNames .name }}
{{- end }}
{{- $names := $roleNames }}
{{- range $v.extraEnv }}
{{- $names = append $names .name }}
{{- end }}
{{- include "riskwatch.secretEnv" .secretRef | trim }}
{{- $heap := $roleValues.heapPercent | default 0 | int }}
{{- if and $heap (not (has "NODE_OPTIONS" $names)) }}
{{- $inherited := index ($v.extraConfig | default dict) "NODE_OPTIONS" | default "" | toString }}
- name: NODE_OPTIONS
  value: {{ printf "%s --max-old-space-size-percentage=%d" $inherited $heap | trim | quote }}
{{- end }}
{{- range $v.extraEnv }}
{{- if not (has .name $roleNames) }}
- {{ toYaml . | indent 2 | trim }}
{{- end }}
{{- end }}
{{- range $roleEnv }}
- {{ toYaml . | indent 2 | trim }}
{{- end }}
{{- end }}

{{/*
The riskwatch container of a role. Call with (dict "root" $ "role" "api" "configMap" NAME "secretRef" REF
"resources" MAP), REF as riskwatch.secretRef makes it.
The role is the command; the image's entrypoint (tini -- node dist/src/main.js) is kept.
*/}}
{{- define "riskwatch.container" -}}
{{- $root := .root }}
{{- $v := $root.Values -}}
- name: {{ .role }}
  image: {{ include "riskwatch.image" $root | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  args: [{{ .role | quote }}]
  securityContext:
    {{- toYaml $v.securityContext | nindent 4 }}
  envFrom:
    - configMapRef:
        name: {{ .configMap }}
    {{- with $v.extraEnvFrom }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  env:
    {{- include "riskwatch.env" . | trim | nindent 4 }}
  {{- if ne .role "migrate" }}
  ports:
    {{- if eq .role "api" }}
    - name: http
      containerPort: {{ $v.containerPorts.http | int }}
      protocol: TCP
    {{- end }}
    - name: metrics
      containerPort: {{ $v.containerPorts.metrics | int }}
      protocol: TCP
  {{- end }}
  {{- if eq .role "api" }}
  # The process is up: /healthz answers without touching PostgreSQL or Redis, so a database outage
  # makes the API unready (below), never restarts it.
  startupProbe:
    httpGet:
      path: /healthz
      port: http
    periodSeconds: 2
    failureThreshold: 30
  livenessProbe:
    httpGet:
      path: /healthz
      port: http
    periodSeconds: 10
    timeoutSeconds: 3
    failureThreshold: 3
  # PostgreSQL and Redis reachable and no migration pending; fails first thing on SIGTERM.
  readinessProbe:
    httpGet:
      path: /readyz
      port: http
    periodSeconds: 5
    timeoutSeconds: 3
    failureThreshold: 2
  {{- if $v.api.preStopSleepSeconds }}
  lifecycle:
    preStop:
      exec:
        command: ["sleep", {{ $v.api.preStopSleepSeconds | int | toString | quote }}]
  {{- end }}
  {{- else if ne .role "migrate" }}
  # worker and scheduler serve no HTTP API; their metrics listener answering shows the event loop runs.
  startupProbe:
    httpGet:
      path: /metrics
      port: metrics
    periodSeconds: 2
    failureThreshold: 30
  livenessProbe:
    httpGet:
      path: /metrics
      port: metrics
    periodSeconds: 15
    timeoutSeconds: 5
    failureThreshold: 3
  {{- end }}
  {{- with .resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: tmp
      mountPath: /tmp
    {{- with $v.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end }}

{{/* Pod spec fields shared by every role, after `containers`. Call with (dict "root" $ "serviceAccountName" NAME). */}}
{{- define "riskwatch.podCommon" -}}
serviceAccountName: {{ .serviceAccountName }}
{{- with .root }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: tmp
    emptyDir:
      sizeLimit: {{ .Values.tmpSizeLimit }}
  {{- with .Values.extraVolumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- end }}

{{/* Pod annotations from values, plus the Prometheus scrape annotations when asked for. */}}
{{- define "riskwatch.podAnnotations" -}}
{{- if .Values.metrics.podAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.containerPorts.metrics | int | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- with .Values.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Stops the render when the grace period cannot cover the shutdown the pods are configured for. */}}
{{- define "riskwatch.checkGracePeriod" -}}
{{- $grace := int .Values.terminationGracePeriodSeconds }}
{{- $needed := add (int .Values.api.preStopSleepSeconds) (div (add (int .Values.config.shutdownTimeoutMs) 999) 1000) }}
{{- if le $grace $needed }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed api.preStopSleepSeconds + config.shutdownTimeoutMs/1000 (%d s), or pods are killed while draining" $grace $needed) }}
{{- end }}
{{- end }}

{{/*
Stops the render when the chart creates the Secret without the key webhook signing secrets are encrypted
under: the service would run with webhooks unusable (an existing Secret must hold it, or its pods do not start).
*/}}
{{- define "riskwatch.checkSecretsKey" -}}
{{- if not (or .Values.secrets.existingSecret .Values.secrets.secretsKey) }}
{{- fail "secrets.secretsKey is required: the key webhook signing secrets are stored encrypted under, 32 bytes as hex (generate it once with `openssl rand -hex 32` and keep it), or secrets.existingSecret holding it under secrets.existingSecretKeys.secretsKey" }}
{{- end }}
{{- end }}

{{/* Stops the render on a backoff cap below its base, which the service would refuse at start. */}}
{{- define "riskwatch.checkRpc" -}}
{{- with .Values.config.rpc }}
{{- if lt (int .backoffMaxMs) (int .backoffBaseMs) }}
{{- fail (printf "config.rpc.backoffMaxMs (%d) must be at least config.rpc.backoffBaseMs (%d)" (int .backoffMaxMs) (int .backoffBaseMs)) }}
{{- end }}
{{- end }}
{{- end }}

{{/* An IntOrString field: "50%" stays a string, 1 (a float64 when read from YAML) prints as 1. */}}
{{- define "riskwatch.intOrString" -}}
{{- if kindIs "string" . }}{{ quote . }}{{ else }}{{ int . }}{{ end }}
{{- end }}

{{/*
Redis as KEDA's operator reaches it, for the worker's ScaledObject: address (host:port), password,
enableTLS and databaseIndex, from worker.keda.redis or else from secrets.redisUrl (when the chart creates
the Secret: an existing Secret's URL is out of its sight). As YAML.
*/}}
{{- define "riskwatch.kedaRedis" -}}
{{- $r := .Values.worker.keda.redis }}
{{- $url := dict "scheme" "" "host" "" "userinfo" "" "path" "" }}
{{- if and (not .Values.secrets.existingSecret) .Values.secrets.redisUrl }}
{{- $url = urlParse .Values.secrets.redisUrl }}
{{- end }}
{{- $address := $r.address }}
{{- if and (not $address) .Values.config.redisClusterNodes }}
{{- $address = .Values.config.redisClusterNodes }}
{{- end }}
{{- if and (not $address) $url.host }}
{{- $address = $url.host }}
{{- if not (regexMatch ":[0-9]+$" $address) }}
{{- $address = printf "%s:6379" $address }}
{{- end }}
{{- end }}
{{- $password := "" }}
{{- if contains ":" $url.userinfo }}
{{- $password = regexReplaceAll "^[^:]*:" $url.userinfo "" }}
{{- end }}
{{- if contains "%" $password }}
{{- fail "secrets.redisUrl: its password holds percent-escapes, which the chart cannot decode for KEDA; set worker.keda.redis.authenticationRef to a TriggerAuthentication of yours" }}
{{- end }}
{{- $tls := $r.enableTLS }}
{{- if kindIs "invalid" $tls }}
{{- $tls = eq $url.scheme "rediss" }}
{{- end }}
{{- $db := $r.databaseIndex }}
{{- if kindIs "invalid" $db }}
{{- $db = trimPrefix "/" $url.path | default "0" }}
{{- end }}
address: {{ $address | toJson }}
password: {{ $password | toJson }}
enableTLS: {{ $tls }}
databaseIndex: {{ $db | int }}
{{- end }}

{{/*
Stops the render when two autoscalers would size the worker: KEDA drives it through an HPA of its own,
which would fight the chart's (worker.autoscaling).
*/}}
{{- define "riskwatch.checkWorkerScaling" -}}
{{- if and .Values.worker.keda.enabled .Values.worker.autoscaling.enabled }}
{{- fail "worker.keda.enabled and worker.autoscaling.enabled exclude each other: KEDA scales the worker through an HorizontalPodAutoscaler of its own; keep one" }}
{{- end }}
{{- end }}
