#!/usr/bin/env bash
# GPU (issue 19): the memory ceiling's pieces. (1) A plan's copy step copies (the driver's
# cuMemcpyDtoDAsync, in plan order) and describes itself; peak_read2 computes a + b and
# peak_read leaves its sink alone; the events clock times a copy plan. (2) `tilebench peaks
# --quick` writes the new fields: bandwidth_mixes (the four mixes), memory_ceiling_gbs = their
# largest, bandwidth_gbs = the copy kernel's, bandwidth_by_size ascending; the file loads
# through peaks.lua. Exits 77 without a GPU.
set -u
: "${TILEBENCH:?}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/pieces.lua" <<'LUA'
local ok, why = require("tb.device").available()
if not ok then io.stderr:write("skip: ", tostring(why), "\n") os.exit(77) end
local tensor, launch, kernel, timer = require("tb.tensor"), require("tb.launch"), require("tb.kernel"), require("tb.timer")
local failures = 0
local function check(cond, what)
  print((cond and "ok   " or "FAIL ") .. what)
  if not cond then failures = failures + 1 end
end
local n = 1024
local xs = {}
for i = 1, n do xs[i] = i end
local a = tensor.from_table(xs, "int32", { n })
local b = tensor.from_table(xs, "int32", { n })
local c = tensor.empty({ n }, "int32")
c:fill(0)
local plan = launch.plan{ { copy = { dst = c, src = a, bytes = (n - 1) * 4 } } }
plan:run()
local got = c:to_host()
check(got[1] == 1 and got[n - 1] == n - 1 and got[n] == 0, "copy step: the bytes asked for, no more")
local d = plan:describe()
check(d[1].kind == "copy" and d[1].bytes == (n - 1) * 4, "describe: a copy of 4092 bytes")
local bad = pcall(launch.plan, { { copy = { dst = c, src = a, bytes = n * 4 + 4 } } })
check(not bad, "a copy past the smaller tensor is refused")
local mod = assert(kernel.compile(assert(kernel.host_source("peaks.cu")), { name = "peaks.cu" }))
launch.plan{ { fn = mod:get("peak_read2"), grid = { 2 }, block = { 256 }, args = { a, b, c, launch.i64(n * 4 // 16) } } }:run()
got = c:to_host()
local sums = true
for i = 1, n do sums = sums and got[i] == 2 * i end
check(sums, "peak_read2: dst = a + b")
local sink = tensor.empty({ 2 * 256 * 4 }, "int32")
sink:fill(7)
launch.plan{ { fn = mod:get("peak_read"), grid = { 2 }, block = { 256 }, args = { a, sink, launch.i64(n * 4 // 16) } } }:run()
got = sink:to_host()
check(got[1] == 7 and got[#got] == 7, "peak_read: the sink is untouched")
local big = 256 * 2 ^ 20
local x, y = tensor.empty({ big }, "uint8"), tensor.empty({ big }, "uint8")
local res = assert(timer.measure(launch.plan{ { copy = { dst = y, src = x } } },
  { clock = "events", mode = "fixed", warmup = 2, ["repeat"] = 5, flush = false }))
local gbs = 2 * big / (res.median * 1e-3) / 1e9
check(res.median > 0 and gbs > 100, ("the driver's copy timed by events: %.0f GB/s"):format(gbs))
os.exit(failures == 0 and 0 or 1)
LUA
"$TILEBENCH" script "$tmp/pieces.lua"
rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || { echo "FAIL the pieces (rc=$rc)"; exit 1; }
"$TILEBENCH" peaks --gpu T --quick --out "$tmp" >"$tmp/peaks.out" 2>&1 || { cat "$tmp/peaks.out"; echo "FAIL peaks --quick"; exit 1; }
cat >"$tmp/check.lua" <<'LUA'
local p = require("tilebench.peaks").load_file(arg[1], "T")
local failures = 0
local function check(cond, what)
  print((cond and "ok   " or "FAIL ") .. what)
  if not cond then failures = failures + 1 end
end
local m = p.bandwidth_mixes or {}
local best = 0
for _, k in ipairs({ "read", "read2_write1", "copy", "driver_copy" }) do
  check(type(m[k]) == "number" and m[k] > 0, ("mix %s measured: %s GB/s"):format(k, tostring(m[k])))
  if type(m[k]) == "number" and m[k] > best then best = m[k] end
end
check(p.memory_ceiling_gbs == best, "memory_ceiling_gbs is the largest mix")
check(p.bandwidth_gbs == m.copy, "bandwidth_gbs is the copy kernel's")
check(type(p.bandwidth_by_size) == "table" and #p.bandwidth_by_size == 2, "bandwidth_by_size: the quick run's two sizes")
os.exit(failures == 0 and 0 or 1)
LUA
"$TILEBENCH" script "$tmp/check.lua" "$tmp/T.json"
