# Sourced by the scripts that fetch Armada's Go module: finding the Go toolchain and the module's folder.
# Shell functions only; sourcing runs nothing.

# find_go: sets GO to a Go toolchain (on PATH, else /usr/local/go/bin/go); fails when there is none.
find_go() {
  GO="$(command -v go || true)"
  if [ -z "$GO" ] && [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go; fi
  [ -n "$GO" ]
}

# download_module MODULE@VERSION EMPTY_DIR: fetches the module into Go's module cache, from an empty
# directory so no surrounding go.mod or go.work is consulted. Sets GO_MODULE_INFO (go's JSON answer)
# and GO_MODULE_DIR (the module's folder in the cache; empty when go named none).
download_module() {
  GO_MODULE_INFO="$(cd "$2" && GOWORK=off GOFLAGS=-mod=mod "$GO" mod download -json "$1")"
  GO_MODULE_DIR="$(printf '%s\n' "$GO_MODULE_INFO" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' | head -n1)"
}
