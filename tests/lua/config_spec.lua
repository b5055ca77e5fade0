-- tilebench.config: config.yaml validation, tolerances and work formulas.
local config = require("tilebench.config")
local grid = require("tilebench.grid")
local yaml = require("tb.yaml")

local HOME = TILEBENCH_HOME or os.getenv("TILEBENCH_HOME") or "."
local FIX = HOME .. "/tests/fixtures/yaml/config/"

local function load_error(name)
  local ok, err = pcall(config.load, FIX .. name)
  assert.is_false(ok, name .. " should not load")
  local prefix = FIX .. name .. ": "
  assert.are.equal(prefix, err:sub(1, #prefix), err)
  return err:sub(#prefix + 1)
end

local function validate_error(text)
  local ok, err = pcall(config.validate, yaml.load(text), "operators/x/config.yaml")
  assert.is_false(ok, "should not validate: " .. text)
  return err
end

describe("config.load", function()
  it("loads a TileBench config and keeps its sections", function()
    local c = config.load(FIX .. "swiglu.yaml")
    assert.are.equal(FIX .. "swiglu.yaml", c.path)
    assert.are.equal(20, c.benchmark.warmup)
    assert.are.equal(100, c.benchmark["repeat"])
    assert.is_true(c.benchmark.use_cuda_graph)
    assert.are.same({"fp16", "bf16", "fp32"}, c.dtype)
    assert.are.equal("n * dtype_size * 3", c.metrics.bytes_expr)
  end)

  it("names a misspelled key and suggests the right one", function()
    assert.are.equal('unknown key "case_gird" in top level (did you mean "case_grid"?)', load_error("bad_typo.yaml"))
    assert.are.equal('unknown key "hoper" in verify.arch_overrides (did you mean "hopper"?)', load_error("bad_nested.yaml"))
    assert.are.equal('unknown key "warmpu" in benchmark (did you mean "warmup"?)',
      validate_error("benchmark: {warmpu: 1}\ncase_grid: {n: [1]}\n"):match(": (.*)$"))
  end)

  it("names a value of the wrong type", function()
    assert.are.equal('benchmark.warmup must be an integer, got string "ten"', load_error("bad_type.yaml"))
    assert.are.equal("operators/x/config.yaml: benchmark.use_cuda_graph must be true or false, got integer 1",
      validate_error("benchmark: {use_cuda_graph: 1}\ncase_grid: {n: [1]}\n"))
    assert.are.equal("operators/x/config.yaml: verify.atol must be a number, got string \"tight\"",
      validate_error("verify: {atol: tight}\ncase_grid: {n: [1]}\n"))
    assert.are.equal("operators/x/config.yaml: benchmark.repeat must be at least 1, got 0",
      validate_error("benchmark: {repeat: 0}\ncase_grid: {n: [1]}\n"))
    assert.are.equal("operators/x/config.yaml: case_grid.n must be a list or {expr: ...}, got integer 3",
      validate_error("case_grid: {n: 3}\n"))
    assert.are.equal('operators/x/config.yaml: unknown key "exp" in case_grid.n (did you mean "expr"?)',
      validate_error("case_grid: {n: {exp: \"[1]\"}}\n"))
  end)

  it("rejects an expression outside the subset, naming the file and key", function()
    assert.are.equal('metrics.flops_expr: expression "__import__(\'os\').system(\'true\')": string literals are not part of the expression language at column 12',
      load_error("bad_expr.yaml"))
  end)

  it("rejects names that are not case parameters", function()
    assert.are.equal('metrics.bytes_expr: expression "n * dtyp_size": name "dtyp_size" is not a case parameter (did you mean "dtype_size"?)',
      load_error("bad_unknown_name.yaml"))
  end)

  it("rejects a grid that expands to nothing and unknown dtypes", function()
    assert.are.equal("case_grid expands to no cases (case_grid.n is empty)", load_error("bad_empty_grid.yaml"))
    assert.are.equal('dtype[2]: unknown dtype "fp12"', load_error("bad_dtype.yaml"))
  end)

  it("refuses an empty case_grid, saying what it expected", function()
    for _, grid_text in ipairs({"case_grid: {}", "case_grid: []", "case_grid: {n: null}"}) do
      local ok, err = pcall(config.validate, yaml.load(grid_text .. "\ndtype: [fp32]\n", "e.yaml"), "e.yaml")
      assert.is_false(ok, grid_text)
      assert.matches("^e%.yaml: case_grid", err)
      assert.is_nil(err:find("%.lua:%d"), err) -- no Lua location: a message for the user
    end
  end)

  it("requires case_grid and a mapping at the top", function()
    assert.are.equal('operators/x/config.yaml: missing key "case_grid"', validate_error("dtype: [fp16]\n"))
    assert.are.equal("operators/x/config.yaml: the top level must be a mapping, got list", validate_error("- 1\n"))
  end)

  it("reads YAML nulls as absent sections", function()
    local c = config.validate(yaml.load("case_defaults:\nbenchmark:\ncase_grid: {n: [1]}\n"), "x.yaml")
    assert.is_nil(c.case_defaults)
    assert.is_nil(c.benchmark)
  end)

  it("passes YAML errors through with file:line:col", function()
    local path = os.tmpname()
    local f = assert(io.open(path, "wb"))
    f:write("case_grid:\n  n: [1, 2\n")
    f:close()
    local ok, err = pcall(config.load, path)
    os.remove(path)
    assert.is_false(ok)
    assert.matches("^" .. path:gsub("%p", "%%%0") .. ":%d+:%d+: ", err)
  end)

  it("loads every operator config in the tree", function()
    local lfs = require("lfs")
    local n = 0
    if lfs.attributes(HOME .. "/operators", "mode") == "directory" then
      for name in lfs.dir(HOME .. "/operators") do
        local path = HOME .. "/operators/" .. name .. "/config.yaml"
        if lfs.attributes(path, "mode") == "file" then
          local c = config.load(path)
          local cases = grid.expand(c)
          assert.is_true(#cases > 0, path)
          for _, case in ipairs(cases) do
            local flops, bytes = config.work(c, case)
            if c.metrics and c.metrics.bytes_expr then assert.are.equal("number", type(bytes), path) end
            if c.metrics and c.metrics.flops_expr then assert.are.equal("number", type(flops), path) end
          end
          n = n + 1
        end
      end
    end
    if n == 0 then pending("no operators/*/config.yaml yet") end
  end)
end)

describe("config.tolerance", function()
  it("defaults by output dtype as TileBench's verifier", function()
    local c = config.validate(yaml.load("case_grid: {n: [1]}\n"), "x")
    assert.are.same({1e-5, 1.3e-6}, {config.tolerance(c, "fp32")})
    assert.are.same({1e-5, 1.3e-6}, {config.tolerance(c, "float32")})
    assert.are.same({1e-3, 1e-3}, {config.tolerance(c, "fp16")})
    assert.are.same({1e-2, 1.6e-2}, {config.tolerance(c, "bf16")})
    assert.are.same({1.0, 0.1}, {config.tolerance(c, "fp8_e4m3fn")})
    assert.are.same({0, 0}, {config.tolerance(c, "int64")})
    assert.are.same({0, 0}, {config.tolerance(c, "int8")})
    assert.are.same({1e-2, 1e-2}, {config.tolerance(c, "complex64")})
  end)

  it("applies verify, then verify.arch_overrides of the family", function()
    local c = config.load(FIX .. "conv2d_arch.yaml")
    assert.are.same({1e-1, 1e-2}, {config.tolerance(c, "fp16", "hopper")})
    assert.are.same({2e-1, 1e-2}, {config.tolerance(c, "fp16", "cdna3")})
    assert.are.same({1e-1, 1e-2}, {config.tolerance(c, "int32")}) -- integer outputs included
    local d = config.load(FIX .. "dequantize_rowwise.yaml")
    assert.are.same({1e-3, 1e-3}, {config.tolerance(d, "fp16", "hopper")})
  end)
end)

describe("config.work", function()
  it("infers n as the product of integer shape parameters (swiglu: M*N)", function()
    local c = config.load(FIX .. "swiglu.yaml")
    local case = grid.expand(c)[1]                 -- N = 1024, fp16
    local flops, bytes, n = config.work(c, case)
    assert.are.equal(4096 * 1024, n)
    assert.are.equal(4096 * 1024, flops)
    assert.are.equal(4096 * 1024 * 2 * 3, bytes)
    assert.are.equal("integer", math.type(bytes))
  end)

  it("uses metrics.n_expr where the config states n (destindex)", function()
    local c = config.load(FIX .. "destindex.yaml")
    local cases = grid.expand(c)
    local flops, bytes = config.work(c, cases[#cases]) -- seq_len 40960, int8
    assert.are.equal(1600 * 40960, flops)
    assert.are.equal(1600 * 40960 * 1 * 2, bytes)
  end)

  it("uses the case's own n when it has one", function()
    local c = config.load(FIX .. "fused_activation.yaml")
    local flops, bytes = config.work(c, grid.expand(c)[2])
    assert.are.equal(5 * 2097152, flops)
    assert.are.equal(4 * 2097152 * 4, bytes)
  end)

  it("gives dtype_size by dtype, 4 for an unknown name", function()
    local c = config.load(FIX .. "dequantize_rowwise.yaml")
    local case = grid.expand(c)[1]
    local flops, bytes = config.work(c, case)
    assert.are.equal(2 * 512 * 512, flops)
    assert.are.equal(512 * 512 + 512 * 4 + 512 * 512 * 2, bytes)
    local sw = config.load(FIX .. "swiglu.yaml")
    for dtype, size in pairs({fp32 = 4, fp16 = 2, bf16 = 2, int8 = 1, int32 = 4, int64 = 8, fp8_e4m3 = 1, weird = 4}) do
      local _, b = config.work(sw, {params = {M = 1, N = 1}, dtype = dtype})
      assert.are.equal(3 * size, b, dtype)
    end
  end)

  it("gives the essential bytes: essential_bytes_expr where stated, else bytes_expr", function()
    local c = config.validate(yaml.load(
      "case_defaults: {batch: 1, M: 2048}\ncase_grid: {K: [512]}\ndtype: [fp16]\n" ..
      "metrics: {n_expr: \"batch * M * K\", bytes_expr: \"n * dtype_size * 3\",\n" ..
      "  essential_bytes_expr: \"(2 * n + K) * dtype_size\", essential_note: \"x read once\"}\n"), "rms.yaml")
    local _, bytes, n, essential = config.work(c, grid.expand(c)[1])
    assert.are.equal(2048 * 512, n)
    assert.are.equal(n * 2 * 3, bytes)
    assert.are.equal((2 * n + 512) * 2, essential)
    assert.are.same({expr = "(2 * n + K) * dtype_size", note = "x read once", differs = true}, config.essential(c))
    local _, _, _, _, eflops = config.work(c, grid.expand(c)[1])
    assert.is_nil(eflops) -- no flops formula at all
    local sw = config.load(FIX .. "swiglu.yaml")
    local _, b, _, e = config.work(sw, grid.expand(sw)[1])
    assert.are.equal(b, e)
    assert.is_false(config.essential(sw).differs)
  end)

  it("gives the essential flops: essential_flops_expr where stated (causal attention's masked half), else flops", function()
    local c = config.validate(yaml.load(
      "case_grid: {S: [1024]}\nmetrics: {flops_expr: \"4 * S * S\", bytes_expr: \"8 * S\",\n" ..
      "  essential_flops_expr: \"2 * S * (S + 1)\", essential_note: \"the causal mask halves the work\"}\n"), "attn.yaml")
    local flops, bytes, _, ebytes, eflops = config.work(c, grid.expand(c)[1])
    assert.are.equal(4 * 1024 * 1024, flops)
    assert.are.equal(2 * 1024 * 1025, eflops)
    assert.are.equal(bytes, ebytes)
    local e = config.essential(c)
    assert.is_true(e.differs)
    assert.are.equal("2 * S * (S + 1)", e.flops_expr)
    assert.are.equal("8 * S", e.expr)
    local ok, err = pcall(config.validate, yaml.load("case_grid: {n: [4]}\nmetrics: {flops_expr: \"n\", essential_flops_expr: \"n\"}\n"), "op.yaml")
    assert.is_false(ok)
    assert.are.equal("op.yaml: metrics.essential_flops_expr needs metrics.essential_note: why it differs from flops_expr", err)
    ok, err = pcall(config.validate, yaml.load("case_grid: {n: [4]}\nmetrics: {essential_flops_expr: \"n\", essential_note: \"x\"}\n"), "op.yaml")
    assert.is_false(ok)
    assert.matches("essential_flops_expr is given without flops_expr", err)
  end)

  it("refuses an essential formula without its note, a note without a formula, a bad name", function()
    local function err(metrics)
      local ok, e = pcall(config.validate, yaml.load("case_grid: {n: [4]}\nmetrics: " .. metrics .. "\n"), "op.yaml")
      assert.is_false(ok)
      return e
    end
    assert.are.equal("op.yaml: metrics.essential_bytes_expr needs metrics.essential_note: why it differs from bytes_expr",
      err('{bytes_expr: "3 * n", essential_bytes_expr: "2 * n"}'))
    assert.are.equal("op.yaml: metrics.essential_note explains an essential_bytes_expr, and there is none",
      err('{bytes_expr: "3 * n", essential_note: "why"}'))
    assert.matches('metrics.essential_bytes_expr: expression "2 %* m": name "m" is not a case parameter',
      err('{bytes_expr: "3 * n", essential_bytes_expr: "2 * m", essential_note: "x"}'))
    assert.matches("essential_bytes_expr is given without bytes_expr",
      err('{essential_bytes_expr: "2 * n", essential_note: "x"}'))
    assert.matches("metrics.essential_note must be a string",
      err('{bytes_expr: "3 * n", essential_bytes_expr: "2 * n", essential_note: 3}'))
  end)

  it("states an essential formula for the operators whose TileBench formula miscounts", function()
    local expect = {layernorm = function(p, d) return (2 * p.batch * p.M * p.K + 2 * p.K) * d end,
                    rmsnorm = function(p, d) return (2 * p.batch * p.M * p.K + p.K) * d end,
                    argmax = function(p, d) return p.M * p.N * d + p.M * 8 end,
                    mean_reduction = function(p, d) return p.M * p.N * d + p.M * 4 end}
    for name, f in pairs(expect) do
      local path = HOME .. "/operators/" .. name .. "/config.yaml"
      local c = config.load(path)
      assert.is_true(config.essential(c).differs, name)
      for _, case in ipairs(grid.expand(c)) do
        local _, _, _, e = config.work(c, case)
        assert.are.equal(f(case.params, require("tilebench.util").dtype_size(case.dtype)), e, name .. " " .. case.id)
      end
    end
    for _, name in ipairs({"vector_add", "mul2", "relu", "sigmoid", "swiglu", "softmax", "matmul_fp32_fp16_fp8",
                           "batched_matmul"}) do
      assert.is_false(config.essential(config.load(HOME .. "/operators/" .. name .. "/config.yaml")).differs, name)
    end
  end)

  it("names the file and key when a formula fails", function()
    local c = config.validate(yaml.load("case_grid: {n: [0]}\nmetrics: {bytes_expr: \"1 // n\"}\n"), "op.yaml")
    local ok, err = pcall(config.work, c, grid.expand(c)[1])
    assert.is_false(ok)
    assert.are.equal('op.yaml: metrics.bytes_expr: expression "1 // n": integer division or modulo by zero at column 3', err)
  end)
end)
