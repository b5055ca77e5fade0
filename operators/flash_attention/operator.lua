-- flash_attention: O = softmax(Q K^T / sqrt(D) + causal mask) V per (b, h) (OPERATORS.md 24):
-- q, k, v, out (B, H, S, D) fp16 contiguous, randn; causal lets query i attend keys j <= i (S_q =
-- S_k); fp32 accumulation, no dropout, no GQA, no logsumexp output. TileBench's reference is
-- F.scaled_dot_product_attention(q, k, v, is_causal=True) (the `torch` implementation here).
-- Reference: a warp per query row, fp32 online softmax (flash_attention_ref.cu). `cuda`: on
-- sm_90, a FlashAttention-3-style forward on wgmma and TMA (flash_attention_wgmma.cu, VARIANT
-- wgmma); anywhere sm_80+, the FlashAttention-2-style forward on mma.sync m16n8k16
-- (flash_attention.cu, VARIANT mma). `triton`: the FlashAttention-2 algorithm with tl.dot.
-- `lib`: cuDNN 9's fused flash attention through its backend (graph) API (tb.dnn.sdpa,
-- host/gpu/cuda_dnn_sdpa.c), the engine cuDNN chose in the row's note. docs/ATTENTION.md.
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

-- VARIANT wgmma (flash_attention_wgmma.cu): its dynamic shared memory, as the kernel's FW_SMEM:
-- 1024 bytes of alignment slack, the Q tile (128 rows), STAGES slots of K and of V (BN rows each),
-- the mbarriers; rows of DP = 64 or 128 columns (head_dim rounded up: TMA fills the rest with 0).
local function wgmma_dp(d) return d <= 64 and 64 or 128 end
local function wgmma_smem(d, cfg)
  local dp = wgmma_dp(d)
  return 1024 + 128 * dp * 2 + 2 * cfg.STAGES * cfg.BN * dp * 2 + 8 * (1 + 4 * cfg.STAGES)
end
local SMEM_OPTIN = 232448 -- the H200's opt-in shared memory per block
local DEFAULT = { VARIANT = "auto", BN = 128, STAGES = 3, OVERLAP = 0, WARPS = 8 }

-- VARIANT auto (the default): wgmma on sm_90 (it needs wgmma and TMA: sm_90a), mma
-- on any other device, with the default's BN, STAGES and WARPS.
local function resolve(cfg, ctx)
  if cfg.VARIANT ~= "auto" then return cfg end
  local props = ctx.props or {}
  local r = {}
  for k, v in pairs(cfg) do r[k] = v end
  r.VARIANT = (props.cc_major == 9 and (props.cc_minor or 0) == 0) and "wgmma" or "mma"
  return r
end

local function plan_mma(p, ins, outs, cfg, ctx)
  local bm = 16 * cfg.WARPS
  local f = ctx:kernel("flash_attention.cu", "flash_attention_cuda", { HEAD_DIM = p.head_dim, WARPS = cfg.WARPS })
  return ctx.plan { { fn = f, grid = { cdiv(p.seq_len, bm), p.batch_size * p.n_heads }, block = { 32 * cfg.WARPS },
    smem = (bm + 4 * 64) * (p.head_dim + 8) * 2,
    args = { ins.q, ins.k, ins.v, outs.out, ctx.i32(p.seq_len), ctx.i32(causal(p)),
             ctx.f32(LOG2E / math.sqrt(p.head_dim)) } } }
end

local function plan_wgmma(p, ins, outs, cfg, ctx)
  local props = ctx.props or {}
  if props.cc_major and not (props.cc_major == 9 and (props.cc_minor or 0) == 0) then
    error(string.format("VARIANT=wgmma needs an sm_90 GPU (wgmma and TMA: sm_90a); this device is sm_%d%d: VARIANT=mma runs on sm_80+",
      props.cc_major, props.cc_minor or 0), 0)
  end
  local d, bh = p.head_dim, p.batch_size * p.n_heads
  -- 3-D maps (head column, row, b h), boxes of 64 columns (128 bytes, the swizzle's span) x rows;
  -- columns past head_dim and rows past seq_len arrive as zeros
  local function map(t, rows)
    return ctx.tensormap(t, { dims = { d, p.seq_len, bh }, strides = { d * 2, p.seq_len * d * 2 },
                              box = { 64, rows, 1 }, swizzle = 128 })
  end
  local f = ctx:kernel("flash_attention_wgmma.cu", "flash_attention_wgmma",
                       { HEAD_DIM = d, BN = cfg.BN, STAGES = cfg.STAGES, OVERLAP = cfg.OVERLAP },
                       { "--gpu-architecture=sm_90a" })
  return ctx.plan { { fn = f, grid = { cdiv(p.seq_len, 128), bh }, block = { 384 }, smem = wgmma_smem(d, cfg),
    args = { outs.out, ctx.i32(p.seq_len), ctx.i32(causal(p)), ctx.f32(LOG2E / math.sqrt(d)),
             map(ins.q, 128), map(ins.k, cfg.BN), map(ins.v, cfg.BN) } } }
end

op.implementations = {
  lib = lib,
  cuda = {
    -- the default's kernel on sm_90 (the file a candidate replaces); VARIANT mma reads flash_attention.cu
    source = "flash_attention_wgmma.cu",
    description = "sm_90 (VARIANT wgmma): FlashAttention-3-style forward, a TMA producer warpgroup and two consumer warpgroups of 64 query rows, K/V ring of STAGES slots with mbarriers, S = Q K^T and O += P V on wgmma (P from registers), online softmax (exp2, folded scale) under the other warpgroup's products (OVERLAP 1: also under its own previous P V), causal tiles skipped and the diagonal masked; elsewhere (VARIANT mma): FlashAttention-2-style forward on mma.sync m16n8k16, 16 query rows a warp, cp.async double-buffered key tiles of 64",
    -- auto: wgmma (BN 128, 3 slots: 225 KB of shared memory at head_dim 128, no OVERLAP) on
    -- sm_90, mma (8 warps: each K/V tile serves 128 query rows) elsewhere
    default = DEFAULT,
    space = { VARIANT = { "wgmma", "mma" }, BN = { 64, 128 }, STAGES = { 2, 3, 4 }, OVERLAP = { 0, 1 },
              WARPS = { 4, 8 } },
    supports = supports,
    -- each variant varies only its own keys (mma: WARPS; wgmma: BN, STAGES, OVERLAP), the others
    -- at the default's values; wgmma's ring within the shared memory a block may opt into, and
    -- OVERLAP where its registers fit (not BN 128 with head_dim > 64: ptxas spills at 168)
    valid = function(case, cfg)
      if cfg.VARIANT == "mma" then
        return cfg.BN == DEFAULT.BN and cfg.STAGES == DEFAULT.STAGES and cfg.OVERLAP == DEFAULT.OVERLAP
      end
      if cfg.VARIANT == "wgmma" then
        local d = case.params.head_dim
        return cfg.WARPS == DEFAULT.WARPS and wgmma_smem(d, cfg) <= SMEM_OPTIN
          and (cfg.OVERLAP == 0 or cfg.BN == 64 or wgmma_dp(d) == 64)
      end
      return cfg.VARIANT == "auto"
    end,
    plan = function(case, ins, outs, cfg, ctx)
      cfg = resolve(cfg, ctx)
      if cfg.VARIANT == "wgmma" then return plan_wgmma(case.params, ins, outs, cfg, ctx) end
      if cfg.VARIANT == "mma" then return plan_mma(case.params, ins, outs, cfg, ctx) end
      error(string.format("VARIANT=%s: wgmma, mma or auto", tostring(cfg.VARIANT)), 0)
    end,
  },
  -- flash_attention_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: FlashAttention-2-style forward, [BM, D] query tiles over key tiles of BN with tl.dot (wgmma), online softmax in fp32 (log2 domain, scale folded into one FFMA), causal tiles skipped, the mask only on the diagonal tiles",
    -- BN 128 (was 64 until session 9): the accumulator's rescale and the row statistics once per
    -- 128 keys; 255 registers, no spills (ptxas, sm_90a), one CTA an SM either way; 3 stages of
    -- K and V tiles (224 KiB with the Q tile) keep two tiles in flight for that one CTA
    default = { BM = 128, BN = 128, num_warps = 8, num_stages = 3 },
    space = { BM = { 64, 128 }, BN = { 32, 64, 128 }, num_warps = { 4, 8 }, num_stages = { 1, 2, 3 } },
    supports = supports,
    -- scores within 128 fp32 a thread; the Q tile and num_stages K and V tiles (fp16) within the
    -- 227 KiB a block may have
    valid = function(case, cfg)
      local d = case.params.head_dim
      return cfg.BM * cfg.BN // (32 * cfg.num_warps) <= 128
        and (cfg.BM * d + cfg.num_stages * 2 * cfg.BN * d) * 2 <= 227 * 1024
    end,
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
