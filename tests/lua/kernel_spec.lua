-- kernel_spec.lua: tb.kernel's compiler front end (options, defines, headers, cache, errors) needs
-- only NVRTC; loading needs a driver, and without one every loading call says so.
local kernel = require("tb.kernel")
local device = require("tb.device")
local available, why = device.available()
local nvrtc = device.versions().nvrtc

local source = [[
extern "C" __global__ void axpy(float *y, const float *x, float a, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i] * SCALE;
}
]]

describe("tb.kernel", function()
  describe("host_source", function()
    it("gives the host kernels as embedded in the binary, and nil for anything else", function()
      for _, f in ipairs({ "peaks.cu", "tensor.cu", "verify.cu", "evict.cu", "clock_probe.cu" }) do
        local fh = assert(io.open(TILEBENCH_HOME .. "/host/kernels/" .. f, "rb"))
        local text = fh:read("a")
        fh:close()
        assert.equal(text, kernel.host_source(f), f) -- the build embedded this tree's copy
      end
      assert.is_nil(kernel.host_source("tb_common.cuh")) -- an operator header: operators/_shared
      assert.is_nil(kernel.host_source("nope.cu"))
      -- one fill kernel: tensor.cu's, which tb.verify's int64 poison uses too
      assert.truthy(kernel.host_source("tensor.cu"):find("tb_fill_pattern", 1, true))
      assert.is_nil(kernel.host_source("verify.cu"):find("_pattern(", 1, true))
    end)
  end)

  describe("compile with load = false", function()
    if not nvrtc then
      pending("libnvrtc is absent: " .. tostring(device.versions().nvrtc_error))
      return
    end
    it("compile_host compiles every host kernel source without a device, then finds them cached", function()
      local compiled, cached = kernel.compile_host("sm_90")
      assert.equals(5, compiled + cached) -- peaks, tensor, verify, evict, clock_probe (.cu only)
      local compiled2, cached2 = kernel.compile_host("sm_90")
      assert.equals(0, compiled2)
      assert.equals(5, cached2)
    end)

    it("compiles, then answers from the cache", function()
      local opts = { name = "axpy.cu", load = false, arch = "sm_90", defines = { SCALE = "1.0f" } }
      local a = assert(kernel.compile(source, opts))
      local b = assert(kernel.compile(source, opts))
      assert.is_true(a.size > 0)
      assert.equals(a.size, b.size)
      assert.equals(a.key, b.key)
      assert.is_true(b.from_cache)
      assert.matches("^%x+$", a.key)
      assert.equals(64, #a.key)
      assert.equals("sm_90", a.arch)
      assert.is_string(a.log)
    end)

    it("keys defines and headers by content, not by table order", function()
      local function key(defines, headers)
        return assert(kernel.compile(source, { load = false, arch = "sm_90", defines = defines,
                                               headers = headers })).key
      end
      local d1 = { SCALE = "2.0f" }
      for i = 1, 20 do d1["D" .. i] = i end
      local d2 = { }
      for i = 20, 1, -1 do d2["D" .. i] = i end
      d2.SCALE = "2.0f"
      local h = { ["a.cuh"] = "#define A 1\n", ["b.cuh"] = "#define B 1\n" }
      assert.equals(key(d1, h), key(d2, h))
      d2.D7 = 8
      assert.are_not.equals(key(d1, h), key(d2, h))
      assert.are_not.equals(key(d1, h), key(d1, { ["a.cuh"] = "#define A 2\n", ["b.cuh"] = "#define B 1\n" }))
    end)

    it("turns defines into -D options: true -> -DK, false -> nothing, numbers exactly", function()
      local src = [[
#ifndef FLAG
#error FLAG missing
#endif
#ifdef OFF
#error OFF should be left out
#endif
static_assert(N == 3, "N");
static_assert(X == 0.1, "X");
extern "C" __global__ void k(float *y) { y[0] = X; }
]]
      local r = kernel.compile(src, { load = false, arch = "sm_90", defines = { FLAG = true, OFF = false, N = 3, X = 0.1 } })
      assert.is_table(r)
    end)

    it("includes headers given by name", function()
      local src = '#include "axpy_scale.cuh"\n' .. source
      local r = kernel.compile(src, { load = false, arch = "sm_90", headers = { ["axpy_scale.cuh"] = "#define SCALE 3.0f\n" } })
      assert.is_table(r)
    end)

    it("returns nil, the compiler's log and 'compile' for a source that does not compile", function()
      local r, log, code = kernel.compile(source, { load = false, arch = "sm_90", name = "noscale.cu" })
      assert.is_nil(r)
      assert.equals("compile", code)
      assert.matches("^nvrtcCompileProgram: noscale%.cu: NVRTC_ERROR_COMPILATION\n", log)
      assert.matches("noscale%.cu%(3%): error: identifier \"SCALE\" is undefined", log)
    end)

    it("returns PTX for compute_XY", function()
      local r = assert(kernel.compile(source, { load = false, arch = "compute_90", defines = { SCALE = 1 } }))
      assert.is_true(r.size > 0)
    end)

    it("rejects bad options clearly", function()
      local ok0, err0 = pcall(kernel.compile, source, { load = false, bogus = 1 })
      assert.is_false(ok0)
      assert.truthy(err0:find("bad argument #2 to '[%w.]*compile' %(unknown option 'bogus' %(expected name, defines, "
                              .. "options, headers, arch or load%)%)$"), err0)
      assert.has_error(function() kernel.compile(source, { load = false, defines = { K = {} } }) end)
      assert.has_error(function() kernel.compile(source, { load = false, options = { 42 } }) end)
      assert.has_error(function() kernel.compile(source, { load = false, headers = { ["h.cuh"] = 1 } }) end)
      local ok, err = pcall(kernel.compile, source, { load = false, arch = "sm9" })
      assert.is_false(ok)
      assert.matches("invalid architecture 'sm9'", err)
    end)
  end)

  if not available then
    describe("without a usable driver", function()
      it("load, load_image and compile (loading) raise the driver's message", function()
        for _, call in ipairs({
          function() return kernel.load("/nonexistent.cubin") end,
          function() return kernel.load_image("\127ELF...") end,
          function() return kernel.compile(source, { defines = { SCALE = 1 } }) end,
        }) do
          local ok, err = pcall(call)
          assert.is_false(ok)
          assert.equals("no_driver", require("tb.error").class(err))
          assert.truthy(tostring(err):find(why, 1, true), tostring(err))
        end
      end)
    end)
  else
    describe("with a device", function()
      local m
      setup(function() m = assert(kernel.compile(source, { name = "axpy.cu", defines = { SCALE = "1.0f" } })) end)
      teardown(function() m:close() end)
      it("gets a function with a signature and reads its attributes", function()
        local f = m:get("axpy", { "ptr", "ptr", "f32", "i64" })
        assert.equals("axpy", f:name())
        assert.same({ "ptr", "ptr", "f32", "i64" }, f:signature())
        local a = f:attributes()
        assert.is_true(a.num_regs > 0 and a.max_threads_per_block > 0)
        if a.num_params then assert.same({ 8, 8, 4, 8 }, a.param_sizes) end
      end)
      it("refuses a bad signature kind or a missing kernel", function()
        assert.has_error(function() m:get("axpy", { "ptr", "pointer" }) end)
        local ok, err = pcall(m.get, m, "nope")
        assert.is_false(ok)
        assert.matches("kernel 'nope' not found in module axpy%.cu: cuModuleGetFunction: CUDA_ERROR_NOT_FOUND", err)
      end)
    end)
  end
end)
