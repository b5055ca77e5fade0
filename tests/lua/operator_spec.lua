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
