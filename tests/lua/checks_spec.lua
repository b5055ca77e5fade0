-- checks (lua/tilebench/checks.lua): the honesty checks' logic on stand-in tensors (tb.tensor and
-- tb.verify replaced before the module loads: host vectors, exact comparison), against honest and
-- cheating "plans": one that computes once and then does nothing, one that replays a remembered
-- result, one that writes an input. tests/gpu/eval_honesty.sh runs the same on a GPU.
local function tensor_of(vals) return { fake = true, vals = vals, dtype = "fp32" } end
package.loaded["tb.tensor"] = {
  is_tensor = function(t) return type(t) == "table" and t.fake == true end,
  randn = function(shape, _, seed)
    local v = {}
    for i = 1, shape[1] do v[i] = (seed * 7 + i * 13) % 101 end
    return tensor_of(v)
  end,
}
local function methods(t)
  t.copy = function(self) local v = {} for i, x in ipairs(self.vals) do v[i] = x end return methods(tensor_of(v)) end
  t.copy_from = function(self, o) for i, x in ipairs(o.vals) do self.vals[i] = x end return self end
  t.close = function(self) self.closed = true end
  t.is_closed = function(self) return self.closed == true end
  return t
end
package.loaded["tb.verify"] = {
  poison = function(t) for i = 1, #t.vals do t.vals[i] = "poison" end return t end,
  compare = function(out, ref)
    local bad, first = 0, nil
    for i = 1, #ref.vals do
      if out.vals[i] ~= ref.vals[i] then
        bad = bad + 1
        first = first or { index = i - 1, got = out.vals[i], expected = ref.vals[i] }
      end
    end
    return { ok = bad == 0, mismatches = bad, numel = #ref.vals, first = { first } }
  end,
}
local checks = require("tilebench.checks")
local verify = package.loaded["tb.verify"]

local N = 4
-- kind: honest | once | memo | mutate
local function setup(kind, clock, kernels_per_run, step_kind)
  local ins = { x = methods(tensor_of({ 1, 2, 3, 4 })) }
  local outs, refs = { out = methods(tensor_of({ 0, 0, 0, 0 })) }, { out = methods(tensor_of({ 0, 0, 0, 0 })) }
  local runs, memo = 0, nil
  local function add1(dst) for i = 1, N do dst.vals[i] = ins.x.vals[i] + 1 end end
  local plan = {
    run = function()
      runs = runs + 1
      if kind == "once" and runs > 1 then return end
      if kind == "memo" and memo then for i = 1, N do outs.out.vals[i] = memo[i] end return end
      add1(outs.out)
      if kind == "memo" then memo = { table.unpack(outs.out.vals) } end
      if kind == "mutate" then for i = 1, N do ins.x.vals[i] = 0 end end
    end,
    kernels = function() return 1 end, steps = function() return 1 end,
    describe = function() return { { kind = step_kind or "kernel", name = "add1" } } end,
  }
  local rplan = { run = function() add1(refs.out) end }
  local op = { name = "fake", dir = "/nonexistent", module = { inputs = function(case, ctx)
    return { x = methods(ctx.randn("x", { N }, "fp32")) } end } }
  local ctx = { tensors = {}, props = {} }
  local snapshot = checks.snapshot(ins, ctx)
  rplan.run()
  plan.run() -- the verified run
  for _ = 1, 5 do plan.run() end -- the timed runs
  return { op = op, case = { seed = 42, params = {}, dtype = "fp32", id = "n=4" }, ins = ins, outs = outs,
           plan = plan, rplan = rplan, snapshot = snapshot, ctx = ctx,
           res = { clock = clock or "cupti", kernels_per_run = kernels_per_run or 1 },
           mismatch = function(r) return "mismatch: " .. r.out.mismatches end,
           verify = function()
             local r = verify.compare(outs.out, refs.out)
             return r.ok, { out = r }
           end }
end

local function statuses(list)
  local out = {}
  for _, c in ipairs(list) do out[#out + 1] = c.name .. "=" .. c.status end
  return table.concat(out, " ")
end

describe("checks.after", function()
  it("passes an honest implementation", function()
    local list, refused = checks.after(setup("honest"))
    assert.is_nil(refused)
    assert.equal("inputs_unchanged=ok kernel_count=ok reverify=ok fresh_inputs=ok", statuses(list))
  end)
  it("refuses a result computed once and kept (reverify)", function()
    local list, refused = checks.after(setup("once"))
    assert.equal("inputs_unchanged=ok kernel_count=ok reverify=refused fresh_inputs=skipped", statuses(list))
    assert.matches("^reverify: the outputs of a run after the timed runs do not verify", refused)
  end)
  it("refuses a result remembered from the first inputs (fresh_inputs)", function()
    local list, refused = checks.after(setup("memo"))
    assert.equal("inputs_unchanged=ok kernel_count=ok reverify=ok fresh_inputs=refused", statuses(list))
    assert.matches("^fresh_inputs: wrong on fresh inputs %(seed %d+%) in the same buffers", refused)
  end)
  it("refuses an implementation that writes its inputs (inputs_unchanged)", function()
    local list, refused = checks.after(setup("mutate"))
    assert.equal("inputs_unchanged=refused kernel_count=skipped reverify=skipped fresh_inputs=skipped", statuses(list))
    assert.matches("input 'x' was changed by the implementation: 4 of 4 elements differ %(first at %[0%]: 0, was 1%)", refused)
  end)
  it("refuses kernels the plan did not launch, and skips the count without CUPTI", function()
    local _, refused = checks.after(setup("honest", "cupti", 2))
    assert.matches("^kernel_count: 2 kernels ran per timed run, the plan launches 1", refused)
    local list, none = checks.after(setup("honest", "cupti", 0.5))
    assert.is_nil(none)
    assert.equal("skipped", list[2].status)
    list = checks.after(setup("honest", "events"))
    assert.equal("skipped", list[2].status)
    assert.matches("cupti clock", list[2].reason)
  end)
  it("skips the count for a plan that calls a library or torch (one step, many kernels)", function()
    for _, kind in ipairs({ "call", "copy" }) do
      local list, refused = checks.after(setup("honest", "cupti", 3, kind))
      assert.is_nil(refused)
      assert.equal("skipped", list[2].status)
      assert.matches("the plan makes a " .. kind .. " step %(add1%)", list[2].reason)
    end
  end)
  it("draws the fresh inputs from another seed", function()
    assert.are_not.equal(42, checks.fresh_seed(42))
    assert.equal(checks.fresh_seed(42), checks.fresh_seed(42))
  end)
end)

describe("checks.wanted", function()
  it("covers every implementation, the ones named, or none", function()
    assert.is_true(checks.wanted({ checks = true }, "torch"))
    assert.is_true(checks.wanted({ checks = { "candidate" } }, "candidate"))
    assert.is_false(checks.wanted({ checks = { "candidate" } }, "torch"))
    assert.is_false(checks.wanted({}, "cuda"))
  end)
end)
