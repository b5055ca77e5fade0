-- cmd/slurm.lua: `tilebench slurm [CAMPAIGN] --gpu LABEL --shards N [sbatch options] [--dry-run]`:
-- a campaign as a Slurm job array of N tasks, task K running `tilebench run --shard K/N` into its
-- own run (results/<label>/runs/slurm-<name>-sKofN) with this binary, this source tree, and the
-- compile cache and results on the cluster file system; then a merge job depending on the array
-- (afterany: tilebench.slurm says why) that joins the shards with `merge --complete`. Submitting
-- again runs only the tasks whose journals are incomplete, each resuming its own run. The
-- scripts are written to results/<label>/slurm/<name>/ (with the tasks' logs); --dry-run prints
-- them and the sbatch commands and submits nothing.
local options = require("tilebench.options")
local slurm = require("tilebench.slurm")
local util = require("tilebench.util")
local sys = require("tb.sys")

local M = {}
M.summary = "run a campaign as a Slurm job array (one shard per task) and merge it"

local function positive(v) if v > 0 then return true end return false, "must be > 0" end
local function name_ok(v)
  if util.is_name(v) and v:sub(1, 1) ~= "-" then return true end
  return false, "must be " .. util.NAME_RULE
end

-- run's own options a task passes on (same meaning, same checks).
local PASS = { operator = true, dtype = true, impl = true, cases = true, mode = true, autotune = true,
               ["case-timeout"] = true, gate = true, ["gate-rho"] = true, ["gate-elib"] = true, checks = true,
               devices = true }
local function build_spec()
  local spec = {
    { name = "gpu", type = "label", metavar = "LABEL", desc = "results namespace results/<LABEL>/ (required: the tasks run on nodes this command does not see)" },
    { name = "shards", type = "integer", metavar = "N", validate = positive, desc = "array tasks, one shard of the work items each" },
    { name = "name", type = "string", metavar = "NAME", validate = name_ok,
      desc = "names the job, its runs and results/<LABEL>/slurm/<NAME>/ (default: the campaign's name, else 'run')" },
    { name = "partition", type = "string", metavar = "P", desc = "sbatch --partition for every job" },
    { name = "account", type = "string", metavar = "A", desc = "sbatch --account for every job" },
    { name = "time", type = "string", metavar = "T", desc = "sbatch --time of each task (e.g. 2:00:00)" },
    { name = "merge-time", type = "string", metavar = "T", desc = "sbatch --time of the merge job (default 0:30:00)" },
    { name = "gres", type = "string", metavar = "G", desc = "sbatch --gres of each task (default gpu:1; 'none' for none)" },
    { name = "dry-run", type = "flag", desc = "print the scripts and the sbatch commands; submit nothing" },
  }
  for _, o in ipairs(require("tilebench.cmd.run").spec) do
    if PASS[o.name] then spec[#spec + 1] = o end
  end
  return spec
end
M.spec = build_spec()
M.usage = "usage: tilebench slurm [CAMPAIGN] --gpu LABEL --shards N [--partition P] [--time T] [--gres gpu:1] [--dry-run]\n\n"
  .. "Submits CAMPAIGN (or --operator ...) as a Slurm job array of N tasks, each `tilebench run\n"
  .. "--shard K/N` into results/<LABEL>/runs/slurm-<NAME>-sKofN, and a merge job that runs once\n"
  .. "every task has ended and joins the shards into one run and one set of CSVs. Submitting the\n"
  .. "same command again runs only the shards whose journals are incomplete (each resumes its\n"
  .. "run). Results and the compile cache ($TILEBENCH_CACHE_DIR) must be on a file system every\n"
  .. "node sees; docs/SCALE-OUT.md walks through it.\n\n"
  .. options.help(M.spec) .. "\n"

local function abs(path)
  if path:sub(1, 1) == "/" then return path end
  local pwd = os.getenv("PWD")
  if not pwd or pwd == "" then
    local f = io.popen("pwd")
    pwd = f and f:read("l") or "."
    if f then f:close() end
  end
  return (pwd .. "/" .. path):gsub("/%./", "/"):gsub("/%.$", "")
end

-- The environment every job starts with: the settings of this shell that tilebench reads.
local function job_env(root)
  local env = {}
  for k, v in pairs(sys.environ()) do
    if k:match("^TILEBENCH_") or k == "TRITON_CACHE_DIR" or k == "CUDA_HOME" then env[k] = v end
  end
  env.TILEBENCH_HOME = TILEBENCH_HOME
  env.TILEBENCH_RESULTS_DIR = abs(root)
  -- one compile cache for the login node's `tilebench compile` and every task (NVRTC and Triton
  -- kernels both live there; Triton's own cache beside it)
  local cache = abs(require("tb.kernel").cache_dir())
  env.TILEBENCH_CACHE_DIR = cache
  env.TRITON_CACHE_DIR = env.TRITON_CACHE_DIR or (cache .. "/triton")
  return env
end

local function sbatch(argv)
  local p <close> = sys.spawn(argv, { stderr = "pipe" })
  p:close_stdin()
  local out = {}
  while true do
    local line = p:read_line(120)
    if not line then break end
    out[#out + 1] = line
  end
  local kind, val = p:wait(10)
  local err = p:stderr_tail(5)
  if kind ~= "exit" or val ~= 0 then
    error(string.format("%s failed (%s %s): %s", table.concat(argv, " "), tostring(kind), tostring(val),
      err ~= "" and err or table.concat(out, "\n")), 0)
  end
  local id = (out[#out] or ""):match("^(%d+)")
  if not id then error(string.format("%s: no job id in its answer '%s'", table.concat(argv, " "), table.concat(out, " ")), 0) end
  return id
end

function M.run(args)
  local opts, pos = options.parse(args, M.spec, "slurm")
  if not opts.gpu then options.usage_error("slurm: give --gpu LABEL (the results namespace every task writes to)") end
  if not opts.shards then options.usage_error("slurm: give --shards N") end
  if #pos > 1 then options.usage_error("slurm: unexpected argument '%s'", pos[2]) end
  -- the tasks' run options: this command's pass-through options as given (no --shard, --gpu)
  local run_args = {}
  if pos[1] then -- a file by its absolute path (the tasks start elsewhere), a name in campaigns/ as is
    run_args[1] = require("lfs").attributes(pos[1], "mode") == "file" and abs(pos[1]) or pos[1]
  end
  for _, o in ipairs(M.spec) do
    local v = PASS[o.name] and opts[o.name]
    if v ~= nil and v ~= false then
      run_args[#run_args + 1] = "--" .. o.name
      if o.type ~= "flag" then
        run_args[#run_args + 1] = type(v) == "table" and table.concat(v, ",") or tostring(v)
      end
    end
  end
  -- plan it here: a campaign or selection that does not plan fails now, not in N tasks
  local run = require("tilebench.cmd.run")
  local ropts, rpos = options.parse(run_args, run.spec, "run")
  local settings, items = run.plan(ropts, rpos)
  if opts.shards > #items then
    options.usage_error("slurm: %d shards for %d work items: give --shards %d or fewer", opts.shards, #items, #items)
  end
  local name = opts.name or settings.name or "run"
  if not util.is_name(name) then options.usage_error("slurm: the campaign's name '%s' cannot name runs; give --name", name) end
  local root = run.results_root()
  local label, n = opts.gpu, opts.shards

  -- which shards still have work (a re-submission runs only those)
  local tasks, done, states = {}, {}, {}
  local full_args = { table.unpack(run_args) }
  full_args[#full_args + 1] = "--gpu"
  full_args[#full_args + 1] = label
  for k = 1, n do
    local state, detail = slurm.shard_state(root, label, name, k, n, full_args)
    if state == "mismatch" then
      options.usage_error("slurm: %s; give another --name for another campaign", detail)
    end
    states[k] = state
    if state == "complete" then done[#done + 1] = k else tasks[#tasks + 1] = k end
  end

  local jobdir = abs(string.format("%s/%s/slurm/%s", root, label, name))
  local gres = opts.gres or "gpu:1"
  local task_script, merge_script = slurm.job_scripts({
    exe = sys.exe(), name = name, label = label, n = n, tasks = #tasks > 0 and tasks or { 1 },
    run_args = run_args, env = job_env(root), jobdir = jobdir, partition = opts.partition, account = opts.account,
    time = opts.time, gres = gres ~= "none" and gres or nil, merge_time = opts["merge-time"] or "0:30:00" })
  local task_path, merge_path = jobdir .. "/array.sbatch", jobdir .. "/merge.sbatch"

  io.write(string.format("campaign %s: %d work items in %d shards on %s; %d shard%s to run%s\n", name, #items, n, label,
    #tasks, #tasks == 1 and "" or "s", #done > 0 and string.format(" (%s complete)", slurm.array_spec(done)) or ""))
  if opts["dry-run"] then
    if #tasks > 0 then io.write("--- ", task_path, "\n", task_script) end
    io.write("--- ", merge_path, "\n", merge_script)
    io.write("--- would submit:\n")
    if #tasks > 0 then
      io.write("sbatch --parsable ", task_path, "\n")
      io.write("sbatch --parsable --dependency=afterany:<array job id> ", merge_path, "\n")
    else
      io.write("sbatch --parsable ", merge_path, "\n")
    end
    return 0
  end

  util.mkdir_p(jobdir .. "/logs")
  for path, text in pairs({ [task_path] = task_script, [merge_path] = merge_script }) do
    local ok, err = sys.write_atomic(path, text)
    if not ok then error(err, 0) end
  end
  local ids = {}
  local merge_id
  if #tasks > 0 then
    local array_id = sbatch({ "sbatch", "--parsable", task_path })
    ids[#ids + 1] = array_id
    merge_id = sbatch({ "sbatch", "--parsable", "--dependency=afterany:" .. array_id, merge_path })
    io.write(string.format("submitted array job %s (tasks %s of %d) and merge job %s (after every task has ended)\n",
      array_id, slurm.array_spec(tasks), n, merge_id))
  else
    merge_id = sbatch({ "sbatch", "--parsable", merge_path })
    io.write(string.format("every shard is complete: submitted merge job %s\n", merge_id))
  end
  ids[#ids + 1] = merge_id
  local list = table.concat(ids, ",")
  io.write(string.format("follow:     squeue -j %s\n", list))
  io.write(string.format("afterwards: sacct -j %s --format=JobID,JobName,State,ExitCode,Elapsed,NodeList\n", list))
  io.write(string.format("logs:       %s/logs/\n", jobdir))
  io.write(string.format("merged run: %s/%s/runs/slurm-%s-merged-%s (CSVs in %s/%s/csv/)\n", abs(root), label, name,
    merge_id, abs(root), label))
  return 0
end

return M
