-- report.lua: one self-contained HTML page (inline CSS, inline SVG, no scripts, no fonts) from
-- result tables: summary, speedup per category, roofline, latency and bandwidth against size per
-- operator and dtype (a line per implementation), and the slow/failed cases with reasons.
local svg = require("tilebench.svg")
local stats = require("tilebench.stats")
local resultset = require("tilebench.resultset")
local aggregate = require("tilebench.aggregate")
local categories = require("tilebench.categories")
local peaks_mod = require("tilebench.peaks")

local M = {}

local esc = svg.escape

-- ---- work (flops, bytes, essential bytes) of a case -----------------------------------------
-- From raw run rows when we have them, else from the operator's config.yaml work formulas
-- (operator folder on the search path). nil when neither knows the case. bytes: TileBench's
-- count (the bandwidth charts, as its GB/s); essential: rho's (the roofline).
local function work_finder(raw_tables)
  local from_raw = {}
  for _, t in ipairs(raw_tables or {}) do
    for _, c in ipairs(t.cases) do
      for _, e in pairs(c.by_impl) do
        if e.bytes or e.flops then
          from_raw[t.operator .. "|" .. c.key] = {flops = e.flops, bytes = e.bytes, essential = e.essential_bytes or e.bytes,
                                                  essential_flops = e.essential_flops or e.flops}
          break
        end
      end
    end
  end
  local ops = {}
  local function op_work(name)
    if ops[name] ~= nil then return ops[name] end
    ops[name] = false
    local ok, opmod = pcall(require, "tilebench.operator")
    if not ok then return false end
    local okl, op = pcall(opmod.load, name)
    if not okl then return false end
    local okc, config = pcall(require, "tilebench.config")
    if not okc or type(config.work) ~= "function" then return false end
    local by_key = {}
    for _, c in ipairs(op.cases or {}) do
      -- TileBench's params name only the grid's own keys (case.id); ours may list them all
      local dt = "|" .. resultset.normalize_dtype(c.dtype)
      by_key[resultset.normalize_params(c.params) .. dt] = c
      if c.id then by_key[resultset.normalize_params(c.id) .. dt] = by_key[resultset.normalize_params(c.id) .. dt] or c end
    end
    ops[name] = {op = op, config = config, by_key = by_key, cache = {}}
    return ops[name]
  end
  return function(operator, case)
    local w = from_raw[operator .. "|" .. case.key]
    if w then return w.flops, w.bytes, w.essential, w.essential_flops end
    local ow = op_work(operator)
    if not ow then return nil end
    local hit = ow.cache[case.key]
    if hit == nil then
      hit = false
      local c = ow.by_key[case.key]
      if c then
        local ok, flops, bytes, _, essential, eflops = pcall(ow.config.work, ow.op.config, c)
        if ok then
          hit = {flops = tonumber(flops), bytes = tonumber(bytes), essential = tonumber(essential),
                 essential_flops = tonumber(eflops)}
        end
      end
      ow.cache[case.key] = hit
    end
    if hit then return hit.flops, hit.bytes, hit.essential, hit.essential_flops end
    return nil
  end
end

-- ---- peaks ----------------------------------------------------------------------------------
-- Ceilings come from peaks.lua, the reader metrics.lua uses for rho: the same validated file, the
-- same units (bandwidth_gbs, *_tflops), so a point's roofline fraction is the row's rho.

-- {bandwidth = bytes/s, compute = {{label, rate = FLOP/s, key}...}} or nil (peaks.ceilings).
M.ceilings = peaks_mod.ceilings

-- M.load_peaks(label [, file]): an explicit file must load; peaks/<label>.json may be absent
-- (no ceilings), but one that is there must pass peaks.lua's checks.
function M.load_peaks(label, file)
  if file then return peaks_mod.load_file(file) end
  if not label then return nil end
  local path = peaks_mod.path(label)
  local f = io.open(path, "rb")
  if not f then return nil end
  f:close()
  return peaks_mod.load_file(path, label)
end

-- The roofline fraction of one timed case: peaks.roofline's rho on the essential bytes against
-- the case's memory ceiling (peaks.case_bandwidth), as metrics.compute records it.
function M.roofline_fraction(peaks, flops, bytes, ms, dtype, category)
  if not peaks or type(ms) ~= "number" then return nil end
  local bw = peaks_mod.case_bandwidth(peaks, bytes)
  local r = peaks_mod.roofline(peaks, flops, bytes, ms * 1e-3, dtype, category, bw)
  return r and r.rho, r
end

-- ---- size axis ------------------------------------------------------------------------------
-- The case parameter that varies across an operator's cases is its size axis; with several
-- (or none), the bytes moved; failing that the case's position.
local function size_axis(t)
  local values = {}
  for _, c in ipairs(t.cases) do
    for k, v in pairs(c.values or {}) do
      if type(v) == "number" then
        values[k] = values[k] or {}
        values[k][v] = true
      end
    end
  end
  local varying = {}
  for k, set in pairs(values) do
    local n = 0
    for _ in pairs(set) do n = n + 1 end
    if n > 1 then varying[#varying + 1] = k end
  end
  table.sort(varying)
  if #varying == 1 then return varying[1] end
  return nil, varying
end

local function ratio_wide(xs)
  local lo, hi = math.huge, -math.huge
  for _, x in ipairs(xs) do if x > 0 then lo, hi = math.min(lo, x), math.max(hi, x) end end
  return lo < math.huge and hi / lo >= 8
end

-- ---- HTML -----------------------------------------------------------------------------------
local CSS = [[
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}h3{font-size:15px;margin:20px 0 4px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}td.reason{text-align:left;max-width:600px}
.charts{display:flex;flex-wrap:wrap;gap:8px}.note{color:#666;font-size:13px}
svg.chart{background:#fff;border:1px solid #e4e4e4}
svg .grid{stroke:#eee;stroke-width:1}svg .axis{stroke:#444;stroke-width:1}
svg .tick{font-size:10px;fill:#444}svg .label{font-size:11px;fill:#222}svg .title{font-size:12px;font-weight:600;fill:#222}
svg .legend{font-size:11px;fill:#222}svg path.series{stroke-width:1.6}svg .ceiling{stroke:#888;stroke-dasharray:4 3;stroke-width:1.2;fill:none}
svg .ceiling-label{font-size:10px;fill:#666}svg .reference{stroke:#444;stroke-dasharray:5 3}svg .empty{font-size:12px;fill:#999}
nav a{margin-right:12px}
]]

local function html_table(header, rows, classes)
  local out = {"<table><tr>"}
  for _, h in ipairs(header) do out[#out + 1] = "<th>" .. esc(h) .. "</th>" end
  out[#out + 1] = "</tr>"
  for _, r in ipairs(rows) do
    out[#out + 1] = "<tr>"
    for i = 1, #header do
      local cls = classes and classes[i]
      out[#out + 1] = (cls and ('<td class="%s">'):format(cls) or "<td>") .. esc(r[i] == nil and "" or r[i]) .. "</td>"
    end
    out[#out + 1] = "</tr>"
  end
  out[#out + 1] = "</table>"
  return table.concat(out)
end

local function anchor_id(s) return (s:gsub("[^%w_-]", "-")) end

-- M.build{tables, label, anchors = {tables, label}, raw = raw tables, peaks, source, generated}
-- Returns the HTML text and a summary {charts, series, operators}.
function M.build(o)
  local tables = o.tables
  local r = aggregate.compute(tables)
  local anchors = o.anchors
  local ar = anchors and aggregate.compute(anchors.tables) or nil
  local work = work_finder(o.raw)
  local ceil = M.ceilings(o.peaks)
  local count = {charts = 0, series = 0, operators = 0}

  -- colours: ours first, then the anchors' (their own names, dashed lines)
  local colors, ci = {}, 0
  local function color(name)
    if not colors[name] then ci = ci + 1; colors[name] = svg.PALETTE[(ci - 1) % #svg.PALETTE + 1] end
    return colors[name]
  end
  for _, i in ipairs(r.impls) do color(i) end
  local alabel = anchors and anchors.label or nil
  local function aname(impl) return impl .. " (" .. alabel .. ")" end
  if ar then for _, i in ipairs(ar.impls) do color(aname(i)) end end

  local anchor_index = {}
  if anchors then for _, t in ipairs(anchors.tables) do anchor_index[t.operator .. "\0" .. t.mode] = t end end

  local H = {}
  local function w(s) H[#H + 1] = s end
  w("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">")
  w(("<title>tilebench report: %s</title>"):format(esc(o.label)))
  w("<style>" .. CSS .. "</style></head><body>")
  w(("<h1>tilebench report: %s</h1>"):format(esc(o.label)))
  w(("<p class=\"note\">Source: %s (%d result tables)%s. Generated %s by tilebench %s.</p>"):format(
    esc(o.source or "?"), #tables, anchors and (", beside " .. esc(anchors.source or alabel)) or "",
    esc(o.generated or os.date("!%Y-%m-%d %H:%M UTC")), esc(TILEBENCH_VERSION or "?")))
  w("<nav><a href=\"#summary\">Summary</a><a href=\"#categories\">Speedup per category</a>" ..
    "<a href=\"#roofline\">Roofline</a><a href=\"#operators\">Operators</a><a href=\"#problems\">Slow and failed</a></nav>")

  -- summary
  w("<h2 id=\"summary\">Summary</h2>")
  w("<p class=\"note\">Speedup: geomean over operators (equally weighted) of each operator's geomean per-case speedup "
    .. "against its baseline; a case counts only when both implementations have a time (ok or slow). "
    .. "Wins: cases where the implementation is the fastest of those timed.</p>")
  local function suite_rows(res, rename)
    local rows = {}
    for _, s in ipairs(res.suite) do
      rows[#rows + 1] = {rename and rename(s.impl) or s.impl, s.mode, s.operators, aggregate.fmt_x(s.speedup),
        ("%d / %d"):format(s.wins, s.contested),
        s.rho_cases > 0 and ("%s of %d"):format(aggregate.fmt_pct(s.rho_share), s.rho_cases) or "n/a"}
    end
    return rows
  end
  local srows = suite_rows(r)
  if ar then for _, x in ipairs(suite_rows(ar, aname)) do srows[#srows + 1] = x end end
  w(html_table({"implementation", "mode", "operators", "geomean speedup", "wins", "cases at >= 80 % rho"}, srows))

  -- speedup per category
  w("<h2 id=\"categories\">Speedup per category</h2>")
  w("<div class=\"charts\">")
  for _, mode in ipairs(r.modes) do
    local groups, gseen, series, sidx = {}, {}, {}, {}
    local function add(res, rename, source)
      for _, c in ipairs(res.categories) do
        if c.mode == mode then
          if not gseen[c.category] then gseen[c.category] = true end
          local name = rename and rename(c.impl) or c.impl
          if not sidx[name] then
            sidx[name] = {name = name, values = {}, data = {chart = "speedup", source = source, mode = mode}}
            series[#series + 1] = sidx[name]
          end
          sidx[name].values[c.category] = c.speedup
        end
      end
    end
    add(r, nil, "ours")
    if ar then add(ar, aname, "anchor") end
    -- the baseline's bars are 1 by definition: leave them out
    local kept = {}
    for _, s in ipairs(series) do
      local all_one = true
      for _, v in pairs(s.values) do if math.abs(v - 1) > 1e-12 then all_one = false end end
      if not all_one then kept[#kept + 1] = s end
    end
    series = kept
    for _, c in ipairs(categories.ORDER) do if gseen[c] then groups[#groups + 1] = c end end
    for c in pairs(gseen) do if not categories.is_known(c) then groups[#groups + 1] = c end end
    w(svg.bar_chart{title = ("Geomean speedup vs baseline per category, mode %s"):format(mode), kind = "speedup",
      groups = groups, series = series, y_label = "speedup", reference = 1, colors = colors,
      width = 760, height = 340, data = {chart = "speedup", mode = mode}})
    count.charts, count.series = count.charts + 1, count.series + #series
  end
  w("</div>")

  -- roofline
  w("<h2 id=\"roofline\">Roofline</h2>")
  local missing_work = {}
  w("<div class=\"charts\">")
  for _, mode in ipairs(r.modes) do
    local series, sidx = {}, {}
    local xs_all = {}
    for _, t in ipairs(tables) do
      if t.mode == mode then
        for _, c in ipairs(t.cases) do
          local _, _, bytes, flops = work(t.operator, c) -- the essential work: rho's
          if not (flops and bytes and flops > 0 and bytes > 0) then
            missing_work[t.operator] = true
          else
            for _, impl in ipairs(t.impls) do
              local e = c.by_impl[impl]
              if resultset.timed(e) then
                if not sidx[impl] then sidx[impl] = {name = impl, points = {}, data = {chart = "roofline", mode = mode}}; series[#series + 1] = sidx[impl] end
                local ai, tf = flops / bytes, flops / (e.ms * 1e-3) / 1e12
                local pts = sidx[impl].points
                local ok_rho, rho = pcall(M.roofline_fraction, o.peaks, flops, bytes, e.ms, c.dtype,
                                          t.category or categories.of(t.operator))
                local tip = ("%s %s %s %s: %.3g FLOP/B, %.3g TFLOP/s"):format(t.operator, c.dtype, c.params, impl, ai, tf)
                if ok_rho and rho then tip = tip .. (", rho %.3f"):format(rho) end
                pts[#pts + 1] = {ai, tf, tip = tip, rho = ok_rho and rho or nil}
                xs_all[#xs_all + 1] = ai
              end
            end
          end
        end
      end
    end
    local ceilings = {}
    if ceil and #xs_all > 0 then
      local lo, hi = math.huge, 0
      for _, x in ipairs(xs_all) do lo, hi = math.min(lo, x), math.max(hi, x) end
      lo, hi = lo / 2, hi * 2
      local top = ceil.compute[1]
      if ceil.bandwidth then
        local B = ceil.bandwidth / 1e12
        local knee = top and top.rate / ceil.bandwidth or hi
        local xe = math.min(hi, knee)
        ceilings[#ceilings + 1] = {name = ("%.0f GB/s"):format(ceil.bandwidth / 1e9), points = {{lo, B * lo}, {xe, B * xe}}}
      end
      for _, c in ipairs(ceil.compute) do
        local start = ceil.bandwidth and math.max(lo, c.rate / ceil.bandwidth) or lo
        if start < hi then
          ceilings[#ceilings + 1] = {name = ("%s %.0f TFLOP/s"):format(c.label, c.rate / 1e12), points = {{start, c.rate / 1e12}, {hi, c.rate / 1e12}}}
        end
      end
    end
    w(svg.scatter_chart{title = ("Roofline, mode %s: every timed case"):format(mode), kind = "roofline",
      x_label = "arithmetic intensity (FLOP/byte)", y_label = "achieved TFLOP/s", x_log = true, y_log = true,
      series = series, ceilings = ceilings, colors = colors, width = 760, height = 420,
      data = {chart = "roofline", mode = mode},
      empty_text = "no case with a known work formula (flops, bytes)"})
    count.charts, count.series = count.charts + 1, count.series + #series
  end
  w("</div>")
  local mw = {}
  for k in pairs(missing_work) do mw[#mw + 1] = k end
  table.sort(mw)
  if not ceil then
    w(("<p class=\"note\">No ceilings: peaks/%s.json is absent or has no bandwidth/compute rates (tilebench peaks measures them).</p>"):format(esc(o.label)))
  end
  if #mw > 0 then
    w(("<p class=\"note\">Without a work formula (no raw run rows with flops/bytes, no operator folder): %s. "
      .. "Their cases are not on the roofline and have no bandwidth chart.</p>"):format(esc(table.concat(mw, ", "))))
  end

  -- operators
  w("<h2 id=\"operators\">Operators</h2>")
  local toc = {}
  for _, t in ipairs(tables) do toc[#toc + 1] = ("<a href=\"#op-%s-%s\">%s (%s)</a>"):format(anchor_id(t.operator), t.mode, esc(t.operator), t.mode) end
  w("<p class=\"note\">" .. table.concat(toc, " · ") .. "</p>")
  for _, t in ipairs(tables) do
    count.operators = count.operators + 1
    local at = anchor_index[t.operator .. "\0" .. t.mode]
    w(("<section id=\"op-%s-%s\" data-operator=\"%s\" data-mode=\"%s\">"):format(anchor_id(t.operator), t.mode, esc(t.operator), t.mode))
    w(("<h3>%s — %s, mode %s, baseline %s</h3>"):format(esc(t.operator), esc(t.category or categories.of(t.operator)), t.mode, esc(t.baseline or "none")))
    local key, varying = size_axis(t)
    local dtypes, dseen = {}, {}
    for _, c in ipairs(t.cases) do if not dseen[c.dtype] then dseen[c.dtype] = true; dtypes[#dtypes + 1] = c.dtype end end
    w("<div class=\"charts\">")
    for _, dtype in ipairs(dtypes) do
      local function xy(case, e, what)
        local x
        if key then x = case.values[key] else
          local _, bytes = work(t.operator, case)
          x = bytes or case.order
        end
        if what == "ms" then return x, e.ms end
        local _, bytes = work(t.operator, case)
        if not bytes then return nil end
        return x, bytes / (e.ms * 1e-3) / 1e9
      end
      local xlabel = key or ((#varying == 0 and "case") or "bytes moved")
      if not key and #varying == 0 then xlabel = "case" end
      local lat, bw = {}, {}
      local function add_series(tt, rename, source)
        for _, impl in ipairs(tt.impls) do
          local lp, bp = {}, {}
          for _, c in ipairs(tt.cases) do
            local e = c.by_impl[impl]
            if c.dtype == dtype and resultset.timed(e) then
              local x, y = xy(c, e, "ms")
              if x then lp[#lp + 1] = {x, y, tip = ("%s %s: %.4g ms"):format(c.params, impl, y)} end
              local bx, by = xy(c, e, "bw")
              if bx then bp[#bp + 1] = {bx, by, tip = ("%s %s: %.4g GB/s"):format(c.params, impl, by)} end
            end
          end
          local name = rename and rename(impl) or impl
          local function data(chart)
            return {chart = chart, operator = t.operator, dtype = dtype, mode = t.mode, source = source}
          end
          if #lp > 0 then lat[#lat + 1] = {name = name, points = lp, data = data("latency"), dashed = source == "anchor"} end
          if #bp > 0 then bw[#bw + 1] = {name = name, points = bp, data = data("bandwidth"), dashed = source == "anchor"} end
        end
      end
      add_series(t, nil, "ours")
      if at then add_series(at, aname, "anchor") end
      local xv, ly, by = {}, {}, {}
      for _, s in ipairs(lat) do for _, p in ipairs(s.points) do xv[#xv + 1] = p[1]; ly[#ly + 1] = p[2] end end
      for _, s in ipairs(bw) do for _, p in ipairs(s.points) do by[#by + 1] = p[2] end end
      local x_log = ratio_wide(xv)
      w(svg.line_chart{title = ("%s %s: latency"):format(t.operator, dtype), kind = "latency", x_label = xlabel,
        y_label = "ms", x_log = x_log, y_log = ratio_wide(ly), series = lat, colors = colors, width = 480, height = 300,
        data = {chart = "latency", operator = t.operator, dtype = dtype, mode = t.mode}})
      count.charts, count.series = count.charts + 1, count.series + #lat
      if #bw > 0 then
        local hl = ceil and ceil.bandwidth and {{y = ceil.bandwidth / 1e9, label = ("peak %.0f GB/s"):format(ceil.bandwidth / 1e9)}} or nil
        w(svg.line_chart{title = ("%s %s: bandwidth"):format(t.operator, dtype), kind = "bandwidth", x_label = xlabel,
          y_label = "GB/s", x_log = x_log, y_log = false, series = bw, colors = colors, width = 480, height = 300,
          hlines = hl, data = {chart = "bandwidth", operator = t.operator, dtype = dtype, mode = t.mode}})
        count.charts, count.series = count.charts + 1, count.series + #bw
      end
    end
    w("</div>")
    -- Per-implementation columns beyond the standard ones (CSV <name>_<impl>): the clock and
    -- power state of each measurement (runner.lua: median SM clock, share of samples under a
    -- power or thermal cap), then the metrics a campaign registered; one row per case and
    -- implementation that has any.
    local function extra_table(title, names)
      if #names == 0 then return end
      local header, rows = {"params", "dtype", "implementation"}, {}
      for _, name in ipairs(names) do header[#header + 1] = name end
      for _, c in ipairs(t.cases) do
        for _, impl in ipairs(t.impls) do
          local e = c.by_impl[impl]
          local any = false
          for _, name in ipairs(names) do if e and e.extra and e.extra[name] ~= nil then any = true end end
          if any then
            local row = {c.params, c.dtype, impl}
            for _, name in ipairs(names) do
              local v = e.extra[name]
              row[#row + 1] = v ~= nil and ("%.4g"):format(v) or ""
            end
            rows[#rows + 1] = row
          end
        end
      end
      if #rows == 0 then return end
      w(("<h4>%s</h4>"):format(title))
      w(html_table(header, rows))
    end
    local power_names, metric_names, rho_names = {}, {}, {}
    local rho_columns = require("tilebench.metrics").COLUMNS
    for _, name in ipairs(t.extra or {}) do
      if require("tilebench.execute").POWER_COLUMNS[name] or name == "device" then power_names[#power_names + 1] = name
      elseif rho_columns[name] then rho_names[#rho_names + 1] = name
      else metric_names[#metric_names + 1] = name end
    end
    extra_table("Clock and power (median SM clock in MHz; share of samples under a power or thermal cap; device: " ..
      "the GPU of a run on several, docs/SCALE-OUT.md)", power_names)
    extra_table("rho beside TileBench's (rho_tilebench: its bytes against the copy rate; ceiling_gbs: the memory " ..
      "ceiling rho used; l2_ratio: working set / L2; l2_near: 1 within " .. require("tilebench.peaks").L2_NEAR ..
      " x L2; docs/MEASUREMENT.md)", rho_names)
    extra_table("Campaign metrics", metric_names)
    w("</section>")
  end

  -- problems
  w(("<h2 id=\"problems\">Slow and failed cases (%d)</h2>"):format(#r.problems))
  if #r.problems == 0 then
    w("<p>None: every case of every implementation has status ok.</p>")
  else
    local rows = {}
    for _, p in ipairs(r.problems) do rows[#rows + 1] = {p.operator, p.mode, p.dtype, p.params, p.impl, p.status, p.reason} end
    w(html_table({"operator", "mode", "dtype", "params", "implementation", "status", "reason"}, rows,
      {nil, nil, nil, nil, nil, nil, "reason"}))
  end
  w("</body></html>\n")
  return table.concat(H, "\n"), count
end

return M
