#!/usr/bin/env bash
# Make a private CA and the connector service's serving certificate with openssl, for clusters
# without cert-manager (with it, use cert-manager.yaml beside this script instead).
#
#   deploy/tls/connector-certs.sh OUT_DIR [--namespace flyte] [--service armada-flyte-connector]
#                                 [--days 365] [--name EXTRA_DNS_NAME]...
#
# Writes, in OUT_DIR (created 0700):
#   ca.crt, ca.key   the CA: Flyte's executor trusts ca.crt (deploy/flyte/backend-trusts-connector-ca.yaml);
#                    keep ca.key off the cluster, it signs the next certificate
#   tls.crt, tls.key the connector's certificate (for SERVICE.NAMESPACE.svc.cluster.local and the
#                    shorter forms) and its key; tls.crt carries the CA after it (a full chain)
# then prints the two kubectl commands that load them: the Secret the connector mounts
# (armada-flyte-connector-tls) and the ConfigMap with only the CA (armada-flyte-connector-ca).
# Renew before --days runs out: run it again with the same CA (it reuses OUT_DIR/ca.*) and replace
# the Secret; armada-flyte c0 reads the renewed files without a restart.
set -euo pipefail

usage() { sed -n '2,17p' "$0"; exit "${1:-0}"; }
[ $# -ge 1 ] || usage 2
case "$1" in -h|--help) usage 0 ;; esac
out="$1"; shift
namespace=flyte service=armada-flyte-connector days=365 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --namespace) namespace="$2"; shift 2 ;;
    --service) service="$2"; shift 2 ;;
    --days) days="$2"; shift 2 ;;
    --name) extra+=("$2"); shift 2 ;;
    *) echo "connector-certs: unknown argument: $1 (try --help)" >&2; exit 2 ;;
  esac
done

umask 077
mkdir -p "$out"
if [ ! -f "$out/ca.key" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=armada-flyte connector CA" -keyout "$out/ca.key" -out "$out/ca.crt" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi

names="DNS:$service.$namespace.svc.cluster.local,DNS:$service.$namespace.svc,DNS:$service.$namespace"
for name in "${extra[@]}"; do names="$names,DNS:$name"; done
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$service.$namespace.svc" \
  -keyout "$out/tls.key" -out "$out/tls.csr" 2>/dev/null
openssl x509 -req -in "$out/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" -CAcreateserial -days "$days" \
  -out "$out/server.crt" -extfile <(printf '%s\n' \
    "subjectAltName=$names" "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth") 2>/dev/null
cat "$out/server.crt" "$out/ca.crt" > "$out/tls.crt"
rm -f "$out/tls.csr" "$out/server.crt" "$out/ca.srl"

cat <<EOF
connector-certs: wrote $out/{ca.crt,ca.key,tls.crt,tls.key} for $names
Load them (the Secret holds the key: only the connector mounts it; the ConfigMap holds only the CA):
  kubectl -n $namespace create secret tls armada-flyte-connector-tls --cert=$out/tls.crt --key=$out/tls.key
  kubectl -n $namespace create configmap armada-flyte-connector-ca --from-file=ca.crt=$out/ca.crt
EOF
