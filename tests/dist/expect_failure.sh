#!/usr/bin/env bash
# Runs a command that must fail, for the failure tests of tests/dist/CMakeLists.txt:
#   expect_failure.sh [--within SECONDS] [--expect REGEX]... -- COMMAND...
# Passes when COMMAND exits non-zero within SECONDS (default 60) and its output, stdout and stderr
# together, has a line matching each REGEX (grep -E). ctest's WILL_FAIL alone would also pass a crash
# with the wrong message, and PASS_REGULAR_EXPRESSION ignores the exit status.
set -u
within=60
patterns=()
while (($#)) && [[ $1 != -- ]]; do
  case $1 in
    --within) within=$2; shift 2 ;;
    --expect) patterns+=("$2"); shift 2 ;;
    *) echo "expect_failure: unknown option $1" >&2; exit 2 ;;
  esac
done
shift  # the --
start=$SECONDS
# timeout signals mpirun, which ends its ranks; -k kills it if it does not.
out=$(timeout -k 5 "$within" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
echo "expect_failure: exit status $rc after $((SECONDS - start)) s"
if ((rc == 124 || rc == 137)); then
  echo "expect_failure: FAILED: still running after ${within} s; a failure must end the job" >&2
  exit 1
fi
if ((rc == 0)); then
  echo "expect_failure: FAILED: the command succeeded; it should have failed" >&2
  exit 1
fi
for p in "${patterns[@]}"; do
  if ! grep -Eq -- "$p" <<<"$out"; then
    echo "expect_failure: FAILED: no line of the output matches: $p" >&2
    exit 1
  fi
done
