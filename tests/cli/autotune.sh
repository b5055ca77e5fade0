#!/usr/bin/env bash
# `tilebench run --autotune` without a GPU (the fake runner: the real candidate filtering, search
# and seeds of tilebench.runner, synthetic times): the precompile phase compiles every kernel
# before the first case (TB_FAKE_CHECK_CACHE: a worker that has to compile a kernel fails the
# row, so nothing compiled counts in a case's limit; --no-precompile shows the check bites); a
# candidate that does not compile is reported once per kernel group and reaches each case's
# results as that candidate's status with the log's first lines; provenance records the phase;
# the search is recorded per case (raw and CSV); the neighbouring case's winner is tried first;
# --autotune-from seeds from an earlier run and is validated; --autotune-search exhaustive.
set -u
TB=${TILEBENCH:?}
HOME_DIR=${TILEBENCH_HOME:?}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TILEBENCH_CACHE_DIR="$work/cache" TILEBENCH_RESULTS_DIR="$work/results" TILEBENCH_OPERATOR_PATH="$work/ops"
export TILEBENCH_RUNNER=tests.fixtures.fake_runner TB_FAKE_CHECK_CACHE=1
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
cd "$HOME_DIR"
# tune_fail: vector_add whose UNROLL=8 candidates do not compile (8 of its 32 configurations).
mkdir -p "$work/ops"
cp -r operators/vector_add "$work/ops/tune_fail"
printf '\n#if UNROLL == 8\n#error "UNROLL 8 refused (test fixture)"\n#endif\n' >> "$work/ops/tune_fail/vector_add.cu"

out=$("$TB" run --operator tune_fail --dtype fp32 --cases 1-3 --autotune --gpu Fake --compile-jobs 2 2>&1); rc=$?
[ $rc -eq 0 ] && ok "autotune run exits 0" || bad "autotune run rc=$rc: $out"
grep -qE "^  precompile: 99 plans \([0-9]+ kernels: [0-9]+ compiled, 0 cached\) in .* with 2 processes; 24 failed \(8 kernel groups\)" <<<"$out" \
  && ok "precompile line" || bad "precompile line: $out"
# an autotune run compiles beside the cases by default, each case waiting for its own kernels
grep -qE "^  precompile: 99 plans in 2 processes, beside the cases" <<<"$out" && \
  grep -qE "^  precompile: 99 plans .* 24 failed \(8 kernel groups\), beside the cases \(they waited [0-9.]+ s for it\)$" <<<"$out" \
  && ok "overlapped precompile by default" || bad "overlap lines: $out"
n=$(grep -c "tune_fail fp32 cuda {BLOCK=128,UNROLL=8,WAVES=0} does not compile (3 cases)" <<<"$out")
[ "$n" -eq 1 ] && ok "a failing kernel reported once for its 3 cases" || bad "reported $n times: $out"
grep -q "kernel compiled in the worker" <<<"$out" && bad "a worker compiled: $out" || ok "no worker compiled a kernel"
run1=$(ls "$work/results/Fake/runs")
jn="$work/results/Fake/runs/$run1/journal.jsonl"
csv="$work/results/Fake/csv/tune_fail_autotune.csv"
head -1 "$csv" | grep -q ',autotune_config_cuda,autotune_finalists_cuda,autotune_screened_cuda,autotune_search_cuda,autotune_search_s_cuda$' \
  && ok "CSV columns of the search" || bad "CSV header: $(head -1 "$csv")"
grep -qE '^n=1048576,fp32,.*,ok,,"BLOCK=[0-9]+,UNROLL=[124],WAVES=[02]",[34],24,halving,[0-9.e-]+$' "$csv" && ok "CSV row of the search" \
  || bad "CSV: $(cat "$csv")"
grep -q '"precompile":{' "$work/results/Fake/runs/$run1/provenance.json" && ok "provenance records the phase" \
  || bad "provenance: $(cat "$work/results/Fake/runs/$run1/provenance.json")"

cat > "$work/check.lua" <<'LUA'
-- Checks a journal: args: path, what. Prints "ok" or what is wrong.
local journal = require("tilebench.journal")
local path, what, want = arg[1], arg[2], arg[3]
local _, rows = journal.read(path)
local by_case = {}
for _, r in ipairs(rows) do if r.mode == "autotune" then by_case[r.case_index] = r end end
local function first_tried(r) -- the first candidate the search tried (after the excluded ones)
  for _, t in ipairs(r.autotune) do if t.status ~= "skipped" and not (t.reason or ""):match("^compile") then return t end end
end
if what == "compile" then
  for i, r in pairs(by_case) do
    local n = 0
    for _, t in ipairs(r.autotune) do
      if t.status == "failed" and t.reason:match("^compile: .*does not compile:.*UNROLL 8 refused") then n = n + 1 end
    end
    if n ~= 8 then print("case " .. i .. ": " .. n .. " compile failures") os.exit(1) end
    if r.search.screened ~= 24 or #r.search.finalists < 3 or r.search.budget == nil then
      print("case " .. i .. ": search record " .. journal.encode(r.search)) os.exit(1)
    end
  end
elseif what == "neighbour" then
  for i = 2, 3 do
    local t = first_tried(by_case[i])
    local fin = {}
    for _, k in ipairs(by_case[i].search.finalists) do fin[k] = true end
    if not (t.seed and t.config == by_case[i - 1].config and fin[t.config]) then
      print(string.format("case %d: first tried %s (seed %s), case %d won %s", i, t.config, tostring(t.seed), i - 1,
        by_case[i - 1].config)) os.exit(1)
    end
  end
elseif what == "neighbour_from_1" then
  local t = first_tried(by_case[2])
  if not (t.seed and t.config == by_case[1].config) then print("case 2 first tried " .. t.config) os.exit(1) end
elseif what == "seeded" then -- case 3's first candidate is `want` (an earlier run's winner)
  local t = first_tried(by_case[3])
  if not (t.seed and t.config == want) then print("first tried " .. t.config .. ", want " .. want) os.exit(1) end
elseif what == "winner" then
  print(by_case[tonumber(want)].config) os.exit(0)
elseif what == "exhaustive" then
  for i, r in pairs(by_case) do
    if r.search.mode ~= "exhaustive" or #r.search.finalists ~= 24 then
      print("case " .. i .. ": " .. journal.encode(r.search)) os.exit(1)
    end
  end
end
print("ok")
LUA
check() { "$TB" script "$work/check.lua" "$@" 2>&1; }
r=$(check "$jn" compile) && ok "each case: 8 candidates failed with the compile log, 24 screened" || bad "compile: $r"
r=$(check "$jn" neighbour) && ok "the neighbouring case's winner is tried first and is a finalist" || bad "neighbour: $r"

# --autotune-from: case 3 alone, seeded by run 1's case-3 winner.
w3=$(check "$jn" winner 3)
out=$("$TB" run --operator tune_fail --dtype fp32 --cases 3 --autotune --gpu Fake --compile-jobs 2 --autotune-from "$run1" 2>&1); rc=$?
[ $rc -eq 0 ] && ok "--autotune-from RUN exits 0" || bad "--autotune-from rc=$rc: $out"
grep -qE "^  precompile: 33 plans .* [1-9][0-9]* cached\) .* 8 failed" <<<"$out" && ok "warm cache: kernels cached" || bad "warm: $out"
# not on a terminal: progress lines ($TILEBENCH_PROGRESS_S apart; 0: at every finished plan but the
# last), before the summary line; none with --quiet
out=$(TILEBENCH_RESULTS_DIR="$work/progress" TILEBENCH_PROGRESS_S=0 "$TB" run --operator tune_fail --dtype fp32 --cases 3 --autotune --precompile ahead --gpu Fake --compile-jobs 2 2>/dev/null)
grep -qE "^  precompile: [0-9]+/33 plans, [0-9]+ s$" <<<"$out" && ok "a log gets precompile progress lines" || bad "no progress lines: $out"
out=$(TILEBENCH_RESULTS_DIR="$work/progress" TILEBENCH_PROGRESS_S=0 "$TB" run --operator tune_fail --dtype fp32 --cases 3 --autotune --precompile ahead --gpu Fake --compile-jobs 2 --quiet 2>/dev/null)
grep -qE "^  precompile: [0-9]+/33 plans" <<<"$out" && bad "--quiet printed progress: $out" || ok "--quiet: no progress lines"
out=$(TILEBENCH_RESULTS_DIR="$work/progress" TILEBENCH_PROGRESS_S=soon "$TB" run --operator tune_fail --dtype fp32 --cases 3 --autotune --gpu Fake --compile-jobs 2 --quiet 2>&1)
grep -q "TILEBENCH_PROGRESS_S=soon is not a number of seconds" <<<"$out" && ok "a bad TILEBENCH_PROGRESS_S is named" || bad "bad TILEBENCH_PROGRESS_S: $out"
run2=$(ls -t "$work/results/Fake/runs" | head -1)
r=$(check "$work/results/Fake/runs/$run2/journal.jsonl" seeded "$w3") && ok "seeded from the earlier run's winner" || bad "seeded: $r"
out=$("$TB" run --operator tune_fail --dtype fp32 --cases 3 --autotune --gpu Fake --autotune-from "$work/results/Fake/runs/$run1/" 2>&1)
[ $? -eq 0 ] && ok "--autotune-from RUN-DIR" || bad "--autotune-from dir: $out"

expect_usage() { # pattern, args...
  local pat=$1; shift
  local o rc
  o=$("$TB" run --operator tune_fail --dtype fp32 --cases 3 --autotune --gpu Fake "$@" 2>&1); rc=$?
  if [ $rc -eq 2 ] && grep -qE -- "$pat" <<<"$o"; then ok "$* -> 2"; else bad "$* -> rc=$rc: $o"; fi
}
runs_before=$(ls "$work/results/Fake/runs" | wc -l)
expect_usage "'\.\./x' is not a run directory \(no journal.jsonl\)" --autotune-from ../x
expect_usage "'a/\.\.' is neither a run id nor a run directory" --autotune-from a/..
expect_usage "no run 'nosuchrun'" --autotune-from nosuchrun
"$TB" run --operator tune_fail --dtype fp32 --cases 1 --gpu Fake >/dev/null 2>&1
plain=$(ls -t "$work/results/Fake/runs" | head -1)
expect_usage "has no verified autotune result to start from" --autotune-from "$plain"
expect_usage "option --autotune-search must be one of halving, exhaustive" --autotune-search random
[ "$(ls "$work/results/Fake/runs" | wc -l)" -eq $((runs_before + 1)) ] && ok "a refused --autotune-from leaves no run directory" \
  || bad "run directories: $(ls "$work/results/Fake/runs")"

# exhaustive: every valid candidate gets the full protocol.
out=$("$TB" run --operator tune_fail --dtype fp32 --cases 1-2 --autotune --autotune-search exhaustive --gpu Fake 2>&1); rc=$?
run3=$(ls -t "$work/results/Fake/runs" | head -1)
r=$(check "$work/results/Fake/runs/$run3/journal.jsonl" exhaustive) && [ $rc -eq 0 ] && ok "exhaustive search" || bad "exhaustive: rc=$rc $r $out"

# --autotune-finalists / --autotune-budget reach the search
out=$("$TB" run --operator tune_fail --dtype fp32 --cases 1 --autotune --autotune-finalists 1 --autotune-budget 60 --gpu Fake 2>&1); rc=$?
run4=$(ls -t "$work/results/Fake/runs" | head -1)
srch=$(grep -o '"search":{[^}]*}[^}]*}' "$work/results/Fake/runs/$run4/journal.jsonl")
grep -q '"budget":60[,}]' <<<"$srch" && grep -q '"finalists":\["[^"]*"\]' <<<"$srch" && grep -q '"spent":48[,}]' <<<"$srch" && [ $rc -eq 0 ] \
  && ok "finalists and budget options" || bad "finalists/budget: rc=$rc $(grep -o '"search":{[^}]*}' "$work/results/Fake/runs/$run4/journal.jsonl")"
# the full protocol: by default the best finalist only; --autotune-full 3: all three
for n in 1 3; do
  out=$("$TB" run --operator tune_fail --dtype fp32 --cases 1 --autotune --autotune-full $n --gpu Fake 2>&1); rc=$?
  runf=$(ls -t "$work/results/Fake/runs" | head -1)
  nf=$(grep -o '"full":true' "$work/results/Fake/runs/$runf/journal.jsonl" | wc -l)
  [ $rc -eq 0 ] && [ "$nf" -eq $n ] && ok "--autotune-full $n: $n finalist(s) timed fully" || bad "--autotune-full $n: rc=$rc full=$nf"
done

# resume: the finished cases' winners seed the cases left (case 2 after a run stopped after case 1)
before=$(ls "$work/results/Fake/runs" | sort)
TB_FAKE_IMPL_SLEEP=2 "$TB" run --operator tune_fail --dtype fp32 --cases 1-2 --autotune --gpu Fake >"$work/int.out" 2>&1 &
pid=$!
run5=""
for _ in $(seq 1 300); do # until case 1 has started (its header line; at most 30 s): it finishes, case 2 does not start
  grep -q "mode autotune" "$work/int.out" && break
  sleep 0.1
done
run5=$(comm -13 <(echo "$before") <(ls "$work/results/Fake/runs" | sort) | head -1)
kill -INT $pid
wait $pid
out=$(cat "$work/int.out")
if grep -q "resume with" <<<"$out" && grep -q "1 of 2 cases done" <<<"$out" && [ -n "$run5" ]; then
  out=$("$TB" run --resume "$run5" --gpu Fake 2>&1); rc=$?
  r=$(check "$work/results/Fake/runs/$run5/journal.jsonl" neighbour_from_1 2>&1) && [ $rc -eq 0 ] \
    && ok "resume: case 1's winner seeds case 2" || bad "resume seed: rc=$rc $r $out"
else
  bad "the run was not interrupted after case 1: $out"
fi

# --no-precompile with a cold cache: the workers compile (the check above can fail).
export TILEBENCH_CACHE_DIR="$work/cache2"
out=$("$TB" run --operator tune_fail --dtype fp32 --cases 1 --gpu Fake --no-precompile 2>&1)
grep -q "precompile" <<<"$out" && bad "--no-precompile ran the phase: $out" || ok "--no-precompile: no phase"
grep -q "kernel compiled in the worker" <<<"$out" && ok "--no-precompile: the worker compiled" || bad "no-precompile: $out"
# the default mode: the phase compiles the reference and the default plan, every row as before
out=$("$TB" run --operator tune_fail --dtype fp32 --cases 1-2 --gpu Fake 2>&1); rc=$?
grep -qE "^  precompile: 4 plans \(2 kernels: 1 compiled, 1 cached\)" <<<"$out" && [ $rc -eq 0 ] && ok "default mode precompiles" \
  || bad "default mode: rc=$rc $out"
exit $fail
