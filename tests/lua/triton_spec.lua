-- tilebench.triton without a GPU: argument types and specialisation, the cache key, and the
-- launch-argument packing against a kernel description (each parameter type's packed kind and
-- value, scratch pointers, every mismatch refused). Compiling needs triton: tests/compile_triton.lua.
local triton = require("tilebench.triton")
local launch = require("tb.launch")
local opmod = require("tilebench.operator")

local function fake(dtype, n) return { dtype = dtype, numel = function() return n or 1 end } end

local function param(name, t, kind, bytes) return { name = name, type = t, kind = kind, bytes = bytes } end
local DESC = {
  name = "k",
  params = {
    param("x", "*fp16", "ptr", 8), param("out", "*bf16", "ptr", 8), param("n", "i64", "i64", 8),
    param("m", "i32", "i32", 4), param("u", "u32", "u32", 4), param("w", "u64", "u64", 8),
    param("a", "fp32", "f32", 4), param("b", "fp64", "f64", 8),
    { name = "global_scratch", type = "*i8", kind = "ptr", bytes = 8, scratch = "global_scratch", size = 0 },
    { name = "profile_scratch", type = "*i8", kind = "ptr", bytes = 8, scratch = "profile_scratch", size = 0 },
  },
}

describe("tilebench.triton", function()
  it("types tensors as pointers and scalars by their width", function()
    assert.equal("*fp16", triton.type_of(fake("fp16")))
    assert.equal("*fp8e4nv", triton.type_of(fake("fp8_e4m3")))
    assert.equal("*i8", triton.type_of(fake("int8")))
    assert.equal("i32", triton.type_of(launch.i32(3)))
    assert.equal("i64", triton.type_of(launch.i64(3)))
    assert.equal("u32", triton.type_of(launch.u32(3)))
    assert.equal("fp32", triton.type_of(launch.f32(1.5)))
    assert.equal("fp64", triton.type_of(launch.f64(1.5)))
    assert.has_error(function() triton.type_of(3) end)
  end)

  it("specialises integers that are multiples of 16, like triton's launcher", function()
    local sig, div = triton.signature({ x = fake("fp32"), n = launch.i64(4096), m = launch.i32(100),
                                        k = launch.u32(32), s = launch.f32(16) })
    assert.same({ x = "*fp32", n = "i64", m = "i32", k = "u32", s = "fp32" }, sig)
    assert.same({ "k", "n" }, div)
  end)

  it("packs each parameter type in the description's order", function()
    local x, out = fake("fp16"), fake("bf16")
    local args = triton.pack(DESC, { x = x, out = out, n = launch.i64(1 << 40), m = 7, u = launch.u32(4000000000),
                                     w = 5, a = launch.f32(0.5), b = 0.25 })
    assert.equal(10, #args)
    assert.equal(x, args[1])
    assert.equal(out, args[2])
    assert.same({ "i64", 1 << 40 }, { launch.value(args[3]) })
    assert.same({ "i32", 7 }, { launch.value(args[4]) }) -- a plain number takes the parameter's width
    assert.same({ "u32", 4000000000 }, { launch.value(args[5]) })
    assert.same({ "u64", 5 }, { launch.value(args[6]) })
    assert.same({ "f32", 0.5 }, { launch.value(args[7]) })
    assert.same({ "f64", 0.25 }, { launch.value(args[8]) })
    -- scratch of size 0: a NULL pointer, 8 bytes, as triton's launcher passes
    assert.same({ "u64", 0 }, { launch.value(args[9]) })
    assert.same({ "u64", 0 }, { launch.value(args[10]) })
  end)

  it("passes a scratch buffer where the kernel needs one", function()
    local d = { name = "k", params = { param("x", "*fp32", "ptr", 8),
      { name = "global_scratch", type = "*i8", kind = "ptr", bytes = 8, scratch = "global_scratch", size = 64 } } }
    local buf = fake("uint8", 64)
    local args = triton.pack(d, { x = fake("fp32") }, { global_scratch = buf })
    assert.equal(buf, args[2])
    assert.has_error(function() triton.pack(d, { x = fake("fp32") }, {}) end,
      "triton: k needs a global_scratch buffer of 64 bytes per program")
  end)

  it("refuses arguments that do not match the description", function()
    local ok = { x = fake("fp16"), out = fake("bf16"), n = 1, m = 1, u = 1, w = 1, a = 1, b = 1 }
    local function with(k, v)
      local t = {}
      for kk, vv in pairs(ok) do t[kk] = vv end
      t[k] = v
      return t
    end
    assert.has_no_error(function() triton.pack(DESC, ok) end)
    assert.has_error(function() triton.pack(DESC, with("x", fake("fp32"))) end,
      "triton: k: parameter x is *fp16, the tensor is fp32")
    assert.has_error(function() triton.pack(DESC, with("x", launch.i64(0))) end,
      "triton: k: parameter x is *fp16, a tensor is needed")
    assert.has_error(function() triton.pack(DESC, with("n", launch.i32(1))) end,
      "triton: k: parameter n is i64, the argument is i32")
    assert.has_error(function() triton.pack(DESC, with("m", 2 ^ 40)) end)
    assert.has_error(function() triton.pack(DESC, with("n", nil)) end,
      "triton: k: no argument for parameter 3 (i64 n)")
    assert.has_error(function() triton.pack(DESC, with("zz", 1)) end, "triton: k has no parameter zz")
    local d = { name = "k", params = { param("h", "fp16", "f16", 2) } }
    assert.has_error(function() triton.pack(d, { h = 1 }) end,
      "triton: k: parameter h has type fp16, which tilebench does not pack")
  end)

  it("keys the cache by source, configuration, triton version and arch", function()
    local file = TILEBENCH_HOME .. "/operators/vector_add/vector_add_triton.py"
    local base = { file = file, kernel = "vector_add_kernel", signature = { x = "*fp32", n = "i64" },
                   constexprs = { BLOCK = 1024 }, divisible = { "n" }, num_warps = 4, num_stages = 1, arch = "sm_90" }
    local k0 = triton.key(base, "3.6.0")
    assert.matches("^%x+$", k0)
    assert.equal(64, #k0)
    assert.equal(k0, triton.key(base, "3.6.0"))
    local function changed(field, value)
      local d = {}
      for k, v in pairs(base) do d[k] = v end
      d[field] = value
      return triton.key(d, "3.6.0")
    end
    assert.not_equal(k0, triton.key(base, "3.5.1"))
    assert.not_equal(k0, changed("kernel", "other"))
    assert.not_equal(k0, changed("signature", { x = "*fp16", n = "i64" }))
    assert.not_equal(k0, changed("constexprs", { BLOCK = 2048 }))
    assert.not_equal(k0, changed("divisible", {}))
    assert.not_equal(k0, changed("num_warps", 8))
    assert.not_equal(k0, changed("num_stages", 2))
    assert.not_equal(k0, changed("arch", "sm_100"))
    assert.not_equal(k0, changed("file", TILEBENCH_HOME .. "/operators/mul2/mul2_triton.py"))
  end)

  it("adds a triton implementation selected by name, with its source", function()
    local op = opmod.load("vector_add")
    local spec = op.module.implementations.triton
    assert.equal("vector_add_triton.py", spec.source)
    assert.is_function(spec.supports)
    for _, i in ipairs(op.impls) do assert.not_equal("triton", i) end -- not in the default set
    assert.equal("triton", op.known_impls[#op.known_impls])
    assert.same({ "cuda", "triton" }, require("tilebench.campaign").impls_for(op, { impls = { "triton", "cuda" } }))
  end)

  it("has a triton implementation for every operator whose default is valid at every case", function()
    local names = opmod.list()
    assert.is_true(#names >= 12)
    for _, name in ipairs(names) do
      local op = opmod.load(name)
      local spec = op.module.implementations.triton
      assert.is_table(spec, name .. " has no triton implementation")
      assert.is_table(spec.space, name)
      for _, case in ipairs(op.cases) do
        assert.is_true(spec.valid == nil or spec.valid(case, spec.default), name .. " " .. case.dtype .. " " .. case.id)
      end
      -- the space has valid candidates at the largest case of each dtype
      for _, dtype in ipairs(opmod.dtypes(op)) do
        local cs = opmod.cases_of(op, dtype)
        local n = 0
        for _, cfg in ipairs(require("tilebench.runner").candidates(spec)) do
          if spec.valid == nil or spec.valid(cs[#cs], cfg) then n = n + 1 end
        end
        assert.is_true(n >= 2, name .. " " .. dtype .. ": " .. n .. " valid candidates")
      end
    end
  end)

  it("records a context's launches and describes them as triton's launcher takes them", function()
    local kernel = require("tb.kernel")
    local key = kernel.sha256("triton_spec record_launches " .. tostring(os.time()) .. " " .. tostring(math.random(1 << 30)))
    kernel.cache_write(key .. ".cubin", "\1\2\255") -- raises where it cannot write
    local made = 0
    local ctx = {}
    function ctx:triton(s)
      made = made + 1
      return { grid = { 4, 1 }, key = key, description = { name = "k_0", shared = 96 },
               request = { file = "f.py", kernel = "k", arch = "sm_90", num_warps = 4, constexprs = { B = 8 } } }
    end
    local launched = triton.record_launches(ctx)
    local spec = { kernel = "k", args = { n = 3 } }
    local step = ctx:triton(spec)
    assert.equals(1, made)
    assert.equals(1, #launched)
    assert.equals(spec, launched[1].spec)
    assert.equals(step, launched[1].step)
    local r = triton.launch_request(launched[1])
    assert.equals(90, r.arch)
    assert.equals("0102ff", r.cubin_hex)
    assert.equals(kernel.sha256("\1\2\255"), r.cubin_sha256)
    assert.equals(96, r.shared)
    assert.equals("k_0", r.name)
    assert.same({ 4, 1 }, r.grid)
    assert.equals(8, r.constexprs.B)
    assert.equals(triton.driver(), r.driver)
    assert.equals("sm_90", step.request.arch) -- the step itself is left as it was
  end)
end)

