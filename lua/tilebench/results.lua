-- results.lua: result rows -> results/<gpu>/csv/<op>_<mode>.csv in DESIGN.md's layout
-- (params, dtype, then per implementation <impl>_ms, speedup_<impl>, rho_<impl>, elib_<impl>,
-- status_<impl>, reason_<impl>), one line per (dtype, case), in grid order.
local M = {}

function M.params_string(params)
  local ks = {}
  for k in pairs(params or {}) do ks[#ks + 1] = k end
  table.sort(ks)
  local out = {}
  for _, k in ipairs(ks) do out[#out + 1] = k .. "=" .. tostring(params[k]) end
  return table.concat(out, ";")
end

local function num(v, fmt)
  if v == nil or v ~= v then return "" end
  return string.format(fmt or "%.6g", v)
end

M.IMPL_COLUMNS = { "ms", "speedup", "rho", "elib", "status", "reason" }

-- rows: result rows of one operator and mode (any order); impls: implementation names in
-- column order. Returns header, lines (arrays of cell strings) sorted by dtype order then case.
function M.table(rows, impls, dtype_order)
  local header = { "params", "dtype" }
  for _, impl in ipairs(impls) do
    header[#header + 1] = impl .. "_ms"
    header[#header + 1] = "speedup_" .. impl
    header[#header + 1] = "rho_" .. impl
    header[#header + 1] = "elib_" .. impl
    header[#header + 1] = "status_" .. impl
    header[#header + 1] = "reason_" .. impl
  end
  local by_case, keys = {}, {}
  for _, r in ipairs(rows) do
    local key = r.dtype .. "\0" .. string.format("%08d", r.case_index or 0)
    if not by_case[key] then
      by_case[key] = { params = M.params_string(r.params), dtype = r.dtype, impl = {},
                       dtype_rank = dtype_order and dtype_order[r.dtype] or 0, index = r.case_index or 0 }
      keys[#keys + 1] = key
    end
    by_case[key].impl[r.impl] = r
  end
  table.sort(keys, function(a, b)
    local ca, cb = by_case[a], by_case[b]
    if ca.dtype_rank ~= cb.dtype_rank then return ca.dtype_rank < cb.dtype_rank end
    if ca.dtype ~= cb.dtype then return ca.dtype < cb.dtype end
    return ca.index < cb.index
  end)
  local lines = {}
  for _, key in ipairs(keys) do
    local c = by_case[key]
    local line = { c.params, c.dtype }
    for _, impl in ipairs(impls) do
      local r = c.impl[impl] or {}
      line[#line + 1] = num(r.ms)
      line[#line + 1] = num(r.speedup, "%.4f")
      line[#line + 1] = num(r.rho, "%.4f")
      line[#line + 1] = num(r.elib, "%.4f")
      line[#line + 1] = r.status or ""
      line[#line + 1] = r.reason and r.reason:gsub("[\r\n]+", " "):sub(1, 300) or ""
    end
    lines[#lines + 1] = line
  end
  return header, lines
end

local function csv_cell(s)
  s = tostring(s)
  if s:find('[,"\n]') then s = '"' .. s:gsub('"', '""') .. '"' end
  return s
end

-- Writes the CSV atomically (temp file, then rename). Returns the path.
function M.write_csv(dir, opname, mode, rows, impls, dtype_order)
  local lfs = require("lfs")
  local p = ""
  for part in dir:gmatch("[^/]+") do
    p = p .. (p == "" and (dir:sub(1, 1) == "/" and "/" or "") or "/") .. part
    if not lfs.attributes(p) then
      local ok, err = lfs.mkdir(p)
      if not ok and not lfs.attributes(p) then error("cannot create " .. p .. ": " .. tostring(err), 0) end
    end
  end
  local header, lines = M.table(rows, impls, dtype_order)
  local path = string.format("%s/%s_%s.csv", dir, opname, mode)
  local tmp = path .. ".tmp"
  local fh = assert(io.open(tmp, "wb"))
  local cells = {}
  for i, h in ipairs(header) do cells[i] = csv_cell(h) end
  fh:write(table.concat(cells, ","), "\n")
  for _, line in ipairs(lines) do
    for i, v in ipairs(line) do cells[i] = csv_cell(v) end
    fh:write(table.concat(cells, ",", 1, #line), "\n")
  end
  assert(fh:close())
  assert(os.rename(tmp, path))
  return path
end

return M
