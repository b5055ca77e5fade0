#!/usr/bin/env bash
# GPU: batch_normalization's `lib` (cuDNN's batch norm, tb.dnn) end to end with the real runner:
# the first and last case of every dtype verify against the reference (status ok) and each lib
# row's configuration in the raw results names the engine cuDNN chose (engine=, knobs=, choice=,
# workspace=). Exits 77 without a GPU or without cuDNN.
set -u
TB=${TILEBENCH:?}
"$TB" devices >/dev/null 2>&1 || { echo "no GPU/driver: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo 'local ok, why = require("tb.dnn").available(); io.write(ok and "ok" or tostring(why), "\n")' >"$work/probe.lua"
probe=$("$TB" script "$work/probe.lua" 2>&1)
[ "$(head -1 <<<"$probe")" = ok ] || { echo "cuDNN cannot be opened: skipped ($probe)"; exit 77; }
export TILEBENCH_RESULTS_DIR="$work"
"$TB" run --operator batch_normalization --impl lib,cuda --cases ends --gpu dnncheck --protocol fixed \
  --warmup 3 --repeat 10 >"$work/run.txt" 2>&1
rc=$?
cat "$work/run.txt"
[ $rc -eq 0 ] && echo "ok   run exits 0" || echo "FAIL run exits $rc"
cat >"$work/check.lua" <<'LUA'
local journal = require("tilebench.journal")
local _, rows = journal.read(arg[1])
local bad, n = 0, 0
for _, r in ipairs(rows) do
  if r.impl == "lib" then
    n = n + 1
    local what = string.format("lib %s N=%s", tostring(r.dtype), tostring((r.params or {}).N))
    local cfg = r.config or ""
    if r.status ~= "ok" then
      print(string.format("FAIL %s: %s: %s", what, tostring(r.status), tostring(r.reason))); bad = 1
    elseif not (cfg:find("engine=", 1, true) and cfg:find("knobs=", 1, true) and cfg:find("choice=", 1, true)
                and cfg:find("workspace=", 1, true)) then
      print(string.format("FAIL %s: the config does not record the engine: '%s'", what, cfg)); bad = 1
    else
      print(string.format("ok   %s: %.4f ms, %s", what, r.ms or -1, cfg))
    end
  end
end
if n ~= 6 then print(string.format("FAIL %d lib rows (want 6: first and last case of 3 dtypes)", n)); bad = 1 end
os.exit(bad)
LUA
fail=0
[ $rc -eq 0 ] || fail=1
"$TB" script "$work/check.lua" "$(ls -d "$work"/dnncheck/runs/*/ | head -1)journal.jsonl" || fail=1
exit $fail
