#!/usr/bin/env bash
# Builds the Temporal server and its SQL schema tool from the Go module pinned in temporal/go.mod + go.sum
# (through the Go module proxy only) into a cache outside the clone, and prints that cache dir as the last
# line on stdout.
#
#   <cache>/bin/temporal-server       go.temporal.io/server/cmd/server
#   <cache>/bin/temporal-sql-tool     go.temporal.io/server/cmd/tools/sql
#   <cache>/schema/postgresql/v12/{temporal,visibility}/   the PostgreSQL schemas, from the same module
#   <cache>/versions.json
#
# <cache> = ${RAYPILOT_TEMPORAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/raypilot/temporal}/<key>, where <key>
# hashes the pins, `go version` and RECIPE below. A complete cache is reused at once; progress goes to stderr.
# `build.sh --check` only says whether the cache is complete (exit 3 when it is not).
set -euo pipefail

# Bump when a build flag below changes, so caches built the old way are not reused.
RECIPE=1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
binaries=(temporal-server temporal-sql-tool)

# Go's own installer puts it here; a non-login shell may not have it on PATH.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  PATH="$PATH:/usr/local/go/bin"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "temporal: the go command is not on PATH (Go >= 1.26.8 is needed)" >&2
  exit 1
fi

go_version="$(cd "$here" && go version)"
key="$(
  {
    echo "recipe $RECIPE"
    echo "$go_version"
    for f in go.mod go.sum; do
      echo "== $f"
      cat "$here/$f"
    done
  } | sha256sum | cut -c1-16
)"
root="${RAYPILOT_TEMPORAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/raypilot/temporal}"
dir="$root/$key"

complete() {
  [[ -f "$dir/.complete" ]] || return 1
  local b
  for b in "${binaries[@]}"; do
    [[ -x "$dir/bin/$b" ]] || return 1
  done
}

if complete; then
  echo "$dir"
  exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
  echo "temporal: not built yet ($dir); make temporal-server builds it" >&2
  exit 3
fi

mkdir -p "$dir"
# One build at a time per cache dir (two test workers may ask at once); the loser then finds it complete.
exec 9>"$dir/.lock"
flock 9
if complete; then
  echo "$dir"
  exit 0
fi

start=$SECONDS
steps=4
step=0
heartbeat_pid=""

stop_heartbeat() {
  if [[ -n "$heartbeat_pid" ]]; then
    kill "$heartbeat_pid" 2>/dev/null || true
    wait "$heartbeat_pid" 2>/dev/null || true
    heartbeat_pid=""
  fi
}
trap stop_heartbeat EXIT

# Prints the step's line, and a line a minute while it runs (a cold temporal-server takes minutes).
begin() {
  stop_heartbeat
  step=$((step + 1))
  local what="$1"
  echo "temporal: $what (step $step/$steps, $((SECONDS - start)) s so far)" >&2
  (
    t0=$SECONDS
    while sleep 60 >/dev/null 2>&1; do
      echo "temporal:   ... still $what ($((SECONDS - t0)) s in this step, $((SECONDS - start)) s so far)" >&2
    done
  ) </dev/null >/dev/null 9>&- &
  heartbeat_pid=$!
}

fail() {
  stop_heartbeat
  echo "temporal: FAILED: $1 (step $step/$steps, after $((SECONDS - start)) s); the go command's error is above" >&2
  exit 1
}

# The pins are the whole truth: no go.mod/go.sum update, no version resolution, no other toolchain, no cgo.
export GOFLAGS="-mod=readonly -buildvcs=false"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOWORK=off

cd "$here"
begin "downloading the pinned modules"
go mod download || fail "downloading the modules of temporal/go.mod"
server_v="$(go list -m -f '{{.Version}}' go.temporal.io/server)" || fail "reading the server version"
server_dir="$(go list -m -f '{{.Dir}}' go.temporal.io/server)" || fail "locating the server module"

rm -rf "$dir/bin.tmp" "$dir/schema.tmp" "$dir/.complete"
mkdir -p "$dir/bin.tmp"

build() { # <binary> <package>
  local bin="$1" pkg="$2"
  begin "building $bin $server_v"
  go build -trimpath -ldflags "-s -w" -o "$dir/bin.tmp/$bin" "$pkg" \
    || fail "building $bin $server_v (go build -trimpath -o $bin $pkg, in temporal/)"
}

build temporal-server go.temporal.io/server/cmd/server
build temporal-sql-tool go.temporal.io/server/cmd/tools/sql

begin "copying the PostgreSQL schemas"
[[ -f "$server_dir/schema/postgresql/v12/temporal/schema.sql" ]] \
  || fail "no PostgreSQL schema in $server_dir/schema/postgresql/v12"
mkdir -p "$dir/schema.tmp/postgresql"
cp -R "$server_dir/schema/postgresql/v12" "$dir/schema.tmp/postgresql/v12" || fail "copying the schemas"
chmod -R u+w "$dir/schema.tmp"
find "$dir/schema.tmp" -name '*.go' -delete

cat >"$dir/versions.json.tmp" <<JSON
{"temporal_server": "$server_v", "go": "$(go env GOVERSION)"}
JSON

stop_heartbeat
rm -rf "$dir/bin" "$dir/schema"
mv "$dir/bin.tmp" "$dir/bin"
mv "$dir/schema.tmp" "$dir/schema"
mv "$dir/versions.json.tmp" "$dir/versions.json"
touch "$dir/.complete"
echo "temporal: done in $((SECONDS - start)) s: $dir" >&2
echo "$dir"
