#!/usr/bin/env bash
# Configures and builds one flavour of opchain with Ninja (and ccache when present).
#   scripts/build.sh [release|asan]   -> build/ or build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
case "$flavour" in
  release) dir=build; args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan)    dir=build-asan; args=(-DCMAKE_BUILD_TYPE=Debug -DOPCHAIN_SANITIZE=ON) ;;
  *) echo "usage: scripts/build.sh [release|asan]" >&2; exit 2 ;;
esac
# ccache keys on relative paths so a fresh clone elsewhere reuses earlier builds.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
cmake -S . -B "$dir" -G Ninja "${args[@]}" -DOPCHAIN_DEV_EXCLUDE= >/dev/null
ninja -C "$dir"
