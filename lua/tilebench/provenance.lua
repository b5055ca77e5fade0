-- provenance.lua: runs/<run-id>/provenance.json, what a result needs to be trusted later:
-- tilebench's git sha and dirty state, versions (tilebench, Lua, driver, CUDA, NVRTC, cuBLASLt
-- as the worker found them), the device, the host, argv, the protocol and the gate.
local sys = require("tb.sys")
local journal = require("tilebench.journal")

local M = {}

local function shell_quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

-- Runs a command, returns its output (trailing newline removed) or nil.
local function capture(cmd)
  local fh = io.popen(cmd .. " 2>/dev/null")
  if not fh then return nil end
  local out = fh:read("a")
  local ok = fh:close()
  if not ok then return nil end
  return (out:gsub("%s+$", ""))
end

-- {sha, dirty, changed = [paths]} of the source tree at home, or {error = ...} when it is not
-- a git checkout (an installed copy): then the build's sha is all there is.
function M.git(home)
  local q = shell_quote(home)
  local sha = capture("git -C " .. q .. " rev-parse HEAD")
  if not sha or sha == "" then return { error = "not a git checkout: " .. tostring(home) } end
  local status = capture("git -C " .. q .. " status --porcelain") or ""
  local changed = {}
  for l in status:gmatch("[^\n]+") do changed[#changed + 1] = l end
  return { sha = sha, dirty = #changed > 0, changed = changed }
end

-- The timer's option defaults in this build (tb.timer.options, as the help prints them): the
-- protocol of every field neither the command line nor the campaign set. `protocol` records only
-- those that were set, and the defaults change between versions (session 12: conditions
-- "interleave", capped_exposure 1, capped_preload 1, where they had been "sequential", 0, 0).
function M.timer_defaults()
  local ok, timer = pcall(require, "tb.timer")
  if not ok or type(timer) ~= "table" or type(timer.options) ~= "table" then return nil end
  local d = {}
  for _, o in ipairs(timer.options) do d[o.name] = o.default end
  return d
end

-- opts: argv, campaign (settings), protocol, gate, run_id, worker (the worker's hello: versions
-- and device), label, shard, resumed_from.
function M.collect(opts)
  local u = sys.uname() or {}
  local env_keep = {}
  for _, k in ipairs({ "CUDA_VISIBLE_DEVICES", "TILEBENCH_CUDA_LIB_DIR", "TILEBENCH_OPERATOR_PATH",
                       "CUDA_HOME", "TILEBENCH_CACHE_DIR", "SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID",
                       "SLURM_ARRAY_TASK_ID", "SLURMD_NODENAME" }) do
    env_keep[k] = sys.getenv(k)
  end
  local w = opts.worker or {}
  local settings = opts.campaign or {}
  return {
    run_id = opts.run_id,
    gpu = opts.label,
    started = opts.started or sys.iso_time(),
    tilebench = { version = TILEBENCH_VERSION, build_sha = TILEBENCH_GIT_SHA, build_dirty = TILEBENCH_GIT_DIRTY, home = TILEBENCH_HOME,
                  git = M.git(TILEBENCH_HOME), exe = sys.exe() },
    lua = _VERSION,
    versions = w.versions, versions_error = w.versions_error,
    device = w.device,
    devices = w.devices, -- `run --devices`: every GPU of the run, {ordinal, device, pid} (tilebench.pools)
    host = { hostname = sys.hostname(), sysname = u.sysname, release = u.release, machine = u.machine,
             version = u.version },
    environment = env_keep,
    argv = opts.argv,
    campaign = { name = settings.name, path = settings.path, operators = settings.operators,
                 dtypes = settings.dtypes, impls = settings.impls, cases = settings.cases,
                 modes = settings.modes, case_timeout = settings.case_timeout },
    protocol = opts.protocol or settings.protocol,
    timer_defaults = M.timer_defaults(),
    gate = opts.gate or settings.gate,
    shard = opts.shard,
    isolated = opts.isolated,
    torch = opts.torch, -- {python, torch, torch_cuda} when the run includes torch (tilebench.torch)
    triton = opts.triton, -- {triton} or {error} when the run includes triton (tilebench.triton)
  }
end

function M.write(path, record)
  local ok, err = sys.write_atomic(path, journal.encode(record) .. "\n")
  if not ok then error(err, 0) end
  return path
end

function M.read(path)
  local fh, err = io.open(path, "rb")
  if not fh then return nil, err end
  local text = fh:read("a")
  fh:close()
  return journal.decode(text)
end

return M
