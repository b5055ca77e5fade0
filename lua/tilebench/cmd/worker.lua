-- cmd/worker.lua: `tilebench worker`, the child process a campaign runs its cases in. Reads
-- one JSON request per line on stdin, answers one JSON line per request on stdout (nothing else
-- ever reaches stdout: descriptor 1 is pointed at stderr, where logs go), and exits after a
-- case that left the GPU context unusable, so the parent starts a fresh worker.
--
-- Requests and answers (one line each):
--   {"hello": true}         -> {"hello": {pid, versions = {...}, device = {...}}} or
--                              {"hello": {pid, error = "no CUDA driver found ...", error_class = "no_driver"}}
--   {"item": ITEM}          -> {"ready": true} once the inputs and the reference ran, then
--                              {"row": ROW} as each implementation finishes (progress: the
--                              parent gives each phase its own time limit); with interleaved
--                              conditions also {"verified": IMPL} as each implementation verified
--                              and waits, and {"rounds": [IMPL, ...]} as their rounds start; then
--                              {"rows": [ROW, ...]} (runner.run_item's rows, every one)
--                           or {"error": "message with traceback"} when run_item raised
-- A GPU failure's class (tb.error) travels beside its text: rows carry error_class, hello its own.
local options = require("tilebench.options")
local journal = require("tilebench.journal")
local sys = require("tb.sys")
local errors = require("tb.error")

local M = {}

M.spec = {
  { name = "device", type = "integer", metavar = "N", desc = "CUDA device ordinal" },
  { name = "runner", type = "string", metavar = "MODULE",
    desc = "Lua module providing run_item(item) (tests use a stand-in; default tilebench.runner)" },
}
M.summary = "run work items read from stdin in this process (started by 'run')"
M.usage = "usage: tilebench worker [options] < items.jsonl\n\n" .. options.help(M.spec) .. "\n"

-- What the parent records in provenance.json: each part on its own, errors kept as text (with
-- the GPU error's class, which the parent re-raises as a tb.error: no_driver exits 2).
function M.describe(device_index)
  local info = { pid = sys.getpid() }
  local function failed(e)
    info.error, info.error_class = tostring(e), errors.class(e)
    return info
  end
  local ok, device = pcall(require, "tb.device")
  if not ok then return failed(device) end
  if device_index then
    local oks, err = pcall(device.select, device_index)
    if not oks then return failed(err) end
  end
  local okv, versions = pcall(device.versions)
  if okv then info.versions = versions else info.versions_error = tostring(versions) end
  local okp, props = pcall(device.props)
  if okp then info.device = props else failed(props) end
  return info
end

-- The error a worker's answer describes: a tb.error when it names a class, else its text.
function M.error_of(text, class)
  if class and errors.classes[class] then return errors.new(class, tostring(text)) end
  return tostring(text)
end

-- xpcall handler: the message (a tb.error's text) with the traceback.
function M.traceback(e)
  if errors.class(e) then e = tostring(e) end
  return debug.traceback(e, 2)
end

function M.run(args)
  local opts, pos = options.parse(args, M.spec, "worker")
  if #pos > 0 then options.usage_error("worker: unexpected argument '%s'", pos[1]) end
  local out = sys.claim_stdout()
  local runner_ok, runner = pcall(require, opts.runner or "tilebench.runner")
  local selected = false

  local function reply(msg)
    out:write(journal.encode(msg), "\n")
    out:flush()
  end

  for line in io.stdin:lines() do
    if line ~= "" then
      local msg, err = journal.decode(line)
      if type(msg) ~= "table" then
        reply({ error = "worker: unreadable request: " .. tostring(err) })
      elseif msg.hello then
        local info
        if not runner_ok then
          info = { pid = sys.getpid(), error = "worker: cannot load the runner: " .. tostring(runner) }
        elseif runner.describe then
          info = runner.describe(opts.device)
        else
          info = M.describe(not selected and opts.device or nil)
        end
        selected = true
        reply({ hello = info })
      elseif type(msg.item) == "table" then
        if opts.device and not selected then
          require("tb.device").select(opts.device)
          selected = true
        end
        if not runner_ok then error("worker: cannot load the runner: " .. tostring(runner), 0) end
        local ok, rows = xpcall(runner.run_item, M.traceback, msg.item,
          function(row) reply({ row = row }) end, function() reply({ ready = true }) end,
          function(progress) reply(progress) end)
        if ok then
          reply({ rows = rows })
          for _, r in ipairs(rows) do
            if r.fatal then
              io.stderr:write("worker: the GPU context is unusable after ", tostring(r.impl),
                " (", (tostring(r.reason):gsub("\n.*", "")), "); exiting\n")
              return 0
            end
          end
        else
          reply({ error = tostring(rows) })
        end
      else
        reply({ error = "worker: request is neither hello nor item" })
      end
    end
  end
  return 0
end

return M
