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
    for _, name in ipairs({ "matmul_fp32_fp16_fp8", "batched_matmul" }) do
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
        e[kind] = src
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
