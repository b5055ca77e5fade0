-- tilebench.rundir: the run directory: run.json with the resolved items (and format 1), the
-- per-operator plan from items, what a resume still has to run, entries every item needs.
local rundir = require("tilebench.rundir")
local journal = require("tilebench.journal")

local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  require("tilebench.util").mkdir_p(p)
  return p
end

local function item(op, dtype, i, impls)
  return { operator = op, mode = "default", dtype = dtype, case_index = i, case_id = "n=" .. i,
           params = { n = i }, impls = impls, category = "Point-wise", _case = { params = { n = i } } }
end

describe("rundir", function()
  it("run ids are sortable, distinct and valid path components", function()
    local a, b = rundir.new_run_id(), rundir.new_run_id()
    assert.matches("^%d%d%d%d%d%d%d%dT%d%d%d%d%d%dZ%-%x%x%x%x%x%x$", a)
    assert.are_not.equal(a, b)
    assert.is_true(rundir.valid_run_id(a))
    assert.is_false(rundir.valid_run_id("../x"))
  end)

  it("stores the resolved items in run.json and reads them back; format 1 has none", function()
    local dir = tmpdir()
    local items = { item("a", "fp16", 1, { "lib", "cuda" }), item("a", "fp32", 1, { "lib", "cuda" }) }
    rundir.write_run_json(dir, { run_id = "r1", label = "fake", args = { "--operator", "a" }, items = items })
    local rec = assert(rundir.read_run_json(dir))
    assert.equal(rundir.RUN_FORMAT, rec.format)
    assert.equal(2, #rec.items)
    assert.is_nil(rec.items[1]._case) -- private fields stay in the parent
    assert.same({ n = 1 }, rec.items[2].params)
    local fh = assert(io.open(dir .. "/run.json", "wb"))
    fh:write('{"run_id":"r0","label":"fake","args":["--operator","a"]}\n')
    fh:close()
    rec = assert(rundir.read_run_json(dir))
    assert.is_nil(rec.items)
    for _, bad in ipairs({ '{"args":[],"label":"../x"}', '{"args":[],"items":[{"operator":"a/b","mode":"default"}]}',
                           '{"args":[],"items":[{"operator":"a","mode":"default","dtype":"fp16","case_index":1.5,"impls":["c"]}]}',
                           '{"args":[],"items":[{"operator":"a","mode":"default","dtype":"fp16","case_index":1,"impls":[]}]}',
                           '{"args":[],"items":[{"operator":"a","mode":"default","dtype":"fp16","case_index":1,"impls":["candidate"],"candidate":{"backend":"cuda","file":"/tmp/x.cu"}}]}',
                           '{"args":"x"}', 'not json' }) do
      fh = assert(io.open(dir .. "/run.json", "wb"))
      fh:write(bad, "\n")
      fh:close()
      local none, why = rundir.read_run_json(dir)
      assert.is_nil(none)
      assert.matches("run.json", why)
    end
    os.remove(dir .. "/run.json")
    assert.matches("is missing", select(2, rundir.read_run_json(dir)))
    os.remove(dir)
  end)

  it("plans outputs from items alone and knows what a resume still runs", function()
    local items = { item("a", "fp16", 1, { "lib", "cuda" }), item("a", "fp16", 2, { "lib", "cuda" }),
                    item("a", "fp32", 1, { "lib", "cuda" }), item("b", "fp32", 1, { "cuda" }) }
    local plan, order = rundir.plan_of(items)
    assert.same({ "a", "b" }, order)
    assert.same({ "fp16", "fp32" }, plan.a.dtypes)
    assert.same({ "lib", "cuda" }, plan.a.impls)
    assert.equal("n=2", plan.a.cases.fp16[2].id)
    assert.equal(3, plan.a.count)
    local function row(it, impl) return { operator = it.operator, mode = it.mode, dtype = it.dtype, case_index = it.case_index, impl = impl } end
    local rows = { row(items[1], "lib"), row(items[1], "cuda"), row(items[2], "cuda"), row(items[4], "cuda") }
    local todo = rundir.todo(items, rows)
    assert.equal(2, #todo)
    assert.same({ "lib" }, todo[1].impls)          -- item 2: only what has no entry
    assert.same({ "lib", "cuda" }, todo[2].impls)  -- item 3: all of it
    assert.same({ "lib", "cuda" }, items[2].impls) -- the plan itself is untouched
    assert.same({ "a|default|fp16|2|lib", "a|default|fp32|1|lib", "a|default|fp32|1|cuda" }, rundir.unaccounted(items, rows))
  end)
end)
