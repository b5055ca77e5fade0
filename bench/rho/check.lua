-- check.lua: issue 19's rho target on result CSVs, recomputed from their times with the current
-- formulas and ceilings (no GPU, no new run):
--   tilebench script bench/rho/check.lua [CSV_DIR [GPU [LIMIT]]]
--   (defaults: results/H200/csv, H200, 1.05)
-- For every <op>_default.csv whose operator loads: each timed implementation's rho on the
-- essential bytes against the case's memory ceiling (peaks.case_bandwidth: the best DRAM mix, or
-- the rate at the case's working set near the L2), the same against the copy kernel alone
-- (bandwidth_gbs: what the ceiling adds), and TileBench's rho (bytes_expr, copy kernel).
-- Prints one line per operator (max of each, cases over LIMIT, cases near the L2) and the cases
-- over LIMIT (the 40 highest); exits 1 when a case's rho is over LIMIT. After `tilebench peaks`
-- re-measures the ceilings, this says whether the committed times meet the target without
-- running the operators again.
local csv, config, opmod = require("tilebench.csv"), require("tilebench.config"), require("tilebench.operator")
local P = require("tilebench.peaks")
local dir, gpu, limit = arg[1] or "results/H200/csv", arg[2] or "H200", tonumber(arg[3] or "") or 1.05
local peaks = P.load(gpu)
local lfs = require("lfs")
local names = {}
for f in lfs.dir(dir) do
  local op = f:match("^(.+)_default%.csv$")
  if op then names[#names + 1] = op end
end
table.sort(names)
print(("peaks/%s.json: copy %.0f GB/s, memory ceiling %.0f GB/s, %s; L2 %s bytes, near = at most %d x L2"):format(
  gpu, P.bandwidth(peaks), P.memory_ceiling(peaks),
  peaks.bandwidth_by_size and ("%d sizes near the L2"):format(#peaks.bandwidth_by_size) or "no size curve (an older file)",
  tostring(peaks.device.l2_bytes), P.L2_NEAR))
print(("%-22s %5s %8s %8s %8s %6s %6s"):format("operator", "rows", "max rho", "vs copy", "tilebnch", "> lim", "near"))
local bad = {}
for _, name in ipairs(names) do
  local ok, op = pcall(opmod.load, name)
  if not ok then
    print(("%-22s skipped: %s"):format(name, tostring(op)))
  else
    local by = {}
    for _, c in ipairs(op.cases) do by[c.id .. "|" .. c.dtype] = c end
    local t = csv.read(dir .. "/" .. name .. "_default.csv")
    local impls = {}
    for _, h in ipairs(t.header) do
      local i = h:match("^(.+)_ms$")
      if i then impls[#impls + 1] = i end
    end
    local n, over, near, mx, mx_copy, mx_tb = 0, 0, 0, 0, 0, 0
    for _, row in ipairs(t.rows) do
      local c = by[tostring(row.params) .. "|" .. tostring(row.dtype)]
      if c then
        local flops, bytes, _, ess, eflops = config.work(op.config, c)
        for _, impl in ipairs(impls) do
          local ms = row[impl .. "_ms"]
          if type(ms) == "number" and ms > 0 then
            local bw, where = P.case_bandwidth(peaks, ess)
            local r = P.roofline(peaks, eflops, ess, ms * 1e-3, c.dtype, op.ceiling or op.category, bw).rho
            local rc = P.roofline(peaks, eflops, ess, ms * 1e-3, c.dtype, op.ceiling or op.category, P.bandwidth(peaks)).rho
            local rt = P.roofline(peaks, flops, bytes, ms * 1e-3, c.dtype, op.ceiling or op.category, P.bandwidth(peaks)).rho
            n = n + 1
            if where.l2_near then near = near + 1 end
            mx, mx_copy, mx_tb = math.max(mx, r), math.max(mx_copy, rc), math.max(mx_tb, rt)
            if r > limit then
              over = over + 1
              bad[#bad + 1] = {rho = r, text = ("  %s %s %s %s: rho %.3f (ceiling %.0f GB/s, working set %.2f x L2)"):format(
                name, impl, c.dtype, c.id, r, bw, where.l2_ratio or 0)}
            end
          end
        end
      end
    end
    print(("%-22s %5d %8.3f %8.3f %8.3f %6d %6d"):format(name, n, mx, mx_copy, mx_tb, over, near))
  end
end
if #bad > 0 then
  table.sort(bad, function(x, y) return x.rho > y.rho end)
  print(("%d cases over %.2f%s:"):format(#bad, limit, #bad > 40 and ", the 40 highest" or ""))
  for i = 1, math.min(#bad, 40) do print(bad[i].text) end
end
os.exit(#bad == 0 and 0 or 1)
