#!/usr/bin/env bash
# Runs every libFuzzer harness of fuzz/ for SECONDS each (default 60), one after another on one core,
# and prints executions, coverage and findings per harness. Build first: scripts/build.sh fuzz.
#   scripts/fuzz.sh [SECONDS]            all harnesses
#   FUZZERS="jinja npy" scripts/fuzz.sh  a subset (names without _fuzzer)
#   FUZZ_RUNS=1000000 scripts/fuzz.sh 1800  stop each harness after that many executions (long runs)
# Limits that make hangs and runaway memory count as findings: -timeout=10 (seconds per input) and
# -rss_limit_mb=2048 (also caps a single allocation at 2048 MB). Inputs found go to
# build-fuzz/corpus/<name> (seeded from fuzz/corpus/<name>), crashes to build-fuzz/artifacts/<name>/.
# Exit status 1 when any harness found something.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
bin=build-fuzz/fuzz
[[ -d $bin ]] || { echo "no $bin: run scripts/build.sh fuzz first" >&2; exit 2; }

# The dictionary of each harness's input format (fuzz/dict/<format>.dict).
declare -A dict=(
  [safetensors]=safetensors [safetensors_index]=safetensors_index [config]=config
  [generation_config]=generation_config [tokenizer_json]=tokenizer [tokenizer_config]=tokenizer_config
  [tokenizer_encode]=text [jinja]=jinja [chat_template]=chat [openai_request]=openai [npy]=npy
)
names="${FUZZERS:-safetensors safetensors_index config generation_config tokenizer_json tokenizer_config tokenizer_encode jinja chat_template openai_request npy}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
mkdir -p build-fuzz/logs
# The harnesses write each input to a scratch file (the parsers read by path): on tmpfs that costs
# microseconds, on disk milliseconds (300 executions a second instead of 10000+).
scratch=build-fuzz/tmp
[[ -d /dev/shm && -w /dev/shm ]] && scratch=/dev/shm/opchain-fuzz-$$
mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
export TMPDIR="$scratch"

failed=0
printf '%-20s %12s %8s %8s %s\n' harness executions cov ft findings
for name in $names; do
  corpus="build-fuzz/corpus/$name" artifacts="build-fuzz/artifacts/$name/" log="build-fuzz/logs/$name.log"
  mkdir -p "$corpus" "$artifacts"
  status=0
  "$bin/${name}_fuzzer" "$corpus" "fuzz/corpus/$name" -dict="fuzz/dict/${dict[$name]}.dict" \
    -max_total_time="$seconds" ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts" >"$log" 2>&1 || status=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(grep -o 'cov: [0-9]*' <<<"$last" | grep -o '[0-9]*' || true)
  ft=$(grep -o 'ft: [0-9]*' <<<"$last" | grep -o '[0-9]*' || true)
  findings=$(find "$artifacts" -type f | wc -l)
  if ((status != 0 || findings > 0)); then
    failed=1
    note="$findings in $artifacts (exit $status; log $log)"
  else
    note=none
  fi
  printf '%-20s %12s %8s %8s %s\n' "$name" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$note"
done
exit $failed
