-- campaign.lua: what a run measures and how it is carried out. Loads campaigns/*.lua, merges
-- command-line overrides over them, expands them into work items (operator, mode, dtype, case)
-- in a deterministic order, shards them, and drives the items through an executor (worker
-- processes or in-process), journalling each finished case before the next one starts.
local journal = require("tilebench.journal")
local sys = require("tb.sys")

local M = {}

-- ---- campaign scripts ----------------------------------------------------------------------
-- Fields a campaign script may set: {type(s), description}. Anything else is an error.
M.FIELDS = {
  name         = { "string", "a short name, shown at start" },
  description  = { "string", "one line on what the campaign is for" },
  operators    = { "string|table", "'all', or a list of operator names and category names" },
  exclude      = { "table", "operator names left out (after 'all' or a category)" },
  dtypes       = { "table", "only these dtypes (default: each operator's own)" },
  cases        = { "string|table", "case subset per dtype: '1-3,7', 'first', 'last', 'ends', 'all'; or {default = .., <operator> = ..}" },
  impls        = { "table", "only these implementations (default: all of each operator)" },
  modes        = { "table", "{'default'}, {'autotune'} or both" },
  protocol     = { "table", "timer options: the names of tb.timer.options (`tilebench run --help` lists them as flags)" },
  gate         = { "table", "{rho = x, elib = y}: verified cases under either are 'slow'" },
  gate_exit    = { "boolean", "exit 3 when any case is slow, wrong, failed or timed out (--gate)" },
  case_timeout = { "number", "seconds a case may take beyond the protocol's timeout (default 60)" },
  metrics      = { "table", "extra metrics: {name = function(row) -> number|nil}, computed per row" },
}

-- The protocol's keys and their checks come from tb.timer.options (options.check_protocol).

M.DEFAULT_CASE_TIMEOUT = 60

local function type_ok(v, spec)
  for t in spec:gmatch("[^|]+") do if type(v) == t then return true end end
  return false
end

-- Checks a campaign table; errors name the file and the field.
function M.validate(c, where)
  where = where or "campaign"
  if type(c) ~= "table" then error(string.format("%s: must return a table, got %s", where, type(c)), 0) end
  for k, v in pairs(c) do
    local f = M.FIELDS[k]
    if not f then
      local names = {}
      for n in pairs(M.FIELDS) do names[#names + 1] = n end
      table.sort(names)
      error(string.format("%s: unknown field '%s' (fields: %s)", where, tostring(k), table.concat(names, ", ")), 0)
    end
    if not type_ok(v, f[1]) then
      error(string.format("%s: field '%s' must be a %s, got %s", where, k, f[1]:gsub("|", " or "), type(v)), 0)
    end
  end
  if type(c.operators) == "string" and c.operators ~= "all" then
    error(string.format("%s: field 'operators' must be 'all' or a list, got '%s'", where, c.operators), 0)
  end
  for _, m in ipairs(c.modes or {}) do
    if m ~= "default" and m ~= "autotune" then
      error(string.format("%s: field 'modes': unknown mode '%s' (default, autotune)", where, tostring(m)), 0)
    end
  end
  require("tilebench.options").check_protocol(c.protocol or {}, where)
  for k, v in pairs(c.gate or {}) do
    if (k ~= "rho" and k ~= "elib") or type(v) ~= "number" then
      error(string.format("%s: field 'gate': expected {rho = number, elib = number}, got key '%s'", where, tostring(k)), 0)
    end
  end
  -- A metric becomes the CSV columns <name>_<impl>: an identifier, not a standard column's.
  local taken = { speedup = true, rho = true, elib = true, status = true, reason = true, noise = true }
  for k, v in pairs(c.metrics or {}) do
    if type(k) ~= "string" or type(v) ~= "function" then
      error(string.format("%s: field 'metrics': expected {name = function(row)}, got '%s'", where, tostring(k)), 0)
    end
    if not k:match("^[%a_][%w_]*$") or taken[k] or k:match("_error$") then
      error(string.format("%s: field 'metrics': '%s' cannot name CSV columns <name>_<impl> (an identifier, "
        .. "not speedup, rho, elib, status, reason, noise, nor ending in _error)", where, k), 0)
    end
  end
  if c.case_timeout and not (c.case_timeout > 0) then
    error(string.format("%s: field 'case_timeout' must be > 0", where), 0)
  end
  return c
end

-- Loads a campaign script. It runs with the standard library and returns one table.
function M.load(path)
  local env = setmetatable({}, { __index = _G })
  local chunk, err = loadfile(path, "t", env)
  if not chunk then error(string.format("campaign %s", err), 0) end
  local ok, c = xpcall(chunk, debug.traceback)
  if not ok then error(string.format("campaign %s failed:\n%s", path, c), 0) end
  M.validate(c, path)
  c.path = path
  return c
end

-- ---- settings: a campaign with command-line overrides applied -------------------------------
-- overrides: {operators, dtypes, impls, cases, modes, protocol = {...}, gate = {...},
-- gate_exit, case_timeout} from the command line; each replaces the campaign's field.
function M.settings(c, overrides)
  c = c or {}
  overrides = overrides or {}
  local s = {
    name = c.name, description = c.description, path = c.path,
    operators = c.operators, exclude = c.exclude, dtypes = c.dtypes, cases = c.cases,
    impls = c.impls, modes = c.modes or { "default" }, protocol = {}, gate = nil,
    gate_exit = c.gate_exit or false, case_timeout = c.case_timeout or M.DEFAULT_CASE_TIMEOUT,
    metrics = c.metrics,
  }
  for k, v in pairs(c.protocol or {}) do s.protocol[k] = v end
  if c.gate then s.gate = { rho = c.gate.rho, elib = c.gate.elib } end
  for _, k in ipairs({ "operators", "dtypes", "impls", "cases", "modes", "case_timeout" }) do
    if overrides[k] ~= nil then s[k] = overrides[k] end
  end
  if overrides.gate_exit then s.gate_exit = true end
  for k, v in pairs(overrides.protocol or {}) do s.protocol[k] = v end
  if overrides.gate then
    s.gate = s.gate or {}
    for k, v in pairs(overrides.gate) do s.gate[k] = v end
  end
  if s.operators == nil then error("no operators: give a campaign file or --operator", 0) end
  return s
end

-- ---- case subsets -----------------------------------------------------------------------------
-- "1-3,7", "first", "last", "ends", "all" -> predicate(index, count), or nil, message.
function M.case_filter(spec)
  if spec == nil or spec == "all" then return function() return true end end
  if spec == "first" then return function(i) return i == 1 end end
  if spec == "last" then return function(i, n) return i == n end end
  if spec == "ends" then return function(i, n) return i == 1 or i == n end end
  if spec == "middle" then return function(i, n) return i == (n + 1) // 2 end end
  local ranges = {}
  for part in tostring(spec):gmatch("[^,]+") do
    local a, b = part:match("^(%d+)%-(%d+)$")
    if a then
      ranges[#ranges + 1] = { tonumber(a), tonumber(b) }
    elseif part:match("^%d+$") then
      ranges[#ranges + 1] = { tonumber(part), tonumber(part) }
    else
      return nil, string.format("bad case list '%s' (use e.g. 1-3,7 or first|last|ends|middle|all)", spec)
    end
  end
  if #ranges == 0 then return nil, string.format("bad case list '%s'", tostring(spec)) end
  return function(i)
    for _, r in ipairs(ranges) do if i >= r[1] and i <= r[2] then return true end end
    return false
  end
end

-- ---- operators ------------------------------------------------------------------------------
-- The loader gives list() -> names and load(name) -> {name, impls, cases, config, category}; the
-- default is tilebench.operator (pure Lua: no GPU is touched to plan a campaign).
local function default_loader() return require("tilebench.operator") end

-- Operator names a settings table selects, in order: listed names as given, 'all' and
-- categories in name order; excluded ones dropped.
function M.select_operators(s, loader)
  loader = loader or default_loader()
  local wanted = s.operators
  local all = loader.list()
  local categories = {}
  local ok, cats = pcall(require, "tilebench.categories")
  if ok then for _, c in ipairs(cats.ORDER or {}) do categories[c] = true end end
  local out, seen = {}, {}
  local function add(n) if not seen[n] then seen[n] = true; out[#out + 1] = n end end
  if wanted == "all" then
    for _, n in ipairs(all) do add(n) end
  else
    for _, w in ipairs(wanted) do
      if categories[w] then
        for _, n in ipairs(all) do
          -- An operator that does not load might be in the category: it is kept, so planning
          -- reports it as failed rather than dropping it unseen.
          local ok, op = pcall(loader.load, n)
          if not ok or op.category == w then add(n) end
        end
      else
        add(w)
      end
    end
  end
  local exclude = {}
  for _, n in ipairs(s.exclude or {}) do exclude[n] = true end
  local kept = {}
  for _, n in ipairs(out) do if not exclude[n] then kept[#kept + 1] = n end end
  return kept
end

local function dtypes_of(op)
  local seen, list = {}, {}
  for _, c in ipairs(op.cases) do
    if not seen[c.dtype] then seen[c.dtype] = true; list[#list + 1] = c.dtype end
  end
  return list
end
M.dtypes_of = dtypes_of

local function cases_of(op, dtype)
  local out = {}
  for _, c in ipairs(op.cases) do if c.dtype == dtype then out[#out + 1] = c end end
  return out
end
M.cases_of = cases_of

-- The timer protocol of one operator: its config.yaml benchmark block (graph, flush), then the
-- campaign's and the command line's fields. Naming warmup or repeat selects the fixed protocol.
function M.protocol_for(op, s)
  local b = (op.config and op.config.benchmark) or {}
  local p = {}
  if b.use_cuda_graph ~= nil then p.graph = b.use_cuda_graph end
  if b.flush_l2 ~= nil then p.flush = b.flush_l2 end
  for k, v in pairs(s.protocol or {}) do p[k] = v end
  if (p.warmup or p["repeat"]) and p.mode == nil then p.mode = "fixed" end
  if p.mode == "fixed" then
    p.warmup = p.warmup or b.warmup or 20
    p["repeat"] = p["repeat"] or b["repeat"] or 100
  end
  return p
end

-- The implementations a settings table runs for op, in the operator's order (baseline first).
function M.impls_for(op, s)
  if not s.impls then return op.impls end
  local want, out = {}, {}
  for _, i in ipairs(s.impls) do want[i] = true end
  for _, i in ipairs(op.impls) do if want[i] then out[#out + 1] = i end end
  return out
end

-- Work items in a deterministic order: operator (selection order), mode, dtype (operator's
-- order), case (grid order). Errors (unknown operator, dtype, implementation, bad case list)
-- name what is wrong before anything runs. An operator that is on the search path but does not
-- load (its config.yaml does not parse, its operator.lua raises) costs itself only: it is
-- returned in broken, {{operator =, error =}, ...}, and the others are planned.
function M.plan_items(s, loader)
  loader = loader or default_loader()
  local items, impl_seen, broken = {}, {}, {}
  local on_path = {}
  for _, n in ipairs(loader.list()) do on_path[n] = true end
  for _, name in ipairs(M.select_operators(s, loader)) do
    local op
    if on_path[name] then
      local ok, loaded = pcall(loader.load, name)
      if ok then op = loaded else broken[#broken + 1] = { operator = name, error = tostring(loaded) } end
    else
      op = loader.load(name) -- raises "unknown operator": a usage error, not a broken operator
    end
    if op then
      local known = {}
      local op_dtypes = dtypes_of(op)
      for _, d in ipairs(op_dtypes) do known[d] = true end
      local dtypes = {}
      if s.dtypes then
        for _, d in ipairs(s.dtypes) do if known[d] then dtypes[#dtypes + 1] = d end end
      else
        dtypes = op_dtypes
      end
      local impls = M.impls_for(op, s)
      for _, i in ipairs(op.impls) do impl_seen[i] = true end
      local spec = s.cases
      if type(spec) == "table" then spec = spec[name] or spec.default end
      local filter, ferr = M.case_filter(spec)
      if not filter then error(string.format("cases for %s: %s", name, ferr), 0) end
      local protocol = M.protocol_for(op, s)
      if #impls > 0 then
        for _, mode in ipairs(s.modes) do
          for _, dt in ipairs(dtypes) do
            local cases = cases_of(op, dt)
            for i, c in ipairs(cases) do
              if filter(i, #cases) then
                items[#items + 1] = { operator = name, mode = mode, dtype = dt, case_index = i,
                                      case_id = c.id, impls = impls, protocol = protocol, gate = s.gate,
                                      _case = c, _category = op.category, _op = op }
              end
            end
          end
        end
      end
    end
  end
  for _, i in ipairs(s.impls or {}) do
    if not impl_seen[i] then
      local all = {}
      for n in pairs(impl_seen) do all[#all + 1] = n end
      table.sort(all)
      error(string.format("no selected operator has implementation '%s' (they have %s)", i,
        table.concat(all, ", ")), 0)
    end
  end
  if s.dtypes and #items == 0 and #broken == 0 then
    error(string.format("no work: none of the selected operators has dtype %s", table.concat(s.dtypes, ",")), 0)
  end
  return items, broken
end

-- The journal entry of an operator that did not load: one per mode, no case, no
-- implementation; status failed, the load error as its reason.
function M.operator_failed_row(name, mode, message)
  return { operator = name, mode = mode, status = "failed", reason = message }
end

-- An entry about a whole operator rather than one of its cases.
function M.is_operator_row(r) return r.case_index == nil end

-- "k/n" -> k, n or nil, message.
function M.parse_shard(text)
  local k, n = tostring(text):match("^(%d+)/(%d+)$")
  k, n = tonumber(k), tonumber(n)
  if not k or n < 1 or k < 1 or k > n then
    return nil, string.format("expected k/n with 1 <= k <= n, got '%s'", tostring(text))
  end
  return k, n
end

-- Shard k of n: every n-th item starting at the k-th, so costly operators spread over shards.
function M.shard(items, k, n)
  if not k or n == 1 then return items end
  local out = {}
  for i, it in ipairs(items) do
    if (i - 1) % n == k - 1 then out[#out + 1] = it end
  end
  return out
end

-- The shard a run's --shard text names, "1/1" when none: k, n (nil, message when malformed).
function M.shard_of(text)
  if text == nil then return 1, 1 end
  return M.parse_shard(text)
end

-- The journal keys of items, in execution order (item order, then each item's implementations).
function M.item_keys(items)
  local keys = {}
  for _, it in ipairs(items) do
    for _, impl in ipairs(it.impls) do
      keys[#keys + 1] = journal.key({ operator = it.operator, mode = it.mode, dtype = it.dtype,
                                      case_index = it.case_index, impl = impl })
    end
  end
  return keys
end

-- The journal keys of items that rows do not hold (in execution order).
function M.unaccounted(items, rows)
  local done = journal.done_set(rows)
  local out = {}
  for _, k in ipairs(M.item_keys(items)) do if not done[k] then out[#out + 1] = k end end
  return out
end

-- Rows in the order an unsharded run of items would journal them (a stable sort); rows of no
-- item keep their relative order after the others.
function M.sort_rows(rows, items)
  local pos = {}
  for i, k in ipairs(M.item_keys(items)) do pos[k] = pos[k] or i end
  local tagged = {}
  for i, r in ipairs(rows) do tagged[i] = { r = r, p = pos[journal.key(r)] or math.huge, i = i } end
  table.sort(tagged, function(a, b)
    if a.p ~= b.p then return a.p < b.p end
    return a.i < b.i
  end)
  local out = {}
  for i, t in ipairs(tagged) do out[i] = t.r end
  return out
end

-- The wire form of an item: no private fields (they hold parent-side tables).
function M.wire_item(it, extra)
  local w = {}
  for k, v in pairs(it) do if type(k) ~= "string" or k:sub(1, 1) ~= "_" then w[k] = v end end
  for k, v in pairs(extra or {}) do w[k] = v end
  return w
end

-- ---- runs ---------------------------------------------------------------------------------------
-- A run id: UTC time plus a short random part, sortable and unique enough for one machine.
function M.new_run_id()
  return os.date("!%Y%m%dT%H%M%SZ") .. "-" .. sys.random_hex(3)
end

M.valid_run_id = require("tilebench.util").is_name

M.mkdirs = require("tilebench.util").mkdir_p

-- A row for an implementation the executor could not report on (crash, time limit).
function M.synthetic_row(it, impl, status, reason)
  return { operator = it.operator, mode = it.mode, dtype = it.dtype, case_index = it.case_index,
           case_id = it.case_id, params = it._case and it._case.params or nil, impl = impl,
           category = it._category, status = status, reason = reason }
end

-- Applies the campaign's extra metrics to a row (errors become the metric's reason, not a crash).
function M.apply_metrics(row, metrics)
  if not metrics then return end
  local names = {}
  for n in pairs(metrics) do names[#names + 1] = n end
  table.sort(names)
  for _, n in ipairs(names) do
    local ok, v = pcall(metrics[n], row)
    row.extra = row.extra or {}
    if ok then row.extra[n] = v else row.extra[n .. "_error"] = tostring(v) end
  end
end

-- The derived columns of one case's rows, in the parent from the raw results: flops and bytes
-- from the operator's config, then rho, E_lib, speedup (against the baseline and the library
-- row of the same case) and the gate. The workers never see the peaks.
function M.case_metrics(it, rows, peaks)
  local op, case = it._op, it._case
  if not op or not case then return end
  local config = require("tilebench.config")
  local metrics = require("tilebench.metrics")
  local ok, err = pcall(function()
    local flops, bytes = config.work(op.config, case)
    local by_impl = {}
    for _, r in ipairs(rows) do by_impl[r.impl] = r end
    local baseline = op.baseline and by_impl[op.baseline]
    local lib = by_impl.lib
    for _, row in ipairs(rows) do
      row.flops, row.bytes = flops, bytes
      if row.ms then
        row.t_baseline = baseline and baseline.ms or nil
        row.t_lib = lib and lib.ms or nil
        local m = metrics.compute(row, { peaks = peaks, category = op.category, dtype = case.dtype })
        for k, v in pairs(m) do row[k] = v end
        if it.gate and row.status == "ok" then metrics.gate(row, it.gate) end
      end
    end
  end)
  if not ok then
    for _, row in ipairs(rows) do row.metrics_error = tostring(err) end
  end
end

M.BAD = { slow = true, wrong = true, failed = true, timeout = true }

-- Runs items through executor:run(item) -> rows (always one per implementation), appending
-- each item's rows to the journal (durable) before the next item starts. hooks: on_rows(item,
-- rows), on_item_start(item), interrupted() -> truthy to stop between cases, metrics (the
-- campaign's extra metrics), peaks (the device's ceilings, for case_metrics). Returns
-- {done = n, interrupted = signal|nil, counts = {status = n}}.
function M.execute(items, executor, jnl, hooks)
  hooks = hooks or {}
  local counts, done = {}, 0
  for _, it in ipairs(items) do
    local sig = hooks.interrupted and hooks.interrupted()
    if sig then return { done = done, interrupted = sig, counts = counts } end
    if hooks.on_item_start then hooks.on_item_start(it) end
    local rows = executor:run(it)
    for _, r in ipairs(rows) do
      if it._case then r.params = it._case.params end -- exact grid values, not a JSON round trip
      r.case_id = r.case_id or it.case_id
      r.category = r.category or it._category
    end
    M.case_metrics(it, rows, hooks.peaks)
    for _, r in ipairs(rows) do
      M.apply_metrics(r, hooks.metrics)
      counts[r.status or "?"] = (counts[r.status or "?"] or 0) + 1
    end
    jnl:append(rows)
    done = done + 1
    if hooks.on_rows then hooks.on_rows(it, rows) end
  end
  local sig = hooks.interrupted and hooks.interrupted()
  return { done = done, interrupted = sig, counts = counts }
end

-- Regenerates every output of a run from its journal: results CSVs (one per operator and
-- mode, atomically) and raw/<op>.json. Same journal, same files: resumed runs end with the
-- CSVs of an uninterrupted one. plan: {operator -> {impls, dtypes, cases = {dtype -> cases}}}.
function M.write_outputs(run_dir, csv_dir, rows, plan, run_id)
  local results = require("tilebench.results")
  rows = journal.latest(rows)
  local by_op, op_order = {}, {}
  for _, r in ipairs(rows) do
    local p = plan[r.operator]
    if p then
      local c = p.cases[r.dtype] and p.cases[r.dtype][r.case_index]
      if c then r.params = c.params end
    end
    -- The names become file names: the last guard against rows that did not come through
    -- journal.read's check (util.is_name, as for --gpu).
    local bad = journal.entry_problem(r)
    if bad then error(string.format("run outputs: %s in an entry of %s", bad, run_dir), 0) end
    if not by_op[r.operator] then by_op[r.operator] = {}; op_order[#op_order + 1] = r.operator end
    local t = by_op[r.operator]
    t[#t + 1] = r
  end
  M.mkdirs(csv_dir)
  M.mkdirs(run_dir .. "/raw")
  local written = {}
  for _, opname in ipairs(op_order) do
    local oprows, cases_rows = by_op[opname], {}
    for _, r in ipairs(oprows) do if not M.is_operator_row(r) then cases_rows[#cases_rows + 1] = r end end
    -- An operator that failed to load has no cases to tabulate: its entry goes to raw/ only,
    -- and once it loads and runs (resume after a fix) its cases replace the entry.
    if #cases_rows > 0 then oprows = cases_rows end
    local p = plan[opname] or {}
    local rank = {}
    for i, d in ipairs(p.dtypes or {}) do rank[d] = i end
    local by_mode, modes = {}, {}
    for _, r in ipairs(cases_rows) do
      local m = r.mode or "default"
      if not by_mode[m] then by_mode[m] = {}; modes[#modes + 1] = m end
      by_mode[m][#by_mode[m] + 1] = r
    end
    table.sort(modes)
    for _, m in ipairs(modes) do
      local impls = p.impls
      if not impls then
        local seen = {}
        impls = {}
        for _, r in ipairs(by_mode[m]) do
          if not seen[r.impl] then seen[r.impl] = true; impls[#impls + 1] = r.impl end
        end
      end
      written[#written + 1] = results.write_csv(csv_dir, opname, m, by_mode[m], impls, rank)
    end
    local raw = journal.encode({ operator = opname, run_id = run_id, rows = oprows })
    local ok, err = sys.write_atomic(run_dir .. "/raw/" .. opname .. ".json", raw .. "\n")
    if not ok then error(err, 0) end
  end
  return written
end

return M
