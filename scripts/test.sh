#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test — the C++ suite in a
# release build and again under AddressSanitizer + UndefinedBehaviorSanitizer, a short run of every
# fuzz harness (scripts/fuzz.sh; the long runs are recorded in docs/reliability.md), then the Python
# tests that drive the binaries from outside (the HTTP server with the official openai client, and
# quantised checkpoints read back by an independent numpy reader, and structured outputs checked by jsonschema).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== formatting (.clang-format, clang-format 14)"
scripts/check_format.sh

echo "== release build"
scripts/build.sh release
echo "== release tests"
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 900
echo "== vendor plugin outside the tree (install, find_package, build examples/vendor-plugin, generate)"
scripts/test_vendor_plugin.sh build
echo "== the library outside the tree (install, find_package and pkg-config, build examples/library, generate)"
scripts/test_library_example.sh build

echo "== ASan + UBSan build"
scripts/build.sh asan
echo "== ASan + UBSan tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 1800

echo "== fuzz harnesses (clang-16, ASan + UBSan + libFuzzer): build, then a few seconds each"
scripts/build.sh fuzz
scripts/fuzz.sh "${FUZZ_SMOKE_SECONDS:-3}"

if [[ -d tests/server ]] && ls tests/server/*.py >/dev/null 2>&1; then
  echo "== Python tests (server, from outside)"
  python3 -m pip install -q -r tests/server/requirements.txt
  OPCHAIN_BIN="$PWD/build/apps/opchain/opchain" python3 -m pytest -q tests/server --ignore tests/server/test_http_robustness.py
  # The HTTP layer against hostile clients (raw sockets, stdlib only; about 15 s on 2 cores), once
  # on the release binary and once under ASan + UBSan, where a leak or overflow in connection
  # handling would show.
  echo "== HTTP robustness (release, then ASan + UBSan)"
  OPCHAIN_BIN="$PWD/build/apps/opchain/opchain" python3 -m pytest -q tests/server/test_http_robustness.py
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    OPCHAIN_BIN="$PWD/build-asan/apps/opchain/opchain" python3 -m pytest -q tests/server/test_http_robustness.py
fi

echo "== Python tests (structured outputs: generate --json-schema checked by the jsonschema validator)"
python3 -m pip install -q -r tests/structured_outputs/requirements.txt
OPCHAIN_BIN="$PWD/build/apps/opchain/opchain" python3 -m pytest -q tests/structured_outputs

echo "== Python tests (quantised checkpoints against an independent numpy reader)"
python3 -m pip install -q -r tests/quant/requirements.txt
OPCHAIN_BIN="$PWD/build/apps/opchain/opchain" python3 -m pytest -q tests/quant

echo "== Python tests (scale-out: mpirun -np 2 and 4, tensor and expert parallel, against one process)"
python3 -m pip install -q -r tests/dist/requirements.txt
OPCHAIN_BIN="$PWD/build/apps/opchain/opchain" python3 -m pytest -q tests/dist

echo "== Python module opchain (python/, from the build tree) under pytest"
python3 -m pip install -q -r tests/python/requirements.txt
PYTHONPATH="$PWD/build/python" OPCHAIN_BIN="$PWD/build/apps/opchain/opchain" python3 -m pytest -q tests/python
