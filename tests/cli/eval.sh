#!/usr/bin/env bash
# eval.sh: `tilebench task` and `tilebench eval` without a GPU. task writes the document from the
# operator folder (the kernel's declaration, the launches, the reference); eval's usage errors
# exit 2; a candidate that does not compile (NVRTC, and triton where it imports) or that lacks the
# kernel the plan launches is a full verdict here (compile_error, exit 4, the compiler's log in the
# JSON); a Triton file importing torch is refused by the screen (exit 5); a file that compiles
# gets as far as the device (no_device, exit 2, or a real verdict where a GPU is present).
set -u
: "${TILEBENCH:?}"
fx="${TILEBENCH_HOME:?}/tests/fixtures/eval"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TILEBENCH_CACHE_DIR="$tmp/cache"
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"v": v}))' "$@"; }

# task
"$TILEBENCH" task --operator vector_add --backend cuda > "$tmp/task.md" || fail "task cuda"
grep -q '^vector_add_cuda(const DTYPE \*__restrict__ x' "$tmp/task.md" || fail "task: no declaration"
grep -q 'defines: BLOCK=128 DTYPE=float UNROLL=1' "$tmp/task.md" || fail "task: no launch defines"
grep -q 'defines: BLOCK=128 DTYPE=__half UNROLL=2' "$tmp/task.md" || fail "task: the family's default rule (UNROLL 2 for 2-byte dtypes)"
grep -q '^    return x + y' "$tmp/task.md" || fail "task: no torch reference"
grep -q '^### fp16, case n=20971520' "$tmp/task.md" || fail "task: representative case"
"$TILEBENCH" task --operator softmax --backend triton --output "$tmp/t.md" || fail "task --output"
grep -q '^def softmax_kernel(x, out, rows, cols, BLOCK: tl.constexpr):' "$tmp/t.md" || fail "task triton: no def"
"$TILEBENCH" task --operator vector_add > /dev/null 2>&1; [ $? -eq 2 ] || fail "task without --backend: want 2"
"$TILEBENCH" task --operator nope --backend cuda > /dev/null 2>&1; [ $? -eq 2 ] || fail "task unknown operator: want 2"

# every operator's document, for each backend it has a source for: launches of its own, each
# with a declaration found in the source
for op in $("$TILEBENCH" list 2>/dev/null | awk 'NR > 1 {print $1}'); do
  for be in cuda triton; do
    "$TILEBENCH" task --operator "$op" --backend "$be" > "$tmp/all.md" 2> "$tmp/all.err"; rc=$?
    if [ $rc -eq 2 ] && grep -q "implementation" "$tmp/all.err"; then continue; fi # no such backend
    [ $rc -eq 0 ] || fail "task $op $be: $(cat "$tmp/all.err")"
    grep -q '^- \*\*yours\*\*' "$tmp/all.md" || fail "task $op $be: no launch of the candidate's"
    grep -q 'no declaration of' "$tmp/all.md" && fail "task $op $be: a declaration not found"
  done
done

# eval: usage
"$TILEBENCH" eval --impl "$fx/honest.cu" > /dev/null 2>&1; [ $? -eq 2 ] || fail "eval without --operator"
"$TILEBENCH" eval --operator vector_add --impl "$tmp/none.cu" > /dev/null 2>&1; [ $? -eq 2 ] || fail "eval missing file"
cp "$fx/honest.cu" "$tmp/honest.txt"
err=$("$TILEBENCH" eval --operator vector_add --impl "$tmp/honest.txt" 2>&1); [ $? -eq 2 ] || fail "eval unknown extension"
grep -q "give --backend" <<<"$err" || fail "extension message: $err"
"$TILEBENCH" eval --operator vector_add --impl "$fx/honest.cu" --dtype fp64 > /dev/null 2>&1; [ $? -eq 2 ] || fail "eval bad dtype"
"$TILEBENCH" eval --operator vector_add --impl "$fx/honest.cu" --cases x > /dev/null 2>&1; [ $? -eq 2 ] || fail "eval bad cases"

# eval: compile errors are full verdicts without a GPU
"$TILEBENCH" eval --operator vector_add --impl "$fx/syntax_error.cu" --json > "$tmp/v.json"; rc=$?
[ $rc -eq 4 ] || fail "syntax_error exit $rc"
[ "$(field "$tmp/v.json" 'v["status"], v["exit"], v["compile"]["ok"], v["backend"], v["replaces"]')" = "('compile_error', 4, False, 'cuda', 'vector_add.cu')" ] \
  || fail "syntax_error verdict: $(cat "$tmp/v.json")"
field "$tmp/v.json" 'any("syntax_error.cu(6): error: expected a \";\"" in l for l in v["compile_log"])' | grep -q True \
  || fail "compile log lines: $(cat "$tmp/v.json")"
"$TILEBENCH" eval --operator vector_add --impl "$fx/misnamed.cu" --json > "$tmp/v.json"; rc=$?
[ $rc -eq 4 ] || fail "misnamed exit $rc"
grep -q 'defines no kernel vector_add_cuda' "$tmp/v.json" || fail "misnamed reason: $(cat "$tmp/v.json")"
"$TILEBENCH" eval --operator vector_add --impl "$fx/side_stream.cu" --cases first > "$tmp/v.txt"; rc=$?
[ $rc -eq 4 ] || fail "side_stream exit $rc"
grep -q 'cudaStreamCreateWithFlags" is undefined' "$tmp/v.txt" || fail "side_stream log: $(cat "$tmp/v.txt")"
# a kernel that hands the work to cuBLASLt: a host function, which NVRTC's device-only code cannot call
"$TILEBENCH" eval --operator vector_add --impl "$fx/calls_cublaslt.cu" --cases first > "$tmp/v.txt"; rc=$?
[ $rc -eq 4 ] || fail "calls_cublaslt exit $rc"
grep -q 'calls_cublaslt.cu(8): error: .*host functions are not allowed' "$tmp/v.txt" || fail "calls_cublaslt log: $(cat "$tmp/v.txt")"

# a Triton file that imports torch: refused before it is compiled (no triton needed)
"$TILEBENCH" eval --operator vector_add --impl "$fx/torch_delegating.py" --json > "$tmp/v.json"; rc=$?
[ $rc -eq 5 ] || fail "torch_delegating exit $rc"
[ "$(field "$tmp/v.json" 'v["status"], v["checks"][0]["name"]')" = "('refused', 'screen')" ] || fail "screen verdict: $(cat "$tmp/v.json")"
grep -q 'line 3 imports torch' "$tmp/v.json" || fail "screen reason"

# triton compile errors, where triton imports
if "$TILEBENCH" script <(echo 'os.exit(require("tilebench.triton").available() and 0 or 1)') 2>/dev/null; then
  "$TILEBENCH" eval --operator vector_add --impl "$fx/triton_error.py" --dtype fp16 --json > "$tmp/v.json"; rc=$?
  [ $rc -eq 4 ] || fail "triton_error exit $rc"
  grep -q "has no attribute 'nonexistent'" "$tmp/v.json" || fail "triton log: $(cat "$tmp/v.json")"
fi

# a file that compiles: as far as the device goes
"$TILEBENCH" eval --operator vector_add --impl "$fx/honest.cu" --dtype fp32 --cases first --json > "$tmp/v.json"; rc=$?
if "$TILEBENCH" devices > /dev/null 2>&1; then
  [ $rc -eq 0 ] || fail "honest on a GPU: exit $rc $(cat "$tmp/v.json")"
else
  [ $rc -eq 2 ] || fail "honest without a GPU: exit $rc"
  [ "$(field "$tmp/v.json" 'v["status"], v["compile"]["ok"]')" = "('no_device', True)" ] || fail "no_device verdict: $(cat "$tmp/v.json")"
fi
# `run --checks`: every planned item carries the checks (run.json keeps them for --resume)
( export TILEBENCH_OPERATOR_PATH="${TILEBENCH_HOME}/tests/fixtures/operators" TILEBENCH_RUNNER=tests.fixtures.fake_runner \
    TILEBENCH_RESULTS_DIR="$tmp/results"
  "$TILEBENCH" run --operator broken_wrong_result --checks --cases first --gpu fake --quiet --no-precompile > "$tmp/run.out" 2>&1 ) \
  || fail "run --checks: $(cat "$tmp/run.out")"
field "$(ls "$tmp"/results/fake/runs/*/run.json)" 'len(v["items"]) > 0 and all(it.get("checks") is True for it in v["items"])' \
  | grep -q True || fail "run --checks: items without checks"
echo ok
