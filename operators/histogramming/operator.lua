-- histogramming: hist[b] = #{i : input[i] == b} for b in [0, num_bins), int32 in and out
-- (torch.bincount(input.to(int64), minlength=num_bins).to(int32); OPERATORS.md 21). Inputs as
-- TileBench's newest generator: input = arange(N) % num_bins (histogramming_gen.cu, once per case
-- before the reference), so every count is N / num_bins. Values outside [0, num_bins) are never
-- generated; the kernels do not count them (torch would raise or grow the output).
-- Reference: clear, then one global atomicAdd per element. `cuda`: shared-memory histograms per
-- block into per-block partial rows, then a column sum (histogramming.cu). `triton`: tl.histogram
-- per program, then one atomic add per non-zero bin, or (above 256 bins) an atomic add per element
-- into per-program rows, then a column sum.
local op = {}
op.category = "Reduction/Norm"

function op.inputs(case, ctx)
  local p = case.params
  local x = ctx.empty({ p.N }, "int32")
  local gen = ctx:kernel("histogramming_gen.cu", "histogramming_gen", {})
  local plan = ctx.plan { { fn = gen, grid = { math.min(ctx.cdiv(p.N, 256), 65536) }, block = { 256 },
                            args = { x, ctx.i64(p.N), ctx.i32(p.num_bins) } } }
  if not ctx.compile_only then plan:run() end -- compile-only contexts only compile the generator
  return { input = x }
end

function op.outputs(case, ins, ctx)
  return { hist = ctx.empty({ case.params.num_bins }, "int32") }
end

function op.reference(case, ins, outs, ctx)
  local p = case.params
  local zero = ctx:kernel("histogramming_ref.cu", "histogramming_ref_zero", {})
  local count = ctx:kernel("histogramming_ref.cu", "histogramming_ref", {})
  return ctx.plan {
    { fn = zero, grid = { ctx.cdiv(p.num_bins, 256) }, block = { 256 }, args = { outs.hist, ctx.i32(p.num_bins) } },
    { fn = count, grid = { ctx.cdiv(p.N, 256) }, block = { 256 },
      args = { ins.input, outs.hist, ctx.i64(p.N), ctx.i32(p.num_bins) } },
  }
end

local SMEM_OPTIN, SMEM_PER_SM = 232448, 233472 -- H100/H200; plans read ctx.props

-- A block's shared histogram: num_bins ints (plus 1 KiB the runtime keeps per block).
local function smem_of(case) return case.params.num_bins * 4 end

local function supports(case)
  if smem_of(case) + 1024 > SMEM_OPTIN then
    return false, string.format("num_bins = %d: a block's histogram (%d bytes) does not fit in shared memory",
      case.params.num_bins, smem_of(case))
  end
  return true
end

-- Blocks of the counting kernel: one per chunk of BLOCK x UNROLL vectors, capped at WAVES x the
-- blocks the device holds at once (threads and shared memory) when WAVES > 0.
local function count_grid(case, cfg, props)
  local nv = case.params.N // 4
  local blocks = math.max(1, (nv + cfg.BLOCK * cfg.UNROLL - 1) // (cfg.BLOCK * cfg.UNROLL))
  if cfg.WAVES > 0 then
    local per_sm = math.min((props.max_threads_per_sm or 2048) // cfg.BLOCK,
                            (props.smem_per_sm or SMEM_PER_SM) // (smem_of(case) + 1024))
    blocks = math.min(blocks, (props.sm_count or 132) * math.max(1, per_sm) * cfg.WAVES)
  end
  return blocks
end

op.implementations = {
  cuda = {
    source = "histogramming.cu",
    description = "block-private shared-memory histograms over grid-strided chunks of UNROLL 16-byte vectors per thread, stored as per-block rows, then a column sum (no global atomics)",
    -- BLOCK 1024 and one wave keep the partial rows (G x num_bins) at 4 % of the input's bytes at
    -- the largest case; UNROLL 2: 32 KiB in flight per SM at 2048 threads
    default = { BLOCK = 1024, UNROLL = 2, WAVES = 1, RBLOCK = 256 },
    space = { BLOCK = { 128, 256, 512, 1024 }, UNROLL = { 1, 2, 4, 8 }, WAVES = { 0, 1, 2, 4 }, RBLOCK = { 256, 1024 } },
    supports = supports,
    -- the partial rows (G x num_bins ints, stored and read back) at most half the input's elements
    -- (2^17 for the smallest inputs): without a WAVES cap, small blocks at N = 2^26 would need
    -- 131072 rows of 4096 bins, 2 GB (an H200's figures: `valid` sees no device)
    valid = function(case, cfg)
      local p = case.params
      return count_grid(case, cfg, {}) * p.num_bins <= math.max(p.N // 2, 1 << 17)
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local g = count_grid(case, cfg, ctx.props)
      local partials = ctx.empty({ g, p.num_bins }, "int32")
      local count = ctx:kernel("histogramming.cu", "histogramming_cuda", { BLOCK = cfg.BLOCK, UNROLL = cfg.UNROLL })
      local reduce = ctx:kernel("histogramming.cu", "histogramming_reduce", { RBLOCK = cfg.RBLOCK })
      return ctx.plan {
        { fn = count, grid = { g }, block = { cfg.BLOCK }, smem = smem_of(case),
          args = { ins.input, partials, ctx.i64(p.N), ctx.i32(p.num_bins) } },
        { fn = reduce, grid = { ctx.cdiv(p.num_bins, 32) }, block = { cfg.RBLOCK },
          args = { partials, outs.hist, ctx.i32(g), ctx.i32(p.num_bins) } },
      }
    end,
  },
  -- histogramming_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: tl.histogram per program and one atomic add per non-zero bin (METHOD 1), or one atomic add per element into the program's own row of a partials buffer, summed per bin by a second kernel (METHOD 2); METHOD 0 picks 1 up to 256 bins, 2 above",
    -- METHOD 0: tl.histogram's lowering in triton 3.6 (a warp ballot per bit of the bin index,
    -- then a popcount per bin a lane owns) costs about num_bins / 32 x (log2 num_bins + 2) warp
    -- instructions per 32 elements: compute-bound from 64 bins on (H200, 2026-12-02, N = 2^26:
    -- 0.21 ms at 64 bins, 4.76 ms at 4096, against 0.062 ms of memory time), while the atomic
    -- variant's instructions do not depend on num_bins (docs/REDUCTIONS.md)
    default = { METHOD = 0, BLOCK = 4096, PROGRAMS = 2, num_warps = 8 },
    space = { METHOD = { 1, 2 }, BLOCK = { 1024, 2048, 4096, 8192 }, PROGRAMS = { 1, 2, 4 }, num_warps = { 4, 8 } },
    supports = supports,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local programs = math.min(ctx.cdiv(p.N, cfg.BLOCK), (ctx.props.sm_count or 132) * cfg.PROGRAMS)
      local method = cfg.METHOD
      if method == 0 then method = p.num_bins <= 256 and 1 or 2 end
      local file = "histogramming_triton.py"
      if method == 2 then
        -- a row per program: num_bins counts, a spare slot (num_bins) for the uncounted values,
        -- padded to a multiple of 16 ints (16-byte aligned rows for the sum's loads)
        local pitch = (p.num_bins + 1 + 15) // 16 * 16
        local part = ctx.empty({ programs, pitch }, "int32")
        return ctx.plan {
          ctx:triton { file = file, kernel = "histogramming_zero_kernel",
            grid = { ctx.cdiv(programs * pitch, 1024) }, args = { hist = part, num_bins = ctx.i32(programs * pitch) },
            constexprs = { BLOCK = 1024 }, num_warps = 4, num_stages = 1 },
          ctx:triton { file = file, kernel = "histogramming_atomic_kernel", grid = { programs },
            args = { input = ins.input, part = part, n = ctx.i64(p.N), num_bins = ctx.i32(p.num_bins),
                     pitch = ctx.i32(pitch) },
            constexprs = { BLOCK = cfg.BLOCK }, num_warps = cfg.num_warps, num_stages = 1 },
          -- 32 rows x 64 bins a step: 256-byte row segments
          ctx:triton { file = file, kernel = "histogramming_sum_kernel", grid = { ctx.cdiv(p.num_bins, 64) },
            args = { part = part, hist = outs.hist, rows = ctx.i32(programs), num_bins = ctx.i32(p.num_bins),
                     pitch = ctx.i32(pitch) },
            constexprs = { BR = 32, BB = 64 }, num_warps = 4, num_stages = 1 },
        }
      end
      -- NUM_BINS carries the case's bin count (its power of two): the program's private histogram
      -- is a NUM_BINS-wide tl.zeros block and tl.histogram's width, both constexprs in triton, so
      -- each bin count of the grid compiles its own kernel (bench/results/autotune/README.md)
      local nb = 1
      while nb < p.num_bins do nb = nb * 2 end
      return ctx.plan {
        ctx:triton { file = file, kernel = "histogramming_zero_kernel",
          grid = { ctx.cdiv(p.num_bins, 1024) }, args = { hist = outs.hist, num_bins = ctx.i32(p.num_bins) },
          constexprs = { BLOCK = 1024 }, num_warps = 4, num_stages = 1 },
        ctx:triton { file = file, kernel = "histogramming_kernel", grid = { programs },
          args = { input = ins.input, hist = outs.hist, n = ctx.i64(p.N), num_bins = ctx.i32(p.num_bins) },
          constexprs = { BLOCK = cfg.BLOCK, NUM_BINS = nb }, num_warps = cfg.num_warps, num_stages = 1 },
      }
    end,
  },
}

return op
