-- cmd/compile.lua: `tilebench compile [CAMPAIGN.lua] [--operator A,B] [run's selection options]
-- [--jobs N]`: compiles, without a GPU, every kernel the same `tilebench run` would compile, in N
-- processes at once, into the NVRTC cache ($TILEBENCH_CACHE_DIR). Run it before a run on a
-- machine whose GPU time is dear: the run then loads every kernel from the cache. A kernel that
-- does not compile is reported with its operator, case and configuration (exit 1).
local options = require("tilebench.options")
local sys = require("tb.sys")

local M = {}
M.summary = "compile (NVRTC, no GPU) the kernels a run would use, in parallel, into the cache"

local function positive(v) if v > 0 then return true end return false, "must be > 0" end

-- The selection options are run's own (same meaning, same checks).
local SELECT = { operator = true, dtype = true, impl = true, cases = true, mode = true, autotune = true,
                 shard = true }
local function build_spec()
  local spec = {}
  for _, o in ipairs(require("tilebench.cmd.run").spec) do
    if SELECT[o.name] then spec[#spec + 1] = o end
  end
  spec[#spec + 1] = { name = "jobs", type = "integer", metavar = "N", validate = positive,
                      desc = "compile in N processes at once (default: the CPUs this process may use)" }
  spec[#spec + 1] = { name = "quiet", type = "flag", desc = "print only failures and the summary" }
  spec[#spec + 1] = { name = "items", type = "string", metavar = "FILE", hidden = true,
                      desc = "(internal) the work items to compile, from `run`'s precompile phase" }
  spec[#spec + 1] = { name = "part", type = "string", metavar = "K/N", hidden = true,
                      desc = "(internal) compile the units k, k+N, ... and report them on stdout" }
  return spec
end
M.spec = build_spec()
M.usage = "usage: tilebench compile [CAMPAIGN.lua] [--operator A,B] [--autotune] [--cases SPEC] [--jobs N]\n\n"
  .. "Compiles with NVRTC (no GPU needed) every kernel `tilebench run` with the same campaign and\n"
  .. "selection would compile: references, default configurations, and with --autotune every valid\n"
  .. "candidate, as plans made for an H200. Kernels land in the NVRTC cache ($TILEBENCH_CACHE_DIR).\n\n"
  .. "options:\n" .. options.help(M.spec) .. "\n"

function M.cpu_count()
  local f = io.popen("getconf _NPROCESSORS_ONLN 2>/dev/null")
  local n = f and tonumber(f:read("l") or "")
  if f then f:close() end
  return math.max(1, math.floor(n or 1))
end

function M.run(args)
  local opts, pos = options.parse(args, M.spec, "compile")
  local pre = require("tilebench.precompile")
  local items, broken
  if opts.items then
    local why
    items, why = pre.read_items(opts.items)
    if not items then options.usage_error("option --items: %s", why) end
    broken = {}
  else
    local planned = table.pack(require("tilebench.cmd.run").plan(opts, pos))
    items, broken = planned[2], planned[5]
  end
  local units = pre.units(items)
  if opts.part then
    local k, n = opts.part:match("^(%d+)/(%d+)$")
    k, n = tonumber(k), tonumber(n)
    if not k or k < 1 or k > n then options.usage_error("option --part: want K/N with 1 <= K <= N") end
    pre.run_part(units, k, n, sys.claim_stdout()) -- drivers and print() go to stderr
    return 0
  end
  -- An operator that does not load is a failure of the command; the others still compile.
  for _, b in ipairs(broken) do io.stderr:write("FAIL ", b.operator, ": failed to load: ", b.error, "\n") end
  if #units == 0 and #broken == 0 then options.usage_error("compile: nothing to compile (no case matches)") end
  local tty = not opts.quiet and sys.isatty(2)
  local sum = pre.parallel(units, opts.jobs or M.cpu_count(), function(k, n)
    local argv = { sys.exe(), "compile" }
    for _, a in ipairs(args) do argv[#argv + 1] = a end
    argv[#argv + 1] = "--part"
    argv[#argv + 1] = string.format("%d/%d", k, n)
    return argv
  end, {
    on_fail = function(u, err) if not opts.quiet then io.stderr:write("FAIL ", pre.describe(u), ": ", (err:gsub("%s+", " ")), "\n") end end,
    on_progress = tty and function(k, n) io.stderr:write(string.format("\r%d/%d plans", k, n)) end or nil,
  })
  local failures, problems, jobs, done = sum.failed_plans, sum.problems, sum.jobs, sum.done
  if tty then io.stderr:write("\n") end
  for _, msg in ipairs(problems) do io.stderr:write(msg, "\n") end
  io.write(string.format("compiled %d plans (%d kernels: %d compiled, %d cached) of %d in %.1f s with %d processes; %d failed\n",
    done, sum.kernels, sum.compiled, sum.cached, #units, sum.seconds, jobs, failures))
  if #broken > 0 then io.write(string.format("%d operator%s did not load\n", #broken, #broken == 1 and "" or "s")) end
  return (failures == 0 and #problems == 0 and #broken == 0) and 0 or 1
end

return M
