-- rows.lua: what the shell GPU tests' Lua checks share (loaded with dofile; the test passes its
-- path): check(ok, what) prints "ok" or "FAIL" and the line, and remembers a failure; rows(work,
-- label, op) the rows of raw/<op>.json of the first run under work/<label> (the test's
-- TILEBENCH_RESULTS_DIR and `--gpu label`); exit() ends with 1 after any failure.
local cjson = require("cjson")
local M = { failed = false }

function M.check(ok, what)
  print((ok and "ok   " or "FAIL ") .. what)
  if not ok then M.failed = true end
  return ok
end

function M.rows(work, label, op)
  local dir = io.popen("ls -d " .. work .. "/" .. label .. "/runs/*/ | head -1"):read("l")
  assert(dir, "no run under " .. work .. "/" .. label)
  local f = assert(io.open(dir .. "/raw/" .. op .. ".json", "r"))
  local raw = cjson.decode(f:read("a"))
  f:close()
  return raw.rows or {}
end

function M.exit() os.exit(M.failed and 1 or 0) end

return M
