-- gaussian_blur: "same" cross-correlation of an image x (input_rows x input_cols, flat) with a
-- kernel w (kernel_rows x kernel_cols, flat), zero padding (OPERATORS.md 37):
-- y[r, c] = sum_{i, j} x[r + i - kr // 2, c + j - kc // 2] w[i, j], in the input dtype. The image is
-- randn, the kernel rand in [0, 1) normalised to sum 1 by gaussian_blur_gen.cu. TileBench's cases
-- are square (input_cols = input_rows, not a parameter); a case may give input_cols.
-- Reference: one thread per output, the sum in double (gaussian_blur_ref.cu). `cuda`: by default
-- on the tensor cores, each kernel row a banded matrix applied to shared-memory rows of input
-- (gaussian_blur_mma.cu; fp16 mma.sync, fp32 TF32), a block walking a column strip with its
-- rows in a ring and the next band's loads in flight (PIPE 2 or 3; PIPE = 0: a block a tile);
-- MMA = 0 and shapes the tensor-core kernels do not take: a
-- thread per 16-byte column vector(s) down a strip of rows, each input row loaded once and added
-- into a ring of KR output rows of fp32 accumulators in registers, the horizontal halo by
-- shuffle, weights in shared memory (gaussian_blur.cu). docs/STENCILS.md. `triton`: output
-- tiles, the KR x KC shifted taps as masked loads (gaussian_blur_triton.py).
local op = {}
op.category = "Stencil/Conv"
-- rho's compute ceiling: the dtype's tensor-core rate, as the convolutions' (conv.lua). The
-- formula's 2 x 49 flops an output are a dense 7 x 7 correlation (the kernel is rand, not a
-- Gaussian: no separable shortcut), and at the fp32 FMA rate they would take 170 µs at 10240^2
-- against 92 µs of fp16 memory time; on the tensor cores (gaussian_blur_mma.cu) the same
-- products take a small fraction of the memory time, so the roof of this operator on an H200 is
-- its memory traffic. fp32 is memory-bound under either ceiling (183 µs of traffic).
op.ceiling = "matrix"

local function dims(case)
  local p = case.params
  return p.input_rows, p.input_cols or p.input_rows, p.kernel_rows, p.kernel_cols
end

function op.inputs(case, ctx)
  local r, c, kr, kc = dims(case)
  local ins = { input = ctx.randn("input", { r * c }, case.dtype), kernel = ctx.rand("kernel", { kr * kc }, case.dtype, 0, 1) }
  local gen = ctx:kernel("gaussian_blur_gen.cu", "gaussian_blur_gen", { DTYPE = ctx.ctype(case.dtype) })
  local plan = ctx.plan { { fn = gen, grid = { 1 }, block = { 32 }, args = { ins.kernel, ctx.i32(kr * kc) } } }
  if not ctx.compile_only then plan:run() end -- compile-only contexts only compile the generator
  return ins
end

function op.outputs(case, ins, ctx)
  local r, c = dims(case)
  return { out = ctx.empty({ r * c }, case.dtype) }
end

function op.reference(case, ins, outs, ctx)
  local r, c, kr, kc = dims(case)
  local f = ctx:kernel("gaussian_blur_ref.cu", "gaussian_blur_ref", { DTYPE = ctx.ctype(case.dtype) })
  return ctx.plan { { fn = f, grid = { ctx.cdiv(r * c, 256) }, block = { 256 },
                      args = { ins.input, ins.kernel, outs.out, ctx.i32(r), ctx.i32(c), ctx.i32(kr), ctx.i32(kc) } } }
end

-- Elements a thread: VPT 16-byte vectors (VPT = 0: two for fp32, one for 2-byte dtypes, whose 16
-- elements a thread take 250+ registers), fewer where cols is not a multiple, one element where
-- cols is not a multiple of a vector (every row then starts unaligned).
local function rx(case, cfg)
  local _, cols = dims(case)
  local size = require("tb.dtype").info[case.dtype].size
  local vw = 16 // size
  local vpt = cfg.VPT > 0 and cfg.VPT or (size >= 4 and 2 or 1)
  if cols % (vw * vpt) == 0 then return vw * vpt end
  return cols % vw == 0 and vw or 1
end

-- Rows a block walks: ROWS, or with ROWS = 0 about two waves of resident blocks (about 384
-- threads an SM: the kernel takes 128-244 registers), 8 to 256 rows: each strip re-reads
-- kernel_rows - 1 rows of its neighbours.
local function rows_per(case, cfg, gx, props)
  local rows = dims(case)
  local r = cfg.ROWS
  if r == 0 then
    local resident = (props.sm_count or 132) * math.max(1, 384 // cfg.BX)
    r = math.max(8, math.min(256, (rows * gx + 2 * resident - 1) // (2 * resident)))
  end
  return math.max(r, (rows + 65534) // 65535)
end

-- The tensor-core kernel (gaussian_blur_mma.cu, MMA = 1): a tile of 16 BX / 32 rows x 8 NB
-- columns a block. It takes kernels whose columns reach at most 4 either side (kernel_cols <= 9)
-- and rows of whole 16-byte chunks; other cases run the register kernel (gaussian_blur.cu).
local MMA_MAX_ROWS_GRID = 65535
local function mma_fits(case, cfg)
  local rows, cols, kr, kc = dims(case)
  local size = require("tb.dtype").info[case.dtype].size
  local tr = 16 * (cfg.BX // 32)
  return kc // 2 <= 4 and kc - 1 - kc // 2 <= 4 and cols % (16 // size) == 0
    and (rows + tr - 1) // tr <= MMA_MAX_ROWS_GRID
end
-- Its static shared memory (bytes), as gaussian_blur_mma.cu sizes it: the input tile (rows of
-- an odd number of 16-byte units) or the output tile, whichever is larger; at most 48 KiB.
local function mma_smem(case, cfg)
  local _, _, kr = dims(case)
  local es = require("tb.dtype").info[case.dtype].size
  local w, tr = 8 * cfg.NB, 16 * (cfg.BX // 32)
  local ip16 = (w + 16) * es // 16
  if ip16 % 2 == 0 then ip16 = ip16 + 1 end
  return math.max((tr + kr - 1) * ip16 * 16, tr * (w + 8) * es)
end

-- The pipelined tensor-core kernel (gaussian_blur_mma.cu with PIPE = 1 and STAGES = cfg.PIPE,
-- gaussian_blur_pipe): its dynamic shared memory, the ring of PIPE TR + KR - 1 input rows (the
-- pitch as above) and each warp's 8 staged output rows of W + 8 elements.
local function pipe_smem(case, cfg)
  local _, _, kr = dims(case)
  local es = require("tb.dtype").info[case.dtype].size
  local w, tr = 8 * cfg.NB, 16 * (cfg.BX // 32)
  local ip16 = (w + 16) * es // 16
  if ip16 % 2 == 0 then ip16 = ip16 + 1 end
  return (cfg.PIPE * tr + kr - 1) * ip16 * 16 + (cfg.BX // 32) * 8 * (w + 8) * es
end
local PIPE_SMEM_MAX = 227 * 1024 -- sm_90's opt-in limit a block
-- Bands (TR rows) a block walks: SEGB, or with SEGB = 0 the column strips split into as many
-- segments as keep every block resident at once (one wave: blocks an SM by shared memory and by
-- registers, 128 a thread assumed), at least one band each; each segment re-reads KR - 1 rows.
local function pipe_segb(case, cfg, gx, props)
  local rows = dims(case)
  local tr = 16 * (cfg.BX // 32)
  local bands = (rows + tr - 1) // tr
  local segb = cfg.SEGB
  if segb == 0 then
    local smem = pipe_smem(case, cfg)
    local per_sm = math.min((props.smem_per_sm or 233472) // (smem + 1024), 65536 // (cfg.BX * 128))
    local segs = math.max(1, math.min(bands, (props.sm_count or 132) * math.max(1, per_sm) // gx))
    segb = (bands + segs - 1) // segs
  end
  return math.max(segb, (bands + MMA_MAX_ROWS_GRID - 1) // MMA_MAX_ROWS_GRID), bands
end

op.implementations = {
  cuda = {
    source = "gaussian_blur_mma.cu", -- the default's kernel (gaussian_blur.cu: MMA = 0 and the shapes it does not take)
    description = "MMA = 1: tensor cores (fp16 mma.sync m16n8k16, fp32 TF32 m16n8k8, fp32 accumulators), each kernel row a banded matrix, input rows in shared memory by cp.async (PIPE 2/3: a block walks a column strip, a ring of rows, PIPE - 1 bands of loads in flight; PIPE 0: a tile a block); MMA = 0: a thread per 16-byte column vector(s) down a row strip, a register ring of kernel_rows output rows (fp32 FMA)",
    default = { MMA = 1, PIPE = 2, SEGB = 0, NB = 16, BX = 128, VPT = 0, ROWS = 0, MINB = 0 },
    -- MINB 1: ptxas keeps fp16 at one vector a thread unspilled (208 registers against
    -- 168 and one 4-byte spill an iteration, but 8 warps an SM against 12): the search decides
    space = { MMA = { 0, 1 }, NB = { 8, 16 }, BX = { 32, 64, 128, 256 }, VPT = { 0, 1, 2 },
              ROWS = { 0, 16, 32, 64, 128, 256 }, MINB = { 0, 1 },
              -- PIPE 2 or 3 (with MMA = 1): the column-strip walker with PIPE - 1 row groups in
              -- flight (its STAGES), SEGB bands a block (0: one wave of blocks; 3: segment edges
              -- inside small images; 64: long walks, the ring wrapping many times)
              PIPE = { 0, 2, 3 }, SEGB = { 0, 3, 64 } },
    -- the ring holds kernel_rows x RX accumulators a thread, the halo must come from one warp
    supports = function(case)
      local _, _, kr, kc = dims(case)
      if kr > 15 or kc > 15 then
        return false, string.format("a %d x %d kernel: the register ring takes at most 15 x 15", kr, kc)
      end
      return true
    end,
    -- Each kernel's own parameters only: MMA = 1 takes NB and BX (VPT, ROWS, MINB at 0), with
    -- PIPE 2 or 3 also SEGB and its ring within the opt-in shared memory, with PIPE = 0 (SEGB at
    -- 0) a tile within static shared memory; MMA = 0 takes BX, VPT, ROWS, MINB (NB at 16, PIPE
    -- and SEGB at 0). 2-byte dtypes at two vectors a thread spill (ptxas, sm_90); BX a whole
    -- number of warps.
    valid = function(case, cfg)
      local size = require("tb.dtype").info[case.dtype].size
      if cfg.BX % 32 ~= 0 then return false end
      if cfg.PIPE > 0 then
        return cfg.PIPE >= 2 and cfg.MMA == 1 and cfg.VPT == 0 and cfg.ROWS == 0 and cfg.MINB == 0
          and pipe_smem(case, cfg) <= PIPE_SMEM_MAX
      end
      if cfg.SEGB ~= 0 then return false end -- the pipelined kernel's
      if cfg.MMA == 1 then
        return cfg.VPT == 0 and cfg.ROWS == 0 and cfg.MINB == 0 and mma_smem(case, cfg) <= 48 * 1024
      end
      return cfg.NB == 16 and not (cfg.VPT == 2 and size < 4)
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols, kr, kc = dims(case)
      local pipe = cfg.MMA == 1 and cfg.PIPE >= 2 and mma_fits(case, cfg) and pipe_smem(case, cfg) <= PIPE_SMEM_MAX
      local gx, segb, bands
      if pipe then
        gx = ctx.cdiv(cols, 8 * cfg.NB)
        segb, bands = pipe_segb(case, cfg, gx, ctx.props)
        -- One band a block (SEGB = 0 on an image of fewer bands than resident blocks) has nothing
        -- to overlap: the one-tile kernel does the same work in less shared memory (fp32 4 blocks
        -- an SM instead of 2), so it runs instead where it fits.
        pipe = not (cfg.SEGB == 0 and segb == 1 and mma_smem(case, cfg) <= 48 * 1024)
      end
      if pipe then
        local f = ctx:kernel("gaussian_blur_mma.cu", "gaussian_blur_pipe",
                             { DTYPE = ctx.ctype(case.dtype), KR = kr, KC = kc, BX = cfg.BX, NB = cfg.NB, PIPE = 1,
                               STAGES = cfg.PIPE })
        return ctx.plan { { fn = f, grid = { gx, ctx.cdiv(bands, segb) }, block = { cfg.BX }, smem = pipe_smem(case, cfg),
                            args = { ins.input, ins.kernel, outs.out, ctx.i32(rows), ctx.i32(cols), ctx.i32(segb) } } }
      end
      if cfg.MMA == 1 and mma_fits(case, cfg) and mma_smem(case, cfg) <= 48 * 1024 then
        local w, tr = 8 * cfg.NB, 16 * (cfg.BX // 32)
        local f = ctx:kernel("gaussian_blur_mma.cu", "gaussian_blur_mma",
                             { DTYPE = ctx.ctype(case.dtype), KR = kr, KC = kc, BX = cfg.BX, NB = cfg.NB })
        return ctx.plan { { fn = f, grid = { ctx.cdiv(cols, w), ctx.cdiv(rows, tr) }, block = { cfg.BX },
                            args = { ins.input, ins.kernel, outs.out, ctx.i32(rows), ctx.i32(cols) } } }
      end
      local n = rx(case, cfg)
      local gx = ctx.cdiv(cols, cfg.BX * n)
      local per = rows_per(case, cfg, gx, ctx.props)
      local f = ctx:kernel("gaussian_blur.cu", "gaussian_blur",
                           { DTYPE = ctx.ctype(case.dtype), RX = n, BX = cfg.BX, KR = kr, KC = kc, MINB = cfg.MINB })
      return ctx.plan { { fn = f, grid = { gx, ctx.cdiv(rows, per) }, block = { cfg.BX },
                          args = { ins.input, ins.kernel, outs.out, ctx.i32(rows), ctx.i32(cols), ctx.i32(per) } } }
    end,
  },
  -- gaussian_blur_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: a program per BR x BC output tile, the kernel_rows x kernel_cols taps as shifted masked loads (L1/L2 hits), fp32 sums",
    default = { BR = 8, BC = 128, num_warps = 4 },
    space = { BR = { 4, 8, 16, 32 }, BC = { 64, 128, 256 }, num_warps = { 2, 4, 8 } },
    -- 2 to 32 outputs a thread
    valid = function(case, cfg)
      local per_thread = cfg.BR * cfg.BC // (32 * cfg.num_warps)
      return per_thread >= 2 and per_thread <= 32
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols, kr, kc = dims(case)
      return ctx.plan { ctx:triton { file = "gaussian_blur_triton.py", kernel = "gaussian_blur_kernel",
        grid = { ctx.cdiv(cols, cfg.BC), ctx.cdiv(rows, cfg.BR) },
        args = { x = ins.input, w = ins.kernel, out = outs.out, rows = ctx.i32(rows), cols = ctx.i32(cols) },
        constexprs = { KR = kr, KC = kc, BR = cfg.BR, BC = cfg.BC }, num_warps = cfg.num_warps, num_stages = 1 } }
    end,
  },
}

return op
