-- json.lua: THE JSON codec, over lua-cjson, for everything tilebench writes or reads as JSON:
-- journal lines, the worker's pipe, run.json, provenance.json, raw/<op>.json, peaks/<gpu>.json,
-- and TileBench's raw files. journal.encode/decode and util.json_* are this module's functions.
--
--   json.encode(v) -> text            compact, one line (cjson's key order)
--   json.encode_sorted(v [, opts])    keys sorted (stable to diff and hash); opts.indent = N
--                                     pretty-prints; numbers as the shortest text that reads back
--                                     as the same double
--   json.decode(text [, opts]) -> v | nil, message
--                                     integral numbers come back as integers; null as nil
--                                     (opts.keep_null: as json.null)
--   json.null, json.array(t)          a JSON null; a table that encodes as [] even when empty
--
-- The NaN/Inf rule (JSON has no such numbers): NaN, +Inf and -Inf are WRITTEN as the strings
-- "NaN", "Infinity" and "-Infinity", by both encoders, so every file stays valid JSON. READING
-- leaves those strings as strings (a decoder cannot tell them from text; a run's journal has
-- always read back that way, and the CSVs rebuilt from it print them so); json.number(v) turns
-- a value read back into the number it was. The bare NaN/Infinity that Python's json module
-- writes (TileBench's raw files) are read as numbers.
--   json.number(v) -> number or nil   a number, or one of the three strings, as a number
-- Functions and userdata are written as their tostring; a table that contains itself is refused.
local cjson = require("cjson")

local codec = cjson.new()
codec.encode_sparse_array(true)
codec.encode_number_precision(14) -- lua-cjson 2.1's maximum (encode_sorted writes exact numbers)
codec.decode_invalid_numbers(true)

local M = {}

M.null = cjson.null
M.array_mt = {__name = "tilebench.json_array"}
function M.array(t) return setmetatable(t or {}, M.array_mt) end

local NONFINITE = {[math.huge] = "Infinity", [-math.huge] = "-Infinity"}
local FROM_TEXT = {NaN = -(0 / 0), Infinity = math.huge, ["-Infinity"] = -math.huge} -- 0/0 is "-nan" on x86

function M.number(v)
  if type(v) == "number" then return v end
  return FROM_TEXT[v]
end

local function nonfinite_text(v)
  if v ~= v then return "NaN" end
  return NONFINITE[v]
end

-- A copy of v that cjson can hold: the NaN/Inf rule, other values as their tostring.
local function sanitize(v, seen)
  local t = type(v)
  if t == "number" then
    return nonfinite_text(v) or v
  elseif t == "table" then
    if seen[v] then error("JSON cannot hold a table that contains itself", 0) end
    seen[v] = true
    local out = {}
    for k, x in pairs(v) do
      local kk = type(k) == "number" and k or tostring(k)
      out[kk] = sanitize(x, seen)
    end
    seen[v] = nil
    return out
  elseif t == "string" or t == "boolean" or t == "nil" or v == cjson.null then
    return v
  end
  return tostring(v)
end

function M.encode(v) return codec.encode(sanitize(v, {})) end

-- ---- sorted, exact ----------------------------------------------------------------------------

local function is_array(t)
  local n = 0
  for _ in pairs(t) do n = n + 1 end
  for i = 1, n do if t[i] == nil then return false end end
  return true
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    if type(a) == type(b) then return a < b end
    return type(a) == "number"
  end)
  return keys
end

-- The shortest decimal that reads back as the same double.
local function format_exact(v)
  if math.type(v) == "integer" then return string.format("%d", v) end
  for prec = 15, 17 do
    local s = string.format("%." .. prec .. "g", v)
    if tonumber(s) == v then return s end
  end
  return string.format("%.17g", v)
end

local function write(v, opts, depth, seen, out)
  local t = type(v)
  if v == cjson.null or v == nil then
    out[#out + 1] = "null"
  elseif t == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif t == "number" then
    local s = nonfinite_text(v)
    out[#out + 1] = s and codec.encode(s) or format_exact(v)
  elseif t == "string" then
    out[#out + 1] = codec.encode(v)
  elseif t == "table" then
    if seen[v] then error("JSON cannot hold a table that contains itself", 0) end
    seen[v] = true
    local nl, pad, inner = "", "", ""
    if opts.indent then
      nl = "\n"
      pad = string.rep(" ", opts.indent * depth)
      inner = string.rep(" ", opts.indent * (depth + 1))
    end
    if getmetatable(v) == M.array_mt or (next(v) ~= nil and is_array(v)) then
      if #v == 0 then out[#out + 1] = "[]" else
        out[#out + 1] = "[" .. nl
        for i, x in ipairs(v) do
          out[#out + 1] = inner
          write(x, opts, depth + 1, seen, out)
          out[#out + 1] = (i < #v and "," or "") .. nl
        end
        out[#out + 1] = pad .. "]"
      end
    else
      local keys = sorted_keys(v)
      if #keys == 0 then out[#out + 1] = "{}" else
        out[#out + 1] = "{" .. nl
        for i, k in ipairs(keys) do
          if type(k) ~= "string" and type(k) ~= "number" then
            error("JSON object keys must be strings, got " .. type(k), 0)
          end
          out[#out + 1] = inner .. codec.encode(tostring(k)) .. (opts.indent and ": " or ":")
          write(v[k], opts, depth + 1, seen, out)
          out[#out + 1] = (i < #keys and "," or "") .. nl
        end
        out[#out + 1] = pad .. "}"
      end
    end
    seen[v] = nil
  else
    out[#out + 1] = codec.encode(tostring(v))
  end
end

function M.encode_sorted(v, opts)
  local out = {}
  write(v, opts or {}, 0, {}, out)
  return table.concat(out)
end

-- ---- decoding ---------------------------------------------------------------------------------

-- cjson reads every number as a float: integral values come back as integers, so case indices,
-- sizes and counts print as they were written.
local function normalize(v, keep_null)
  local t = type(v)
  if t == "table" then
    for k, x in pairs(v) do v[k] = normalize(x, keep_null) end
    return v
  elseif math.type(v) == "float" then
    local i = math.tointeger(v)
    if i ~= nil and math.abs(v) < 2 ^ 53 then return i end
  elseif v == cjson.null and not keep_null then
    return nil
  end
  return v
end

function M.decode(text, opts)
  local ok, v = pcall(codec.decode, text)
  if not ok then return nil, tostring(v) end
  return normalize(v, opts and opts.keep_null)
end

return M
