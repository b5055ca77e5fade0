-- precompile.lua: compiles, with NVRTC and without a GPU, every kernel a run of some work items
-- would compile, so that the run finds them in the on-disk cache ($TILEBENCH_CACHE_DIR). The
-- plans are made in compile-only contexts (context.lua: H200 figures, fake tensors), exactly as
-- `tilebench run` makes them: the reference, and each implementation with a kernel source in
-- its default configuration or, for autotune items, in every candidate its `valid` accepts.
-- Library implementations (no source) need a GPU to plan and are left out.
local opmod = require("tilebench.operator")
local context = require("tilebench.context")
local runner = require("tilebench.runner")
local sys = require("tb.sys")

local M = {}

-- The plans of a list of work items (campaign.plan_items), each a unit:
-- { op, case, dtype, impl (nil: the reference), cfg }. Units are in a fixed order, so that
-- processes given the same items agree on the k-th unit.
function M.item_key(operator, dtype, case_id, mode)
  return operator .. "|" .. dtype .. "|" .. tostring(case_id) .. "|" .. tostring(mode)
end

-- Also returns {item key (M.item_key) -> the indices of its units}.
function M.units(items)
  local units, seen, ops, of_item = {}, {}, {}, {}
  for _, it in ipairs(items) do
    local op = ops[it.operator] or opmod.load(it.operator)
    ops[it.operator] = op
    -- the worker's own case (a resumed run's stored items carry no table); an item whose case
    -- the grid no longer has is left to the worker, which reports it
    local case = it._case
    if not case then
      local okc, c = pcall(runner.case_of, op, it)
      case = okc and c or nil
    end
    local key = case and M.item_key(it.operator, it.dtype, case.id, it.mode)
    if case and not seen[key] then
      seen[key] = true
      local first = #units + 1
      units[#units + 1] = { op = op, case = case, dtype = it.dtype, case_index = it.case_index }
      local ctx = context.new(op, case, { compile_only = true })
      for _, impl in ipairs(it.impls or op.impls) do
        local spec = op.module.implementations[impl]
        if spec and (spec.source or spec.sources) and (not spec.supports or spec.supports(case, ctx)) then
          if it.mode == "autotune" then
            -- the candidates the search can try (one of each set that runs alike)
            for _, c in ipairs((runner.distinct_candidates(spec, case))) do
              units[#units + 1] = { op = op, case = case, dtype = it.dtype, impl = impl, cfg = c.cfg,
                                    case_index = it.case_index }
            end
          else
            local cfg = spec.default or {}
            if not spec.valid or spec.valid(case, cfg) then
              units[#units + 1] = { op = op, case = case, dtype = it.dtype, impl = impl, cfg = cfg,
                                    case_index = it.case_index }
            end
          end
        end
      end
      ctx:close()
      local idx = {}
      for i = first, #units do idx[#idx + 1] = i end
      of_item[key] = idx
    end
  end
  return units, of_item
end

function M.describe(u)
  local what = u.impl and (u.impl .. " {" .. runner.config_string(u.cfg) .. "}") or "reference"
  return string.format("%s %s %s %s", u.op.name, u.dtype, tostring(u.case.id), what)
end

-- The kernel group of a unit: the same implementation and configuration at every case of an
-- operator and dtype. Where no define carries a size (docs/KERNELS.md) a group is one kernel, so
-- a group goes to one process: a kernel that fails is compiled (and fails) once there, and its
-- later cases get the remembered error (context.compile).
function M.group_key(u)
  return string.format("%s|%s|%s|%s", u.op.name, u.dtype, u.impl or "reference",
    u.impl and runner.config_string(u.cfg) or "")
end

local function sorted_list(t)
  local keys = {}
  for k in pairs(t or {}) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = tostring(k) .. "=" .. tostring(t[k]) end
  return table.concat(parts, ";")
end

-- What a unit's plan compiles, without compiling: its plan made in a compile-only context whose
-- ctx:kernel and ctx:triton record each kernel's identity (what the compile caches key on: NVRTC
-- the source, defines and options; Triton the source, kernel, signature, constexprs, the integer
-- arguments divisible by 16, warps and stages), as one sorted string; nil where the plan cannot
-- be made so (bench/autotune/kernels_per_operator.lua counts kernels the same way).
function M.kernel_ids(u)
  local ids, seen = {}, {}
  local function add(id) if not seen[id] then seen[id] = true; ids[#ids + 1] = id end end
  local ok = pcall(function()
    local ctx <close> = context.new(u.op, u.case, { compile_only = true })
    ctx.kernel = function(self, file, name, defines, options)
      local dir, f = self:source_of(file)
      add("nvrtc|" .. context.kernel_path(dir, f) .. "|" .. sorted_list(defines) .. "|" .. table.concat(options or {}, " "))
      return { compiled = { key = "recorded" }, name = name }
    end
    ctx.triton = function(self, s)
      local tri = require("tilebench.triton")
      local sig, div = tri.signature(s.args)
      add(table.concat({ "triton", context.kernel_path(self:source_of(s.file)), s.kernel, sorted_list(sig),
        sorted_list(s.constexprs), table.concat(div, ","), tostring(s.num_warps or 4), tostring(s.num_stages or 3) }, "|"))
      return { fn = { compiled = { key = "recorded" } }, grid = s.grid, block = { 128 }, args = {} }
    end
    local ins = u.op.module.inputs(u.case, ctx)
    local outs = u.op.module.outputs(u.case, ins, ctx)
    if u.impl then u.op.module.implementations[u.impl].plan(u.case, ins, outs, u.cfg, ctx)
    else u.op.module.reference(u.case, ins, outs, ctx) end
  end)
  if not ok or #ids == 0 then return nil end
  table.sort(ids)
  return table.concat(ids, "\n")
end

-- Which of n processes compiles each unit: whole groups, dealt out in order of appearance, and
-- groups whose first plans compile exactly the same kernels as one: configurations that differ
-- only in how the kernel is launched (a point-wise WAVES, a Triton config resolving to the same
-- warps) would otherwise each compile it in its own process at about the same time, none
-- finding it in the cache yet; over the 45 operators' autotune grid that was a third more NVRTC
-- compiles and half again the Triton ones (bench/results/autotune/README.md). Groups sharing
-- only some kernels (a helper every configuration launches) stay apart, so that no process gets
-- an operator's whole space.
function M.assign(units, n)
  local of, of_ids, g, out = {}, {}, 0, {}
  for i, u in ipairs(units) do
    local key = M.group_key(u)
    if not of[key] then
      local ids = M.kernel_ids(u)
      if ids and of_ids[ids] then
        of[key] = of_ids[ids]
      else
        g = g + 1
        of[key] = (g - 1) % n + 1
        if ids then of_ids[ids] = of[key] end
      end
    end
    out[i] = of[key]
  end
  return out
end

-- Compiles one unit's plan. Returns the number of kernels its plan has and the list of their
-- {key, cached} (cached: read from the disk cache), or nil and the error (also when the plan is
-- not a step list, or a step names a kernel its source does not define) and its tb.error class
-- ("compile" when NVRTC refused the source; nil for an error of the operator's Lua code).
function M.compile_unit(u)
  local class
  local ctx = context.new(u.op, u.case, { compile_only = true })
  local ok, res = xpcall(function()
    local ins = u.op.module.inputs(u.case, ctx)
    local outs = u.op.module.outputs(u.case, ins, ctx)
    local steps
    if u.impl then
      steps = u.op.module.implementations[u.impl].plan(u.case, ins, outs, u.cfg, ctx)
    else
      steps = u.op.module.reference(u.case, ins, outs, ctx)
    end
    if type(steps) ~= "table" then error("plan returned " .. type(steps), 0) end
    local n, keys = 0, {}
    for i, step in ipairs(steps) do
      if step.fn then
        if type(step.fn) ~= "table" or not step.fn.compiled then
          error(string.format("step %d has no compiled kernel", i), 0)
        end
        n = n + 1
        local m = step.fn.compiled
        if type(m) == "table" or type(m) == "userdata" then
          local okk, key = pcall(function() return m.key end)
          if okk and key then keys[#keys + 1] = { key = tostring(key), cached = m.from_cache == true } end
        end
      end
    end
    return { n = n, keys = keys }
  end, function(e)
    class = require("tb.error").class(e)
    return debug.traceback(tostring(e), 2) -- a tb.error (compile) as its text
  end)
  ctx:close()
  if ok then return res.n, res.keys end
  return nil, tostring(res), class
end

-- ---- in parallel ------------------------------------------------------------------------------
-- A child's share (the units assign() gives process k of n), one line per unit on out:
-- "unit\t<i>\t<key>:<c|h>,..." or "fail\t<i>\t<error class or ->\t<error on one line>", then "done".
-- Process 1 first compiles the host's own kernels and says "host\t\t<compiled>:<cached>" or
-- "hostfail\t\t<error>".
function M.run_part(units, k, n, out)
  local mine = M.assign(units, n)
  if k == 1 then
    -- The host's own kernels (fill, poison, compare, eviction, clock probe) too: a worker on an
    -- empty cache would otherwise compile them inside its first case's time limit.
    local okh, compiled, cached = pcall(require("tb.kernel").compile_host, context.compile_arch)
    if okh then out:write("host\t\t", compiled, ":", cached, "\n")
    else out:write("hostfail\t\t", (tostring(compiled):gsub("[\r\n\t]", " ")), "\n") end
    out:flush()
  end
  for i, u in ipairs(units) do
    if mine[i] == k then
      local nk, keys, class = M.compile_unit(u)
      if nk then
        local parts = {}
        for j, kk in ipairs(keys) do parts[j] = kk.key .. ":" .. (kk.cached and "h" or "c") end
        out:write("unit\t", i, "\t", table.concat(parts, ","), "\n")
      else
        local err = keys
        if not os.getenv("TILEBENCH_TRACEBACK") then err = err:gsub("\nstack traceback:.*", "") end
        -- one line on the pipe: newlines travel as \n (the parent restores them), tabs as spaces
        out:write("fail\t", i, "\t", class or "-", "\t", (err:gsub("\\", "\\\\"):gsub("\r?\n", "\\n"):gsub("[\t\r]", " ")), "\n")
      end
      out:flush()
    end
  end
  out:write("done\n")
  out:flush()
end

-- The first lines of a compile error (a row's reason; the whole log stays in the summary).
function M.first_lines(text, n)
  local out = {}
  for l in tostring(text):gmatch("[^\n]+") do
    out[#out + 1] = l
    if #out >= (n or 4) then break end
  end
  return table.concat(out, " | ")
end

-- Compiles units in `jobs` child processes: argv_of(k, n) is child k's command line (it runs
-- run_part on the same units). opts: unit_timeout (seconds a child may go without finishing a
-- unit before it is killed; its unfinished units are left to the run's workers), on_progress
-- (finished, total), on_fail(unit, error). Returns a pool that compiles while its owner does
-- other things: pool:step(wait) reads what the children reported, pool:wait_units(list,
-- interrupted) blocks until those units are finished (compiled, failed, or given up with their
-- child), pool:wait_all(), pool:close() (kills what still runs), pool:summary().
-- The summary: {plans, done, failed_plans, kernels (distinct), compiled, cached, jobs, seconds,
-- failures = {i -> error}, classes = {i -> tb.error class}, problems = {messages},
-- groups_failed = {{operator, dtype, impl, config, cases, log}}}.
local Pool = {}
Pool.__index = Pool

function M.start(units, jobs, argv_of, opts)
  opts = opts or {}
  jobs = math.max(1, math.min(jobs, #units))
  local self = setmetatable({ units = units, opts = opts, t0 = sys.monotonic(), procs = {}, keys = {}, lines = 0,
    finished_units = {}, finished = 0, of = M.assign(units, jobs), limit = opts.unit_timeout or 300,
    sum = { plans = #units, done = 0, failed_plans = 0, jobs = jobs, failures = {}, classes = {}, problems = {},
            kernels = 0, compiled = 0, cached = 0 } }, Pool)
  for k = 1, jobs do
    self.procs[k] = { p = sys.spawn(argv_of(k, jobs), { stderr = "pipe" }), k = k, last = sys.monotonic() }
  end
  self.live = #self.procs
  return self
end

-- A child's warnings (a damaged cache entry recompiled) reach the user; the rest of its stderr
-- stays for the problem report (stderr_tail).
local function forward_warnings(c)
  for l in (c.p:take_stderr() or ""):gmatch("[^\n]+") do
    if l:find("warning:", 1, true) then io.stderr:write(l, "\n") end
  end
end

-- One pass over the live children, each read for at most `wait` seconds (default 0.02).
-- Returns the number of children still running.
function Pool:step(wait)
  local sum, opts = self.sum, self.opts
  for _, c in ipairs(self.procs) do
    if not c.ended then
      local line, why = c.p:read_line(wait or 0.02)
      if line then
        self.lines = self.lines + 1
        c.last = sys.monotonic()
        forward_warnings(c)
        local kind, i, rest = line:match("^(%a+)\t?(%d*)\t?(.*)$")
        i = tonumber(i)
        if kind == "unit" and i then
          sum.done = sum.done + 1
          for key, how in rest:gmatch("([^,:]+):([ch])") do
            if self.keys[key] ~= "c" then self.keys[key] = how end
          end
        elseif kind == "fail" and i then
          sum.failed_plans = sum.failed_plans + 1
          local class, text = rest:match("^([^\t]*)\t(.*)$")
          rest = (text or rest):gsub("\\(.)", function(ch) return ch == "n" and "\n" or ch end)
          sum.failures[i] = rest
          sum.classes[i] = class ~= "-" and class or nil
          if opts.on_fail then opts.on_fail(self.units[i], rest) end
        elseif kind == "host" then
          local hc, hh = rest:match("^(%d+):(%d+)$")
          sum.host = { compiled = tonumber(hc), cached = tonumber(hh) }
        elseif kind == "hostfail" then
          sum.problems[#sum.problems + 1] = "compiling the host's own kernels: " .. rest
        elseif kind == "done" then
          c.done = true
        end
        if (kind == "unit" or kind == "fail") and i and not self.finished_units[i] then
          self.finished_units[i] = true
          self.finished = self.finished + 1
          if opts.on_progress then opts.on_progress(self.finished, #self.units) end
        end
      elseif why == "eof" or sys.monotonic() - c.last > self.limit then
        if why ~= "eof" then c.p:kill("KILL") end
        local how, code = c.p:wait()
        forward_warnings(c)
        if not c.done or how ~= "exit" or code ~= 0 then
          sum.problems[#sum.problems + 1] = string.format("compile process %d/%d %s before finishing:\n%s", c.k,
            sum.jobs, why == "eof" and string.format("ended (%s %s)", tostring(how), tostring(code))
              or string.format("made no progress for %g s and was killed", self.limit), c.p:stderr_tail(10))
        end
        c.p:close()
        c.ended, self.live = true, self.live - 1
      end
    end
  end
  return self.live
end

-- Whether unit i is settled: compiled, failed, or left to the workers (its child ended).
function Pool:settled(i)
  return self.finished_units[i] or self.procs[self.of[i]].ended or false
end

-- Reads every line the children have written so far, without waiting. The owner reads the
-- children's pipes only while it waits for an item's kernels (wait_units), and a child blocks
-- once its pipe (64 KiB, some 700 plans' lines) is full: read only as far as the item's own
-- units, the children could get no more than about a pipe's worth ahead of the cases, however
-- long the cases take to measure. wait_units drains first.
function Pool:drain()
  local stop = self.lines + #self.units + 1 -- at most a line a unit
  while self.live > 0 and self.lines < stop do
    local before = self.lines
    self:step(0)
    if self.lines == before then return end
  end
end

-- Blocks until every unit of `list` (indices) is settled, or interrupted() is truthy (checked
-- between passes). on_wait(seconds waited), when given, is called about once a second.
function Pool:wait_units(list, interrupted, on_wait)
  self:drain()
  local t0, told = sys.monotonic(), sys.monotonic()
  local k = 1
  while true do
    while k <= #list and self:settled(list[k]) do k = k + 1 end
    if k > #list or self.live == 0 then return true end
    if interrupted and interrupted() then return false end
    self:step()
    if on_wait and sys.monotonic() - told >= 1 then
      told = sys.monotonic()
      on_wait(told - t0)
    end
  end
end

function Pool:wait_all()
  while self.live > 0 do self:step() end
end

-- Kills the children still running (an interrupted run); their units are left unfinished.
function Pool:close()
  for _, c in ipairs(self.procs) do
    if not c.ended then
      c.p:kill("KILL")
      c.p:wait()
      c.p:close()
      c.ended, self.live = true, self.live - 1
    end
  end
end

function Pool:summary()
  local sum = self.sum
  sum.kernels, sum.compiled, sum.cached = 0, 0, 0
  for _, how in pairs(self.keys) do
    sum.kernels = sum.kernels + 1
    if how == "c" then sum.compiled = sum.compiled + 1 else sum.cached = sum.cached + 1 end
  end
  -- Failures once per group (an implementation and configuration, every case it failed at).
  local groups, order = {}, {}
  for i = 1, #self.units do
    local err = sum.failures[i]
    if err then
      local u = self.units[i]
      local gk = M.group_key(u)
      if not groups[gk] then
        groups[gk] = { operator = u.op.name, dtype = u.dtype, impl = u.impl or "reference",
                       config = u.impl and runner.config_string(u.cfg) or "", cases = 0, log = err }
        order[#order + 1] = gk
      end
      groups[gk].cases = groups[gk].cases + 1
    end
  end
  sum.groups_failed = {}
  for _, gk in ipairs(order) do sum.groups_failed[#sum.groups_failed + 1] = groups[gk] end
  sum.seconds = sys.monotonic() - self.t0
  return sum
end

-- The blocking form: compiles every unit, then returns the summary.
function M.parallel(units, jobs, argv_of, opts)
  local pool = M.start(units, jobs, argv_of, opts)
  pool:wait_all()
  return pool:summary()
end

-- Items handed to compile processes through a file (`tilebench compile --items FILE`): the
-- wire form (no private fields), read back with the shape a planned item has.
function M.write_items(path, items)
  local wire = {}
  for i, it in ipairs(items) do
    local w = {}
    for k, v in pairs(it) do if type(k) ~= "string" or k:sub(1, 1) ~= "_" then w[k] = v end end
    wire[i] = w
  end
  local ok, err = sys.write_atomic(path, require("tilebench.json").encode({ items = wire }) .. "\n")
  if not ok then error(err, 0) end
end

function M.read_items(path)
  local util = require("tilebench.util")
  local fh, err = io.open(path, "rb")
  if not fh then return nil, string.format("cannot open %s: %s", path, err) end
  local rec = require("tilebench.json").decode(fh:read("a"))
  fh:close()
  if type(rec) ~= "table" or type(rec.items) ~= "table" then return nil, path .. ": not an item list" end
  for i, it in ipairs(rec.items) do
    if type(it) ~= "table" or not util.is_name(it.operator) or not util.is_name(it.mode)
       or type(it.dtype) ~= "string" or math.type(it.case_index) ~= "integer" or type(it.impls) ~= "table" then
      return nil, string.format("%s: item %d is not a work item", path, i)
    end
  end
  return rec.items
end

-- The precompile phase of `tilebench run`: compiles every kernel items will need (references,
-- default configurations, every valid autotune candidate) in `jobs` processes before anything is
-- timed, so the workers load them from the cache and no compile time counts in a case's limit.
-- o: jobs, quiet, arch (the device's; the phase compiles for context.compile_arch with H200
-- figures, so on another architecture it would fill the cache with kernels the run cannot use,
-- and is skipped), unit_timeout. Returns the summary of parallel() with its units, or nil and
-- why it was skipped.
-- seconds between the phase's progress lines when stderr is no terminal ($TILEBENCH_PROGRESS_S)
M.PROGRESS_EVERY = 30
do
  local v = os.getenv("TILEBENCH_PROGRESS_S")
  if v and v ~= "" then
    local n = tonumber(v)
    if n and n >= 0 and n < math.huge then M.PROGRESS_EVERY = n
    else io.stderr:write("tilebench: TILEBENCH_PROGRESS_S=", v, " is not a number of seconds >= 0; using 30\n") end
  end
end

-- Starts the phase: returns the pool (M.start) compiling in the background, with pool.units and
-- pool.item_units = {item key (M.item_key) -> unit indices}, or nil and why it was skipped.
-- o.overlap: the owner measures while the pool compiles (no progress lines of the phase's own:
-- the owner reports its waits).
function M.phase_start(items, o)
  if o.arch and o.arch ~= context.compile_arch then
    return nil, string.format("the device is %s; the precompile phase compiles for %s", tostring(o.arch),
      context.compile_arch)
  end
  local oku, units, item_units = pcall(M.units, items)
  if not oku then return nil, "cannot list the kernels: " .. tostring(units) end
  if #units == 0 then return nil, "nothing to compile" end
  local path = os.tmpname()
  M.write_items(path, items)
  local tty = not o.quiet and not o.overlap and sys.isatty(2)
  local progress
  if tty then
    progress = function(k, n) io.stderr:write(string.format("\r  precompile: %d/%d plans", k, n)) end
  elseif not o.quiet and not o.overlap then
    -- a log (no terminal): a line every PROGRESS_EVERY seconds, so a long phase is not silent
    local t0, last = sys.monotonic(), sys.monotonic()
    progress = function(k, n)
      local now = sys.monotonic()
      if now - last >= M.PROGRESS_EVERY and k < n then
        last = now
        io.stdout:write(string.format("  precompile: %d/%d plans, %.0f s\n", k, n, now - t0))
        io.stdout:flush()
      end
    end
  end
  local ok, pool = pcall(M.start, units, o.jobs, function(k, n)
    return { sys.exe(), "compile", "--items", path, "--part", string.format("%d/%d", k, n) }
  end, { unit_timeout = o.unit_timeout, on_progress = progress })
  if not ok then
    os.remove(path)
    error(pool, 0)
  end
  pool.item_units, pool.items_path, pool.tty = item_units, path, tty
  return pool
end

-- The unit indices of a work item (nil: none, e.g. a case the grid no longer has).
function Pool:units_of(it)
  local case = it._case
  if not case then
    local okc, c = pcall(runner.case_of, opmod.load(it.operator), it)
    case = okc and c or nil
  end
  return case and self.item_units and self.item_units[M.item_key(it.operator, it.dtype, case.id, it.mode)]
end

-- Ends the phase (waits for what still compiles unless kill): its summary, with the units.
function Pool:finish(kill)
  if kill then self:close() else self:wait_all() end
  if self.items_path then os.remove(self.items_path); self.items_path = nil end
  if self.tty then io.stderr:write("\n"); self.tty = nil end
  local sum = self:summary()
  sum.units = self.units
  return sum
end

-- The whole phase before anything is measured: the summary with its units, or nil and why.
function M.phase(items, o)
  local pool, why = M.phase_start(items, o)
  if not pool then return nil, why end
  local ok, sum = pcall(Pool.finish, pool)
  if not ok then
    pool:close()
    if pool.items_path then os.remove(pool.items_path) end
    error(sum, 0)
  end
  return sum
end

-- The phase's record for provenance.json (no unit tables).
function M.record(sum)
  return { seconds = sum.seconds, jobs = sum.jobs, plans = sum.plans, plans_done = sum.done,
           plans_failed = sum.failed_plans, kernels = sum.kernels, compiled = sum.compiled, cached = sum.cached,
           failed = #sum.groups_failed, failures = sum.groups_failed, problems = sum.problems,
           host_kernels = sum.host }
end

function M.summary_line(sum)
  return string.format("precompile: %d plans (%d kernels: %d compiled, %d cached) in %.1f s with %d processes; %d failed%s",
    sum.plans, sum.kernels, sum.compiled, sum.cached, sum.seconds, sum.jobs, sum.failed_plans,
    #sum.groups_failed > 0 and string.format(" (%d kernel group%s)", #sum.groups_failed,
      #sum.groups_failed == 1 and "" or "s") or "")
end

return M
