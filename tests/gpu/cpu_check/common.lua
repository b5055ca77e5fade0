-- cpu_check/common.lua: what every family of tests/gpu/operators_cpu_check.lua shares: the
-- dtype rounding the CPU implementations emulate, the comparisons, the spread of configurations
-- each implementation runs in, and the driver that runs (or, with --compile-only, compiles) the
-- families' small cases and stated-rule checks. A family (cpu_check/<family>.lua) returns
--   { order = { operator names, in the order they run },
--     cpu = { [operator] = function(case, host_inputs) -> expected values (flat, or by output) },
--     cases = { [operator] = { dtypes, params, exact?, cpu_tol?, compile_params? } },
--     triton_default = { [operator] = true }  -- also run triton's default on every small case
--     rerun = { [operator] = n }              -- plans that keep device state: run n times
--     extra = { [operator] = function(op) }   -- stated-rule checks, after the small cases
--     compile_extra = { [operator] = function(op, compile) } } -- their kernels, for --compile-only
-- Counters are fields of this module (M.checks, M.failures), so that every family adds to the
-- one total the driver prints and exits on.
local device = require("tb.device")
local context = require("tilebench.context")
local runner = require("tilebench.runner")
local config = require("tilebench.config")
local verify = require("tb.verify")

local M = { checks = 0, failures = 0 }

function M.fail(fmt, ...)
  M.failures = M.failures + 1
  io.stderr:write("FAILED: ", string.format(fmt, ...), "\n")
end
function M.count() M.checks = M.checks + 1 end
local fail = M.fail

-- ---- rounding to a dtype, as the device does it (round to nearest, ties to even) -------------
local function round_bits(v, p, emin, maxv)
  if v ~= v or v == 0 or v == math.huge or v == -math.huge then return v end
  local a = math.abs(v)
  local e = math.floor(math.log(a, 2))
  if 2.0 ^ e > a then e = e - 1 elseif 2.0 ^ (e + 1) <= a then e = e + 1 end
  if e < emin then e = emin end             -- subnormals share the smallest exponent
  local q = 2.0 ^ (e - p + 1)               -- the spacing of representable values near a
  local x = a / q
  local r = math.floor(x)
  local frac = x - r
  if frac > 0.5 or (frac == 0.5 and r % 2 == 1) then r = r + 1 end
  local res = r * q
  if res > maxv then res = math.huge end
  return v < 0 and -res or res
end

local function round_to(dtype, v)
  if dtype == "fp32" then return (string.unpack("f", string.pack("f", v))) end
  local max = require("tb.dtype").info[dtype] and require("tb.dtype").info[dtype].max_finite
  if dtype == "fp16" then return round_bits(v, 11, -14, max) end
  if dtype == "bf16" then return round_bits(v, 8, -126, max) end
  error("round_to: " .. dtype)
end

local function wrap_int8(v) return ((v + 128) % 256) - 128 end
M.round_to, M.wrap_int8 = round_to, wrap_int8

-- Small cases: odd sizes for tails, rows shorter and longer than one warp covers.
-- exact = true (in a family's cases): the CPU implementation emulates every rounding of the
-- reference, which must then agree bit for bit (atol = rtol = 0), not merely within the output
-- dtype's tolerance.
M.POINTWISE_N = { { n = 1 }, { n = 1000003 }, { n = 70001 } }

-- The registry: every family's tables merged (register), read by check_case and the driver.
local R = { order = {}, cpu = {}, cases = {}, triton_default = {}, rerun = {}, extra = {}, compile_extra = {} }
function M.register(family)
  for _, n in ipairs(family.order) do
    if R.cases[n] then error("cpu_check: operator '" .. n .. "' registered twice") end
    if not (family.cases[n] and family.cpu[n]) then error("cpu_check: operator '" .. n .. "' lacks cases or a CPU implementation") end
    R.order[#R.order + 1] = n
    R.cases[n], R.cpu[n] = family.cases[n], family.cpu[n]
  end
  for _, k in ipairs({ "triton_default", "rerun", "extra", "compile_extra" }) do
    for n, v in pairs(family[k] or {}) do R[k][n] = v end
  end
end

function M.case_id(params)
  local keys = {}
  for k in pairs(params) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = k .. "=" .. params[k] end
  return table.concat(parts, ",")
end

function M.host_all(tensors)
  local h = {}
  for name, t in pairs(tensors) do h[name] = t:to_host(1 << 24) end
  return h
end

local function within(got, want, atol, rtol)
  if type(want) == "table" then
    for _, w in ipairs(want) do if within(got, w, atol, rtol) then return true end end
    return false
  end
  if want ~= want then return got ~= got end
  if want == math.huge or want == -math.huge then return got == want end
  return math.abs(got - want) <= atol + rtol * math.abs(want)
end

-- Reference vs CPU: returns the number of mismatches (reporting the first few).
function M.compare_cpu(where, got, want, atol, rtol)
  M.count()
  if #got ~= #want then
    fail("%s: reference has %d elements, CPU %d", where, #got, #want)
    return
  end
  local bad = 0
  for i = 1, #want do
    if not within(got[i], want[i], atol, rtol) then
      bad = bad + 1
      if bad <= 4 then
        local w = want[i]
        fail("%s: reference[%d] = %.9g, CPU expects %s", where, i - 1, got[i],
             type(w) == "table" and table.concat((function() local s = {}
               for k, v in ipairs(w) do s[k] = string.format("%.9g", v) end return s end)(), " or ")
             or string.format("%.9g", w))
      end
    end
  end
  if bad > 4 then fail("%s: %d mismatches in all", where, bad) end
end
local case_id, host_all, compare_cpu = M.case_id, M.host_all, M.compare_cpu

-- Row-wise layouts with several rows per group (RPG 2 and 4: the group loads all its rows before
-- reducing any), tried on top of the spread wherever the space has RPG and they are valid:
-- the automatic layout, a warp per row and several groups to a block (per-row shared buffers),
-- and a block per row. The row counts of CASES (7, 9, 1001, 33 ...) leave partial groups and
-- partial blocks.
local RPG_LAYOUTS = { { TPR = 0, BLOCK = 0 }, { TPR = 32, BLOCK = 128 }, { TPR = 128, BLOCK = 512 },
                      { TPR = 256, BLOCK = 256 }, { TPR = 1024, BLOCK = 1024 } }

-- Row-wise stream kernels (STAGES >= 1: persistent blocks, rows through shared-memory slots by
-- cp.async.bulk): one slot (the barrier's phase flips every row), two and three slots, with block
-- sizes that make the grid smaller than the row count (blocks loop over rows) and larger. Rows
-- whose bytes are not a multiple of 16 (N = 1001, 4097 ...) take the kernel's copy fallback.
local STREAM_LAYOUTS = { { STAGES = 1, BLOCK = 1024 }, { STAGES = 2, BLOCK = 0 }, { STAGES = 3, BLOCK = 256 },
                         { STAGES = 2, BLOCK = 1024 } }

-- FULLVEC = 1 (one bound check per whole vector): the automatic register layout, a warp per row
-- with 2 rows per group, and the stream kernel with 2 slots.
local FULLVEC_LAYOUTS = { { TPR = 0, BLOCK = 0, RPG = 1, STAGES = 0 }, { TPR = 32, BLOCK = 128, RPG = 2, STAGES = 0 },
                          { TPR = 0, BLOCK = 0, RPG = 1, STAGES = 2 } }

-- The Stream-K kernel (VARIANT = sk) on grids of 2, 3 and 7 CTAs (cfg.CTAS, gemm.lua): with the
-- small cases' tiles outnumbering them, both splits leave data-parallel tiles after the stream-K
-- ones, CTAs cross several tile boundaries, and the ring wraps across units.
local STREAMK_CONFIGS = { { BN = 128, STAGES = 3, SK = 1, CTAS = 2 }, { BN = 256, STAGES = 4, SK = 2, CTAS = 3 },
                          { BN = 128, STAGES = 5, SK = 2, CTAS = 7 }, { BN = 128, STAGES = 4, SK = 1, CTAS = 7 } }

-- A spread of the implementation's autotune candidates: the default plus every k-th valid one,
-- plus the RPG_LAYOUTS for row-wise implementations and STREAMK_CONFIGS for the Stream-K kernel.
function M.configs_to_try(spec, c)
  local cfgs = { spec.default or {} }
  -- the row family's extra layouts by whether the kernel runs them, not by `valid`, which also
  -- leaves out layouts the search does not screen (oplib.row_worth: stream blocks other than
  -- 256 threads, which the default's stream rule still launches)
  local okr, oplib = pcall(require, "oplib")
  local fits = okr and oplib.row_fits and oplib.row_fits[spec] or spec.valid
  local valid = {}
  for _, cfg in ipairs(runner.candidates(spec)) do
    if not spec.valid or spec.valid(c, cfg) then valid[#valid + 1] = cfg end
  end
  local step = math.max(1, #valid // 6)
  for i = 1, #valid, step do cfgs[#cfgs + 1] = valid[i] end
  cfgs[#cfgs + 1] = valid[#valid]
  if spec.space and spec.space.STAGES and not spec.space.VARIANT then -- row-wise (the gemm family's STAGES differ)
    for _, l in ipairs(STREAM_LAYOUTS) do
      local cfg = { TPR = 0, BLOCK = l.BLOCK, RPG = 1, STAGES = l.STAGES }
      if not fits or fits(c, cfg) then cfgs[#cfgs + 1] = cfg end
    end
  end
  if spec.space and spec.space.FULLVEC then -- bound checks per vector: each kernel family once more
    for _, l in ipairs(FULLVEC_LAYOUTS) do
      local cfg = { TPR = l.TPR, BLOCK = l.BLOCK, RPG = l.RPG, STAGES = l.STAGES, FULLVEC = 1 }
      if not fits or fits(c, cfg) then cfgs[#cfgs + 1] = cfg end
    end
  end
  if spec.space and spec.space.SK and spec.space.VARIANT then
    for _, l in ipairs(STREAMK_CONFIGS) do
      local cfg = { VARIANT = "sk", BN = l.BN, STAGES = l.STAGES, SK = l.SK, CTAS = l.CTAS }
      if not spec.valid or spec.valid(c, cfg) then cfgs[#cfgs + 1] = cfg end
    end
  end
  if spec.space and spec.space.RPG then
    for _, rpg in ipairs({ 2, 4 }) do
      for _, l in ipairs(RPG_LAYOUTS) do
        local cfg = { TPR = l.TPR, BLOCK = l.BLOCK, RPG = rpg }
        if not fits or fits(c, cfg) then cfgs[#cfgs + 1] = cfg end
      end
    end
  end
  return cfgs
end
local configs_to_try = M.configs_to_try

-- Runs every configuration of every implementation into poisoned outputs; tb.verify vs refs.
-- impls: the implementations to run (default op.impls, the default set); cfgs (optional): these
-- configurations instead of configs_to_try's spread.
-- Operators whose plans keep state between runs (streamk_matmul's fix-up workspace and tile
-- counters, which each run must leave zeroed): every plan runs three times, outputs poisoned
-- before each, and the last run is what is verified -- the timed runs are such later runs.
-- (the families' rerun tables: streamk_matmul's)
local function run_plan(op, plan, outs)
  for _ = 2, R.rerun[op.name] or 1 do
    plan:run()
    for _, t in pairs(outs) do verify.poison(t) end
  end
  plan:run()
end

function M.check_impls(op, c, ctx, ins, refs, where, impls, cfgs)
  local family = device.props().family
  for _, impl in ipairs(impls or op.impls) do
    local spec = op.module.implementations[impl]
    if not spec.supports or spec.supports(c, ctx) then
      for _, cfg in ipairs(cfgs or configs_to_try(spec, c)) do
        local tag = string.format("%s %s {%s}", where, impl, runner.config_string(cfg))
        local okrun, err = xpcall(function()
          local outs = op.module.outputs(c, ins, ctx)
          for _, t in pairs(outs) do verify.poison(t) end
          run_plan(op, spec.plan(c, ins, outs, cfg, ctx), outs)
          for name, ref in pairs(refs) do
            M.count()
            local atol, rtol = config.tolerance(op.config, ref.dtype, family)
            local r = verify.compare(outs[name], ref, { atol = atol, rtol = rtol, max_report = 3 })
            if not r.ok then
              local f = r.first and r.first[1]
              fail("%s: output '%s': %d of %d mismatches (max abs %.3g)%s", tag, name, r.mismatches, r.numel,
                   r.max_abs or 0, f and string.format(", first [%d] got %s expected %s", f.index,
                   tostring(f.got), tostring(f.expected)) or "")
            end
          end
        end, debug.traceback)
        if not okrun then fail("%s: %s", tag, tostring(err)) end
      end
    end
  end
end
local check_impls = M.check_impls

-- One small case c (params, dtype, index, id) of op: its reference runs, then check_impls over
-- impls (cfgs as check_impls takes them); prints "ok  <where>". For the families' spreads.
function M.check_small(op, c, where, impls, cfgs)
  local ctx <close> = context.new(op, c)
  local ins = op.module.inputs(c, ctx)
  local refs = op.module.outputs(c, ins, ctx)
  op.module.reference(c, ins, refs, ctx):run()
  check_impls(op, c, ctx, ins, refs, where, impls, cfgs)
  print(string.format("ok  %s", where))
end

-- Operators whose `triton` implementation also runs on every small case (the families'
-- triton_default), in its default configuration only (triton compiles on the GPU machine: a
-- second or two per kernel), where triton imports.
local function check_triton_default(op, c, ctx, ins, refs, where)
  local spec = op.module.implementations.triton
  if not (spec and require("tilebench.triton").available()) then return end
  if spec.supports and not spec.supports(c, ctx) then return end
  local family = device.props().family
  local tag = string.format("%s triton {%s}", where, runner.config_string(spec.default))
  local okrun, err = xpcall(function()
    local outs = op.module.outputs(c, ins, ctx)
    for _, t in pairs(outs) do verify.poison(t) end
    run_plan(op, spec.plan(c, ins, outs, spec.default, ctx), outs)
    for name, ref in pairs(refs) do
      M.count()
      local atol, rtol = config.tolerance(op.config, ref.dtype, family)
      local r = verify.compare(outs[name], ref, { atol = atol, rtol = rtol, max_report = 3 })
      if not r.ok then fail("%s: output '%s': %d of %d mismatches (max abs %.3g)", tag, name, r.mismatches, r.numel, r.max_abs or 0) end
    end
  end, debug.traceback)
  if not okrun then fail("%s: %s", tag, tostring(err)) end
end

local function check_case(op, name, dtype, params)
  local c = { params = params, dtype = dtype, index = 1, id = case_id(params) }
  local where = string.format("%s %s %s", name, dtype, c.id)
  local ctx <close> = context.new(op, c)
  local ins = op.module.inputs(c, ctx)
  local refs = op.module.outputs(c, ins, ctx)
  for _, t in pairs(refs) do verify.poison(t) end
  op.module.reference(c, ins, refs, ctx):run()
  local want = R.cpu[name](c, host_all(ins))
  for oname, ref in pairs(refs) do
    local atol, rtol = config.tolerance(nil, ref.dtype)
    if R.cases[name].exact then atol, rtol = 0, 0 end -- the CPU emulates every rounding: bit for bit
    local ct = R.cases[name].cpu_tol -- the reference's own summation order (matmuls)
    if ct then atol, rtol = ct[1], ct[2] end
    -- an operator with several outputs returns its expected values by output name
    compare_cpu(where .. " reference '" .. oname .. "' vs CPU", ref:to_host(1 << 24), want[oname] or want, atol, rtol)
  end
  check_impls(op, c, ctx, ins, refs, where)
  if R.triton_default[name] then check_triton_default(op, c, ctx, ins, refs, where) end
  print(string.format("ok  %s", where))
end

-- The default implementations, plus triton where it imports (the checks of stated rules run it too).
function M.with_triton(op, where)
  local impls = {}
  for _, i in ipairs(op.impls) do impls[#impls + 1] = i end
  if op.module.implementations.triton and require("tilebench.triton").available() then
    impls[#impls + 1] = "triton"
  else
    print(where .. ": triton does not import here; the default implementations only")
  end
  return impls
end

-- --compile-only: every kernel the checks of `selected` would run, compiled into the NVRTC cache
-- in compile-only contexts as `tilebench compile` does (no device needed). Returns the exit status.
local function compile_all(selected)
  local opmod = require("tilebench.operator")
  local precompile = require("tilebench.precompile")
  local n, bad = 0, 0
  local function compile(u)
    n = n + 1
    local okc, err = precompile.compile_unit(u)
    if not okc then
      bad = bad + 1
      io.stderr:write("FAILED: ", precompile.describe(u), ": ", tostring(err), "\n")
    end
  end
  for _, name in ipairs(selected) do
    local spec = R.cases[name]
    local op = opmod.load(name)
    local all = {}
    for _, dtype in ipairs(spec.dtypes) do
      for _, params in ipairs(spec.params) do all[#all + 1] = { dtype = dtype, params = params } end
      -- shapes a stated-rule check builds its own inputs at (argmax's planted ties)
      for _, params in ipairs(spec.compile_params or {}) do all[#all + 1] = { dtype = dtype, params = params } end
    end
    for _, w in ipairs(all) do
      local c = { params = w.params, dtype = w.dtype, index = 1, id = case_id(w.params) }
      compile({ op = op, case = c, dtype = w.dtype })
      for _, impl in ipairs(op.impls) do
        local ispec = op.module.implementations[impl]
        if ispec.source or ispec.sources then
          for _, cfg in ipairs(configs_to_try(ispec, c)) do
            compile({ op = op, case = c, dtype = w.dtype, impl = impl, cfg = cfg })
          end
        end
      end
      if R.triton_default[name] and require("tilebench.triton").available() then
        compile({ op = op, case = c, dtype = w.dtype, impl = "triton", cfg = op.module.implementations.triton.default })
      end
    end
    if R.compile_extra[name] then R.compile_extra[name](op, compile) end
  end
  print(string.format("compiled %d plans, %d failed", n, bad))
  return bad == 0 and 0 or 1
end

-- The driver: args are the script's words ([--compile-only] [OPERATOR ...]); every registered
-- operator when none is named. Returns the exit status: 0 when every check passed and there was
-- at least one, 1 otherwise.
function M.main(args)
  local compile_only = args[1] == "--compile-only"
  local selected = {}
  for i = compile_only and 2 or 1, #args do selected[#selected + 1] = args[i] end
  if #selected == 0 then selected = R.order end
  for _, name in ipairs(selected) do
    if not R.cases[name] then error("operators_cpu_check: no small cases for operator '" .. name .. "'") end
  end
  if compile_only then return compile_all(selected) end
  local opmod = require("tilebench.operator")
  for _, name in ipairs(selected) do
    local spec = R.cases[name]
    local op = opmod.load(name)
    for _, dtype in ipairs(spec.dtypes) do
      for _, params in ipairs(spec.params) do
        local okc, err = xpcall(check_case, debug.traceback, op, name, dtype, params)
        if not okc then fail("%s %s %s: %s", name, dtype, case_id(params), tostring(err)) end
      end
    end
    if R.extra[name] then R.extra[name](op) end
  end
  print(string.format("%d checks, %d failures", M.checks, M.failures))
  return M.failures == 0 and M.checks > 0 and 0 or 1
end

return M
