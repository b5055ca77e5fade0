-- resultset.lua: reads result tables into one shape for aggregate, report and compare: our
-- CSVs (results/<gpu>/csv/<op>_<mode>.csv), TileBench's published CSVs, and raw run JSON.
--
--   table = {operator, mode, source, kind = "csv"|"raw", impls = {...}, baseline,
--            cases = {{key, params, dtype, by_impl = {impl = entry}}...}, index = {key -> case},
--            extra = {name, ...} (metrics a campaign registered, when the CSV has them)}
--   entry = {ms, status, reason, rho, speedup, elib, noise, resolution, samples, bytes, flops,
--            extra = {name = value}}
--
-- A case is identified by its params (normalised: "k=v" pairs sorted, numbers canonical) and
-- dtype (normalised: float32 -> fp32 ...), so ours and TileBench's line up.
local lfs = require("lfs")

local M = {}

-- Statuses whose time counts (DESIGN.md: a slow case verified and was timed).
M.TIMED = {ok = true, slow = true}

-- dtype names: util's table (TileBench's and PyTorch's labels -> tilebench's); an unknown
-- label is kept as written (lower-cased), so it still matches itself.
function M.normalize_dtype(d)
  d = tostring(d or ""):match("^%s*(.-)%s*$")
  return require("tilebench.util").normalize_dtype(d) or d:lower()
end

local function canonical_value(v)
  local n = tonumber(v)
  if n then
    local i = math.tointeger(n)
    if i then return tostring(i) end
    return ("%.17g"):format(n)
  end
  return v
end

-- Params -> (key string, table of values). Accepts a table or a string such as "n=1048576",
-- "M=1024;N=512" or TileBench's "cols=512, rows=512".
function M.normalize_params(p)
  local kv = {}
  if type(p) == "table" then
    for k, v in pairs(p) do kv[tostring(k)] = tostring(v) end
  else
    local s = tostring(p or "")
    local any = false
    for item in s:gmatch("[^,;&]+") do
      local k, v = item:match("^%s*([^=%s]+)%s*=%s*(.-)%s*$")
      if k then kv[k] = v; any = true end
    end
    if not any then
      local trimmed = s:match("^%s*(.-)%s*$")
      return trimmed, {}
    end
  end
  local keys = {}
  for k in pairs(kv) do keys[#keys + 1] = k end
  table.sort(keys)
  local parts, values = {}, {}
  for _, k in ipairs(keys) do
    local v = canonical_value(kv[k])
    parts[#parts + 1] = k .. "=" .. v
    values[k] = tonumber(v) or v
  end
  return table.concat(parts, ","), values
end

local function case_key(params_key, dtype) return params_key .. "|" .. dtype end

-- "vector_add_default.csv" -> "vector_add", "default". The mode is the last "_" word; a file
-- without one is mode "default".
function M.split_name(filename)
  local base = filename:match("([^/]+)$"):gsub("%.[^.]+$", "")
  local op, mode = base:match("^(.+)_(%w+)$")
  if op and (mode == "default" or mode == "autotune") then return op, mode end
  return base, "default"
end

local function new_table(operator, mode, source, kind)
  return {operator = operator, mode = mode, source = source, kind = kind, impls = {}, cases = {}, index = {}}
end

local function get_case(t, params, dtype)
  local pkey, values = M.normalize_params(params)
  dtype = M.normalize_dtype(dtype)
  local key = case_key(pkey, dtype)
  local c = t.index[key]
  if not c then
    c = {key = key, params = pkey, values = values, dtype = dtype, by_impl = {}, order = #t.cases + 1}
    t.cases[#t.cases + 1] = c
    t.index[key] = c
  end
  return c
end

local function number_or_nil(v)
  if v == nil then return nil end
  if type(v) == "number" then return v == v and v or nil end
  local s = tostring(v):match("^%s*(.-)%s*$")
  if s == "" then return nil end
  local n = tonumber(s)
  if n == nil or n ~= n then return nil end
  return n
end

-- A numeric cell of a result file: empty, or a finite number >= 0 (a time, rho, speedup,
-- E_lib, noise, bytes, flops). Anything else is a damaged file: raise naming the file, where in
-- it, the column or field and what was expected, never pass NaN or inf on to the geomeans.
local function checked_number(v, where, name)
  if v == nil then return nil end
  local n = v
  if type(v) == "string" then
    local s = v:match("^%s*(.-)%s*$")
    if s == "" then return nil end
    n = tonumber(s)
  end
  if type(n) ~= "number" or n ~= n or n == math.huge or n == -math.huge or n < 0 then
    local got = type(v) == "string" and ("'" .. v .. "'") or (type(v) == "number" and tostring(v) or
      require("tilebench.util").describe(v))
    error(("%s: %s: expected a finite number >= 0 or nothing, got %s"):format(where, name, got), 0)
  end
  return n
end

-- Half a unit of the last printed digit of a time, relative to the time: the resolution of a
-- rounded CSV (TileBench prints 4 decimals in ms, so 0.0041 ms is known to +-1.2 %).
local function resolution_of(text, ms)
  if type(text) ~= "string" or not ms or ms <= 0 then return nil end
  local frac = text:match("^%s*%d*%.(%d+)%s*$")
  if not frac then return nil end
  return 0.5 * 10 ^ (-#frac) / ms
end

-- ---- CSV ------------------------------------------------------------------------------------
-- Reads one CSV (ours or TileBench's) into a table. opts.baseline names the baseline.
function M.read_csv(path, opts)
  opts = opts or {}
  local csv = require("tilebench.csv")
  -- raw cells: the printed digits of a time give its resolution
  local data = csv.read(path, {raw = true})
  local header = data.header
  local has = {}
  for _, h in ipairs(header) do has[h] = true end
  if not has.params or not has.dtype then
    error(("%s: not a result CSV (needs columns 'params' and 'dtype'; has %s)"):format(path,
      table.concat(header, ", ")), 0)
  end
  local operator, mode = M.split_name(path)
  local t = new_table(operator, mode, path, "csv")
  for _, h in ipairs(header) do
    local impl = h:match("^(.+)_ms$")
    if impl then t.impls[#t.impls + 1] = impl end
  end
  if #t.impls == 0 then
    error(("%s: no '<impl>_ms' column, so no implementation to read"):format(path), 0)
  end
  -- Columns <name>_<impl> beyond the standard ones: metrics a campaign registered.
  local standard = {speedup = true, rho = true, elib = true, status = true, reason = true, noise = true, note = true}
  local extra_cols = {}
  for _, h in ipairs(header) do
    local best
    for _, impl in ipairs(t.impls) do
      if h ~= impl .. "_ms" and #h > #impl + 1 and h:sub(-#impl - 1) == "_" .. impl
         and (not best or #impl > #best) then best = impl end
    end
    local name = best and h:sub(1, #h - #best - 1)
    if name and not standard[name] and name:match("^[%a_][%w_]*$") then
      extra_cols[#extra_cols + 1] = {column = h, name = name, impl = best}
      t.extra = t.extra or {}
      local known = false
      for _, n in ipairs(t.extra) do if n == name then known = true end end
      if not known then t.extra[#t.extra + 1] = name end
    end
  end
  for lineno, row in ipairs(data.rows) do
    local c = get_case(t, row.params or "", row.dtype or "")
    local where = ("%s:%d"):format(path, lineno + 1)
    local function cell(col) return checked_number(row[col], where, "column '" .. col .. "'") end
    for _, impl in ipairs(t.impls) do
      local text = row[impl .. "_ms"]
      local ms = cell(impl .. "_ms")
      local status = row["status_" .. impl]
      status = status and status ~= "" and status or nil
      local reason = row["reason_" .. impl]
      reason = reason and reason ~= "" and reason or nil
      if not status then
        -- TileBench's CSVs have no status: a time means it verified and ran.
        if ms and ms > 0 then status = "ok"
        elseif ms then status, reason = "missing", "time " .. tostring(text) .. " is below the CSV's rounding"
        else status, reason = "missing", "no time in the CSV" end
      end
      if M.TIMED[status] and not (ms and ms > 0) then
        status, reason = "missing", ("status %s but no positive time (line %d)"):format(status, lineno + 1)
      end
      c.by_impl[impl] = {
        ms = M.TIMED[status] and ms or nil, status = status, reason = reason,
        rho = cell("rho_" .. impl), speedup = cell("speedup_" .. impl),
        elib = cell("elib_" .. impl), noise = cell("noise_" .. impl),
        resolution = resolution_of(text, ms),
      }
    end
    for _, x in ipairs(extra_cols) do
      local v = number_or_nil(row[x.column])
      if v ~= nil then
        local e = c.by_impl[x.impl]
        e.extra = e.extra or {}
        e.extra[x.name] = v
      end
    end
  end
  t.baseline = M.pick_baseline(t, header, opts.baseline)
  return t
end

-- The baseline: the one asked for; else the implementation without a speedup column
-- (TileBench: torch), else the one whose speedups are all 1; else none.
function M.pick_baseline(t, header, wanted)
  if wanted then
    for _, i in ipairs(t.impls) do if i == wanted then return i end end
    return nil
  end
  local has = {}
  for _, h in ipairs(header or {}) do has[h] = true end
  local with_col, without = 0, nil
  for _, i in ipairs(t.impls) do
    if has["speedup_" .. i] then with_col = with_col + 1 elseif not without then without = i end
  end
  if without and with_col > 0 then return without end
  for _, i in ipairs(t.impls) do
    local seen, all_one = false, true
    for _, c in ipairs(t.cases) do
      local s = c.by_impl[i] and c.by_impl[i].speedup
      if s then seen = true; if math.abs(s - 1) > 1e-9 then all_one = false end end
    end
    if seen and all_one then return i end
  end
  return nil
end

-- ---- raw run JSON ---------------------------------------------------------------------------
-- A raw file holds result rows (the runner's rows: operator, mode, dtype, params or case_id,
-- impl, status, reason, ms, samples, stats, flops, bytes, rho, speedup, elib), either as the
-- top-level array or under "rows"/"results"/"cases", possibly nested; every table with an
-- "impl" field is a row.
local check_raw_row -- below, with the raw fields

local function collect_rows(node, out, depth)
  if type(node) ~= "table" or depth > 6 then return end
  if node.impl ~= nil or node.implementation ~= nil then out[#out + 1] = node return end
  for _, v in pairs(node) do collect_rows(v, out, depth + 1) end
end

local function numbers(list)
  if type(list) ~= "table" then return nil end
  local out = {}
  for _, v in ipairs(list) do
    local n = number_or_nil(v)
    if n then out[#out + 1] = n end
  end
  return #out > 0 and out or nil
end

-- The type of each field a raw row may hold (absent and null are always fine). A row of the
-- wrong shape is a damaged file: say which row, which field and what it should be.
local RAW_FIELDS = {
  operator = "string", mode = "string", impl = "string", implementation = "string", dtype = "string",
  status = "string", reason = "string", category = "string", baseline = "string", case_id = "string",
  params = "params", ms = "number", rho = "number", speedup = "number", elib = "number", noise = "number",
  bytes = "number", flops = "number", essential_bytes = "number", essential_flops = "number", samples = "numbers", stats = "stats",
}
local STATS_FIELDS = {median = "number", noise = "number", rel_noise = "number", relative_noise = "number",
                      samples = "numbers"}

local function check_field(path, where, key, v, want, val)
  local util = require("tilebench.util")
  local function bad(what)
    error(("%s: %s: field '%s' must be %s, got %s"):format(path, where, key, what, util.describe(v)), 0)
  end
  if want == "string" then
    if type(v) ~= "string" then bad("a string") end
  elseif want == "number" then
    if type(v) ~= "number" or v ~= v or v == math.huge or v == -math.huge or v < 0 then
      bad("a finite number >= 0")
    end
  elseif want == "params" then
    if type(v) ~= "string" and (type(v) ~= "table" or #v > 0) then bad("a string or an object") end
    if type(v) == "table" then
      for k, x in pairs(v) do
        if type(k) ~= "string" or (type(x) ~= "string" and type(x) ~= "number" and type(x) ~= "boolean") then
          bad("an object of names to numbers or strings")
        end
      end
    end
  elseif want == "numbers" then
    if type(v) ~= "table" or (next(v) ~= nil and #v == 0) then bad("a list of numbers") end
    for j, x in ipairs(v) do
      if val(x) ~= nil then check_field(path, where, ("%s[%d]"):format(key, j), x, "number", val) end
    end
  elseif want == "stats" then
    if type(v) ~= "table" or #v > 0 then bad("an object") end
    for k, w in pairs(STATS_FIELDS) do
      if val(v[k]) ~= nil then check_field(path, where, "stats." .. k, v[k], w, val) end
    end
  end
end

check_raw_row = function(path, i, r, val)
  local where = ("row %d"):format(i)
  if type(r.impl) == "string" and type(r.operator) == "string" then
    where = ("row %d (%s %s)"):format(i, r.operator, r.impl)
  end
  for key, want in pairs(RAW_FIELDS) do
    local v = val(r[key])
    if v ~= nil then check_field(path, where, key, v, want, val) end
  end
end

-- Returns a list of tables (one per operator and mode found in the file).
function M.read_raw(path)
  local f, err = io.open(path, "rb")
  if not f then error(("cannot read %s: %s"):format(path, err), 0) end
  local text = f:read("a")
  f:close()
  local json = require("tilebench.json")
  local doc, jerr = json.decode(text, {keep_null = true})
  if doc == nil then error(("%s: not valid JSON (%s)"):format(path, tostring(jerr)), 0) end
  local rows = {}
  collect_rows(doc, rows, 0)
  local file_op, file_mode = M.split_name(path)
  if type(doc) == "table" then
    file_op = type(doc.operator) == "string" and doc.operator or file_op
    file_mode = type(doc.mode) == "string" and doc.mode or nil
  end
  local tables, order = {}, {}
  local null = json.null
  local function val(v) if v == null then return nil end return v end
  for i, r in ipairs(rows) do
    check_raw_row(path, i, r, val)
    local op = val(r.operator) or file_op
    local mode = val(r.mode) or file_mode or "default"
    local id = op .. "\0" .. mode
    local t = tables[id]
    if not t then
      t = new_table(op, mode, path, "raw")
      tables[id] = t
      order[#order + 1] = id
      t.seen_impl = {}
    end
    local impl = tostring(val(r.impl) or val(r.implementation))
    if not t.seen_impl[impl] then t.seen_impl[impl] = true; t.impls[#t.impls + 1] = impl end
    local params = val(r.params)
    if params == nil or (type(params) == "table" and next(params) == nil) then params = val(r.case_id) or "" end
    local c = get_case(t, params, val(r.dtype) or "")
    local stats = type(val(r.stats)) == "table" and r.stats or {}
    local samples = numbers(val(r.samples)) or numbers(stats.samples)
    local status = val(r.status) and tostring(r.status) or (number_or_nil(val(r.ms)) and "ok" or "missing")
    local ms = number_or_nil(val(r.ms)) or number_or_nil(val(stats.median))
    if M.TIMED[status] and not (ms and ms > 0) then status = "missing" end
    local noise = number_or_nil(val(stats.noise)) or number_or_nil(val(stats.rel_noise)) or
                  number_or_nil(val(stats.relative_noise)) or
                  number_or_nil(val(r.noise))
    if not noise and samples and #samples > 1 then noise = require("tilebench.stats").relative_noise(samples) end
    c.by_impl[impl] = {
      ms = M.TIMED[status] and ms or nil, status = status, reason = val(r.reason) and tostring(r.reason) or nil,
      rho = number_or_nil(val(r.rho)), speedup = number_or_nil(val(r.speedup)), elib = number_or_nil(val(r.elib)),
      noise = noise, samples = samples, bytes = number_or_nil(val(r.bytes)), flops = number_or_nil(val(r.flops)),
      essential_bytes = number_or_nil(val(r.essential_bytes)), essential_flops = number_or_nil(val(r.essential_flops)),
      category = val(r.category),
    }
    if val(r.category) and not t.category then t.category = r.category end
    if val(r.baseline) and not t.baseline then t.baseline = tostring(r.baseline) end
  end
  local out = {}
  for _, id in ipairs(order) do
    local t = tables[id]
    t.seen_impl = nil
    if not t.baseline then t.baseline = M.pick_baseline(t, nil, nil) end
    out[#out + 1] = t
  end
  return out
end

-- ---- finding files --------------------------------------------------------------------------
local function mode_of(p) return lfs.attributes(p, "mode") end

local function files_in(dir, ext)
  local out = {}
  if mode_of(dir) ~= "directory" then return out end
  for e in lfs.dir(dir) do
    if e:sub(1, 1) ~= "." and e:sub(-#ext - 1) == "." .. ext and mode_of(dir .. "/" .. e) == "file" then
      out[#out + 1] = dir .. "/" .. e
    end
  end
  table.sort(out)
  return out
end

-- Loads whatever `path` is: a CSV file, a raw JSON file, a run dir (raw/*.json), a results/<gpu>
-- dir (csv/*.csv) or a dir of CSVs. Returns a list of tables and a description of the source.
-- opts.mode keeps one mode; opts.baseline as in read_csv.
function M.load(path, opts)
  opts = opts or {}
  local kind = mode_of(path)
  if not kind then error(("no such file or directory: %s"):format(path), 0) end
  local tables, what = {}, nil
  local function add(list) for _, t in ipairs(list) do tables[#tables + 1] = t end end
  if kind == "file" then
    if path:match("%.json$") then add(M.read_raw(path)); what = "raw JSON"
    else add({M.read_csv(path, opts)}); what = "CSV" end
  elseif kind == "directory" then
    local raw = files_in(path .. "/raw", "json")
    local csvs = files_in(path .. "/csv", "csv")
    local here = files_in(path, "csv")
    if #raw > 0 then
      for _, p in ipairs(raw) do add(M.read_raw(p)) end
      what = "run (raw JSON)"
    elseif #csvs > 0 then
      for _, p in ipairs(csvs) do add({M.read_csv(p, opts)}) end
      what = "CSV directory"
    elseif #here > 0 then
      for _, p in ipairs(here) do add({M.read_csv(p, opts)}) end
      what = "CSV directory"
    else
      error(("%s holds no results (looked for raw/*.json, csv/*.csv and *.csv)"):format(path), 0)
    end
  else
    error(("%s is neither a file nor a directory"):format(path), 0)
  end
  if opts.mode then
    local kept = {}
    for _, t in ipairs(tables) do if t.mode == opts.mode then kept[#kept + 1] = t end end
    tables = kept
  end
  table.sort(tables, function(a, b)
    if a.operator ~= b.operator then return a.operator < b.operator end
    return a.mode < b.mode
  end)
  return tables, what
end

-- Rows that count: both implementations have a time with status ok or slow.
function M.timed(entry) return entry ~= nil and M.TIMED[entry.status] == true and entry.ms ~= nil end

return M
