#!/usr/bin/env bash
# Installs the Debian packages opchain builds and tests with. Safe to run again.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libboost-dev libicu-dev
  python3 python3-numpy
  # scripts/check_format.sh: the formatter .clang-format is written for (bookworm's 14).
  clang-format
  # The Python module (python/, docs/library.md) and its tests.
  python3-dev pybind11-dev python3-pytest
  # The fuzz harnesses (scripts/fuzz.sh): Debian's default clang 14 cannot build our sources
  # (std::source_location needs clang >= 15 with libstdc++; io/jinja/ captures a structured
  # binding in a lambda, which needs clang >= 16). libclang-rt holds libFuzzer and the sanitizers.
  clang-16 libclang-rt-16-dev
  # Tensor and expert parallelism across processes (#15): libopchain_mpi.so and the mpirun tests.
  libopenmpi-dev openmpi-bin
)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
