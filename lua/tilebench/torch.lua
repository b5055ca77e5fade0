-- torch.lua: PyTorch eager as an implementation of every operator that has
-- operators/<name>/<name>_torch.py (its `forward(**inputs, case=params)` returns the outputs):
-- the speedup baseline (TileBench's speedup_<impl> = t_torch / t_impl). The call runs in the
-- worker's embedded CPython (tb.python) on tilebench's stream, with tilebench's tensors handed
-- over without a copy; the timer replays it as a library-call step of a launch plan.
--
--   torch.NAME                      "torch"
--   torch.file(name, dir)           -> path of the operator's torch file, or nil
--   torch.available([device])       -> true, info | false, reason, info   (once per process)
--       info = {python =, torch =, torch_cuda =} as far as found
--   torch.implementation(name, dir) -> an implementation table (supports, plan), or nil
--   torch.versions_for(impls)       -> {python, torch, torch_cuda} | {error} | nil (no torch in impls)
local json = require("tilebench.json")
local util = require("tilebench.util")

local M = { NAME = "torch" }

function M.file(name, dir)
  local path = dir .. "/" .. name .. "_torch.py"
  return util.file_exists(path) and path or nil
end

local probed -- {ok, reason, info}: Python and torch are asked once per process

function M.available(device)
  if not probed then
    local py = require("tb.python")
    local ok, why = py.available()
    if not ok then
      probed = { false, "no python: " .. tostring(why), {} }
    else
      local okc, out = pcall(py.call, "torch_probe", "", device or 0)
      local info = okc and json.decode(out) or {}
      info.python = info.python or py.info().version
      if not okc then probed = { false, tostring(out), info }
      elseif info.error then probed = { false, info.error, info }
      else probed = { true, nil, info } end
      info.error = nil
    end
  end
  if probed[1] then return true, probed[3] end
  return false, probed[2], probed[3]
end

-- The versions provenance.json records for a run whose implementations include torch (nil
-- otherwise): {python, torch, torch_cuda} or {error = why}. Asked without touching CUDA (the
-- parent of the workers never initialises it): the interpreter, `import torch`, its CUDA build.
function M.versions_for(impls)
  local wanted = false
  for _, i in ipairs(impls or {}) do if i == M.NAME then wanted = true end end
  if not wanted then return nil end
  local py = require("tb.python")
  local ok, why = py.available()
  if not ok then return { error = "no python: " .. tostring(why) } end
  local okc, out = pcall(py.call, "torch_versions", "", 0)
  if not okc then return { python = py.info().version, error = tostring(out) } end
  return json.decode(out)
end

local function describe_all(tensors)
  local py = require("tb.python")
  local names, out = {}, {}
  for name in pairs(tensors) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local d = py.describe(tensors[name])
    d.name = name
    out[#out + 1] = d
  end
  return out
end

function M.implementation(name, dir)
  local path = M.file(name, dir)
  if not path then return nil end
  local label = name .. "_torch.py"
  return {
    description = "PyTorch eager (" .. label .. "), through the embedded interpreter",
    supports = function(_, ctx)
      local ok, why = M.available(ctx and ctx.props and ctx.props.index or 0)
      if not ok then return false, why end
      return true
    end,
    -- Returns the plan (one library-call step: the torch call, nothing else) and finish(): checks
    -- what the verified run returned (count, dtype, shape) and copies it into outs on tilebench's
    -- stream, outside every timed interval. finish() -> true | false, reason (status wrong).
    plan = function(case, ins, outs, _, ctx)
      local py = require("tb.python")
      local params = {}
      for k, v in pairs(case.params) do params[k] = v end
      params.dtype = case.dtype
      local desc = { file = path, ["function"] = "forward", inputs = describe_all(ins),
                     outputs = describe_all(outs), params = params }
      -- encode_sorted: device pointers have 15 digits, json.encode keeps 14 (cjson's precision)
      local r = json.decode(py.call("make_step", json.encode_sorted(desc), ctx.props and ctx.props.index or 0))
      if r.error then error(label .. ": " .. r.error, 0) end
      local step = py.step(r.id, label)
      -- Closed with the case's tensors (before them: the list is closed last first), so the
      -- views torch holds over tilebench's memory go when the memory does.
      ctx.tensors[#ctx.tensors + 1] = step
      local plan = ctx.plan{ { call = step } }
      local function finish()
        local f = json.decode(step:finish())
        if f.error then error(label .. ": " .. f.error, 0) end
        if f.wrong then return false, label .. ": " .. f.wrong end
        return true
      end
      return plan, finish
    end,
  }
end

return M
