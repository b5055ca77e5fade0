-- An example operator in one folder: out = alpha * x + y, a tuned kernel against a naive one.
-- How inputs, outputs, the reference and the implementations are wired (docs/OPERATOR_FORMAT.md);
-- the kernels are in kernel.cu, what is measured in config.yaml.
local op = {}
op.category = "Point-wise"

-- kernel.cu's DT: 0 fp32, 1 fp16 (the dtypes config.yaml lists)
local DT = {fp32 = 0, fp16 = 1}

function op.inputs(case, ctx)
  local n = case.params.n
  return {x = ctx.randn("x", {n}, case.dtype), y = ctx.randn("y", {n}, case.dtype)}
end

function op.outputs(case, ins, ctx)
  return {out = ctx.empty({case.params.n}, case.dtype)}
end

-- One thread per element: obviously right, and the naive implementation too.
local function naive_plan(case, ins, outs, ctx)
  local n = case.params.n
  local f = ctx:kernel("kernel.cu", "axpy_naive", {DT = DT[case.dtype]})
  return ctx.plan{{fn = f, grid = {ctx.cdiv(n, 256)}, block = {256},
                   args = {ins.x, ins.y, outs.out, ctx.f32(case.params.alpha), ctx.i64(n)}}}
end

function op.reference(case, ins, outs, ctx) return naive_plan(case, ins, outs, ctx) end

op.implementations = {
  naive = {
    source = "kernel.cu",
    description = "one element per thread",
    plan = function(case, ins, outs, cfg, ctx) return naive_plan(case, ins, outs, ctx) end,
  },
  cuda = {
    source = "kernel.cu",
    description = "grid-stride loop, VEC elements per thread, 16-byte loads where aligned",
    default = {BLOCK = 256, VEC = 4},
    space = {BLOCK = {128, 256, 512, 1024}, VEC = {1, 2, 4, 8}},     -- autotune: the product
    plan = function(case, ins, outs, cfg, ctx)
      local n = case.params.n
      local f = ctx:kernel("kernel.cu", "axpy", {DT = DT[case.dtype], VEC = cfg.VEC})
      -- enough blocks to fill the GPU a few times over; the loop covers the rest
      local blocks = math.min(ctx.cdiv(n, cfg.BLOCK * cfg.VEC), ctx.props.sm_count * 16)
      return ctx.plan{{fn = f, grid = {blocks}, block = {cfg.BLOCK},
                       args = {ins.x, ins.y, outs.out, ctx.f32(case.params.alpha), ctx.i64(n)}}}
    end,
  },
}
op.baseline = "naive"   -- speedups in the CSV are against the naive kernel
return op
