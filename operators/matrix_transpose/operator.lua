-- matrix_transpose: out = x.T.contiguous() for x (m, n): out (n, m), out[j, i] = x[i, j]
-- (OPERATORS.md 39). A layout operator of its own shape (no family): tiles through shared memory,
-- 16-byte accesses on both sides (matrix_transpose.cu; docs/LAYOUT.md).
local op = {}
op.category = "Data Layout"

local function shape(case) return case.params.m, case.params.n end

function op.inputs(case, ctx)
  local m, n = shape(case)
  if case.dtype == "int8" then return { x = ctx.randint("x", { m, n }, "int8", -64, 65) } end -- [-64, 64]
  return { x = ctx.randn("x", { m, n }, case.dtype) }
end

function op.outputs(case, ins, ctx)
  local m, n = shape(case)
  return { out = ctx.empty({ n, m }, case.dtype) }
end

function op.reference(case, ins, outs, ctx)
  local m, n = shape(case)
  local f = ctx:kernel("matrix_transpose_ref.cu", "matrix_transpose_ref", { DTYPE = ctx.ctype(case.dtype) })
  return ctx.plan { { fn = f, grid = { ctx.cdiv(m * n, 256) }, block = { 256 }, args = { ins.x, outs.out, ctx.i64(m), ctx.i64(n) } } }
end

-- The cuda kernel's tile: TILE_R x TILE_C micro-tiles of VE x VE elements (VE = 16 bytes of the
-- dtype), so TILE_R * VE rows by TILE_C * VE columns of x, in TILE_R * VE * TILE_C * 16 bytes of
-- static shared memory (at most 48 KiB).
local function vec_elems(dtype) return 16 // require("tb.dtype").info[dtype].size end
local function tile_bytes(case, cfg) return cfg.TILE_R * vec_elems(case.dtype) * cfg.TILE_C * 16 end
local MAX_GRID_Y = 65535

op.implementations = {
  cuda = {
    source = "matrix_transpose.cu",
    description = "tiles through shared memory (XOR-swizzled 16-byte words, no bank conflicts), 16-byte loads along x's rows, VExVE micro-tiles transposed in registers, 16-byte stores along out's rows",
    -- 8 x 8 micro-tiles a tile (32 x 32 fp32 .. 128 x 128 int8: 4-16 KiB), a thread a micro-tile:
    -- 12 to 32 blocks an SM, 128-208 KiB of loads in flight an SM (docs/LAYOUT.md)
    default = { BLOCK = 64, TILE_R = 8, TILE_C = 8 },
    space = { BLOCK = { 64, 128, 256 }, TILE_R = { 8, 16 }, TILE_C = { 8, 16 } },
    -- a whole number of micro-tiles a thread, the tile in 48 KiB of static shared memory, at most
    -- 16 chunks (64 registers) of loads a thread
    valid = function(case, cfg)
      local micro = cfg.TILE_R * cfg.TILE_C
      return micro % cfg.BLOCK == 0 and tile_bytes(case, cfg) <= 48 * 1024
        and tile_bytes(case, cfg) // 16 // cfg.BLOCK <= 16
    end,
    -- the row blocks go on the grid's y (at most 65535 of them)
    supports = function(case)
      local m = shape(case)
      return (m + 8 * vec_elems(case.dtype) - 1) // (8 * vec_elems(case.dtype)) <= MAX_GRID_Y
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local m, n = shape(case)
      local ve = vec_elems(case.dtype)
      local tm, tn = cfg.TILE_R * ve, cfg.TILE_C * ve
      if ctx.cdiv(m, tm) > MAX_GRID_Y then
        error(string.format("m = %d needs %d row blocks of %d rows: more than the grid's %d", m, ctx.cdiv(m, tm), tm, MAX_GRID_Y), 0)
      end
      local f = ctx:kernel("matrix_transpose.cu", "matrix_transpose_cuda",
        { DTYPE = ctx.ctype(case.dtype), BLOCK = cfg.BLOCK, TILE_R = cfg.TILE_R, TILE_C = cfg.TILE_C })
      return ctx.plan { { fn = f, grid = { ctx.cdiv(n, tn), ctx.cdiv(m, tm) }, block = { cfg.BLOCK },
                          args = { ins.x, outs.out, ctx.i64(m), ctx.i64(n) } } }
    end,
  },
  -- matrix_transpose_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: a program per (BM, BN) tile, loaded along x's rows, stored along out's rows (layout converted through shared memory)",
    default = { BM = 64, BN = 64, num_warps = 4, num_stages = 1 },
    space = { BM = { 32, 64, 128 }, BN = { 32, 64, 128 }, num_warps = { 4, 8 }, num_stages = { 1 } },
    -- 4 to 64 elements a thread
    valid = function(case, cfg)
      local per_thread = cfg.BM * cfg.BN // (32 * cfg.num_warps)
      return per_thread >= 4 and per_thread <= 64
    end,
    supports = function(case)
      local m = shape(case)
      return (m + 31) // 32 <= MAX_GRID_Y
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local m, n = shape(case)
      if ctx.cdiv(m, cfg.BM) > MAX_GRID_Y then
        error(string.format("m = %d needs %d row blocks of %d rows: more than the grid's %d", m, ctx.cdiv(m, cfg.BM), cfg.BM, MAX_GRID_Y), 0)
      end
      return ctx.plan { ctx:triton { file = "matrix_transpose_triton.py", kernel = "matrix_transpose_kernel",
        grid = { ctx.cdiv(n, cfg.BN), ctx.cdiv(m, cfg.BM) },
        args = { x = ins.x, out = outs.out, m = ctx.i64(m), n = ctx.i64(n) },
        constexprs = { BM = cfg.BM, BN = cfg.BN }, num_warps = cfg.num_warps, num_stages = cfg.num_stages } }
    end,
  },
}

return op
