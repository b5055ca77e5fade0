-- metrics.lua: the numbers of one measured case — latency, GB/s, TFLOP/s, arithmetic intensity,
-- the roofline fraction rho, speedup and library efficiency — plus metrics a campaign registers
-- as Lua functions, and the performance gate.
--
--   metrics.compute(row, ctx) -> m
--     row: {ms = time of the implementation, flops =, bytes =, essential_bytes =, essential_flops =
--           (config.work),
--           dtype =, category =, baseline_ms = the baseline's time, lib_ms = the library's time}
--           (t_baseline and t_lib are accepted for baseline_ms and lib_ms; essential_bytes
--           defaults to bytes, essential_flops to flops)
--     ctx: {peaks = peaks.load(...), category =, dtype =} (row fields win over ctx's)
--     m:   {latency_ms, gbs, tflops, intensity, rho, bound = "memory"|"compute",
--           ceiling_tflops, ceiling (peaks key), ceiling_gbs, l2_ratio, l2_near,
--           rho_tilebench, speedup, elib, <registered names>...}
--     A value that cannot be computed (no time, no formula, no peaks) is nil, never a guess.
--   metrics.register(name, fn)     fn(row, ctx, m) -> number or nil; m holds the built-in ones
--   metrics.unregister(name); metrics.registered() -> names in registration order
--   metrics.gate(row, gates) -> status, reason   gates = {rho = X, elib = Y}; also sets
--                                  row.status and row.reason when the row becomes slow
--
-- Units: gbs = bytes / t / 1e9 with t in s (TileBench's bytes, as its bandwidth column);
-- tflops = flops / t / 1e12; intensity = essential flops / essential byte.
-- rho = W / (t * P) for the binding resource, computed by peaks.roofline (the report's roofline
-- uses the same function) on the essential work: a case whose intensity is under the ridge point
-- P_compute / P_bandwidth is memory-bound (W = essential bytes, P = the case's memory ceiling,
-- peaks.case_bandwidth: the best sustained DRAM rate, or for a working set near the L2 the rate
-- measured at that size), else compute-bound (W = flops, P = the ceiling peaks.ceiling picks
-- for its dtype and category: the matrix rate of the dtype for MatMul/Attn, the fp32 vector rate
-- otherwise; an operator's `ceiling` = "matrix" or "vector" (ctx.ceiling) overrides the category's:
-- the convolutions, Stencil/Conv, are tensor-core GEMMs). A case with no flops formula (or 0 flops) is memory-bound; one with flops but no
-- bytes is compute-bound (W = essential flops). ceiling_gbs: the memory ceiling used (memory-bound cases);
-- l2_ratio = essential bytes / L2 bytes, l2_near = 1 when at most peaks.L2_NEAR, else 0.
-- rho_tilebench: the same roofline on TileBench's bytes_expr against peaks.bandwidth (the copy
-- kernel), the rho tilebench reported before issue 19, comparable with TileBench's.
-- speedup = t_baseline / t_impl; elib = t_lib / t_impl.
local peaks_mod = require("tilebench.peaks")

local M = {}

local builtin = {latency_ms = true, gbs = true, tflops = true, intensity = true, rho = true,
                 bound = true, ceiling_tflops = true, ceiling = true, speedup = true, elib = true,
                 rho_tilebench = true, ceiling_gbs = true, l2_ratio = true, l2_near = true}
M.builtin = builtin

-- The built-in metrics that become CSV columns <name>_<impl> after the standard ones (issue 19):
-- TileBench's rho, the memory ceiling rho used, and where the working set sits against the L2.
-- They travel in row.extra (execute.case_metrics), the channel of a campaign's metrics, so a table
-- without them keeps its layout; the report shows them in a table of their own.
M.COLUMNS = {rho_tilebench = true, ceiling_gbs = true, l2_ratio = true, l2_near = true}

local registry, order = {}, {}

function M.register(name, fn)
  if type(name) ~= "string" or not name:match("^[%a_][%w_]*$") then
    error(string.format("metrics.register: a metric name is an identifier, got %s", tostring(name)), 2)
  end
  if builtin[name] then error(string.format('metrics.register: "%s" is a built-in metric', name), 2) end
  if type(fn) ~= "function" then
    error(string.format('metrics.register: metric "%s" needs a function, got %s', name, type(fn)), 2)
  end
  if not registry[name] then order[#order + 1] = name end
  registry[name] = fn
end

function M.unregister(name)
  if not registry[name] then return end
  registry[name] = nil
  for i, n in ipairs(order) do
    if n == name then table.remove(order, i) break end
  end
end

function M.registered()
  local out = {}
  for i, n in ipairs(order) do out[i] = n end
  return out
end

local function positive(v) return type(v) == "number" and v > 0 and v == v end

function M.compute(row, ctx)
  ctx = ctx or {}
  local m = {}
  local ms = row.ms
  local dtype = row.dtype or ctx.dtype
  local category = row.category or ctx.category
  -- an operator's declared ceiling class ("matrix", "vector") wins over its category's
  local class = ctx.ceiling or category
  if positive(ms) then
    local t = ms * 1e-3
    m.latency_ms = ms
    local flops, bytes = row.flops, row.bytes
    local essential = row.essential_bytes
    if essential == nil then essential = bytes end
    local eflops = row.essential_flops
    if eflops == nil then eflops = flops end
    if type(bytes) == "number" then m.gbs = bytes / t / 1e9 end
    if type(flops) == "number" then m.tflops = flops / t / 1e12 end
    if positive(eflops) and positive(essential) then m.intensity = eflops / essential end
    local p = row.peaks or ctx.peaks
    if p then
      local bw, where = peaks_mod.case_bandwidth(p, essential)
      if where.l2_ratio then m.l2_ratio, m.l2_near = where.l2_ratio, where.l2_near and 1 or 0 end
      local roof = peaks_mod.roofline(p, eflops, essential, t, dtype, class, bw)
      if roof then
        m.ceiling_tflops, m.ceiling, m.bound, m.rho = roof.ceiling_tflops, roof.ceiling, roof.bound, roof.rho
        if roof.bound == "memory" then m.ceiling_gbs = bw end
      end
      local tb = peaks_mod.roofline(p, flops, bytes, t, dtype, class, peaks_mod.bandwidth(p))
      if tb then m.rho_tilebench = tb.rho end
    end
    local baseline_ms = row.baseline_ms or row.t_baseline
    local lib_ms = row.lib_ms or row.t_lib
    if positive(baseline_ms) then m.speedup = baseline_ms / ms end
    if positive(lib_ms) then m.elib = lib_ms / ms end
  end
  for _, name in ipairs(order) do
    local ok, v = pcall(registry[name], row, ctx, m)
    if not ok then error(string.format('metric "%s": %s', name, tostring(v)), 0) end
    if v ~= nil and type(v) ~= "number" then
      error(string.format('metric "%s" must give a number or nil, got %s', name, type(v)), 0)
    end
    m[name] = v
  end
  return m
end

local function fmt(v) return string.format("%.3g", v) end

-- A case that verified ("ok") but is under a gate becomes "slow" with the reason; anything else
-- is returned unchanged. A gate on a metric the row lacks (no peaks, no library) is not applied.
function M.gate(row, gates)
  local status, reason = row.status, row.reason
  if status ~= "ok" or not gates then return status, reason end
  local why = {}
  for _, key in ipairs({"rho", "elib"}) do
    local g, v = gates[key], row[key]
    if type(g) == "number" and type(v) == "number" and v < g then
      why[#why + 1] = string.format("%s %s < gate %s", key, fmt(v), fmt(g))
    end
  end
  if #why == 0 then return status, reason end
  row.status, row.reason = "slow", table.concat(why, "; ")
  return row.status, row.reason
end

return M
