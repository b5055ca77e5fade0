-- pools.lua: several GPUs of one host in one run (`tilebench run --devices 0,1,...`, the
-- campaign's `devices`). One isolated worker pool per GPU (tilebench.worker, cooperative: each
-- pool runs in a coroutine and yields while its worker works), all fed from one queue of items
-- in this process, so the run keeps one journal, one resume and one set of outputs. A pool
-- whose worker cannot start any more (the GPU fell off the bus, the driver lost it) loses its
-- device: the item it was running is `failed` with the reason, the others go on.
-- The parent still never initialises a GPU: the workers do (`tilebench worker --device N`).
local worker = require("tilebench.worker")
local sys = require("tb.sys")

local M = {}

-- "0,1,3" -> {0, 1, 3}; or nil, message. Ordinals are the CUDA ones (after CUDA_VISIBLE_DEVICES).
function M.parse(text)
  local list, seen = {}, {}
  if type(text) ~= "string" or text == "" then return nil, "want ordinals like 0,1,2" end
  for part in (text .. ","):gmatch("([^,]*),") do
    if not part:match("^%d+$") then return nil, string.format("'%s' is not a device ordinal (want 0,1,2)", part) end
    local d = tonumber(part)
    if seen[d] then return nil, string.format("device %d given twice", d) end
    seen[d] = true
    list[#list + 1] = d
  end
  return list
end

local Multi = {}
Multi.__index = Multi

-- devices: ordinals; opts: worker.isolated's (limit, log, on_event, runner, env, exe).
function M.new(devices, opts)
  opts = opts or {}
  local self = setmetatable({ devices = devices, pools = {}, opts = opts, fatal = nil }, Multi)
  for i, d in ipairs(devices) do
    local o = {}
    for k, v in pairs(opts) do o[k] = v end
    o.device, o.cooperative = d, true
    o.on_event = function(text) if opts.on_event then opts.on_event(string.format("device %d: %s", d, text)) end end
    o.log = function(text)
      if opts.log then opts.log((text:gsub("([^\n]*\n?)", function(l) return l ~= "" and ("[device " .. d .. "] " .. l) or "" end))) end
    end
    self.pools[i] = worker.isolated(o)
  end
  return self
end

-- Runs tasks ({co = coroutine} each) until every one has ended. A task yields (proc, deadline)
-- (proc nil: a plain sleep); all wait in one sys.poll, then each is resumed (a resumed pool
-- looks at its worker without waiting and yields again if it has nothing). on_end(task) is
-- called as each ends (task.ok, task.result = {values}); it may add tasks (start_more).
local function resume(t, ...)
  local res = table.pack(coroutine.resume(t.co, ...))
  if not res[1] then
    t.ended, t.ok, t.err = true, false, res[2]
  elseif coroutine.status(t.co) == "dead" then
    t.ended, t.ok, t.result = true, true, table.pack(table.unpack(res, 2, res.n))
  else
    t.proc, t.deadline = res[2], res[3] or (sys.monotonic() + 0.05)
  end
end

local function wait_any(tasks)
  local procs, wake = {}, math.huge
  for _, t in pairs(tasks) do
    if t.proc then procs[#procs + 1] = t.proc end
    if t.deadline < wake then wake = t.deadline end
  end
  local left = math.max(0, wake - sys.monotonic())
  if #procs > 0 then sys.poll(procs, left) elseif left > 0 then sys.sleep(left) end
end

-- Every device's worker started at once; the first description plus `devices`, one entry per
-- GPU ({ordinal, device = its description, pid}), for provenance. A device whose worker does
-- not start fails the run (the error is the worker's: no driver exits 2). Different GPU models
-- are refused: one run writes one label's results (results/<label>/), and a label is one model.
function Multi:hello()
  if self.info then return self.info end
  local tasks = {}
  for i, pool in ipairs(self.pools) do
    tasks[i] = { co = coroutine.create(function() return pool:hello() end) }
    resume(tasks[i])
  end
  while true do
    local waiting = {}
    for i, t in ipairs(tasks) do if not t.ended then waiting[i] = t end end
    if not next(waiting) then break end
    wait_any(waiting)
    for _, t in pairs(waiting) do resume(t) end
  end
  for i, t in ipairs(tasks) do
    if not t.ok then
      self:close()
      if type(t.err) == "string" then error(string.format("device %d: %s", self.devices[i], t.err), 0) end
      error(t.err, 0)
    end
  end
  local info, devices = {}, {}
  for k, v in pairs(tasks[1].result[1]) do info[k] = v end
  for i, t in ipairs(tasks) do
    local h = t.result[1]
    devices[i] = { ordinal = self.devices[i], device = h.device, pid = h.pid }
  end
  local name1 = devices[1].device and devices[1].device.name
  for i = 2, #devices do
    local name = devices[i].device and devices[i].device.name
    if name ~= name1 then
      self:close()
      require("tilebench.options").usage_error("option --devices: devices %d (%s) and %d (%s) are different GPU "
        .. "models; a run writes one label's results (results/<label>/), one label per model: run each model "
        .. "on its own (e.g. --devices %d --gpu LABEL1, then --devices %d --gpu LABEL2)", devices[1].ordinal,
        tostring(name1), devices[i].ordinal, tostring(name), devices[1].ordinal, devices[i].ordinal)
    end
  end
  info.devices = devices
  self.info = info
  return info
end

-- Carries out items on every device from one queue: hooks.start(item) before an item is handed
-- to a free device (may wait: the overlapped precompile phase), hooks.done(item, rows, ordinal)
-- as each ends (journal first, then the next item for that device), hooks.interrupted() ->
-- truthy to hand out no more (the items in flight finish). With more than one device each row
-- names its GPU (row.extra.device: the CSV columns device_<impl>); with one, rows are a plain
-- run's. Returns {interrupted = why | nil}; when every device is lost with items left, why
-- says so and self.fatal is set (the run stops, resumable).
function Multi:run_queue(items, hooks)
  local nxt, back = 1, {}
  local busy, stop = {}, nil
  local function take()
    if #back > 0 then return table.remove(back, 1) end
    if nxt <= #items then
      nxt = nxt + 1
      return items[nxt - 1]
    end
    return nil
  end
  local function dispatch()
    for i, pool in ipairs(self.pools) do
      if not busy[i] and not pool.lost and not stop then
        stop = hooks.interrupted and hooks.interrupted()
        local it = not stop and take()
        if it then
          if hooks.start then hooks.start(it) end
          -- an interrupt while the hook waited stops before the item (it stays to be resumed)
          stop = hooks.interrupted and hooks.interrupted()
          if stop then return end
          busy[i] = { co = coroutine.create(function() return pool:run(it) end), item = it }
          resume(busy[i])
        end
      end
    end
  end
  local function collect() -- true when an item ended
    local any = false
    for i, t in pairs(busy) do
      if t.ended then
        any = true
        busy[i] = nil
        if not t.ok then error(t.err, 0) end
        local rows, why = t.result[1], t.result[2]
        if self.pools[i].stopped then
          -- its worker was stopped from outside: the item stays out of the journal, the run stops
          stop = stop or self.pools[i].stopped
          self.stopped = self.stopped or self.pools[i].stopped
        elseif rows == nil then
          -- the device was lost before this item started on it: another GPU takes it
          table.insert(back, 1, t.item)
          if self.opts.on_event then
            self.opts.on_event(string.format("device %d lost (%s); its items go to the other GPUs", self.devices[i],
              (tostring(why):gsub("\n.*", ""))))
          end
        else
          if #self.devices > 1 then
            for _, r in ipairs(rows) do
              r.extra = r.extra or {}
              r.extra.device = self.devices[i]
            end
          end
          hooks.done(t.item, rows, self.devices[i])
        end
      end
    end
    return any
  end
  while true do
    -- hand out work until nothing more ends at once (an item can end in its first resume: a lost
    -- device's, given back; a freed device takes the next)
    repeat dispatch() until not collect()
    if not next(busy) then break end
    wait_any(busy)
    for _, t in pairs(busy) do resume(t) end
  end
  if not stop and (nxt <= #items or #back > 0) then
    local lost = {}
    for i, pool in ipairs(self.pools) do lost[#lost + 1] = string.format("%d (%s)", self.devices[i],
      (tostring(pool.lost):gsub("\n.*", ""))) end
    self.fatal = "every device was lost: " .. table.concat(lost, "; ")
    stop = self.fatal
  end
  return { interrupted = stop }
end

function Multi:close()
  for _, pool in ipairs(self.pools) do pool:close() end
end
Multi.__close = Multi.close

return M
