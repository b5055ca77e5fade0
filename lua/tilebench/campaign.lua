-- campaign.lua: what a run measures (definition and planning). Loads campaigns/*.lua, merges
-- command-line overrides over them, expands them into resolved work items (operator, mode,
-- dtype, case with its params, seed and work, implementations, protocol) in a deterministic
-- order, and shards them. Carrying the items out is tilebench.execute's job (with
-- tilebench.worker's processes); the run directory they end in is tilebench.rundir's.

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
  case_timeout = { "number", "seconds each implementation of a case may take, beyond the protocol's timeout, before its worker is killed (default 60)" },
  checks       = { "boolean", "honesty checks after each implementation's timed runs (tilebench.checks; default mode): a failed one is status refused" },
  metrics      = { "table", "extra metrics: {name = function(row) -> number|nil}, computed per row" },
  devices      = { "table", "GPUs of this host to run on at once, e.g. {0, 1} (--devices; one worker pool per GPU)" },
}

-- The protocol's keys and their checks come from tb.timer.options (options.check_protocol).

M.DEFAULT_CASE_TIMEOUT = 60

local function type_ok(v, spec)
  for t in spec:gmatch("[^|]+") do if type(v) == t then return true end end
  return false
end

-- The `devices` field (tilebench.pools runs them): a list of ordinals; true, or nil and why.
function M.check_devices(v)
  if #v == 0 then return nil, "must be a list of device ordinals, e.g. {0, 1}" end
  local seen = {}
  for _, d in ipairs(v) do
    if math.type(d) ~= "integer" or d < 0 then return nil, string.format("holds %s, not a device ordinal", tostring(d)) end
    if seen[d] then return nil, string.format("names device %d twice", d) end
    seen[d] = true
  end
  return true
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
  local taken = { speedup = true, rho = true, elib = true, status = true, reason = true, noise = true,
                  device = true } -- device: the GPU of a row under --devices (tilebench.pools)
  for name in pairs(require("tilebench.metrics").COLUMNS) do taken[name] = true end
  for name in pairs(require("tilebench.execute").POWER_COLUMNS) do taken[name] = true end
  for k, v in pairs(c.metrics or {}) do
    if type(k) ~= "string" or type(v) ~= "function" then
      error(string.format("%s: field 'metrics': expected {name = function(row)}, got '%s'", where, tostring(k)), 0)
    end
    if not k:match("^[%a_][%w_]*$") or taken[k] or k:match("_error$") then
      error(string.format("%s: field 'metrics': '%s' cannot name CSV columns <name>_<impl> (an identifier, "
        .. "not speedup, rho, elib, status, reason, noise, device, nor ending in _error)", where, k), 0)
    end
  end
  if c.devices then
    local ok, why = M.check_devices(c.devices)
    if not ok then error(string.format("%s: field 'devices' %s", where, why), 0) end
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
    metrics = c.metrics, checks = c.checks or false, devices = c.devices,
  }
  for k, v in pairs(c.protocol or {}) do s.protocol[k] = v end
  if c.gate then s.gate = { rho = c.gate.rho, elib = c.gate.elib } end
  for _, k in ipairs({ "operators", "dtypes", "impls", "cases", "modes", "case_timeout", "devices" }) do
    if overrides[k] ~= nil then s[k] = overrides[k] end
  end
  if overrides.gate_exit then s.gate_exit = true end
  if overrides.checks then s.checks = true end
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
          local loaded, op = pcall(loader.load, n)
          if not loaded or op.category == w then add(n) end
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
-- Implementations outside the default set (torch) run only when named; they come first.
function M.impls_for(op, s)
  if not s.impls then return op.impls end
  local want, out = {}, {}
  for _, i in ipairs(s.impls) do want[i] = true end
  for _, i in ipairs(op.known_impls or op.impls) do if want[i] then out[#out + 1] = i end end
  return out
end

-- The case's speedup baseline: torch where it runs (TileBench's definition), else the operator's.
function M.baseline_for(op, impls)
  for _, i in ipairs(impls or {}) do if i == "torch" then return "torch" end end
  return op.baseline
end

-- One resolved work item: everything a worker, a resume and a merge need, with no grid to
-- expand and no argv to parse again: the case (id, params, seed), its work (flops, bytes, from
-- config.yaml's formulas, for the parent's metrics), the operator's category and baseline.
-- _case keeps the grid's own case table for the parent (exact values, never on the wire).
function M.resolve_item(op, name, mode, dtype, index, c, impls, protocol, gate)
  local it = { operator = name, mode = mode, dtype = dtype, case_index = index, case_id = c.id,
               params = c.params, seed = c.seed, impls = impls, protocol = protocol, gate = gate,
               category = op.category, ceiling = op.ceiling, baseline = M.baseline_for(op, impls), _case = c,
               _category = op.category }
  if op.config then
    local ok, flops, bytes, _, essential, essential_flops = pcall(require("tilebench.config").work, op.config, c)
    if ok then
      it.flops, it.bytes, it.essential_bytes, it.essential_flops = flops, bytes, essential, essential_flops
    else
      it.work_error = tostring(flops)
    end
  end
  return it
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
      for _, i in ipairs(op.known_impls or op.impls) do impl_seen[i] = true end
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
                local it = M.resolve_item(op, name, mode, dt, i, c, impls, protocol, s.gate)
                if s.checks then it.checks = true end
                items[#items + 1] = it
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

return M
