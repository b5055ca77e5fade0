-- grid.lua: expands an operator's config into its cases, as TileBench does (OPERATORS.md,
-- "Global conventions"): the cartesian product of the case_grid lists taken in the YAML key
-- order (the first key outermost, the last varying fastest, like itertools.product), each point
-- merged over case_defaults; then, innermost, the `dtype` list of the config.
--
--   grid.expand(config [, opts]) -> cases    config as config.lua returns it (or a plain table
--       with case_grid, case_defaults, dtype, path). opts.operator (or config.name) names the
--       operator: each case then gets seed = grid.case_seed(operator, dtype, id), else none.
--       case = {params = {...}, dtype = "fp16", index = 1, id = "n=1048576" [, seed = 123]}
--   grid.axes(config) -> {{name=, values=}...}   the grid's axes, in expansion order
--   grid.case_id(grid_point) -> "cols=512, rows=512"
--   grid.problem_size(params) -> integer   TileBench's infer_problem_size: the product of the
--       integer shape parameters
--   grid.case_seed(operator, dtype, id) -> integer (the one case seed; grid.hash: FNV-1a, 31 bits)
--   grid.count_by_dtype(cases) -> {fp16 = 20, ...}
--   grid.count(config) -> n, axes    the number of cases, counted from the axes without expanding
--       them; raises when an axis is empty or n is past grid.max_cases()
--   grid.dtypes(axes) -> {"fp16", ...}   the dtypes in the order the cases first use them
--   grid.max_cases() -> integer   the most cases one operator's grid may have: 10000, or
--       $TILEBENCH_MAX_CASES. A grid is refused before it is expanded, so a hostile config costs
--       nothing (a 1000 x 1000 grid took 12 s and 720 MB to expand).
--
-- Key order: tb.yaml gives every mapping a metatable whose __order lists its keys as written;
-- util.ordered_keys reads it (a table built in Lua without one expands in sorted key order).
-- dtype: a `dtype` grid key is an axis where it stands; else the top-level `dtype` list is the
-- innermost axis; else case_defaults.dtype; else fp32. Names are normalised (float32 -> fp32,
-- fp8_e4m3fn -> fp8_e4m3). dtype is never in params; block_size is in params but, like dtype,
-- is not a shape parameter (not in the id, not in the problem size).
-- id: the grid's own keys (not the defaults), sorted by byte order, "k=v" joined by ", ", with
-- Python's number spelling: exactly the `params` column of TileBench's published CSVs.
local expr = require("tilebench.expr")
local util = require("tilebench.util")

local M = {}

local not_shape = {dtype = true, block_size = true}

local function where(config) return config.path or "config" end

local function scalar_ok(v)
  local t = type(v)
  return t == "number" or t == "boolean" or t == "string"
end

-- The numeric and boolean case defaults: what grid expressions may read.
local function defaults_env(config)
  local env = {}
  for k, v in pairs(config.case_defaults or {}) do
    if type(v) == "number" or type(v) == "boolean" then env[k] = v end
  end
  return env
end

local function axis_values(config, name, spec)
  local file = where(config)
  local key = "case_grid." .. tostring(name)
  local values
  if type(spec) == "table" and spec.expr ~= nil and not util.is_array(spec) then
    local v = expr.eval_in(file, key .. ".expr", spec.expr, defaults_env(config))
    if not expr.is_list(v) then
      error(string.format("%s: %s.expr must give a list, got %s", file, key, util.describe(v)), 0)
    end
    values = v
  elseif type(spec) == "table" and util.is_array(spec) then
    values = spec
  else
    error(string.format("%s: %s must be a list or {expr: ...}, got %s", file, key, util.describe(spec)), 0)
  end
  local out = {}
  for i, v in ipairs(values) do
    if not scalar_ok(v) then
      error(string.format("%s: %s[%d] must be a number, boolean or string, got %s", file, key, i,
        util.describe(v)), 0)
    end
    if name == "dtype" then
      local d = util.normalize_dtype(v)
      if not d then error(string.format('%s: %s: unknown dtype "%s"', file, key, tostring(v)), 0) end
      v = d
    end
    out[i] = v
  end
  return out
end

function M.axes(config)
  local file = where(config)
  local axes = {}
  local grid = config.case_grid or {}
  local has_dtype = false
  for _, name in ipairs(util.ordered_keys(grid)) do
    if type(name) ~= "string" then
      error(string.format("%s: case_grid keys must be names, got %s", file, util.describe(name)), 0)
    end
    axes[#axes + 1] = {name = name, values = axis_values(config, name, grid[name])}
    if name == "dtype" then has_dtype = true end
  end
  if not has_dtype then
    local list = config.dtype
    if type(list) == "string" then list = {list} end
    if list == nil or list == util.null then
      local d = (config.case_defaults or {}).dtype
      list = {d ~= nil and d ~= util.null and d or "fp32"}
    end
    local values = {}
    for i, d in ipairs(list) do
      values[i] = util.normalize_dtype(d)
      if not values[i] then error(string.format('%s: dtype: unknown dtype "%s"', file, tostring(d)), 0) end
    end
    axes[#axes + 1] = {name = "dtype", values = values, implicit = true}
  end
  return axes
end

function M.case_id(point)
  local keys = {}
  for k in pairs(point) do
    if not not_shape[k] then keys[#keys + 1] = k end
  end
  table.sort(keys, util.key_less)
  if #keys == 0 then return "(defaults)" end
  local parts = {}
  for i, k in ipairs(keys) do parts[i] = tostring(k) .. "=" .. util.pyrepr(point[k]) end
  return table.concat(parts, ", ")
end

function M.problem_size(params)
  local n, any = 1, false
  for k, v in pairs(params) do
    if math.type(v) == "integer" and not not_shape[k] then n = n * v; any = true end
  end
  return any and n or nil
end

-- FNV-1a (32 bit) over a string, kept to 31 bits: stable seeds across runs and machines.
function M.hash(s)
  local h = 2166136261
  for i = 1, #s do
    h = h ~ s:byte(i)
    h = (h * 16777619) & 0xffffffff
  end
  return h & 0x7fffffff
end

-- THE seed of a case: every input tensor's seed derives from it (context.lua), so it must never
-- change: the committed results' inputs were drawn from hash("operator|dtype|id").
function M.case_seed(operator, dtype, id)
  return M.hash(string.format("%s|%s|%s", operator, dtype, id))
end

local DEFAULT_MAX_CASES = 10000

function M.max_cases()
  local env = os.getenv("TILEBENCH_MAX_CASES")
  if env == nil or env == "" then return DEFAULT_MAX_CASES end
  local n = math.tointeger(tonumber(env))
  if n == nil or n < 1 then
    error(string.format("TILEBENCH_MAX_CASES must be a positive integer, got '%s'", env), 0)
  end
  return n
end

function M.count(config)
  local file = where(config)
  local axes = M.axes(config)
  local n, sizes = 1.0, {}
  for _, axis in ipairs(axes) do
    if #axis.values == 0 then
      local what = axis.implicit and "the dtype list is empty" or ("case_grid." .. axis.name .. " is empty")
      error(string.format("%s: case_grid expands to no cases (%s)", file, what), 0)
    end
    n = n * #axis.values -- a float: a product past 2^63 still compares right
    sizes[#sizes + 1] = string.format("%s %d", axis.name, #axis.values)
  end
  local limit = M.max_cases()
  if n > limit then
    error(string.format("%s: case_grid has %.0f cases (%s), more than the limit of %d " ..
      "(set TILEBENCH_MAX_CASES to allow more)", file, n, table.concat(sizes, " x "), limit), 0)
  end
  return math.tointeger(n), axes
end

function M.dtypes(axes)
  local seen, out = {}, {}
  for _, axis in ipairs(axes) do
    if axis.name == "dtype" then
      for _, d in ipairs(axis.values) do
        if not seen[d] then seen[d] = true; out[#out + 1] = d end
      end
    end
  end
  return out
end

function M.expand(config, opts)
  if type(opts) ~= "table" then opts = {} end -- (a path here is accepted and unused)
  local _, axes = M.count(config)
  local defaults = {}
  for k, v in pairs(config.case_defaults or {}) do
    if v ~= util.null then defaults[k] = v end
  end
  local default_dtype = util.normalize_dtype(defaults.dtype) or "fp32"
  defaults.dtype = nil

  local cases = {}
  local pos = {}
  for i = 1, #axes do pos[i] = 1 end
  while true do
    local point, params, dtype = {}, util.deepcopy(defaults), default_dtype
    for i, axis in ipairs(axes) do
      local v = axis.values[pos[i]]
      if axis.name == "dtype" then dtype = v
      else point[axis.name] = v; params[axis.name] = v end
    end
    local id = M.case_id(point)
    local seed_name = opts.operator or config.name
    cases[#cases + 1] = {params = params, dtype = dtype, index = #cases + 1, id = id,
                         seed = seed_name and M.case_seed(seed_name, dtype, id) or nil}
    -- odometer: the last axis turns fastest
    local i = #axes
    while i >= 1 do
      pos[i] = pos[i] + 1
      if pos[i] <= #axes[i].values then break end
      pos[i] = 1
      i = i - 1
    end
    if i < 1 then break end
  end
  return cases
end

function M.count_by_dtype(cases)
  local counts = {}
  for _, c in ipairs(cases) do counts[c.dtype] = (counts[c.dtype] or 0) + 1 end
  return counts
end

return M
