#!/usr/bin/env bash
# GPU: compilation is not measurement. softmax fp16 at its last case, autotune mode, from an empty
# NVRTC cache, under an 8 s per-implementation limit: the precompile phase compiles every valid
# candidate first (in parallel), so the case ends ok with the halving search's record (screened
# candidates, 3 finalists) and no timeout. (Before the phase also compiled the host's own kernels,
# this case timed out on the H200: a worker compiled them inside the limit.)
set -u
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset TILEBENCH_OPERATOR_PATH TILEBENCH_RUNNER
export TILEBENCH_RESULTS_DIR="$work/results"
fail=0
args=(run --operator softmax --dtype fp16 --cases last --impl cuda --autotune --gpu precompile --case-timeout 8)
out=$(TILEBENCH_CACHE_DIR="$work/cache1" "$TB" "${args[@]}" 2>&1); rc=$?
echo "$out"
# (14 candidates at this case since session 13's row cuts, oplib.row_worth; 24 before: at least 10)
grep -qE "^  precompile: [0-9]+ plans \([0-9]+ kernels: ([1-9][0-9]|[1-9][0-9]{2,}) compiled, 0 cached\)" <<<"$out" \
  && echo "ok   precompile compiled the candidates" || { echo "FAIL precompile line"; fail=1; }
[ $rc -eq 0 ] && grep -qE "fp16 +cuda +[0-9.]+ .* ok$" <<<"$out" && echo "ok   case ok within 8 s" || { echo "FAIL rc=$rc"; fail=1; }
run=$(ls "$work/results/precompile/runs")
cat >"$work/check.lua" <<'LUA'
local journal = require("tilebench.journal")
local _, rows = journal.read(arg[1])
for _, r in ipairs(rows) do
  if r.impl == "cuda" then
    assert(r.status == "ok", "status " .. tostring(r.status) .. " " .. tostring(r.reason))
    assert(r.search and r.search.mode == "halving" and r.search.screened >= 10 and #r.search.finalists == 3,
      "search record " .. journal.encode(r.search or {}))
    print(string.format("ok   halving: %d screened, finalists %s, chose %s (%.4f ms)", r.search.screened,
      table.concat(r.search.finalists, " / "), r.config, r.ms))
  end
end
LUA
"$TB" script "$work/check.lua" "$work/results/precompile/runs/$run/journal.jsonl" || fail=1
# For contrast (not asserted: whether the compiles fit in the limit depends on the machine's
# compile speed): the same from another empty cache with --no-precompile, where the worker
# compiles the host kernels and every candidate inside the case's limit.
out=$(TILEBENCH_CACHE_DIR="$work/cache2" "$TB" "${args[@]}" --no-precompile 2>&1)
echo "info --no-precompile: $(grep -E "fp16 +cuda " <<<"$out" | tr -s ' ')"
exit $fail
