-- The matmul operators on a GPU: the reference kernel, every `cuda` variant and the cuBLASLt
-- `lib` plan against a CPU product on small odd-sized problems (edges in M, N and K, batch 3),
-- then `cuda` and `lib` against the reference at each dtype's largest grid case.
-- Small inputs are multiples of 1/8 in [-2, 2]: exact in fp8 e4m3, bf16, fp16 and TF32, so every
-- path's fp32 sums are exact and only the output rounding differs -- tolerances are tight.
-- usage: tilebench script tests/gpu/matmul_check.lua [--small-only]   (exit 77 without a GPU)
local device = require("tb.device")
local ok_dev, why = device.available()
if not ok_dev then io.stderr:write("skip: ", tostring(why), "\n") os.exit(77) end
local blas_ok, blas_why = require("tb.blas").available()
if not blas_ok then io.stderr:write("skip: ", tostring(blas_why), "\n") os.exit(77) end

local tensor, verify = require("tb.tensor"), require("tb.verify")
local opmod, context, config = require("tilebench.operator"), require("tilebench.context"), require("tilebench.config")
local small_only = arg[1] == "--small-only"
local gemm = require("gemm")

local failures, checks = {}, 0
local function check(what, out, ref, atol, rtol)
  checks = checks + 1
  local r = verify.compare(out, ref, { atol = atol, rtol = rtol, max_report = 3 })
  local first = r.first and r.first[1]
  local line = string.format("%-58s %s  mismatches %d/%d  max_abs %.3g%s", what, r.ok and "ok  " or "FAIL",
    r.mismatches or -1, r.numel or -1, r.max_abs or 0,
    first and string.format("  first [%d] got %s want %s", first.index, tostring(first.got), tostring(first.expected)) or "")
  print(line)
  if not r.ok then failures[#failures + 1] = line end
end
local function try(what, f)
  local ok, err = xpcall(f, debug.traceback)
  if not ok then
    checks = checks + 1
    failures[#failures + 1] = what .. ": " .. tostring(err)
    print(what .. ": ERROR " .. tostring(err))
  end
end

-- Output rounding bounds for exact fp32 sums (relative): fp32 exact, fp16 2^-11, bf16 2^-8, e4m3 2^-4.
local TIGHT = { fp32 = { 1e-5, 1e-6 }, fp16 = { 1e-3, 1e-3 }, bf16 = { 1e-2, 8e-3 }, fp8_e4m3 = { 1e-2, 0.07 } }
-- Every configuration of the autotune space (gemm.valid filters per problem), and the persistent
-- variants (ws, tma) squeezed onto 2 CTAs (CTAS, a test-only key) so that each CTA walks several tiles and
-- its stage ring wraps across tile boundaries even on these small problems.
local CONFIGS = {}
for _, v in ipairs(gemm.space.VARIANT) do
  for _, bn in ipairs(gemm.space.BN) do
    for _, st in ipairs(gemm.space.STAGES) do CONFIGS[#CONFIGS + 1] = { VARIANT = v, BN = bn, STAGES = st } end
  end
end
for _, c in ipairs({ { 128, 3 }, { 128, 5 }, { 256, 4 } }) do
  CONFIGS[#CONFIGS + 1] = { VARIANT = "ws", BN = c[1], STAGES = c[2], CTAS = 2 }
  CONFIGS[#CONFIGS + 1] = { VARIANT = "tma", BN = c[1], STAGES = c[2], CTAS = 2 }
  CONFIGS[#CONFIGS + 1] = { VARIANT = "pp", BN = 128, STAGES = c[2], CTAS = 2 }
  CONFIGS[#CONFIGS + 1] = { VARIANT = "pp", BN = 128, STAGES = c[2], CTAS = 3 }
end
local function cfgname(cfg)
  return string.format("cuda %s BN=%d STAGES=%d%s", cfg.VARIANT, cfg.BN, cfg.STAGES,
    cfg.CTAS and (" CTAS=" .. cfg.CTAS) or "")
end
-- At the largest cases: the default, and these where valid.
local LARGE = {
  { VARIANT = "wgmma2", BN = 128, STAGES = 3 }, { VARIANT = "ws", BN = 128, STAGES = 5 },
  { VARIANT = "ws", BN = 256, STAGES = 4 }, { VARIANT = "wgmma", BN = 256, STAGES = 4 },
  { VARIANT = "mma", BN = 128, STAGES = 3 }, { VARIANT = "tma", BN = 128, STAGES = 6 },
  { VARIANT = "tma", BN = 256, STAGES = 4 }, { VARIANT = "pp", BN = 128, STAGES = 6 },
}

local function lcg(seed)
  local s = seed
  return function() s = (s * 1103515245 + 12345) % 2147483648; return (s >> 8) % 33 - 16 end
end

-- ---- small problems against the CPU --------------------------------------------------------
local function small(dtype, P)
  local op = opmod.load("matmul_fp32_fp16_fp8")
  local case = { params = { M = P.M, N = P.N, K = P.K }, dtype = dtype, seed = 1, index = 1, id = "small" }
  local ctx <close> = context.new(op, case)
  local rnd = lcg(#dtype * 7 + P.batch)
  local av, bv = {}, {}
  for i = 1, P.batch * P.M * P.K do av[i] = rnd() / 8 end
  for i = 1, P.batch * P.K * P.N do bv[i] = rnd() / 8 end
  local cv = {}
  for z = 0, P.batch - 1 do
    for i = 0, P.M - 1 do
      for j = 0, P.N - 1 do
        local s = 0.0
        for k = 0, P.K - 1 do
          s = s + av[z * P.M * P.K + i * P.K + k + 1] * bv[z * P.K * P.N + k * P.N + j + 1]
        end
        cv[z * P.M * P.N + i * P.N + j + 1] = s
      end
    end
  end
  local n = P.batch * P.M * P.N
  local a = ctx.from_table(av, dtype, { #av })
  local b = ctx.from_table(bv, dtype, { #bv })
  local expected = ctx.from_table(cv, "fp32", { n })
  local tol = TIGHT[gemm.canon(dtype)]
  local p = { M = P.M, N = P.N, K = P.K, batch = P.batch, dtype = dtype }
  local tag = string.format("%s %dx%dx%d batch %d", dtype, P.M, P.N, P.K, P.batch)
  -- The verifier compares like dtypes: widen every output to fp32 with the cast kernel.
  local widen = ctx:kernel("matmul_ref.cu", "cast", { IN_DT = ({ fp32 = 0, fp16 = 1, bf16 = 2, fp8_e4m3 = 3 })[gemm.canon(dtype)], OUT_DT = 0 })
  local function as_fp32(c)
    local w = ctx.empty({ n }, "fp32")
    ctx.plan{ { fn = widen, grid = { ctx.cdiv(n, 256) }, block = { 256 }, args = { c, w, ctx.i64(n) } } }:run()
    return w
  end
  local function run_into(label, build)
    try(tag .. " " .. label, function()
      local c = ctx.empty({ n }, dtype)
      verify.poison(c)
      build(c):run()
      check(tag .. " " .. label, as_fp32(c), expected, tol[1], tol[2])
    end)
  end
  run_into("reference", function(c) return gemm.reference(p, a, b, c, ctx) end)
  for _, cfg in ipairs(CONFIGS) do
    if gemm.valid(p, cfg, ctx) and gemm.supports(p) then
      run_into(cfgname(cfg), function(c) return gemm.cuda_plan(p, a, b, c, cfg, ctx) end)
    end
  end
  run_into("lib", function(c) return gemm.lib_plan(p, a, b, c, ctx) end)
  if gemm.canon(dtype) == "fp8_e4m3" then
    run_into("lib fast_accum", function(c) return gemm.lib_plan(p, a, b, c, ctx, { fast_accum = true }) end)
  end
end

for _, dtype in ipairs({ "fp32", "fp16", "bf16", "fp8_e4m3" }) do
  small(dtype, { M = 200, N = 272, K = 208, batch = 1 })
  small(dtype, { M = 96, N = 80, K = 48, batch = 3 })
end

-- ---- each operator's largest case per dtype against its reference ----------------------------
local function largest(opname)
  local op = opmod.load(opname)
  local family = device.props().family
  for _, dtype in ipairs(opmod.dtypes(op)) do
    local cases = opmod.cases_of(op, dtype)
    local case = cases[#cases]
    try(opname .. " " .. dtype .. " " .. case.id, function()
      local ctx <close> = context.new(op, case)
      local ins = op.module.inputs(case, ctx)
      local refs = op.module.outputs(case, ins, ctx)
      op.module.reference(case, ins, refs, ctx):run()
      for _, impl in ipairs(op.impls) do
        local spec = op.module.implementations[impl]
        local cfgs = { spec.default or {} }
        if impl == "cuda" then
          for _, c in ipairs(LARGE) do
            local d = spec.default
            if spec.valid(case, c) and not (c.VARIANT == d.VARIANT and c.BN == d.BN and c.STAGES == d.STAGES) then
              cfgs[#cfgs + 1] = c
            end
          end
        end
        for _, cfg in ipairs(cfgs) do
          local outs = op.module.outputs(case, ins, ctx)
          for _, t in pairs(outs) do verify.poison(t) end
          spec.plan(case, ins, outs, cfg, ctx):run()
          for name, out in pairs(outs) do
            local atol, rtol = config.tolerance(op.config, out.dtype or dtype, family)
            check(string.format("%s %s %s %s %s", opname, dtype, case.id, impl, cfg.VARIANT and cfgname(cfg) or ""),
                  out, refs[name], atol, rtol)
          end
        end
      end
    end)
  end
end
if not small_only then
  largest("matmul_fp32_fp16_fp8")
  largest("batched_matmul")
end

print(string.format("matmul_check: %d checks, %d failed", checks, #failures))
os.exit(#failures == 0 and 0 or 1)
