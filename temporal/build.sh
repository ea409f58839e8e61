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
label=temporal
make_hint="make temporal-server"
steps=4
# shellcheck source=kube/go-cache.sh
source "$here/../kube/go-cache.sh"

cd "$here"
go_cache_open "${RAYPILOT_TEMPORAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/raypilot/temporal}" "$RECIPE" \
  "$here" go.mod go.sum "${1:-}"

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
