-- moe_topk_gating: per row of logits (M, E): (vals, idx) = topk(logits, k, sorted), weights =
-- softmax(vals.float()).to(dtype) over only the k values, indices int32 (OPERATORS.md 22).
-- Tie rule (stated, tested, the same in the reference, cuda and triton): the order is value
-- descending and, among equal values, the LOWER INDEX first (tb_argmax_better in tb_rows.cuh,
-- which also puts NaN first, as torch; NaN is never generated). TileBench's inputs have no ties:
-- each row is a random permutation of linspace(-3, 3, E) in the dtype (moe_topk_gating_gen.cu,
-- from a seeded uniform key per element, run once per case before the reference).
-- torch: torch.topk does not specify its order among equal values; on the grid there are none, so
-- its indices are compared exactly (docs/REDUCTIONS.md). The GPU check tests the rule on planted
-- ties for the reference (against the CPU), cuda and triton.
-- Reference: one thread per row, k scans. `cuda`: a group of TPR threads per row, per-thread top-k
-- lists merged by k shuffle argmax rounds. `triton`: ROWS rows per program, k masked max rounds.
local oplib = require("oplib")

local op = {}
op.category = "Reduction/Norm"

function op.inputs(case, ctx)
  local p = case.params
  local keys = ctx.rand("keys", { p.M, p.E }, "fp32", 0, 1)
  local logits = ctx.empty({ p.M, p.E }, case.dtype)
  local gen = ctx:kernel("moe_topk_gating_gen.cu", "moe_topk_gating_gen", { DTYPE = ctx.ctype(case.dtype) })
  local plan = ctx.plan { { fn = gen, grid = { p.M }, block = { 128 },
                            args = { keys, logits, ctx.i32(p.M), ctx.i32(p.E) } } }
  if not ctx.compile_only then plan:run() end -- compile-only contexts only compile the generator
  return { logits = logits }
end

function op.outputs(case, ins, ctx)
  local p = case.params
  return { weights = ctx.empty({ p.M, p.k }, case.dtype), indices = ctx.empty({ p.M, p.k }, "int32") }
end

function op.reference(case, ins, outs, ctx)
  local p = case.params
  local f = ctx:kernel("moe_topk_gating_ref.cu", "moe_topk_gating_ref", { DTYPE = ctx.ctype(case.dtype), K = p.k })
  return ctx.plan { { fn = f, grid = { ctx.cdiv(p.M, 128) }, block = { 128 },
                      args = { ins.logits, outs.weights, outs.indices, ctx.i32(p.M), ctx.i32(p.E) } } }
end

local function supports(case)
  local p = case.params
  if p.k < 1 or p.k > p.E then return false, string.format("k = %d must be in 1..E (E = %d)", p.k, p.E) end
  if p.k > 32 then return false, string.format("k = %d: the kernels keep k picks in registers, at most 32", p.k) end
  return true
end

-- The cuda layout: TPR threads a row (0: the smallest power of two up to 32 that gives each
-- thread at most 16 elements), NV 16-byte vectors a thread, BLOCK threads a block (0: 128).
local function layout(case, cfg)
  local vec = oplib.ROW_VEC[case.dtype]
  local E = case.params.E
  local tpr = cfg.TPR
  if tpr == 0 then
    tpr = 1
    while tpr < 32 and tpr * 16 < E do tpr = tpr * 2 end
  end
  local block = cfg.BLOCK == 0 and 128 or cfg.BLOCK
  return tpr, block, math.max(1, (E + tpr * vec - 1) // (tpr * vec))
end

op.implementations = {
  cuda = {
    source = "moe_topk_gating.cu",
    description = "row per TPR-thread group (up to a warp), per-thread top-k register lists, k shuffle argmax rounds (lower index first on ties)",
    default = { TPR = 0, BLOCK = 0 },
    space = { TPR = { 0, 1, 2, 4, 8, 16, 32 }, BLOCK = { 0, 64, 128, 256, 512 } },
    supports = supports,
    -- at most 16 vectors (the row in registers) and, as the row family's bound, 24 + 1.5 per
    -- element plus 2 per top-k slot within the registers a thread gets at that block size
    valid = function(case, cfg)
      local tpr, block, nv = layout(case, cfg)
      local elems = nv * oplib.ROW_VEC[case.dtype]
      return nv <= 16 and block % tpr == 0 and 24 + 1.5 * elems + 2 * case.params.k <= math.min(255, 65536 // block)
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local tpr, block, nv = layout(case, cfg)
      local f = ctx:kernel("moe_topk_gating.cu", "moe_topk_gating_cuda",
        { DTYPE = ctx.ctype(case.dtype), BLOCK = block, TPR = tpr, NV = nv, K = p.k })
      return ctx.plan { { fn = f, grid = { ctx.cdiv(p.M, block // tpr) }, block = { block },
                          args = { ins.logits, outs.weights, outs.indices, ctx.i32(p.M), ctx.i32(p.E) } } }
    end,
  },
  -- moe_topk_gating_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: ROWS rows per program as one tile, k rounds of masked max and first index (lower index first on ties)",
    default = { ROWS = 8, num_warps = 4 },
    space = { ROWS = { 1, 2, 4, 8, 16, 32 }, num_warps = { 1, 2, 4, 8 } },
    supports = supports,
    valid = function(case, cfg)
      local per_thread = cfg.ROWS * oplib.next_pow2(case.params.E) // (32 * cfg.num_warps)
      return per_thread >= 1 and per_thread <= 64
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      return ctx.plan { ctx:triton { file = "moe_topk_gating_triton.py", kernel = "moe_topk_gating_kernel",
        grid = { ctx.cdiv(p.M, cfg.ROWS) },
        args = { logits = ins.logits, weights = outs.weights, indices = outs.indices, rows = ctx.i32(p.M), E = ctx.i32(p.E) },
        constexprs = { K = p.k, KP = oplib.next_pow2(p.k), BLOCK_E = oplib.next_pow2(p.E), ROWS = cfg.ROWS },
        num_warps = cfg.num_warps, num_stages = 1 } }
    end,
  },
}

return op
