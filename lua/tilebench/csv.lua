-- csv.lua: results tables as CSV (RFC 4180 quoting, LF endings, atomic writes) and reading of
-- any CSV by column name, including TileBench's published ones (CRLF, BOM, `float32` labels).
--
--   csv.encode(header, rows [, opts]) -> text   rows: arrays of cells, or maps keyed by column
--   csv.write(path, header, rows [, opts])      the same, written atomically (temp + rename)
--   csv.parse(text [, name, opts]) -> {header = {...}, rows = {{col = value, ...}, ...}}
--   csv.read(path [, opts])                      csv.parse of a file
--   csv.parse_params("cols=512, rows=512") -> {cols = 512, rows = 512}
--   csv.results_columns(impls) -> header
--   csv.results_table(cases, impls) -> header, rows (maps keyed by column)
--   csv.write_results(path, cases, impls [, opts])
--
-- Cells written: nil -> empty; integers exactly; floats with 6 significant digits (%.6g:
-- 0.0123457 ms, 1.23457e-05; opts.digits changes it); booleans true/false; strings as they are,
-- quoted when they hold a comma, a quote, CR/LF or edge spaces.
-- Cells read (unless opts.raw): empty -> nil (absent from the row map), decimal numbers ->
-- numbers (integers stay integers), nan/inf -> floats, the `dtype` column normalised to
-- tilebench's names (float32 -> fp32, float16 -> fp16, bfloat16 -> bf16, float8_e4m3fn ->
-- fp8_e4m3); everything else a string.
--
-- The results layout (DESIGN.md, results/<gpu>/csv/<op>_<mode>.csv): params, dtype, then for
-- each implementation in order: <impl>_ms, speedup_<impl> (baseline time / impl time),
-- rho_<impl>, elib_<impl> (library time / impl time), status_<impl>, reason_<impl> (why a case
-- is not ok; empty when ok). A value that was not measured is an empty cell, never a guess.
-- After those, columns <name>_<impl> from the rows' extra (results.extra_names, sorted): with a
-- peaks file, rho_tilebench_, ceiling_gbs_, l2_near_ and l2_ratio_ (metrics.COLUMNS, issue 19),
-- the clock and power columns, note_ (a plan's note: the cuDNN engine a `lib` ran; only where a
-- row has one), and any metrics a campaign registered.
local util = require("tilebench.util")

local M = {}

-- ---- writing --------------------------------------------------------------------------------

local function cell_text(v, digits)
  if v == nil or v == util.null then return "" end
  local s
  if type(v) == "number" then s = util.format_number(v, digits)
  elseif type(v) == "boolean" then s = v and "true" or "false"
  else s = tostring(v) end
  if s:find('[,"\r\n]') or s:find("^%s") or s:find("%s$") then
    s = '"' .. s:gsub('"', '""') .. '"'
  end
  return s
end

local function has_string_key(row)
  for k in pairs(row) do if type(k) == "string" then return true end end
  return false
end

function M.encode(header, rows, opts)
  opts = opts or {}
  local lines = {}
  local hdr = {}
  for i, h in ipairs(header) do hdr[i] = cell_text(h) end
  lines[1] = table.concat(hdr, ",")
  for r, row in ipairs(rows) do
    local cells = {}
    local by_name = has_string_key(row)
    if not by_name then
      for k in pairs(row) do
        if math.type(k) ~= "integer" or k < 1 or k > #header then
          error(string.format("csv: row %d has a cell outside the %d columns", r, #header), 0)
        end
      end
    end
    for i, h in ipairs(header) do
      local v
      if by_name then v = row[h] else v = row[i] end
      cells[i] = cell_text(v, opts.column_digits and opts.column_digits[h] or opts.digits)
    end
    lines[#lines + 1] = table.concat(cells, ",")
  end
  return table.concat(lines, "\n") .. "\n"
end

function M.write(path, header, rows, opts)
  util.write_atomic(path, M.encode(header, rows, opts))
end

-- ---- reading --------------------------------------------------------------------------------

local function convert(s)
  if s == "" then return nil end
  if s:match("^[-+]?%d+$") then
    return math.tointeger(tonumber(s)) or tonumber(s)
  end
  if s:match("^[-+]?%d*%.?%d+[eE][-+]?%d+$") or s:match("^[-+]?%d+%.?%d*[eE][-+]?%d+$") or
     s:match("^[-+]?%d*%.%d+$") or s:match("^[-+]?%d+%.%d*$") then
    return tonumber(s)
  end
  local l = s:lower()
  if l == "nan" or l == "+nan" or l == "-nan" then return 0.0 / 0.0 end
  if l == "inf" or l == "+inf" or l == "infinity" then return math.huge end
  if l == "-inf" or l == "-infinity" then return -math.huge end
  return s
end

-- Splits CSV text into records (arrays of strings) with their line numbers.
local function records(text, name)
  if text:sub(1, 3) == "\239\187\191" then text = text:sub(4) end
  local out, lines = {}, {}
  local i, n, line = 1, #text, 1
  local rec, field, start_line = {}, {}, 1
  local quoted_field = false
  while i <= n do
    local c = text:sub(i, i)
    if c == '"' and #field == 0 and not quoted_field then
      -- a quoted field: read to the closing quote
      quoted_field = true
      local j = i + 1
      local buf = {}
      while true do
        local q = text:find('"', j, true)
        if not q then error(string.format("%s:%d: unterminated quoted field", name, line), 0) end
        local chunk = text:sub(j, q - 1)
        local _, nl = chunk:gsub("\n", "")
        line = line + nl
        buf[#buf + 1] = chunk
        if text:sub(q + 1, q + 1) == '"' then
          buf[#buf + 1] = '"'
          j = q + 2
        else
          i = q + 1
          break
        end
      end
      field[#field + 1] = table.concat(buf)
      local nextc = text:sub(i, i)
      if nextc ~= "," and nextc ~= "\n" and nextc ~= "\r" and nextc ~= "" then
        error(string.format("%s:%d: unexpected text after a quoted field", name, line), 0)
      end
    elseif c == "," then
      rec[#rec + 1] = table.concat(field)
      field, quoted_field = {}, false
      i = i + 1
    elseif c == "\r" or c == "\n" then
      rec[#rec + 1] = table.concat(field)
      field, quoted_field = {}, false
      if not (#rec == 1 and rec[1] == "") then
        out[#out + 1] = rec
        lines[#lines + 1] = start_line
      end
      rec = {}
      if c == "\r" and text:sub(i + 1, i + 1) == "\n" then i = i + 1 end
      i = i + 1
      line = line + 1
      start_line = line
    else
      local j = text:find('[,\r\n]', i)
      local stop = (j or n + 1) - 1
      field[#field + 1] = text:sub(i, stop)
      i = stop + 1
    end
  end
  if #field > 0 or #rec > 0 or quoted_field then
    rec[#rec + 1] = table.concat(field)
    if not (#rec == 1 and rec[1] == "" and not quoted_field) then
      out[#out + 1] = rec
      lines[#lines + 1] = start_line
    end
  end
  return out, lines
end

function M.parse(text, name, opts)
  name = name or "<csv>"
  opts = opts or {}
  local recs, lines = records(text, name)
  if #recs == 0 then error(name .. ": empty CSV (no header)", 0) end
  local header = recs[1]
  local seen = {}
  for i, h in ipairs(header) do
    if h == "" then error(string.format("%s:%d: column %d has no name", name, lines[1], i), 0) end
    if seen[h] then error(string.format('%s:%d: column "%s" appears twice', name, lines[1], h), 0) end
    seen[h] = true
  end
  local rows = {}
  for r = 2, #recs do
    local rec = recs[r]
    if #rec ~= #header then
      error(string.format("%s:%d: expected %d fields, got %d", name, lines[r], #header, #rec), 0)
    end
    local row = {}
    for i, h in ipairs(header) do
      local v = rec[i]
      if not opts.raw then
        if h == "dtype" then v = (v ~= "" and (util.normalize_dtype(v) or v)) or nil
        else v = convert(v) end
      end
      row[h] = v
    end
    rows[#rows + 1] = row
  end
  return {header = header, rows = rows}
end

function M.read(path, opts)
  return M.parse(util.read_file(path), path, opts)
end

-- "cols=512, rows=512" -> {cols = 512, rows = 512}; values typed as csv cells are.
function M.parse_params(s)
  local out = {}
  if s == nil or s == "" or s == "(defaults)" then return out end
  for part in tostring(s):gmatch("[^,]+") do
    local k, v = part:match("^%s*([^=]-)%s*=%s*(.-)%s*$")
    if not k then error(string.format('cannot read case parameters "%s"', s), 0) end
    if v == "True" then v = true elseif v == "False" then v = false else v = convert(v) end
    out[k] = v
  end
  return out
end

-- ---- the results layout ---------------------------------------------------------------------

M.result_fields = {
  {field = "ms", column = "%s_ms"},
  {field = "speedup", column = "speedup_%s"},
  {field = "rho", column = "rho_%s"},
  {field = "elib", column = "elib_%s"},
  {field = "status", column = "status_%s"},
  {field = "reason", column = "reason_%s"},
}

-- extra: names of the metrics a campaign registered, each a column <name>_<impl> per
-- implementation after all the standard columns (so a table without them keeps its layout).
function M.results_columns(impls, extra)
  local header = {"params", "dtype"}
  for _, impl in ipairs(impls) do
    for _, f in ipairs(M.result_fields) do header[#header + 1] = string.format(f.column, impl) end
  end
  for _, name in ipairs(extra or {}) do
    for _, impl in ipairs(impls) do header[#header + 1] = name .. "_" .. impl end
  end
  return header
end

-- cases: {{id = "n=1024" (or params = "n=1024"), dtype = "fp16",
--          results = {cuda = {ms=, speedup=, rho=, elib=, status=, reason=, extra = {name = v}}, ...}}, ...}
-- Returns the header and one row per case (a map keyed by column), in the given order.
function M.results_table(cases, impls, extra)
  local header = M.results_columns(impls, extra)
  local rows = {}
  for _, c in ipairs(cases) do
    local row = {params = c.id or c.params, dtype = c.dtype}
    local results = c.results or {}
    for _, impl in ipairs(impls) do
      local r = results[impl] or {}
      for _, f in ipairs(M.result_fields) do row[string.format(f.column, impl)] = r[f.field] end
      for _, name in ipairs(extra or {}) do row[name .. "_" .. impl] = r.extra and r.extra[name] end
    end
    rows[#rows + 1] = row
  end
  return header, rows
end

function M.write_results(path, cases, impls, opts)
  opts = opts or {}
  local header, rows = M.results_table(cases, impls, opts.extra)
  M.write(path, header, rows, opts)
end

return M
