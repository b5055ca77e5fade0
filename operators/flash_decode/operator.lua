-- flash_decode: flash-decoding's stage 2 only (OPERATORS.md 25), the log-sum-exp-weighted combine
-- of split-KV partial outputs: for each (b, h), nb = ceil(b_seqlen[b] / block_seq), m = max over
-- s < nb of lse[b, h, s], out[b, h, :] = sum_s exp(lse - m) mid_o[b, h, s, :] / (sum_s exp(lse - m)
-- + 1e-10), fp32. Inputs as TileBench's generator: mid_o (batch, heads, num_blocks, head_dim) and
-- mid_o_lse (batch, heads, num_blocks) randn, num_blocks = ceil(seq_len / block_seq), b_seqlen
-- (batch,) int32 filled with seq_len; block_seq is the case's parameter (TileBench: a 0-d CPU
-- tensor). A b_seqlen past num_blocks x block_seq counts only the blocks that exist.
-- Reference: one thread per output element (flash_decode_ref.cu). `cuda`: split-K over the blocks
-- with the combine in the same kernel (flash_decode.cu). `triton`: split and combine kernels.
-- docs/ATTENTION.md.
local op = {}
op.category = "MatMul/Attn"

local function num_blocks(p) return (p.seq_len + p.block_seq - 1) // p.block_seq end
local function cdiv(a, b) return (a + b - 1) // b end

function op.inputs(case, ctx)
  local p = case.params
  local nb = num_blocks(p)
  return { mid_o = ctx.randn("mid_o", { p.batch, p.heads, nb, p.head_dim }, "fp32"),
           mid_o_lse = ctx.randn("mid_o_lse", { p.batch, p.heads, nb }, "fp32"),
           b_seqlen = ctx.full({ p.batch }, "int32", p.seq_len) }
end

function op.outputs(case, ins, ctx)
  local p = case.params
  return { out = ctx.empty({ p.batch, p.heads, p.head_dim }, "fp32") }
end

function op.reference(case, ins, outs, ctx)
  local p = case.params
  local f = ctx:kernel("flash_decode_ref.cu", "flash_decode_ref", {})
  return ctx.plan { { fn = f, grid = { cdiv(p.batch * p.heads * p.head_dim, 128) }, block = { 128 },
    args = { ins.mid_o, ins.mid_o_lse, ins.b_seqlen, outs.out, ctx.i32(p.batch), ctx.i32(p.heads),
             ctx.i32(num_blocks(p)), ctx.i32(p.head_dim), ctx.i32(p.block_seq) } } }
end

-- ---- cuda: the layout of flash_decode.cu (its FD_* macros) ----
local MAXS = 512 -- splits per (b, h) the kernel's combine holds (FD_MAXS)
local function layout(p, cfg)
  local vec = p.head_dim % 4 == 0 and 4 or 1
  local nc = p.head_dim // vec
  local tc = math.min(nc, 32)
  return { vec = vec, nct = cdiv(nc, tc), rl = cfg.BLOCK // tc }
end

-- Blocks per CTA and CTAs per (b, h): PASSES passes of RL x UNROLL rows (PASSES = 0: the whole
-- row, one CTA per (b, h)), at least num_blocks / MAXS.
local function split(p, cfg)
  local nb = num_blocks(p)
  local chunk = cfg.PASSES == 0 and nb or layout(p, cfg).rl * cfg.UNROLL * cfg.PASSES
  chunk = math.max(chunk, cdiv(nb, MAXS), 1)
  return chunk, math.max(1, cdiv(nb, chunk))
end

-- The kernel's static shared memory (bytes): RL x head_dim partial rows, RL (m, l), max(MAXS,
-- RL) weights, MAXS split sums, 32 reduction slots and a flag.
local function static_smem(p, cfg)
  local rl = layout(p, cfg).rl
  return 4 * (rl * p.head_dim + 2 * rl + math.max(MAXS, rl) + MAXS + 32 + 1)
end

op.implementations = {
  cuda = {
    source = "flash_decode.cu",
    description = "split-K over the KV blocks (CTAs of PASSES x RL x UNROLL blocks, every load of a pass issued first, 16-byte loads), fp32 running max / sum statistics; the last CTA of each (b, h) combines the partials (global counter, no second launch)",
    -- BLOCK 256 (8 row lanes at head_dim 128) x UNROLL 4: 32 blocks (16 KB) per CTA in one pass;
    -- num_blocks 320 -> 10 CTAs per (b, h), 160 in all; 16 blocks -> one CTA per (b, h), no combine
    default = { BLOCK = 256, UNROLL = 4, PASSES = 1 },
    space = { BLOCK = { 64, 128, 256, 512 }, UNROLL = { 1, 2, 4, 8 }, PASSES = { 0, 1, 2, 4 } },
    supports = function(case)
      local p = case.params
      if p.head_dim < 1 or p.block_seq < 1 then return false, "head_dim and block_seq must be positive" end
      return true
    end,
    -- a row lane at least; the registers of a pass (UNROLL x NCT vectors plus the accumulators)
    -- at most 128 floats; static shared memory under 48 KB
    valid = function(case, cfg)
      local p = case.params
      local l = layout(p, cfg)
      return l.rl >= 1 and (cfg.UNROLL + 1) * l.nct * l.vec <= 128 and static_smem(p, cfg) <= 48 * 1024
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local chunk, s = split(p, cfg)
      local bh = p.batch * p.heads
      local f = ctx:kernel("flash_decode.cu", "flash_decode_cuda",
        { HEAD_DIM = p.head_dim, BLOCK = cfg.BLOCK, UNROLL = cfg.UNROLL })
      -- partials: S x (head_dim + 2) floats per (b, h) (none needed with S = 1); the counters
      -- start at 0 and the kernel leaves them at 0
      local part = ctx.empty({ s > 1 and bh * s * (p.head_dim + 2) or 1 }, "fp32")
      local count = ctx.full({ bh }, "int32", 0)
      return ctx.plan { { fn = f, grid = { s, bh }, block = { cfg.BLOCK },
        args = { ins.mid_o, ins.mid_o_lse, ins.b_seqlen, outs.out, part, count, ctx.i32(p.heads),
                 ctx.i32(num_blocks(p)), ctx.i32(p.block_seq), ctx.i32(chunk) } } }
    end,
  },
  -- flash_decode_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: split programs of CHUNK blocks ([CHUNK, head_dim] tiles, fp32 max / sum statistics) into partial rows, then a combine program per (b, h)",
    default = { CHUNK = 16, num_warps = 4 },
    space = { CHUNK = { 4, 8, 16, 32, 64 }, num_warps = { 1, 2, 4, 8 } },
    valid = function(case, cfg) -- 1 to 64 tile elements per thread
      local per_thread = cfg.CHUNK * require("oplib").next_pow2(case.params.head_dim) // (32 * cfg.num_warps)
      return per_thread >= 1 and per_thread <= 64
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local nb = num_blocks(p)
      local s, bh = math.max(1, cdiv(nb, cfg.CHUNK)), p.batch * p.heads
      local block_d = require("oplib").next_pow2(p.head_dim)
      local part = ctx.empty({ bh * s * (p.head_dim + 2) }, "fp32")
      return ctx.plan {
        ctx:triton { file = "flash_decode_triton.py", kernel = "flash_decode_split_kernel", grid = { s, bh },
          args = { mid_o = ins.mid_o, lse = ins.mid_o_lse, b_seqlen = ins.b_seqlen, part = part,
                   heads = ctx.i32(p.heads), num_blocks = ctx.i32(nb), block_seq = ctx.i32(p.block_seq),
                   head_dim = ctx.i32(p.head_dim) },
          constexprs = { CHUNK = cfg.CHUNK, BLOCK_D = block_d }, num_warps = cfg.num_warps, num_stages = 1 },
        -- BLOCK_S carries the split count (up to 32): the combine kernel reads the splits' rows as
        -- a BLOCK_S-wide block, a constexpr shape in triton; cases of 32 splits or more share one
        ctx:triton { file = "flash_decode_triton.py", kernel = "flash_decode_combine_kernel", grid = { bh },
          args = { part = part, out = outs.out, head_dim = ctx.i32(p.head_dim), nsplit = ctx.i32(s) },
          constexprs = { BLOCK_S = math.min(32, require("oplib").next_pow2(s)), BLOCK_D = block_d },
          num_warps = 4, num_stages = 1 },
      }
    end,
  },
}

return op
