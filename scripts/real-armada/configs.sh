# Config files of our own for the real-Armada bed (sourced by scripts/real-armada.sh).
# Armada's components read their defaults from config/<component>/config.yaml relative to the
# working directory (the build cache holds a copy); each file written here overlays those
# defaults with the bed's ports, addresses, credentials and the shorter periods early tests need.
# Needs: $state (directory, 0700: the files hold the bed's passwords), the port variables set by
# ports_from_base, and the bed's secrets: BED_USER, ARMADA_PASSWORD, POSTGRES_PASSWORD, REDIS_PASSWORD.
#
# Armada's Go components listen on every address (Listen(":port")), so the public API, its REST
# gateway and the executor API take Armada's basic auth, with one user of the bed (no anonymous
# access): whoever reaches the machine cannot submit, lease or run anything without the password.
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
${pad}  password: "$POSTGRES_PASSWORD"
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

BED_GROUP=bed  # the group of the bed's one user, holding every permission

bed_users_yaml() {  # Armada's basic auth: the bed's user (Viper lower-cases keys: BED_USER is lower case)
  cat <<YAML
  anonymousAuth: false
  basicAuth:
    users:
      "$BED_USER": {password: "$ARMADA_PASSWORD", groups: ["$BED_GROUP"]}
YAML
}

bed_login_yaml() {  # $1 = indent: how one Armada component logs in to another
  cat <<YAML
${1}basicAuth: {username: "$BED_USER", password: "$ARMADA_PASSWORD"}
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
$(bed_users_yaml)
  permissionGroupMapping:
    submit_any_jobs: ["$BED_GROUP"]
    create_queue: ["$BED_GROUP"]
    delete_queue: ["$BED_GROUP"]
    cordon_queue: ["$BED_GROUP"]
    cordon_nodes: ["$BED_GROUP"]
    cancel_any_jobs: ["$BED_GROUP"]
    reprioritize_any_jobs: ["$BED_GROUP"]
    preempt_any_jobs: ["$BED_GROUP"]
    watch_all_events: ["$BED_GROUP"]
    update_executor_settings: ["$BED_GROUP"]
    create_retry_policy: ["$BED_GROUP"]
    update_retry_policy: ["$BED_GROUP"]
    delete_retry_policy: ["$BED_GROUP"]
schedulerApiConnection:
  armadaUrl: "127.0.0.1:$EXECUTOR_API"
  forceNoTls: true
$(bed_login_yaml "  ")
eventsApiRedis:
  addrs: ["127.0.0.1:$REDIS_PORT"]
  password: "$REDIS_PASSWORD"
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
$(bed_users_yaml)
  permissionGroupMapping:
    execute_jobs: ["$BED_GROUP"]
armadaApi:
  armadaUrl: "127.0.0.1:$SERVER_GRPC"
  forceNoTls: true
$(bed_login_yaml "  ")
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
  password: "$REDIS_PASSWORD"
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
  # Armada's simulated executor: node sets shaped like the embedded server's default cluster
  # (2 amd64 nodes of 4 cpu / 16Gi, 2 arm64 nodes of 4 cpu / 8Gi tainted kubernetes.io/arch=arm64:NoSchedule).
  cat <<YAML
httpPort: $FAKEEXECUTOR_HTTP
executorApiConnection:
  armadaUrl: "127.0.0.1:$EXECUTOR_API"
  forceNoTls: true
$(bed_login_yaml "  ")
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
    allocatable: {cpu: "4", memory: "8Gi", ephemeral-storage: "100Gi"}
    labels: {kubernetes.io/arch: arm64}
    taints:
      - {key: kubernetes.io/arch, value: arm64, effect: NoSchedule}
YAML
}

write_pulsar_config() {
  # Standalone broker: metadata in RocksDB, one in-process bookie, everything on 127.0.0.1. The standalone
  # starter gives this file to its bookie too (PulsarStandalone.startBookieWithMetadataStore): without
  # listeningInterface the bookie takes a random port on every address.
  cat <<CONF
clusterName=standalone
bindAddress=127.0.0.1
advertisedAddress=127.0.0.1
listeningInterface=lo
allowLoopback=true
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

write_redis_config() {  # the password in a file, not on redis-server's command line (/proc is world-readable)
  cat <<CONF
bind 127.0.0.1
port $REDIS_PORT
protected-mode yes
requirepass $REDIS_PASSWORD
save ""
appendonly no
dir $state/redis
CONF
}

write_configs() {  # into $state/config (0700: the files hold the bed's passwords)
  mkdir -p -m 700 "$state/config"
  local c
  for c in server scheduler scheduleringester eventingester lookoutingester lookout fakeexecutor; do
    "write_${c}_config" >"$state/config/$c.yaml"
  done
  write_redis_config >"$state/config/redis.conf"
  write_pulsar_config >"$state/config/pulsar-standalone.conf"
  write_pulsar_logging >"$state/config/pulsar-log4j2.properties"
}
