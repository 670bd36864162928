#!/usr/bin/env bash
# The library path (docs/library.md), end to end: installs opchain from a build folder to a temporary
# prefix, checks the installed include/opchain/opchain.h compiles alone (no internal header), builds
# examples/library against the prefix twice, with find_package(opchain) and with pkg-config, and
# requires both, and the installed Python module, to generate the tokens and text that
# `opchain generate --temperature 0` does.
#   scripts/test_library_example.sh [build-folder]     (default build; a few seconds after the build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
echo '#include <opchain/opchain.h>' >"$tmp/api.cpp"
"${CXX:-c++}" -std=c++17 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" "$tmp/api.cpp"

cmake -S examples/library -B "$tmp/example" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/example" >/dev/null
pc=$(dirname "$(find "$prefix" -name opchain.pc | head -1)")
libdir=$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir opchain)
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
"${CXX:-c++}" -std=c++20 examples/library/generate.cpp -o "$tmp/generate-pc" \
  $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs opchain) -Wl,-rpath,"$libdir"

model=models/trained-qwen3-moe prompt="The cat" n=12
json=$("$prefix/bin/opchain" generate --model "$model" --prompt "$prompt" --temperature 0 --max-new-tokens "$n" --json 2>/dev/null)
cli_ids=$(python3 -c 'import json, sys; print(" ".join(map(str, json.loads(sys.stdin.read())["ids"])))' <<<"$json")
cli_text=$("$prefix/bin/opchain" generate --model "$model" --prompt "$prompt" --temperature 0 --max-new-tokens "$n" 2>/dev/null)
check() {  # name, output of the example program
  local ids text
  ids=$(sed -n 's/^token_ids: *//p' <<<"$2")
  text=${2%%$'\n'token_ids:*}
  if [[ "$ids" != "$cli_ids" || "$text" != "$cli_text" ]]; then
    echo "library example ($1): generated '$text' [$ids], opchain generate '$cli_text' [$cli_ids]" >&2
    exit 1
  fi
}
check find_package "$("$tmp/example/generate" "$model" "$prompt" "$n")"
check pkg-config "$("$tmp/generate-pc" "$model" "$prompt" "$n")"

if compgen -G "$libdir/opchain*.so" >/dev/null; then
  py_ids=$(PYTHONPATH="$libdir" python3 -c '
import sys, opchain
out = opchain.LLM(sys.argv[1]).generate([sys.argv[2]], opchain.SamplingParams(temperature=0, max_tokens=int(sys.argv[3])))
print(" ".join(map(str, out[0].token_ids)))' "$model" "$prompt" "$n")
  if [[ "$py_ids" != "$cli_ids" ]]; then
    echo "installed Python module generated [$py_ids], opchain generate [$cli_ids]" >&2
    exit 1
  fi
  echo "library example: find_package, pkg-config and the installed Python module generate as opchain generate does:$cli_text"
else
  echo "library example: find_package and pkg-config builds generate as opchain generate does:$cli_text (no Python module built)"
fi
