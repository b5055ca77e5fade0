#!/usr/bin/env bash
# `tilebench run` rejects bad flags and values with a message naming them, exit status 2, and
# before any GPU work (none of this needs a GPU). --dry-run plans without a device.
set -u
TB=${TILEBENCH:?}
export TILEBENCH_OPERATOR_PATH="${TILEBENCH_HOME:?}/tests/fixtures/operators"
export TILEBENCH_RESULTS_DIR=$(mktemp -d)
trap 'rm -rf "$TILEBENCH_RESULTS_DIR"' EXIT
fail=0
expect() { # status, pattern, args...
  local want=$1 pat=$2; shift 2
  local out rc
  out=$("$TB" run "$@" 2>&1); rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pat" <<<"$out"; then
    echo "FAIL run $* -> rc=$rc (want $want), output: $out"; fail=1
  else
    echo "ok   run $* -> $rc"
  fi
}
expect 2 "give a campaign .* or --operator"
expect 2 "option --gpu must be one path component" --operator broken_unwritten --gpu ../x
expect 2 "option --gpu must be one path component" --operator broken_unwritten --gpu "a/b"
expect 2 "option --shard: expected k/n with 1 <= k <= n, got '3/2'" --operator broken_unwritten --shard 3/2
expect 2 "option --shard: expected k/n" --operator broken_unwritten --shard x
expect 2 "option --case-timeout: must be > 0" --operator broken_unwritten --case-timeout 0
expect 2 "option --case-timeout expects a number, got 'soon'" --operator broken_unwritten --case-timeout soon
expect 2 "option --repeat: must be in \[1, 10000000\]" --operator broken_unwritten --repeat 0
expect 2 "option --warmup expects an integer, got '1.5'" --operator broken_unwritten --warmup 1.5
expect 2 "option --mode must be one of default, autotune, got 'fast'" --operator broken_unwritten --mode fast
expect 2 "option --timer must be one of cupti, events" --operator broken_unwritten --timer wall
expect 2 "option --gate-rho expects a number" --operator broken_unwritten --gate-rho high
expect 2 "option --cases: bad case list '1-x'" --operator broken_unwritten --cases 1-x
expect 2 "unknown option '--bogus'" --operator broken_unwritten --bogus
expect 2 "option --resume: '../x' is not a run id" --resume ../x
expect 2 "option --resume: no run 'nosuchrun'" --resume nosuchrun
expect 2 "unknown operator 'no_such_op'" --operator no_such_op
expect 2 "no selected operator has implementation 'triton'" --operator broken_unwritten --impl triton
expect 2 "no campaign file 'nosuch.lua'" nosuch.lua
expect 2 "unexpected argument 'extra'" smoke extra
bad=$(mktemp --suffix=.lua); echo 'return { operaters = "all" }' >"$bad"
expect 2 "unknown field 'operaters'" "$bad"
rm -f "$bad"
# A bad environment value stops every command before it starts.
out=$(TILEBENCH_SYNC_TIMEOUT=soon "$TB" run --operator broken_unwritten --dry-run 2>&1); rc=$?
if [ "$rc" -ne 2 ] || ! grep -q "TILEBENCH_SYNC_TIMEOUT='soon': expected seconds > 0" <<<"$out"; then
  echo "FAIL TILEBENCH_SYNC_TIMEOUT=soon -> rc=$rc, output: $out"; fail=1
else
  echo "ok   TILEBENCH_SYNC_TIMEOUT=soon -> 2"
fi
# --dry-run plans without touching a device
expect 0 "broken_unwritten \(Data Layout\): 2 cases, implementations good,broken" --operator broken_unwritten --cases ends --dry-run
expect 0 "^2 work items" --operator broken_unwritten,broken_wrong_result --cases first --dry-run
expect 0 "autotune" --operator broken_unwritten --autotune --cases first --dry-run
expect 0 "^1 work items" --operator broken_unwritten,broken_wrong_result --shard 2/6 --dry-run
exit $fail
