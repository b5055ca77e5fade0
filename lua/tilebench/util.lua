-- util.lua: small helpers the data layer shares: copies, stable key orders, number formatting,
-- paths, atomic file writes, JSON files (over tilebench.json), dtype names.
local cjson = require("cjson")
local tb_dtype = require("tb.dtype")
local json = require("tilebench.json")

local M = {}

-- ---- tables ---------------------------------------------------------------------------------

-- The value yaml.null / cjson.null (a NULL light userdata) stands for a YAML/JSON null.
M.null = cjson.null

function M.is_null(v) return v == nil or v == cjson.null end

-- Deep copy; metatables are shared except a tb.yaml mapping's, whose key order is copied.
function M.deepcopy(v, seen)
  if type(v) ~= "table" then return v end
  seen = seen or {}
  if seen[v] then return seen[v] end
  local out = {}
  seen[v] = out
  for k, x in pairs(v) do out[M.deepcopy(k, seen)] = M.deepcopy(x, seen) end
  local mt = getmetatable(v)
  if mt and type(mt.__order) == "table" then
    local order = {}
    for i, k in ipairs(mt.__order) do order[i] = k end
    setmetatable(out, {__name = mt.__name, __order = order})
  elseif mt then
    setmetatable(out, mt)
  end
  return out
end

-- Keys in a total, stable order: numbers (ascending) before strings (byte order, as Python's
-- sorted()), then booleans (false first).
local type_rank = {number = 1, string = 2, boolean = 3}
function M.key_less(a, b)
  local ta, tb = type(a), type(b)
  if ta ~= tb then return (type_rank[ta] or 9) < (type_rank[tb] or 9) end
  if ta == "boolean" then return (not a) and b end
  if ta == "number" or ta == "string" then return a < b end
  return tostring(a) < tostring(b)
end

function M.sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, M.key_less)
  return keys
end

-- Document order for a mapping read by tb.yaml (its metatable's __order), else sorted keys.
-- Keys removed since loading are skipped; keys added since are appended in sorted order.
function M.ordered_keys(t)
  local mt = getmetatable(t)
  if not (mt and type(mt.__order) == "table") then return M.sorted_keys(t) end
  local keys, seen = {}, {}
  for _, k in ipairs(mt.__order) do
    if t[k] ~= nil and not seen[k] then keys[#keys + 1] = k; seen[k] = true end
  end
  local extra = {}
  for k in pairs(t) do if not seen[k] then extra[#extra + 1] = k end end
  table.sort(extra, M.key_less)
  for _, k in ipairs(extra) do keys[#keys + 1] = k end
  return keys
end

-- An array: a table whose keys are exactly 1..n (n >= 0). A tb.yaml mapping is never one.
function M.is_array(t)
  if type(t) ~= "table" then return false end
  local mt = getmetatable(t)
  if mt and mt.__order then return false end
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  for i = 1, n do if t[i] == nil then return false end end
  return true
end

function M.is_mapping(t)
  if type(t) ~= "table" then return false end
  local mt = getmetatable(t)
  if mt and mt.__order then return true end
  return next(t) == nil or not M.is_array(t)
end

-- ---- numbers --------------------------------------------------------------------------------

-- Python's repr of a number: 1024, 0.5, 1e-06, 100.0, inf, nan; True/False for booleans.
function M.pyrepr(v)
  if v == true then return "True" elseif v == false then return "False" end
  if math.type(v) == "integer" then return string.format("%d", v) end
  if type(v) ~= "number" then return tostring(v) end
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
  local s
  for prec = 1, 17 do
    s = string.format("%." .. prec .. "g", v)
    if tonumber(s) == v then break end
  end
  -- Python uses fixed notation for exponents -5 < e < 16 where %g switches at the precision.
  local mant, exp = s:match("^(-?[%d.]+)e([-+]%d+)$")
  if mant then
    local e = tonumber(exp)
    if e >= -4 and e < 16 then s = string.format("%.17f", v):gsub("0+$", ""):gsub("%.$", "") end
  end
  if not s:find("[.eEn]") then s = s .. ".0" end
  return s
end

-- A number for a CSV cell or a message: integers exactly, floats with `digits` significant
-- digits (default 6), nan/inf spelled as such. nil gives "".
function M.format_number(v, digits)
  if v == nil then return "" end
  if math.type(v) == "integer" then return string.format("%d", v) end
  if type(v) ~= "number" then return tostring(v) end
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
  return string.format("%." .. (digits or 6) .. "g", v)
end

-- ---- dtypes ---------------------------------------------------------------------------------
-- Names, aliases (TileBench's labels, PyTorch's names) and sizes live in one table in C
-- (host/tb_dtype.c, tb.dtype); these are the lookups the Lua layer uses over it.

-- The canonical name, or nil for a name tilebench does not know.
function M.normalize_dtype(name)
  return tb_dtype.normalize(name)
end

-- Bytes per element (unknown names: 4, as TileBench's dtype_size gives them).
function M.dtype_size(name)
  local info = tb_dtype.info[tb_dtype.normalize(name) or ""]
  return info and info.size or 4
end

function M.is_int_dtype(name)
  local info = tb_dtype.info[tb_dtype.normalize(name) or ""]
  return info ~= nil and not info.is_float
end

-- ---- strings --------------------------------------------------------------------------------

-- Levenshtein distance, for "did you mean" hints.
function M.edit_distance(a, b)
  local prev, cur = {}, {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    cur[0] = i
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev, cur = cur, prev
  end
  return prev[#b]
end

-- The candidate closest to `word` when it is close enough to be a likely typo, else nil.
function M.did_you_mean(word, candidates)
  local best, best_d
  for _, c in ipairs(candidates) do
    local d = M.edit_distance(word:lower(), c:lower())
    if d <= math.max(2, #c // 3) and (not best_d or d < best_d) then best, best_d = c, d end
  end
  return best
end

function M.quote(s) return string.format("%q", tostring(s)):gsub("\\\n", "\\n") end

-- A value as messages show it: string "ten", integer 3, table, boolean true, null.
function M.describe(v)
  if v == cjson.null then return "null" end
  local t = math.type(v) or type(v)
  if t == "string" then return 'string "' .. v .. '"' end
  if t == "table" then return M.is_array(v) and next(v) ~= nil and "list" or "mapping" end
  if t == "integer" or t == "float" or t == "boolean" then return t .. " " .. tostring(v) end
  return t
end

-- ---- paths and files ------------------------------------------------------------------------

-- The one rule for a name that becomes a path component under results/ (a GPU label, a run id,
-- an operator or mode read back from a run's files): [A-Za-z0-9._+-]+, not "." or "..". The CLI
-- checks --gpu with it, and everything read from disk goes through it again, because a run's
-- own files can be edited or hostile (a label "../../x" would move where outputs are written).
M.NAME_RULE = "one path component of [A-Za-z0-9._+-]"
function M.is_name(v)
  return type(v) == "string" and v:match("^[A-Za-z0-9._+%-]+$") ~= nil and v ~= "." and v ~= ".."
end

function M.path_join(...)
  local parts = {}
  for _, p in ipairs({...}) do
    if p ~= nil and p ~= "" then
      if p:sub(1, 1) == "/" then parts = {} end
      parts[#parts + 1] = p
    end
  end
  local s = table.concat(parts, "/"):gsub("/+", "/")
  if #s > 1 then s = s:gsub("/$", "") end
  return s
end

function M.dirname(p)
  local d = p:match("^(.*)/[^/]*$")
  if d == nil then return "." end
  return d == "" and "/" or d
end

function M.basename(p) return (p:gsub("/+$", ""):match("([^/]*)$")) end

function M.file_exists(p)
  local f = io.open(p, "rb")
  if f then f:close() return true end
  return false
end

-- The whole file, or raises "cannot open PATH: reason".
function M.read_file(path)
  local f, err = io.open(path, "rb")
  if not f then error("cannot open " .. err, 0) end
  local s = f:read("a")
  f:close()
  return s
end

-- The whole file, or nil where it cannot be opened (a file that may not exist yet).
function M.read_file_if(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- Creates dir and its parents (like mkdir -p); returns dir. Raises naming the part it cannot create.
function M.mkdir_p(dir)
  local lfs = require("lfs")
  local p = dir:sub(1, 1) == "/" and "" or nil
  for part in dir:gmatch("[^/]+") do
    p = p and (p .. "/" .. part) or part
    if not lfs.attributes(p) then
      local ok, err = lfs.mkdir(p)
      if not ok and not lfs.attributes(p) then error(string.format("cannot create %s: %s", p, tostring(err)), 0) end
    end
  end
  return dir
end

-- Replaces path with content through tb.sys's one checked, atomic, durable write (unique temp
-- name, fsync, rename, fsync of the directory); raises "write PATH: STEP: reason" and leaves the
-- old file on any failure.
function M.write_atomic(path, content)
  local ok, err = require("tb.sys").write_atomic(path, content)
  if not ok then error(err, 0) end
  return path
end

-- ---- JSON -----------------------------------------------------------------------------------
-- The one codec is tilebench.json (its NaN/Inf rule, sorted keys, exact numbers); these are the
-- file-level helpers over it.

M.json_array_mt = json.array_mt
M.json_array = json.array

-- JSON text with object keys sorted (stable output to diff and hash). opts: indent = N.
M.json_encode = json.encode_sorted

-- A Lua value from JSON text; nulls are cjson.null (== yaml.null). name prefixes errors.
function M.json_decode(text, name)
  local v, err = json.decode(text, {keep_null = true})
  if v == nil and err then error((name or "JSON") .. ": invalid JSON: " .. tostring(err), 0) end
  return v
end

function M.read_json(path) return M.json_decode(M.read_file(path), path) end

function M.write_json(path, v, opts)
  M.write_atomic(path, M.json_encode(v, opts or {indent = 2}) .. "\n")
end

return M
