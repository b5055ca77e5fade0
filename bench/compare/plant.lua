-- plant.lua: a planted slowdown for bench/compare/aa.sh, test only. wrap(op, name) returns the
-- operator with every implementation's plan followed by one extra kernel that spins on the SM
-- clock for FRACTION of the time the same case took in a reference run, less the cost of an
-- empty kernel (CUPTI reads one at ~0.6 us on the H200), never below zero: "the same kernels plus
-- extra work". The real kernels, their sources and their code paths are untouched (aa.sh runs
-- it from an overlay folder on TILEBENCH_OPERATOR_PATH; the real operators/ never load it).
--   TB_PLANT_REF       the reference run directory (its raw/<operator>.json)
--   TB_PLANT_FRACTION  default 0.05
--   TB_PLANT_EMPTY_MS  default 0.0006, the empty kernel's time subtracted
-- A case shorter than EMPTY_MS / FRACTION (12 us at the defaults) is slowed by more than the
-- fraction (the empty kernel alone); aa.sh reports the planted slowdowns as measured.
local M = {}

local SPIN = "plant_spin.cu" -- written into the overlay folder by aa.sh

local function reference(name)
  local dir = os.getenv("TB_PLANT_REF")
  if not dir or dir == "" then error("plant: TB_PLANT_REF (the reference run directory) is not set", 0) end
  local path = dir .. "/raw/" .. name .. ".json"
  local f = io.open(path, "rb")
  if not f then error("plant: no reference " .. path, 0) end
  local doc = require("tilebench.util").json_decode(f:read("a"), path)
  f:close()
  local ms = {}
  for _, r in ipairs(doc.rows or {}) do
    if type(r.ms) == "number" then
      ms[table.concat({r.mode or "default", r.dtype, r.case_id or "", r.impl}, "|")] = r.ms
    end
  end
  return ms
end

function M.wrap(op, name)
  local ref
  local fraction = tonumber(os.getenv("TB_PLANT_FRACTION") or "") or 0.05
  local empty_ms = tonumber(os.getenv("TB_PLANT_EMPTY_MS") or "") or 0.0006
  for impl, spec in pairs(op.implementations) do
    local plan = spec.plan
    spec.plan = function(case, ins, outs, cfg, ctx)
      ref = ref or reference(name)
      local t = ref[table.concat({"default", case.dtype, case.id or "", impl}, "|")] or 0
      local khz = (ctx.props and ctx.props.clock_khz) or 1980000
      local cycles = math.max(0, math.floor((fraction * t - empty_ms) * khz))
      -- ctx with plan() adding the spin step after the implementation's own steps
      local proxy = setmetatable({}, {__index = ctx})
      proxy.plan = function(steps)
        local all = {table.unpack(steps)}
        all[#all + 1] = {fn = ctx:kernel(SPIN, "plant_spin"), grid = {1}, block = {32}, args = {ctx.i64(cycles)}}
        return ctx.plan(all)
      end
      return plan(case, ins, outs, cfg, proxy)
    end
  end
  return op
end

return M
