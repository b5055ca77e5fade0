-- task (lua/tilebench/task.lua): the task materials, from the operator folder.
local task = require("tilebench.task")
local opmod = require("tilebench.operator")

describe("task.declaration", function()
  it("extracts a CUDA kernel's declaration up to its body", function()
    local src = 'struct a { int b; };\nextern "C" __global__ void __launch_bounds__(BLOCK)\nk_other(int a) {}\n'
      .. 'extern "C" __global__ void __launch_bounds__(BLOCK)\nk(const float *x,\n  int n) {\n  x[0];\n}\n'
    assert.equal('extern "C" __global__ void __launch_bounds__(BLOCK)\nk(const float *x,\n  int n)',
      task.declaration(src, "cuda", "k"))
    assert.is_nil(task.declaration(src, "cuda", "missing"))
  end)
  it("extracts a Triton kernel's def with its decorator", function()
    local src = "import triton\n\n@triton.jit\ndef k(x, out,\n      BLOCK: tl.constexpr):\n    pass\n"
    assert.equal("@triton.jit\ndef k(x, out,\n      BLOCK: tl.constexpr):", task.declaration(src, "triton", "k"))
  end)
end)

describe("task.contract", function()
  it("records what the plan launches, arguments named, without compiling", function()
    local op = opmod.load("vector_add")
    local c = task.contract(op, "cuda", opmod.cases_of(op, "fp32")[1])
    assert.equal(1, #c.launches)
    local l = c.launches[1]
    assert.same({ "vector_add_cuda", true, 128, "float" }, { l.name, l.own, l.block[1], l.defines.DTYPE })
    assert.equal(1, l.defines.UNROLL) -- the point-wise family's rule for fp32, resolved in the plan
    assert.same({ "input x (fp32[1048576])", "input y (fp32[1048576])", "output out (fp32[1048576])", "i64 1048576" }, l.args)
    assert.same({ { name = "out", dtype = "fp32", shape = "1048576" } }, c.outputs)
  end)
  it("tells the candidate's launches from the operator's own", function()
    local op = opmod.load("matmul_fp32_fp16_fp8")
    local c = task.contract(op, "cuda", opmod.cases_of(op, "fp32")[1])
    local own, other = 0, 0
    for _, l in ipairs(c.launches) do if l.own then own = own + 1 else other = other + 1 end end
    assert.is_true(own >= 1 and other >= 1)
  end)
  it("records triton launches with their constexprs", function()
    local op = opmod.load("softmax")
    local c = task.contract(op, "triton", opmod.cases_of(op, "fp16")[1])
    assert.same({ "triton", "softmax_kernel", 512 }, { c.launches[1].kind, c.launches[1].name, c.launches[1].constexprs.BLOCK })
  end)
end)

describe("task.document", function()
  it("says what to write, from the folder's files", function()
    local op = opmod.load("relu")
    local doc = task.document(op, "cuda")
    assert.matches("# Task: relu for tilebench's `cuda` backend", doc, 1, true)
    assert.matches("complete replacement for `relu.cu`", doc, 1, true)
    local f = assert(io.open(op.dir .. "/relu_torch.py"))
    local torch_text = f:read("a")
    f:close()
    assert.matches(torch_text:gsub("\n$", ""), doc, 1, true)
    assert.matches("relu_cuda(", doc, 1, true)
    assert.matches("## Output format", doc, 1, true)
  end)
  it("refuses a backend the operator has no source for", function()
    assert.has_error(function() task.document(opmod.load("relu"), "hip") end)
  end)
end)
