-- compare.lua: two sets of results side by side, case by case: FAST, SLOW or SAME for B
-- against A, decided with the noise of each side -- its own samples' and the GPU's run-to-run
-- spread -- and a summary (counts, geomean ratio). docs/REPORTS.md states the rules.
--
-- Per (operator, mode, dtype, params, implementation) with a time on both sides:
--   ratio = t_B / t_A (below 1: B is faster), reported with a 95 % interval.
--   Each side's noise: sigma_X = sqrt(r^2 + w_X^2 / n_X), r the run-to-run noise of one run's
--     median on this GPU (noise file, below; else DEFAULT_RUN_NOISE), w_X its samples' stdev/mean
--     and n_X their count. sd = sqrt(sigma_A^2 + sigma_B^2), the noise of log(ratio).
--   Both sides have raw samples (>= MIN_SAMPLES each): Mann-Whitney U, two-sided. FAST or SLOW
--     when p < ALPHA and |log ratio| > log(1 + min_effect), min_effect = max(MIN_DIFF, K * sd):
--     the difference exceeds both sides' noise K times over (nvbench's compare asks it to exceed
--     the noise of both sides); else SAME. The U test alone measures within-run noise only.
--   Otherwise the noise rule: each side's relative noise w_X (stdev/mean of its samples, its
--     noise column, or at least the resolution of its printed time) with r added, n_X = sqrt(r^2 +
--     w_X^2); FAST or SLOW when |ratio - 1| > max(2 * sqrt(n_A^2 + n_B^2), FLOOR); else SAME.
--   The interval: ratio * exp(+-1.96 * sd) (noise rule: with sqrt(n_A^2 + n_B^2)).
-- Anything without a time on one side is N/A, with both statuses.
--
-- The noise file (M.noise_from_pair writes it; bench/compare/aa.sh from two A/A runs):
--   {gpu, measured_at, method, runs = {A, B}, cases, sigma = r over every case, max_abs_log_ratio,
--    groups = {["operator/mode/dtype/impl"] = {sigma, cases}}}
--   r for a case: its group's sigma (with at least MIN_GROUP cases), else the file's sigma.
local stats = require("tilebench.stats")
local resultset = require("tilebench.resultset")

local M = {}

M.ALPHA, M.MIN_DIFF, M.FLOOR, M.MIN_SAMPLES = 0.05, 0.02, 0.05, 5
-- K: how many times the noise of log(ratio) a difference must exceed. At 4 a case whose noise
-- is what the file says is called FAST/SLOW by chance about once in 16000 (normal tails): an A/A
-- comparison of the suite's ~1000 default cases stays quiet.
M.K = 4
-- Run-to-run noise of one run's median when no noise file is given: conservative (A/A runs of
-- the 12 operators on the H200 are expected well under it; bench/compare/aa.sh measures it).
M.DEFAULT_RUN_NOISE = 0.01
M.MIN_GROUP = 5
M.Z95 = 1.959964

local function noise_of(e)
  local n = e.noise or 0
  if e.resolution and e.resolution > n then n = e.resolution end
  return n
end

local function sample_noise(e)
  local s = e.samples
  local w = e.noise or stats.relative_noise(s) or 0
  return w, #s
end

-- Decides one pair of entries (both timed). opts.run_noise: r for this case (default
-- DEFAULT_RUN_NOISE). Returns verdict, details {ratio, method, p, threshold (min_effect),
-- ci_low, ci_high, run_noise, sd}.
function M.decide(a, b, opts)
  opts = opts or {}
  local alpha, min_diff, floor = opts.alpha or M.ALPHA, opts.min_diff or M.MIN_DIFF, opts.floor or M.FLOOR
  local min_samples = opts.min_samples or M.MIN_SAMPLES
  local k = opts.k or M.K
  local r = opts.run_noise or M.DEFAULT_RUN_NOISE
  local ratio = b.ms / a.ms
  local d = {ratio = ratio, run_noise = r}
  local function interval(sd)
    d.sd = sd
    d.ci_low, d.ci_high = ratio * math.exp(-M.Z95 * sd), ratio * math.exp(M.Z95 * sd)
  end
  if a.samples and b.samples and #a.samples >= min_samples and #b.samples >= min_samples then
    local mw = stats.mann_whitney(a.samples, b.samples)
    local wa, na = sample_noise(a)
    local wb, nb = sample_noise(b)
    local sd = math.sqrt(r ^ 2 + wa ^ 2 / na + r ^ 2 + wb ^ 2 / nb)
    interval(sd)
    d.method, d.p, d.threshold = "mann-whitney", mw.p, math.max(min_diff, k * sd)
    if mw.p < alpha and math.abs(math.log(ratio)) > math.log(1 + d.threshold) then
      return ratio < 1 and "FAST" or "SLOW", d
    end
    return "SAME", d
  end
  local na, nb = math.sqrt(noise_of(a) ^ 2 + r ^ 2), math.sqrt(noise_of(b) ^ 2 + r ^ 2)
  local noise = math.sqrt(na ^ 2 + nb ^ 2)
  interval(noise)
  d.method, d.noise = "noise", noise
  d.threshold = math.max(2 * noise, floor)
  if math.abs(ratio - 1) > d.threshold then return ratio < 1 and "FAST" or "SLOW", d end
  return "SAME", d
end

-- The group key of the noise file.
function M.group_key(operator, mode, dtype, impl)
  return table.concat({operator, mode or "default", dtype or "", impl or ""}, "/")
end

-- r for a case from a noise file (nil file: nil, the caller's default).
function M.run_noise(noise, operator, mode, dtype, impl)
  if not noise then return nil end
  local g = noise.groups and noise.groups[M.group_key(operator, mode, dtype, impl)]
  if g and type(g.sigma) == "number" and (g.cases or 0) >= M.MIN_GROUP then return g.sigma end
  return noise.sigma
end

-- Checks a noise file's table (from JSON); errors name the file and the field.
function M.check_noise(t, name)
  local function bad(fmt, ...) error(name .. ": " .. fmt:format(...), 0) end
  if type(t) ~= "table" then bad("must hold a JSON object") end
  if type(t.sigma) ~= "number" or t.sigma ~= t.sigma or t.sigma < 0 or t.sigma > 1 then
    bad("sigma must be a number in [0, 1], got %s", tostring(t.sigma))
  end
  if t.groups ~= nil and type(t.groups) ~= "table" then bad("groups must be an object") end
  for key, g in pairs(t.groups or {}) do
    if type(g) ~= "table" or type(g.sigma) ~= "number" or g.sigma < 0 or g.sigma > 1 then
      bad("groups[%s].sigma must be a number in [0, 1]", tostring(key))
    end
    if g.cases ~= nil and math.type(g.cases) ~= "integer" then bad("groups[%s].cases must be an integer", tostring(key)) end
  end
  return t
end

function M.load_noise(path)
  local util = require("tilebench.util")
  local f = io.open(path, "rb")
  if not f then error(("no noise file %s (bench/compare/aa.sh writes it)"):format(path), 0) end
  local text = f:read("a")
  f:close()
  local t = util.json_decode(text, path)
  t._path = path
  return M.check_noise(t, path)
end

-- The run-to-run noise of one run's median from an A/A pair's comparison (res of M.compare):
-- per group the root mean square of log(t_B / t_A) over its cases, divided by sqrt(2) (two runs
-- each contribute r); overall the same over every case.
function M.noise_from_pair(res, info)
  local groups, all, max_abs = {}, {}, 0
  for _, row in ipairs(res.rows) do
    if row.ratio then
      local l = math.log(row.ratio)
      local key = M.group_key(row.operator, row.mode, row.dtype, row.impl)
      local g = groups[key] or {sum = 0, cases = 0}
      g.sum, g.cases = g.sum + l * l, g.cases + 1
      groups[key] = g
      all[#all + 1] = l
      if math.abs(l) > max_abs then max_abs = math.abs(l) end
    end
  end
  if #all == 0 then error("noise: the two runs have no case timed on both sides", 0) end
  local out = {groups = {}, cases = #all, max_abs_log_ratio = max_abs}
  local sum = 0
  for _, l in ipairs(all) do sum = sum + l * l end
  out.sigma = math.sqrt(sum / #all) / math.sqrt(2)
  for key, g in pairs(groups) do
    out.groups[key] = {sigma = math.sqrt(g.sum / g.cases) / math.sqrt(2), cases = g.cases}
  end
  for k, v in pairs(info or {}) do out[k] = v end
  return out
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
              local o = setmetatable({run_noise = M.run_noise(opts.noise, a.operator, a.mode, ca.dtype, name)},
                                     {__index = opts})
              local verdict, d = M.decide(ea, eb, o)
              row.verdict, row.ratio, row.method, row.p, row.threshold = verdict, d.ratio, d.method, d.p, d.threshold
              row.ci_low, row.ci_high, row.run_noise = d.ci_low, d.ci_high, d.run_noise
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

-- "+3.1 % [+1.2, +5.0]": the change of B against A with its 95 % interval.
function M.format_effect(r)
  local function pct(x) return ("%+.1f"):format(100 * (x - 1)) end
  return ("%s %% [95 %% CI %s, %s]"):format(pct(r.ratio), pct(r.ci_low), pct(r.ci_high))
end
local function fmt_ms(x) return x and ("%.4g"):format(x) or "–" end

-- Text for the terminal: summary first, then the cases that changed (all with opts.all).
function M.format(res, opts)
  opts = opts or {}
  local out = {}
  local function w(fmt, ...) out[#out + 1] = fmt:format(...) end
  w("A: %s", opts.label_a or "A")
  w("B: %s", opts.label_b or "B")
  w("ratio = t_B / t_A; FAST: B faster than A beyond its noise, SLOW: B slower, SAME: within the noise.")
  w("run-to-run noise: %s", opts.noise_label or ("none recorded: %.1f %% per run (conservative default)"):format(
    100 * M.DEFAULT_RUN_NOISE))
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
      if r.method == "mann-whitney" then
        rule = ("%s, min effect %.1f %%, U test p=%.3g"):format(M.format_effect(r), 100 * r.threshold, r.p)
      elseif r.method == "noise" then
        rule = ("%s, noise threshold %.1f %%"):format(M.format_effect(r), 100 * r.threshold)
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
      p = num(r.p), threshold = num(r.threshold), note = r.note or "", ci_low = num(r.ci_low),
      ci_high = num(r.ci_high), run_noise = num(r.run_noise)}
  end
  return {"operator", "mode", "dtype", "params", "impl", "a_ms", "b_ms", "ratio", "verdict", "method", "p",
    "threshold", "note", "ci_low", "ci_high", "run_noise"}, rows
end

return M
