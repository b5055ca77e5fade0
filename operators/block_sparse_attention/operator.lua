-- block_sparse_attention: causal block-sparse attention with GQA (OPERATORS.md 26): q (B, H, M, D),
-- k and v (B, H_kv, M, D), out (B, H, M, D), fp16 contiguous, randn; query head h reads kv head
-- h // (H / H_kv); key n is admissible for query m iff n <= m and key block (m // BLOCK_M,
-- n // BLOCK_N) is listed in the CSR layout; out = softmax over the admissible keys of
-- q . k / sqrt(D) applied to v, fp32 accumulation. The layout is an input built here, the same for
-- every case of a shape: row block r lists key blocks max(0, r - 2) .. r (TileBench's generator;
-- num_layout = 1: every head uses it), layout_crow (num_rows + 1) int32 row pointers, layout_col
-- (num_rows * num_cols) int32 column indices, zero-padded past the last row's end. TileBench passes
-- its scalars (strides, softmax_scale, EVEN_M, ...) beside the tensors; here they come from the case.
-- Reference: a warp per query row, fp32 online softmax (block_sparse_attention_ref.cu). `cuda`:
-- flash_attention's FlashAttention-2 forward on mma.sync, walking only the listed key blocks,
-- several heads of a kv group a CTA (block_sparse_attention.cu). `triton`: the same walk with
-- tl.dot, several heads of a kv group a program. `torch`: SDPA with the boolean mask of the layout
-- (TileBench's reference is torch.compile(flex_attention) with a BlockMask). docs/ATTENTION.md.
local op = {}
op.category = "MatMul/Attn"

local function cdiv(a, b) return (a + b - 1) // b end

-- the layout's dimensions: row blocks of BLOCK_M queries, column blocks of BLOCK_N keys
local function layout_dims(p) return cdiv(p.M, p.BLOCK_M), cdiv(p.M, p.BLOCK_N) end

-- TileBench's layout: row block r lists key blocks max(0, r - 2) .. r (those that exist, in order)
local function layout(p)
  local rows, cols = layout_dims(p)
  local crow, col = { 0 }, {}
  for r = 0, rows - 1 do
    for c = math.max(0, r - 2), math.min(r, cols - 1) do col[#col + 1] = c end
    crow[r + 2] = #col
  end
  for i = #col + 1, rows * cols do col[i] = 0 end
  return crow, col
end
op.layout = layout -- the CPU check reads the same rule from OPERATORS.md, not from here

function op.inputs(case, ctx)
  local p = case.params
  local rows, cols = layout_dims(p)
  local crow, col = layout(p)
  return { q = ctx.randn("q", { p.B, p.H, p.M, p.D }, "fp16"),
           k = ctx.randn("k", { p.B, p.H_kv, p.M, p.D }, "fp16"),
           v = ctx.randn("v", { p.B, p.H_kv, p.M, p.D }, "fp16"),
           layout_crow = ctx.from_table(crow, "int32", { rows + 1 }),
           layout_col = ctx.from_table(col, "int32", { rows * cols }) }
end

function op.outputs(case, ins, ctx)
  local p = case.params
  return { out = ctx.empty({ p.B, p.H, p.M, p.D }, "fp16") }
end

function op.reference(case, ins, outs, ctx)
  local p = case.params
  local f = ctx:kernel("block_sparse_attention_ref.cu", "block_sparse_attention_ref", {})
  return ctx.plan { { fn = f, grid = { cdiv(p.B * p.H * p.M, 8) }, block = { 256 },
    args = { ins.q, ins.k, ins.v, outs.out, ins.layout_crow, ins.layout_col, ctx.i32(p.B), ctx.i32(p.H),
             ctx.i32(p.H_kv), ctx.i32(p.M), ctx.i32(p.D), ctx.i32(p.BLOCK_M), ctx.i32(p.BLOCK_N),
             ctx.f32(1 / math.sqrt(p.D)) } } }
end

local LOG2E = 1.4426950408889634

local function shape_ok(p)
  if p.H % p.H_kv ~= 0 then
    return false, string.format("H = %d is not a multiple of H_kv = %d (GQA groups)", p.H, p.H_kv)
  end
  if p.BLOCK_M % 16 ~= 0 then
    return false, string.format("BLOCK_M = %d: the kernels take multiples of 16 (the grid's is 64)", p.BLOCK_M)
  end
  return true
end

local function supports_cuda(case)
  local p = case.params
  local ok, why = shape_ok(p)
  if not ok then return false, why end
  if p.D % 16 ~= 0 or p.D > 128 then
    return false, string.format("D = %d: the kernel takes multiples of 16 up to 128 (the grid's is 128)", p.D)
  end
  local bn = p.BLOCK_N
  if not (bn == 16 or bn == 32 or bn % 64 == 0) then
    return false, string.format("BLOCK_N = %d: the kernel takes 16, 32 or multiples of 64 (the grid's is 64)", bn)
  end
  return true
end

local function pow2(x) return x >= 16 and x & (x - 1) == 0 end

local function supports_triton(case)
  local p = case.params
  local ok, why = shape_ok(p)
  if not ok then return false, why end
  if not (pow2(p.D) and p.D <= 256) or not pow2(p.BLOCK_N) then
    return false, string.format("D = %d, BLOCK_N = %d: the Triton kernel takes powers of two from 16 (tl.dot, tl.arange)",
                                p.D, p.BLOCK_N)
  end
  return true
end

-- What the cuda kernel runs with at a case: HPC heads a CTA must divide the GQA group H / H_kv and
-- 16 WM rows must divide BLOCK_M (a CTA stays in one layout row); a configuration that does not fit
-- runs with the largest halving that does (the default at small shapes), and `valid` drops it
-- from the search (it would repeat another candidate).
local function resolve(p, cfg)
  local hpc, wm = cfg.HPC, cfg.WM
  while hpc > 1 and (p.H // p.H_kv) % hpc ~= 0 do hpc = hpc // 2 end
  while wm > 1 and p.BLOCK_M % (16 * wm) ~= 0 do wm = wm // 2 end
  return hpc, wm
end

local function smem_bytes(p, hpc, wm) return (16 * wm * hpc + 4 * math.min(p.BLOCK_N, 64)) * (p.D + 8) * 2 end

-- What the triton kernel runs with at a case: BM halved until it divides BLOCK_M (a tile stays in
-- one layout row), HPC until it divides the GQA group (as resolve)
local function triton_resolve(p, cfg)
  local bm, hpc = cfg.BM, cfg.HPC
  while bm > 16 and p.BLOCK_M % bm ~= 0 do bm = bm // 2 end
  while hpc > 1 and (p.H // p.H_kv) % hpc ~= 0 do hpc = hpc // 2 end
  return bm, hpc
end

op.implementations = {
  cuda = {
    source = "block_sparse_attention.cu",
    description = "FlashAttention-2-style forward over the CSR-listed key blocks only: HPC heads of a kv group x 16 WM rows of one layout row a CTA (K/V tiles shared by the group's heads), key tiles by cp.async (double-buffered, padded rows), mma.sync m16n8k16 fp16 with fp32 accumulators, online softmax in the log2 domain, the diagonal tile's products cut at each warp's last row",
    -- one head x 64 rows (a whole layout row block), 4 warps: 216 registers and 87 KB of shared
    -- memory a CTA let 2 CTAs share an SM, so one's loads overlap the other's products (8 warps
    -- with HPC 2 need 200 registers x 256 threads: one CTA an SM)
    default = { WM = 4, HPC = 1 },
    space = { WM = { 1, 2, 4 }, HPC = { 1, 2, 4 } },
    supports = supports_cuda,
    valid = function(case, cfg)
      local p = case.params
      local hpc, wm = resolve(p, cfg)
      -- 2 to 8 warps: at 8, 255 registers a thread fit; a lone warp spills (ptxas, sm_90)
      return hpc == cfg.HPC and wm == cfg.WM and cfg.HPC * cfg.WM <= 8 and cfg.HPC * cfg.WM >= 2
        and smem_bytes(p, hpc, wm) <= 227 * 1024
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local hpc, wm = resolve(p, cfg)
      local f = ctx:kernel("block_sparse_attention.cu", "block_sparse_attention_cuda",
                           { HEAD_DIM = p.D, WM = wm, HPC = hpc, BN = math.min(p.BLOCK_N, 64) })
      return ctx.plan { { fn = f, grid = { cdiv(p.M, 16 * wm), p.B * p.H // hpc }, block = { 32 * wm * hpc },
        smem = smem_bytes(p, hpc, wm),
        args = { ins.q, ins.k, ins.v, outs.out, ins.layout_crow, ins.layout_col, ctx.i32(p.M), ctx.i32(p.H),
                 ctx.i32(p.H_kv), ctx.i32(p.BLOCK_M), ctx.i32(p.BLOCK_N), ctx.f32(LOG2E / math.sqrt(p.D)) } } }
    end,
  },
  -- block_sparse_attention_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: FlashAttention-2-style forward over the CSR-listed key blocks, HPC heads of a kv group x BM rows of one layout row a program (K/V tiles shared by the group's heads), tl.dot, online softmax in fp32 (log2 domain)",
    -- 2 heads x 64 rows, 8 warps: each K/V tile serves 128 query rows; 64 accumulator floats a thread
    default = { BM = 64, HPC = 2, num_warps = 8, num_stages = 2 },
    space = { BM = { 32, 64 }, HPC = { 1, 2, 4 }, num_warps = { 4, 8 }, num_stages = { 1, 2, 3 } },
    supports = supports_triton,
    valid = function(case, cfg)
      local p = case.params
      local bm, hpc = triton_resolve(p, cfg)
      local rows, threads = cfg.HPC * cfg.BM, 32 * cfg.num_warps
      -- the score tile and the accumulators at most 128 floats a thread each
      return bm == cfg.BM and hpc == cfg.HPC and rows * p.BLOCK_N // threads <= 128 and rows * p.D // threads <= 128
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = case.params
      local bm, hpc = triton_resolve(p, cfg)
      return ctx.plan { ctx:triton { file = "block_sparse_attention_triton.py", kernel = "block_sparse_attention_kernel",
        grid = { cdiv(p.M, bm), p.B * p.H // hpc },
        args = { Q = ins.q, K = ins.k, V = ins.v, O = outs.out, row_ptr = ins.layout_crow, col_idx = ins.layout_col,
                 M = ctx.i32(p.M), H = ctx.i32(p.H), H_kv = ctx.i32(p.H_kv), scale_log2 = ctx.f32(LOG2E / math.sqrt(p.D)) },
        constexprs = { HEAD_DIM = p.D, BM = bm, HPC = hpc, BLOCK_M = p.BLOCK_M, BLOCK_N = p.BLOCK_N },
        num_warps = cfg.num_warps, num_stages = cfg.num_stages } }
    end,
  },
}

return op
