# The Kubernetes parts of the real-Armada bed (`scripts/real-armada.sh up --kubernetes`; sourced by it):
# etcd, kube-apiserver, kube-scheduler and kube-controller-manager on 127.0.0.1, our node agent as the
# kubelet of the cluster's nodes, Armada's own executor on that cluster, and Armada's Binoculars.
# Binaries from scripts/real-armada/kubernetes-build.sh (cached per version).
#
# Credentials are made per bed, in $state/kubernetes (0700; keys and tokens 0600): a certificate authority,
# the API server's serving certificate, etcd's (etcd takes only clients with a certificate of that
# authority), the certificate the API server shows the kubelet endpoint, the endpoint's own, the
# service-account signing key, and one token per user in the API server's token file, each user with
# just the rights it needs (RBAC; docs/security.md):
#   bed-admin                       system:masters: the KUBECONFIG `up` prints, for people and tests
#   system:kube-scheduler           kube-scheduler (Kubernetes' own role for it)
#   system:kube-controller-manager  kube-controller-manager (namespace, service-account, garbage, pod GC)
#   armada-executor                 Armada's executor: pods, services and ingresses; reads nodes and events
#   armada-binoculars               Binoculars: reads pods and their logs; cordons nodes
#   armada-flyte-node-agent         the node agent: registers and heartbeats nodes, reports pods, reads Secrets
# Needs: $state, $logs, ports from kube_ports_from_base, BED_USER, ARMADA_PASSWORD, EXECUTOR_API, and the
# functions start / wait_until / await_ready of real-armada.sh.

KUBE_PARTS=(etcd kube-apiserver kube-scheduler kube-controller-manager node-agent executor binoculars our-executor)
KUBE_NAMESPACES=(personal-anonymous)  # Armada's own local set-up submits there; `default` is Kubernetes' own
KUBE_SERVICE_RANGE=10.96.0.0/24       # kube-apiserver requires one; nothing here routes to it
KUBE_CLUSTER_ID=real-kubernetes-bed   # Armada's executor reports the cluster under this id (and our node agent's cluster file)
OUR_CLUSTER_ID=armada-flyte-amd64     # with --two-clusters: our executor's cluster (the amd64 nodes, no Kubernetes)
two_clusters=false

kube_ports_from_base() {  # $1 = base: the Kubernetes parts' ports, after Armada's (base+1..+17)
  local b=$1
  KUBE_APISERVER=$((b + 18)) ETCD_CLIENT=$((b + 19)) ETCD_PEER=$((b + 20))
  KUBE_SCHEDULER_PORT=$((b + 21)) KUBE_CONTROLLER_MANAGER_PORT=$((b + 22))
  ARMADA_EXECUTOR_HTTP=$((b + 23)) ARMADA_EXECUTOR_METRICS=$((b + 24)) KUBELET_PORT=$((b + 25))
  BINOCULARS_GRPC=$((b + 26)) BINOCULARS_HTTP=$((b + 27)) BINOCULARS_METRICS=$((b + 28))
}
BED_PORT_COUNT=28  # the highest offset any part of a bed uses

kube_port_entries() {  # "name:port" of every Kubernetes part, for the check that they are free
  printf '%s\n' "kube-apiserver:$KUBE_APISERVER" "etcd client:$ETCD_CLIENT" "etcd peer:$ETCD_PEER" \
    "kube-scheduler:$KUBE_SCHEDULER_PORT" "kube-controller-manager:$KUBE_CONTROLLER_MANAGER_PORT" \
    "Armada executor HTTP:$ARMADA_EXECUTOR_HTTP" "Armada executor metrics:$ARMADA_EXECUTOR_METRICS" \
    "node agent kubelet endpoint:$KUBELET_PORT" "binoculars gRPC:$BINOCULARS_GRPC" \
    "binoculars HTTP:$BINOCULARS_HTTP" "binoculars metrics:$BINOCULARS_METRICS"
}

# --- credentials ---

kube_certificate() {  # name, subject, extensions: a key and a certificate of the bed's authority in $kdir
  local name=$1 subject=$2 extensions=$3
  openssl ecparam -name prime256v1 -genkey -noout -out "$kdir/$name.key" 2>/dev/null
  openssl req -new -key "$kdir/$name.key" -subj "$subject" -out "$kdir/$name.csr" 2>/dev/null
  printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
    "$extensions" >"$kdir/$name.ext"
  openssl x509 -req -in "$kdir/$name.csr" -CA "$kdir/ca.crt" -CAkey "$kdir/ca.key" -CAcreateserial -days 30 \
    -extfile "$kdir/$name.ext" -out "$kdir/$name.crt" 2>/dev/null
  rm -f "$kdir/$name.csr" "$kdir/$name.ext"
}

KUBE_USERS=(bed-admin system:kube-scheduler system:kube-controller-manager armada-executor armada-binoculars
  armada-flyte-node-agent)

kube_user_file() { echo "${1#system:}"; }  # a user's file name in $kdir (kubeconfig and token)

make_kube_credentials() {
  kdir="$state/kubernetes"
  mkdir -m 700 "$kdir"
  (
    umask 077
    openssl ecparam -name prime256v1 -genkey -noout -out "$kdir/ca.key" 2>/dev/null
    openssl req -x509 -new -key "$kdir/ca.key" -subj "/CN=real-armada-bed-ca" -days 30 -out "$kdir/ca.crt" 2>/dev/null
    local loopback="subjectAltName=IP:127.0.0.1,DNS:localhost"
    kube_certificate apiserver "/CN=kube-apiserver" "$loopback,DNS:kubernetes,DNS:kubernetes.default,IP:10.96.0.1
extendedKeyUsage=serverAuth"
    kube_certificate etcd "/CN=etcd" "$loopback
extendedKeyUsage=serverAuth,clientAuth"
    kube_certificate apiserver-etcd-client "/CN=kube-apiserver-etcd-client" "extendedKeyUsage=clientAuth"
    kube_certificate apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
    kube_certificate kubelet "/CN=armada-flyte-node-agent" "$loopback
extendedKeyUsage=serverAuth"
    openssl ecparam -name prime256v1 -genkey -noout -out "$kdir/service-account.key" 2>/dev/null
    openssl ec -in "$kdir/service-account.key" -pubout -out "$kdir/service-account.pub" 2>/dev/null
    local user token
    : >"$kdir/tokens.csv"
    for user in "${KUBE_USERS[@]}"; do
      token="$(new_secret)"
      local groups=""
      [ "$user" != bed-admin ] || groups=',"system:masters"'
      printf '%s,%s,%s%s\n' "$token" "$user" "$user" "$groups" >>"$kdir/tokens.csv"
      printf '%s\n' "$token" >"$kdir/$(kube_user_file "$user").token"
      write_kubeconfig "$user" >"$kdir/$(kube_user_file "$user").kubeconfig"
    done
    printf 'header = "Authorization: Bearer %s"\n' "$(cat "$kdir/bed-admin.token")" >"$kdir/curl-admin"
  )
  chmod 644 "$kdir/ca.crt"
}

write_kubeconfig() {  # user: a kubeconfig naming the bed's API server, its authority and the user's token file
  cat <<YAML
apiVersion: v1
kind: Config
clusters:
  - name: real-armada-bed
    cluster:
      server: https://127.0.0.1:$KUBE_APISERVER
      certificate-authority: $kdir/ca.crt
users:
  - name: $1
    user:
      tokenFile: $kdir/$(kube_user_file "$1").token
contexts:
  - name: real-armada-bed
    context: {cluster: real-armada-bed, user: $1}
current-context: real-armada-bed
YAML
}

# --- configs ---

write_armada_executor_config() {  # Armada's executor on the bed's cluster, logging in to the scheduler
  cat <<YAML
httpPort: $ARMADA_EXECUTOR_HTTP
executorApiConnection:
  armadaUrl: "127.0.0.1:$EXECUTOR_API"
  forceNoTls: true
$(bed_login_yaml "  ")
metric:
  port: $ARMADA_EXECUTOR_METRICS
application:
  clusterId: "$KUBE_CLUSTER_ID"
  pool: "default"
  errorCategories:
    enabled: true
    defaultCategory: uncategorized
    categories:
      - name: oom
        rules:
          - onConditions: ["OOMKilled"]
      - name: user_error
        rules:
          - onExitCodes: {operator: In, values: [1, 2, 126, 127]}
kubernetes:
  trackedNodeLabels: ["kubernetes.io/hostname", "kubernetes.io/arch"]
  toleratedTaints: ["kubernetes.io/arch"]
  minimumResourcesMarkedAllocatedToNonArmadaPodsPerNode: {cpu: "0", memory: "0"}
  minimumPodAge: ${REAL_KUBERNETES_MINIMUM_POD_AGE:-3m}
task:
  jobLeaseRenewalInterval: 1s
  podDeletionInterval: 1s
YAML
}

write_binoculars_config() {  # Armada's log service for this cluster: the bed's user only
  cat <<YAML
grpcPort: $BINOCULARS_GRPC
httpPort: $BINOCULARS_HTTP
metricsPort: $BINOCULARS_METRICS
corsAllowedOrigins: []
auth:
$(bed_users_yaml)
  permissionGroupMapping:
    cordon_nodes: ["$BED_GROUP"]
kubernetes:
  impersonateUsers: false
YAML
}

# `pods` (a kubelet's --max-pods, default 110): Armada's scheduler does not count pods, and packs up to a node's
# cpu (4 cpu of 10m pods: 400); the tests run 200 at once.
AMD64_GROUP='  - name: amd64
    nodes: 2
    labels: {kubernetes.io/arch: amd64}
    allocatable: {cpu: "4", memory: 16Gi, pods: "500"}'
ARM64_GROUP='  - name: arm64
    nodes: 2
    labels: {kubernetes.io/arch: arm64}
    taints: [{key: kubernetes.io/arch, value: arm64, effect: NoSchedule}]
    allocatable: {cpu: "4", memory: 8Gi, pods: "500"}'

write_node_agent_cluster() {  # the node agent's nodes: amd64 and arm64 (tainted as GKE does); arm64 only with two clusters
  printf 'executor: %s\npool: default\nnode_sets:\n' "$KUBE_CLUSTER_ID"
  "$two_clusters" || printf '%s\n' "$AMD64_GROUP"
  printf '%s\n' "$ARM64_GROUP"
}

write_our_executor_cluster() {  # with two clusters: the amd64 nodes, run by our executor (no Kubernetes)
  printf 'executor: %s\npool: default\nnamespaces: [%s]\nnode_sets:\n%s\n' "$OUR_CLUSTER_ID" \
    "${KUBE_NAMESPACES[*]}" "$AMD64_GROUP"
}

write_kube_manifests() {  # namespaces, Armada's priority classes, and each user's rights
  local ns
  for ns in "${KUBE_NAMESPACES[@]}"; do
    printf 'apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n---\n' "$ns"
  done
  local class value
  for class in armada-default:1000 armada-preemptible:500 armada-resilient:1000; do
    value="${class#*:}" class="${class%%:*}"
    printf 'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: %s}\nvalue: %s\n---\n' "$class" "$value"
  done
  cluster_role armada-executor \
    '{apiGroups: [""], resources: [pods], verbs: [get, list, watch, create, delete, patch]}' \
    '{apiGroups: [""], resources: [services], verbs: [get, list, watch, create, delete]}' \
    '{apiGroups: [""], resources: [nodes, events], verbs: [get, list, watch]}' \
    '{apiGroups: [networking.k8s.io], resources: [ingresses], verbs: [get, list, watch, create, delete]}' \
    '{apiGroups: [discovery.k8s.io], resources: [endpointslices], verbs: [get, list, watch]}'
  cluster_role armada-binoculars \
    '{apiGroups: [""], resources: [pods, pods/log], verbs: [get]}' \
    '{apiGroups: [""], resources: [nodes], verbs: [get, patch]}'
  cluster_role armada-flyte-node-agent \
    '{apiGroups: [""], resources: [nodes], verbs: [get, list, watch, create, patch]}' \
    '{apiGroups: [""], resources: [nodes/status, pods/status], verbs: [patch]}' \
    '{apiGroups: [""], resources: [pods], verbs: [get, list, watch, delete]}' \
    '{apiGroups: [""], resources: [secrets], verbs: [get]}'
  cat <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: armada-flyte-node-agent, namespace: kube-node-lease}
rules: [{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, create, patch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: armada-flyte-node-agent, namespace: kube-node-lease}
subjects: [{kind: User, name: armada-flyte-node-agent, apiGroup: rbac.authorization.k8s.io}]
roleRef: {kind: Role, name: armada-flyte-node-agent, apiGroup: rbac.authorization.k8s.io}
YAML
}

cluster_role() {  # user, rules...: a ClusterRole of that name with the rules, bound to that user
  local user=$1 rule
  shift
  printf 'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: %s}\nrules:\n' "$user"
  for rule in "$@"; do printf '  - %s\n' "$rule"; done
  printf -- '---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: %s}\n' "$user"
  printf 'subjects: [{kind: User, name: %s, apiGroup: rbac.authorization.k8s.io}]\n' "$user"
  printf 'roleRef: {kind: ClusterRole, name: %s, apiGroup: rbac.authorization.k8s.io}\n---\n' "$user"
}

write_kube_configs() {
  write_armada_executor_config >"$state/config/armada-executor.yaml"
  write_binoculars_config >"$state/config/binoculars.yaml"
  write_node_agent_cluster >"$state/config/node-agent-cluster.yaml"
  ! "$two_clusters" || write_our_executor_cluster >"$state/config/our-executor-cluster.yaml"
  write_kube_manifests >"$state/config/kubernetes-manifests.yaml"
}

# --- starting ---

as_kube_admin() { curl -K "$kdir/curl-admin" --cacert "$kdir/ca.crt" -sf -o /dev/null --max-time 5 "$@"; }
kubectl_admin() { kubectl --kubeconfig "$kdir/bed-admin.kubeconfig" "$@"; }

start_kubernetes() {  # the control plane, then the node agent: nodes Ready before Armada's executor reports them
  local bin="$kcache/bin"
  mkdir -p "$state/etcd"
  start etcd "$bin/etcd" --name bed --data-dir "$state/etcd" \
    --listen-client-urls "https://127.0.0.1:$ETCD_CLIENT" --advertise-client-urls "https://127.0.0.1:$ETCD_CLIENT" \
    --listen-peer-urls "https://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "https://127.0.0.1:$ETCD_PEER" \
    --initial-cluster "bed=https://127.0.0.1:$ETCD_PEER" \
    --cert-file "$kdir/etcd.crt" --key-file "$kdir/etcd.key" --client-cert-auth --trusted-ca-file "$kdir/ca.crt" \
    --peer-cert-file "$kdir/etcd.crt" --peer-key-file "$kdir/etcd.key" --peer-client-cert-auth \
    --peer-trusted-ca-file "$kdir/ca.crt" --quota-backend-bytes 536870912 --log-level warn
  await_ready etcd
  # TaintNodesByCondition would taint every new node not-ready (there is no node lifecycle controller to lift it).
  start kube-apiserver "$bin/kube-apiserver" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
    --secure-port "$KUBE_APISERVER" --tls-cert-file "$kdir/apiserver.crt" --tls-private-key-file "$kdir/apiserver.key" \
    --etcd-servers "https://127.0.0.1:$ETCD_CLIENT" --etcd-cafile "$kdir/ca.crt" \
    --etcd-certfile "$kdir/apiserver-etcd-client.crt" --etcd-keyfile "$kdir/apiserver-etcd-client.key" \
    --client-ca-file "$kdir/ca.crt" --token-auth-file "$kdir/tokens.csv" --anonymous-auth=false \
    --authorization-mode Node,RBAC --service-cluster-ip-range "$KUBE_SERVICE_RANGE" \
    --service-account-key-file "$kdir/service-account.pub" --service-account-signing-key-file "$kdir/service-account.key" \
    --service-account-issuer "https://127.0.0.1:$KUBE_APISERVER" \
    --kubelet-client-certificate "$kdir/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$kdir/apiserver-kubelet-client.key" --kubelet-certificate-authority "$kdir/ca.crt" \
    --kubelet-preferred-address-types InternalIP --disable-admission-plugins TaintNodesByCondition \
    --endpoint-reconciler-type none --profiling=false --enable-priority-and-fairness=false
  await_ready kube-apiserver
  wait_until kube-apiserver "the bed's namespaces, priority classes and roles" "$WAIT_SECONDS" \
    kubectl_admin apply -f "$state/config/kubernetes-manifests.yaml"
  start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$kdir/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$kdir/kube-scheduler.kubeconfig" --authorization-kubeconfig "$kdir/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KUBE_SCHEDULER_PORT" --leader-elect=false --profiling=false
  start kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$kdir/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "$kdir/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "$kdir/kube-controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port "$KUBE_CONTROLLER_MANAGER_PORT" --leader-elect=false --profiling=false \
    --controllers namespace,garbagecollector,podgc,serviceaccount,root-ca-cert-publisher \
    --root-ca-file "$kdir/ca.crt" --service-account-private-key-file "$kdir/service-account.key"
  await_ready kube-scheduler
  await_ready kube-controller-manager
  start node-agent "$executor_cmd" node-agent --kubeconfig "$kdir/armada-flyte-node-agent.kubeconfig" \
    --cluster "$state/config/node-agent-cluster.yaml" --listen "127.0.0.1:$KUBELET_PORT" \
    --tls-cert "$kdir/kubelet.crt" --tls-key "$kdir/kubelet.key" --client-ca "$kdir/ca.crt"
  await_ready node-agent
  load_kube_secrets
}

load_kube_secrets() {  # REAL_ARMADA_SECRETS_FILE's Secrets, in every namespace pods of the bed run in
  [ -n "${REAL_ARMADA_SECRETS_FILE:-}" ] || return 0
  local ns
  for ns in default "${KUBE_NAMESPACES[@]}"; do
    kubectl_admin apply -n "$ns" -f "$REAL_ARMADA_SECRETS_FILE" >>"$logs/kube-apiserver.log" 2>&1 \
      || fail_with_log kube-apiserver "could not create the Secrets of $REAL_ARMADA_SECRETS_FILE in namespace $ns"
  done
}

start_armada_on_kubernetes() {  # Armada's executor and Binoculars, each with the bed's cluster as its Kubernetes
  start executor env -C "$kcache" KUBECONFIG="$kdir/armada-executor.kubeconfig" "${GO_RUNTIME[@]}" \
    "$kcache/bin/executor" --config "$state/config/armada-executor.yaml"
  start binoculars env -C "$kcache" KUBECONFIG="$kdir/armada-binoculars.kubeconfig" "${GO_RUNTIME[@]}" \
    "$kcache/bin/binoculars" --config "$state/config/binoculars.yaml"
  await_ready executor
  await_ready binoculars
  "$two_clusters" || return 0
  local secrets=()
  [ -z "${REAL_ARMADA_SECRETS_FILE:-}" ] || secrets=(--secrets-file "$REAL_ARMADA_SECRETS_FILE")
  start our-executor "$executor_cmd" executor --scheduler "127.0.0.1:$EXECUTOR_API" --auth-username "$BED_USER" \
    --auth-password-file "$auth/armada-password" --cluster "$state/config/our-executor-cluster.yaml" "${secrets[@]}"
  await_ready our-executor
}

nodes_ready() {  # every node of the agent's cluster file registered and Ready
  local ready expected=4
  ! "$two_clusters" || expected=2
  ready="$(kubectl_admin get nodes -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c True)"
  [ "$ready" -ge "$expected" ]
}

await_kube_part() {  # name: the readiness check of a Kubernetes part (real-armada.sh's await_ready calls it)
  case "$1" in
    etcd) wait_until etcd "port $ETCD_CLIENT" "$WAIT_SECONDS" port_open "$ETCD_CLIENT" ;;
    kube-apiserver) wait_until kube-apiserver "/readyz" "$WAIT_SECONDS" \
      as_kube_admin "https://127.0.0.1:$KUBE_APISERVER/readyz" ;;
    kube-scheduler) wait_until kube-scheduler "/healthz" "$WAIT_SECONDS" \
      curl -sfk -o /dev/null --max-time 5 "https://127.0.0.1:$KUBE_SCHEDULER_PORT/healthz" ;;
    kube-controller-manager) wait_until kube-controller-manager "/healthz" "$WAIT_SECONDS" \
      curl -sfk -o /dev/null --max-time 5 "https://127.0.0.1:$KUBE_CONTROLLER_MANAGER_PORT/healthz" ;;
    node-agent) wait_until node-agent "its nodes Ready" "$WAIT_SECONDS" nodes_ready ;;
    binoculars) wait_until binoculars "port $BINOCULARS_GRPC" "$WAIT_SECONDS" port_open "$BINOCULARS_GRPC" ;;
    our-executor) wait_until our-executor "connection to the executor API" "$WAIT_SECONDS" \
      logged_since_start our-executor "connected to the scheduler" ;;
    *) return 1 ;;
  esac
}

print_kube_bed() {
  printf 'KUBECONFIG=%q\nARMADA_FLYTE_BINOCULARS_URL=127.0.0.1:%s\n' "$state/kubernetes/bed-admin.kubeconfig" \
    "$BINOCULARS_GRPC"
}
