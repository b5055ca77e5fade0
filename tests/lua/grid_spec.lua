-- tilebench.grid: TileBench's case expansion (key order, defaults, dtype axis, ids).
local grid = require("tilebench.grid")
local config = require("tilebench.config")
local yaml = require("tb.yaml")

local FIX = (TILEBENCH_HOME or os.getenv("TILEBENCH_HOME") or ".") .. "/tests/fixtures/yaml/config/"

local function from_yaml(text)
  local t = yaml.load(text, "test.yaml")
  t.path = "test.yaml"
  return t
end

describe("grid.expand", function()
  it("expands swiglu: 20 N values x 3 dtypes, dtype innermost, defaults merged", function()
    local cases = grid.expand(config.load(FIX .. "swiglu.yaml"))
    assert.are.equal(60, #cases)
    assert.are.same({params = {M = 4096, N = 1024}, dtype = "fp16", index = 1, id = "N=1024"}, cases[1])
    assert.are.equal("bf16", cases[2].dtype)
    assert.are.equal("fp32", cases[3].dtype)
    assert.are.equal(2048, cases[4].params.N)
    assert.are.equal(60, cases[60].index)
    assert.are.equal("N=20480", cases[60].id)
    assert.are.equal("integer", math.type(cases[60].params.N))
    assert.are.same({fp16 = 20, bf16 = 20, fp32 = 20}, grid.count_by_dtype(cases))
  end)

  it("takes the product in YAML key order, the last key fastest, as TileBench's CSVs list it", function()
    local cases = grid.expand(config.load(FIX .. "dequantize_rowwise.yaml"))
    assert.are.equal(20, #cases)
    -- TileBench's published params column: keys sorted, ", "-joined; rows outer, cols inner
    assert.are.equal("cols=512, rows=512", cases[1].id)
    assert.are.equal("cols=1024, rows=512", cases[2].id)
    assert.are.equal("cols=8192, rows=512", cases[5].id)
    assert.are.equal("cols=512, rows=1024", cases[6].id)
    assert.are.equal("int8", cases[1].dtype)
  end)

  it("follows the written order, not the sorted one", function()
    local a = grid.expand(from_yaml("case_grid:\n  b: [1, 2]\n  a: [10, 20]\n"))
    assert.are.same({1, 10}, {a[1].params.b, a[1].params.a})
    assert.are.same({1, 20}, {a[2].params.b, a[2].params.a})
    local b = grid.expand(from_yaml("case_grid:\n  a: [10, 20]\n  b: [1, 2]\n"))
    assert.are.same({10, 2}, {b[2].params.a, b[2].params.b})
  end)

  it("uses case_defaults.dtype, else fp32, when there is no dtype list", function()
    local cases = grid.expand(config.load(FIX .. "fused_activation.yaml"))
    assert.are.equal(20, #cases)
    assert.are.equal("fp32", cases[1].dtype)
    assert.is_nil(cases[1].params.dtype) -- dtype is never a parameter
    local plain = grid.expand(from_yaml("case_grid:\n  rows: [1, 2]\n"))
    assert.are.equal("fp32", plain[1].dtype)
  end)

  it("treats a dtype grid key as an axis where it stands, normalising the names", function()
    local cases = grid.expand(config.load(FIX .. "dtype_in_grid.yaml"))
    assert.are.same({"fp16", "fp16", "fp32", "fp32"},
      {cases[1].dtype, cases[2].dtype, cases[3].dtype, cases[4].dtype})
    assert.are.same({1, 2, 1, 2}, {cases[1].params.n, cases[2].params.n, cases[3].params.n, cases[4].params.n})
    assert.are.equal("n=1", cases[1].id)
  end)

  it("normalises TileBench's fp8_e4m3fn", function()
    local cases = grid.expand(from_yaml("case_grid:\n  K: [1]\ndtype: [fp32, fp16, fp8_e4m3fn]\n"))
    assert.are.equal("fp8_e4m3", cases[3].dtype)
  end)

  it("keeps block_size in params but out of the id and the problem size", function()
    local cases = grid.expand(from_yaml("case_grid:\n  n: [8]\n  block_size: [128, 256]\n"))
    assert.are.equal("n=8", cases[1].id)
    assert.are.equal(128, cases[1].params.block_size)
    assert.are.equal(8, grid.problem_size(cases[1].params))
  end)

  it("spells ids as Python prints the values", function()
    assert.are.equal("eps=1e-06, n=3", grid.case_id({n = 3, eps = 1e-6}))
    assert.are.equal("N=262144, num_bins=64", grid.case_id({num_bins = 64, N = 262144}))
    assert.are.equal("p=0.5, x=100.0", grid.case_id({p = 0.5, x = 100.0}))
    assert.are.equal("causal=True", grid.case_id({causal = true}))
  end)

  it("gives seeds only when the operator is named, stable across runs", function()
    local cfg = config.load(FIX .. "swiglu.yaml")
    assert.is_nil(grid.expand(cfg)[1].seed)
    local a = grid.expand(cfg, {operator = "swiglu"})
    local b = grid.expand(cfg, {operator = "swiglu"})
    assert.are.equal(a[7].seed, b[7].seed)
    assert.are_not.equal(a[1].seed, a[2].seed)
    assert.are.equal(grid.case_seed("swiglu", "fp16", "N=1024"), a[1].seed)
    assert.is_true(a[1].seed >= 1 and a[1].seed < 2 ^ 31)
  end)

  it("keeps the seeds the committed results' inputs were drawn from", function()
    -- Pinned: the values runner.lua and context.lua used before grid and operator shared one
    -- function. A change here changes every generated input and breaks the committed CSVs.
    assert.are.equal(775236389, grid.case_seed("vector_add", "fp16", "n=1048576"))
    assert.are.equal(1484475171, grid.case_seed("softmax", "fp16", "n_cols=512"))
    assert.are.equal(85920752, grid.case_seed("matmul_fp32_fp16_fp8", "fp32", "K=1024"))
    assert.are.equal(1265999162, grid.hash("775236389/x")) -- a tensor's seed (context.lua)
    local opmod = require("tilebench.operator")
    local op = opmod.load("vector_add")
    assert.are.equal(775236389, opmod.case_seed("vector_add", op.cases[1]))
  end)

  it("is an error naming the file when the grid expands to nothing", function()
    local ok, err = pcall(grid.expand, from_yaml("case_grid:\n  n: []\n"))
    assert.is_false(ok)
    assert.are.equal("test.yaml: case_grid expands to no cases (case_grid.n is empty)", err)
    ok, err = pcall(grid.expand, from_yaml("case_grid:\n  n: [1]\ndtype: []\n"))
    assert.is_false(ok)
    assert.are.equal("test.yaml: case_grid expands to no cases (the dtype list is empty)", err)
    ok, err = pcall(grid.expand, from_yaml("case_grid:\n  n: {expr: \"[i for i in range(0)]\"}\n"))
    assert.is_false(ok)
    assert.matches("^test%.yaml: case_grid expands to no cases", err)
  end)

  it("names the file and key of a failing grid expression", function()
    local ok, err = pcall(grid.expand, from_yaml("case_grid:\n  n: {expr: \"[i * Q for i in range(3)]\"}\n"))
    assert.is_false(ok)
    assert.are.equal('test.yaml: case_grid.n.expr: expression "[i * Q for i in range(3)]": name "Q" is not defined at column 6', err)
    ok, err = pcall(grid.expand, from_yaml("case_grid:\n  n: {expr: \"3\"}\n"))
    assert.is_false(ok)
    assert.are.equal("test.yaml: case_grid.n.expr must give a list, got integer 3", err)
  end)

  it("lets grid expressions read the case defaults", function()
    local cases = grid.expand(from_yaml("case_defaults: {B: 4}\ncase_grid:\n  n: {expr: \"[B * i for i in range(1, 3)]\"}\n"))
    assert.are.same({4, 8}, {cases[1].params.n, cases[2].params.n})
  end)
end)

-- Issue 13: a grid is counted before it is expanded and refused past grid.max_cases().
describe("grid.count", function()
  local function axes_yaml(sizes)
    local lines = {"case_grid:"}
    for i, n in ipairs(sizes) do lines[#lines + 1] = ('  p%d: {expr: "[i for i in range(1, %d)]"}'):format(i, n + 1) end
    lines[#lines + 1] = "dtype: [fp16, fp32]"
    return from_yaml(table.concat(lines, "\n") .. "\n")
  end

  it("gives the number of cases expand would make, without making them", function()
    for _, sizes in ipairs({{1}, {7}, {3, 5}, {2, 3, 4}, {10, 1, 10}}) do
      local cfg = axes_yaml(sizes)
      local n = grid.count(cfg)
      assert.are.equal(#grid.expand(cfg), n)
      assert.are.equal("integer", math.type(n))
      assert.are.same({"fp16", "fp32"}, grid.dtypes(select(2, grid.count(cfg))))
    end
  end)

  it("refuses a grid past the limit, whatever its shape, naming the file and each axis", function()
    local limit = grid.max_cases()
    for _, sizes in ipairs({{limit}, {1000, 1000}, {100, 100, 100, 100}, {2, limit // 4 + 1}}) do
      local cfg = axes_yaml(sizes)
      local ok, err = pcall(grid.count, cfg)
      assert.is_false(ok, table.concat(sizes, "x"))
      assert.matches("^test%.yaml: case_grid has %d+ cases %(p1 %d+ x .*dtype 2%), more than the limit of " ..
        limit .. " %(set TILEBENCH_MAX_CASES", err)
      assert.is_false((pcall(grid.expand, cfg)))
    end
    -- the limit itself is allowed
    assert.are.equal(limit, grid.count(axes_yaml({limit // 2})))
  end)

  it("counts past 2**63 without wrapping", function()
    local cfg = axes_yaml({1000, 1000, 1000, 1000, 1000, 1000, 1000})
    local ok, err = pcall(grid.count, cfg)
    assert.is_false(ok)
    assert.matches("case_grid has 2000000000000000000000 cases", err)
  end)
end)
