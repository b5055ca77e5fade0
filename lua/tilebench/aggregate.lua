-- aggregate.lua: turns result tables (resultset.lua) into the summary of a run: per operator x
-- dtype x mode geomeans over matched cases, per-operator and suite speedups, categories, wins,
-- the share of cases at >= 80 % rho and the slow/failed list; as markdown and CSV.
--
-- Matching: a case counts for the pair (impl, baseline) only if both have a time with status ok
-- or slow. Speedup of an operator = geomean over its matched cases of t_baseline / t_impl.
-- Suite speedup = geomean over operators (each weighted equally) of the operator speedups.
local stats = require("tilebench.stats")
local resultset = require("tilebench.resultset")
local categories = require("tilebench.categories")

local M = {}

M.RHO_GATE = 0.8

local function push(t, k, v)
  local l = t[k]
  if not l then l = {}; t[k] = l end
  l[#l + 1] = v
end

local function union_impls(tables)
  local seen, out = {}, {}
  for _, t in ipairs(tables) do
    for _, i in ipairs(t.impls) do
      if not seen[i] then seen[i] = true; out[#out + 1] = i end
    end
  end
  return out
end

local function dtypes_of(t)
  local seen, out = {}, {}
  for _, c in ipairs(t.cases) do
    if not seen[c.dtype] then seen[c.dtype] = true; out[#out + 1] = c.dtype end
  end
  return out
end

-- Per-case speedups of impl against the table's baseline over matched cases, optionally one dtype.
local function matched(t, impl, dtype)
  local speedups, t_impl, t_base = {}, {}, {}
  for _, c in ipairs(t.cases) do
    if dtype == nil or c.dtype == dtype then
      local a, b = c.by_impl[impl], c.by_impl[t.baseline]
      if resultset.timed(a) and resultset.timed(b) then
        speedups[#speedups + 1] = b.ms / a.ms
        t_impl[#t_impl + 1] = a.ms
        t_base[#t_base + 1] = b.ms
      end
    end
  end
  return speedups, t_impl, t_base
end

-- M.compute(tables [, opts]) -> result (see the top of the file).
function M.compute(tables, opts)
  opts = opts or {}
  local r = {impls = union_impls(tables), modes = {}, per_dtype = {}, per_operator = {}, suite = {},
             categories = {}, wins = {}, rho = {}, problems = {}, operators = {}, no_baseline = {}}
  local mode_seen = {}
  local op_speedups = {}     -- mode -> impl -> list of operator speedups
  local cat_speedups = {}    -- mode -> category -> impl -> list
  local wins, contested = {}, {}
  local rho_hits, rho_n = {}, {}
  for _, t in ipairs(tables) do
    if not mode_seen[t.mode] then mode_seen[t.mode] = true; r.modes[#r.modes + 1] = t.mode end
    local cat = t.category or categories.of(t.operator)
    t.category = cat
    r.operators[#r.operators + 1] = {operator = t.operator, mode = t.mode, category = cat,
      baseline = t.baseline, cases = #t.cases, source = t.source}
    op_speedups[t.mode] = op_speedups[t.mode] or {}
    cat_speedups[t.mode] = cat_speedups[t.mode] or {}
    cat_speedups[t.mode][cat] = cat_speedups[t.mode][cat] or {}
    wins[t.mode], contested[t.mode] = wins[t.mode] or {}, contested[t.mode] or 0
    rho_hits[t.mode], rho_n[t.mode] = rho_hits[t.mode] or {}, rho_n[t.mode] or {}

    if not t.baseline then r.no_baseline[#r.no_baseline + 1] = t.operator .. " (" .. t.mode .. ")" end

    -- per dtype: geomean times over cases matched with the baseline
    for _, dtype in ipairs(dtypes_of(t)) do
      for _, impl in ipairs(t.impls) do
        local row = {operator = t.operator, mode = t.mode, dtype = dtype, category = cat, impl = impl,
                     baseline = t.baseline}
        if t.baseline then
          local sp, ti, tb = matched(t, impl, dtype)
          row.n = #sp
          row.geomean_ms, row.geomean_ms_baseline, row.speedup = stats.geomean(ti), stats.geomean(tb), stats.geomean(sp)
        else
          local ti = {}
          for _, c in ipairs(t.cases) do
            if c.dtype == dtype and resultset.timed(c.by_impl[impl]) then ti[#ti + 1] = c.by_impl[impl].ms end
          end
          row.n, row.geomean_ms = #ti, stats.geomean(ti)
        end
        r.per_dtype[#r.per_dtype + 1] = row
      end
    end

    -- per operator (all dtypes): geomean of per-case speedups
    if t.baseline then
      for _, impl in ipairs(t.impls) do
        local sp = matched(t, impl, nil)
        local s = stats.geomean(sp)
        r.per_operator[#r.per_operator + 1] = {operator = t.operator, mode = t.mode, category = cat,
          impl = impl, baseline = t.baseline, n = #sp, speedup = s}
        if s then
          push(op_speedups[t.mode], impl, s)
          push(cat_speedups[t.mode][cat], impl, s)
        end
      end
    end

    -- wins, rho, problems: per case
    for _, c in ipairs(t.cases) do
      local best, best_ms, timed = {}, math.huge, 0
      for _, impl in ipairs(t.impls) do
        local e = c.by_impl[impl]
        if resultset.timed(e) then
          timed = timed + 1
          if e.ms < best_ms then best, best_ms = {impl}, e.ms
          elseif e.ms == best_ms then best[#best + 1] = impl end
          if e.rho then
            rho_n[t.mode][impl] = (rho_n[t.mode][impl] or 0) + 1
            if e.rho >= M.RHO_GATE then rho_hits[t.mode][impl] = (rho_hits[t.mode][impl] or 0) + 1 end
          end
        end
        if e and e.status ~= "ok" then
          r.problems[#r.problems + 1] = {operator = t.operator, mode = t.mode, dtype = c.dtype, params = c.params,
            impl = impl, status = e.status, reason = e.reason or ""}
        end
      end
      if timed >= 2 then
        contested[t.mode] = contested[t.mode] + 1
        for _, impl in ipairs(best) do wins[t.mode][impl] = (wins[t.mode][impl] or 0) + 1 end
      end
    end
  end

  for _, mode in ipairs(r.modes) do
    for _, impl in ipairs(r.impls) do
      local l = op_speedups[mode] and op_speedups[mode][impl] or {}
      r.suite[#r.suite + 1] = {mode = mode, impl = impl, operators = #l, speedup = stats.geomean(l),
        wins = wins[mode][impl] or 0, contested = contested[mode],
        rho_at_least = rho_hits[mode][impl] or 0, rho_cases = rho_n[mode][impl] or 0,
        rho_share = (rho_n[mode][impl] or 0) > 0 and (rho_hits[mode][impl] or 0) / rho_n[mode][impl] or nil}
    end
    local cats = {}
    for _, c in ipairs(categories.ORDER) do cats[#cats + 1] = c end
    local extra = {}
    for c in pairs(cat_speedups[mode] or {}) do if not categories.is_known(c) then extra[#extra + 1] = c end end
    table.sort(extra)
    for _, c in ipairs(extra) do cats[#cats + 1] = c end
    for _, cat in ipairs(cats) do
      local bycat = cat_speedups[mode][cat]
      if bycat then
        for _, impl in ipairs(r.impls) do
          local l = bycat[impl] or {}
          if #l > 0 then
            r.categories[#r.categories + 1] = {mode = mode, category = cat, impl = impl, operators = #l,
              speedup = stats.geomean(l)}
          end
        end
      end
    end
  end
  return r
end

-- ---- formatting -----------------------------------------------------------------------------
local function fmt_ms(x) return x and ("%.4g"):format(x) or "–" end
local function fmt_x(x) return x and ("%.2fx"):format(x) or "–" end
local function fmt_pct(x) return x and ("%.0f %%"):format(100 * x) or "n/a" end
M.fmt_ms, M.fmt_x, M.fmt_pct = fmt_ms, fmt_x, fmt_pct

local function md_table(header, rows)
  local out = {"| " .. table.concat(header, " | ") .. " |", "|" .. ("---|"):rep(#header)}
  for _, row in ipairs(rows) do
    local cells = {}
    for i = 1, #header do cells[i] = tostring(row[i] == nil and "" or row[i]):gsub("|", "\\|"):gsub("[\r\n]+", " ") end
    out[#out + 1] = "| " .. table.concat(cells, " | ") .. " |"
  end
  return table.concat(out, "\n")
end
M.md_table = md_table

local function filter(list, key, value)
  local out = {}
  for _, x in ipairs(list) do if x[key] == value then out[#out + 1] = x end end
  return out
end

-- The impls other than each operator's baseline that appear in a mode, in union order.
local function impls_of_mode(r, mode)
  local present = {}
  for _, x in ipairs(r.per_dtype) do if x.mode == mode then present[x.impl] = true end end
  local out = {}
  for _, i in ipairs(r.impls) do if present[i] then out[#out + 1] = i end end
  return out
end
M.impls_of_mode = impls_of_mode

function M.markdown(r, title)
  local out = {"# " .. (title or "Aggregate"), ""}
  local baselines, bl = {}, {}
  for _, o in ipairs(r.operators) do if o.baseline and not baselines[o.baseline] then baselines[o.baseline] = true; bl[#bl + 1] = o.baseline end end
  out[#out + 1] = ("%d result tables, implementations: %s; speedups are against each operator's baseline (%s). "
    .. "A case counts for a pair of implementations only when both have a time (status ok or slow)."):format(
    #r.operators, table.concat(r.impls, ", "), #bl > 0 and table.concat(bl, ", ") or "none")
  if #r.no_baseline > 0 then
    out[#out + 1] = ""
    out[#out + 1] = "No baseline (no speedups): " .. table.concat(r.no_baseline, ", ") .. "."
  end
  for _, mode in ipairs(r.modes) do
    local impls = impls_of_mode(r, mode)
    out[#out + 1] = ""
    out[#out + 1] = ("## Suite, mode %s"):format(mode)
    out[#out + 1] = ""
    local rows = {}
    for _, s in ipairs(filter(r.suite, "mode", mode)) do
      rows[#rows + 1] = {s.impl, s.operators, fmt_x(s.speedup), ("%d / %d"):format(s.wins, s.contested),
        s.rho_cases > 0 and ("%s (%d / %d)"):format(fmt_pct(s.rho_share), s.rho_at_least, s.rho_cases) or "n/a"}
    end
    out[#out + 1] = md_table({"implementation", "operators", "geomean speedup", "wins", "cases at >= 80 % rho"}, rows)

    out[#out + 1] = ""
    out[#out + 1] = ("### Categories, mode %s (geomean of operator speedups; operators)"):format(mode)
    out[#out + 1] = ""
    local cats, byc = {}, {}
    for _, c in ipairs(filter(r.categories, "mode", mode)) do
      if not byc[c.category] then byc[c.category] = {}; cats[#cats + 1] = c.category end
      byc[c.category][c.impl] = c
    end
    rows = {}
    for _, cat in ipairs(cats) do
      local row = {cat}
      for _, impl in ipairs(impls) do
        local c = byc[cat][impl]
        row[#row + 1] = c and ("%s (%d)"):format(fmt_x(c.speedup), c.operators) or "–"
      end
      rows[#rows + 1] = row
    end
    local h = {"category"}
    for _, i in ipairs(impls) do h[#h + 1] = i end
    out[#out + 1] = md_table(h, rows)

    out[#out + 1] = ""
    out[#out + 1] = ("### Operators, mode %s (geomean of per-case speedups; matched cases)"):format(mode)
    out[#out + 1] = ""
    local ops, byo = {}, {}
    for _, o in ipairs(filter(r.per_operator, "mode", mode)) do
      if not byo[o.operator] then byo[o.operator] = {}; ops[#ops + 1] = o end
      byo[o.operator][o.impl] = o
    end
    rows = {}
    for _, o in ipairs(ops) do
      local row = {o.operator, o.category, o.baseline}
      for _, impl in ipairs(impls) do
        local x = byo[o.operator][impl]
        row[#row + 1] = x and ("%s (%d)"):format(fmt_x(x.speedup), x.n) or "–"
      end
      rows[#rows + 1] = row
    end
    h = {"operator", "category", "baseline"}
    for _, i in ipairs(impls) do h[#h + 1] = i end
    out[#out + 1] = md_table(h, rows)

    out[#out + 1] = ""
    out[#out + 1] = ("### Operator x dtype, mode %s (geomean ms over cases matched with the baseline; cases)"):format(mode)
    out[#out + 1] = ""
    local keys, byk = {}, {}
    for _, x in ipairs(filter(r.per_dtype, "mode", mode)) do
      local k = x.operator .. "|" .. x.dtype
      if not byk[k] then byk[k] = {}; keys[#keys + 1] = x end
      byk[k][x.impl] = x
    end
    rows = {}
    for _, x in ipairs(keys) do
      local row = {x.operator, x.dtype}
      for _, impl in ipairs(impls) do
        local y = byk[x.operator .. "|" .. x.dtype][impl]
        row[#row + 1] = y and y.geomean_ms and ("%s (%d)"):format(fmt_ms(y.geomean_ms), y.n) or "–"
      end
      rows[#rows + 1] = row
    end
    h = {"operator", "dtype"}
    for _, i in ipairs(impls) do h[#h + 1] = i .. " ms" end
    out[#out + 1] = md_table(h, rows)
  end

  out[#out + 1] = ""
  out[#out + 1] = ("## Slow and failed cases (%d)"):format(#r.problems)
  out[#out + 1] = ""
  if #r.problems == 0 then
    out[#out + 1] = "None: every case of every implementation has status ok."
  else
    local rows = {}
    for _, p in ipairs(r.problems) do
      rows[#rows + 1] = {p.operator, p.mode, p.dtype, p.params, p.impl, p.status, p.reason}
    end
    out[#out + 1] = md_table({"operator", "mode", "dtype", "params", "implementation", "status", "reason"}, rows)
  end
  return table.concat(out, "\n") .. "\n"
end

-- CSV files: name -> {header, rows (arrays of cells)} ---------------------------------------
local function num(x, f) return x and (f or "%.6g"):format(x) or "" end

function M.csv_tables(r)
  local T = {}
  local rows = {}
  for _, x in ipairs(r.per_dtype) do
    rows[#rows + 1] = {operator = x.operator, mode = x.mode, dtype = x.dtype, category = x.category, impl = x.impl,
      baseline = x.baseline or "", cases = x.n, geomean_ms = num(x.geomean_ms),
      geomean_ms_baseline = num(x.geomean_ms_baseline), speedup = num(x.speedup, "%.4f")}
  end
  T.per_dtype = {header = {"operator", "mode", "dtype", "category", "impl", "baseline", "cases", "geomean_ms",
    "geomean_ms_baseline", "speedup"}, rows = rows}
  rows = {}
  for _, x in ipairs(r.per_operator) do
    rows[#rows + 1] = {operator = x.operator, mode = x.mode, category = x.category, impl = x.impl,
      baseline = x.baseline, cases = x.n, speedup = num(x.speedup, "%.4f")}
  end
  T.operators = {header = {"operator", "mode", "category", "impl", "baseline", "cases", "speedup"}, rows = rows}
  rows = {}
  for _, x in ipairs(r.categories) do
    rows[#rows + 1] = {mode = x.mode, category = x.category, impl = x.impl, operators = x.operators,
      speedup = num(x.speedup, "%.4f")}
  end
  T.categories = {header = {"mode", "category", "impl", "operators", "speedup"}, rows = rows}
  rows = {}
  for _, x in ipairs(r.suite) do
    rows[#rows + 1] = {mode = x.mode, impl = x.impl, operators = x.operators, speedup = num(x.speedup, "%.4f"),
      wins = x.wins, contested_cases = x.contested, rho_at_least_80 = x.rho_at_least, rho_cases = x.rho_cases,
      rho_share = num(x.rho_share, "%.4f")}
  end
  T.suite = {header = {"mode", "impl", "operators", "speedup", "wins", "contested_cases", "rho_at_least_80",
    "rho_cases", "rho_share"}, rows = rows}
  rows = {}
  for _, p in ipairs(r.problems) do
    rows[#rows + 1] = {operator = p.operator, mode = p.mode, dtype = p.dtype, params = p.params, impl = p.impl,
      status = p.status, reason = p.reason}
  end
  T.problems = {header = {"operator", "mode", "dtype", "params", "impl", "status", "reason"}, rows = rows}
  return T
end

local mkdir_p = require("tilebench.util").mkdir_p
M.mkdir_p = mkdir_p

-- Writes summary.md and the CSVs into dir; returns the list of paths written.
function M.write(r, dir, title)
  local csv = require("tilebench.csv")
  mkdir_p(dir)
  local written = {}
  local md = M.markdown(r, title)
  require("tilebench.util").write_atomic(dir .. "/summary.md", md)
  written[#written + 1] = dir .. "/summary.md"
  local tables = M.csv_tables(r)
  for _, name in ipairs({"suite", "categories", "operators", "per_dtype", "problems"}) do
    local t = tables[name]
    local path = dir .. "/" .. name .. ".csv"
    csv.write(path, t.header, t.rows)
    written[#written + 1] = path
  end
  return written, md
end

return M
