-- tilebench.context: which shared headers a kernel compile gets (and so hashes into its NVRTC
-- cache key), and where ctx:kernel finds a kernel file.
local context = require("tilebench.context")
local opmod = require("tilebench.operator")

local function names(set)
  local out = {}
  for k in pairs(set) do out[#out + 1] = k end
  table.sort(out)
  return out
end

local function read(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

describe("context.included_headers", function()
  local avail = { ["a.cuh"] = '#include "b.cuh"\n', ["b.cuh"] = "// leaf\n", ["c.cuh"] = "// unused\n",
                  ["d.cuh"] = '  #  include "a.cuh" // indented\n' }

  it("hands a compile only the headers its source includes, directly or through another", function()
    assert.same({ "a.cuh", "b.cuh" }, names(context.included_headers('#include "a.cuh"\nint x;\n', avail)))
    assert.same({ "b.cuh" }, names(context.included_headers('#include "b.cuh"', avail)))
    assert.same({ "a.cuh", "b.cuh", "d.cuh" }, names(context.included_headers('#include "d.cuh"\n', avail)))
    assert.same({}, names(context.included_headers("int x; // tb_common.cuh named, not included\n", avail)))
  end)

  it("passes the texts, so an edit to an included header changes the compile's key", function()
    local got = context.included_headers('#include "a.cuh"\n', avail)
    assert.equal(avail["b.cuh"], got["b.cuh"])
  end)

  it("ignores names that are not shared headers (the toolkit's, <...>)", function()
    assert.same({}, names(context.included_headers('#include <cuda_fp16.h>\n#include "nope.cuh"\n', avail)))
  end)

  it("counts an include the preprocessor would skip (never too few headers)", function()
    assert.same({ "c.cuh" }, names(context.included_headers('#if 0\n#include "c.cuh"\n#endif\n', avail)))
  end)

  it("gives the row kernels tb_rows.cuh, the point-wise ones tb_pointwise.cuh, references neither", function()
    local shared = context.shared_headers()
    local function of(op, file) return names(context.included_headers(read(opmod.find(op) .. "/" .. file), shared)) end
    assert.same({ "tb_common.cuh", "tb_rows.cuh" }, of("softmax", "softmax.cu"))
    assert.same({ "tb_common.cuh", "tb_pointwise.cuh" }, of("vector_add", "vector_add.cu"))
    assert.same({ "tb_common.cuh" }, of("layernorm", "layernorm_ref.cu"))
  end)
end)

describe("context.kernel_path", function()
  it("finds a kernel in the operator's folder first, then in operators/_shared", function()
    local dir = opmod.find("batched_matmul")
    assert.equal(opmod.shared_dir() .. "/gemm_wgmma.cu", context.kernel_path(dir, "gemm_wgmma.cu"))
    local sm = opmod.find("softmax")
    assert.equal(sm .. "/softmax.cu", context.kernel_path(sm, "softmax.cu"))
    assert.equal(sm .. "/missing.cu", context.kernel_path(sm, "missing.cu")) -- the error names it
  end)
end)
