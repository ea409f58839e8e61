# Sourced by kube/build.sh and temporal/build.sh: a cache dir keyed by Go module pins, built once under a
# lock, with a progress line a minute. Before sourcing, the caller sets:
#   label      the prefix of every line it prints ("kube", "temporal")
#   binaries   the executables a complete cache holds in bin/
#   make_hint  the command that builds it, for `--check`'s message
# and then calls `go_cache_open <cache root> <recipe> <dir for go version> <pin file>...`, which prints the
# cache dir and exits when it is complete (or, with --check as the script's argument, exits 3 when not), and
# otherwise returns holding the lock with `dir` set. `begin "<step>"` starts a step, `fail "<what>"` stops.

# Go's own installer puts it here; a non-login shell may not have it on PATH.
if ! command -v go >/dev/null 2>&1 && [[ -x /usr/local/go/bin/go ]]; then
  PATH="$PATH:/usr/local/go/bin"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "$label: the go command is not on PATH (Go >= 1.26.8 is needed)" >&2
  exit 1
fi

go_cache_complete() {
  [[ -f "$dir/.complete" ]] || return 1
  local b
  for b in "${binaries[@]}"; do
    [[ -x "$dir/bin/$b" ]] || return 1
  done
}

go_cache_open() { # <cache root> <recipe> <dir for go version> <pin file>... ; then the script's "$1"
  local root="$1" recipe="$2" version_dir="$3" mode="${!#}"
  shift 3
  local pins=("${@:1:$#-1}")
  local key
  key="$(
    {
      echo "recipe $recipe"
      (cd "$version_dir" && go version)
      local f
      for f in "${pins[@]}"; do
        echo "== $f"
        cat "$f"
      done
    } | sha256sum | cut -c1-16
  )"
  dir="$root/$key"
  if go_cache_complete; then
    echo "$dir"
    exit 0
  fi
  # `build.sh --check`: only say whether the cache is complete (exit 3 when it is not), never build.
  if [[ "$mode" == "--check" ]]; then
    echo "$label: not built yet ($dir); $make_hint builds it" >&2
    exit 3
  fi
  mkdir -p "$dir"
  # One build at a time per cache dir (two test workers may ask at once); the loser then finds it complete.
  exec 9>"$dir/.lock"
  flock 9
  if go_cache_complete; then
    echo "$dir"
    exit 0
  fi
  start=$SECONDS
  step=0
  trap stop_heartbeat EXIT
}

heartbeat_pid=""
stop_heartbeat() {
  if [[ -n "$heartbeat_pid" ]]; then
    kill "$heartbeat_pid" 2>/dev/null || true
    wait "$heartbeat_pid" 2>/dev/null || true
    heartbeat_pid=""
  fi
}

# Prints the step's line, and a line a minute while it runs (a cold build takes many minutes).
begin() {
  stop_heartbeat
  step=$((step + 1))
  local what="$1"
  echo "$label: $what (step $step/$steps, $((SECONDS - start)) s so far)" >&2
  (
    t0=$SECONDS
    while sleep 60 >/dev/null 2>&1; do
      echo "$label:   ... still $what ($((SECONDS - t0)) s in this step, $((SECONDS - start)) s so far)" >&2
    done
  ) </dev/null >/dev/null 9>&- &
  heartbeat_pid=$!
}

fail() {
  stop_heartbeat
  echo "$label: FAILED: $1 (step $step/$steps, after $((SECONDS - start)) s); the go command's error is above" >&2
  exit 1
}

# The pins are the whole truth: no go.mod/go.sum update, no version resolution, no other toolchain, no cgo.
export GOFLAGS="-mod=readonly -buildvcs=false"
export GOTOOLCHAIN=local
export CGO_ENABLED=0
export GOWORK=off
