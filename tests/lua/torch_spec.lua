-- tilebench.torch without a GPU (and, on CI, without torch): every operator declares its torch
-- file; torch is an implementation selected by name, first in the list and the speedup baseline
-- when it runs; where torch cannot run its rows are `unsupported` with the reason.
local torch = require("tilebench.torch")
local opmod = require("tilebench.operator")
local campaign = require("tilebench.campaign")

describe("tilebench.torch", function()
  it("finds a torch file for every operator and adds the implementation", function()
    local names = opmod.list()
    assert.is_true(#names >= 12)
    for _, name in ipairs(names) do
      local op = opmod.load(name)
      assert.is_truthy(torch.file(name, op.dir), name .. " has no " .. name .. "_torch.py")
      assert.is_table(op.module.implementations.torch)
      assert.equal("torch", op.known_impls[1])
      for _, i in ipairs(op.impls) do assert.not_equal("torch", i) end -- not in the default set
    end
  end)

  it("has torch files that compile, each defining forward", function()
    local py = require("tb.python")
    for _, name in ipairs(opmod.list()) do
      local path = torch.file(name, opmod.load(name).dir)
      assert.equal("", py.call("compile_file", path), path)
      local fh = assert(io.open(path))
      local text = fh:read("a")
      fh:close()
      assert.matches("\ndef forward%(", text, 1, false)
    end
    assert.matches("SyntaxError", py.call("compile_file", os.getenv("TILEBENCH_HOME") .. "/tests/lua/torch_spec.lua"))
  end)

  it("runs torch only when named, first, and makes it the baseline", function()
    local op = opmod.load("vector_add")
    assert.same(op.impls, campaign.impls_for(op, {}))
    assert.same({ "torch", "cuda" }, campaign.impls_for(op, { impls = { "cuda", "torch" } }))
    assert.equal("torch", campaign.baseline_for(op, { "torch", "cuda" }))
    local mm = opmod.load("matmul_fp32_fp16_fp8")
    assert.equal("lib", campaign.baseline_for(mm, { "lib", "cuda" }))
    assert.equal("torch", campaign.baseline_for(mm, { "torch", "lib", "cuda" }))
  end)

  it("plans items with torch as their baseline", function()
    local items = campaign.plan_items({ operators = { "vector_add" }, impls = { "torch", "cuda" },
                                        dtypes = { "fp32" }, modes = { "default" } })
    assert.is_true(#items > 0)
    for _, it in ipairs(items) do
      assert.same({ "torch", "cuda" }, it.impls)
      assert.equal("torch", it.baseline)
    end
  end)

  it("says why torch cannot run, and supports() turns it into `unsupported`", function()
    local ok, why, info = torch.available(0)
    if ok then
      pending("torch is importable here (" .. tostring(info.torch) .. ")")
      return
    end
    assert.is_string(why)
    assert.is_true(why:match("torch") ~= nil or why:match("python") ~= nil, why)
    local spec = opmod.load("relu").module.implementations.torch
    local sup, reason = spec.supports({ params = {}, dtype = "fp32" }, { props = { index = 0 } })
    assert.is_false(sup)
    assert.equal(why, reason)
  end)
end)

describe("tilebench.torch.versions_for", function()
  it("asks nothing when the run has no torch", function()
    assert.is_nil(torch.versions_for({ "cuda", "lib" }))
    assert.is_nil(torch.versions_for(nil))
  end)

  it("records python's version, and torch's or why not", function()
    local v = torch.versions_for({ "cuda", "torch" })
    assert.matches("^3%.%d+%.%d+", v.python)
    assert.is_true(v.torch ~= nil or v.error:match("torch is not installed") ~= nil)
  end)
end)

describe("torch as the speedup baseline", function()
  it("gives speedup_<impl> = t_torch / t_impl and keeps E_lib against lib", function()
    local execute = require("tilebench.execute")
    local it = { baseline = "torch", category = "MatMul/Attn", dtype = "fp16", flops = 1e9, bytes = 1e6 }
    local rows = { { impl = "torch", ms = 2.0, status = "ok" }, { impl = "lib", ms = 1.0, status = "ok" },
                   { impl = "cuda", ms = 0.5, status = "ok" } }
    execute.case_metrics(it, rows, nil)
    assert.is_nil(rows[3].metrics_error)
    assert.near(4.0, rows[3].speedup, 1e-12) -- 2.0 / 0.5
    assert.near(2.0, rows[3].elib, 1e-12)    -- 1.0 / 0.5
    assert.near(2.0, rows[2].speedup, 1e-12)
    assert.near(1.0, rows[1].speedup, 1e-12)
  end)
end)
