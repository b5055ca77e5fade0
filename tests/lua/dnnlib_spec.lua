-- dnnlib.lua (operators/_shared): the cuDNN `lib` implementations' supports() and plan note, with a
-- stand-in tb.dnn (no GPU, no cuDNN): unsupported with cuDNN's reason where it is absent, unusable
-- (no_library) or offers no engine; other failures raised; the probe closed; the note's text.
local dnnlib = require("dnnlib")

local function with_dnn(fake, fn)
  local saved = package.loaded["tb.dnn"]
  package.loaded["tb.dnn"] = fake
  local ok, err = pcall(fn)
  package.loaded["tb.dnn"] = saved
  if not ok then error(err, 0) end
end

local function graph(e)
  return { closed = false, engine = function() return e end, close = function(self) self.closed = true end }
end

describe("dnnlib", function()
  it("is unsupported with the loader's reason where cuDNN cannot be opened", function()
    with_dnn({ available = function() return false, "cuDNN 9 (libcudnn.so.9) not found: ..." end }, function()
      local ok, why = dnnlib.supports(function() error("not reached") end)
      assert.is_false(ok)
      assert.equal("cuDNN: cuDNN 9 (libcudnn.so.9) not found: ...", why)
    end)
  end)

  it("is unsupported with cuDNN's answer where it offers no engine or is unusable, and raises the rest", function()
    with_dnn({ available = function() return true end }, function()
      local ok, why = dnnlib.supports(function() error("cuDNN offers no engine for attention forward ...", 0) end)
      assert.is_false(ok)
      assert.matches("offers no engine", why)
      ok, why = dnnlib.supports(function() error("cudnnBackendFinalize(OPERATIONGRAPH): CUDNN_STATUS_NOT_SUPPORTED (3000)", 0) end)
      assert.is_false(ok)
      assert.matches("NOT_SUPPORTED", why)
      local unusable = require("tb.error").new("no_library", "cudnnCreate: CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED")
      ok, why = dnnlib.supports(function() error(unusable, 0) end)
      assert.is_false(ok)
      assert.matches("SUBLIBRARY_LOADING_FAILED", why)
      assert.has_error(function() dnnlib.supports(function() error("out of memory", 0) end) end, "out of memory")
    end)
  end)

  it("closes the probe and says supported when cuDNN has an engine", function()
    local g = graph({})
    with_dnn({ available = function() return true end }, function()
      assert.is_true(dnnlib.supports(function(dnn) assert.is_function(dnn.available) return g end))
    end)
    assert.is_true(g.closed)
  end)

  it("notes the library's version and the engine on the plan", function()
    local e = { global_index = 8, knobs_text = "3=1 5=2", choice = 1, candidates = 4, workspace_bytes = 0 }
    with_dnn({ version = function() return { version = 91900, path = "/x/libcudnn.so.9" } end }, function()
      assert.equal("cuDNN 9.19.0 engine 8 (knobs 3=1 5=2), heuristic choice 1 of 4, workspace 0 B",
        dnnlib.note(graph(e)))
      e.knobs_text = ""
      assert.equal("cuDNN 9.19.0 engine 8 (knobs none), heuristic choice 1 of 4, workspace 0 B", dnnlib.note(graph(e)))
      local g = graph(e)
      local plan = dnnlib.plan({ plan = function(steps) assert.equal(g, steps[1].call) return {} end }, g)
      assert.equal("cuDNN 9.19.0 engine 8 (knobs none), heuristic choice 1 of 4, workspace 0 B", plan.note)
    end)
  end)

  it("gives cuDNN each convolution's shape from conv.lua (1-d as its one spatial size)", function()
    local seen = {}
    local fake = { available = function() return true end,
                   conv = function(spec) seen[#seen + 1] = spec return graph({}) end }
    local base = { batch = 2, in_channels = 8, out_channels = 12, kernel_size = 3, stride = 2, padding = 1, groups = 4 }
    local function case(extra)
      local p = {}
      for k, v in pairs(base) do p[k] = v end
      for k, v in pairs(extra) do p[k] = v end
      return { params = p, dtype = "fp16" }
    end
    with_dnn(fake, function()
      assert.is_true(dnnlib.conv_lib(1).supports(case({ L = 101 })))
      assert.is_true(dnnlib.conv_lib(2).supports(case({ H = 17, W = 19 })))
      assert.is_true(dnnlib.conv_lib(3).supports(case({ D = 5, H = 9 })))
    end)
    local want = { { 101 }, { 17, 19 }, { 5, 9, 9 } }
    for r = 1, 3 do
      local sp = seen[r]
      assert.same(want[r], sp.input)
      local w = {}
      for i = 1, r do w[i] = 3 end
      assert.same(w, sp.window)
      assert.equal(2, sp.n)
      assert.equal(8, sp.c)
      assert.equal(12, sp.k)
      assert.equal(4, sp.groups)
      assert.equal(2, sp.stride)
      assert.equal(1, sp.padding)
      assert.equal("fp16", sp.dtype)
      assert.is_nil(sp.x)
    end
    -- the plan binds the case's tensors and notes the engine
    local e = { global_index = 3, knobs_text = "", choice = 1, candidates = 2, workspace_bytes = 4096 }
    fake.conv = function(spec) seen.bound = spec return graph(e) end
    fake.version = function() return { version = 91900 } end
    local ins, outs = { input = "I", weight = "W" }, { out = "O" }
    with_dnn(fake, function()
      local plan = dnnlib.conv_lib(2).plan(case({ H = 16 }), ins, outs, {}, { plan = function() return {} end })
      assert.equal("cuDNN 9.19.0 engine 3 (knobs none), heuristic choice 1 of 2, workspace 4096 B", plan.note)
    end)
    assert.equal("I", seen.bound.x)
    assert.equal("W", seen.bound.w)
    assert.equal("O", seen.bound.y)
    assert.is_nil(seen.bound.dtype)
  end)

  it("notes a legacy call (max pooling) as such, with no engine", function()
    local e = { global_index = -1, knobs_text = "", choice = 1, candidates = 0, workspace_bytes = 0,
                legacy_api = "cudnnPoolingForward" }
    with_dnn({ version = function() return { version = 91002, path = "/x/libcudnn.so.9" } end }, function()
      assert.equal("cuDNN 9.10.2 cudnnPoolingForward (legacy API, no engine choice), workspace 0 B",
        dnnlib.note(graph(e)))
    end)
  end)
end)
