-- cmd/show.lua: `tilebench show NAME`: an operator's grid (cases per dtype), implementations,
-- work formulas and tolerances.
local options = require("tilebench.options")
local M = {}
local spec = {}
M.summary = "show an operator: grid, implementations, formulas, tolerances"
M.usage = "usage: tilebench show NAME\n"

local function fmt_params(p)
  local ks = {}
  for k in pairs(p) do ks[#ks + 1] = k end
  table.sort(ks)
  local out = {}
  for _, k in ipairs(ks) do out[#out + 1] = k .. "=" .. tostring(p[k]) end
  return table.concat(out, " ")
end

function M.run(args)
  local _, pos = options.parse(args, spec, "show")
  if not pos[1] then options.usage_error("show: missing operator NAME") end
  local opmod = require("tilebench.operator")
  local config = require("tilebench.config")
  local op = opmod.load(pos[1])
  local c = op.config
  io.write(string.format("%s (%s)  %s\n", op.name, op.category, op.dir))
  io.write(string.format("  flops: %s\n  bytes: %s\n", tostring(c.metrics and c.metrics.flops_expr),
    tostring(c.metrics and c.metrics.bytes_expr)))
  -- rho's byte formula: the essential work where TileBench's formula miscounts it (config.lua).
  local e = config.essential(c)
  local m = c.metrics or {}
  if e.differs then
    if m.essential_flops_expr then
      io.write(string.format("  essential flops: %s  (rho; TileBench's flops above give rho_tilebench)\n", e.flops_expr))
    end
    if m.essential_bytes_expr then
      io.write(string.format("  essential bytes: %s  (rho; TileBench's bytes above give rho_tilebench)\n", tostring(e.expr)))
    end
    io.write(string.format("    differs: %s\n", tostring(e.note)))
  elseif e.expr ~= nil then
    io.write("  essential bytes: the same (rho and rho_tilebench agree)\n")
  end
  io.write("  cases:\n")
  for _, dt in ipairs(opmod.dtypes(op)) do
    local cs = opmod.cases_of(op, dt)
    local atol, rtol = config.tolerance(c, dt, nil)
    io.write(string.format("    %-9s %3d cases  first: %s  last: %s  (default-output tolerance atol %g rtol %g)\n",
      dt, #cs, fmt_params(cs[1].params), fmt_params(cs[#cs].params), atol, rtol))
  end
  io.write(string.format("  total: %d cases per mode\n", op.case_count))
  io.write("  implementations:\n")
  for _, name in ipairs(op.impls) do
    local s = op.module.implementations[name]
    local n = #require("tilebench.runner").candidates(s)
    io.write(string.format("    %-8s%s default {%s}, %d autotune candidates%s\n", name,
      name == op.baseline and " (baseline)" or "", require("tilebench.runner").config_string(s.default),
      n, s.description and ("  " .. s.description) or ""))
  end
  local torch_spec = op.module.implementations.torch
  if torch_spec and #op.impls < #(op.known_impls or op.impls) then
    io.write(string.format("    %-8s %s; runs when named (--impl torch,...), then the speedup baseline\n",
      "torch", torch_spec.description or ""))
  end
  local triton_spec = op.module.implementations.triton
  if triton_spec then
    local n = #require("tilebench.runner").candidates(triton_spec)
    io.write(string.format("    %-8s default {%s}, %d autotune candidates  %s; runs when named (--impl triton,...)\n",
      "triton", require("tilebench.runner").config_string(triton_spec.default), n, triton_spec.description or ""))
  end
  if c.verify then
    io.write(string.format("  verify override: atol %s rtol %s\n", tostring(c.verify.atol), tostring(c.verify.rtol)))
  end
  return 0
end
return M
