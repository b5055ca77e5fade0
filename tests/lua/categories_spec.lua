-- categories: the category of an operator, from its folder through operator.lua's loader (the
-- one loader), else OPERATORS.md's table for operators without a folder (anchors).
local categories = require("tilebench.categories")
local opmod = require("tilebench.operator")
local lfs = require("lfs")

describe("categories.of", function()
  it("reads a folder's category through the operator loader", function()
    assert.are.equal(opmod.load("vector_add").category, categories.of("vector_add"))
    assert.are.equal("Reduction/Norm", categories.of("softmax"))
  end)

  it("finds folders on TILEBENCH_OPERATOR_PATH, as every command does", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(lfs.mkdir(dir))
    assert(lfs.mkdir(dir .. "/facts_probe_op"))
    local src = TILEBENCH_HOME .. "/operators/vector_add/"
    for _, f in ipairs({ "config.yaml", "operator.lua" }) do
      local text = assert(io.open(src .. f)):read("a")
      if f == "operator.lua" then text = text:gsub('category%s*=%s*"[^"]*"', 'category = "Stencil/Conv"') end
      local out = assert(io.open(dir .. "/facts_probe_op/" .. f, "w"))
      out:write(text)
      out:close()
    end
    local search_path = opmod.search_path
    opmod.search_path = function() return { dir, TILEBENCH_HOME .. "/operators" } end
    local ok, cat = pcall(categories.of, "facts_probe_op")
    opmod.search_path = search_path
    os.remove(dir .. "/facts_probe_op/config.yaml")
    os.remove(dir .. "/facts_probe_op/operator.lua")
    lfs.rmdir(dir .. "/facts_probe_op")
    lfs.rmdir(dir)
    assert.is_true(ok, cat)
    assert.are.equal("Stencil/Conv", cat)
  end)

  it("falls back to OPERATORS.md's table, then Other", function()
    assert.are.equal("Data Layout", categories.of("radix_sort"))
    assert.are.equal("Other", categories.of("no_such_operator"))
    assert.are.equal("Other", categories.of("../etc"))
  end)
end)
