-- dequantize_rowwise: out[r, c] = fp16((state_x[r] * x[r, c]) * (1 / 127)) over an int8 (rows,
-- cols) x and an fp32 scale per row: PyTorch eager's two fp32 products (int8 promoted by the
-- scale, then the constant 1.0 / 127.0 as fp32), rounded once to fp16. Point-wise over the
-- rows * cols elements with dequantize_rowwise.cu's own vector (tb_pointwise_ops: 16 int8 in two
-- pieces of 8, each one 8-byte load and one 16-byte store of fp16 at warp-contiguous addresses).
local oplib = require("oplib")

local op = {}
op.category = "Point-wise"

function op.inputs(case, ctx)
  local rows, cols = case.params.rows, case.params.cols
  return { x = ctx.randint("x", { rows, cols }, "int8", -128, 127),  -- torch.randint(-128, 127)
           state_x = ctx.rand("state_x", { rows }, "fp32", 0, 10) }   -- torch.rand(rows) * 10
end

function op.outputs(case, ins, ctx)
  return { out = ctx.empty({ case.params.rows, case.params.cols }, "fp16") }
end

local function args(ins, outs, n, ctx, case)
  return { ins.x, ins.state_x, outs.out, ctx.i64(n), ctx.i64(case.params.cols) }
end

-- Default: BLOCK 256, UNROLL 1, one vector (16 bytes of int8, 32 of fp16) a thread, 4096
-- elements a block: the geometry of the Triton kernel measured at 1.09 of the ceiling on the
-- H200 (a program per 4096 columns, 8 warps); the family's 256 x 4 gave the 512 x 512 case 16
-- blocks for 132 SMs.
local reference, cuda = oplib.pointwise {
  name = "dequantize_rowwise",
  count = function(case) return case.params.rows * case.params.cols end,
  args = args,
  default = { BLOCK = 256, UNROLL = 1, WAVES = 0 },
}
op.reference = reference

-- Triton: a program per BLOCK columns of one row (grid columns x rows), the row's scale loaded
-- once. BLOCK = 0: min(4096, the row's next power of two); WARPS = 0: 16 elements (one 16-byte
-- load) per thread, 1 to 8 warps.
local function triton_block(cols, cfg)
  if cfg.BLOCK > 0 then return cfg.BLOCK end
  return math.min(4096, oplib.next_pow2(cols))
end
local function triton_warps(block, cfg)
  if cfg.WARPS > 0 then return cfg.WARPS end
  return math.max(1, math.min(8, block // 512))
end

op.implementations = {
  cuda = cuda,
  -- dequantize_rowwise_triton.py: Triton, compiled ahead of time (selected with --impl triton)
  triton = {
    description = "Triton: a program per BLOCK columns of a row, the row's scale loaded once",
    default = { BLOCK = 0, WARPS = 0, num_stages = 1 },
    space = { BLOCK = { 0, 512, 1024, 2048, 4096, 8192 }, WARPS = { 0, 1, 2, 4, 8 }, num_stages = { 1 } },
    -- one to four 16-byte vectors of int8 per thread, and no block wider than the row needs
    valid = function(case, cfg)
      local cols = case.params.cols
      local block = triton_block(cols, cfg)
      local per_thread = block // (32 * triton_warps(block, cfg))
      return per_thread >= 16 and per_thread <= 64 and block <= oplib.next_pow2(cols)
    end,
    plan = function(case, ins, outs, cfg, ctx)
      local rows, cols = case.params.rows, case.params.cols
      local block = triton_block(cols, cfg)
      return ctx.plan { ctx:triton { file = "dequantize_rowwise_triton.py", kernel = "dequantize_rowwise_kernel",
        grid = { ctx.cdiv(cols, block), rows },
        args = { x = ins.x, state_x = ins.state_x, out = outs.out, cols = ctx.i32(cols) },
        constexprs = { BLOCK = block }, num_warps = triton_warps(block, cfg), num_stages = cfg.num_stages } }
    end,
  },
}

return op
