#!/usr/bin/env bash
# Fails when a tracked C or C++ source differs from what .clang-format says.
#   scripts/check_format.sh          check (CI)
#   scripts/check_format.sh --fix    rewrite the files in place
# Pinned to clang-format 14, Debian bookworm's: other major versions break some lines differently,
# so a check with them would fail on code that is formatted.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=""
for c in clang-format-14 clang-format; do
  if command -v "$c" >/dev/null && "$c" --version | grep -q 'version 14\.'; then tool=$c; break; fi
done
if [[ -z $tool ]]; then
  echo "check_format: clang-format 14 not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.inc' '*.cu' '*.cuh')
if [[ ${1:-} == --fix ]]; then
  "$tool" -i "${files[@]}"
  exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$tool" --dry-run -Werror "${files[@]}" 2>"$log"; then
  grep -E '^[^ ].*: (error|warning):' "$log" | cut -d: -f1 | sort -u | sed 's/^/  not formatted: /' >&2
  echo "check_format: run scripts/check_format.sh --fix" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
