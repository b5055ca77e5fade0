#!/usr/bin/env bash
# refine.sh: `tilebench refine` against a scripted generator (tests/fixtures/refine/generator.sh
# replaying answers: a file that does not compile, a wrong one, a slow one, a fast one) with the
# real `tilebench eval` (real NVRTC compiles) over a stand-in GPU (tests/fixtures/fake_eval_runner.lua
# reports what each file's `fake-gpu:` line scripts). Checks the trajectory, the freeze rule (rho
# >= 0.8 stops the loop), the best verify-clean iteration, the prompts (the previous file, the
# compiler's log, the best file after a regression), the token arithmetic, and --resume (only
# the iterations without iteration.json run again; the summary comes out the same).
set -u
: "${TILEBENCH:?}"
fx="${TILEBENCH_HOME:?}/tests/fixtures/refine"
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TILEBENCH_CACHE_DIR="$tmp/cache" TILEBENCH_RUNNER=tests.fixtures.fake_eval_runner
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"v": v}))' "$@"; }

# climb: compile_error, wrong, slow ok (rho 0.3), fast ok (rho 0.85): frozen at 4 (answer 5 unused)
TB_SCRIPT="$fx/climb" TB_CALLS="$tmp/calls" "$TILEBENCH" refine --operator vector_add --backend cuda --dtype fp32 \
  --generator "$fx/generator.sh" --run-dir "$tmp/climb" > "$tmp/out.txt" 2>&1 || fail "refine: $(cat "$tmp/out.txt")"
d="$tmp/climb/fp32"
[ "$(for i in 01 02 03 04; do field "$d/$i/iteration.json" 'v["status"]'; done | tr '\n' ' ')" = "compile_error wrong ok ok " ] \
  || fail "trajectory: $(cat "$tmp/out.txt")"
[ ! -e "$d/05" ] || fail "the loop went on after rho 0.85 >= 0.8"
[ "$(wc -l < "$tmp/calls")" -eq 4 ] || fail "generator calls: $(cat "$tmp/calls")"
s="$tmp/climb/summary.json"
[ "$(field "$s" '(v["dtypes"][0]["best_iteration"], v["dtypes"][0]["frozen_at"], v["verify_clean"], v["iterations"], v["tokens"])')" = "(4, 4, 2, 4, 6200)" ] \
  || fail "summary: $(cat "$s")"
field "$s" 'abs(v["token_efficiency"] - 2.0 / 0.0062) < 1e-9 and v["dtypes"][0]["gated_speedup"] == 2' | grep -q True || fail "token arithmetic: $(cat "$s")"
grep -q '^vector_add.cu(6): error: expected a ";"' "$d/02/prompt.md" || fail "prompt 2 lacks the compile log"
grep -q '^| 1 | compile_error |' "$d/02/prompt.md" || fail "prompt 2 lacks the trajectory"
grep -q 'output out\[2\]: got 1.5, expected 2.5' "$d/03/prompt.md" || fail "prompt 3 lacks the mismatch"
grep -q 'best verified file' "$d/04/prompt.md" && fail "prompt 4 offers a best file though iteration 3 was the best"
cmp -s "$d/01/prompt.md" "$d/01/prompt-seen.md" || fail "the generator did not get prompt.md on stdin"
grep -q '^# Task: vector_add' "$d/01/prompt.md" || fail "prompt 1 is not the task"
field "$d/04/verdict.json" 'v["status"] == "ok" and v["cases"][0]["speedup"] == 2' | grep -q True || fail "verdict 4"

# resume: iterations 3 and 4 lost their iteration.json (killed): only they run again
rm "$d/03/iteration.json" "$d/04/iteration.json"
cp "$s" "$tmp/summary.first"
TB_SCRIPT="$fx/climb" TB_CALLS="$tmp/calls" "$TILEBENCH" refine --resume "$tmp/climb" > "$tmp/out2.txt" 2>&1 || fail "resume: $(cat "$tmp/out2.txt")"
[ "$(tr '\n' ' ' < "$tmp/calls")" = "1 2 3 4 3 4 " ] || fail "resume calls: $(cat "$tmp/calls")"
cmp -s "$s" "$tmp/summary.first" || fail "resumed summary differs: $(diff "$s" "$tmp/summary.first")"
"$TILEBENCH" refine --resume "$tmp/climb" --iterations 3 > /dev/null 2>&1; [ $? -eq 2 ] || fail "--resume with settings: want 2"
"$TILEBENCH" refine --operator vector_add --backend cuda --generator true --run-dir "$tmp/climb" > /dev/null 2>&1
[ $? -eq 2 ] || fail "a second run into a used directory: want 2"

# regress: ok (speedup 1.25), slower ok, refused; at most 3 iterations: best is 1, not frozen
# (a relative generator and run directory: both from the directory refine starts in)
cp "$fx/generator.sh" "$tmp/gen.sh"
( cd "$tmp" && TB_SCRIPT="$fx/regress" TB_CALLS="$tmp/calls2" "$TILEBENCH" refine --operator vector_add --backend cuda \
  --dtype fp32 --iterations 3 --generator ./gen.sh --run-dir regress > "$tmp/out3.txt" 2>&1 ) || fail "regress: $(cat "$tmp/out3.txt")"
s="$tmp/regress/summary.json"
[ "$(field "$s" '(v["dtypes"][0]["best_iteration"], v["dtypes"][0].get("frozen_at"), v["verify_clean"], v["tokens"], v["dtypes"][0]["gated_speedup"])')" = "(1, None, 2, 600, 1.25)" ] \
  || fail "regress summary: $(cat "$s")"
grep -q 'The best verified file so far (iteration 1' "$tmp/regress/fp32/03/prompt.md" || fail "prompt 3 lacks the best file after a regression"
field "$tmp/regress/fp32/03/iteration.json" 'v["status"]' | grep -q refused || fail "iteration 3 not refused"

# a generator that fails, and usage errors
TB_SCRIPT="$tmp/none" TB_CALLS="$tmp/calls3" "$TILEBENCH" refine --operator vector_add --backend cuda --dtype fp32 \
  --iterations 2 --generator "$fx/generator.sh" --run-dir "$tmp/nogen" > "$tmp/out4.txt" 2>&1 || fail "nogen: $(cat "$tmp/out4.txt")"
field "$tmp/nogen/fp32/01/iteration.json" 'v["status"], v["reason"]' | grep -q "generator_failed.*status 3: no scripted answer" \
  || fail "generator failure: $(cat "$tmp/nogen/fp32/01/iteration.json")"
field "$tmp/nogen/summary.json" 'v["dtypes"][0]["gated_speedup"], v["verify_clean"]' | grep -q "(0, 0)" || fail "no verified iteration: gated 0"
"$TILEBENCH" refine --operator vector_add --backend cuda > /dev/null 2>&1; [ $? -eq 2 ] || fail "no --generator: want 2"
"$TILEBENCH" refine --operator vector_add --backend cuda --generator true --dtype fp64 --run-dir "$tmp/x" > /dev/null 2>&1
[ $? -eq 2 ] || fail "bad dtype: want 2"
echo ok
