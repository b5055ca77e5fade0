-- worker.lua: the campaign side of crash isolation. Runs each work item in a `tilebench worker`
-- child (this same binary), waits for its answer under a time limit, and turns a crash (signal,
-- early exit) or a hang into rows with status failed/timeout while a fresh worker continues.
-- The parent never initialises the GPU; the in-process executor (--no-isolate) is for debugging.
local journal = require("tilebench.journal")
local execute = require("tilebench.execute")
local sys = require("tb.sys")
local worker_cmd = require("tilebench.cmd.worker")

local M = {}

M.HELLO_TIMEOUT = 120 -- seconds for a fresh worker to initialise the driver and answer

-- Signals tilebench never sends its workers (it kills them with SIGKILL): a worker ended by one
-- was stopped from outside with the whole job (Slurm's scancel or preemption, a batch system's
-- time limit signal every process of the job), not by its item. Such an item is left out
-- of the journal (its rows would read `failed`) and the run stops as if interrupted, so
-- `run --resume` measures it again.
M.OUTSIDE_SIGNALS = { SIGTERM = true, SIGINT = true, SIGHUP = true }

local function last_line(text)
  local last
  for l in (text or ""):gmatch("[^\n]+") do if l:match("%S") then last = l end end
  return last
end

-- ---- isolated: one worker process at a time --------------------------------------------------
local Pool = {}
Pool.__index = Pool

-- opts: exe (default this binary), device, runner (module name, for tests), env, log(text) for
-- the workers' stderr, limit(item) -> seconds each implementation may take, on_event(text) for
-- crashes and restarts. opts.cooperative: the pool runs inside a coroutine beside others (one per
-- GPU, tilebench.pools): instead of blocking on its worker it yields (proc, deadline) and is
-- resumed when the worker may have answered or the deadline passed.
function M.isolated(opts)
  opts = opts or {}
  return setmetatable({ opts = opts, proc = nil, started = 0, info = nil }, Pool)
end

-- The next line of the current worker within limit seconds: proc:read_line, or in a coroutine
-- a look without waiting and a yield until sys.poll says the worker wrote or the time is up.
function Pool:_read_line(limit)
  if not (self.opts.cooperative and coroutine.isyieldable()) then return self.proc:read_line(limit) end
  local deadline = sys.monotonic() + limit
  while true do
    local line, why = self.proc:read_line(0)
    if line or why == "eof" then return line, why end
    if sys.monotonic() >= deadline then return nil, "timeout" end
    coroutine.yield(self.proc, deadline)
  end
end

-- p:wait(grace), yielding in a coroutine instead of blocking the other pools.
function Pool:_wait(p, grace)
  if not (self.opts.cooperative and coroutine.isyieldable()) or not grace then return p:wait(grace) end
  local deadline = sys.monotonic() + grace
  while true do
    local kind, val = p:wait(0)
    if kind then return kind, val end
    local now = sys.monotonic()
    if now >= deadline then return nil, "timeout" end
    coroutine.yield(nil, math.min(deadline, now + 0.02))
  end
end

function Pool:_argv()
  local argv = { self.opts.exe or sys.exe(), "worker" }
  if self.opts.device then argv[#argv + 1] = "--device"; argv[#argv + 1] = tostring(self.opts.device) end
  if self.opts.runner then argv[#argv + 1] = "--runner"; argv[#argv + 1] = self.opts.runner end
  return argv
end

function Pool:_event(text)
  if self.opts.on_event then self.opts.on_event(text) end
end

function Pool:_forward_stderr()
  if self.proc and self.opts.log then
    local text = self.proc:take_stderr()
    if text ~= "" then self.opts.log(text) end
  end
end

-- Ends the current worker: closes its stdin, gives it a moment, then kills it. Returns how it
-- ended ("exit", code | "signal", name) and its last stderr lines.
function Pool:_retire(grace)
  local p = self.proc
  if not p then return nil end
  self.proc = nil
  p:close_stdin()
  local kind, val = self:_wait(p, grace or 2)
  if not kind then
    p:kill("KILL")
    kind, val = p:wait()
  end
  local tail = p:stderr_tail(12)
  if self.opts.log then
    local text = p:take_stderr()
    if text ~= "" then self.opts.log(text) end
  end
  p:close()
  return kind, val, tail
end

-- Starts a worker and checks it answers; raises when it cannot (no driver: the run cannot go on).
function Pool:_start()
  local p = sys.spawn(self:_argv(), { env = self.opts.env, stderr = "pipe" })
  self.proc = p
  self.started = self.started + 1
  p:write(journal.encode({ hello = true }) .. "\n")
  local line, why = self:_read_line(M.HELLO_TIMEOUT)
  self:_forward_stderr()
  local msg = line and journal.decode(line)
  if type(msg) ~= "table" or type(msg.hello) ~= "table" then
    local kind, val, tail = self:_retire(0.5)
    error(string.format("worker did not start (%s%s)%s", why or "bad answer",
      kind and string.format(", %s %s", kind, tostring(val)) or "",
      tail ~= "" and (":\n" .. tail) or ""), 0)
  end
  if msg.hello.error then
    self:_retire(0.5)
    error(worker_cmd.error_of(msg.hello.error, msg.hello.error_class), 0)
  end
  self.info = self.info or msg.hello
  return msg.hello
end

-- The first worker's description (versions, device), starting one if needed.
function Pool:hello()
  if not self.info then self:_start() end
  return self.info
end

-- The implementation a stopped attempt was in: the first of impls the worker had neither reported
-- nor said verified and waiting for the interleaved rounds; nil when every one not reported was
-- waiting, i.e. the attempt stopped in the rounds, where it may be anybody's.
local function in_flight(impls, got, verified)
  for _, impl in ipairs(impls) do if not got[impl] and not (verified and verified[impl]) then return impl end end
  return nil
end

-- One attempt at item restricted to impls. The worker reports each implementation's row as it
-- finishes, and each implementation gets its own time limit counted from the previous report
-- (the inputs and the reference get one limit of their own), so a hang costs one limit, not
-- the sum over the item. Returns {rows=} | {error=, got=} | {crash=status, reason=, got=,
-- in_flight=}, got holding the rows reported before the worker stopped.
function Pool:_attempt(item, impls)
  if not self.proc then self:_start() end
  local limit = self.opts.limit and self.opts.limit(item) or 60
  local wire = journal.encode({ item = execute.wire_item(item, { impls = impls }) }) .. "\n"
  local ok = self.proc:write(wire)
  if not ok then -- it died between items: one fresh start, then report what happens
    self:_retire(0.5)
    self:_start()
    self.proc:write(wire)
  end
  local got, ready, verified, rounds = {}, false, {}, nil
  local line, why
  while true do
    -- the interleaved rounds measure every waiting implementation in one go: each its own limit
    line, why = self:_read_line(rounds and limit * #rounds or limit)
    self:_forward_stderr()
    if not line then break end
    local msg, err = journal.decode(line)
    if type(msg) == "table" and msg.ready == true then
      ready = true
    elseif type(msg) == "table" and type(msg.verified) == "string" then
      verified[msg.verified] = true
    elseif type(msg) == "table" and type(msg.rounds) == "table" then
      rounds = msg.rounds
    elseif type(msg) == "table" and type(msg.row) == "table" and type(msg.row.impl) == "string" then
      ready = true
      got[msg.row.impl] = msg.row
    elseif type(msg) == "table" and type(msg.rows) == "table" then
      return { rows = msg.rows }
    elseif type(msg) == "table" and msg.error then
      return { error = tostring(msg.error), got = got }
    else
      local _, _, tail = self:_retire(0.5)
      return { crash = "failed", reason = "worker sent an unreadable answer (" .. tostring(err) .. ")", tail = tail,
               got = got, in_flight = in_flight(impls, got, verified) }
    end
  end
  -- Stopped before the inputs and the reference were done: that phase is every implementation's
  -- (the runner records its errors the same way), so one stop costs the whole group once.
  if not ready then
    local kind, val, tail = self:_retire(why == "timeout" and 0 or 5)
    if kind == "signal" and M.OUTSIDE_SIGNALS[val] then return { stopped = val } end
    local reason = why == "timeout"
      and string.format("inputs/reference: no result within the time limit (%g s); worker killed", limit)
      or string.format("inputs/reference: worker %s", kind == "signal" and ("killed by " .. tostring(val))
        or string.format("exited with status %s", tostring(val)))
    local last = why ~= "timeout" and last_line(tail)
    if last then reason = reason .. "; last stderr: " .. last end
    self:_event(string.format("%s %s #%d: %s", item.operator, item.dtype, item.case_index, reason))
    return { crash = why == "timeout" and "timeout" or "failed", tail = tail, got = got, reference = true,
             reason = reason }
  end
  local current = in_flight(impls, got, verified)
  local left = 0
  for _, impl in ipairs(impls) do if not got[impl] then left = left + 1 end end
  if why == "timeout" then
    local _, _, tail = self:_retire(0) -- no grace: it is hung
    if current == nil and left > 1 then
      -- hung in the interleaved rounds: not one implementation's to blame yet; each runs alone
      self:_event(string.format("%s %s #%d: no result from the interleaved rounds of %d implementations "
        .. "within %g s; worker killed; each runs alone in a fresh worker", item.operator, item.dtype,
        item.case_index, left, limit * (rounds and #rounds or 1)))
      return { crash = "timeout", tail = tail, got = got, in_rounds = true,
               reason = string.format("no result within the time limit (%g s); worker killed", limit) }
    end
    current = current or in_flight(impls, got)
    self:_event(string.format("%s %s #%d %s: no result within %g s; worker killed%s", item.operator,
      item.dtype, item.case_index, tostring(current), limit,
      left > 1 and "; the other implementations run in a fresh worker" or ""))
    return { crash = "timeout", tail = tail, got = got, in_flight = current,
             reason = string.format("no result within the time limit (%g s); worker killed", limit) }
  end
  local kind, val, tail = self:_retire(5)
  if kind == "signal" and M.OUTSIDE_SIGNALS[val] then return { stopped = val } end
  local how = kind == "signal" and ("killed by " .. tostring(val))
    or string.format("exited with status %s", tostring(val))
  local last = last_line(tail)
  self:_event(string.format("%s %s #%d: worker %s%s", item.operator, item.dtype, item.case_index, how,
    left > 1 and "; re-running each unfinished implementation alone" or ""))
  return { crash = "failed", tail = tail, got = got, in_flight = current,
           reason = "worker " .. how .. (last and ("; last stderr: " .. last) or "") }
end

-- Runs item; always returns one row per implementation of item.impls, in that order.
-- Rows the worker reported before it stopped are kept. A stop before the inputs and the
-- reference were done is every implementation's (once). A hang is charged to the implementation
-- in flight alone (it had its whole limit), and the ones after it run in a fresh worker. A crash
-- with several implementations unfinished re-runs each alone, so one broken implementation
-- cannot take its neighbours' results with it; implementations skipped because an earlier one
-- left the context unusable are re-run the same way.
--
-- Cooperative (one pool per GPU): a worker that cannot start loses the device. Before any of
-- the item ran, run returns nil and why (the item goes to another GPU); after, the item's
-- unfinished implementations are `failed` with the reason, and later calls return nil at once.
function Pool:run(item)
  if self.opts.cooperative then
    if self.lost then return nil, self.lost end
    if not self.proc then
      local ok, err = pcall(self._start, self)
      if not ok then
        self.lost = tostring(err)
        return nil, self.lost
      end
    end
  end
  local final = {}
  local queue = { item.impls }
  while #queue > 0 do
    local group = table.remove(queue, 1)
    local res
    if self.stopped then break end
    if self.opts.cooperative then
      local ok, r = pcall(self._attempt, self, item, group)
      if not ok then
        self.lost = tostring(r)
        self:_event(string.format("no worker starts any more; the GPU is lost to this run: %s", self.lost))
        res = { error = string.format("device %s lost: %s", tostring(self.opts.device), self.lost), got = {} }
        queue, group = {}, {} -- every implementation not finished yet is the device's loss
        for _, impl in ipairs(item.impls) do
          if not final[impl] then group[#group + 1] = impl end
        end
      else
        res = r
      end
    else
      res = self:_attempt(item, group)
    end
    if res.stopped then
      self.stopped = res.stopped
      self:_event(string.format("%s %s #%d: worker stopped by %s from outside (the job is ending?): the case is left "
        .. "to --resume", item.operator, item.dtype, item.case_index, res.stopped))
      return {}
    elseif res.rows then
      local fatal, rerun = false, {}
      -- any row's fatal: with interleaved measuring (conditions = "interleave") the rows verified
      -- before the fault wait to be measured and are skipped too, not only the ones after it
      for _, r in ipairs(res.rows) do if r.fatal then fatal = true end end
      for _, r in ipairs(res.rows) do
        if fatal and not r.fatal and r.status == "skipped" and #group > 1 then
          rerun[#rerun + 1] = r.impl
        elseif r.impl then
          final[r.impl] = r
        end
      end
      if fatal then
        self:_retire(5)
        self:_event(string.format("%s %s #%d: GPU context lost; fresh worker", item.operator, item.dtype,
          item.case_index))
      end
      local again = {}
      for _, impl in ipairs(rerun) do again[impl] = true end
      if #rerun > 0 then queue[#queue + 1] = rerun end
      for _, impl in ipairs(group) do
        if not final[impl] and not again[impl] then
          final[impl] = execute.synthetic_row(item, impl, "failed", "the worker returned no row for it")
        end
      end
    else
      local rest = {}
      for _, impl in ipairs(group) do
        if res.got and res.got[impl] then final[impl] = res.got[impl] else rest[#rest + 1] = impl end
      end
      if res.error then
        for _, impl in ipairs(rest) do final[impl] = execute.synthetic_row(item, impl, "failed", res.error) end
      elseif res.reference then
        for _, impl in ipairs(rest) do
          final[impl] = execute.synthetic_row(item, impl, res.crash, res.reason)
          final[impl].worker_stderr = res.tail
        end
      elseif #rest == 1 or (res.crash == "timeout" and res.in_flight) then
        -- the one unfinished, or the one in flight when time ran out (the others verified and
        -- waiting for their rounds, or not started): charged; the others go on in a fresh worker
        local culprit = #rest == 1 and rest[1] or res.in_flight
        local r = execute.synthetic_row(item, culprit, res.crash, res.reason)
        r.worker_stderr = res.tail
        final[culprit] = r
        local others = {}
        for _, impl in ipairs(rest) do if impl ~= culprit then others[#others + 1] = impl end end
        if #others > 0 then queue[#queue + 1] = others end
      else
        for _, impl in ipairs(rest) do queue[#queue + 1] = { impl } end
      end
    end
  end
  local rows = {}
  for _, impl in ipairs(item.impls) do rows[#rows + 1] = final[impl] end
  return rows
end

function Pool:close()
  self:_retire(2)
end
Pool.__close = Pool.close
Pool.__gc = Pool.close

-- ---- in-process (--no-isolate) ---------------------------------------------------------------
local InProcess = {}
InProcess.__index = InProcess

function M.in_process(opts)
  return setmetatable({ opts = opts or {}, fatal = nil }, InProcess)
end

function InProcess:hello()
  if not self.info then
    local runner = require(self.opts.runner or "tilebench.runner")
    local info = runner.describe and runner.describe() or require("tilebench.cmd.worker").describe(self.opts.device)
    if info.error then error(worker_cmd.error_of(info.error, info.error_class), 0) end
    self.info = info
  end
  return self.info
end

function InProcess:run(item)
  local runner = require(self.opts.runner or "tilebench.runner")
  local wire = execute.wire_item(item)
  local ok, rows = xpcall(runner.run_item, worker_cmd.traceback, wire)
  if not ok then
    local out = {}
    for _, impl in ipairs(item.impls) do out[#out + 1] = execute.synthetic_row(item, impl, "failed", tostring(rows)) end
    return out
  end
  for _, r in ipairs(rows) do
    if r.fatal then self.fatal = string.format("GPU context lost in %s %s #%d (%s)", item.operator,
      item.dtype, item.case_index, r.impl) end
  end
  return rows
end

function InProcess:close() end

return M
