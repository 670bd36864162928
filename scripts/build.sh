#!/usr/bin/env bash
# Configures and builds one flavour of opchain with Ninja (and ccache when present).
#   scripts/build.sh [release|asan|fuzz]   -> build/, build-asan/ or build-fuzz/
# fuzz: the libFuzzer harnesses of fuzz/ only, with clang-16 (scripts/install-deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
flavour="${1:-release}"
case "$flavour" in
  release) dir=build; args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan)    dir=build-asan; args=(-DCMAKE_BUILD_TYPE=Debug -DOPCHAIN_SANITIZE=ON) ;;
  fuzz)    dir=build-fuzz; target=fuzzers
           args=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++-16 -DOPCHAIN_FUZZ=ON
                 -DOPCHAIN_BUILD_TESTS=OFF -DOPCHAIN_BUILD_BENCHMARKS=OFF) ;;
  *) echo "usage: scripts/build.sh [release|asan|fuzz]" >&2; exit 2 ;;
esac
# ccache keys on relative paths so a fresh clone elsewhere reuses earlier builds.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=true
cmake -S . -B "$dir" -G Ninja "${args[@]}" -DOPCHAIN_DEV_EXCLUDE= >/dev/null
# NINJA_JOBS=2 caps the parallel jobs on a shared machine (ninja's default is cores + 1 or 2).
ninja -C "$dir" ${NINJA_JOBS:+-j "$NINJA_JOBS"} ${target:-}
