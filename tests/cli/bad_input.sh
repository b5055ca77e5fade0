#!/usr/bin/env bash
# bad_input.sh (issue 13): broken operator configs of every kind cost only their own line in
# `list`, give the same status (1: the run records the operator failed, broken_operator.sh) and
# message from list, show and run (--dry-run or not), and never a Lua location; grids are counted and refused before they are expanded; option values
# that look like options are refused.
set -u
TB=${TILEBENCH:?}
FIX="${TILEBENCH_HOME:?}/tests/fixtures/operators/broken_unwritten"
ops=$(mktemp -d); [ -n "${KEEP:-}" ] && echo "kept $ops"
export TILEBENCH_OPERATOR_PATH=$ops TILEBENCH_RESULTS_DIR=$ops/results
export TILEBENCH_RUNNER=tests.fixtures.fake_runner # runs without a GPU
trap '[ -n "${KEEP:-}" ] || rm -rf "$ops"' EXIT
fail=0
bad() { echo "FAIL $*"; fail=1; }

# an operator folder from the fixture with case_grid replaced by $2 (YAML lines)
make_op() {
  mkdir -p "$ops/$1"
  sed 's/broken_unwritten/'"$1"'/' "$FIX/operator.lua" >"$ops/$1/operator.lua"
  cp "$FIX/broken_unwritten.cu" "$ops/$1/$1.cu"
  { grep -v '^  n:' "$FIX/config.yaml" | sed '/^case_grid:/d'; printf '%s\n' "$2"; } >"$ops/$1/config.yaml"
}
make_op good        $'case_grid:\n  n: [4096, 65536]'
make_op bad_yaml    $'case_grid:\n  n: [4096, 65536]: x'
make_op empty_grid  'case_grid: {}'
make_op empty_axis  $'case_grid:\n  n: []'
make_op tagged      $'case_grid:\n  n: !!set {4096: null}'
make_op bad_expr    $'case_grid:\n  n: {expr: "[0] * 10**18"}'
make_op long_expr   "case_grid:
  n: {expr: \"[$(printf '1+%.0s' $(seq 1 20000))1]\"}"
make_op huge_grid   $'case_grid:\n  n: {expr: "[i for i in range(1, 1001)]"}\n  m: {expr: "[i for i in range(1, 1001)]"}'
make_op bad_name    $'case_grid:\n  q: [1, 2]\nmetrics: {flops_expr: "n * r", bytes_expr: "n"}'
sed -i '/^metrics:/,/^  bytes_expr/{/^metrics:$/d;/^  flops_expr/d;/^  bytes_expr/d}' "$ops/bad_name/config.yaml"
broken="bad_yaml empty_grid empty_axis tagged bad_expr long_expr huge_grid bad_name"

# list: every good operator listed, one line of error per broken one, status 1
out=$(timeout 60 "$TB" list 2>"$ops/err"); rc=$?
[ $rc -eq 1 ] || bad "list with broken operators exited $rc"
grep -qE '^good +Data Layout +fp32 +2 ' <<<"$out" || bad "list lost the good operator: $out"
grep -qE '^softmax ' <<<"$out" || bad "list lost the built-in operators"
for op in $broken; do
  grep -q "^tilebench: $op: .*$op/config.yaml" "$ops/err" || bad "list: no message naming $op/config.yaml: $(cat "$ops/err")"
done
grep -qE '\.lua:[0-9]+:|stack traceback|attempt to' "$ops/err" && bad "list leaks Lua internals: $(cat "$ops/err")"

# the same status and message from run (dry or not) and show, for each broken operator
expected_msg() { grep "^tilebench: $1: " "$ops/err" | sed "s/^tilebench: $1: //"; }
for op in $broken; do
  msg=$(expected_msg "$op")
  for cmd in "run --operator $op --dry-run" "run --operator $op --gpu fake" "show $op"; do
    out=$(timeout 60 "$TB" $cmd 2>&1); rc=$?
    [ $rc -eq 1 ] || bad "$cmd exited $rc (list gave 1): $out"
    grep -qF -- "$msg" <<<"$out" || bad "$cmd: message differs from list's ($msg): $out"
  done
done

# what each broken config is told
grep -q "tagged/config.yaml:[0-9]*:[0-9]*: tag '!!set' on a mapping is not supported" "$ops/err" || bad "tag message"
grep -q "empty_grid/config.yaml: case_grid is empty: expected at least one parameter" "$ops/err" || bad "empty grid message"
grep -q "huge_grid/config.yaml: case_grid has 1000000 cases (n 1000 x m 1000 x dtype 1), more than the limit" "$ops/err" \
  || bad "grid limit message"
grep -q 'bad_expr/config.yaml: case_grid.n.expr: expression "\[0\] \* 10\*\*18": evaluation budget exceeded' "$ops/err" \
  || bad "budget message"
grep -q 'long_expr/config.yaml: case_grid.n.expr: expression "\[1+1+.*characters)": too long' "$ops/err" || bad "long expression"
grep -q 'bad_name/config.yaml: metrics.flops_expr: expression "n \* r": name "r" is not a case parameter' "$ops/err" \
  || bad "unknown name message"

# the grid limit is configurable; list and show count a grid without expanding it, so a
# million-case operator lists within a memory bound its expansion (~700 MB) would break
# (not under ASan, which reserves terabytes of address space)
vlimit=400000; [ -n "${TB_SANITIZE:-}" ] && vlimit=unlimited
out=$(ulimit -v $vlimit; TILEBENCH_MAX_CASES=1000000 timeout 60 "$TB" list 2>/dev/null)
grep -qE '^huge_grid +Data Layout +fp32 +1000000 ' <<<"$out" || bad "list with TILEBENCH_MAX_CASES=1000000: $out"
out=$(TILEBENCH_MAX_CASES=lots "$TB" list 2>&1); rc=$?
grep -q "TILEBENCH_MAX_CASES must be a positive integer, got 'lots'" <<<"$out" || bad "bad TILEBENCH_MAX_CASES: $out"

# a dry run exits as the run would
for sel in "--cases 99" "--cases 3-5" "--dtype fp16"; do
  "$TB" run --operator good $sel --dry-run >/dev/null 2>&1; a=$?
  "$TB" run --operator good $sel --gpu fake >/dev/null 2>&1; b=$?
  [ $a -eq $b ] && [ $a -ne 0 ] || bad "run $sel: dry run exited $a, run $b"
done

# a value that is an option, or a label that would read as one, is refused
for args in "--gpu -x" "--gpu --dry-run" "--gpu -" "--gpu --quiet"; do
  out=$("$TB" run --operator good $args --dry-run 2>&1); rc=$?
  [ $rc -eq 2 ] || bad "run $args exited $rc: $out"
  grep -qE "option --gpu (must not start with '-'|needs a value, got option)" <<<"$out" || bad "run $args: $out"
done
for cmd in "report --gpu -H200" "aggregate --gpu -H200"; do
  out=$("$TB" $cmd 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q "must not start with '-'" <<<"$out" || bad "$cmd exited $rc: $out"
done
[ $fail -eq 0 ] && echo "bad input: ok"
exit $fail
