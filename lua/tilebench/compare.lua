-- compare.lua: two sets of results side by side, case by case: FAST, SLOW or SAME for B
-- against A, decided with the noise of each, and a summary (counts, geomean ratio).
--
-- Per (operator, mode, dtype, params, implementation) with a time on both sides:
--   ratio = t_B / t_A (below 1: B is faster).
--   Both sides have raw samples (>= MIN_SAMPLES each): Mann-Whitney U, two-sided. FAST or SLOW
--     when p < ALPHA and |ratio - 1| > MIN_DIFF; else SAME.
--   Otherwise the noise rule: noise = sqrt(noise_A^2 + noise_B^2), each side's relative noise
--     (stdev/mean of its samples, its noise column, or at least the resolution of its printed
--     time); FAST or SLOW when |ratio - 1| > max(2 * noise, FLOOR); else SAME.
-- Anything without a time on one side is N/A, with both statuses.
local stats = require("tilebench.stats")
local resultset = require("tilebench.resultset")

local M = {}

M.ALPHA, M.MIN_DIFF, M.FLOOR, M.MIN_SAMPLES = 0.05, 0.02, 0.05, 5

local function noise_of(e)
  local n = e.noise or 0
  if e.resolution and e.resolution > n then n = e.resolution end
  return n
end

-- Decides one pair of entries (both timed). Returns verdict, details.
function M.decide(a, b, opts)
  opts = opts or {}
  local alpha, min_diff, floor = opts.alpha or M.ALPHA, opts.min_diff or M.MIN_DIFF, opts.floor or M.FLOOR
  local min_samples = opts.min_samples or M.MIN_SAMPLES
  local ratio = b.ms / a.ms
  local d = {ratio = ratio}
  if a.samples and b.samples and #a.samples >= min_samples and #b.samples >= min_samples then
    local mw = stats.mann_whitney(a.samples, b.samples)
    d.method, d.p, d.threshold = "mann-whitney", mw.p, min_diff
    if mw.p < alpha and math.abs(ratio - 1) > min_diff then
      return ratio < 1 and "FAST" or "SLOW", d
    end
    return "SAME", d
  end
  local noise = math.sqrt(noise_of(a) ^ 2 + noise_of(b) ^ 2)
  d.method, d.noise = "noise", noise
  d.threshold = math.max(2 * noise, floor)
  if math.abs(ratio - 1) > d.threshold then return ratio < 1 and "FAST" or "SLOW", d end
  return "SAME", d
end

local function index_tables(tables)
  local idx = {}
  for _, t in ipairs(tables) do idx[t.operator .. "\0" .. t.mode] = t end
  return idx
end

-- M.compare(tables_a, tables_b [, opts]) -> result
--   opts.map = {impl_in_A = impl_in_B} pairs implementations whose names differ; else by name.
--   result = {rows = {...}, by_impl = {impl = {FAST, SLOW, SAME, ["N/A"], ratios}}, totals,
--             geomean = ratio over all comparable cases, tables_matched, only_a, only_b,
--             cases_only_a, cases_only_b}
function M.compare(ta, tb, opts)
  opts = opts or {}
  local map = opts.map or {}
  local ib = index_tables(tb)
  local res = {rows = {}, by_impl = {}, impl_order = {}, totals = {FAST = 0, SLOW = 0, SAME = 0, ["N/A"] = 0},
               tables_matched = 0, only_a = {}, only_b = {}, cases_only_a = 0, cases_only_b = 0}
  local all_ratios = {}
  local used_b = {}
  for _, a in ipairs(ta) do
    local id = a.operator .. "\0" .. a.mode
    local b = ib[id]
    if not b then
      res.only_a[#res.only_a + 1] = a.operator .. "_" .. a.mode
    else
      used_b[id] = true
      res.tables_matched = res.tables_matched + 1
      local pairs_ = {}
      for _, impl in ipairs(a.impls) do
        local other = map[impl] or impl
        for _, j in ipairs(b.impls) do
          if j == other then pairs_[#pairs_ + 1] = {impl, other} end
        end
      end
      for _, ca in ipairs(a.cases) do
        local cb = b.index[ca.key]
        if not cb then
          res.cases_only_a = res.cases_only_a + 1
        else
          for _, p in ipairs(pairs_) do
            local ea, eb = ca.by_impl[p[1]], cb.by_impl[p[2]]
            local name = p[1] == p[2] and p[1] or (p[1] .. "/" .. p[2])
            local row = {operator = a.operator, mode = a.mode, dtype = ca.dtype, params = ca.params, impl = name,
                         ms_a = ea and ea.ms, ms_b = eb and eb.ms}
            if resultset.timed(ea) and resultset.timed(eb) then
              local verdict, d = M.decide(ea, eb, opts)
              row.verdict, row.ratio, row.method, row.p, row.threshold = verdict, d.ratio, d.method, d.p, d.threshold
              all_ratios[#all_ratios + 1] = d.ratio
            else
              row.verdict = "N/A"
              row.note = ("A %s, B %s"):format(ea and ea.status or "absent", eb and eb.status or "absent")
            end
            local s = res.by_impl[name]
            if not s then
              s = {FAST = 0, SLOW = 0, SAME = 0, ["N/A"] = 0, ratios = {}}
              res.by_impl[name] = s
              res.impl_order[#res.impl_order + 1] = name
            end
            s[row.verdict] = s[row.verdict] + 1
            if row.ratio then s.ratios[#s.ratios + 1] = row.ratio end
            res.totals[row.verdict] = res.totals[row.verdict] + 1
            res.rows[#res.rows + 1] = row
          end
        end
      end
      for _, cb in ipairs(b.cases) do
        if not a.index[cb.key] then res.cases_only_b = res.cases_only_b + 1 end
      end
    end
  end
  for _, b in ipairs(tb) do
    if not used_b[b.operator .. "\0" .. b.mode] then res.only_b[#res.only_b + 1] = b.operator .. "_" .. b.mode end
  end
  for _, name in ipairs(res.impl_order) do
    local s = res.by_impl[name]
    s.geomean = stats.geomean(s.ratios)
  end
  res.geomean = stats.geomean(all_ratios)
  return res
end

local function fmt_ratio(r) return r and ("%.3f"):format(r) or "–" end
local function fmt_ms(x) return x and ("%.4g"):format(x) or "–" end

-- Text for the terminal: summary first, then the cases that changed (all with opts.all).
function M.format(res, opts)
  opts = opts or {}
  local out = {}
  local function w(fmt, ...) out[#out + 1] = fmt:format(...) end
  w("A: %s", opts.label_a or "A")
  w("B: %s", opts.label_b or "B")
  w("ratio = t_B / t_A; FAST: B faster than A beyond its noise, SLOW: B slower, SAME: within the noise.")
  w("")
  w("%-22s %6s %6s %6s %6s  %s", "implementation", "FAST", "SLOW", "SAME", "N/A", "geomean ratio")
  for _, name in ipairs(res.impl_order) do
    local s = res.by_impl[name]
    w("%-22s %6d %6d %6d %6d  %s", name, s.FAST, s.SLOW, s.SAME, s["N/A"], fmt_ratio(s.geomean))
  end
  local t = res.totals
  w("%-22s %6d %6d %6d %6d  %s", "all", t.FAST, t.SLOW, t.SAME, t["N/A"], fmt_ratio(res.geomean))
  w("")
  w("tables compared: %d; only in A: %d%s; only in B: %d%s; cases only in A: %d, only in B: %d",
    res.tables_matched, #res.only_a, #res.only_a > 0 and (" (" .. table.concat(res.only_a, ", ") .. ")") or "",
    #res.only_b, #res.only_b > 0 and (" (" .. table.concat(res.only_b, ", ") .. ")") or "",
    res.cases_only_a, res.cases_only_b)
  if res.tables_matched == 0 then
    w("nothing to compare: no operator_mode is in both A and B")
  elseif #res.rows == 0 then
    w("nothing to compare: no implementation name is in both A and B (use --map A_IMPL=B_IMPL)")
  end
  local shown = {}
  for _, r in ipairs(res.rows) do
    if opts.all or r.verdict == "FAST" or r.verdict == "SLOW" then shown[#shown + 1] = r end
  end
  if #shown > 0 then
    w("")
    w("%-4s  %-22s %-8s %-10s %-28s %-14s %10s %10s %7s  %s", "", "operator", "mode", "dtype", "params",
      "implementation", "A ms", "B ms", "ratio", "rule")
    for _, r in ipairs(shown) do
      local rule
      if r.method == "mann-whitney" then rule = ("U test p=%.3g"):format(r.p)
      elseif r.method == "noise" then rule = ("noise, threshold %.1f %%"):format(100 * r.threshold)
      else rule = r.note or "" end
      w("%-4s  %-22s %-8s %-10s %-28s %-14s %10s %10s %7s  %s", r.verdict, r.operator, r.mode, r.dtype, r.params,
        r.impl, fmt_ms(r.ms_a), fmt_ms(r.ms_b), fmt_ratio(r.ratio), rule)
    end
  end
  return table.concat(out, "\n") .. "\n"
end

-- Rows for csv.write.
function M.csv_rows(res)
  local rows = {}
  local function num(x) return x and ("%.6g"):format(x) or "" end
  for _, r in ipairs(res.rows) do
    rows[#rows + 1] = {operator = r.operator, mode = r.mode, dtype = r.dtype, params = r.params, impl = r.impl,
      a_ms = num(r.ms_a), b_ms = num(r.ms_b), ratio = num(r.ratio), verdict = r.verdict, method = r.method or "",
      p = num(r.p), threshold = num(r.threshold), note = r.note or ""}
  end
  return {"operator", "mode", "dtype", "params", "impl", "a_ms", "b_ms", "ratio", "verdict", "method", "p",
    "threshold", "note"}, rows
end

return M
