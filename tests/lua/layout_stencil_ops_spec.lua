-- Issue 18's interleave and gaussian_blur (operators/<name>/operator.lua): the kernels and launch
-- shapes their `cuda` plans ask for, with a stand-in ctx (no GPU, no compile). Their kernels are
-- checked on a GPU by tests/gpu/operators_cpu_check.lua (cpu_check/layout.lua, stencil.lua) and
-- compiled here by the compile_<name> tests.
local opmod = require("tilebench.operator")

local function fake_ctx()
  local c = { kernels = {} }
  c.ctype = function(d) return require("tb.dtype").info[d].c_type end
  c.dtype_size = function(d) return require("tb.dtype").info[d].size end
  c.cdiv = function(a, b) return (a + b - 1) // b end
  c.props = { sm_count = 132, max_threads_per_sm = 2048 }
  c.plan = function(steps) return steps end
  c.i32 = function(v) return { i32 = v } end
  c.i64 = function(v) return { i64 = v } end
  c.kernel = function(_, file, name, defines)
    c.kernels[#c.kernels + 1] = { file = file, name = name, defines = defines }
    return name
  end
  return c
end

describe("interleave cuda", function()
  local op = opmod.load("interleave")
  local spec = op.module.implementations.cuda
  local ins, outs = { A = "A", B = "B" }, { out = "out" }
  it("passes HALF and sizes the grid by its vector: 16 bytes of each input, or 8 with HALF = 1", function()
    local case = { dtype = "fp16", params = { n = 1000000 } }
    local ctx = fake_ctx()
    local p = spec.plan(case, ins, outs, spec.default, ctx)
    assert.equal("interleave.cu", ctx.kernels[1].file)
    assert.equal(0, ctx.kernels[1].defines.HALF)
    assert.same({ 1000000 // (128 * 2 * 8) + 1 }, p[1].grid) -- 8 pairs a vector, 256 vectors a block
    local half = { BLOCK = 128, UNROLL = 2, WAVES = 0, HALF = 1 }
    p = spec.plan(case, ins, outs, half, ctx)
    assert.equal(1, ctx.kernels[2].defines.HALF)
    assert.same({ 1000000 // (128 * 2 * 4) + 1 }, p[1].grid) -- 4 pairs a vector
    assert.same({ 128 }, p[1].block)
    assert.same({ "A", "B", "out", { i64 = 1000000 } }, p[1].args)
  end)
  it("declares HALF in its space beside the point-wise family's", function()
    assert.same({ 0, 1 }, spec.space.HALF)
    assert.same({ 128, 256, 512, 1024 }, spec.space.BLOCK)
  end)
end)

describe("gaussian_blur cuda", function()
  local op = opmod.load("gaussian_blur")
  local spec = op.module.implementations.cuda
  local ins, outs = { input = "x", kernel = "w" }, { out = "y" }
  local function case(dtype, rows, cols, kr, kc)
    return { dtype = dtype, params = { input_rows = rows, input_cols = cols, kernel_rows = kr or 7, kernel_cols = kc or 7 } }
  end
  it("measures rho against the tensor-core rate, as the convolutions", function()
    assert.equal("matrix", op.module.ceiling)
  end)
  local function cfg(t)
    local out = { MMA = 1, PIPE = 0, SEGB = 0, NB = 16, BX = 128, VPT = 0, ROWS = 0, MINB = 0 }
    for k, v in pairs(t) do out[k] = v end
    return out
  end
  it("runs the grid's cases on the pipelined tensor-core kernel: column strips of 8 NB, bands of 16 BX / 32 rows", function()
    -- 10240 rows are 160 bands of 64; one wave of blocks: fp16 48.3 KiB of shared memory a block,
    -- four an SM, 528 resident, 6 segments of each of the 80 strips (27 bands); fp32 96.7 KB, two
    -- an SM, 264 resident, 3 segments (54 bands)
    for dtype, want in pairs({ fp16 = { smem = 49440, segb = 27, gy = 6 }, fp32 = { smem = 96736, segb = 54, gy = 3 } }) do
      local ctx = fake_ctx()
      ctx.props.smem_per_sm = 233472
      local p = spec.plan(case(dtype, 10240, 10240), ins, outs, spec.default, ctx)
      assert.equal("gaussian_blur_mma.cu", ctx.kernels[1].file)
      assert.equal("gaussian_blur_pipe", ctx.kernels[1].name)
      assert.same({ KR = 7, KC = 7, BX = 128, NB = 16, PIPE = 1, STAGES = 2, DTYPE = ctx.ctype(dtype) },
                  ctx.kernels[1].defines)
      assert.same({ { 80, want.gy }, { 128 }, want.smem }, { p[1].grid, p[1].block, p[1].smem })
      assert.same({ "x", "w", "y", { i32 = 10240 }, { i32 = 10240 }, { i32 = want.segb } }, p[1].args)
    end
    for _, dtype in ipairs({ "fp16", "fp32" }) do -- 512 rows: one band a block, the one-tile kernel
      local ctx = fake_ctx()
      spec.plan(case(dtype, 512, 512), ins, outs, spec.default, ctx)
      assert.equal("gaussian_blur_mma", ctx.kernels[1].name)
      spec.plan(case(dtype, 512, 512), ins, outs, cfg { PIPE = 2, SEGB = 3 }, ctx)
      assert.equal("gaussian_blur_pipe", ctx.kernels[2].name)
    end
    local ctx = fake_ctx() -- SEGB given: that many bands a block, the last segment partial
    local p = spec.plan(case("fp16", 1000, 520), ins, outs, cfg { PIPE = 3, SEGB = 3, BX = 64 }, ctx)
    assert.same({ { 5, 11 }, { 64 }, { i32 = 3 } }, { p[1].grid, p[1].block, p[1].args[6] }) -- 32 rows a band: 32 bands
    assert.equal(3, ctx.kernels[1].defines.STAGES)
  end)
  it("keeps the one-tile tensor-core kernel with PIPE = 0: 16 BX / 32 rows x 8 NB columns a block", function()
    for _, dtype in ipairs({ "fp16", "fp32" }) do
      local ctx = fake_ctx()
      local p = spec.plan(case(dtype, 10240, 10240), ins, outs, cfg {}, ctx)
      assert.equal("gaussian_blur_mma", ctx.kernels[1].name)
      assert.same({ KR = 7, KC = 7, BX = 128, NB = 16, DTYPE = ctx.ctype(dtype) }, ctx.kernels[1].defines)
      assert.same({ { 80, 160 }, { 128 } }, { p[1].grid, p[1].block })
      assert.same({ "x", "w", "y", { i32 = 10240 }, { i32 = 10240 } }, p[1].args)
    end
  end)
  it("sends rows that are not whole 16-byte chunks and kernels wider than 9 to the register kernel", function()
    for _, c in ipairs({ case("fp16", 37, 1004), case("fp32", 37, 1002), case("fp16", 64, 64, 5, 11) }) do
      local ctx = fake_ctx()
      spec.plan(c, ins, outs, spec.default, ctx)
      assert.equal("gaussian_blur.cu", ctx.kernels[1].file)
    end
    local ctx = fake_ctx() -- fp32 rows of 4 elements a chunk: 1004 columns are whole chunks
    spec.plan(case("fp32", 37, 1004), ins, outs, spec.default, ctx)
    assert.equal("gaussian_blur_mma.cu", ctx.kernels[1].file)
  end)
  it("keeps each kernel's own parameters apart and the tile within 48 KiB of static shared memory", function()
    local c16, c32 = case("fp16", 512, 512), case("fp32", 512, 512)
    assert.is_true(spec.valid(c16, cfg {}))
    assert.is_false(spec.valid(c16, cfg { ROWS = 16 }))   -- the register kernel's
    assert.is_true(spec.valid(c16, cfg { BX = 256 }))     -- 134 rows x 304 bytes
    assert.is_false(spec.valid(c32, cfg { BX = 256 }))    -- 134 rows x 592 bytes
    assert.is_true(spec.valid(c32, cfg { BX = 256, NB = 8 }))
    assert.is_true(spec.valid(c16, cfg { MMA = 0, ROWS = 16 }))
    assert.is_false(spec.valid(c16, cfg { MMA = 0, NB = 8 })) -- NB is the tensor-core kernel's
    -- SEGB is the pipelined kernel's; it is a tensor-core kernel, its ring within
    -- the 227 KiB a block may opt in to
    assert.is_false(spec.valid(c16, cfg { SEGB = 3 }))
    assert.is_false(spec.valid(c16, cfg { MMA = 0, PIPE = 2 }))
    assert.is_false(spec.valid(c16, cfg { PIPE = 2, ROWS = 16 }))
    assert.is_true(spec.valid(c16, cfg { PIPE = 3, SEGB = 64 }))
    assert.is_true(spec.valid(c32, cfg { PIPE = 2, BX = 256 }))  -- 262 rows x 592 bytes + 8 x 8 staged rows
    assert.is_false(spec.valid(c32, cfg { PIPE = 3, BX = 256 })) -- 390 rows x 592 bytes
    -- the default is the pipelined kernel
    assert.equal(2, spec.default.PIPE)
    assert.is_true(spec.valid(c16, spec.default) and spec.valid(c32, spec.default))
  end)
end)
