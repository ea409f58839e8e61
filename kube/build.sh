#!/usr/bin/env bash
# Builds the real Kubernetes components from the Go modules pinned in kube/*/go.mod + go.sum (through the Go
# module proxy only) into a cache outside the clone, and prints that cache dir as the last line on stdout.
#
#   <cache>/bin/{etcd,kube-apiserver,kube-controller-manager,kube-proxy,kubectl,kuberay-operator}
#   <cache>/crds/kuberay/*.yaml       KubeRay's CRDs (ray.io), from the ray-operator module
#   <cache>/crds/gateway-api/*.yaml   Gateway API standard CRDs, the version KubeRay requires
#   <cache>/rbac/kuberay-operator.yaml  KubeRay's operator ClusterRole (config/rbac/role.yaml of its module)
#   <cache>/versions.json
#
# <cache> = ${RAYPILOT_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/raypilot/kube}/<key>, where <key> hashes the
# pins, `go version` and RECIPE below. A complete cache is reused at once; progress goes to stderr.
set -euo pipefail

# Bump when a build flag below changes, so caches built the old way are not reused.
RECIPE=3

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
modules=(etcd kubernetes kuberay)
binaries=(etcd kube-apiserver kube-controller-manager kube-proxy kubectl kuberay-operator)
label=kube
make_hint="make kube"
steps=8
# shellcheck source=kube/go-cache.sh
source "$here/go-cache.sh"

pins=()
for m in "${modules[@]}"; do
  pins+=("$m/go.mod" "$m/go.sum")
done
cd "$here"
go_cache_open "${RAYPILOT_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/raypilot/kube}" "$RECIPE" \
  "$here/kubernetes" "${pins[@]}" "${1:-}"

modversion() { # <module dir> <module path>
  (cd "$here/$1" && go list -m -f '{{.Version}}' "$2")
}
moddir() { # <module dir> <module path>
  (cd "$here/$1" && go list -m -f '{{.Dir}}' "$2")
}

begin "downloading the pinned modules"
for m in "${modules[@]}"; do
  (cd "$here/$m" && go mod download) || fail "downloading the modules of kube/$m/go.mod"
done
etcd_v="$(modversion etcd go.etcd.io/etcd/server/v3)" || fail "reading the etcd version"
kube_v="$(modversion kubernetes k8s.io/kubernetes)" || fail "reading the kubernetes version"
kuberay_v="$(modversion kuberay github.com/ray-project/kuberay/ray-operator)" || fail "reading the kuberay version"
gateway_v="$(modversion kuberay sigs.k8s.io/gateway-api)" || fail "reading the gateway-api version"

rm -rf "$dir/bin.tmp" "$dir/crds.tmp" "$dir/rbac.tmp" "$dir/.complete"
mkdir -p "$dir/bin.tmp"

build() { # <module dir> <binary> <version> <package> [ldflags]
  local m="$1" bin="$2" version="$3" pkg="$4" ldflags="-s -w ${5:-}"
  begin "building $bin $version"
  (cd "$here/$m" && go build -trimpath -ldflags "$ldflags" -o "$dir/bin.tmp/$bin" "$pkg") \
    || fail "building $bin $version (go build -trimpath -o $bin $pkg, in kube/$m)"
}

build etcd etcd "$etcd_v" go.etcd.io/etcd/server/v3

# What upstream's hack/lib/version.sh sets, so /version and `kubectl version` tell the truth. The module
# proxy does not tell the commit: gitCommit is left empty rather than the source's "$Format:%H$".
major="${kube_v#v}"
major="${major%%.*}"
minor="${kube_v#v*.}"
minor="${minor%%.*}"
kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$kube_v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  kube_ldflags+=" -X $pkg.gitCommit= -X $pkg.gitTreeState=clean"
done
for bin in kube-apiserver kube-controller-manager kube-proxy kubectl; do
  build kubernetes "$bin" "$kube_v" "k8s.io/kubernetes/cmd/$bin" "$kube_ldflags"
done

build kuberay kuberay-operator "$kuberay_v" github.com/ray-project/kuberay/ray-operator

begin "copying the CRDs (KubeRay $kuberay_v, Gateway API $gateway_v)"
kuberay_dir="$(moddir kuberay github.com/ray-project/kuberay/ray-operator)" || fail "locating the ray-operator module"
gateway_dir="$(moddir kuberay sigs.k8s.io/gateway-api)" || fail "locating the gateway-api module"
mkdir -p "$dir/crds.tmp/kuberay" "$dir/crds.tmp/gateway-api"
shopt -s nullglob
kuberay_crds=("$kuberay_dir"/config/crd/bases/*.yaml)
gateway_crds=("$gateway_dir"/config/crd/standard/*.yaml)
shopt -u nullglob
((${#kuberay_crds[@]} > 0)) || fail "no CRDs in $kuberay_dir/config/crd/bases"
((${#gateway_crds[@]} > 0)) || fail "no CRDs in $gateway_dir/config/crd/standard"
install -m 0644 "${kuberay_crds[@]}" "$dir/crds.tmp/kuberay/" || fail "copying KubeRay's CRDs"
install -m 0644 "${gateway_crds[@]}" "$dir/crds.tmp/gateway-api/" || fail "copying the Gateway API CRDs"
mkdir -p "$dir/rbac.tmp"
install -m 0644 "$kuberay_dir/config/rbac/role.yaml" "$dir/rbac.tmp/kuberay-operator.yaml" \
  || fail "copying KubeRay's operator ClusterRole"

cat >"$dir/versions.json.tmp" <<EOF
{"etcd": "$etcd_v", "kubernetes": "$kube_v", "kuberay": "$kuberay_v", "gateway_api": "$gateway_v", "go": "$(go env GOVERSION)"}
EOF

stop_heartbeat
rm -rf "$dir/bin" "$dir/crds" "$dir/rbac"
mv "$dir/bin.tmp" "$dir/bin"
mv "$dir/crds.tmp" "$dir/crds"
mv "$dir/rbac.tmp" "$dir/rbac"
mv "$dir/versions.json.tmp" "$dir/versions.json"
touch "$dir/.complete"
echo "kube: done in $((SECONDS - start)) s: $dir" >&2
echo "$dir"
