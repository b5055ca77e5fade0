-- tilebench.operator: the operator search path skips operators/_shared, the folder of what
-- operator families share, which operator.lua files reach by name.
local opmod = require("tilebench.operator")
local lfs = require("lfs")

describe("operator folders", function()
  it("lists the operators and never the shared folder", function()
    local names = opmod.list()
    local set = {}
    for _, n in ipairs(names) do set[n] = true end
    assert.is_true(set.softmax and set.batched_matmul and true or false)
    assert.is_nil(set._shared)
    for _, n in ipairs(names) do assert.is_nil(n:match("^[_.]"), n) end
  end)

  it("refuses a name that starts with _ or . as an operator", function()
    for _, name in ipairs({ "_shared", ".", "..", ".hidden" }) do
      local ok, err = pcall(opmod.find, name)
      assert.is_false(ok)
      assert.matches("invalid operator name '" .. name:gsub("%.", "%%.") .. "'", err)
    end
  end)

  it("keeps the shared modules, headers and gemm kernels in one folder", function()
    local dir = opmod.shared_dir()
    assert.equal(TILEBENCH_HOME .. "/operators/_shared", dir)
    for _, f in ipairs({ "oplib.lua", "gemm.lua", "tb_common.cuh", "tb_pointwise.cuh", "tb_rows.cuh",
                         "gemm_wgmma.cu", "gemm_mma.cu", "matmul_ref.cu" }) do
      assert.equal("file", lfs.attributes(dir .. "/" .. f, "mode"), f)
    end
    assert.is_nil(lfs.attributes(dir .. "/config.yaml", "mode"))
  end)

  it("gives operator.lua files the shared modules by name", function()
    for _, m in ipairs({ "oplib", "gemm" }) do
      assert.equal(opmod.shared_dir() .. "/" .. m .. ".lua", package.searchpath(m, package.path))
    end
    assert.is_function(require("gemm").cuda_plan)
  end)

  it("loads the matmul operators without reaching into each other's folders", function()
    for _, name in ipairs({ "matmul_fp32_fp16_fp8", "batched_matmul", "matmul_int8", "streamk_matmul" }) do
      local f = assert(io.open(opmod.find(name) .. "/operator.lua"))
      local text = f:read("a")
      f:close()
      assert.is_nil(text:find("dofile", 1, true), name)
      assert.is_nil(text:find("../", 1, true), name)
      assert.is_table(opmod.load(name).module.implementations.cuda)
    end
  end)
end)

-- The operators' configs against OPERATORS.md (its expressions, extracted into
-- tests/fixtures/expressions.txt with each operator's first-case variables): the same flops and
-- bytes formulas, the same grid axes, the same case_defaults. The operators listed here all
-- follow the sheet exactly; a new operator joins the list when it lands.
describe("operator configs follow OPERATORS.md", function()
  local expr = require("tilebench.expr")
  local yaml = require("tb.yaml")
  local CHECKED = { "vector_add", "mul2", "relu", "leaky_relu", "sigmoid", "dropout", "swiglu", "softmax", "layernorm",
                    "rmsnorm", "l2_norm", "cross_entropy", "kl_divergence", "mean_reduction", "argmax",
                    "histogramming", "moe_topk_gating", "batch_normalization", "matmul_fp32_fp16_fp8",
                    "batched_matmul", "flash_decode", "linear_self_attention",
                    "flash_attention", "block_sparse_attention" }
  for _, n in ipairs({ "matmul_int8", "streamk_matmul" }) do CHECKED[#CHECKED + 1] = n end
  for _, n in ipairs({ "jacobi_stencil_2d", "gaussian_blur", "2d_max_pooling" }) do CHECKED[#CHECKED + 1] = n end
  for _, n in ipairs({ "radix_sort", "top_k_selection", "bitonic_sort" }) do CHECKED[#CHECKED + 1] = n end
  -- issue 18's data-layout operators (docs/LAYOUT.md)
  for _, n in ipairs({ "matrix_copy", "matrix_transpose", "interleave", "destindex", "reverse_array" }) do CHECKED[#CHECKED + 1] = n end
  -- issue 18's convolutions (docs/CONV.md)
  for _, n in ipairs({ "1d_conv", "2d_conv", "3d_conv" }) do CHECKED[#CHECKED + 1] = n end
  local sheet = {}
  local f = assert(io.open(TILEBENCH_HOME .. "/tests/fixtures/expressions.txt", "rb"))
  for line in f:lines() do
    local op, kind, src, vars = line:match("^([^\t#][^\t]*)\t([^\t]+)\t([^\t]+)\t?(.*)$")
    if op then
      local e = sheet[op] or { grids = {} }
      sheet[op] = e
      if kind == "grid" then
        e.grids[#e.grids + 1] = src
        e.defaults = {}
        for k, v in vars:gmatch("([%w_]+)=(%S+)") do e.defaults[k] = yaml.load(v) end
      else
        e[kind] = e[kind] or src -- where the sheet gives two (matrix_transpose), the newest comes first
      end
    end
  end
  f:close()

  local function axis_values(v)
    if type(v) == "table" and v.expr then return expr.eval(v.expr, {}) end
    return v
  end

  for _, name in ipairs(CHECKED) do
    local dir = io.open(TILEBENCH_HOME .. "/operators/" .. name .. "/config.yaml")
    if dir then
      dir:close()
      it(name, function()
        local want = assert(sheet[name], name .. " is not in the fixture")
        local cfg = opmod.load(name).config
        assert.are.equal(want.flops, cfg.metrics.flops_expr)
        assert.are.equal(want.bytes, cfg.metrics.bytes_expr)
        local axes = {}
        for _, v in pairs(cfg.case_grid) do axes[#axes + 1] = axis_values(v) end
        assert.are.equal(#want.grids, #axes)
        for _, g in ipairs(want.grids) do
          local values, found = expr.eval(g, {}), false
          for _, a in ipairs(axes) do
            if #a == #values then
              local same = true
              for i = 1, #a do same = same and a[i] == values[i] end
              found = found or same
            end
          end
          assert.is_true(found, name .. ": no grid axis takes " .. g)
        end
        for k, v in pairs(want.defaults or {}) do
          assert.are.equal(v, (cfg.case_defaults or {})[k], name .. ": case_defaults." .. k)
        end
      end)
    end
  end
end)

-- block_sparse_attention (docs/ATTENTION.md): the CSR layout tilebench builds follows OPERATORS.md
-- 26's generator, the essential flops formula counts the admissible pairs, and the cuda and triton
-- spaces keep what the kernels can run.
describe("block_sparse_attention", function()
  local expr = require("tilebench.expr")
  local runner = require("tilebench.runner")
  local op = opmod.load("block_sparse_attention")
  local m = op.module
  local GRID = { B = 2, H = 8, H_kv = 2, BLOCK_M = 64, BLOCK_N = 64, BLOCK_D = 64, D = 128 }
  local function with(t)
    local p = {}
    for k, v in pairs(GRID) do p[k] = v end
    for k, v in pairs(t) do p[k] = v end
    return { params = p, dtype = "fp16" }
  end

  it("builds the layout: row block r lists key blocks max(0, r - 2) .. r, zero-padded", function()
    local crow, col = m.layout({ M = 200, BLOCK_M = 64, BLOCK_N = 64 })
    assert.are.same({ 0, 1, 3, 6, 9 }, crow)
    assert.are.same({ 0, 0, 1, 0, 1, 2, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0 }, col)
    crow, col = m.layout({ M = 10240, BLOCK_M = 64, BLOCK_N = 64 })
    assert.are.equal(161, #crow)
    assert.are.equal(160 * 160, #col)
    for r = 0, 159 do
      local want = {}
      for c = math.max(0, r - 2), r do want[#want + 1] = c end
      local got = {}
      for i = crow[r + 1] + 1, crow[r + 2] do got[#got + 1] = col[i] end
      assert.are.same(want, got)
    end
    for i = crow[161] + 1, #col do assert.are.equal(0, col[i]) end
  end)

  it("states essential flops equal to 4 D flops per admissible (query, key) pair", function()
    local src = op.config.metrics.essential_flops_expr
    for _, M in ipairs({ 512, 1024, 3072, 10240 }) do
      local pairs_ = 0
      for q = 0, M - 1 do
        local r = q // 64
        pairs_ = pairs_ + (q - math.max(0, r - 2) * 64 + 1) -- keys max(0, r - 2) * 64 .. q
      end
      local env = { B = 2, H = 8, H_kv = 2, BLOCK_M = 64, BLOCK_N = 64, BLOCK_D = 64, D = 128, M = M, dtype_size = 2 }
      assert.are.equal(4 * 2 * 8 * 128 * pairs_, expr.eval(src, env))
      assert.is_true(expr.eval(src, env) < expr.eval(op.config.metrics.flops_expr, env))
    end
  end)

  it("keeps the cuda candidates the kernel can run, and resolves the default at small shapes", function()
    local cuda = m.implementations.cuda
    local grid_case, n = with({ M = 10240 }), 0
    for _, cfg in ipairs(runner.candidates(cuda)) do
      if cuda.valid(grid_case, cfg) then
        n = n + 1
        assert.is_true(cfg.HPC * cfg.WM >= 2 and cfg.HPC * cfg.WM <= 8 and 4 % cfg.HPC == 0)
      end
    end
    assert.are.equal(7, n)
    assert.is_true(cuda.valid(grid_case, cuda.default))
    -- no GQA and blocks of 16: only one head and one warp of rows fit, so HPC 2 and WM 2 are refused
    local small = with({ M = 100, H = 3, H_kv = 3, BLOCK_M = 16, BLOCK_N = 16 })
    assert.is_false(cuda.valid(small, { WM = 2, HPC = 1 }))
    assert.is_false(cuda.valid(small, { WM = 1, HPC = 2 }))
    assert.is_true(cuda.supports(small))
    assert.is_false((cuda.supports(with({ D = 256 }))))
    assert.is_false((cuda.supports(with({ BLOCK_N = 48 }))))
    local ok, why = cuda.supports(with({ H = 6, H_kv = 4 }))
    assert.is_false(ok)
    assert.truthy(why:find("H_kv", 1, true))
  end)

  it("keeps triton's query tiles inside a layout row and its heads inside a kv group", function()
    local tri = m.implementations.triton
    local c = with({ M = 512, BLOCK_M = 32 })
    assert.is_false(tri.valid(c, { BM = 64, HPC = 1, num_warps = 4, num_stages = 2 }))
    assert.is_true(tri.valid(c, { BM = 32, HPC = 1, num_warps = 4, num_stages = 2 }))
    assert.is_true(tri.valid(c, { BM = 32, HPC = 4, num_warps = 4, num_stages = 2 }))
    assert.is_false(tri.valid(with({ M = 512, H = 3, H_kv = 3 }), { BM = 32, HPC = 2, num_warps = 4, num_stages = 2 }))
    -- 4 heads x 64 rows on 4 warps: 256 accumulator floats a thread
    assert.is_false(tri.valid(with({ M = 512 }), { BM = 64, HPC = 4, num_warps = 4, num_stages = 2 }))
    assert.is_true(tri.valid(with({ M = 10240 }), tri.default))
    assert.is_false((tri.supports(with({ D = 96 }))))
  end)
end)

-- linear_self_attention's out tiles (operator.lua out_tiles): 128 rows while one wave holds them,
-- else 64-row tiles compiled for 3 CTAs an SM; an explicit BM is kept as is.
describe("linear_self_attention out tiles", function()
  local m = opmod.load("linear_self_attention").module
  it("keeps 128-row tiles in one wave and switches to 64 rows x 3 CTAs an SM past it", function()
    local d = m.implementations.cuda.default
    assert.same({ 128, 128, 1 }, { m.out_tiles(8192, 256, d, 132) })  -- 64 x 2 = 128 tiles
    assert.same({ 64, 128, 3 }, { m.out_tiles(10000, 256, d, 132) })  -- 79 x 2 = 158 > 132
    assert.same({ 128, 128, 1 }, { m.out_tiles(10000, 128, d, 132) }) -- 79 tiles
    assert.same({ 64, 32, 3 }, { m.out_tiles(17000, 32, d, 132) })    -- 133 > 132
    assert.same({ 128, 64, 1 }, { m.out_tiles(10000, 256, { BM = 128, BN = 64 }, 132) })
  end)
end)

-- destindex (docs/LAYOUT.md): dest_loc is a permutation of 0 .. T-1 drawn from the case's seed, the
-- same for the same seed, another for another seed.
describe("destindex's dest_loc", function()
  local perm = opmod.load("destindex").module.permutation
  it("is a permutation, reproducible from its seed", function()
    for _, T in ipairs({ 1, 2, 7, 4096 }) do
      local p, seen = perm(T, 42), {}
      assert.are.equal(T, #p)
      for i = 1, T do
        assert.is_true(math.type(p[i]) == "integer" and p[i] >= 0 and p[i] < T and not seen[p[i]])
        seen[p[i]] = true
      end
      assert.are.same(p, perm(T, 42))
    end
    assert.are_not.same(perm(4096, 42), perm(4096, 43))
    local p, moved = perm(4096, 7), 0
    for i = 1, 4096 do if p[i] ~= i - 1 then moved = moved + 1 end end
    assert.is_true(moved > 4000) -- shuffled, not the identity
  end)
end)
