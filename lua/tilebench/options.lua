-- options.lua: command-line options declared as data ({name, type, default, desc, validate}),
-- parsed into a table; --help text is generated from the same declarations (sysbench's way).
local M = {}

-- A usage error: cli.lua prints it and exits with status 2.
local UsageError = {}
UsageError.__index = UsageError
UsageError.__tostring = function(e) return e.message end
function M.usage_error(fmt, ...)
  error(setmetatable({ message = string.format(fmt, ...), usage = true }, UsageError), 0)
end
function M.is_usage_error(e) return type(e) == "table" and getmetatable(e) == UsageError end

local converters = {}
function converters.flag() return true end
function converters.string(v) return v end
function converters.integer(v, name)
  local n = math.tointeger(tonumber(v))
  if n == nil then M.usage_error("option --%s expects an integer, got '%s'", name, v) end
  return n
end
function converters.number(v, name)
  local n = tonumber(v)
  if n == nil or n ~= n then M.usage_error("option --%s expects a number, got '%s'", name, v) end
  return n
end
function converters.list(v, name)
  local out = {}
  for item in v:gmatch("[^,]+") do out[#out + 1] = item end
  if #out == 0 then M.usage_error("option --%s expects a comma-separated list, got '%s'", name, v) end
  return out
end
-- A GPU label names results/<label>/: exactly one path component of [A-Za-z0-9._+-].
-- The rule is util.is_name, the same every name read back from a run's files must pass; a label
-- must also not start with '-' (it would read as an option wherever the label is passed on).
function converters.label(v, name)
  local util = require("tilebench.util")
  if not util.is_name(v) then
    M.usage_error("option --%s must be %s, got '%s'", name, util.NAME_RULE, v)
  end
  if v:sub(1, 1) == "-" then M.usage_error("option --%s must not start with '-', got '%s'", name, v) end
  return v
end

-- spec: array of {name=, type=, default=, desc=, validate=function(v) -> ok, msg, choices=}
-- Returns opts (by name, dashes kept), positional (array). Raises usage errors.
function M.parse(args, spec, command)
  local byname = {}
  for _, o in ipairs(spec) do byname[o.name] = o end
  local opts, positional = {}, {}
  for _, o in ipairs(spec) do
    if o.default ~= nil then opts[o.name] = o.default end
  end
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "--" then
      for j = i + 1, #args do positional[#positional + 1] = args[j] end
      break
    elseif a:sub(1, 2) == "--" and #a > 2 then
      local name, value = a:match("^%-%-([^=]+)=(.*)$")
      name = name or a:sub(3)
      local o = byname[name]
      if not o then
        M.usage_error("%s: unknown option '--%s' (see 'tilebench %s --help')", command, name, command)
      end
      if o.type == "flag" then
        if value ~= nil then M.usage_error("option --%s takes no value", name) end
        opts[name] = true
      else
        if value == nil then
          i = i + 1
          value = args[i]
          if value == nil then M.usage_error("option --%s needs a value", name) end
          -- "--gpu --dry-run": the next word is an option of this command, not a value
          local next_name = value:match("^%-%-([^=]+)")
          if next_name and byname[next_name] then
            M.usage_error("option --%s needs a value, got option '%s'", name, value)
          end
        end
        local v = converters[o.type](value, name)
        if o.choices then
          local okc = false
          for _, c in ipairs(o.choices) do if c == v then okc = true end end
          if not okc then
            M.usage_error("option --%s must be one of %s, got '%s'", name, table.concat(o.choices, ", "), value)
          end
        end
        if o.validate then
          local ok, msg = o.validate(v)
          if not ok then M.usage_error("option --%s: %s", name, msg) end
        end
        opts[name] = v
      end
    elseif a:sub(1, 1) == "-" and #a > 1 and not tonumber(a) then
      M.usage_error("%s: unknown option '%s' (see 'tilebench %s --help')", command, a, command)
    else
      positional[#positional + 1] = a
    end
    i = i + 1
  end
  return opts, positional
end

function M.help(spec)
  local lines = {}
  for _, o in ipairs(spec) do
    if o.hidden then goto continue end -- internal (parent-to-child) options
    local left = "--" .. o.name
    if o.type ~= "flag" then left = left .. " " .. (o.metavar or o.type:upper()) end
    local desc = o.desc or ""
    if o.default ~= nil and o.type ~= "flag" then desc = desc .. " (default " .. tostring(o.default) .. ")" end
    lines[#lines + 1] = string.format("  %-26s %s", left, desc)
    ::continue::
  end
  return table.concat(lines, "\n")
end

-- ---- the timer's protocol options ---------------------------------------------------------------
-- Declared once, in C (host/measure/options.c), and listed by tb.timer.options (name, type, default,
-- desc, choices, min, max). The `tilebench run` flags, their --help lines and the campaign's
-- protocol validation are generated from that list, so a new timing option is one row in C.
-- A flag is the option's name with dashes (booleans: --NAME and --no-NAME), but for these two:
-- --mode selects the configuration mode (default, autotune) and --timer predates `clock`.
M.PROTOCOL_FLAG_NAMES = { mode = "protocol", clock = "timer" }

function M.timer_options() return require("tb.timer").options end

local function fmt_num(v)
  if v == math.floor(v) and math.abs(v) < 1e15 then return string.format("%d", v) end
  return string.format("%g", v)
end

-- "in [min, max]" (integers as integers).
function M.range_text(o) return string.format("in [%s, %s]", fmt_num(o.min), fmt_num(o.max)) end

local function in_range(o, v)
  return v >= o.min and v <= o.max and (o.type ~= "integer" or v == math.floor(v))
end

-- Spec entries (for M.parse and M.help) of every timer option; each carries protocol = the
-- option's name (and value = true/false for a boolean's two flags).
function M.protocol_flags()
  local spec = {}
  for _, o in ipairs(M.timer_options()) do
    local flag = M.PROTOCOL_FLAG_NAMES[o.name] or o.name:gsub("_", "-")
    local desc = string.format("%s (default %s)", o.desc, o.default)
    if o.type == "boolean" then
      spec[#spec + 1] = { name = flag, type = "flag", desc = desc, protocol = o.name, value = true }
      spec[#spec + 1] = { name = "no-" .. flag, type = "flag", desc = "the opposite of --" .. flag,
                          protocol = o.name, value = false }
    elseif o.type == "choice" then
      spec[#spec + 1] = { name = flag, type = "string", choices = o.choices, metavar = table.concat(o.choices, "|"),
                          desc = desc, protocol = o.name }
    else
      spec[#spec + 1] = { name = flag, type = o.type, metavar = o.type == "integer" and "N" or "X", desc = desc,
                          protocol = o.name,
                          validate = function(v)
                            if in_range(o, v) then return true end
                            return false, "must be " .. M.range_text(o)
                          end }
    end
  end
  return spec
end

-- The protocol fields given on the command line, by option name. A boolean given both ways is a
-- usage error.
function M.protocol_from(opts, spec)
  local p, flag_of = {}, {}
  for _, o in ipairs(spec) do
    if o.protocol and opts[o.name] ~= nil then
      local v = opts[o.name]
      if o.type == "flag" then v = o.value end
      if flag_of[o.protocol] and p[o.protocol] ~= v then
        M.usage_error("options --%s and --%s contradict each other", flag_of[o.protocol], o.name)
      end
      p[o.protocol], flag_of[o.protocol] = v, o.name
    end
  end
  return p
end

-- Checks a protocol table (a campaign's `protocol` field) against tb.timer.options: known keys,
-- Lua types (number, boolean, string for a choice), choices and ranges. Raises
-- "<where>: field 'protocol.KEY' ...".
function M.check_protocol(p, where)
  local by = {}
  for _, o in ipairs(M.timer_options()) do by[o.name] = o end
  for k, v in pairs(p) do
    local o = by[k]
    if not o then
      error(string.format("%s: field 'protocol': unknown key '%s'", where, tostring(k)), 0)
    end
    local ty = (o.type == "boolean" and "boolean") or (o.type == "choice" and "string") or "number"
    if type(v) ~= ty then
      error(string.format("%s: field 'protocol.%s' must be a %s, got %s", where, k, ty, type(v)), 0)
    end
    if o.choices then
      local ok = false
      for _, c in ipairs(o.choices) do ok = ok or c == v end
      if not ok then
        error(string.format("%s: field 'protocol.%s' must be one of %s, got '%s'", where, k,
          table.concat(o.choices, ", "), v), 0)
      end
    elseif ty == "number" and not in_range(o, v) then
      error(string.format("%s: field 'protocol.%s' must be %s %s, got %s", where, k,
        o.type == "integer" and "an integer" or "a number", M.range_text(o), tostring(v)), 0)
    end
  end
end

return M
