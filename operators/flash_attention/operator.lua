-- flash_attention: O = softmax(Q K^T / sqrt(D) + causal mask) V per (b, h) (OPERATORS.md 24):
-- q, k, v, out (B, H, S, D) fp16 contiguous, randn; causal lets query i attend keys j <= i (S_q =
-- S_k); fp32 accumulation, no dropout, no GQA, no logsumexp output. TileBench's reference is
-- F.scaled_dot_product_attention(q, k, v, is_causal=True) (the `torch` implementation here).
-- Reference: a warp per query row, fp32 online softmax (flash_attention_ref.cu). `cuda`: a
-- FlashAttention-2-style forward on mma.sync m16n8k16 (flash_attention.cu). `triton`: the same
-- algorithm with tl.dot. `lib`: cuDNN 9's fused flash attention through its backend (graph) API
-- (tb.dnn.sdpa, host/gpu/cuda_dnn_sdpa.c), the engine cuDNN chose in the row's note. docs/ATTENTION.md.
local op = {}
op.category = "MatMul/Attn"

local function cdiv(a, b) return (a + b - 1) // b end
local function shape(p) return { p.batch_size, p.n_heads, p.seq_len, p.head_dim } end
local function causal(p) return (p.causal == nil or p.causal == true or p.causal == 1) and 1 or 0 end

function op.inputs(case, ctx)
  local p = case.params
  return { q = ctx.randn("q", shape(p), "fp16"), k = ctx.randn("k", shape(p), "fp16"),
           v = ctx.randn("v", shape(p), "fp16") }
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty(shape(case.params), "fp16") }
end

function op.reference(case, ins, outs, ctx)
  local p = case.params
  local rows = p.batch_size * p.n_heads * p.seq_len
  local f = ctx:kernel("flash_attention_ref.cu", "flash_attention_ref", {})
  return ctx.plan { { fn = f, grid = { cdiv(rows, 8) }, block = { 256 },
    args = { ins.q, ins.k, ins.v, outs.out, ctx.i32(p.batch_size * p.n_heads), ctx.i32(p.seq_len),
             ctx.i32(p.head_dim), ctx.i32(causal(p)), ctx.f32(1 / math.sqrt(p.head_dim)) } } }
end

local LOG2E = 1.4426950408889634

local function supports(case)
  local d = case.params.head_dim
  if d % 16 ~= 0 or d > 128 then
    return false, string.format("head_dim = %d: the kernels take multiples of 16 up to 128 (the grid's is 128)", d)
  end
  return true
end

-- cuDNN's attention graph for the case: q, k, v, out are (B, H, S, D) contiguous, cuDNN's BHSD
-- layout as they are (host/gpu/cuda_dnn_sdpa.c hands k to the first product as K^T by strides).
local function dnn_spec(case, bufs)
  local p = case.params
  local spec = { scale = 1 / math.sqrt(p.head_dim), causal = causal(p) == 1 }
  if bufs then
    spec.q, spec.k, spec.v, spec.o = bufs.q, bufs.k, bufs.v, bufs.out
  else
    spec.b, spec.h, spec.s, spec.d, spec.dtype = p.batch_size, p.n_heads, p.seq_len, p.head_dim, "fp16"
  end
  return spec
end

local lib = {
  description = "cuDNN 9's fused flash attention (backend API): Q K^T, scale, causal mask (GEN_INDEX, CMP_GE, BINARY_SELECT), softmax (max, exp, sum, virtual statistics), P V as one operation graph; the heuristic's first engine that builds",
}

-- unsupported (with cuDNN's reason) where cuDNN cannot be opened or used or offers no engine for
-- the case (head dimensions or lengths its fused kernels do not take); the engine it chose is the
-- plan's note (dnnlib.lua)
function lib.supports(case)
  return require("dnnlib").supports(function(dnn) return dnn.sdpa(dnn_spec(case)) end)
end

function lib.plan(case, ins, outs, cfg, ctx)
  local bufs = { q = ins.q, k = ins.k, v = ins.v, out = outs.out }
  return require("dnnlib").plan(ctx, require("tb.dnn").sdpa(dnn_spec(case, bufs)))
end

op.implementations = {
  lib = lib,
  cuda = {
    source = "flash_attention.cu",
    description = "FlashAttention-2-style forward: 16 query rows a warp, key tiles of 64 by cp.async (double-buffered, padded rows), mma.sync m16n8k16 fp16 with fp32 accumulators, online softmax in the log2 domain, P to fp16 straight from the accumulators, causal tiles skipped and the diagonal masked, longest rows first",
    -- 8 warps (128 query rows a CTA): each K/V tile serves twice the rows of 4 warps
    default = { WARPS = 8 },
    space = { WARPS = { 4, 8 } },
    supports = supports,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local bm = 16 * cfg.WARPS
      local f = ctx:kernel("flash_attention.cu", "flash_attention_cuda", { HEAD_DIM = p.head_dim, WARPS = cfg.WARPS })
      return ctx.plan { { fn = f, grid = { cdiv(p.seq_len, bm), p.batch_size * p.n_heads }, block = { 32 * cfg.WARPS },
        smem = (bm + 4 * 64) * (p.head_dim + 8) * 2,
        args = { ins.q, ins.k, ins.v, outs.out, ctx.i32(p.seq_len), ctx.i32(causal(p)),
                 ctx.f32(LOG2E / math.sqrt(p.head_dim)) } } }
    end,
  },
  -- flash_attention_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: FlashAttention-2-style forward, [BM, D] query tiles over key tiles of BN with tl.dot, online softmax in fp32 (log2 domain), causal tiles skipped",
    default = { BM = 128, BN = 64, num_warps = 8, num_stages = 2 },
    space = { BM = { 64, 128 }, BN = { 32, 64, 128 }, num_warps = { 4, 8 }, num_stages = { 1, 2, 3 } },
    supports = supports,
    valid = function(case, cfg) return cfg.BM * cfg.BN // (32 * cfg.num_warps) <= 128 end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      return ctx.plan { ctx:triton { file = "flash_attention_triton.py", kernel = "flash_attention_kernel",
        grid = { cdiv(p.seq_len, cfg.BM), p.batch_size * p.n_heads },
        args = { Q = ins.q, K = ins.k, V = ins.v, O = outs.out, S = ctx.i32(p.seq_len),
                 scale_log2 = ctx.f32(LOG2E / math.sqrt(p.head_dim)) },
        constexprs = { HEAD_DIM = p.head_dim, BM = cfg.BM, BN = cfg.BN, CAUSAL = causal(p) },
        num_warps = cfg.num_warps, num_stages = cfg.num_stages } }
    end,
  },
}

return op
