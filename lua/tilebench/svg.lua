-- svg.lua: a small SVG writer for the report: elements with escaped attributes, linear and
-- log scales with readable ticks, and three charts (lines, scatter with ceilings, grouped bars).
-- Every series element carries class="series" and data-series=<name> (plus caller data-*), so
-- a test can count what a chart shows.
local M = {}

local ESC = {["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;", ["'"] = "&#39;"}
function M.escape(s) return (tostring(s):gsub("[&<>\"']", ESC)) end

-- Numbers in attributes: short, fixed, never "nan" or "inf".
local function num(x)
  if x ~= x or x == math.huge or x == -math.huge then error("svg: non-finite coordinate " .. tostring(x), 3) end
  local s = ("%.2f"):format(x):gsub("%.?0+$", "")
  if s == "-0" then s = "0" end
  return s
end
M.num = num

-- attrs: a table of name -> value; emitted sorted by name so output is deterministic.
local function attr_string(attrs)
  if not attrs then return "" end
  local names = {}
  for k, v in pairs(attrs) do if v ~= nil and v ~= false then names[#names + 1] = k end end
  table.sort(names)
  local out = {}
  for _, k in ipairs(names) do
    local v = attrs[k]
    if type(v) == "number" then v = num(v) end
    out[#out + 1] = (' %s="%s"'):format(k, M.escape(v))
  end
  return table.concat(out)
end

-- M.el(name, attrs [, content]): content is a string of markup (already escaped) or a list of
-- such strings; nil gives a self-closing element.
function M.el(name, attrs, content)
  if content == nil then return ("<%s%s/>"):format(name, attr_string(attrs)) end
  if type(content) == "table" then content = table.concat(content) end
  return ("<%s%s>%s</%s>"):format(name, attr_string(attrs), content, name)
end

function M.text(x, y, s, attrs)
  local a = {x = x, y = y}
  for k, v in pairs(attrs or {}) do a[k] = v end
  return M.el("text", a, M.escape(s))
end

-- ---- number labels --------------------------------------------------------------------------
local SI = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}}
function M.format_number(x)
  if x == 0 then return "0" end
  local ax = math.abs(x)
  for _, p in ipairs(SI) do
    if ax >= p[1] then
      return (("%.3g"):format(x / p[1])) .. p[2]
    end
  end
  if ax < 1e-3 then return ("%.0e"):format(x) end
  return ("%.3g"):format(x)
end

-- ---- scales ---------------------------------------------------------------------------------
-- Nice linear ticks: about `count` steps of 1, 2 or 5 x 10^k covering [lo, hi].
local function linear_ticks(lo, hi, count)
  local span = hi - lo
  if span <= 0 then return {lo} end
  local raw = span / (count or 5)
  local mag = 10 ^ math.floor(math.log(raw, 10))
  local step = mag
  for _, m in ipairs({1, 2, 5, 10}) do
    if m * mag >= raw then step = m * mag break end
  end
  local ticks = {}
  local t = math.ceil(lo / step - 1e-9) * step
  while t <= hi + step * 1e-9 do
    ticks[#ticks + 1] = math.abs(t) < step * 1e-9 and 0 or t
    t = t + step
  end
  return ticks, step
end

-- Log ticks: the powers of ten inside [lo, hi]; with fewer than 3 of them add 2x and 5x.
local function log_ticks(lo, hi)
  local ticks = {}
  local a, b = math.floor(math.log(lo, 10)), math.ceil(math.log(hi, 10))
  for e = a, b do
    local t = 10 ^ e
    if t >= lo * (1 - 1e-9) and t <= hi * (1 + 1e-9) then ticks[#ticks + 1] = t end
  end
  if #ticks < 3 then
    local more = {}
    for e = a, b do
      for _, m in ipairs({1, 2, 5}) do
        local t = m * 10 ^ e
        if t >= lo * (1 - 1e-9) and t <= hi * (1 + 1e-9) then more[#more + 1] = t end
      end
    end
    ticks = more
  end
  return ticks
end

-- M.scale{lo, hi, a, b, log}: maps data [lo, hi] to pixels [a, b]. Log scales need lo > 0.
-- The domain is widened to whole nice ticks (linear) or decades' 1/2/5 (log) so ends are labelled.
function M.scale(opts)
  local lo, hi, log = opts.lo, opts.hi, opts.log
  if log then
    if not (lo and lo > 0) then error("svg.scale: a log axis needs positive data (lo = " .. tostring(lo) .. ")", 2) end
    if hi <= lo then lo, hi = lo / 2, hi * 2 end
    local e0, e1 = math.log(lo, 10), math.log(hi, 10)
    -- widen to the enclosing 1/2/5 marks so the data never touches the frame
    local function down(x) local e = math.floor(math.log(x, 10)); for _, m in ipairs({5, 2, 1}) do if m * 10 ^ e <= x * (1 + 1e-12) then return m * 10 ^ e end end return 10 ^ e end
    local function up(x) local e = math.floor(math.log(x, 10)); for _, m in ipairs({1, 2, 5, 10}) do if m * 10 ^ e >= x * (1 - 1e-12) then return m * 10 ^ e end end return 10 ^ (e + 1) end
    lo, hi = down(lo), up(hi)
    e0, e1 = math.log(lo, 10), math.log(hi, 10)
    local s = {lo = lo, hi = hi, log = true, ticks = log_ticks(lo, hi)}
    function s.map(x) return opts.a + (math.log(x, 10) - e0) / (e1 - e0) * (opts.b - opts.a) end
    return s
  end
  if hi <= lo then
    local pad = math.abs(lo) > 0 and math.abs(lo) * 0.5 or 1
    lo, hi = lo - pad, hi + pad
  end
  local _, step = linear_ticks(lo, hi, opts.count or 5)
  lo, hi = math.floor(lo / step + 1e-9) * step, math.ceil(hi / step - 1e-9) * step
  local s = {lo = lo, hi = hi, log = false, ticks = (linear_ticks(lo, hi, opts.count or 5))}
  function s.map(x) return opts.a + (x - lo) / (hi - lo) * (opts.b - opts.a) end
  return s
end

-- ---- chart frame ----------------------------------------------------------------------------
M.PALETTE = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
             "#17becf", "#7f7f7f", "#bcbd22"}

local function color_of(opts, name, i)
  if opts.colors and opts.colors[name] then return opts.colors[name] end
  return M.PALETTE[(i - 1) % #M.PALETTE + 1]
end

-- The data-* attributes of a series: data-series=<name> always, then the caller's own.
local function series_data(s)
  local d = {series = s.name}
  for k, v in pairs(s.data or {}) do d[k] = v end
  return d
end

local function data_attrs(base, extra)
  local a = {}
  for k, v in pairs(base) do a[k] = v end
  for k, v in pairs(extra or {}) do a["data-" .. k] = v end
  return a
end

-- Frame geometry shared by the charts.
local function frame(opts)
  local W, H = opts.width or 560, opts.height or 340
  local f = {W = W, H = H, left = 64, right = W - 16, top = 30, bottom = H - 46}
  if opts.legend ~= false then f.right = W - 132 end
  return f
end

local function axes(parts, f, xs, ys, opts)
  -- grid lines and ticks
  for _, t in ipairs(ys.ticks) do
    local y = ys.map(t)
    parts[#parts + 1] = M.el("line", {x1 = f.left, x2 = f.right, y1 = y, y2 = y, class = "grid"})
    parts[#parts + 1] = M.text(f.left - 6, y + 4, M.format_number(t), {["text-anchor"] = "end", class = "tick"})
  end
  if xs then
    for _, t in ipairs(xs.ticks) do
      local x = xs.map(t)
      parts[#parts + 1] = M.el("line", {x1 = x, x2 = x, y1 = f.top, y2 = f.bottom, class = "grid"})
      parts[#parts + 1] = M.text(x, f.bottom + 16, M.format_number(t), {["text-anchor"] = "middle", class = "tick"})
    end
  end
  parts[#parts + 1] = M.el("line", {x1 = f.left, x2 = f.right, y1 = f.bottom, y2 = f.bottom, class = "axis"})
  parts[#parts + 1] = M.el("line", {x1 = f.left, x2 = f.left, y1 = f.top, y2 = f.bottom, class = "axis"})
  if opts.x_label then
    parts[#parts + 1] = M.text((f.left + f.right) / 2, f.H - 8, opts.x_label .. (xs and xs.log and " (log)" or ""),
      {["text-anchor"] = "middle", class = "label"})
  end
  if opts.y_label then
    local cy = (f.top + f.bottom) / 2
    parts[#parts + 1] = M.text(14, cy, opts.y_label .. (ys.log and " (log)" or ""),
      {["text-anchor"] = "middle", class = "label", transform = ("rotate(-90 14 %s)"):format(num(cy))})
  end
  if opts.title then
    parts[#parts + 1] = M.text(f.left, 18, opts.title, {class = "title"})
  end
end

local function legend(parts, f, entries)
  local x, y = f.right + 12, f.top + 4
  for i, e in ipairs(entries) do
    local yy = y + (i - 1) * 18
    parts[#parts + 1] = M.el("g", data_attrs({class = "legend-entry"}, {series = e.name}), {
      M.el("rect", {x = x, y = yy, width = 12, height = 12, fill = e.color}),
      M.text(x + 18, yy + 10, e.label or e.name, {class = "legend"}),
    })
  end
end

local function wrap(f, opts, parts)
  local attrs = data_attrs({xmlns = "http://www.w3.org/2000/svg", width = f.W, height = f.H,
    viewBox = ("0 0 %d %d"):format(f.W, f.H), role = "img",
    class = opts.kind and ("chart " .. opts.kind) or "chart"}, opts.data)
  return ("<svg%s><title>%s</title>%s</svg>"):format(attr_string(attrs), M.escape(opts.title or "chart"),
    table.concat(parts))
end

local function extent(series, key, log)
  local lo, hi = math.huge, -math.huge
  for _, s in ipairs(series) do
    for _, p in ipairs(s.points) do
      local v = p[key]
      if not log or v > 0 then lo, hi = math.min(lo, v), math.max(hi, v) end
    end
  end
  return lo, hi
end

-- M.line_chart{title, x_label, y_label, x_log, y_log, series = {{name, points = {{x, y}...},
--   data = {...}}...}, data = {...}, colors = {name = css}, width, height}
-- Points with non-positive values on a log axis are dropped (and counted in the returned
-- second value) rather than drawn at a false place.
function M.line_chart(opts)
  local f = frame(opts)
  local series, dropped = {}, 0
  for i, s in ipairs(opts.series) do
    local pts = {}
    for _, p in ipairs(s.points) do
      local ok = p[1] == p[1] and p[2] == p[2]
      if opts.x_log and not (p[1] > 0) then ok = false end
      if opts.y_log and not (p[2] > 0) then ok = false end
      if ok then pts[#pts + 1] = p else dropped = dropped + 1 end
    end
    table.sort(pts, function(a, b) return a[1] < b[1] end)
    if #pts > 0 then series[#series + 1] = {name = s.name, label = s.label, points = pts, data = s.data, dashed = s.dashed, color = color_of(opts, s.name, i)} end
  end
  local parts = {}
  if #series == 0 then
    axes(parts, f, nil, M.scale{lo = 0, hi = 1, a = f.bottom, b = f.top}, opts)
    parts[#parts + 1] = M.text((f.left + f.right) / 2, (f.top + f.bottom) / 2, "no data", {["text-anchor"] = "middle", class = "empty"})
    return wrap(f, opts, parts), dropped
  end
  local xlo, xhi = extent(series, 1, opts.x_log)
  local ylo, yhi = extent(series, 2, opts.y_log)
  for _, h in ipairs(opts.hlines or {}) do
    if not opts.y_log or h.y > 0 then ylo, yhi = math.min(ylo, h.y), math.max(yhi, h.y) end
  end
  if not opts.y_log and ylo > 0 then ylo = 0 end
  local xs = M.scale{lo = xlo, hi = xhi, a = f.left, b = f.right, log = opts.x_log}
  local ys = M.scale{lo = ylo, hi = yhi, a = f.bottom, b = f.top, log = opts.y_log}
  axes(parts, f, xs, ys, opts)
  -- horizontal references (a measured ceiling): dashed, labelled at the right end
  for _, h in ipairs(opts.hlines or {}) do
    if not opts.y_log or h.y > 0 then
      local y = ys.map(h.y)
      parts[#parts + 1] = M.el("line", data_attrs({x1 = f.left, x2 = f.right, y1 = y, y2 = y, class = "ceiling"}, {ceiling = h.label}))
      parts[#parts + 1] = M.text(f.right - 4, y - 4, h.label, {["text-anchor"] = "end", class = "ceiling-label"})
    end
  end
  local entries = {}
  for _, s in ipairs(series) do
    local d = {}
    for j, p in ipairs(s.points) do d[#d + 1] = (j == 1 and "M" or "L") .. num(xs.map(p[1])) .. " " .. num(ys.map(p[2])) end
    local g = {M.el("path", data_attrs({class = "series", d = table.concat(d, " "), stroke = s.color, fill = "none",
      ["stroke-dasharray"] = s.dashed and "5 3" or nil}, series_data(s)))}
    for _, p in ipairs(s.points) do
      g[#g + 1] = M.el("circle", data_attrs({class = "point", cx = xs.map(p[1]), cy = ys.map(p[2]), r = 2.5, fill = s.color},
        {series = s.name, x = p[1], y = p[2]}), p.tip and M.el("title", nil, M.escape(p.tip)) or nil)
    end
    parts[#parts + 1] = M.el("g", {class = "series-group"}, g)
    entries[#entries + 1] = {name = s.name, label = s.label, color = s.color}
  end
  if opts.legend ~= false then legend(parts, f, entries) end
  return wrap(f, opts, parts), dropped
end

-- M.scatter_chart: like line_chart but points only (class="series" on each point group), plus
-- ceilings = {{name, points = {{x, y}...}}} drawn as lines of class "ceiling".
function M.scatter_chart(opts)
  local f = frame(opts)
  local all = {}
  for _, s in ipairs(opts.series) do all[#all + 1] = s end
  for _, c in ipairs(opts.ceilings or {}) do all[#all + 1] = c end
  local parts = {}
  local have = false
  for _, s in ipairs(opts.series) do if #s.points > 0 then have = true end end
  if not have then
    axes(parts, f, nil, M.scale{lo = 0, hi = 1, a = f.bottom, b = f.top}, opts)
    parts[#parts + 1] = M.text((f.left + f.right) / 2, (f.top + f.bottom) / 2, opts.empty_text or "no data", {["text-anchor"] = "middle", class = "empty"})
    return wrap(f, opts, parts)
  end
  local xlo, xhi = extent(all, 1, opts.x_log)
  local ylo, yhi = extent(all, 2, opts.y_log)
  local xs = M.scale{lo = xlo, hi = xhi, a = f.left, b = f.right, log = opts.x_log}
  local ys = M.scale{lo = ylo, hi = yhi, a = f.bottom, b = f.top, log = opts.y_log}
  axes(parts, f, xs, ys, opts)
  for _, c in ipairs(opts.ceilings or {}) do
    local d = {}
    for j, p in ipairs(c.points) do d[#d + 1] = (j == 1 and "M" or "L") .. num(xs.map(p[1])) .. " " .. num(ys.map(p[2])) end
    parts[#parts + 1] = M.el("path", data_attrs({class = "ceiling", d = table.concat(d, " "), fill = "none"}, {ceiling = c.name}))
    local last = c.points[#c.points]
    parts[#parts + 1] = M.text(xs.map(last[1]) - 4, ys.map(last[2]) - 4, c.name, {["text-anchor"] = "end", class = "ceiling-label"})
  end
  local entries = {}
  for i, s in ipairs(opts.series) do
    local color = color_of(opts, s.name, i)
    local g = {}
    for _, p in ipairs(s.points) do
      if (not opts.x_log or p[1] > 0) and (not opts.y_log or p[2] > 0) then
        g[#g + 1] = M.el("circle", data_attrs({class = "point", cx = xs.map(p[1]), cy = ys.map(p[2]), r = 3, fill = color},
          {series = s.name, x = p[1], y = p[2]}), p.tip and M.el("title", nil, M.escape(p.tip)) or nil)
      end
    end
    parts[#parts + 1] = M.el("g", data_attrs({class = "series", fill = color}, series_data(s)), g)
    entries[#entries + 1] = {name = s.name, label = s.label, color = color}
  end
  if opts.legend ~= false then legend(parts, f, entries) end
  return wrap(f, opts, parts)
end

-- M.bar_chart{groups = {"Point-wise", ...}, series = {{name, values = {group = v}, data}},
--   y_label, title, reference = 1 (a dashed line, e.g. speedup 1), y_log}
function M.bar_chart(opts)
  local f = frame(opts)
  local parts = {}
  local lo, hi = math.huge, -math.huge
  for _, s in ipairs(opts.series) do
    for _, g in ipairs(opts.groups) do
      local v = s.values[g]
      if v and (not opts.y_log or v > 0) then lo, hi = math.min(lo, v), math.max(hi, v) end
    end
  end
  if lo == math.huge then
    axes(parts, f, nil, M.scale{lo = 0, hi = 1, a = f.bottom, b = f.top}, opts)
    parts[#parts + 1] = M.text((f.left + f.right) / 2, (f.top + f.bottom) / 2, "no data", {["text-anchor"] = "middle", class = "empty"})
    return wrap(f, opts, parts)
  end
  if opts.reference then lo, hi = math.min(lo, opts.reference), math.max(hi, opts.reference) end
  if not opts.y_log then lo = math.min(lo, 0) end
  local ys = M.scale{lo = lo, hi = hi, a = f.bottom, b = f.top, log = opts.y_log}
  axes(parts, f, nil, ys, opts)
  local ng, ns = #opts.groups, #opts.series
  local gw = (f.right - f.left) / ng
  local bw = math.min(gw * 0.8 / ns, 48)
  local base = opts.y_log and ys.map(ys.lo) or ys.map(math.max(ys.lo, math.min(0, ys.hi)))
  if opts.reference then base = ys.map(opts.reference) end
  for gi, gname in ipairs(opts.groups) do
    local gx = f.left + (gi - 1) * gw
    parts[#parts + 1] = M.text(gx + gw / 2, f.bottom + 16, gname, {["text-anchor"] = "middle", class = "tick"})
  end
  local entries = {}
  for si, s in ipairs(opts.series) do
    local color = color_of(opts, s.name, si)
    local bars = {}
    for gi, gname in ipairs(opts.groups) do
      local v = s.values[gname]
      if v and (not opts.y_log or v > 0) then
        local x = f.left + (gi - 1) * gw + (gw - bw * ns) / 2 + (si - 1) * bw
        local y = ys.map(v)
        local top, h = math.min(y, base), math.abs(y - base)
        bars[#bars + 1] = M.el("rect", data_attrs({class = "bar", x = x, y = top, width = bw * 0.92, height = math.max(h, 0.5), fill = color},
          {series = s.name, group = gname, value = v}), M.el("title", nil, M.escape(("%s %s: %s"):format(gname, s.name, M.format_number(v)))))
      end
    end
    parts[#parts + 1] = M.el("g", data_attrs({class = "series"}, series_data(s)), bars)
    entries[#entries + 1] = {name = s.name, label = s.label, color = color}
  end
  if opts.reference then
    local y = ys.map(opts.reference)
    parts[#parts + 1] = M.el("line", {x1 = f.left, x2 = f.right, y1 = y, y2 = y, class = "reference"})
  end
  if opts.legend ~= false then legend(parts, f, entries) end
  return wrap(f, opts, parts)
end

return M
