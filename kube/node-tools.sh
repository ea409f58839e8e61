#!/usr/bin/env bash
# The node's tools from Debian's packages: kube-proxy (nftables mode) runs the `nft` command of `nftables`.
# Installed once when missing; without root or apt the real stack says what it lacks when it starts.
set -euo pipefail
if command -v nft >/dev/null 2>&1; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "kube: nft (Debian's nftables) is missing and cannot be installed here (needs root and apt-get);" \
    "the real stack's kube-proxy needs it" >&2
  exit 0
fi
echo "kube: installing nftables (kube-proxy's nft command) from Debian's packages" >&2
if ! { timeout 300 apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq --no-install-recommends nftables
  } >/dev/null; then
  echo "kube: FAILED: apt-get install nftables (apt unreachable?)" >&2
  exit 1
fi
