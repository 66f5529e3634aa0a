# Config files of our own for the real-Armada bed (sourced by scripts/real-armada.sh).
# Armada's components read their defaults from config/<component>/config.yaml relative to the
# working directory (the build cache holds a copy); each file written here overlays those
# defaults with the bed's ports, addresses and the shorter periods early tests need.
# Needs: $state (directory), the port variables set by ports_from_base.
# Optional, for the tests of a lost executor: REAL_ARMADA_EXECUTOR_TIMEOUT (the scheduler's
# executorTimeout, how long an executor may go unheard before its runs expire, Armada's default 1h;
# and scheduling.executorTimeout, after which it gets no new runs, default 10m: both, or the
# expired run's retry is placed on the lost executor again)
# and REAL_ARMADA_RETRY_POLICY (the retry engine on, with this policy for every queue;
# real-armada.sh creates it: lost runs retried).

ports_from_base() {  # $1 = base: every port the bed uses, derived from one number
  local b=$1
  SERVER_GRPC=$((b + 1)) EXECUTOR_API=$((b + 2)) SERVER_HTTP=$((b + 3)) SCHEDULER_HTTP=$((b + 4))
  POSTGRES_PORT=$((b + 5)) REDIS_PORT=$((b + 6)) PULSAR_PORT=$((b + 7)) PULSAR_WEB=$((b + 8))
  SERVER_METRICS=$((b + 9)) SCHEDULER_METRICS=$((b + 10)) SCHEDULERINGESTER_METRICS=$((b + 11))
  EVENTINGESTER_METRICS=$((b + 12)) LOOKOUTINGESTER_METRICS=$((b + 13))
  LOOKOUT_API=$((b + 14)) LOOKOUT_METRICS=$((b + 15))
  FAKEEXECUTOR_HTTP=$((b + 16)) FAKEEXECUTOR_METRICS=$((b + 17))
}

postgres_yaml() {  # $1 = database, $2 = indent
  local pad="$2"
  cat <<YAML
${pad}connection:
${pad}  host: 127.0.0.1
${pad}  port: $POSTGRES_PORT
${pad}  user: postgres
${pad}  password: unused-trust-auth
${pad}  dbname: $1
${pad}  sslmode: disable
YAML
}

pulsar_yaml() {
  cat <<YAML
pulsar:
  URL: "pulsar://127.0.0.1:$PULSAR_PORT"
  restURL: "http://127.0.0.1:$PULSAR_WEB"
YAML
}

write_server_config() {
  cat <<YAML
grpcPort: $SERVER_GRPC
httpPort: $SERVER_HTTP
metricsPort: $SERVER_METRICS
queueCacheRefreshPeriod: 1s
corsAllowedOrigins: []
auth:
  anonymousAuth: true
  permissionGroupMapping:
    submit_any_jobs: ["everyone"]
    create_queue: ["everyone"]
    delete_queue: ["everyone"]
    cordon_queue: ["everyone"]
    cordon_nodes: ["everyone"]
    cancel_any_jobs: ["everyone"]
    reprioritize_any_jobs: ["everyone"]
    preempt_any_jobs: ["everyone"]
    watch_all_events: ["everyone"]
    update_executor_settings: ["everyone"]
    create_retry_policy: ["everyone"]
    update_retry_policy: ["everyone"]
    delete_retry_policy: ["everyone"]
schedulerApiConnection:
  armadaUrl: "127.0.0.1:$EXECUTOR_API"
  forceNoTls: true
eventsApiRedis:
  addrs: ["127.0.0.1:$REDIS_PORT"]
  db: 1
  poolSize: 50
postgres:
$(postgres_yaml lookout "  ")
queryapi:
  postgres:
$(postgres_yaml lookout "    ")
$(pulsar_yaml)
YAML
}

retry_policy_yaml() {  # the retry engine, when REAL_ARMADA_RETRY_POLICY names a default policy
  [ -n "${REAL_ARMADA_RETRY_POLICY:-}" ] || return 0
  cat <<YAML
  retryPolicy:
    enabled: true
    globalMaxRetries: 5
    defaultPolicyName: "$REAL_ARMADA_RETRY_POLICY"
YAML
}

write_scheduler_config() {
  cat <<YAML
schedulePeriod: 1s
executorTimeout: ${REAL_ARMADA_EXECUTOR_TIMEOUT:-1h}
queueRefreshPeriod: 1s
metrics:
  port: $SCHEDULER_METRICS
http:
  port: $SCHEDULER_HTTP
grpc:
  port: $EXECUTOR_API
  tls:
    enabled: false
auth:
  anonymousAuth: true
  permissionGroupMapping:
    execute_jobs: ["everyone"]
armadaApi:
  armadaUrl: "127.0.0.1:$SERVER_GRPC"
  forceNoTls: true
leader:
  mode: standalone
postgres:
$(postgres_yaml scheduler "  ")
$(pulsar_yaml)
scheduling:
  executorUpdateFrequency: 1s
  executorTimeout: ${REAL_ARMADA_EXECUTOR_TIMEOUT:-10m}
  indexedNodeLabels:
    - "kubernetes.io/hostname"
    - "kubernetes.io/arch"
$(retry_policy_yaml)
YAML
}

write_scheduleringester_config() {
  cat <<YAML
metricsPort: $SCHEDULERINGESTER_METRICS
postgres:
$(postgres_yaml scheduler "  ")
$(pulsar_yaml)
YAML
}

write_eventingester_config() {
  cat <<YAML
metricsPort: $EVENTINGESTER_METRICS
redis:
  addrs: ["127.0.0.1:$REDIS_PORT"]
  db: 1
  poolSize: 50
$(pulsar_yaml)
YAML
}

write_lookoutingester_config() {
  cat <<YAML
metricsPort: $LOOKOUTINGESTER_METRICS
postgres:
$(postgres_yaml lookout "  ")
$(pulsar_yaml)
YAML
}

write_lookout_config() {  # only used for its migrations
  cat <<YAML
apiPort: $LOOKOUT_API
metricsPort: $LOOKOUT_METRICS
postgres:
$(postgres_yaml lookout "  ")
YAML
}

write_fakeexecutor_config() {
  # Armada's simulated executor: node groups shaped like the embedded server's default cluster
  # (2 amd64 nodes, 2 arm64 nodes tainted kubernetes.io/arch=arm64:NoSchedule, 4 cpu / 16Gi).
  cat <<YAML
httpPort: $FAKEEXECUTOR_HTTP
executorApiConnection:
  armadaUrl: "127.0.0.1:$EXECUTOR_API"
  forceNoTls: true
metric:
  port: $FAKEEXECUTOR_METRICS
application:
  clusterId: "real-armada-bed-fake"
  pool: "default"
kubernetes:
  nodeIdLabel: "kubernetes.io/hostname"
  trackedNodeLabels: ["kubernetes.io/hostname", "kubernetes.io/arch"]
  toleratedTaints: ["kubernetes.io/arch"]
  minimumResourcesMarkedAllocatedToNonArmadaPodsPerNode: {cpu: "0", memory: "0"}
nodes:
  - name: "amd64"
    count: 2
    allocatable: {cpu: "4", memory: "16Gi", ephemeral-storage: "100Gi"}
    labels: {kubernetes.io/arch: amd64}
    taints: []
  - name: "arm64"
    count: 2
    allocatable: {cpu: "4", memory: "16Gi", ephemeral-storage: "100Gi"}
    labels: {kubernetes.io/arch: arm64}
    taints:
      - {key: kubernetes.io/arch, value: arm64, effect: NoSchedule}
YAML
}

write_pulsar_config() {
  # Standalone broker: metadata in RocksDB, one in-process bookie, everything on 127.0.0.1.
  cat <<CONF
clusterName=standalone
bindAddress=127.0.0.1
advertisedAddress=127.0.0.1
brokerServicePort=$PULSAR_PORT
webServicePort=$PULSAR_WEB
managedLedgerDefaultEnsembleSize=1
managedLedgerDefaultWriteQuorum=1
managedLedgerDefaultAckQuorum=1
allowAutoTopicCreation=true
allowAutoTopicCreationType=non-partitioned
functionsWorkerEnabled=false
transactionCoordinatorEnabled=false
brokerDeleteInactiveTopicsEnabled=false
bookkeeperClientExposeStatsToPrometheus=false
exposeTopicLevelMetricsInPrometheus=false
journalSyncData=false
dbStorage_writeCacheMaxSizeMb=32
dbStorage_readAheadCacheMaxSizeMb=32
CONF
}

write_pulsar_logging() {  # log4j2: INFO to the console (the component's log file)
  cat <<CONF
status = warn
appender.console.type = Console
appender.console.name = console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5level [%t] %c{1} - %msg%n
rootLogger.level = info
rootLogger.appenderRef.console.ref = console
CONF
}

write_configs() {  # into $state/config
  mkdir -p "$state/config"
  local c
  for c in server scheduler scheduleringester eventingester lookoutingester lookout fakeexecutor; do
    "write_${c}_config" >"$state/config/$c.yaml"
  done
  write_pulsar_config >"$state/config/pulsar-standalone.conf"
  write_pulsar_logging >"$state/config/pulsar-log4j2.properties"
}
