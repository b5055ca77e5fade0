-- precompile's pool (M.start): children speak the unit/fail/done protocol on stdout; the owner
-- waits for the units of one item at a time (the overlapped phase) and sums up at the end. The
-- children here are shell scripts standing in for `tilebench compile --part k/n`.
local pre = require("tilebench.precompile")

-- units: two groups (so two children with jobs = 2: unit i goes to child (group - 1) % 2 + 1)
local function units()
  local op = { name = "op" }
  local u = {}
  for i = 1, 4 do
    u[i] = { op = op, dtype = "fp32", case = { id = i }, impl = "cuda", cfg = { G = (i - 1) % 2 } }
  end
  return u
end

local function child(script) return function() return { "sh", "-c", script } end end

describe("precompile pool", function()
  it("settles a unit when its child reports it, and sums kernels and failures at the end", function()
    local us = units()
    local of = pre.assign(us, 2)
    assert.same({ 1, 2, 1, 2 }, of)
    -- child 1 reports units 1 and 3 (3 after a pause), child 2 unit 2 and a failure of unit 4
    local pool = pre.start(us, 2, function(k)
      if k == 1 then
        return { "sh", "-c", "printf 'unit\\t1\\tk1:c\\n'; sleep 0.3; printf 'unit\\t3\\tk3:h\\ndone\\n'" }
      end
      return { "sh", "-c", "printf 'unit\\t2\\tk1:h,k2:c\\nfail\\t4\\tcompile\\tx.cu: error\\\\nline two\\ndone\\n'" }
    end)
    assert.is_true(pool:wait_units({ 1, 2 }))
    assert.is_true(pool:settled(1) and pool:settled(2))
    assert.is_true(pool:wait_units({ 3, 4 }))
    pool:wait_all()
    local sum = pool:summary()
    assert.equal(3, sum.done)
    assert.equal(1, sum.failed_plans)
    assert.equal("x.cu: error\nline two", sum.failures[4])
    assert.equal("compile", sum.classes[4])
    assert.equal(3, sum.kernels) -- k1 (compiled once, cached once), k2, k3
    assert.equal(2, sum.compiled)
    assert.equal(1, #sum.groups_failed)
    assert.same({}, sum.problems)
  end)

  it("counts the units of a child that ended early as settled (left to the workers) and says so", function()
    local us = units()
    local pool = pre.start(us, 2, function(k)
      if k == 1 then return { "sh", "-c", "printf 'unit\\t1\\tk1:c\\n'; exit 3" } end
      return { "sh", "-c", "printf 'unit\\t2\\tk2:c\\nunit\\t4\\tk4:c\\ndone\\n'" }
    end)
    assert.is_true(pool:wait_units({ 3 })) -- child 1 died before unit 3
    assert.is_true(pool:settled(3))
    pool:wait_all()
    local sum = pool:summary()
    assert.equal(3, sum.done)
    assert.equal(1, #sum.problems)
    assert.truthy(sum.problems[1]:find("compile process 1/2 ended", 1, true))
  end)

  it("stops waiting when interrupted, and close() ends the children", function()
    local us = units()
    local pool = pre.start(us, 2, child("sleep 30"))
    local calls = 0
    assert.is_false(pool:wait_units({ 1 }, function() calls = calls + 1; return calls > 3 end))
    assert.is_false(pool:settled(1))
    pool:close()
    assert.equal(0, pool.live)
    assert.is_true(pool:settled(1)) -- its child is gone: left to the workers
  end)
end)

describe("precompile pool's reading", function()
  it("reads every line written so far before waiting for an item, so children are not held back", function()
    local op = { name = "op" }
    local us = {}
    for i = 1, 60 do us[i] = { op = op, dtype = "fp32", case = { id = i }, impl = "cuda", cfg = { G = 0 } } end
    -- one group, one child: all 60 units reported at once, "done" a while later
    local pool = pre.start(us, 1, child("i=1; while [ $i -le 60 ]; do printf 'unit\\t%d\\tk%d:c\\n' $i $i; i=$((i+1)); done; sleep 1; printf 'done\\n'"))
    require("tb.sys").sleep(0.3)
    assert.is_true(pool:wait_units({ 1 }))
    assert.equal(60, pool.finished) -- not just unit 1's line
    pool:wait_all()
    assert.equal(60, pool:summary().done)
  end)
end)

describe("precompile.assign", function()
  local opmod = require("tilebench.operator")
  local runner = require("tilebench.runner")
  it("gives configurations that compile the same kernels to one process", function()
    local op = opmod.load("vector_add")
    local case = opmod.cases_of(op, "fp16")[1]
    local us = pre.units({ { operator = "vector_add", dtype = "fp16", mode = "autotune", _case = case, case_index = 1,
                             impls = { "cuda" } } })
    local of = pre.assign(us, 64)
    local proc = {}
    for i, u in ipairs(us) do if u.impl then proc[runner.config_string(u.cfg)] = of[i] end end
    -- WAVES only caps the grid: the same kernel (BLOCK and UNROLL are its defines)
    assert.equal(proc["BLOCK=256,UNROLL=4,WAVES=0"], proc["BLOCK=256,UNROLL=4,WAVES=2"])
    assert.are_not.equal(proc["BLOCK=256,UNROLL=4,WAVES=0"], proc["BLOCK=256,UNROLL=2,WAVES=0"])
    assert.truthy(pre.kernel_ids(us[2]):find("DTYPE=__half", 1, true))
    -- a plan that cannot be made (no operator module) keeps its own group
    assert.is_nil(pre.kernel_ids({ op = { name = "op" }, dtype = "fp32", case = { id = 1 }, impl = "cuda", cfg = {} }))
  end)
end)
