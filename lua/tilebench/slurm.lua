-- slurm.lua: a campaign as a Slurm job array (`tilebench slurm`, cmd/slurm.lua). Its pure parts:
-- the names (each shard's run id, stable across submissions, so a task that runs again resumes
-- its own run), which shards a submission still has to run (a shard whose journal holds every
-- planned entry is done), and the two sbatch scripts: the array, whose task K runs
-- `tilebench run --shard K/N` into its run (or `--resume`s it), and the merge job
-- (`tilebench merge --complete`), which depends on the array with afterany (see job_scripts).
-- Nothing here runs Slurm; cmd/slurm.lua calls sbatch with these scripts.
local rundir = require("tilebench.rundir")
local journal = require("tilebench.journal")
local campaign = require("tilebench.campaign")

local M = {}

-- The run id of shard k of n: the same on every submission of this campaign and shard count.
function M.run_id(name, k, n)
  return string.format("slurm-%s-s%dof%d", name, k, n)
end

-- A word quoted for sh.
function M.quote(s)
  s = tostring(s)
  if s:match("^[%w%./_:=,+@%-]+$") then return s end
  return "'" .. s:gsub("'", "'\\''") .. "'"
end

local function words(list)
  local out = {}
  for i, w in ipairs(list) do out[i] = M.quote(w) end
  return table.concat(out, " ")
end

-- The stored args of a run without what differs between shards (--shard, --run-id) and what
-- only changes its output (--quiet).
function M.campaign_args(args)
  local out, skip = {}, false
  for _, a in ipairs(args or {}) do
    if skip then skip = false
    elseif a == "--quiet" then -- nothing to skip
    elseif a == "--shard" or a == "--run-id" then skip = true
    elseif not (a:match("^%-%-shard=") or a:match("^%-%-run%-id=")) then out[#out + 1] = a end
  end
  return out
end

-- What shard k of n has done under root/label: "new" (no run yet), "incomplete" (its journal
-- lacks planned entries: killed, preempted, failed) or "complete", and a detail; "mismatch"
-- when the run there was started with other options than args (another campaign under the
-- same name).
function M.shard_state(root, label, name, k, n, args)
  local dir = rundir.run_path(root, label, M.run_id(name, k, n))
  local rec = rundir.read_run_json(dir)
  if not rec then return "new", dir end
  local want, got = words(M.campaign_args(args)), words(M.campaign_args(rec.args))
  if want ~= got then
    return "mismatch", string.format("%s was started with `%s`, not `%s`", dir, got, want)
  end
  if not rec.items then return "incomplete", dir end
  local _, rows = journal.read(dir .. "/journal.jsonl")
  local missing = rundir.unaccounted(campaign.shard(rec.items, k, n), rows or {})
  if #missing > 0 then
    return "incomplete", string.format("%s lacks %d entr%s", dir, #missing, #missing == 1 and "y" or "ies")
  end
  return "complete", dir
end

-- "1-3,5" for the sorted task ids.
function M.array_spec(ks)
  local parts, i = {}, 1
  while i <= #ks do
    local j = i
    while j < #ks and ks[j + 1] == ks[j] + 1 do j = j + 1 end
    parts[#parts + 1] = i == j and tostring(ks[i]) or string.format("%d-%d", ks[i], ks[j])
    i = j + 1
  end
  return table.concat(parts, ",")
end

-- The exports every job starts with: the same binary and source tree, results and compile
-- cache on the cluster file system (absolute paths), and the TILEBENCH_* settings of the
-- submitting shell. env: {NAME = value}.
local function exports(env)
  local names = {}
  for k in pairs(env) do names[#names + 1] = k end
  table.sort(names)
  local lines = {}
  for _, k in ipairs(names) do lines[#lines + 1] = string.format("export %s=%s", k, M.quote(env[k])) end
  return table.concat(lines, "\n")
end

local function directives(d)
  local lines = {}
  for _, kv in ipairs(d) do
    if kv[2] ~= nil then lines[#lines + 1] = string.format("#SBATCH --%s=%s", kv[1], kv[2]) end
  end
  return table.concat(lines, "\n")
end

-- The two scripts. o: exe, name, label, n (shards), tasks (the ids to run), run_args (run's
-- options without --shard/--gpu), env (exports), jobdir (logs), partition, time, gres,
-- merge_time, account, extra (further #SBATCH lines, as given).
--
-- The merge depends on the array with afterany, not afterok: a task that fails or is preempted
-- leaves the merge job to run and refuse the incomplete shard with a message naming it and the
-- command that continues it (re-submitting `tilebench slurm`), where afterok would leave the
-- merge pending for ever (DependencyNeverSatisfied) with nothing said.
function M.job_scripts(o)
  local n = o.n
  local common = { { "partition", o.partition }, { "account", o.account } }
  local array = { { "job-name", "tb-" .. o.name }, { "array", M.array_spec(o.tasks) },
                  { "output", o.jobdir .. "/logs/task-%a-%A.out" }, { "nodes", "1" }, { "ntasks", "1" },
                  { "time", o.time }, { "gres", o.gres } }
  for _, kv in ipairs(common) do array[#array + 1] = kv end
  local run_cmd = { o.exe, "run" }
  for _, a in ipairs(o.run_args) do run_cmd[#run_cmd + 1] = a end
  local task = string.format([[#!/bin/bash
# tilebench slurm: campaign %s as %d shards, one per array task (generated; re-submitting
# `tilebench slurm` runs again only the tasks whose journals are incomplete).
%s
set -euo pipefail
%s
k=${SLURM_ARRAY_TASK_ID:?this script runs as a Slurm array task}
id=%s
run_dir="$TILEBENCH_RESULTS_DIR"/%s/runs/"$id"
echo "tilebench slurm: task $k/%d on $(hostname), run $run_dir"
if [ -f "$run_dir/run.json" ]; then
  # the task ran before (failed, preempted, killed): continue its own run
  exec %s run --resume "$id" --gpu %s
fi
exec %s --gpu %s --shard "$k/%d" --run-id "$id"
]], o.name, n, directives(array), exports(o.env), string.format("slurm-%s-s${k}of%d", o.name, n), -- o.name passed util.is_name
    M.quote(o.label), n, M.quote(o.exe), M.quote(o.label), words(run_cmd), M.quote(o.label), n)
  local dirs = {}
  for k = 1, n do dirs[k] = '"$TILEBENCH_RESULTS_DIR"/' .. M.quote(o.label) .. "/runs/" .. M.quote(M.run_id(o.name, k, n)) end
  local merge_d = { { "job-name", "tb-" .. o.name .. "-merge" }, { "output", o.jobdir .. "/logs/merge-%j.out" },
                    { "nodes", "1" }, { "ntasks", "1" }, { "time", o.merge_time } }
  for _, kv in ipairs(common) do merge_d[#merge_d + 1] = kv end
  local merge = string.format([[#!/bin/bash
# tilebench slurm: merges the %d shards of campaign %s once every array task has ended
# (generated). `merge --complete` refuses a missing or incomplete shard, naming it.
%s
set -euo pipefail
%s
exec %s merge --complete --gpu %s --output %s-merged-"${SLURM_JOB_ID:-local}" \
  %s
]], n, o.name, directives(merge_d), exports(o.env), M.quote(o.exe), M.quote(o.label),
    M.quote("slurm-" .. o.name), table.concat(dirs, " \\\n  "))
  return task, merge
end

return M
