-- bench/compare/plant.lua: the planted slowdown of bench/compare/aa.sh appends one spin kernel to
-- every implementation's plan, sized from the reference run's time of the same case, and leaves
-- the implementation's own steps and return values as they were.
local HOME = TILEBENCH_HOME or os.getenv("TILEBENCH_HOME") or "."
local plant = dofile(HOME .. "/bench/compare/plant.lua")

describe("plant.wrap", function()
  local dir
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    assert(require("lfs").mkdir(dir))
    assert(require("lfs").mkdir(dir .. "/raw"))
    local f = assert(io.open(dir .. "/raw/toy.json", "w"))
    f:write('{"operator": "toy", "rows": [{"mode": "default", "dtype": "fp32", "case_id": "n=1", "impl": "cuda", "ms": 0.1},' ..
            '{"mode": "default", "dtype": "fp32", "case_id": "n=1", "impl": "lib", "ms": 0.004}]}')
    f:close()
  end)
  after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

  local function toy()
    local function plan(case, ins, outs, cfg, ctx) return ctx.plan({{fn = "real", args = {1}}}), "finish" end
    return {implementations = {cuda = {plan = plan}, lib = {plan = plan}}}
  end
  local function fake_ctx()
    local ctx = {props = {clock_khz = 2000000}, i64 = function(v) return {i64 = v} end}
    function ctx:kernel(file, name) return file .. ":" .. name end
    ctx.plan = function(steps) return steps end
    return ctx
  end

  it("appends a spin of FRACTION x the reference time less an empty kernel's, in SM cycles", function()
    local env = {TB_PLANT_REF = dir}
    local real_getenv = os.getenv
    os.getenv = function(k) if env[k] ~= nil then return env[k] end return real_getenv(k) end
    local ok, err = pcall(function()
      local op = plant.wrap(toy(), "toy")
      local steps, extra = op.implementations.cuda.plan({dtype = "fp32", id = "n=1"}, {}, {}, {}, fake_ctx())
      assert.equals("finish", extra)                     -- the implementation's other returns pass
      assert.equals(2, #steps)
      assert.same({fn = "real", args = {1}}, steps[1])   -- its own step unchanged, first
      assert.equals("plant_spin.cu:plant_spin", steps[2].fn)
      -- (0.05 x 0.1 ms - 0.0006 ms) x 2e6 kHz = 8800 cycles
      assert.equals(8800, steps[2].args[1].i64)
      -- 4 us: 5 % is under the empty kernel: no spin, the empty kernel only
      local lib = op.implementations.lib.plan({dtype = "fp32", id = "n=1"}, {}, {}, {}, fake_ctx())
      assert.equals(0, lib[2].args[1].i64)
      -- a case the reference lacks: no spin either
      local other = op.implementations.cuda.plan({dtype = "fp16", id = "n=1"}, {}, {}, {}, fake_ctx())
      assert.equals(0, other[2].args[1].i64)
    end)
    os.getenv = real_getenv
    assert(ok, err)
  end)

  it("says when the reference run is missing", function()
    local real_getenv = os.getenv
    os.getenv = function(k) if k == "TB_PLANT_REF" then return dir .. "/none" end return real_getenv(k) end
    local op = plant.wrap(toy(), "toy")
    local ok, err = pcall(op.implementations.cuda.plan, {dtype = "fp32", id = "n=1"}, {}, {}, {}, fake_ctx())
    os.getenv = real_getenv
    assert.is_false(ok)
    assert.equals("plant: no reference " .. dir .. "/none/raw/toy.json", err)
  end)
end)
