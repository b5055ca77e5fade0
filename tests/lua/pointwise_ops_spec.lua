-- Issue 16's point-wise operators (operators/<name>/operator.lua): what their inputs and plans
-- ask for, with a stand-in ctx (no GPU, no compile). Their kernels are checked on a GPU by
-- tests/gpu/operators_cpu_check.lua and compiled here by the compile_<name> tests.
local opmod = require("tilebench.operator")

-- A ctx that records generator calls and kernel requests and returns plans as plain tables.
local function fake_ctx()
  local c = { calls = {}, kernels = {} }
  local function gen(kind)
    return function(name, shape, dtype, a, b)
      c.calls[name] = { kind = kind, shape = shape, dtype = dtype, a = a, b = b }
      return { name = name, dtype = dtype, shape = shape }
    end
  end
  c.randn, c.rand, c.randint = gen("randn"), gen("rand"), gen("randint")
  c.empty = function(shape, dtype) return { dtype = dtype, shape = shape } end
  c.ctype = function(d) return require("tb.dtype").info[d].c_type end
  c.dtype_size = function(d) return require("tb.dtype").info[d].size end
  c.cdiv = function(a, b) return (a + b - 1) // b end
  c.props = { sm_count = 132, max_threads_per_sm = 2048 }
  c.plan = function(steps) return steps end
  c.i32 = function(v) return { i32 = v } end
  c.i64 = function(v) return { i64 = v } end
  c.f32 = function(v) return { f32 = v } end
  c.kernel = function(_, file, name, defines)
    c.kernels[#c.kernels + 1] = { file = file, name = name, defines = defines }
    return name
  end
  return c
end

describe("dropout", function()
  local op = opmod.load("dropout")
  it("draws the keep-mask as 0/1 in x's dtype from its own seeded stream", function()
    local ctx = fake_ctx()
    local ins = op.module.inputs({ dtype = "bf16", params = { n = 1000, p = 0.5 } }, ctx)
    assert.same({ kind = "randint", shape = { 1000 }, dtype = "bf16", a = 0, b = 2 }, ctx.calls.x_keep)
    assert.equal("randn", ctx.calls.x.kind)
    assert.equal("x_keep", ins.x_keep.name)
  end)
  it("passes the scale 1 / (1 - p) to both kernels", function()
    local ctx = fake_ctx()
    local case = { dtype = "fp32", params = { n = 1000, p = 0.5 } }
    local ins = op.module.inputs(case, ctx)
    local outs = op.module.outputs(case, ins, ctx)
    local ref = op.module.reference(case, ins, outs, ctx)
    local impl = op.module.implementations.cuda
    local p = impl.plan(case, ins, outs, impl.default, ctx)
    assert.same({ f32 = 2.0 }, ref[1].args[5])
    assert.same({ f32 = 2.0 }, p[1].args[5])
    assert.same({ "dropout_ref", "dropout_cuda" }, { ctx.kernels[1].name, ctx.kernels[2].name })
  end)
  it("refuses a p its Bernoulli(0.5) mask cannot represent, saying why", function()
    local ok, err = pcall(op.module.inputs, { dtype = "fp16", params = { n = 10, p = 0.3 } }, fake_ctx())
    assert.is_false(ok)
    assert.matches("p = 0.3: the keep%-mask is drawn as randint%(0, 2%)", err)
  end)
end)

describe("rope", function()
  local op = opmod.load("rope")
  local case = { dtype = "fp16", params = { batch_size = 2, seq_len = 5, n_heads = 3, head_dim = 8 } }
  it("draws cos and sin as (seq, head_dim / 2) and counts element pairs", function()
    local ctx = fake_ctx()
    local ins = op.module.inputs(case, ctx)
    assert.same({ 5, 4 }, ctx.calls.cos.shape)
    assert.same({ 2, 5, 3, 8 }, ctx.calls.q.shape)
    local outs = op.module.outputs(case, ins, ctx)
    local impl = op.module.implementations.cuda
    local p = impl.plan(case, ins, outs, impl.default, ctx)
    assert.same({ { i64 = 2 * 5 * 3 * 4 }, { i64 = 5 }, { i64 = 3 }, { i64 = 8 } },
      { p[1].args[5], p[1].args[6], p[1].args[7], p[1].args[8] })
    assert.equal(2, impl.default.UNROLL) -- four loads a vector: 8 in flight
  end)
  it("refuses an odd head_dim, saying why", function()
    local odd = { dtype = "fp32", params = { batch_size = 1, seq_len = 2, n_heads = 1, head_dim = 7 } }
    local ok, err = pcall(op.module.inputs, odd, fake_ctx())
    assert.is_false(ok)
    assert.matches("head_dim = 7: the half%-split rotation needs an even head_dim", err)
  end)
end)

describe("weight_dequant", function()
  local op = opmod.load("weight_dequant")
  it("draws S with ceil(M / T) rows and columns and passes its row stride", function()
    local ctx = fake_ctx()
    local case = { dtype = "bf16", params = { M = 300, TILE_SIZE = 128 } }
    local ins = op.module.inputs(case, ctx)
    assert.same({ 3, 3 }, ctx.calls.S.shape)
    local outs = op.module.outputs(case, ins, ctx)
    local r = op.module.reference(case, ins, outs, ctx)
    assert.same({ { i64 = 90000 }, { i64 = 300 }, { i64 = 128 }, { i64 = 3 } },
      { r[1].args[4], r[1].args[5], r[1].args[6], r[1].args[7] })
  end)
end)

-- Defaults chosen from the H200's point-wise measurements (docs/KERNELS.md): 16-32 bytes in
-- flight a thread, small blocks, not the family's former 256 x 4.
describe("point-wise defaults of issue 16's memory-bound pass", function()
  local function grid_of(name, case)
    local op = opmod.load(name)
    local ctx = fake_ctx()
    local ins = op.module.inputs(case, ctx)
    local outs = op.module.outputs(case, ins, ctx)
    local impl = op.module.implementations.cuda
    local p = impl.plan(case, ins, outs, impl.default, ctx)
    return impl.default, p[1].grid[1], p[1].block[1]
  end
  it("leaky_relu: the family's rule, 128 threads, 2 vectors a thread in fp16 and 1 in fp32", function()
    local d, g, b = grid_of("leaky_relu", { dtype = "fp16", params = { n = 50000000 } })
    assert.same({ 128, 0, 0 }, { d.BLOCK, d.UNROLL, d.WAVES }) -- UNROLL 0: the rule
    assert.equal(128, b)
    assert.equal((50000000 // 8 + 255) // 256, g)
    local _, g32, b32 = grid_of("leaky_relu", { dtype = "fp32", params = { n = 50000000 } })
    assert.same({ 128, (50000000 // 4 + 127) // 128 }, { b32, g32 })
  end)
  it("fused_activation and weight_dequant keep 256 x 4 (their own defaults, not the rule)", function()
    local d, g, b = grid_of("fused_activation", { dtype = "fp32", params = { n = 20971520 } })
    assert.same({ 256, 4, 0 }, { d.BLOCK, d.UNROLL, d.WAVES })
    assert.same({ 256, 20971520 // 4 // 1024 }, { b, g })
    d = grid_of("weight_dequant", { dtype = "fp16", params = { M = 1024, TILE_SIZE = 128 } })
    assert.same({ 256, 4, 0 }, { d.BLOCK, d.UNROLL, d.WAVES })
  end)
  it("quantize_global: 128 threads, one 8-element vector (32 bytes of fp32) a thread", function()
    local d, g, b = grid_of("quantize_global", { dtype = "fp32", params = { n = 20971520 } })
    assert.same({ 128, 1, 0 }, { d.BLOCK, d.UNROLL, d.WAVES })
    assert.equal(128, b)
    assert.equal(20971520 // 8 // 128, g)
  end)
  it("dequantize_rowwise: 4096 elements a block, so the 512 x 512 case has 64 blocks", function()
    local d, g, b = grid_of("dequantize_rowwise", { dtype = "int8", params = { rows = 512, cols = 512 } })
    assert.same({ 256, 1, 0 }, { d.BLOCK, d.UNROLL, d.WAVES })
    assert.same({ 256, 64 }, { b, g })
    local _, g2 = grid_of("dequantize_rowwise", { dtype = "int8", params = { rows = 8192, cols = 4096 } })
    assert.equal(8192, g2)
  end)
  it("dequantize_rowwise's space keeps whole warps (a warp's 32 vectors are one 512-element group)", function()
    for _, b in ipairs(opmod.load("dequantize_rowwise").module.implementations.cuda.space.BLOCK) do
      assert.equal(0, b % 32)
    end
  end)
end)

-- batch_normalization's cuda plan (batch_normalization.cu): statistics into per-range partials,
-- the per-channel totals once (finalize: a block per 32 channels), then the normalisation.
describe("batch_normalization cuda plan", function()
  local op = opmod.load("batch_normalization")
  local impl = op.module.implementations.cuda
  local function plan(dtype, N, C)
    local ctx = fake_ctx()
    local case = { dtype = dtype, params = { N = N, C = C, eps = 1e-5 } }
    local ins = op.module.inputs(case, ctx)
    local outs = op.module.outputs(case, ins, ctx)
    return impl.plan(case, ins, outs, impl.default, ctx), ctx, ins, outs
  end
  it("runs stats, finalize and apply, the totals computed once per channel", function()
    local p, ctx, ins, outs = plan("fp16", 20000, 1024)
    assert.same({ "batch_normalization_stats", "batch_normalization_finalize", "batch_normalization_apply" },
      { ctx.kernels[1].name, ctx.kernels[2].name, ctx.kernels[3].name })
    assert.equal(3, #p)
    -- fp16: 4 column tiles of 256 channels; 132 x 8 resident blocks of 256 threads over them
    assert.same({ 4, 264 }, p[1].grid)
    assert.same(p[1].grid, p[3].grid)
    assert.same({ 32 }, p[2].grid)
    assert.same({ 1024 }, p[2].block)
    assert.same({ i32 = 264 }, p[2].args[8]) -- R, the partial rows finalize sums
    local ss = p[2].args[5]
    assert.same({ 2, 1024 }, ss.shape)
    assert.equal("fp32", ss.dtype)
    assert.equal(ss, p[3].args[2])
    assert.equal(ins.x, p[3].args[1])
    assert.equal(outs.y, p[3].args[3])
    assert.same({ i32 = 1 }, p[3].args[7]) -- REV
  end)
  it("covers channels past a multiple of 32 with the finalize grid", function()
    local p = plan("fp32", 333, 100)
    assert.same({ 4 }, p[2].grid)
  end)
end)
