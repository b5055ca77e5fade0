-- oplib (operators/_shared/oplib.lua): the shared launch logic of the point-wise and row-wise operator families.
local oplib = require("oplib")

local ctx = {
  props = { sm_count = 132, max_threads_per_sm = 2048 },
  dtype_size = function(d) return require("tb.dtype").info[d].size end,
  cdiv = function(a, b) return (a + b - 1) // b end,
}

describe("oplib.pointwise_grid", function()
  it("gives one block per BLOCK * UNROLL 16-byte vectors, covering tails", function()
    local cfg = { BLOCK = 256, UNROLL = 4, WAVES = 0 }
    assert.equal(1024, oplib.pointwise_grid(1048576 * 4, "fp32", cfg, ctx)) -- 4096 floats a block
    assert.equal(1, oplib.pointwise_grid(1, "fp16", cfg, ctx))
    assert.equal(2, oplib.pointwise_grid(8193, "fp16", cfg, ctx))           -- 8192 halves a block
  end)
  it("caps the grid at WAVES x the blocks the device holds", function()
    local cfg = { BLOCK = 256, UNROLL = 1, WAVES = 2 }
    assert.equal(132 * 8 * 2, oplib.pointwise_grid(1e9, "fp32", cfg, ctx))
  end)
  it("sizes the default's grid by the rule's UNROLL", function()
    local cfg = oplib.POINTWISE_DEFAULT
    assert.equal(8, oplib.pointwise_grid(4096, "fp32", cfg, ctx))   -- 128 threads x 1 vector x 4 floats
    assert.equal(4, oplib.pointwise_grid(8192, "fp16", cfg, ctx))   -- 128 x 2 x 8 halves
    assert.equal(2, oplib.pointwise_grid(2049, "int8", cfg, ctx))   -- 128 x 1 x 16 bytes, and a tail
  end)
end)

describe("oplib.pointwise_resolve", function()
  it("gives UNROLL 0 the rule's value by dtype size: 2 for 2-byte dtypes, 1 otherwise", function()
    local d = oplib.POINTWISE_DEFAULT
    assert.same({ BLOCK = 128, UNROLL = 0, WAVES = 0 }, d)
    assert.same({ BLOCK = 128, UNROLL = 2, WAVES = 0 }, oplib.pointwise_resolve(d, "fp16"))
    assert.same({ BLOCK = 128, UNROLL = 2, WAVES = 0 }, oplib.pointwise_resolve(d, "bf16"))
    assert.same({ BLOCK = 128, UNROLL = 1, WAVES = 0 }, oplib.pointwise_resolve(d, "fp32"))
    assert.same({ BLOCK = 128, UNROLL = 1, WAVES = 0 }, oplib.pointwise_resolve(d, "int8"))
    assert.equal(0, d.UNROLL) -- a copy: the default itself keeps the 0 that results record
  end)
  it("keeps a configuration that names its UNROLL (every candidate of the space)", function()
    local cfg = { BLOCK = 256, UNROLL = 4, WAVES = 2 }
    assert.equal(cfg, oplib.pointwise_resolve(cfg, "fp16"))
  end)
  it("resolves to a configuration of the declared space for every dtype", function()
    for _, dt in ipairs({ "fp32", "fp16", "bf16", "int8" }) do
      local r = oplib.pointwise_resolve(oplib.POINTWISE_DEFAULT, dt)
      for k, v in pairs(r) do
        local found = false
        for _, s in ipairs(oplib.POINTWISE_SPACE[k]) do found = found or s == v end
        assert.is_true(found, dt .. ": " .. k .. "=" .. tostring(v) .. " not in the space")
      end
    end
  end)
end)

describe("oplib.pointwise", function()
  local calls = {}
  local c = setmetatable({
    ctype = function() return "float" end,
    plan = function(steps) return steps end,
    kernel = function(_, file, name, defines) calls[#calls + 1] = { file, name, defines } return name end,
    triton = function(_, spec) return spec end,
    i64 = function(v) return { i64 = v } end,
    f32 = function(v) return { f32 = v } end,
  }, { __index = ctx })
  it("hands args the case, and sizes the grid by the operator's own vector where it has one", function()
    local t = { name = "pw", count = function(case) return case.params.n end,
                args = function(ins, outs, n, _, case) return { ins.x, outs.out, n, case.params.s } end }
    local reference, cuda = oplib.pointwise(t)
    local case = { dtype = "fp32", params = { n = 8192, s = 3 } }
    assert.same({ "X", "Y", 8192, 3 }, reference(case, { x = "X" }, { out = "Y" }, c)[1].args)
    local p = cuda.plan(case, { x = "X" }, { out = "Y" }, cuda.default, c)
    assert.same({ "pw.cu", "pw_cuda" }, { calls[2][1], calls[2][2] })
    assert.equal(16, p[1].grid[1])     -- the default: 128 threads x 1 vector x 4 floats a block
    assert.equal(1, calls[2][3].UNROLL) -- the rule's UNROLL reaches the kernel, never 0
    t.vec = function() return 8 end    -- e.g. fp32 in, fp16 out: 8 elements a vector
    p = cuda.plan(case, { x = "X" }, { out = "Y" }, cuda.default, c)
    assert.equal(8, p[1].grid[1])
    p = cuda.plan(case, { x = "X" }, { out = "Y" }, { BLOCK = 256, UNROLL = 4, WAVES = 0 }, c)
    assert.equal(1, p[1].grid[1])      -- 256 x 4 x 8 elements: a named UNROLL is kept
    assert.equal(4, calls[#calls][3].UNROLL)
  end)
  it("forms the default per dtype: UNROLL 2 for fp16, and an operator's own default is kept", function()
    local n0 = #calls
    local _, cuda = oplib.pointwise { name = "pw", count = function(case) return case.params.n end,
                                      args = function(ins, outs) return { ins.x, outs.out } end }
    local p = cuda.plan({ dtype = "fp16", params = { n = 8192 } }, { x = "X" }, { out = "Y" }, cuda.default, c)
    assert.equal(4, p[1].grid[1])      -- 128 x 2 x 8 halves a block
    assert.same({ BLOCK = 128, UNROLL = 2 }, { BLOCK = calls[n0 + 1][3].BLOCK, UNROLL = calls[n0 + 1][3].UNROLL })
    local _, own = oplib.pointwise { name = "pw", count = function(case) return case.params.n end,
                                     args = function(ins, outs) return { ins.x, outs.out } end,
                                     default = { BLOCK = 256, UNROLL = 1, WAVES = 0 } }
    assert.same({ BLOCK = 256, UNROLL = 1, WAVES = 0 }, own.default)
  end)
  it("gives the triton kernel the operator's scalars beside n", function()
    local impl = oplib.triton_pointwise { name = "pw", count = function(case) return case.params.n end,
      tensors = function(ins, outs) return { x = ins.x, out = outs.out } end,
      scalars = function(case, cx) return { scale = cx.f32(case.params.s) } end }
    local p = impl.plan({ dtype = "fp32", params = { n = 5000, s = 2 } }, { x = "X" }, { out = "Y" }, impl.default, c)
    assert.same({ x = "X", out = "Y", n = { i64 = 5000 }, scale = { f32 = 2 } }, p[1].args)
    assert.equal(2, p[1].grid[1])
  end)
end)

describe("oplib.row_layout", function()
  it("picks a warp per short row and a block per long row", function()
    local tpr, block, nv = oplib.row_layout(512, "fp32", oplib.ROW_DEFAULT)
    assert.same({ 32, 128, 4 }, { tpr, block, nv })
    tpr, block, nv = oplib.row_layout(20480, "fp16", oplib.ROW_DEFAULT)
    assert.same({ 512, 512, 5 }, { tpr, block, nv })   -- 512 threads at most while 16 vectors suffice
    tpr, block, nv = oplib.row_layout(10240, "fp32", oplib.ROW_DEFAULT)
    assert.same({ 512, 512, 5 }, { tpr, block, nv })
    tpr, block, nv = oplib.row_layout(131072, "fp16", oplib.ROW_DEFAULT)
    assert.same({ 1024, 1024, 16 }, { tpr, block, nv }) -- 512 would need 32 vectors a thread
  end)
  it("keeps explicit layouts and rejects those that cannot run", function()
    assert.is_true(oplib.row_layout_fits(10240, "fp32", { TPR = 256, BLOCK = 512 }))
    assert.is_false(oplib.row_layout_fits(10240, "fp32", { TPR = 1024, BLOCK = 512 })) -- group > block
    assert.is_false(oplib.row_layout_fits(20480, "fp32", { TPR = 32, BLOCK = 128 }))   -- NV 160
  end)
  it("bounds the registers of several rows per group (RPG)", function()
    local cfg = { TPR = 1024, BLOCK = 1024, RPG = 2 } -- fp16 20480: 2 x 3 vectors x 8 halves
    assert.is_true(oplib.row_layout_fits(20480, "fp16", { TPR = 1024, BLOCK = 1024, RPG = 1 }))
    assert.is_false(oplib.row_layout_fits(20480, "fp16", cfg))                    -- family bound: 36 + 1.95 x 48 > 64
    assert.is_true(oplib.row_layout_fits(20480, "fp16", cfg, { [2] = { 8, 1.15 } })) -- an operator's own: 63.2
    assert.is_false(oplib.row_layout_fits(20480, "fp16", { TPR = 1024, BLOCK = 1024, RPG = 4 }, { [2] = { 8, 1.15 } }))
    assert.is_true(oplib.row_layout_fits(512, "fp32", { TPR = 32, BLOCK = 128, RPG = 4 }))  -- 16 + 1.45 x 64
    assert.is_false(oplib.row_layout_fits(20480, "fp32", { TPR = 32, BLOCK = 128, RPG = 2 })) -- NV 160
  end)
end)

describe("oplib families", function()
  it("name their kernels after the operator and share the argument list", function()
    local calls = {}
    local c = setmetatable({
      ctype = function() return "float" end,
      plan = function(steps) return steps end,
      kernel = function(_, file, name, defines) calls[#calls + 1] = { file, name, defines } return name end,
    }, { __index = ctx })
    local reference, cuda = oplib.rowwise {
      name = "rowop", description = "d", rows_cols = function(case) return case.params.M, case.params.N end,
      args = function(ins, outs, rows, cols) return { ins.x, outs.out, rows, cols } end,
      defines = { EXTRA = 1 },
      stream = { dtypes = { fp16 = true }, min_bytes = 16384, block = 256, stages = 2 },
    }
    local case = { dtype = "fp32", params = { M = 64, N = 512 } }
    local r = reference(case, { x = "X" }, { out = "Y" }, c)
    assert.same({ "X", "Y", 64, 512 }, r[1].args)
    assert.same({ "rowop_ref.cu", "rowop_ref" }, { calls[1][1], calls[1][2] })
    assert.equal(1, calls[1][3].EXTRA)
    local p = cuda.plan(case, { x = "X" }, { out = "Y" }, cuda.default, c)
    assert.same({ "rowop.cu", "rowop_cuda" }, { calls[2][1], calls[2][2] })
    assert.same({ 32, 128, 4 }, { calls[2][3].TPR, calls[2][3].BLOCK, calls[2][3].NV })
    assert.equal(16, p[1].grid[1]) -- 64 rows, 4 rows a block
    assert.is_nil(calls[2][3].RPG)   -- RPG 1 (the default) passes no define: the kernels as before
    assert.is_true(cuda.supports(case))
    assert.equal(1, cuda.default.RPG)
    assert.is_nil(calls[2][3].FULLVEC) -- FULLVEC 0 (the default) passes no define either
    cuda.plan(case, { x = "X" }, { out = "Y" }, { TPR = 0, BLOCK = 0, RPG = 1, STAGES = 0, FULLVEC = 1 }, c)
    assert.equal(1, calls[3][3].FULLVEC)
    table.remove(calls, 3)
    -- RPG rows per group: the RPG define, and a block of BLOCK / TPR * RPG rows.
    p = cuda.plan(case, { x = "X" }, { out = "Y" }, { TPR = 0, BLOCK = 0, RPG = 4 }, c)
    assert.same({ 32, 128, 4, 4 }, { calls[3][3].TPR, calls[3][3].BLOCK, calls[3][3].NV, calls[3][3].RPG })
    assert.equal(4, p[1].grid[1]) -- 64 rows, 16 rows a block
    case.params.M = 65             -- a tail: one more block with a single active row
    p = cuda.plan(case, { x = "X" }, { out = "Y" }, { TPR = 0, BLOCK = 0, RPG = 4 }, c)
    assert.equal(5, p[1].grid[1])
    -- The default (STAGES = -1) follows the operator's stream rule: fp16 rows of 16 KiB and more
    -- through 2 shared-memory slots of 256-thread persistent blocks on sm_90 (as many blocks per SM
    -- as 64 registers a thread and the slots allow: 2 of 2 x 40 KiB).
    c.props = { cc_major = 9, sm_count = 132, smem_per_block_optin = 232448, smem_per_sm = 233472 }
    case.dtype, case.params.M, case.params.N = "fp16", 2048, 20480
    p = cuda.plan(case, { x = "X" }, { out = "Y" }, cuda.default, c)
    assert.same({ "rowop.cu", "rowop_stream" }, { calls[5][1], calls[5][2] })
    assert.same({ 256, 256, 10, 2 }, { calls[5][3].TPR, calls[5][3].BLOCK, calls[5][3].NV, calls[5][3].STAGES })
    assert.equal(264, p[1].grid[1])
    assert.equal(2 * 40960, p[1].smem)
    -- ... not before sm_90, nor for short rows, nor rows that are not whole 16-byte multiples.
    c.props.cc_major = 8
    p = cuda.plan(case, { x = "X" }, { out = "Y" }, cuda.default, c)
    assert.equal("rowop_cuda", calls[6][2])
    c.props.cc_major = 9
    case.params.N = 8000 -- 16000 bytes: under the rule's 16 KiB
    cuda.plan(case, { x = "X" }, { out = "Y" }, cuda.default, c)
    assert.equal("rowop_cuda", calls[7][2])
    case.params.N = 8193 -- not a whole number of 16-byte vectors
    cuda.plan(case, { x = "X" }, { out = "Y" }, cuda.default, c)
    assert.equal("rowop_cuda", calls[8][2])
    case.dtype = "fp32" -- a dtype without a rule
    case.params.N = 20480
    cuda.plan(case, { x = "X" }, { out = "Y" }, cuda.default, c)
    assert.equal("rowop_cuda", calls[9][2])
    case.dtype = "fp16"
    -- Explicit slots: the kernel runs them only as a block per row (TPR 0, RPG 1) whose slots fit
    -- shared memory; a grid of at most the row count. (The search screens 256-thread blocks only:
    -- row_worth, below.)
    case.params.M, case.params.N = 100, 20480
    local fits = oplib.row_fits[cuda]
    assert.is_true(fits(case, { TPR = 0, BLOCK = 512, RPG = 1, STAGES = 2 }))
    assert.is_false(cuda.valid(case, { TPR = 0, BLOCK = 512, RPG = 1, STAGES = 2 }))
    assert.is_true(cuda.valid(case, { TPR = 0, BLOCK = 256, RPG = 1, STAGES = 2 }))
    assert.is_false(fits(case, { TPR = 256, BLOCK = 512, RPG = 1, STAGES = 2 }))
    assert.is_false(fits(case, { TPR = 0, BLOCK = 512, RPG = 2, STAGES = 2 }))
    assert.is_false(fits(case, { TPR = 0, BLOCK = 512, RPG = 1, STAGES = 6 })) -- 6 x 40 KiB
    p = cuda.plan(case, { x = "X" }, { out = "Y" }, { TPR = 0, BLOCK = 512, RPG = 1, STAGES = 2 }, c)
    assert.equal(100, p[1].grid[1])
    assert.same({ 512, 512, 5, 2 }, { calls[10][3].TPR, calls[10][3].BLOCK, calls[10][3].NV, calls[10][3].STAGES })
  end)
end)

describe("oplib.row_resolve", function()
  local h200 = { cc_major = 9, smem_per_block_optin = 232448 }
  local auto = { TPR = 0, BLOCK = 0, RPG = 1, STAGES = -1 }
  it("takes min_bytes per dtype from a table, and leaves dtypes it does not name in registers", function()
    local rule = { dtypes = { fp16 = true, fp32 = true, bf16 = true }, min_bytes = { fp16 = 34816, fp32 = 53248 },
                   block = 0, stages = 2 }
    assert.equal(0, oplib.row_resolve(16384, "fp16", auto, h200, rule).STAGES)  -- 32 KiB
    assert.equal(2, oplib.row_resolve(17408, "fp16", auto, h200, rule).STAGES)  -- 34 KiB
    assert.equal(0, oplib.row_resolve(12288, "fp32", auto, h200, rule).STAGES)  -- 48 KiB
    assert.equal(2, oplib.row_resolve(13312, "fp32", auto, h200, rule).STAGES)  -- 52 KiB
    assert.equal(0, oplib.row_resolve(20480, "bf16", auto, h200, rule).STAGES)  -- no threshold given
    rule.min_bytes = 16384
    assert.equal(2, oplib.row_resolve(8192, "fp16", auto, h200, rule).STAGES)
    assert.equal(0, oplib.row_resolve(8192, "fp16", auto, { cc_major = 8 }, rule).STAGES) -- no cp.async.bulk
  end)
  it("takes block, stages and fullvec per dtype too; fullvec only where it streams", function()
    local rule = { dtypes = { fp16 = true, fp32 = true }, min_bytes = 16384, block = { fp16 = 512, fp32 = 0 },
                   stages = 2, fullvec = { fp16 = 1 } }
    local a = oplib.row_resolve(20480, "fp16", auto, h200, rule)
    assert.same({ 512, 2, 1 }, { a.BLOCK, a.STAGES, a.FULLVEC })
    local b = oplib.row_resolve(20480, "fp32", auto, h200, rule)
    assert.same({ 0, 2 }, { b.BLOCK, b.STAGES })
    assert.is_nil(b.FULLVEC)
    local c = oplib.row_resolve(1024, "fp16", { TPR = 0, BLOCK = 0, RPG = 1, STAGES = -1, FULLVEC = 0 }, h200, rule)
    assert.same({ 0, 0 }, { c.STAGES, c.FULLVEC }) -- 2 KiB rows: registers, FULLVEC as given
  end)
  it("sets the register kernel's FULLVEC by reg_fullvec, also for dtypes that never stream", function()
    local rule = { dtypes = { fp32 = true }, min_bytes = 16384, block = 1024, stages = 2, fullvec = 1,
                   reg_fullvec = { fp16 = 1 } }
    local dflt = { TPR = 0, BLOCK = 0, RPG = 1, STAGES = -1, FULLVEC = 0 }
    local a = oplib.row_resolve(20480, "fp16", dflt, h200, rule)
    assert.same({ 0, 1 }, { a.STAGES, a.FULLVEC })    -- fp16: registers, whole-vector checks
    local b = oplib.row_resolve(2048, "fp32", dflt, h200, rule)
    assert.same({ 0, 0 }, { b.STAGES, b.FULLVEC })    -- fp32 under the threshold: as given
    local c = oplib.row_resolve(20480, "fp32", dflt, h200, rule)
    assert.same({ 1024, 2, 1 }, { c.BLOCK, c.STAGES, c.FULLVEC })
    local d = oplib.row_resolve(512, "fp16", dflt, h200, { dtypes = {}, reg_fullvec = 1 })
    assert.same({ 0, 1 }, { d.STAGES, d.FULLVEC })    -- one value for every dtype
  end)
end)

describe("oplib.rowwise's search cuts (row_worth)", function()
  local _, cuda = oplib.rowwise {
    name = "rowop", description = "d", rows_cols = function(case) return case.params.M, case.params.N end,
    args = function(ins, outs, rows, cols) return { ins.x, outs.out, rows, cols } end,
    stream = { dtypes = { fp32 = true }, min_bytes = 16384, block = 1024, stages = 2 },
  }
  local function case(dtype, n) return { dtype = dtype, params = { M = 2048, N = n } } end
  local fits = oplib.row_fits[cuda]
  it("screens RPG 2 only on rows under 12 KiB, where the kernel runs it either way", function()
    local rpg2 = { TPR = 256, BLOCK = 256, RPG = 2, STAGES = 0, FULLVEC = 0 }
    assert.is_true(cuda.valid(case("fp16", 6143), rpg2))   -- 12286 bytes
    assert.is_false(cuda.valid(case("fp16", 6144), rpg2))  -- 12 KiB
    assert.is_true(fits(case("fp16", 6144), rpg2))
    assert.is_false(cuda.valid(case("fp32", 3072), rpg2))
    assert.is_true(cuda.valid(case("fp32", 3072), { TPR = 256, BLOCK = 256, RPG = 1, STAGES = 0, FULLVEC = 0 }))
  end)
  it("screens the stream kernel only with 256-thread blocks, resolved from BLOCK = 0 too", function()
    local function stream(block) return { TPR = 0, BLOCK = block, RPG = 1, STAGES = 2, FULLVEC = 0 } end
    assert.is_true(cuda.valid(case("fp16", 8192), stream(256)))
    for _, b in ipairs({ 128, 512, 1024 }) do
      assert.is_false(cuda.valid(case("fp16", 8192), stream(b)))
      assert.is_true(fits(case("fp16", 8192), stream(b)))
    end
    -- BLOCK = 0: the automatic TPR (at least 128): 128 at 4096 fp16 columns, 256 at 8192, 512 at 16384
    assert.equal(256, (oplib.stream_layout(8192, "fp16", stream(0))))
    assert.is_true(cuda.valid(case("fp16", 8192), stream(0)))
    assert.is_false(cuda.valid(case("fp16", 4096), stream(0)))
    assert.is_false(cuda.valid(case("fp16", 16384), stream(0)))
  end)
  it("screens 64 threads a row under 12 KiB, 512 from 12 KiB and 1024 from 32 KiB", function()
    local function reg(tpr) return { TPR = tpr, BLOCK = tpr == 64 and 128 or tpr, RPG = 1, STAGES = 0, FULLVEC = 0 } end
    assert.is_true(cuda.valid(case("fp16", 6143), reg(64)))
    assert.is_false(cuda.valid(case("fp16", 6144), reg(64)))
    assert.is_true(fits(case("fp16", 6144), reg(64)))
    assert.is_false(cuda.valid(case("fp32", 3071), reg(512)))
    assert.is_true(cuda.valid(case("fp32", 3072), reg(512)))
    assert.is_false(cuda.valid(case("fp16", 16383), reg(1024)))
    assert.is_true(cuda.valid(case("fp16", 16384), reg(1024)))
    assert.is_true(cuda.valid(case("fp16", 512), reg(128)))   -- 128 and 256 threads: every size
    assert.is_true(cuda.valid(case("fp16", 20480), reg(256)))
    -- TPR = 0 is cut by the layout it resolves to: 32 threads at 1 KiB rows, kept
    assert.is_true(cuda.valid(case("fp16", 512), { TPR = 0, BLOCK = 0, RPG = 1, STAGES = 0, FULLVEC = 0 }))
  end)
  it("never cuts the default, whose stream rule keeps its own block", function()
    for _, d in ipairs({ "fp16", "fp32" }) do
      for n = 512, 20480, 512 do assert.is_true(cuda.valid(case(d, n), oplib.ROW_DEFAULT)) end
    end
    -- fp32 rows of 16 KiB and more stream with 1024-thread blocks by the rule
    assert.equal(1024, oplib.row_resolve(8192, "fp32", oplib.ROW_DEFAULT, nil, { dtypes = { fp32 = true },
      min_bytes = 16384, block = 1024, stages = 2 }).BLOCK)
  end)
end)
