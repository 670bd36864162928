#!/usr/bin/env bash
# The out-of-tree vendor path (docs/writing-a-vendor.md), end to end: installs opchain from a build
# folder to a temporary prefix, checks the installed ABI header compiles alone as C99 and as C++,
# configures and builds examples/vendor-plugin against the prefix with find_package(opchain), and
# requires `opchain generate --vendor-plugin libexample.so --vendor example` to print what cpu prints.
#   scripts/test_vendor_plugin.sh [build-folder]     (default build; a few seconds after the build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
echo '#include <opchain/vendor_abi.h>' >"$tmp/abi.c"
cp "$tmp/abi.c" "$tmp/abi.cpp"
"${CC:-cc}" -std=c99 -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$tmp/prefix/include" "$tmp/abi.c"
"${CXX:-c++}" -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$tmp/prefix/include" "$tmp/abi.cpp"
cmake -S examples/vendor-plugin -B "$tmp/example" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/example" >/dev/null
opchain="$tmp/prefix/bin/opchain"
args=(generate --model models/trained-qwen3-moe --prompt "The cat" --temperature 0 --max-new-tokens 12)
cpu=$("$opchain" "${args[@]}" --vendor cpu 2>/dev/null)
example=$("$opchain" "${args[@]}" --vendor-plugin "$tmp/example/libexample.so" --vendor example 2>/dev/null)
if [[ "$cpu" != "$example" ]]; then
  echo "vendor plugin: example generated '$example', cpu '$cpu'" >&2
  exit 1
fi
echo "vendor plugin: examples/vendor-plugin built against the installed package generates as cpu does:$example"
