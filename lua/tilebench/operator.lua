-- operator.lua: finds and loads operator folders (config.yaml + operator.lua), validating both,
-- and expands their case grids. Search path: $TILEBENCH_OPERATOR_PATH (colon-separated), then
-- <TILEBENCH_HOME>/operators. A folder whose name starts with "_" is never an operator:
-- <TILEBENCH_HOME>/operators/_shared holds what operator families share (oplib.lua, gemm.lua,
-- tb_common.cuh, tb_rows.cuh, the gemm kernels), found by name: Lua modules through
-- package.path (host/lua_host.c), kernel sources and headers through context.lua.
local lfs = require("lfs")

local M = {}
local loaded = {}

M.SHARED = "_shared"

-- The folder of the operators' shared modules, kernels and headers.
function M.shared_dir() return TILEBENCH_HOME .. "/operators/" .. M.SHARED end

-- Operator names are folder names that do not start with "_" or ".".
local function is_operator_name(name) return not name:match("^[_.]") end

function M.search_path()
  local dirs = {}
  local env = os.getenv("TILEBENCH_OPERATOR_PATH")
  if env and env ~= "" then
    for d in env:gmatch("[^:]+") do dirs[#dirs + 1] = d end
  end
  dirs[#dirs + 1] = TILEBENCH_HOME .. "/operators"
  return dirs
end

local function is_file(p) return lfs.attributes(p, "mode") == "file" end

-- All operator names on the search path, sorted, first folder winning.
function M.list()
  local seen, names = {}, {}
  for _, dir in ipairs(M.search_path()) do
    if lfs.attributes(dir, "mode") == "directory" then
      for entry in lfs.dir(dir) do
        if is_operator_name(entry) and not seen[entry] and is_file(dir .. "/" .. entry .. "/config.yaml") then
          seen[entry] = dir .. "/" .. entry
          names[#names + 1] = entry
        end
      end
    end
  end
  table.sort(names)
  return names, seen
end

function M.find(name)
  if type(name) ~= "string" or not name:match("^[%w_.+-]+$") or not is_operator_name(name) then
    error(string.format("invalid operator name '%s'", tostring(name)), 0)
  end
  for _, dir in ipairs(M.search_path()) do
    local d = dir .. "/" .. name
    if is_file(d .. "/config.yaml") then return d end
  end
  local names = M.list()
  error(string.format("unknown operator '%s' (known: %s)", name,
    #names > 0 and table.concat(names, ", ") or "none"), 0)
end

local REQUIRED = { category = "string", inputs = "function", outputs = "function",
                   reference = "function", implementations = "table" }
local IMPL_FIELDS = { plan = "function", default = "table", space = "table", valid = "function", launch_key = "function",
                      supports = "function", source = "string", description = "string",
                      sources = "table" }

local function check_module(name, path, mod)
  if type(mod) ~= "table" then
    error(string.format("%s: operator.lua must return a table, got %s", path, type(mod)), 0)
  end
  for k, ty in pairs(REQUIRED) do
    if type(mod[k]) ~= ty then
      error(string.format("%s: field '%s' must be a %s, got %s", path, k, ty, type(mod[k])), 0)
    end
  end
  local n = 0
  for impl, spec in pairs(mod.implementations) do
    n = n + 1
    if type(impl) ~= "string" or not impl:match("^[%w_]+$") then
      error(string.format("%s: implementation name '%s' must be [A-Za-z0-9_]+", path, tostring(impl)), 0)
    end
    if type(spec) ~= "table" or type(spec.plan) ~= "function" then
      error(string.format("%s: implementation '%s' needs a plan function", path, impl), 0)
    end
    for k, v in pairs(spec) do
      if IMPL_FIELDS[k] == nil then
        error(string.format("%s: implementation '%s': unknown field '%s'", path, impl, tostring(k)), 0)
      elseif type(v) ~= IMPL_FIELDS[k] then
        error(string.format("%s: implementation '%s': field '%s' must be a %s", path, impl, k, IMPL_FIELDS[k]), 0)
      end
    end
  end
  if n == 0 then error(string.format("%s: no implementations", path), 0) end
  if mod.baseline ~= nil and mod.implementations[mod.baseline] == nil then
    error(string.format("%s: baseline '%s' is not an implementation", path, tostring(mod.baseline)), 0)
  end
  -- The compute ceiling its rho is measured against, where its category's is not the right one
  -- (docs/OPERATOR_FORMAT.md): "matrix" (the dtype's tensor-core rate) or "vector" (fp32 FMA).
  if mod.ceiling ~= nil and mod.ceiling ~= "matrix" and mod.ceiling ~= "vector" then
    error(string.format("%s: field 'ceiling' must be \"matrix\" or \"vector\", got %s", path,
      require("tilebench.util").describe(mod.ceiling)), 0)
  end
end

-- Sorted implementation names, baseline first.
local function impl_names(mod)
  local names = {}
  for k in pairs(mod.implementations) do names[#names + 1] = k end
  table.sort(names, function(a, b)
    if a == mod.baseline then return b ~= mod.baseline end
    if b == mod.baseline then return false end
    return a < b
  end)
  return names
end

-- A message handler for code loaded from an operator folder: the message, then only the
-- frames of files in that folder ("file:line: in function"), innermost first. What the
-- operator's author can act on; tilebench's own frames and C frames are left out.
function M.operator_traceback(dir)
  local prefix = "@" .. dir .. "/"
  return function(msg)
    local frames = {}
    for level = 2, 200 do
      local info = debug.getinfo(level, "Sln")
      if not info then break end
      if info.source:sub(1, #prefix) == prefix and info.currentline and info.currentline > 0 then
        local what = info.name and string.format("in function '%s'", info.name)
          or (info.what == "main" and "in main chunk" or "in a function")
        frames[#frames + 1] = string.format("\t%s:%d: %s", info.source:sub(2), info.currentline, what)
      end
    end
    msg = type(msg) == "string" and msg or tostring(msg)
    if #frames == 0 then return msg end
    return msg .. "\n" .. table.concat(frames, "\n")
  end
end

-- Loads (once per process) the operator: {name, dir, config, module, impls, cases}. A folder
-- that cannot be loaded (config.yaml does not parse or validate, operator.lua raises) raises a
-- message naming its file and line, with the operator's own frames only.
function M.load(name)
  if loaded[name] then return loaded[name] end
  local dir = M.find(name)
  local config = require("tilebench.config").load(dir .. "/config.yaml")
  local path = dir .. "/operator.lua"
  local chunk, err = loadfile(path, "t")
  if not chunk then error(string.format("operator '%s': %s", name, err), 0) end
  local ok, mod = xpcall(chunk, M.operator_traceback(dir))
  if not ok then error(string.format("operator '%s': operator.lua failed: %s", name, mod), 0) end
  check_module(name, path, mod)
  -- PyTorch eager, where the operator declares it (<name>_torch.py): an implementation `run`
  -- selects by name (--impl torch), not one of the default set (op.impls), so runs without it
  -- keep their rows; op.known_impls lists it too (tilebench/torch.lua).
  local torch_impl = require("tilebench.torch")
  local tspec = mod.implementations[torch_impl.NAME] == nil and torch_impl.implementation(name, dir)
  if tspec then mod.implementations[torch_impl.NAME] = tspec end
  -- Triton kernels (<name>_triton.py, an implementation named `triton` in operator.lua): like
  -- torch, selected by name (--impl triton), so runs without it keep their rows and columns;
  -- tilebench/triton.lua makes it `unsupported` with the reason where triton does not import.
  local triton_impl = require("tilebench.triton")
  local trspec = mod.implementations[triton_impl.NAME]
  if trspec then triton_impl.prepare(trspec, name, dir) end
  -- The grid is counted (and refused past its limit) now, expanded only when op.cases is read:
  -- list and show read the count and the dtypes of every operator, not its cases.
  local grid = require("tilebench.grid")
  local count, axes = grid.count(config)
  local known = impl_names(mod)
  local impls = {}
  for _, i in ipairs(known) do
    if not (tspec and i == torch_impl.NAME) and not (trspec and i == triton_impl.NAME) then impls[#impls + 1] = i end
  end
  known = { table.unpack(impls) }
  if tspec then table.insert(known, 1, torch_impl.NAME) end -- first: the speedup baseline when it runs
  if trspec then known[#known + 1] = triton_impl.NAME end
  local op = { name = name, dir = dir, config = config, module = mod, impls = impls, known_impls = known,
               case_count = count, dtypes = grid.dtypes(axes), category = mod.category,
               baseline = mod.baseline, ceiling = mod.ceiling }
  setmetatable(op, {__index = function(t, key)
    if key ~= "cases" then return nil end
    local cases = grid.expand(config, dir .. "/config.yaml")
    rawset(t, "cases", cases)
    return cases
  end})
  loaded[name] = op
  return op
end

-- The cases of one dtype, in grid order (index is 1-based within the dtype).
function M.cases_of(op, dtype)
  local out = {}
  for _, c in ipairs(op.cases) do
    if c.dtype == dtype then out[#out + 1] = c end
  end
  return out
end

function M.dtypes(op)
  if rawget(op, "dtypes") then return op.dtypes end
  local seen, out = {}, {}
  for _, c in ipairs(op.cases) do
    if not seen[c.dtype] then seen[c.dtype] = true; out[#out + 1] = c.dtype end
  end
  return out
end

-- The case's seed (grid.case_seed: from the operator name, the dtype and the case id).
function M.case_seed(opname, case)
  return require("tilebench.grid").case_seed(opname, case.dtype, case.id)
end

return M
