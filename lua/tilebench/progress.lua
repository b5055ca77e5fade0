-- progress.lua: what a running campaign shows. On a terminal, one line redrawn in place (cases
-- done/total, operator and dtype, elapsed, ETA); otherwise plain lines, one per operator, so
-- logs and CI output stay readable. Other output goes through :line() so it never tears it.
local sys = require("tb.sys")

local M = {}
local P = {}
P.__index = P

function M.clock(seconds)
  if seconds == nil or seconds ~= seconds or seconds == math.huge then return "?" end
  seconds = math.floor(seconds + 0.5)
  local h, m, s = seconds // 3600, (seconds % 3600) // 60, seconds % 60
  if h > 0 then return string.format("%d:%02d:%02d", h, m, s) end
  return string.format("%d:%02d", m, s)
end

-- opts: total (cases), out (file, default io.stdout), tty (default: is stdout a terminal),
-- now (clock function, for tests), width (columns).
function M.new(opts)
  opts = opts or {}
  local out = opts.out or io.stdout
  local tty = opts.tty
  if tty == nil then tty = sys.isatty(1) end
  local self = setmetatable({ out = out, tty = tty, total = opts.total or 0, done = 0,
                              now = opts.now or sys.monotonic, width = opts.width, shown = false,
                              op = nil, op_done = 0, op_counts = {} }, P)
  self.t0 = self.now()
  return self
end

function P:_clear()
  if self.tty and self.shown then
    self.out:write("\r\27[K")
    self.shown = false
  end
end

function P:status_text(label)
  local elapsed = self.now() - self.t0
  local eta = self.done > 0 and elapsed / self.done * (self.total - self.done) or nil
  return string.format("[%d/%d] %s  elapsed %s  ETA %s", self.done, self.total, label or "",
    M.clock(elapsed), eta and M.clock(eta) or "?")
end

function P:_draw()
  if not self.tty then return end
  local text = self:status_text(self.label)
  local w = self.width or sys.term_width(1) or 80
  if #text > w - 1 then text = text:sub(1, w - 1) end
  self.out:write("\r\27[K", text)
  self.out:flush()
  self.shown = true
end

-- A line of output above the display.
function P:line(text)
  self:_clear()
  self.out:write(text, "\n")
  self.out:flush()
  self:_draw()
end

local function counts_text(counts)
  local names = {}
  for k in pairs(counts) do names[#names + 1] = k end
  table.sort(names)
  local parts = {}
  for _, k in ipairs(names) do parts[#parts + 1] = string.format("%d %s", counts[k], k) end
  return table.concat(parts, ", ")
end

function P:_end_operator()
  if self.op and not self.tty then
    self.out:write(string.format("%s: %d cases (%s), %s elapsed, %d/%d done\n", self.op, self.op_done,
      counts_text(self.op_counts), M.clock(self.now() - self.t0), self.done, self.total))
    self.out:flush()
  end
end

-- Called when a case starts.
function P:start(item)
  if item.operator ~= self.op then
    self:_end_operator()
    self.op, self.op_done, self.op_counts = item.operator, 0, {}
    if not self.tty then
      self.out:write(string.format("%s: starting (%d/%d done)\n", item.operator, self.done, self.total))
      self.out:flush()
    end
  end
  self.label = string.format("%s %s %s #%d", item.operator, item.dtype, item.mode or "default", item.case_index)
  self:_draw()
end

-- Called when a case has finished with its rows.
function P:finish(item, rows)
  self.done = self.done + 1
  self.op_done = self.op_done + 1
  for _, r in ipairs(rows or {}) do
    self.op_counts[r.status or "?"] = (self.op_counts[r.status or "?"] or 0) + 1
  end
  self:_draw()
end

function P:close()
  self:_end_operator()
  self.op = nil
  self:_clear()
end

return M
