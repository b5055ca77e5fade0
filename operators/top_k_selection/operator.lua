-- top_k_selection: the k largest values of input (N,) fp32 in descending order, values only:
-- torch.topk(input, k, largest=True, sorted=True).values (OPERATORS.md 44). Duplicates keep their
-- multiplicity; NaN counts as the largest value (torch.topk's rule), -0.0 just below +0.0 (equal
-- as values); docs/SORTING.md. Reference: a bitonic network over all N keys in global memory
-- (operators/_shared/sort_ref.cu), the last k in reverse. `cuda`: radix select -- a 12-bit
-- histogram, a gather of the bins above the k-th key's and of its bin, a one-block refinement
-- and a shared-memory bitonic sort of the k (top_k_selection.cu). `triton`: rounds of per-program
-- sorted top-KP (top_k_selection_triton.py). `lib`: CUB's DeviceRadixSort::SortKeysDescending of
-- all N, the first k copied (libtb_cub; tb.cub).
local sorting = require("sorting")
local op = {}
op.category = "Data Layout"

function op.inputs(case, ctx)
  return { input = ctx.randn("input", { case.params.N }, "fp32") }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.k }, "fp32") }
end

function op.reference(case, ins, outs, ctx)
  local p = case.params
  return sorting.reference(ctx, ins.input, outs.out, p.N, p.k, "fp32", true)
end

local MAX_K = 8192 -- the final network (P keys) in 32 KiB of static shared memory
local SMEM_OPTIN = 232448 -- H100/H200 per-block opt-in (valid sees no device)

local function supports(case)
  local p = case.params
  if p.k < 1 or p.k > p.N then return false, string.format("k = %d must be in [1, N = %d]", p.k, p.N) end
  if p.k > MAX_K then return false, string.format("k = %d: the final sort holds at most %d keys", p.k, MAX_K) end
  return true
end

local function kp_of(k) return math.max(2, sorting.pow2_at_least(k)) end

-- `lib`: CUB through libtb_cub.so (sorting.lua, docs/SORTING.md)
local lib = {
  description = "CUB's DeviceRadixSort::SortKeysDescending of all N fp32 keys into a scratch buffer, the first k copied out by a kernel (libtb_cub.so, nvcc-built; tb.cub)",
  default = {},
  plan = function(case, ins, outs, cfg, ctx)
    local cub = require("tb.cub")
    local p = case.params
    local temp = ctx.empty({ math.max(1, cub.temp_bytes("topk_f32", p.N)) }, "uint8")
    local scratch = ctx.empty({ p.N }, "fp32")
    local c = cub.sort { op = "topk_f32", input = ins.input, out = outs.out, temp = temp, scratch = scratch,
                         n = p.N, k = p.k }
    local plan = ctx.plan { { call = c } }
    plan.note = sorting.cub_note(c) -- the row's note_lib: CUB's version, the call, its storage
    return plan
  end,
}
lib.supports = sorting.cub_supports(lib, supports)

op.implementations = {
  lib = lib,
  cuda = {
    source = "top_k_selection.cu",
    description = "radix select: 12-bit key histogram, gather of the bins above the k-th key's and of its bin (warp-aggregated atomics), one block refining the k-th key on the last 20 bits and sorting the k by a shared-memory bitonic network",
    -- SINGLE: the largest N done by one block in shared memory (topk_single, one launch; 0: never)
    default = { BLOCK = 512, BPS = 2, FBLOCK = 1024, SINGLE = 16384 },
    -- BPS: blocks a SM for the two passes over x (the grid, capped by the vectors there are)
    space = { BLOCK = { 256, 512, 1024 }, BPS = { 1, 2, 4 }, FBLOCK = { 256, 512, 1024 }, SINGLE = { 0, 16384, 32768 } },
    supports = supports,
    valid = function(case, cfg)
      local p = case.params
      local single = p.N <= cfg.SINGLE
      if single then return (p.N + kp_of(p.k)) * 4 + 16384 + 64 <= SMEM_OPTIN end
      return cfg.BLOCK * cfg.BPS <= 2048
    end,
    -- one block: BLOCK and BPS do not matter; many blocks: SINGLE's value does not
    launch_key = function(case, cfg)
      if case.params.N <= cfg.SINGLE then return "single FBLOCK=" .. cfg.FBLOCK end
      return string.format("multi BLOCK=%d BPS=%d FBLOCK=%d", cfg.BLOCK, cfg.BPS, cfg.FBLOCK)
    end,
    -- P carries the case's k (its power of two): the final block's shared buffer (s_buf[P]) and
    -- the bitonic sort over it take it as a compile-time constant, so each k of the grid
    -- compiles its own kernels (bench/results/autotune/README.md)
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local defs = { SORT_KIND = 2, BLOCK = cfg.BLOCK, FBLOCK = cfg.FBLOCK, P = kp_of(p.k) }
      if p.N <= cfg.SINGLE then -- BLOCK does not reach this kernel: one compile whatever it is
        local sdefs = { SORT_KIND = 2, FBLOCK = cfg.FBLOCK, P = kp_of(p.k) }
        return ctx.plan { { fn = ctx:kernel("top_k_selection.cu", "topk_single", sdefs), grid = { 1 },
                            block = { cfg.FBLOCK }, smem = (p.N + kp_of(p.k)) * 4,
                            args = { ins.input, outs.out, ctx.i32(p.N), ctx.i32(p.k) } } }
      end
      local ws = ctx.empty({ 4096 + 2 }, "int32")
      local sel = ctx.empty({ p.k }, "int32")
      local cand = ctx.empty({ p.N }, "int32")
      local g = math.max(1, math.min(ctx.cdiv(p.N // 4, cfg.BLOCK), (ctx.props.sm_count or 132) * cfg.BPS))
      return ctx.plan {
        { fn = ctx:kernel("top_k_selection.cu", "topk_zero", defs), grid = { 1 }, block = { 1024 }, args = { ws } },
        { fn = ctx:kernel("top_k_selection.cu", "topk_hist", defs), grid = { g }, block = { cfg.BLOCK },
          args = { ins.input, ws, ctx.i64(p.N) } },
        { fn = ctx:kernel("top_k_selection.cu", "topk_gather", defs), grid = { g }, block = { cfg.BLOCK },
          args = { ins.input, ws, sel, cand, ctx.i64(p.N), ctx.i32(p.k) } },
        { fn = ctx:kernel("top_k_selection.cu", "topk_final", defs), grid = { 1 }, block = { cfg.FBLOCK },
          args = { ws, sel, cand, outs.out, ctx.i32(p.k) } },
      }
    end,
  },
  -- top_k_selection_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: rounds of programs each sorting a BLOCK-element chunk descending (tl.sort on order-preserving int32 keys) and keeping its first KP (the power of two >= k), until one program writes the k values",
    default = { BLOCK = 4096, num_warps = 8 },
    space = { BLOCK = { 2048, 4096, 8192 }, num_warps = { 4, 8, 16 } },
    supports = supports,
    valid = function(case, cfg) return 2 * kp_of(case.params.k) <= cfg.BLOCK end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local kp = kp_of(p.k)
      -- a round must at least halve the candidates: a BLOCK below 2 KP (valid rejects it in the
      -- search; the default at k > 2048) runs as 2 KP
      local block = math.max(cfg.BLOCK, 2 * kp)
      local steps, src, n, first = {}, ins.input, p.N, true
      while true do
        local programs = ctx.cdiv(n, block)
        local last = programs == 1
        local dst = last and outs.out or ctx.empty({ programs * kp }, "int32")
        -- COUNT carries k (KP while chunks remain): the round's sorted blocks keep COUNT values,
        -- a constexpr shape in triton; IN_FLOAT / OUT_FLOAT mark the first and last rounds
        steps[#steps + 1] = ctx:triton { file = "top_k_selection_triton.py", kernel = "topk_stage_kernel",
          grid = { programs }, args = { src = src, dst = dst, n = ctx.i64(n) },
          constexprs = { COUNT = last and p.k or kp, BLOCK = block, IN_FLOAT = first and 1 or 0, OUT_FLOAT = last and 1 or 0 },
          num_warps = cfg.num_warps, num_stages = 1 }
        if last then break end
        src, n, first = dst, programs * kp, false
      end
      return ctx.plan(steps)
    end,
  },
}

op.baseline = "lib"

return op
