-- config.lua: an operator's config.yaml (TileBench's schema), checked against a schema that is
-- data, plus what the framework derives from it: tolerances and the essential work of a case.
--
--   config.load(path) -> config         reads and validates; errors name the file and the key:
--       'operators/x/config.yaml: unknown key "case_gird" in top level (did you mean "case_grid"?)'
--       'operators/x/config.yaml: benchmark.warmup must be an integer, got string "ten"'
--   config.validate(table, name) -> config      the same for a table already loaded
--   config.tolerance(config, out_dtype [, family]) -> atol, rtol
--   config.work(config, case) -> flops, bytes, n, essential_bytes, essential_flops
--       from metrics.flops_expr / bytes_expr / essential_bytes_expr / essential_flops_expr (each
--       essential one is TileBench's where absent)
--   config.essential(config) -> {expr =, flops_expr =, note =, differs = bool}   rho's formulas
--   config.schema                        the schema below (tilebench show prints from it)
--
-- The returned config keeps the document's sections (benchmark, case_defaults, case_grid,
-- metrics, verify; YAML nulls read as absent) with `dtype` normalised to a list of tilebench
-- names, and adds path (for messages). Nothing is filled in: defaults belong to campaigns.
--
-- metrics.n_expr (tilebench's addition): the expression for `n` when the case has no parameter
-- n. Without it n is TileBench's inferred problem size, the product of the integer shape
-- parameters (swiglu M*N, layernorm batch*M*K); destindex, whose n is
-- tokens*(nope_heads*nope_dim + rope_heads*rope_dim), must state it.
--
-- metrics.essential_bytes_expr, essential_flops_expr and essential_note (tilebench's addition,
-- issue 19): the work a case must do at the least -- every input read once, every output written
-- once; no flops for what the operator discards (the masked half of causal attention) -- where
-- TileBench's bytes_expr / flops_expr count otherwise (layernorm's counts x twice, argmax's leaves
-- out the output). rho is computed on it; TileBench's formulas stay for the second column,
-- rho_tilebench. The note says why they differ (`tilebench show` prints it) and is required with
-- either formula.
local expr = require("tilebench.expr")
local grid = require("tilebench.grid")
local util = require("tilebench.util")
local yaml = require("tb.yaml")

local M = {}

-- The GPU families verify.arch_overrides may name (TileBench's, plus ada).
M.families = {"hopper", "blackwell", "ampere", "ada", "cdna3"}

local tol_fields = {
  atol = {type = "number", min = 0, desc = "absolute tolerance"},
  rtol = {type = "number", min = 0, desc = "relative tolerance"},
}
local arch_fields = {}
for _, f in ipairs(M.families) do arch_fields[f] = {type = "mapping", fields = tol_fields} end

M.schema = {type = "mapping", fields = {
  name = {type = "string", desc = "operator name"},
  description = {type = "string", desc = "what the operator computes"},
  benchmark = {type = "mapping", desc = "TileBench's timing protocol of this operator", fields = {
    warmup = {type = "integer", min = 0, desc = "warm-up runs"},
    ["repeat"] = {type = "integer", min = 1, desc = "timed runs"},
    use_cuda_graph = {type = "boolean", desc = "replay through a CUDA graph"},
    flush_l2 = {type = "boolean", desc = "evict the L2 before every run"},
    autotune = {type = "boolean", desc = "autotune by default"},
  }},
  case_defaults = {type = "defaults", desc = "parameters every case starts from"},
  case_grid = {type = "grid", required = true, desc = "lists or {expr: ...}; cartesian product in key order"},
  dtype = {type = "dtypes", desc = "dtypes, the innermost axis"},
  metrics = {type = "mapping", desc = "work formulas", fields = {
    flops_expr = {type = "expr", desc = "essential floating-point operations"},
    bytes_expr = {type = "expr", desc = "bytes moved as TileBench counts them (rho_tilebench)"},
    essential_bytes_expr = {type = "expr",
      desc = "bytes at the least: each input read once, each output written once (rho; tilebench)"},
    essential_flops_expr = {type = "expr",
      desc = "floating-point operations the result needs at the least (rho; tilebench)"},
    essential_note = {type = "string", desc = "why the essential formulas differ from TileBench's (tilebench)"},
    n_expr = {type = "expr", desc = "n when the case has no parameter n (tilebench)"},
    plots = {type = "any", desc = "TileBench's plot settings (kept, unused)"},
    peak_bw_GBs = {type = "number", min = 0, desc = "legacy peak bandwidth (unused: peaks/)"},
    peak_tflops = {type = "numbers", desc = "legacy peak TFLOP/s by dtype (unused: peaks/)"},
  }},
  verify = {type = "mapping", desc = "tolerances overriding the defaults by output dtype", fields = {
    atol = tol_fields.atol,
    rtol = tol_fields.rtol,
    arch_overrides = {type = "mapping", fields = arch_fields, desc = "per GPU family"},
  }},
}}

local function fail(file, fmt, ...)
  error(file .. ": " .. string.format(fmt, ...), 0)
end

local function keys_of(fields)
  local names = {}
  for k in pairs(fields) do names[#names + 1] = k end
  table.sort(names)
  return names
end

local function is_mapping_value(v)
  return type(v) == "table" and not (next(v) ~= nil and util.is_array(v))
end

local check -- forward

local checkers = {}

function checkers.integer(file, key, v, spec)
  if math.type(v) ~= "integer" then fail(file, "%s must be an integer, got %s", key, util.describe(v)) end
  if spec.min and v < spec.min then fail(file, "%s must be at least %d, got %d", key, spec.min, v) end
end

function checkers.number(file, key, v, spec)
  if type(v) ~= "number" then fail(file, "%s must be a number, got %s", key, util.describe(v)) end
  if v ~= v then fail(file, "%s must be a number, got nan", key) end
  if spec.min and v < spec.min then
    fail(file, "%s must be at least %s, got %s", key, util.pyrepr(spec.min), util.pyrepr(v))
  end
end

function checkers.boolean(file, key, v)
  if type(v) ~= "boolean" then fail(file, "%s must be true or false, got %s", key, util.describe(v)) end
end

function checkers.string(file, key, v)
  if type(v) ~= "string" then fail(file, "%s must be a string, got %s", key, util.describe(v)) end
end

function checkers.any() end

function checkers.expr(file, key, v)
  if type(v) == "number" then return end -- flops_expr: 0 is a plain number in YAML
  if type(v) ~= "string" then fail(file, "%s must be an expression (a string), got %s", key, util.describe(v)) end
  expr.parse_in(file, key, v)
end

function checkers.numbers(file, key, v)
  if not is_mapping_value(v) then fail(file, "%s must be a mapping, got %s", key, util.describe(v)) end
  for k, x in pairs(v) do
    if type(x) ~= "number" then fail(file, "%s.%s must be a number, got %s", key, tostring(k), util.describe(x)) end
  end
end

function checkers.dtypes(file, key, v)
  if type(v) == "string" then v = {v} end
  if type(v) ~= "table" or not util.is_array(v) then
    fail(file, "%s must be a list of dtypes, got %s", key, util.describe(v))
  end
  for i, d in ipairs(v) do
    if type(d) ~= "string" then fail(file, "%s[%d] must be a dtype name, got %s", key, i, util.describe(d)) end
    if not util.normalize_dtype(d) then fail(file, '%s[%d]: unknown dtype "%s"', key, i, d) end
  end
end

function checkers.defaults(file, key, v)
  if not is_mapping_value(v) then fail(file, "%s must be a mapping, got %s", key, util.describe(v)) end
  for k, x in pairs(v) do
    if type(k) ~= "string" then fail(file, "%s: parameter names must be strings, got %s", key, util.describe(k)) end
    if x ~= util.null and type(x) ~= "number" and type(x) ~= "boolean" and type(x) ~= "string" then
      fail(file, "%s.%s must be a number, boolean or string, got %s", key, k, util.describe(x))
    end
  end
  if v.dtype ~= nil and v.dtype ~= util.null then
    if type(v.dtype) ~= "string" or not util.normalize_dtype(v.dtype) then
      fail(file, '%s.dtype: unknown dtype "%s"', key, tostring(v.dtype))
    end
  end
end

function checkers.grid(file, key, v)
  if not is_mapping_value(v) then fail(file, "%s must be a mapping, got %s", key, util.describe(v)) end
  for _, k in ipairs(util.ordered_keys(v)) do
    local x = v[k]
    if type(k) ~= "string" then fail(file, "%s: parameter names must be strings, got %s", key, util.describe(k)) end
    local sub = key .. "." .. k
    if type(x) == "table" and util.is_array(x) and next(x) ~= nil then
      for i, item in ipairs(x) do
        if type(item) ~= "number" and type(item) ~= "boolean" and type(item) ~= "string" then
          fail(file, "%s[%d] must be a number, boolean or string, got %s", sub, i, util.describe(item))
        end
      end
    elseif is_mapping_value(x) and next(x) ~= nil then
      for ek in pairs(x) do
        if ek ~= "expr" then
          local hint = util.did_you_mean(tostring(ek), {"expr"})
          fail(file, 'unknown key "%s" in %s%s', tostring(ek), sub, hint and ' (did you mean "expr"?)' or
            " (a grid entry is a list or {expr: ...})")
        end
      end
      if type(x.expr) ~= "string" then fail(file, "%s.expr must be a string, got %s", sub, util.describe(x.expr)) end
      expr.parse_in(file, sub .. ".expr", x.expr)
    elseif type(x) == "table" then
      fail(file, "case_grid expands to no cases (%s is empty)", sub)
    else
      fail(file, "%s must be a list or {expr: ...}, got %s", sub, util.describe(x))
    end
  end
end

function checkers.mapping(file, key, v, spec)
  if not is_mapping_value(v) then
    fail(file, "%s must be a mapping, got %s", key == "" and "the top level" or key, util.describe(v))
  end
  local names = keys_of(spec.fields)
  for _, k in ipairs(util.ordered_keys(v)) do
    local field = type(k) == "string" and spec.fields[k]
    if not field then
      local hint = type(k) == "string" and util.did_you_mean(k, names)
      fail(file, 'unknown key "%s" in %s%s', tostring(k), key == "" and "top level" or key,
        hint and string.format(' (did you mean "%s"?)', hint) or
        string.format(" (known: %s)", table.concat(names, ", ")))
    end
  end
  for _, k in ipairs(names) do
    local field, x = spec.fields[k], v[k]
    local sub = key == "" and k or (key .. "." .. k)
    if (x == nil or x == util.null) and field.required then fail(file, 'missing key "%s"', sub) end
    if x ~= nil and x ~= util.null then check(file, sub, x, field) end
  end
end

check = function(file, key, v, spec)
  local f = checkers[spec.type]
  if not f then error("config schema: unknown type " .. tostring(spec.type)) end
  f(file, key, v, spec)
end

-- Drops YAML nulls (a section written with no value reads as absent) from a mapping.
local function without_nulls(t)
  if type(t) ~= "table" then return t end
  for k, v in pairs(t) do
    if v == util.null then t[k] = nil end
  end
  return t
end

-- The names an expression may read: case parameters (defaults and grid keys), n, dtype_size.
local function check_names(file, key, src, known)
  if type(src) ~= "string" then return end
  for name in pairs(expr.free_names(src)) do
    if not known[name] then
      local list = {}
      for k in pairs(known) do list[#list + 1] = k end
      table.sort(list)
      local hint = util.did_you_mean(name, list)
      fail(file, '%s: expression "%s": name "%s" is not a case parameter%s', key, src, name,
        hint and string.format(' (did you mean "%s"?)', hint) or
        string.format(" (known: %s)", table.concat(list, ", ")))
    end
  end
end

function M.validate(t, name)
  local file = name or "config"
  if t == nil then fail(file, "the file is empty") end
  check(file, "", t, M.schema)
  local cfg = util.deepcopy(t)
  for _, k in ipairs({"benchmark", "case_defaults", "case_grid", "metrics", "verify"}) do
    if cfg[k] == util.null then cfg[k] = nil end
    without_nulls(cfg[k])
  end
  if cfg.verify then without_nulls(cfg.verify.arch_overrides) end
  if cfg.dtype == util.null then cfg.dtype = nil end
  if type(cfg.dtype) == "string" then cfg.dtype = {cfg.dtype} end
  if cfg.dtype then
    if cfg.case_grid.dtype ~= nil then
      fail(file, "dtype is given both as a case_grid key and at the top level")
    end
    for i, d in ipairs(cfg.dtype) do cfg.dtype[i] = util.normalize_dtype(d) end
  end
  if cfg.case_defaults and cfg.case_defaults.dtype then
    cfg.case_defaults.dtype = util.normalize_dtype(cfg.case_defaults.dtype)
  end
  cfg.path = file
  -- Names the expressions read must exist.
  local known = {n = true, dtype_size = true}
  for k in pairs(cfg.case_defaults or {}) do known[k] = true end
  for k in pairs(cfg.case_grid) do known[k] = true end
  local m = cfg.metrics or {}
  for _, k in ipairs({"flops_expr", "bytes_expr", "essential_bytes_expr", "essential_flops_expr", "n_expr"}) do
    check_names(file, "metrics." .. k, m[k], known)
  end
  if m.essential_bytes_expr ~= nil and m.essential_note == nil then
    fail(file, "metrics.essential_bytes_expr needs metrics.essential_note: why it differs from bytes_expr")
  end
  if m.essential_flops_expr ~= nil and m.essential_note == nil then
    fail(file, "metrics.essential_flops_expr needs metrics.essential_note: why it differs from flops_expr")
  end
  if m.essential_note ~= nil and m.essential_bytes_expr == nil and m.essential_flops_expr == nil then
    fail(file, "metrics.essential_note explains an essential_bytes_expr, and there is none")
  end
  if m.essential_flops_expr ~= nil and m.flops_expr == nil then
    fail(file, "metrics.essential_flops_expr is given without flops_expr (TileBench's formula, the second column)")
  end
  if m.essential_bytes_expr ~= nil and m.bytes_expr == nil then
    fail(file, "metrics.essential_bytes_expr is given without bytes_expr (TileBench's formula, the second column)")
  end
  local defaults_known = {}
  for k in pairs(cfg.case_defaults or {}) do defaults_known[k] = true end
  for _, k in ipairs(util.ordered_keys(cfg.case_grid)) do
    local x = cfg.case_grid[k]
    if type(x) == "table" and x.expr then check_names(file, "case_grid." .. k .. ".expr", x.expr, defaults_known) end
  end
  if next(cfg.case_grid) == nil then
    fail(file, "case_grid is empty: expected at least one parameter with a list of values or {expr: ...}")
  end
  -- Evaluates the axes and counts the cases without expanding them, so that a grid with no
  -- cases, a failing grid expression or a grid past grid.max_cases() is a load error.
  grid.count(cfg)
  return cfg
end

function M.load(path)
  local ok, t = pcall(yaml.load_file, path)
  if not ok then error(t, 0) end
  return M.validate(t, path)
end

-- ---- tolerances ---------------------------------------------------------------------------

-- TileBench's defaults by output dtype (tilebench/core/verifier.py).
M.default_tolerances = {
  fp32 = {1e-5, 1.3e-6}, fp16 = {1e-3, 1e-3}, bf16 = {1e-2, 1.6e-2},
  fp8_e4m3 = {1.0, 0.1}, fp8_e5m2 = {1.0, 0.1},
  int8 = {0, 0}, uint8 = {0, 0}, int16 = {0, 0}, int32 = {0, 0}, int64 = {0, 0},
}
M.fallback_tolerance = {1e-2, 1e-2}

-- atol, rtol for an output of out_dtype: the default by dtype, then verify.atol/rtol, then
-- verify.arch_overrides[family] (each number overridden only where given).
function M.tolerance(cfg, out_dtype, family)
  local d = M.default_tolerances[util.normalize_dtype(out_dtype) or ""] or M.fallback_tolerance
  local atol, rtol = d[1], d[2]
  local v = cfg and cfg.verify
  if v then
    if v.atol ~= nil then atol = v.atol end
    if v.rtol ~= nil then rtol = v.rtol end
    local o = family and v.arch_overrides and v.arch_overrides[family]
    if o then
      if o.atol ~= nil then atol = o.atol end
      if o.rtol ~= nil then rtol = o.rtol end
    end
  end
  return atol, rtol
end

-- ---- work -------------------------------------------------------------------------------

-- The variables flops_expr and bytes_expr see (OPERATORS.md, "Metric evaluation").
function M.work_env(cfg, case)
  local file = cfg.path or "config"
  local env = {}
  for k, v in pairs(case.params or {}) do
    if type(v) == "number" or type(v) == "boolean" then env[k] = v end
  end
  env.dtype_size = util.dtype_size(case.dtype)
  local m = cfg.metrics or {}
  if type(env.n) ~= "number" then
    if m.n_expr ~= nil then
      local n = type(m.n_expr) == "number" and m.n_expr or expr.eval_in(file, "metrics.n_expr", m.n_expr, env)
      if type(n) ~= "number" then fail(file, "metrics.n_expr must give a number, got %s", util.describe(n)) end
      env.n = n
    else
      env.n = grid.problem_size(case.params or {})
    end
  end
  return env
end

local function eval_work(cfg, key, src, env)
  if src == nil then return nil end
  if type(src) == "number" then return src end
  local v = expr.eval_in(cfg.path or "config", "metrics." .. key, src, env)
  if v == true or v == false then v = v and 1 or 0 end
  if type(v) ~= "number" then
    fail(cfg.path or "config", "metrics.%s must give a number, got %s", key, util.describe(v))
  end
  return v
end

-- flops, bytes (nil where the config gives no formula), n and the essential bytes of a case
-- (essential_bytes_expr where given, else bytes).
function M.work(cfg, case)
  local env = M.work_env(cfg, case)
  local m = cfg.metrics or {}
  local bytes = eval_work(cfg, "bytes_expr", m.bytes_expr, env)
  local essential = bytes
  if m.essential_bytes_expr ~= nil then
    essential = eval_work(cfg, "essential_bytes_expr", m.essential_bytes_expr, env)
  end
  local flops = eval_work(cfg, "flops_expr", m.flops_expr, env)
  local essential_flops = flops
  if m.essential_flops_expr ~= nil then
    essential_flops = eval_work(cfg, "essential_flops_expr", m.essential_flops_expr, env)
  end
  return flops, bytes, env.n, essential, essential_flops
end

-- The formulas rho is computed on: {expr (bytes), flops_expr, note, differs} (differs: the
-- config states an essential formula of its own; note: why).
function M.essential(cfg)
  local m = cfg and cfg.metrics or {}
  local differs = m.essential_bytes_expr ~= nil or m.essential_flops_expr ~= nil
  return {expr = m.essential_bytes_expr or m.bytes_expr, flops_expr = m.essential_flops_expr or m.flops_expr,
          note = m.essential_note, differs = differs}
end

return M
