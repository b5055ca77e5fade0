-- tilebench.slurm: the pure parts of `tilebench slurm` (names, shard states, the sbatch scripts).
-- tests/slurm/array.sh runs the scripts through a real one-node cluster.
local slurm = require("tilebench.slurm")
local rundir = require("tilebench.rundir")
local journal = require("tilebench.journal")

describe("tilebench.slurm", function()
  it("names each shard's run the same on every submission", function()
    assert.equal("slurm-suite-s2of4", slurm.run_id("suite", 2, 4))
  end)

  it("quotes for sh only what needs it", function()
    assert.equal("/a/b_c-1.lua", slurm.quote("/a/b_c-1.lua"))
    assert.equal("'a b'", slurm.quote("a b"))
    assert.equal("'it'\\''s'", slurm.quote("it's"))
    assert.equal("'$HOME'", slurm.quote("$HOME"))
  end)

  it("writes task lists as sbatch --array ranges", function()
    assert.equal("1-4", slurm.array_spec({ 1, 2, 3, 4 }))
    assert.equal("2", slurm.array_spec({ 2 }))
    assert.equal("1-2,4,6-7", slurm.array_spec({ 1, 2, 4, 6, 7 }))
  end)

  it("drops what differs between shards from a run's args", function()
    assert.same({ "suite", "--gpu", "H200" },
      slurm.campaign_args({ "suite", "--shard", "1/4", "--gpu", "H200", "--run-id", "x", "--shard=2/4", "--quiet" }))
  end)

  it("writes an array script that runs or resumes its shard, and a merge that refuses incomplete shards", function()
    local task, merge = slurm.job_scripts({ exe = "/opt/tb/tilebench", name = "suite", label = "H200", n = 4,
      tasks = { 2, 4 }, run_args = { "suite", "--mode", "default" },
      env = { TILEBENCH_RESULTS_DIR = "/shared/results", TILEBENCH_CACHE_DIR = "/shared/cache dir" },
      jobdir = "/shared/results/H200/slurm/suite", partition = "gpu", time = "2:00:00", gres = "gpu:1",
      merge_time = "0:30:00" })
    assert.matches("#SBATCH %-%-array=2,4\n", task)
    assert.matches("#SBATCH %-%-gres=gpu:1\n", task)
    assert.matches("#SBATCH %-%-partition=gpu\n", task)
    assert.matches("#SBATCH %-%-output=/shared/results/H200/slurm/suite/logs/task%-%%a%-%%A.out\n", task)
    assert.matches("export TILEBENCH_CACHE_DIR='/shared/cache dir'\n", task, 1, true)
    assert.matches('id=slurm-suite-s${k}of4\n', task, 1, true)
    assert.matches('exec /opt/tb/tilebench run --resume "$id" --gpu H200\n', task, 1, true)
    assert.matches('exec /opt/tb/tilebench run suite --mode default --gpu H200 --shard "$k/4" --run-id "$id"\n',
      task, 1, true)
    assert.is_nil(merge:find("gres", 1, true)) -- the merge needs no GPU
    assert.matches("merge --complete --gpu H200", merge, 1, true)
    for k = 1, 4 do assert.matches("/runs/slurm-suite-s" .. k .. "of4", merge, 1, true) end
  end)

  describe("shard_state", function()
    local root
    before_each(function()
      root = os.tmpname()
      os.remove(root)
      rundir.mkdirs(root)
    end)
    after_each(function() os.execute("rm -rf '" .. root .. "'") end)

    local items = {}
    for i = 1, 4 do
      items[i] = { operator = "op", mode = "default", dtype = "fp32", case_index = i, case_id = "n=" .. i, impls = { "a", "b" } }
    end
    local args = { "--operator", "op", "--gpu", "X" }
    local function make(k, entries, run_args)
      local dir = rundir.run_path(root, "X", slurm.run_id("c", k, 2))
      rundir.mkdirs(dir)
      local a = { table.unpack(run_args or args) }
      a[#a + 1] = "--shard"; a[#a + 1] = k .. "/2"
      rundir.write_run_json(dir, { run_id = slurm.run_id("c", k, 2), label = "X", args = a, items = items, shard = k .. "/2" })
      local j = journal.open(dir .. "/journal.jsonl", { run_id = "x" })
      j:append(entries)
      j:close()
    end
    local function row(i, impl) return { operator = "op", mode = "default", dtype = "fp32", case_index = i, impl = impl, status = "ok" } end

    it("tells new, incomplete, complete and another campaign's runs apart", function()
      assert.equal("new", (slurm.shard_state(root, "X", "c", 1, 2, args)))
      make(1, { row(1, "a"), row(1, "b"), row(3, "a") }) -- shard 1/2 is items 1 and 3
      local state, detail = slurm.shard_state(root, "X", "c", 1, 2, args)
      assert.equal("incomplete", state)
      assert.matches("lacks 1 entry", detail)
      make(2, { row(2, "a"), row(2, "b"), row(4, "a"), row(4, "b") })
      assert.equal("complete", (slurm.shard_state(root, "X", "c", 2, 2, args)))
      local st, why = slurm.shard_state(root, "X", "c", 2, 2, { "--operator", "other", "--gpu", "X" })
      assert.equal("mismatch", st)
      assert.matches("was started with", why)
    end)
  end)
end)
