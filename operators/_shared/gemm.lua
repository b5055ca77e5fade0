-- gemm.lua (operators/_shared; `require("gemm")`): plans shared by the matmul operators
-- (matmul_fp32_fp16_fp8, batched_matmul): the reference, the `cuda` kernels (gemm_wgmma.cu,
-- gemm_mma.cu) and the cuBLASLt `lib` baseline, for row-major C (M, N) = A (M, K) @ B (K, N),
-- batched with dense strides. Its kernels (gemm_wgmma.cu, gemm_mma.cu, matmul_ref.cu) live beside
-- it and are named without a folder: ctx:kernel looks in the operator's folder, then here.
local dtypes = require("tb.dtype")

local M = {}

local DT = { fp32 = 0, fp16 = 1, bf16 = 2, fp8_e4m3 = 3, int8 = 4 }
-- gemm_wgmma.cu's OUT where it differs from DT: int8 products are int32 (matmul_int8)
local OUT_DT = { int32 = 4 }
local SMEM_OPTIN = 232448 -- H100/H200 per-block limit; the plan checks ctx.props when it has it

-- The canonical dtype name (tb.dtype's aliases: float8_e4m3fn -> fp8_e4m3); unknown names pass.
function M.canon(dtype)
  return dtypes.aliases[dtype] or dtype
end

local function dt_id(dtype)
  local id = DT[M.canon(dtype)]
  if not id then error("matmul: unsupported dtype " .. tostring(dtype), 2) end
  return id
end

-- Shared memory of a gemm_wgmma configuration (dynamic, includes 1 KiB for alignment; the
-- warp-specialized one adds 1 KiB for its 2 * STAGES mbarriers).
local PERSISTENT = { ws = true, tma = true, pp = true, sk = true }
function M.wgmma_smem(cfg)
  return cfg.STAGES * (16384 + cfg.BN * 128) + (PERSISTENT[cfg.VARIANT] and 2048 or 1024)
end
function M.mma_smem(cfg) return cfg.STAGES * (128 * 40 + 32 * 136) * 2 end

local function smem_limit(ctx) return (ctx.props and ctx.props.smem_per_block_optin) or SMEM_OPTIN end

-- p = {M, N, K, batch, dtype}
function M.reference(p, a, b, c, ctx)
  local id = dt_id(p.dtype)
  local f = ctx:kernel("matmul_ref.cu", "matmul_ref", { IN_DT = id, OUT_DT = id })
  return ctx.plan{ { fn = f, grid = { ctx.cdiv(p.N, 16), ctx.cdiv(p.M, 16), p.batch }, block = { 16, 16 },
                     args = { a, b, c, ctx.i32(p.M), ctx.i32(p.N), ctx.i32(p.K),
                              ctx.i64(p.M * p.K), ctx.i64(p.K * p.N), ctx.i64(p.M * p.N) } } }
end

-- A step writing B^T (N, K) per batch entry into a new tensor; returns step, tensor.
local function transpose_step(p, b, ctx)
  local dtype = M.canon(p.dtype)
  local bt = ctx.empty({ p.batch * p.N * p.K }, dtype)
  local f = ctx:kernel("matmul_ref.cu", "transpose", { ELEM_BYTES = ctx.dtype_size(dtype) })
  return { fn = f, grid = { ctx.cdiv(p.N, 32), ctx.cdiv(p.K, 32), p.batch }, block = { 32, 8 },
           args = { b, bt, ctx.i32(p.K), ctx.i32(p.N) } }, bt
end

-- Producer warpgroups of gemm_wgmma_ws: 3 for BN = 128 (bytes in flight grow with the copying
-- warps), 1 for BN = 256 (its 128 accumulators per thread fit only under 384 threads' cap).
-- cfg.PRODUCERS overrides (experiments).
function M.ws_producers(cfg) return cfg.PRODUCERS or (cfg.BN > 128 and 1 or 3) end

-- The `cuda` implementation. p may add out (the output dtype where it is not the input's: int32
-- for int8), b_kmajor (true: b holds B^T (N, K) already, no transpose step) and pre (steps that
-- run first: matmul_int8's unpack of B).
-- cfg = {VARIANT = "tma"|"pp"|"sk"|"wgmma"|"wgmma2"|"ws"|"mma", BN, STAGES [, SK]}: "sk" is
-- gemm_streamk (gemm_tma under the Stream-K schedule of streamk_split, cfg.SK 1 or 2); "tma" is gemm_tma (warp-specialized, persistent, TMA loads, both consumer warpgroups on each
-- tile), "pp" the same with PINGPONG (each consumer warpgroup on its own tiles), "wgmma" gemm_wgmma, "wgmma2" the
-- same kernel built for two CTAs per SM, "ws" gemm_wgmma_ws (warp-specialized, persistent,
-- cp.async loads), "mma" gemm_mma.
function M.valid(p, cfg, ctx)
  local dtype = M.canon(p.dtype)
  if cfg.VARIANT == "mma" then
    return (dtype == "fp16" or dtype == "bf16") and cfg.BN == 128
      and M.mma_smem(cfg) <= (ctx and smem_limit(ctx) or SMEM_OPTIN)
  end
  if cfg.VARIANT == "ws" and cfg.STAGES < M.ws_producers(cfg) then return false end
  if (cfg.VARIANT == "tma" or cfg.VARIANT == "pp") and (cfg.BN < 128 or p.M < 1 or p.N < 1 or p.K < 1) then
    return false
  end
  if cfg.VARIANT == "pp" and cfg.BN ~= 128 then return false end
  -- Stream-K: cfg.SK picks the split (streamk_split); the other variants take SK = 1 only, so a
  -- space with SK has no duplicates. Its fix-up adds fp32 partials: not int8.
  if cfg.SK and cfg.VARIANT ~= "sk" and cfg.SK ~= 1 then return false end
  if cfg.VARIANT == "sk" and (dtype == "int8" or cfg.BN < 128 or p.M < 1 or p.N < 1 or p.K < 1) then
    return false
  end
  -- two CTAs per SM: 128 registers (BN = 128 only) and two STAGES = 3 rings in one SM's 228 KiB
  if cfg.VARIANT == "wgmma2" and (cfg.BN ~= 128 or cfg.STAGES ~= 3) then return false end
  return M.wgmma_smem(cfg) <= (ctx and smem_limit(ctx) or SMEM_OPTIN)
end

-- 16-byte rows: K and N multiples of 16 bytes' worth of elements (every grid case is).
function M.supports(p)
  local per16 = 16 // dtypes.info[M.canon(p.dtype)].size
  return p.K % per16 == 0 and p.N % 8 == 0 and p.N % per16 == 0
end

-- The Stream-K schedule of VARIANT=sk (gemm_streamk) and of streamk_matmul's Triton kernel, for
-- T tiles of KT K-tiles each on G SMs, mode 1 or 2 (cfg.SK): returns sk_tiles (the leading tiles whose
-- K-loops are shared out evenly over the grid, as one run of K-tiles) and the grid. The other
-- tiles go data-parallel, a tile per CTA per wave. With T tiles and G SMs:
--   T a multiple of G: no stream-K (whole waves already);
--   T < G: every tile stream-K over min(G, T * KT) CTAs (each about T / G of a tile);
--   SK = 1: the remainder T % G stream-K (each CTA about (T % G)/G of a tile, then T // G tiles);
--   SK = 2: the remainder plus one whole wave, T % G + G (the Stream-K paper's "two-tile" hybrid:
--           each CTA's stream-K share is more than one tile, fewer partial tiles per CTA).
function M.streamk_split(tiles, kt, sms, mode)
  if tiles % sms == 0 then return 0, math.min(tiles, sms) end
  if tiles < sms then return tiles, math.min(sms, tiles * kt) end
  local sk = tiles % sms
  if mode == 2 then sk = math.min(tiles, sk + sms) end
  return sk, sms
end

-- SMALL = 1 (the defaults): a problem of one wave of 128 x 128 tiles or less runs the
-- non-persistent gemm_wgmma (BN 128, 5 stages) instead. With a tile per CTA the persistent
-- kernels have nothing to overlap, and (probably the larger part) their first TMA waits for the
-- tensor map, which the eviction before every run leaves in DRAM: batched 32 x 256^3 fp16 8.9 us with pp against
-- 8.1 with wgmma, 32 x 32^3 3.4 against 2.7 (H200, 2026-11-29).
M.SMALL_CONFIG = { VARIANT = "wgmma", BN = 128, STAGES = 5 }
function M.resolve(p, cfg, ctx)
  if cfg.SMALL ~= 1 then return cfg end
  local sms = (ctx and ctx.props and ctx.props.sm_count) or 132
  if ((p.M + 127) // 128) * ((p.N + 127) // 128) * p.batch <= sms then return M.SMALL_CONFIG end
  return cfg
end

function M.cuda_plan(p, a, b, c, cfg, ctx)
  cfg = M.resolve(p, cfg, ctx)
  local id = dt_id(p.dtype)
  local tail = { ctx.i32(p.M), ctx.i32(p.N), ctx.i32(p.K),
                 ctx.i64(p.M * p.K), ctx.i64(p.K * p.N), ctx.i64(p.M * p.N) }
  if cfg.VARIANT == "mma" then
    if id ~= 1 and id ~= 2 then error("VARIANT=mma computes fp16 and bf16 only", 0) end
    local f = ctx:kernel("gemm_mma.cu", "gemm_mma", { DT = id, STAGES = cfg.STAGES })
    return ctx.plan{ { fn = f, grid = { ctx.cdiv(p.N, 128), ctx.cdiv(p.M, 128), p.batch }, block = { 256 },
                       smem = M.mma_smem(cfg), args = { a, b, c, table.unpack(tail) } } }
  end
  local steps, bsrc = { table.unpack(p.pre or {}) }, b
  local kmajor = (id == 0 or id == 3 or id == 4) and 1 or 0 -- tf32, fp8, int8 wgmma read B only K-major
  if kmajor == 1 and not p.b_kmajor then -- p.b_kmajor: b already holds B^T (N, K)
    local step, bt = transpose_step(p, b, ctx)
    steps[#steps + 1], bsrc = step, bt
  end
  local defines = { DT = id, OUT = p.out and OUT_DT[p.out] or id, BN = cfg.BN, STAGES = cfg.STAGES,
                    B_KMAJOR = kmajor }
  if cfg.VARIANT == "ws" then
    -- persistent: at most one CTA per SM, each looping over tiles (cfg.CTAS, fewer: tests only)
    local producers = M.ws_producers(cfg)
    defines.WS, defines.WS_PRODUCERS = 1, producers
    local f = ctx:kernel("gemm_wgmma.cu", "gemm_wgmma_ws", defines, { "--gpu-architecture=sm_90a" })
    local tiles = ctx.cdiv(p.M, 128) * ctx.cdiv(p.N, cfg.BN) * p.batch
    local sms = cfg.CTAS or (ctx.props and ctx.props.sm_count) or 132
    local args = { a, bsrc, c, table.unpack(tail) }
    args[#args + 1] = ctx.i32(p.batch)
    steps[#steps + 1] = { fn = f, grid = { math.min(tiles, sms) }, block = { 128 * (producers + 2) },
                          smem = M.wgmma_smem(cfg), args = args }
    return ctx.plan(steps)
  end
  if cfg.VARIANT == "tma" or cfg.VARIANT == "pp" or cfg.VARIANT == "sk" then
    -- 3-D tensor maps (inner, rows, batch entry) over A and B, boxes of 128 bytes x rows
    local esz = ctx.dtype_size(p.dtype)
    local bk = 128 // esz
    local mapA = ctx.tensormap(a, { dims = { p.K, p.M, p.batch }, strides = { p.K * esz, p.M * p.K * esz },
                                    box = { bk, 128, 1 }, swizzle = 128 })
    local mapB
    if kmajor == 1 then -- B^T (N, K)
      mapB = ctx.tensormap(bsrc, { dims = { p.K, p.N, p.batch }, strides = { p.K * esz, p.N * p.K * esz },
                                   box = { bk, cfg.BN, 1 }, swizzle = 128 })
    else -- B (K, N): boxes of 64 columns x 64 k-rows
      mapB = ctx.tensormap(bsrc, { dims = { p.N, p.K, p.batch }, strides = { p.N * esz, p.K * p.N * esz },
                                   box = { bk, bk, 1 }, swizzle = 128 })
    end
    defines.TMA = 1
    if cfg.VARIANT == "pp" then defines.PINGPONG = 1 end
    if cfg.VARIANT == "sk" then defines.STREAMK = 1 end
    local f = ctx:kernel("gemm_wgmma.cu", cfg.VARIANT == "sk" and "gemm_streamk" or "gemm_tma", defines,
                         { "--gpu-architecture=sm_90a" })
    local tiles = ctx.cdiv(p.M, 128) * ctx.cdiv(p.N, cfg.BN) * p.batch
    local sms = cfg.CTAS or (ctx.props and ctx.props.sm_count) or 132
    local args = { a, bsrc, c, table.unpack(tail) }
    args[#args + 1] = ctx.i32(p.batch)
    args[#args + 1] = mapA
    args[#args + 1] = mapB
    local grid = math.min(tiles, sms)
    if cfg.VARIANT == "sk" then
      local sk
      sk, grid = M.streamk_split(tiles, ctx.cdiv(p.K, bk), sms, cfg.SK)
      -- the fix-up's fp32 partial sums and per-tile counts, zeroed once here; the kernel leaves
      -- them zeroed after every run
      args[#args + 1] = ctx.full({ math.max(1, sk) * 128 * cfg.BN }, "fp32", 0)
      args[#args + 1] = ctx.full({ math.max(1, sk) }, "int32", 0)
      args[#args + 1] = ctx.i32(sk)
    end
    steps[#steps + 1] = { fn = f, grid = { grid }, block = { 384 },
                          smem = M.wgmma_smem(cfg), args = args }
    return ctx.plan(steps)
  end
  if cfg.VARIANT == "wgmma2" then defines.MIN_BLOCKS = 2 end
  local f = ctx:kernel("gemm_wgmma.cu", "gemm_wgmma", defines, { "--gpu-architecture=sm_90a" })
  steps[#steps + 1] = { fn = f, grid = { ctx.cdiv(p.N, cfg.BN), ctx.cdiv(p.M, 128), p.batch }, block = { 256 },
                        smem = M.wgmma_smem(cfg), args = { a, bsrc, c, table.unpack(tail) } }
  return ctx.plan(steps)
end

-- The cuBLASLt baseline. fp32 runs as TF32 (allow_tf32 = True in the benchmark); fp8 is
-- torch._scaled_mm(a, b column-major, unit scales, out_dtype=bf16).to(float8_e4m3fn): B is
-- transposed to (N, K) (cuBLASLt runs fp8 only as TN), the matmul writes bf16, a cast kernel
-- rounds to e4m3 -- three steps, all timed.
function M.lib_plan(p, a, b, c, ctx, opts)
  opts = opts or {}
  local blas = require("tb.blas")
  local dtype = M.canon(p.dtype)
  local spec = { a = a, b = b, c = c, m = p.M, n = p.N, k = p.K, batch = p.batch, layout = "row",
                 algo_index = opts.algo_index }
  if dtype == "fp32" then spec.compute = "tf32" end
  if dtype ~= "fp8_e4m3" then
    return ctx.plan{ { call = blas.matmul(spec) } }
  end
  local tstep, bt = transpose_step(p, b, ctx)
  local cbf = ctx.empty({ p.batch * p.M * p.N }, "bf16")
  spec.b, spec.c, spec.b_transposed = bt, cbf, true
  spec.fp8 = { fast_accum = opts.fast_accum == true, out_dtype = "bf16" }
  local cast = ctx:kernel("matmul_ref.cu", "cast", { IN_DT = 2, OUT_DT = 3 })
  local n = p.batch * p.M * p.N
  return ctx.plan{ tstep, { call = blas.matmul(spec) },
                   { fn = cast, grid = { math.min(ctx.cdiv(n, 256), 132 * 16) }, block = { 256 },
                     args = { cbf, c, ctx.i64(n) } } }
end

M.space = { VARIANT = { "tma", "pp", "wgmma", "wgmma2", "ws", "mma" }, BN = { 128, 256 }, STAGES = { 3, 4, 5, 6 } }

-- The `triton` implementation (gemm_triton.py beside this file): problem(case) -> {M, N, K,
-- batch, dtype}; names = {a =, b =, c =} the operator's tensor names. A grid of
-- cdiv(M, BM) * cdiv(N, BN) tiles by batch. fp8 writes through bf16 (the reference's rounding).
-- The defaults are triton's matmul tutorial's Hopper choices; BN = 0 and BK = 0 pick by dtype
-- (TRITON_AUTO: fp32 tiles half as wide and half as deep, so three stages fit in shared memory;
-- one-byte fp8 twice as deep).
M.TRITON_SPACE = { BM = { 64, 128 }, BN = { 64, 128, 256 }, BK = { 32, 64, 128 }, GROUP_M = { 8 },
                   num_warps = { 4, 8 }, num_stages = { 3, 4, 5 } }
M.TRITON_AUTO = { fp32 = { BN = 128, BK = 32 }, fp16 = { BN = 256, BK = 64 }, bf16 = { BN = 256, BK = 64 },
                  fp8_e4m3 = { BN = 256, BK = 128 } }

local function triton_tiles(p, cfg)
  local auto = M.TRITON_AUTO[p.dtype] or M.TRITON_AUTO.fp16
  return cfg.BM, cfg.BN > 0 and cfg.BN or auto.BN, cfg.BK > 0 and cfg.BK or auto.BK
end

function M.triton(problem, names, default)
  local function copy(t)
    local o = {}
    for k, v in pairs(t) do o[k] = type(v) == "table" and copy(v) or v end
    return o
  end
  return {
    source = "gemm_triton.py",
    description = "Triton: BM x BN tiles, BK steps through tl.dot (wgmma), pipelined loads, grouped tile order",
    default = copy(default),
    space = copy(M.TRITON_SPACE),
    -- shared memory of the pipelined A and B tiles within the H200's 227 KiB; a tile of at most
    -- 128 x 256 fp32 accumulators per 4 warps' worth of registers
    valid = function(case, cfg)
      local p = problem(case)
      local bm, bn, bk = triton_tiles(p, cfg)
      local size = require("tb.dtype").info[p.dtype].size
      local smem = (bm * bk + bk * bn) * size * cfg.num_stages
      return smem <= 227 * 1024 and bm * bn // (32 * cfg.num_warps) <= 256
    end,
    supports = function(case) return M.supports(problem(case)) end,
    plan = function(case, ins, outs, cfg, ctx)
      local p = problem(case)
      local bm, bn, bk = triton_tiles(p, cfg)
      local grid = { ctx.cdiv(p.M, bm) * ctx.cdiv(p.N, bn), p.batch }
      -- TF32 and fp8 read B^T (N, K), written by a transpose step inside the timed plan, as the
      -- cuda implementation's kernels do (gemm_triton.py, B_KMAJOR)
      local dtype = M.canon(p.dtype)
      local kmajor = dtype == "fp32" or dtype == "fp8_e4m3"
      local steps, b = {}, ins[names.b]
      if kmajor then
        local tstep, bt = transpose_step(p, b, ctx)
        steps[1], b = tstep, bt
      end
      steps[#steps + 1] = ctx:triton { file = "gemm_triton.py", kernel = "gemm_kernel", grid = grid,
        args = { a = ins[names.a], b = b, c = outs[names.c], M = ctx.i32(p.M), N = ctx.i32(p.N),
                 K = ctx.i32(p.K), stride_a = ctx.i64(p.M * p.K), stride_b = ctx.i64(p.K * p.N),
                 stride_c = ctx.i64(p.M * p.N) },
        constexprs = { BM = bm, BN = bn, BK = bk, GROUP_M = cfg.GROUP_M,
                       EVEN_K = p.K % bk == 0, OUT_VIA_BF16 = p.dtype == "fp8_e4m3", B_KMAJOR = kmajor },
        num_warps = cfg.num_warps, num_stages = cfg.num_stages }
      return ctx.plan(steps)
    end,
  }
end

return M
